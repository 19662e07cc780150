//! The command line: parse arguments, resolve them into a validated request, run it, print.
//! This is the only module that reads the environment, prints or decides exit codes.

mod apply;
mod as_of;
mod bench;
mod check;
mod compact;
mod completions;
mod config;
mod conflicts;
mod context;
mod dashboard;
mod entry_args;
mod git_namespace;
mod git_ops;
mod git_transfer;
mod health;
mod init;
pub mod invoke;
pub mod json_schema;
mod lifecycle;
mod lifecycle_ops;
mod mcp;
mod numbers;
mod output;
mod plural;
mod projects;
mod query;
mod read;
mod rebuild;
pub mod schemas;
mod stats;
mod strict_json;
mod verify;
mod write_ops;

use crate::clock::{Clock, FixedClock, SystemClock, parse_time};
use crate::error::{Error, Result};
use crate::project::Project;
use crate::workspace::{GLOBAL_PROJECT, ProjectName, Workspace};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

pub use bench::report_peak_rss;
pub use output::{ExitCode, Out, envelope};

/// Durable, auditable memory for AI agents, kept as a content-addressed event log in git.
#[derive(Debug, Parser)]
#[command(name = "memlog", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// The global options read from the environment when not given, and their variables.
const ENV_OPTIONS: [(&str, &str); 5] = [
    ("workspace", "MEMLOG_WORKSPACE"),
    ("project", "MEMLOG_PROJECT"),
    ("actor", "MEMLOG_ACTOR"),
    ("now", "MEMLOG_NOW"),
    ("lock_timeout", "MEMLOG_LOCK_TIMEOUT_MS"),
];

