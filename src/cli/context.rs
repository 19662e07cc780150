//! `context`: fills an AgentTask's `memory_context`, or renders the chosen entries as a prompt
//! prefix within a token budget.

use super::query::{Defaults, FilterArgs, Sources, log_query, rank_params};
use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::retrieval::budget::{self, DEFAULT_BUDGET};
use crate::retrieval::context::{self, MAX_CONTEXT, MIN_RELEVANCE};
use crate::retrieval::search::{self, Hit, Order, Request};
use serde_json::{Map, Value};
use std::io::Read;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The AgentTask with memory_context filled
    Json,
    /// The chosen entries as a prompt prefix within --budget tokens
    Prompt,
}

#[derive(Debug, clap::Args)]
pub struct ContextArgs {
    /// [PROJECT] [FILE|-]: the project (default: the task's `project`, --project, or the
    /// workspace's only project) and the AgentTask JSON file (default or `-`: standard input)
    #[arg(value_name = "ARGS", num_args = 0..=2)]
    pub args: Vec<String>,
    /// Output: the task as JSON, or a prompt prefix
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
    /// Token budget of the prompt prefix (estimated; see docs/RETRIEVAL.md)
    #[arg(long, default_value_t = DEFAULT_BUDGET, allow_negative_numbers = true, value_parser = super::numbers::tokens)]
    pub budget: usize,
    /// Leave out the entries of ai-memory/global/
    #[arg(long)]
    pub no_global: bool,
}

fn read_input(file: Option<&str>) -> Result<String> {
    match file {
        None if super::invoke::stdin_is_terminal() => Err(Error::Usage(
            "no input: give an AgentTask JSON file, or pipe the JSON in (`-` reads stdin)".into(),
        )),
        None | Some("-") => {
            let mut s = String::new();
            super::invoke::stdin().read_to_string(&mut s)?;
            Ok(s)
        }
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| Error::input(std::path::Path::new(path), e))
        }
    }
}

/// The entries for a task: see [`crate::retrieval::context`].
fn choose(ctx: &Ctx, sources: &Sources, q: &context::TaskQuery) -> Result<(Vec<Hit>, u64)> {
    let (policy, params) = rank_params(ctx, &sources.project)?;
    let flags = FilterArgs {
        scope: q.scope.clone(),
        subject: q.subject.clone(),
        ..FilterArgs::default()
    };
    // The scope and subject come from the task, not from options: name them so.
    let filters = flags
        .resolve(&policy, Defaults::Smart)
        .map_err(|e| match e {
            crate::Error::Usage(m) => crate::Error::Usage(
                m.replace("--scope:", "the task's `scope`:")
                    .replace("--subject:", "the task's `subject`:"),
            ),
            other => other,
        })?;
    let mut req = Request {
        text: q.goal.clone(),
        filters,
        limit: MAX_CONTEXT,
        include_related: false,
        params,
        order: Order::Confidence,
        min_relevance: MIN_RELEVANCE,
    };
    let found = search::search(&sources.sources(), &req)?;
    if !found.hits.is_empty() || req.text.is_none() {
        return Ok((found.hits, policy.slow_query_ms));
    }
    // The goal shares no word with any entry: the most confident entries in scope.
    req.text = None;
    Ok((
        search::search(&sources.sources(), &req)?.hits,
        policy.slow_query_ms,
    ))
}

pub fn run(ctx: &Ctx, args: ContextArgs, out: &mut Out) -> Result<ExitCode> {
    let started = Instant::now();
    // One argument is the input when it is `-` or looks like a file (a mistyped file name is
    // reported as missing, not taken for a project), as for `apply`.
    let (project_arg, file) = super::apply::project_and_file(&args.args);
    let project_arg = project_arg.map(str::to_owned);
    let input = read_input(file)?;
    let task: Map<String, Value> = match super::strict_json::from_slice(input.as_bytes()) {
        Ok(Value::Object(m)) => m,
        Ok(_) => {
            return Err(Error::Usage(
                "context: the input must be one AgentTask JSON object".into(),
            ));
        }
        Err(e) => {
            return Err(Error::Usage(format!(
                "context: the input is not JSON: {}",
                super::strict_json::message(&e)
            )));
        }
    };
    if let Some(problem) = context::type_problem(&task) {
        return Err(Error::Usage(format!("context: the AgentTask's {problem}")));
    }
    // The task is echoed: a credential in it (a token pasted into its description) is printed
    // as `[redacted]`, as everything memlog echoes of its input.
    let given = Value::Object(task);
    let mut v = given.clone();
    crate::policy::validate::redact_secrets_in(&mut v);
    let redacted = v != given;
    let Value::Object(task) = v else {
        return Err(Error::Usage(
            "context: the input must be one AgentTask JSON object".into(),
        ));
    };
    if redacted {
        super::output::warn(
            "context: the task holds a credential, printed as [redacted]: remove it from the \
             task and refer to where it is kept instead",
        );
    }
    if !context::enabled(&task) {
        // memory_enabled false or absent: no query. The task as it came, or a prompt with
        // nothing in it: an agent that puts the prompt before its own gets nothing from memory,
        // and `--json` answers in the one shape `--format prompt` always has.
        match args.format {
            Format::Json if out.json => out.json(&task),
            Format::Json if redacted => {
                out.line(serde_json::to_string_pretty(&task).unwrap_or_default());
            }
            Format::Json => out.line(input.trim_end()),
            Format::Prompt => {
                super::output::warn(
                    "context: the task's `memory_enabled` is not true, so no memory was looked \
                     up and the prompt is empty; set \"memory_enabled\": true in the task to \
                     fill it",
                );
                if out.json {
                    out.json(&serde_json::json!({
                        "prompt": "",
                        "entries": 0,
                        "tokens": 0,
                        "budget": args.budget,
                    }));
                }
            }
        }
        return Ok(ExitCode::Ok);
    }
    let q = context::task_query(&task);
    let project = project_arg.or_else(|| q.project.clone());
    let (hits, project_name) = match Sources::open(ctx, project.as_deref(), args.no_global)? {
        None => (Vec::new(), project.unwrap_or_default()),
        Some(sources) => {
            let started = sources.query_started(started);
            let (hits, slow_ms) = choose(ctx, &sources, &q)?;
            super::query::warn_disputed(&hits);
            let (project, read) = sources.close();
            super::query::record_accesses(ctx, &read, &hits, "context");
            let filters = serde_json::json!({
                "goal": q.goal, "scope": q.scope, "subject": q.subject,
            });
            log_query(
                ctx,
                &project,
                "context",
                filters,
                hits.len(),
                started,
                slow_ms,
            );
            (hits, project.name.to_string())
        }
    };
    match args.format {
        Format::Prompt => {
            let budget::Rendered {
                text,
                entries,
                unsaid_need,
            } = budget::render(&project_name, &hits, args.budget);
            if let Some(needed) = unsaid_need {
                super::output::warn(&format!(
                    "context: {}, and not even the line saying so fits: the prompt is empty; \
                     give --budget {needed} or more",
                    budget::too_small_for_any(args.budget, needed)
                ));
            }
            if out.json {
                out.json(&serde_json::json!({
                    "prompt": text.trim_end(),
                    "entries": entries,
                    "tokens": budget::estimate_tokens(&text),
                    "budget": args.budget,
                }));
            } else if !text.is_empty() {
                out.line(text.trim_end());
            }
        }
        Format::Json => {
            let mut task = task;
            task.insert(
                "memory_context".into(),
                Value::Array(hits.iter().map(context::context_entry).collect()),
            );
            out.json(&task);
        }
    }
    Ok(ExitCode::Ok)
}
