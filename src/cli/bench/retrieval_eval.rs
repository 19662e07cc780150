//! `memlog bench --retrieval`: recall@5 and MRR of `query` on a generated data set (see
//! [`super::eval_data`]), beside SQLite FTS5's BM25 on the same memories and questions.
//!
//! The memories are written by `memlog apply` of a JSON Lines file, as agents write them; the
//! questions run through the library's query path with the default filters at a fixed time; the
//! same memories go into FTS5 tables (the plain `unicode61` tokenizer, and `porter` for
//! stemming), queried by the `sqlite3` command with the question's words joined by OR.

use super::child::Memlog;
use super::eval_data::DataSet;
use crate::error::{Error, Result};
use crate::retrieval::filters::Filters;
use crate::retrieval::rank::RankParams;
use crate::retrieval::search::{self, Order, Request, Source};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// The time at which the questions are asked.
pub const NOW: &str = "2026-11-22T10:00:00Z";
/// Results considered for MRR.
const DEPTH: usize = 10;

/// Scores of one ranker.
#[derive(Debug, Clone, Serialize)]
pub struct Scores {
    pub ranker: String,
    pub questions: usize,
    pub recall_at_5: f64,
    pub mrr_at_10: f64,
    /// recall@5 by question style.
    pub recall_at_5_by_style: std::collections::BTreeMap<String, f64>,
}

/// The evaluation's report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The data set: `seed 7`, `LoCoMo (path)`.
    pub data: String,
    pub memories: usize,
    pub questions: usize,
    pub scores: Vec<Scores>,
}

fn score(ranker: &str, d: &DataSet, ranked: &[Vec<usize>]) -> Scores {
    let mut hits5 = 0.0;
    let mut rr = 0.0;
    let mut by_style: HashMap<&str, (f64, f64)> = HashMap::new();
    for (q, r) in d.questions.iter().zip(ranked) {
        let pos = r.iter().take(DEPTH).position(|m| q.answers.contains(m));
        let in5 = pos.is_some_and(|p| p < 5);
        if in5 {
            hits5 += 1.0;
        }
        if let Some(p) = pos {
            #[expect(clippy::cast_precision_loss, reason = "ranks below 10")]
            let rank = (p + 1) as f64;
            rr += 1.0 / rank;
        }
        let s = by_style.entry(q.style.as_str()).or_default();
        s.0 += f64::from(u8::from(in5));
        s.1 += 1.0;
    }
    #[expect(clippy::cast_precision_loss, reason = "hundreds of questions")]
    let n = d.questions.len().max(1) as f64;
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    Scores {
        ranker: ranker.into(),
        questions: d.questions.len(),
        recall_at_5: round(hits5 / n),
        mrr_at_10: round(rr / n),
        recall_at_5_by_style: by_style
            .into_iter()
            .map(|(k, (h, t))| (k.to_owned(), round(h / t)))
            .collect(),
    }
}

/// Runs the evaluation of `d` in `dir` (a directory the bench owns).
///
/// # Errors
/// When memlog or sqlite3 fails.
pub fn run(memlog: &Memlog, dir: &Path, d: &DataSet, misses: Option<&Path>) -> Result<Report> {
    let root = dir.join("retrieval-eval");
    fs_err::create_dir_all(&root)?;
    let ws = crate::workspace::Workspace::at(&root)?;
    let mut mine = vec![Vec::new(); d.questions.len()];
    for (p, project_name) in d.projects.iter().enumerate() {
        let name = crate::workspace::ProjectName::new(project_name)?;
        crate::project::init(&ws, &name, NOW)?;
        let members: Vec<usize> = (0..d.memories.len())
            .filter(|&i| d.memory_project[i] == p)
            .collect();
        let index = apply(memlog, &root, dir, project_name, d, &members)?;
        let project = crate::project::Project::open(&ws, name)?;
        ask(&project, d, p, &index, &mut mine)?;
    }
    if let Some(path) = misses {
        write_misses(path, d, &mine)?;
    }
    let mut scores = vec![score("memlog query (defaults)", d, &mine)];
    if super::query_bench::sqlite_available() {
        for (label, tokenizer, filtered) in [
            ("SQLite FTS5 BM25 (unicode61)", "unicode61", false),
            ("SQLite FTS5 BM25 (porter)", "porter", false),
            (
                "SQLite FTS5 BM25 (porter) + memlog's default filters",
                "porter",
                true,
            ),
        ] {
            let ranked = fts5(dir, d, tokenizer, filtered)?;
            scores.push(score(label, d, &ranked));
        }
    }
    Ok(Report {
        data: d.name.clone(),
        memories: d.memories.len(),
        questions: d.questions.len(),
        scores,
    })
}