/// Options every command takes.
#[derive(Debug, clap::Args)]
pub struct GlobalArgs {
    /// Workspace root (default: the nearest ancestor holding ai-memory/ or .git)
    #[arg(long, global = true, env = "MEMLOG_WORKSPACE", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Project to use when a command does not name one
    #[arg(
        long,
        short = 'p',
        global = true,
        env = "MEMLOG_PROJECT",
        value_name = "NAME"
    )]
    pub project: Option<String>,
    /// Print one JSON document: {success, results, warnings}, or the error format (docs/JSON.md)
    #[arg(long, global = true)]
    pub json: bool,
    /// Who is writing: recorded as the events' actor and entries' created_by [default: $USER, else "memlog"]
    #[arg(long, global = true, env = "MEMLOG_ACTOR", value_name = "NAME")]
    pub actor: Option<String>,
    /// Use this time instead of the clock (ISO 8601), for reproducible runs and audits
    #[arg(long, global = true, env = "MEMLOG_NOW", value_name = "TIME")]
    pub now: Option<String>,
    /// How long to wait for another memlog process's lock, in milliseconds
    #[arg(
        long,
        global = true,
        env = "MEMLOG_LOCK_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = 10_000
    , allow_negative_numbers = true, value_parser = numbers::whole::<u64>)]
    pub lock_timeout: u64,
    /// Log the active configuration and the store's state, and timings where a command has them, on stderr
    #[arg(long, global = true)]
    pub debug: bool,
    /// Read commands: answer from the events the log held at this time (ISO 8601) or when this
    /// event was written (event id or prefix); the current store is left alone
    #[arg(long, global = true, value_name = "TIME|EVENT")]
    pub as_of: Option<String>,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Create ai-memory/<project>/ (and ai-memory/global/) in the workspace
    Init(init::InitArgs),
    /// Record a new memory entry
    Add(write_ops::AddArgs),
    /// Apply Memory_Update objects, an array of them, or an AgentResult with memory_updates
    Apply(apply::ApplyArgs),
    /// Replace an entry with a new one; the old one becomes superseded
    Supersede(write_ops::SupersedeArgs),
    /// Mark an entry as deprecated: historically relevant, no longer current
    Deprecate(lifecycle_ops::ReasonArgs),
    /// Change fields of an entry (a new version), e.g. extend valid_to; restores an archived
    /// entry
    Update(write_ops::UpdateArgs),
    /// Pin an entry: exempt it from automatic lifecycle transitions
    Pin(lifecycle_ops::ReasonArgs),
    /// Unpin an entry
    Unpin(lifecycle_ops::ReasonArgs),
    /// Clear a conflict left by concurrent writers (optionally choosing field values)
    Resolve(write_ops::ResolveArgs),
    /// Show every field of an entry (any unique id prefix)
    Show(read::ShowArgs),
    /// List entries, most recently updated first, with filters (no smart defaults)
    List(read::ListArgs),
    /// Ask memory: ranked entries matching text and filters, with smart defaults and global memory
    Query(query::QueryArgs),
    /// Fill an AgentTask's memory_context, or render it as a prompt prefix within a token budget
    Context(context::ContextArgs),
    /// Every version of an entry, with what changed
    History(read::HistoryArgs),
    /// Status, lifecycle, pin and conflict transitions of one entry or all
    Audit(read::AuditArgs),
    /// Statistics of a project
    Stats(stats::StatsArgs),
    /// Terminal dashboard of the statistics (or one frame of it with --once)
    Dashboard(dashboard::DashboardArgs),
    /// Check every event of the log: canonical form, hash, version, parents
    Verify(verify::VerifyArgs),
    /// Throw the projections away and replay the log
    Rebuild(rebuild::ProjectArg),
    /// Rebuild the store beside itself and swap it in: what single writes added, folded into
    /// the compact layout (started in the background when a store is due; see docs/PERFORMANCE.md)
    Compact(compact::CompactArgs),
    /// Print the full projection state canonically, to compare two stores
    Dump(rebuild::ProjectArg),
    /// Entries that concurrent writers left in conflict, with both sides (who, when, what)
    Conflicts(conflicts::ConflictsArgs),
    /// Merge two versions of an event log (git's merge driver: `memlog merge-driver %O %A %B %P`)
    MergeDriver(git_ops::MergeDriverArgs),
    /// Git integration: `memlog git install|uninstall` (merge driver, pre-commit hook) and
    /// `memlog git pre-commit` (the hook's checks)
    #[command(subcommand)]
    Git(git_ops::GitCommand),
    /// Write ai-context/<project>.md from high-confidence memory (--check for CI and hooks)
    SyncContext(git_ops::SyncContextArgs),
    /// Save memory to a file: Memory_Entry records (json, jsonl) or raw events, with filters
    Export(git_transfer::ExportArgs),
    /// Load memory from an export through the write policy (--conflict-strategy skip|overwrite|merge)
    Import(git_transfer::ImportArgs),
    /// Start a new project (namespace) from a copy of another's memory
    Fork(git_namespace::ForkArgs),
    /// Add one project's memory to another: union of events, duplicates settled by relevance
    MergeProject(git_namespace::MergeProjectArgs),
    /// Check Memory_Update objects against the schema and the write policy, writing nothing
    Validate(check::ValidateArgs),
    /// Detect credentials in text: `memlog secrets scan [FILE...]` (a pre-commit hook)
    #[command(subcommand)]
    Secrets(check::SecretsCommand),
    /// Time whole-process operations on a synthetic workspace
    Bench(bench::BenchArgs),
    /// Lifecycle evaluation: `memlog lifecycle run|daemon|report`
    #[command(subcommand)]
    Lifecycle(lifecycle::LifecycleCommand),
    /// Remove an entry's content (e.g. a secret that reached the log); its audit trail stays
    Purge(lifecycle::PurgeArgs),
    /// Rewrite events.jsonl without the content of purged entries (tombstones keep it verifiable)
    Gc(lifecycle::GcArgs),
    /// List pinned entries, with who pinned them and when
    Pinned(lifecycle::ProjectArgs),
    /// Remove a project from the workspace (unpins its entries first; needs --yes)
    Drop(lifecycle::DropArgs),
    /// List entries within the warning window of valid_to, or past it, and reviews that are due
    CheckFreshness(lifecycle::ProjectArgs),
    /// Check every evidence URI (paths offline; URLs with --online) and flag stale evidence
    ValidateEvidence(lifecycle::EvidenceArgs),
    /// Serve memory to AI agents as MCP tools over standard input and output (docs/MCP.md)
    Mcp(mcp::McpArgs),
    /// The projects of the workspace with their entry counts
    Projects(projects::ProjectsArgs),
    /// Log readable, projections current, index sizes, entries, events, configuration; exit 1 if unhealthy
    Health(health::HealthArgs),
    /// Check memlog.json against its JSON Schema (`config validate`), or print the schema
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Print a shell completion script: `memlog completions bash|zsh|fish`
    Completions(completions::CompletionsArgs),
}

