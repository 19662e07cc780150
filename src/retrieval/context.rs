//! Filling an AgentTask's `memory_context` (requirement 8 of the core document).
//!
//! With `memory_enabled: true`, the entries are chosen from the task's project, `goal` (as query
//! text), `scope` (with the scope hierarchy) and `subject`: active, unexpired, at least the
//! policy's confidence. Matching means passing those filters and, when the goal shares words
//! with some entries, a text relevance of at least [`MIN_RELEVANCE`] of the best match (when it
//! shares none, every entry passing the filters matches). Of the matches, the
//! [`MAX_CONTEXT`] with the highest confidence are chosen, code/artifact evidence before weaker
//! evidence at equal confidence, then by relevance. Each carries its summary and metadata, not
//! its content (`memlog show <id>` prints that). With `memory_enabled` false or absent, the task
//! is returned untouched and no query runs.

use serde_json::{Map, Value};

/// Most entries in a `memory_context` (requirement 8.2).
pub const MAX_CONTEXT: usize = 10;
/// Share of the best text relevance a match needs.
pub const MIN_RELEVANCE: f64 = 0.25;

/// What a task asks memory for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskQuery {
    pub project: Option<String>,
    pub goal: Option<String>,
    pub scope: Option<String>,
    pub subject: Option<String>,
}

/// The first member of the task that memlog reads and that has the wrong type: the message
/// names it and what it must be. (Other members are the agent's own and pass through.)
pub fn type_problem(task: &Map<String, Value>) -> Option<String> {
    match task.get("memory_enabled") {
        None | Some(Value::Null | Value::Bool(_)) => {}
        Some(other) => {
            return Some(format!(
                "`memory_enabled` is {other}; use true (fill memory_context) or false"
            ));
        }
    }
    ["project", "goal", "description", "scope", "subject"]
        .into_iter()
        .find_map(|k| match task.get(k) {
            None | Some(Value::Null | Value::String(_)) => None,
            Some(other) => Some(format!(
                "`{k}` is {}; it must be a string",
                match other {
                    Value::Bool(_) => "a boolean",
                    Value::Number(_) => "a number",
                    Value::Array(_) => "an array",
                    _ => "an object",
                }
            )),
        })
}

/// True when the task asks for memory.
pub fn enabled(task: &Map<String, Value>) -> bool {
    task.get("memory_enabled") == Some(&Value::Bool(true))
}

/// The query fields of a task: `project`, `goal` (or `description`), `scope`, `subject`. A
/// field that is empty or blank is absent: agents send `""` for a field they do not use.
pub fn task_query(task: &Map<String, Value>) -> TaskQuery {
    let text = |k: &str| {
        task.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    };
    TaskQuery {
        project: text("project"),
        goal: text("goal").or_else(|| text("description")),
        scope: text("scope"),
        subject: text("subject"),
    }
}

/// A Memory_Entry for `memory_context`: every field but `content`, plus the retrieval notes.
pub fn context_entry(h: &super::search::Hit) -> Value {
    let mut map = projections::entry_json::to_flat_map(&h.entry);
    map.remove("content");
    map.insert("global".into(), Value::Bool(h.global));
    map.insert("annotations".into(), h.annotations().into());
    Value::Object(map)
}