/// Writes each question whose answers are not among the first five of `ranked` to `path`, as
/// JSON Lines: the question, its style, the expected summaries and the five returned.
fn write_misses(path: &Path, d: &DataSet, ranked: &[Vec<usize>]) -> Result<()> {
    let summary = |i: &usize| {
        d.memories
            .get(*i)
            .map_or(Value::Null, |m| m["summary"].clone())
    };
    let mut text = String::new();
    for (q, r) in d.questions.iter().zip(ranked) {
        let top: Vec<&usize> = r.iter().take(5).collect();
        if top.iter().any(|m| q.answers.contains(m)) {
            continue;
        }
        let line = serde_json::json!({
            "question": q.text,
            "style": q.style,
            "project": d.projects.get(q.project),
            "expected": q.answers.iter().map(summary).collect::<Vec<_>>(),
            "returned": top.into_iter().map(summary).collect::<Vec<_>>(),
        });
        text.push_str(&line.to_string());
        text.push('\n');
    }
    crate::log::durable::write_atomic(path, text.as_bytes())
}

/// Asks project `p`'s questions of `d` through the library's query path, with the default
/// filters at [`NOW`], and records in `ranked` the memories (by index) each answer lists.
fn ask(
    project: &crate::project::Project,
    d: &DataSet,
    p: usize,
    index: &HashMap<String, usize>,
    ranked: &mut [Vec<usize>],
) -> Result<()> {
    let session =
        crate::store::session::Session::open(project, std::time::Duration::from_secs(30))?;
    let config = project.config()?;
    let decay = config
        .policies
        .lifecycle
        .decay_function()
        .map_err(|problem| Error::CorruptFile {
            path: project.config_path(),
            problem,
        })?;
    let sources = [Source {
        store: session.store(),
        project: project.name.to_string(),
        global: false,
    }];
    let now = crate::retrieval::features::unix_millis(NOW).unwrap_or(0);
    for (q, r) in d.questions.iter().zip(ranked.iter_mut()) {
        if q.project != p {
            continue;
        }
        let req = Request {
            text: Some(q.text.clone()),
            filters: Filters::defaults(config.policies.retrieval.min_confidence),
            limit: DEPTH,
            include_related: false,
            params: RankParams {
                now,
                expiry_warning_days: config.policies.retrieval.expiry_warning_days,
                recency_half_life_days: config.policies.lifecycle.decay_half_life_days,
                decay: decay.clone(),
            },
            order: Order::Score,
            min_relevance: 0.0,
        };
        let answer = search::search(&sources, &req)?;
        *r = answer
            .hits
            .iter()
            .filter_map(|h| index.get(h.entry.id.as_str()).copied())
            .collect();
    }
    Ok(())
}