/// Where the actor's name came from, so that a bad one is named by the place to fix it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorFrom {
    /// `--actor NAME`.
    Option,
    /// The `MEMLOG_ACTOR` environment variable.
    Environment,
    /// `$USER` (or the fallback `memlog`): neither was given.
    User,
}

impl ActorFrom {
    /// Where the parsed arguments `m` took `--actor` from.
    pub fn of(m: &clap::ArgMatches) -> Self {
        match m.value_source("actor") {
            Some(clap::parser::ValueSource::EnvVariable) => Self::Environment,
            Some(clap::parser::ValueSource::CommandLine) => Self::Option,
            _ => Self::User,
        }
    }

    /// The actor as the message about a bad one names it.
    fn named(self) -> &'static str {
        match self {
            Self::Option => "--actor",
            Self::Environment => "the actor from MEMLOG_ACTOR",
            Self::User => {
                "the actor from $USER (used when neither --actor nor MEMLOG_ACTOR is set)"
            }
        }
    }

    /// How to give a good one instead.
    fn fix(self) -> &'static str {
        match self {
            Self::Option => "give another name with --actor NAME",
            Self::Environment => "set MEMLOG_ACTOR to another name, or give --actor NAME",
            Self::User => "give a name with --actor NAME or MEMLOG_ACTOR",
        }
    }
}

/// Where the global options whose bad values are named by their source came from.
#[derive(Debug, Clone, Copy)]
pub struct Sources {
    pub actor: ActorFrom,
    /// `--now` came from `MEMLOG_NOW`, not from the command line.
    pub now_from_env: bool,
    /// `--project` came from `MEMLOG_PROJECT`.
    pub project_from_env: bool,
    /// `--workspace` came from `MEMLOG_WORKSPACE`.
    pub workspace_from_env: bool,
}

impl Sources {
    /// Where the parsed arguments `m` took them from.
    pub fn of(m: &clap::ArgMatches) -> Self {
        Self {
            actor: ActorFrom::of(m),
            now_from_env: m.value_source("now") == Some(clap::parser::ValueSource::EnvVariable),
            project_from_env: m.value_source("project")
                == Some(clap::parser::ValueSource::EnvVariable),
            workspace_from_env: m.value_source("workspace")
                == Some(clap::parser::ValueSource::EnvVariable),
        }
    }
}

/// Resolved global context for a command.
pub struct Ctx {
    pub global: GlobalArgs,
    clock: Box<dyn Clock>,
    as_of: Option<crate::git::as_of::AsOf>,
    actor_from: ActorFrom,
    workspace_from_env: bool,
}

impl Ctx {
    fn new(global: GlobalArgs, sources: Sources) -> Result<Self> {
        let clock: Box<dyn Clock> = match &global.now {
            Some(s) => Box::new(FixedClock(parse_time(s).map_err(|m| {
                Error::Usage(if sources.now_from_env {
                    format!("MEMLOG_NOW: {m}; set MEMLOG_NOW to a valid time, or unset it")
                } else {
                    format!("--now: {m}")
                })
            })?)),
            None => Box::new(SystemClock),
        };
        // A project name from the environment is checked here, where its source is known: a bad
        // one is a usage error naming the variable, as for the other variables.
        if sources.project_from_env
            && let Some(name) = &global.project
            && let Err(e) = ProjectName::new(name)
        {
            return Err(Error::Usage(format!(
                "MEMLOG_PROJECT: {e}; set MEMLOG_PROJECT to a project's name, or unset it"
            )));
        }
        let as_of = global
            .as_of
            .as_deref()
            .map(crate::git::as_of::AsOf::parse)
            .transpose()?;
        Ok(Self {
            global,
            clock,
            as_of,
            actor_from: sources.actor,
            workspace_from_env: sources.workspace_from_env,
        })
    }

    pub fn now(&self) -> String {
        self.clock.timestamp()
    }

    pub fn lock_timeout(&self) -> Duration {
        Duration::from_millis(self.global.lock_timeout)
    }

    /// The actor of writes: `--actor`, else `MEMLOG_ACTOR`, else `$USER`, else `memlog`.
    ///
    /// # Errors
    /// [`Error::Usage`] for a name that is empty, too long, or holds control or invisible
    /// characters, naming where it came from and the fix.
    pub fn actor(&self) -> Result<String> {
        let (actor, from) = self.given_actor();
        let n = actor.chars().count();
        if n == 0 || n > projections::event::MAX_ACTOR_CHARS || actor.chars().any(char::is_control)
        {
            return Err(Error::Usage(format!(
                "{} must be 1 to {} characters without control characters; it has {n}{}: {}",
                from.named(),
                projections::event::MAX_ACTOR_CHARS,
                if actor.chars().any(char::is_control) {
                    ", control characters among them"
                } else {
                    ""
                },
                from.fix()
            )));
        }
        // Blank: spaces of any width, or the characters that show as a blank (U+2800, the
        // Hangul fillers). `history` and `audit` would show no author.
        let blank =
            |c: char| c.is_whitespace() || matches!(c, '\u{2800}' | '\u{3164}' | '\u{FFA0}');
        if actor.chars().all(blank) {
            return Err(Error::Usage(format!(
                "{} is blank (only spaces or blank characters): an actor names who wrote, in \
                 visible characters; {}",
                from.named(),
                from.fix()
            )));
        }
        if let Some(c) = actor.chars().find(|&c| crate::safe_text::is_invisible(c)) {
            return Err(Error::Usage(format!(
                "{} contains U+{:04X}, {}: remove it (an actor holds only visible characters), \
                 or {}",
                from.named(),
                u32::from(c),
                crate::safe_text::describe_invisible(c),
                from.fix()
            )));
        }
        // A credential in the environment (a token exported as `$USER` or MEMLOG_ACTOR by
        // mistake) is a bad setting like the others, not a bad entry: named by where it came
        // from, never echoed.
        if let Some(f) = crate::policy::secret_scan::scan_text(&actor).first() {
            return Err(Error::Usage(format!(
                "{} looks like {} {} (rule {}): the actor is written into every event, and \
                 credentials must never be stored in memory; nothing was written: {}",
                from.named(),
                crate::policy::article(f.description),
                f.description,
                f.rule,
                from.fix()
            )));
        }
        Ok(actor)
    }

    /// The actor as given (`--actor`, `MEMLOG_ACTOR`, else `$USER`, else `memlog`) and where it
    /// came from, unchecked.
    fn given_actor(&self) -> (String, ActorFrom) {
        match &self.global.actor {
            Some(a) => (a.clone(), self.actor_from),
            None => (
                std::env::var("USER")
                    .ok()
                    .filter(|u| !u.is_empty())
                    .unwrap_or_else(|| "memlog".into()),
                ActorFrom::User,
            ),
        }
    }

    pub fn write_context(&self) -> Result<crate::log::writer::WriteContext> {
        as_of::refuse(self, "this command writes")?;
        let ctx = crate::log::writer::WriteContext {
            actor: self.actor()?,
            ..self.unchecked_write_context()
        };
        if !ctx.clock {
            warn_if_ahead_of_the_clock(&ctx.at);
        }
        Ok(ctx)
    }

    /// [`Ctx::write_context`] for a write of `operation` to `project`: a credential given as
    /// the actor, refused there, is also logged to the project's security log, as the secrets
    /// of a refused write are (without the value). The error returned is the refusal, or the
    /// error of writing the log.
    pub fn write_context_for(
        &self,
        project: &Project,
        operation: &str,
    ) -> Result<crate::log::writer::WriteContext> {
        self.write_context().map_err(|e| {
            let (actor, _) = self.given_actor();
            let found = crate::policy::Policy::defaults().check_free_text("actor", &actor);
            if !matches!(e, Error::Usage(_)) || found.detections.is_empty() {
                return e;
            }
            match crate::policy::log_detections(
                project,
                &self.now(),
                &actor,
                operation,
                &found.detections,
            ) {
                Ok(()) => e,
                Err(log_error) => log_error,
            }
        })
    }