/// Writes the memories `members` of `d` into `project` by `memlog apply` of a JSON Lines file,
/// as agents write them, and maps each entry id written to its memory's index.
fn apply(
    memlog: &Memlog,
    root: &Path,
    dir: &Path,
    project: &str,
    d: &DataSet,
    members: &[usize],
) -> Result<HashMap<String, usize>> {
    let file = dir.join(format!("eval-{project}.jsonl"));
    let mut text = String::new();
    for &i in members {
        text.push_str(
            &serde_json::json!({"operation": "create", "entry": d.memories[i]}).to_string(),
        );
        text.push('\n');
    }
    crate::log::durable::write_atomic(&file, text.as_bytes())?;
    let o = memlog.run(
        root,
        &[
            "--now".into(),
            NOW.into(),
            "apply".into(),
            project.into(),
            file.display().to_string(),
        ],
        "eval",
    )?;
    let applied: Vec<String> = o
        .json()
        .and_then(|v| {
            v["applied"].as_array().map(|a| {
                a.iter()
                    .filter_map(|x| x["id"].as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default();
    if applied.len() != members.len() {
        return Err(Error::Usage(format!(
            "bench --retrieval: apply wrote {} of {} memories of project {project}: {}",
            applied.len(),
            members.len(),
            String::from_utf8_lossy(&o.stdout)
                .chars()
                .take(600)
                .collect::<String>()
        )));
    }
    Ok(applied.into_iter().zip(members.iter().copied()).collect())
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Ranked memory indexes per question from FTS5's `bm25()`.
fn fts5(dir: &Path, d: &DataSet, tokenizer: &str, filtered: bool) -> Result<Vec<Vec<usize>>> {
    let db = dir.join(format!("eval-{tokenizer}.db"));
    let _ = fs_err::remove_file(&db);
    let mut sql = format!(
        "CREATE VIRTUAL TABLE f USING fts5(summary, content, subject, tags, n UNINDEXED, p UNINDEXED, \
         status UNINDEXED, confidence UNINDEXED, valid_to UNINDEXED, tokenize = '{tokenizer}');\nBEGIN;\n"
    );
    for (i, m) in d.memories.iter().enumerate() {
        let s = |k: &str| {
            m[k].as_str()
                .unwrap_or(if k == "status" { "active" } else { "" })
                .to_owned()
        };
        let tags: Vec<&str> = m["tags"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t.as_str()).collect())
            .unwrap_or_default();
        sql.push_str(&format!(
            "INSERT INTO f VALUES({},{},{},{},{i},{},{},{},{});\n",
            quote(&s("summary")),
            quote(&s("content")),
            quote(&s("subject")),
            quote(&tags.join(" ")),
            d.memory_project[i],
            quote(&s("status")),
            m["confidence"].as_f64().unwrap_or(0.0),
            m["valid_to"].as_str().map_or("NULL".into(), quote),
        ));
    }
    sql.push_str("COMMIT;\n");
    let filter = if filtered {
        format!(
            " AND status = 'active' AND confidence >= 0.6 AND (valid_to IS NULL OR valid_to >= {})",
            quote(NOW)
        )
    } else {
        String::new()
    };
    for (qi, q) in d.questions.iter().enumerate() {
        let words: Vec<String> = q
            .text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| format!("\"{}\"", w.to_lowercase()))
            .collect();
        sql.push_str(&format!("SELECT 'Q{qi}';\n"));
        if !words.is_empty() {
            sql.push_str(&format!(
                // The matches first (a CTE the planner cannot merge), then the conditions: given
                // together, SQLite may test the MATCH row by row.
                "WITH m AS MATERIALIZED (SELECT n, p, status, confidence, valid_to, bm25(f) AS r \
                 FROM f WHERE f MATCH {}) SELECT n FROM m WHERE p = {}{filter} ORDER BY r LIMIT {DEPTH};\n",
                quote(&words.join(" OR ")),
                q.project
            ));
        }
    }
    let out = super::query_bench::run_sqlite(&db, &sql)?;
    let _ = fs_err::remove_file(&db);
    let mut ranked = vec![Vec::new(); d.questions.len()];
    let mut current = None;
    for line in String::from_utf8_lossy(&out).lines() {
        if let Some(q) = line.strip_prefix('Q') {
            current = q.parse::<usize>().ok();
        } else if let (Some(q), Ok(n)) = (current, line.trim().parse::<usize>())
            && let Some(r) = ranked.get_mut(q)
        {
            r.push(n);
        }
    }
    Ok(ranked)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::cli::bench::eval_data::Question;

    #[test]
    fn misses_list_only_questions_without_an_answer_in_the_first_five() {
        let mut d = DataSet {
            name: "t".into(),
            projects: vec!["p".into()],
            ..DataSet::default()
        };
        for i in 0..7 {
            d.push(0, serde_json::json!({"summary": format!("memory {i}")}));
        }
        let question = |text: &str, answer: usize| Question {
            text: text.into(),
            answers: vec![answer],
            style: "keyword".into(),
            project: 0,
        };
        d.questions = vec![question("found", 4), question("missed", 6)];
        let ranked = vec![vec![0, 1, 2, 3, 4, 5, 6], vec![0, 1, 2, 3, 4, 6]];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("misses.jsonl");
        write_misses(&path, &d, &ranked).unwrap();
        let text = fs_err::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert_eq!(lines[0]["question"], "missed");
        assert_eq!(lines[0]["expected"], serde_json::json!(["memory 6"]));
        assert_eq!(lines[0]["returned"].as_array().unwrap().len(), 5);
        assert_eq!(lines[0]["returned"][4], "memory 4");
    }
}