    /// The context of a write as given, its actor unchecked: for logging a refused write,
    /// whose actor may be what was refused.
    fn unchecked_write_context(&self) -> crate::log::writer::WriteContext {
        crate::log::writer::WriteContext {
            actor: self.given_actor().0,
            at: self.now(),
            lock_timeout: self.lock_timeout(),
            dry_run: false,
            // A fault injector for the test suite, in debug builds only.
            fail_after_append: cfg!(debug_assertions)
                && std::env::var_os("MEMLOG_TEST_FAIL_AFTER_APPEND").is_some(),
            // The same test as the clock's choice in `Ctx::new`.
            clock: self.global.now.is_none(),
        }
    }

    /// [`crate::log::writer::refused`] for a write refused before it opened its project (`project`,
    /// as [`Ctx::project`] takes it): the project is opened to log the secrets found, when it
    /// exists, a credential given as the actor among them. The error returned is `e`, or the
    /// error of writing the log.
    pub fn refused(&self, project: Option<&str>, operation: &str, e: impl Into<Error>) -> Error {
        let e = e.into();
        if !matches!(e, Error::Invalid(_)) || self.as_of.is_some() {
            return e;
        }
        match self.project(project) {
            Ok(project) => {
                crate::log::writer::refused(&project, &self.unchecked_write_context(), operation, e)
            }
            Err(_) => e,
        }
    }

    /// Opens a caught-up session, telling the user about a torn tail that was set aside.
    /// Under `--as-of`, a private session on the events the log held then. The store is opened
    /// to be read ([`crate::store::session::Session::open_reading`]): commands that write do so
    /// through the log's writer, which opens its own session.
    pub fn open_session(&self, project: &Project) -> Result<crate::store::session::Session> {
        self.open_session_warning(project, false)
    }

    /// [`Ctx::open_session`] for the commands that read the whole memory (`list`, `stats`):
    /// they also warn of every event whose parents the log lacks, for as long as it lacks
    /// them, not only on the catch-up that found them (one read of one record of the store).
    pub fn open_session_whole(&self, project: &Project) -> Result<crate::store::session::Session> {
        self.open_session_warning(project, true)
    }

    fn open_session_warning(
        &self,
        project: &Project,
        all_missing_parents: bool,
    ) -> Result<crate::store::session::Session> {
        if let Some(as_of) = &self.as_of {
            // Taken before the events are read: a kept store is let go if the log changes
            // (see `Session::detached`).
            let log_was = crate::log::stamp::FileStamp::at(&project.log_path())
                .ok()
                .flatten();
            let (events, _) = crate::git::as_of::events_as_of(project, as_of)?;
            let session = crate::store::session::Session::detached(
                project,
                events,
                crate::store::session::Keep::IfLogIs(log_was),
            )?;
            for w in session.report.warnings() {
                output::warn(&w.message);
            }
            return Ok(session);
        }
        let mut session =
            crate::store::session::Session::open_reading(project, self.lock_timeout())?;
        if all_missing_parents {
            session.report_all_missing_parents()?;
        }
        for w in session.report.warnings() {
            output::warn(&w.message);
        }
        Ok(session)
    }

    pub fn workspace(&self) -> Result<Workspace> {
        match &self.global.workspace {
            // A directory the environment gave is named by its variable: `--workspace` was
            // never typed.
            Some(dir) if self.workspace_from_env => Workspace::at(dir).map_err(|e| match e {
                Error::Usage(m) => Error::Usage(m.replacen("--workspace", "MEMLOG_WORKSPACE", 1)),
                e => e,
            }),
            Some(dir) => Workspace::at(dir),
            None => Workspace::discover(&std::env::current_dir()?),
        }
    }

    /// The project named by a positional argument, else --project, else the only project
    /// besides `global`; refused when its memlog.json is invalid.
    pub fn project(&self, positional: Option<&str>) -> Result<Project> {
        let project = self.project_unchecked(positional)?;
        config::refuse_invalid(self, &project)?;
        Ok(project)
    }

    /// [`Ctx::project`] without the configuration check (for `health` and `config validate`).
    pub fn project_unchecked(&self, positional: Option<&str>) -> Result<Project> {
        let ws = self.workspace()?;
        let name = match positional.or(self.global.project.as_deref()) {
            Some(n) => ProjectName::new(n)?,
            None => {
                let all = ws.projects()?;
                let own: Vec<&ProjectName> = all
                    .iter()
                    .filter(|p| p.as_str() != GLOBAL_PROJECT)
                    .collect();
                match own.as_slice() {
                    [one] => (*one).clone(),
                    [] if !all.is_empty() => ProjectName::new(GLOBAL_PROJECT)?,
                    [] => {
                        return Err(Error::NoWorkspace {
                            start: ws.root().to_path_buf(),
                        });
                    }
                    many => {
                        return Err(Error::AmbiguousProject {
                            why: format!(
                                "the workspace has several projects ({})",
                                many.iter()
                                    .map(|p| p.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        });
                    }
                }
            }
        };
        Project::open(&ws, name)
    }
}

/// What to tell the user about a repaired or quarantined last line.
pub fn quarantine_message(q: &crate::store::session::QuarantineNote) -> String {
    q.message()
}

/// Runs the CLI with `args` (program name first) and returns the process exit code.
pub fn main_with_args(args: Vec<std::ffi::OsString>, bin_name: &str) -> i32 {
    let json = args.iter().any(|a| a == "--json");
    let (cli, sources) = match Cli::command_with_name(bin_name).try_get_matches_from(&args) {
        Ok(m) => match <Cli as clap::FromArgMatches>::from_arg_matches(&m) {
            Ok(cli) => (cli, Sources::of(&m)),
            Err(e) => return output::clap_error(&with_usage(e, &args, bin_name), json),
        },
        Err(e) => return output::clap_error(&with_usage(e, &args, bin_name), json),
    };
    if cfg!(debug_assertions) && std::env::var_os("MEMLOG_TEST_SMALL_BATCHES").is_some() {
        // For the test suite, in debug builds only: every catch-up strategy on a few lines.
        crate::store::tuning::shrink_for_tests();
    }
    let json = cli.global.json;
    // Under `--json` warnings go into the JSON document only.
    output::set_warnings_in_json(json);
    let mut out = Out::new(json);
    let result = Ctx::new(cli.global, sources).and_then(|ctx| run(&ctx, cli.command, &mut out));
    let code = match result {
        Ok(code) => {
            out.finish();
            code as i32
        }
        Err(e) => {
            crate::store::session::mark_damaged(&e);
            output::report_error_after(&e, json, out.take_partial())
        }
    };
    compact::start_due();
    code
}

/// `usage` without the options that only the environment gave (`MEMLOG_ACTOR` shows as
/// `--actor <NAME>`, as if it were required); `None` when there were none.
fn without_env_options(usage: &str, args: &[std::ffi::OsString], bin_name: &str) -> Option<String> {
    let cmd = Cli::command_with_name(bin_name);
    let typed = |long: &str| {
        args.iter().filter_map(|a| a.to_str()).any(|a| {
            a.strip_prefix("--")
                .and_then(|a| a.strip_prefix(long))
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
        })
    };
    let mut out = usage.to_owned();
    for arg in cmd.get_arguments().filter(|a| a.get_env().is_some()) {
        let Some(long) = arg.get_long() else {
            continue;
        };
        if typed(long) {
            continue;
        }
        let value = arg
            .get_value_names()
            .and_then(|names| names.first())
            .map(|n| format!(" <{n}>"))
            .unwrap_or_default();
        out = out.replace(&format!(" --{long}{value}"), "");
    }
    (out != usage).then_some(out)
}

/// clap shows the command's usage line in most of its errors, but not when a value parser
/// refused a value (`--limit abc`): add it there too, so that every usage error carries it.
fn with_usage(mut e: clap::Error, args: &[std::ffi::OsString], bin_name: &str) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    // A bad value that only the environment gave (`MEMLOG_LOCK_TIMEOUT_MS=soon`) is named by its variable:
    // the option clap names was never typed.
    if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) {
        let from_env = ENV_OPTIONS.iter().find(|(id, var)| {
            let long = format!("--{}", id.replace('_', "-"));
            (arg == &long || arg.starts_with(&format!("{long} ")))
                && std::env::var_os(var).is_some()
                && !args.iter().filter_map(|a| a.to_str()).any(|a| {
                    a.strip_prefix(long.as_str())
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
                        || (*id == "project" && a.starts_with("-p"))
                })
        });
        if let Some((_, var)) = from_env {
            e.insert(
                ContextKind::Suggested,
                ContextValue::StyledStrs(vec![
                    format!("the value comes from {var}: set it to a valid value, or unset it")
                        .into(),
                ]),
            );
        }
    }
    // A variable that is not UTF-8 fails the whole parse with clap's "invalid UTF-8 ... in one
    // or more arguments": name it, since no argument typed is at fault.
    if e.kind() == ErrorKind::InvalidUtf8
        && let Some((_, var)) = ENV_OPTIONS
            .iter()
            .find(|(_, var)| std::env::var_os(var).is_some_and(|v| v.to_str().is_none()))
    {
        e.insert(
            ContextKind::Suggested,
            ContextValue::StyledStrs(vec![
                format!("{var} holds bytes that are not UTF-8: set it to text, or unset it").into(),
            ]),
        );
    }
    if let Some(ContextValue::StyledStr(usage)) = e.get(ContextKind::Usage) {
        if let Some(usage) = without_env_options(&usage.to_string(), args, bin_name) {
            e.insert(ContextKind::Usage, ContextValue::StyledStr(usage.into()));
        }
        return e;
    }
    if e.get(ContextKind::Usage).is_some()
        || !matches!(
            e.kind(),
            ErrorKind::ValueValidation | ErrorKind::InvalidValue
        )
    {
        return e;
    }
    let mut cmd = Cli::command_with_name(bin_name);
    cmd.build();
    // The command the arguments name: the words that are subcommands, in order (an option's
    // value equal to a subcommand's name would mislead this, at worst into a wider usage line).
    let mut current = &cmd;
    for word in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if word == "--" {
            break;
        }
        if let Some(sub) = current
            .find_subcommand(word)
            .filter(|_| !word.starts_with('-'))
        {
            current = sub;
        }
    }
    e.insert(
        ContextKind::Usage,
        ContextValue::StyledStr(current.clone().render_usage()),
    );
    e
}

impl Cli {
    fn command_with_name(name: &str) -> clap::Command {
        let mut cmd = <Self as clap::CommandFactory>::command().bin_name(name.to_owned());
        // A variable set to nothing counts as unset (`MEMLOG_PROJECT= memlog list` is how a
        // shell clears one for a command), as `$USER` does for the actor: it was read as an
        // empty value and refused as if the option had been given empty. So does one of only
        // spaces (`MEMLOG_NOW=' '` was refused as `--now`), but for the actor: an actor of
        // only spaces is refused, naming its variable ([`Ctx::actor`]), as an empty `$USER`
        // is passed over but a blank one refused.
        for (arg, var) in ENV_OPTIONS {
            let unset = std::env::var_os(var).is_some_and(|v| {
                v.is_empty() || (arg != "actor" && v.to_str().is_some_and(|v| v.trim().is_empty()))
            });
            if unset {
                cmd = cmd.mut_arg(arg, |a| a.env(None));
            }
        }
        cmd
    }
}

fn run(ctx: &Ctx, command: Command, out: &mut Out) -> Result<ExitCode> {
    as_of::check_command(ctx, &command)?;
    match command {
        Command::Init(a) => init::run(ctx, a, out),
        Command::Add(a) => write_ops::add(ctx, a, out),
        Command::Apply(a) => apply::run(ctx, a, out),
        Command::Supersede(a) => write_ops::supersede(ctx, a, out),
        Command::Update(a) => write_ops::update(ctx, a, out),
        Command::Deprecate(a) => lifecycle_ops::run(ctx, lifecycle_ops::Op::Deprecate, a, out),
        Command::Pin(a) => lifecycle_ops::run(ctx, lifecycle_ops::Op::Pin, a, out),
        Command::Unpin(a) => lifecycle_ops::run(ctx, lifecycle_ops::Op::Unpin, a, out),
        Command::Resolve(a) => write_ops::resolve(ctx, a, out),
        Command::Show(a) => read::show(ctx, a, out),
        Command::List(a) => read::list(ctx, a, out),
        Command::Query(a) => query::run(ctx, a, out),
        Command::Context(a) => context::run(ctx, a, out),
        Command::History(a) => read::history(ctx, a, out),
        Command::Audit(a) => read::audit(ctx, a, out),
        Command::Stats(a) => stats::run(ctx, a, out),
        Command::Dashboard(a) => dashboard::run(ctx, a, out),
        Command::Verify(a) => verify::run(ctx, a, out),
        Command::Rebuild(a) => rebuild::rebuild(ctx, a, out),
        Command::Compact(a) => compact::run(ctx, a, out),
        Command::Dump(a) => rebuild::dump(ctx, a, out),
        Command::Conflicts(a) => conflicts::run(ctx, a, out),
        Command::MergeDriver(a) => git_ops::merge_driver(ctx, a, out),
        Command::Git(c) => git_ops::git(ctx, c, out),
        Command::SyncContext(a) => git_ops::sync_context(ctx, a, out),
        Command::Export(a) => git_transfer::export(ctx, a, out),
        Command::Import(a) => git_transfer::import(ctx, a, out),
        Command::Fork(a) => git_namespace::fork(ctx, a, out),
        Command::MergeProject(a) => git_namespace::merge_project(ctx, a, out),
        Command::Bench(a) => bench::run(ctx, a, out),
        Command::Validate(a) => check::validate(ctx, a, out),
        Command::Secrets(c) => check::secrets(ctx, c, out),
        Command::Lifecycle(c) => lifecycle::lifecycle(ctx, c, out),
        Command::Purge(a) => lifecycle::purge_cmd(ctx, a, out),
        Command::Gc(a) => lifecycle::gc_cmd(ctx, a, out),
        Command::Pinned(a) => lifecycle::pinned(ctx, a, out),
        Command::Drop(a) => lifecycle::drop_cmd(ctx, a, out),
        Command::CheckFreshness(a) => lifecycle::check_freshness(ctx, a, out),
        Command::ValidateEvidence(a) => lifecycle::validate_evidence(ctx, a, out),
        Command::Mcp(a) => mcp::run(ctx, a, out),
        Command::Projects(a) => projects::run(ctx, a, out),
        Command::Health(a) => health::run(ctx, a, out),
        Command::Config(c) => config::run(ctx, c, out),
        Command::Completions(a) => completions::run(a, out),
    }
}

/// Warns when a write is dated (by `--now` or `MEMLOG_NOW`) more than a year after this
/// machine's clock (a mistyped year, a time meant for a `--dry-run`): a change is never dated before its entry's history, so every later change
/// to what it touches must be dated after it too, and a `lifecycle run` at such a time archives
/// what has not decayed yet.
fn warn_if_ahead_of_the_clock(at: &str) {
    let Ok(at_time) = chrono::DateTime::parse_from_rfc3339(at) else {
        return;
    };
    let ahead = at_time.with_timezone(&chrono::Utc) - chrono::Utc::now();
    if ahead > chrono::Duration::days(365) {
        output::warn(&format!(
            "this write is dated {at}, {} days after this machine's clock: every later change \
             to what it touches must be dated at or after it; leave --now (and MEMLOG_NOW) out \
             to date writes by the clock",
            ahead.num_days()
        ));
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Subcommands are built only when used (`defer`), so clap's own checks (unique argument
    /// names, above all with the global arguments each subcommand receives) run here on every
    /// one of them.
    #[test]
    fn every_subcommand_is_well_formed() {
        super::Cli::command().debug_assert();
    }

    /// A subcommand's help says what its variant's doc comment says, once its deferred
    /// arguments are built too (a doc comment on a flattened struct would replace it).
    #[test]
    fn every_subcommand_keeps_its_own_help() {
        fn abouts(cmd: &clap::Command, path: &str, out: &mut Vec<(String, String)>) {
            for sub in cmd.get_subcommands() {
                let path = format!("{path} {}", sub.get_name());
                let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
                out.push((path.clone(), about));
                abouts(sub, &path, out);
            }
        }
        let mut cmd = super::Cli::command();
        let mut listed = Vec::new();
        abouts(&cmd, "memlog", &mut listed);
        cmd.build();
        let mut built = Vec::new();
        abouts(&cmd, "memlog", &mut built);
        // Building adds the `help` subcommands.
        built.retain(|(path, _)| !path.split(' ').any(|word| word == "help"));
        assert!(listed.len() > 40, "{listed:?}");
        assert_eq!(listed, built);
    }
}
