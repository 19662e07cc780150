//! The JSON Schema of every command's `--json` output: the one contract (a success
//! `{success, results, warnings}` or the error format) with each command's `results`.
//! docs/schemas/commands/ holds them as generated here (a test keeps the files equal), and the
//! integration tests check every command's output against its file.

use serde_json::{Value, json};

/// The error codes of the error format.
pub const ERROR_CODES: [&str; 11] = [
    "VALIDATION_ERROR",
    "STORAGE_ERROR",
    "SECRET_DETECTED",
    "EVIDENCE_INVALID",
    "QUERY_ERROR",
    "CONFLICT_ERROR",
    "USAGE_ERROR",
    "NOT_FOUND",
    "LOCK_TIMEOUT",
    "CORRUPT_LOG",
    "INTERNAL_ERROR",
];

fn string() -> Value {
    json!({"type": "string"})
}
fn nullable_string() -> Value {
    json!({"type": ["string", "null"]})
}
fn integer() -> Value {
    json!({"type": "integer", "minimum": 0})
}
fn boolean() -> Value {
    json!({"type": "boolean"})
}
fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}
fn counts() -> Value {
    json!({"type": "object", "additionalProperties": {"type": "integer"}})
}
/// An object with these required properties (others allowed: results may grow new keys).
fn object(props: &[(&str, Value)]) -> Value {
    let required: Vec<&str> = props.iter().map(|(k, _)| *k).collect();
    let properties: serde_json::Map<String, Value> = props
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    json!({"type": "object", "required": required, "properties": properties})
}

fn definitions() -> Value {
    json!({
        "Warning": {
            "type": "object",
            "required": ["message"],
            "properties": {
                "message": {"type": "string"},
                "field": {"type": "string"},
                "rule": {"type": "string"}
            }
        },
        "Evidence": object(&[("type", string())]),
        "Entry": object(&[
            ("id", string()),
            ("section", string()),
            ("kind", string()),
            ("subject", string()),
            ("scope", string()),
            ("summary", string()),
            ("content", string()),
            ("confidence", json!({"type": "number", "minimum": 0, "maximum": 1})),
            ("evidence", array(json!({"$ref": "#/$defs/Evidence"}))),
            ("tags", array(string())),
            ("related_entries", array(string())),
            ("status", json!({"enum": ["draft", "active", "superseded", "deprecated"]})),
            ("lifecycle", string()),
            ("pinned", boolean()),
            ("conflict", boolean()),
            ("created_at", string()),
            ("created_by", string()),
            ("updated_at", string()),
            ("updated_by", string()),
            ("valid_from", nullable_string()),
            ("valid_to", nullable_string()),
            ("version", integer()),
        ]),
        "Written": object(&[
            ("id", string()),
            ("events", array(string())),
            ("entry", json!({"$ref": "#/$defs/Entry"})),
        ]),
        "Verdict": object(&[
            ("index", json!({"type": "integer", "minimum": 1})),
            ("valid", boolean()),
            ("errors", array(object(&[
                ("code", json!({"enum": ERROR_CODES})),
                ("field", string()),
                ("constraint", string()),
                ("message", string()),
            ]))),
            ("warnings", array(json!({"$ref": "#/$defs/Warning"}))),
        ]),
        "Error": {
            "type": "object",
            "required": ["success", "error"],
            "additionalProperties": false,
            "properties": {
                "success": {"const": false},
                "error": {
                    "type": "object",
                    "required": ["code", "message", "details"],
                    "additionalProperties": false,
                    "properties": {
                        "code": {"enum": ERROR_CODES},
                        "message": {"type": "string"},
                        "details": {"type": "object"}
                    }
                }
            }
        }
    })
}

fn entry() -> Value {
    json!({"$ref": "#/$defs/Entry"})
}
fn written() -> Value {
    json!({"$ref": "#/$defs/Written"})
}

/// Each command's `results`, by the name of its schema file.
fn results() -> Vec<(&'static str, &'static str, Value)> {
    let history_record = object(&[
        ("version", integer()),
        ("event", string()),
        ("type", string()),
        ("at", string()),
        ("actor", string()),
        ("entry", string()),
        ("changes", array(json!({"type": "object"}))),
        ("state", json!({"type": "object"})),
    ]);
    let audit_record = object(&[
        ("seq", integer()),
        ("entry", string()),
        ("event", string()),
        ("dimension", string()),
        ("from", nullable_string()),
        ("to", string()),
        ("actor", string()),
        ("at", string()),
    ]);
    let project_list = |item: Value| array(item);
    vec![
        (
            "init",
            "memlog init",
            object(&[
                ("project", string()),
                ("path", string()),
                ("created", boolean()),
                ("global_created", boolean()),
            ]),
        ),
        ("add", "memlog add", written()),
        ("supersede", "memlog supersede", {
            let mut w = object(&[
                ("id", string()),
                ("events", array(string())),
                ("superseded", string()),
                ("entry", entry()),
            ]);
            w["description"] =
                json!("The replacement (id, entry) and the replaced entry (superseded).");
            w
        }),
        ("update", "memlog update", written()),
        ("deprecate", "memlog deprecate", written()),
        ("pin", "memlog pin", written()),
        ("unpin", "memlog unpin", written()),
        ("resolve", "memlog resolve", written()),
        (
            "apply",
            "memlog apply",
            object(&[
                (
                    "applied",
                    array(object(&[
                        ("index", json!({"type": "integer", "minimum": 1})),
                        ("id", string()),
                        ("events", array(string())),
                    ])),
                ),
                (
                    "skipped",
                    array(object(&[
                        ("index", json!({"type": "integer", "minimum": 1})),
                        ("code", json!({"enum": ERROR_CODES})),
                    ])),
                ),
            ]),
        ),
        (
            "validate",
            "memlog validate",
            array(json!({"$ref": "#/$defs/Verdict"})),
        ),
        ("show", "memlog show", entry()),
        ("list", "memlog list", array(entry())),
        (
            "query",
            "memlog query",
            array(object(&[
                ("id", string()),
                ("summary", string()),
                ("subject", string()),
                ("scope", string()),
                ("kind", string()),
                ("confidence", json!({"type": "number"})),
            ])),
        ),
        (
            "context",
            "memlog context",
            json!({
                "description": "The AgentTask with memory_context filled (--format json), or the prompt prefix (--format prompt), or null when --format prompt found nothing to say because memory is disabled",
                "anyOf": [
                    {"type": "object", "required": ["prompt", "entries", "tokens", "budget"], "properties": {
                        "prompt": string(), "entries": integer(), "tokens": integer(), "budget": integer()
                    }},
                    {"type": "object", "properties": {"memory_context": array(json!({"type": "object"}))}},
                    {"type": "null"}
                ]
            }),
        ),
        ("history", "memlog history", array(history_record)),
        ("audit", "memlog audit", array(audit_record)),
        (
            "stats",
            "memlog stats",
            object(&[
                ("project", string()),
                ("computed_at", string()),
                (
                    "statistics",
                    object(&[
                        ("total_entries", integer()),
                        ("entries_by_section", counts()),
                        ("entries_by_status", counts()),
                        ("entries_by_kind", counts()),
                        ("avg_confidence", json!({"type": "number"})),
                    ]),
                ),
            ]),
        ),
        (
            "verify",
            "memlog verify",
            object(&[
                ("file", string()),
                ("ok", boolean()),
                ("lines", integer()),
                ("events", integer()),
                ("entries", integer()),
                ("duplicate_lines", integer()),
                ("problems", array(json!({}))),
                ("conflicts", array(json!({}))),
            ]),
        ),
        (
            "rebuild",
            "memlog rebuild",
            object(&[
                ("project", string()),
                ("events", integer()),
                ("millis", integer()),
            ]),
        ),
        (
            "dump",
            "memlog dump",
            object(&[("project", string()), ("records", array(json!({})))]),
        ),
        (
            "secrets-scan",
            "memlog secrets scan",
            object(&[
                ("clean", boolean()),
                (
                    "findings",
                    array(object(&[
                        ("path", string()),
                        ("line", integer()),
                        ("column", integer()),
                        ("rule", string()),
                        ("description", string()),
                    ])),
                ),
            ]),
        ),
        (
            "secrets-rules",
            "memlog secrets rules",
            array(object(&[("rule", string()), ("description", string())])),
        ),
        (
            "projects",
            "memlog projects",
            project_list({
                let mut row = object(&[
                    ("project", string()),
                    (
                        "entries",
                        json!({"type": ["integer", "null"], "minimum": 0}),
                    ),
                    ("active", json!({"type": ["integer", "null"], "minimum": 0})),
                    ("events", json!({"type": ["integer", "null"], "minimum": 0})),
                    ("path", string()),
                ]);
                row["properties"]["error"] = json!({
                    "type": "string",
                    "description": "Why the project could not be read (then the counts are null)"
                });
                row
            }),
        ),
        (
            "health",
            "memlog health",
            project_list(object(&[
                ("project", string()),
                ("healthy", boolean()),
                ("problems", array(string())),
                ("warnings", array(string())),
                (
                    "log",
                    object(&[("file", string()), ("readable", boolean())]),
                ),
                (
                    "projections",
                    object(&[("current", boolean()), ("bytes_on_disk", integer())]),
                ),
                ("entries", json!({"type": ["object", "null"]})),
                ("events", json!({"type": ["integer", "null"]})),
                ("last_lifecycle_run", nullable_string()),
                ("last_lifecycle_run_note", string()),
                ("last_consolidation", nullable_string()),
                ("last_consolidation_note", string()),
                ("config", object(&[("valid", boolean())])),
            ])),
        ),
        (
            "config-validate",
            "memlog config validate",
            project_list(object(&[
                ("project", string()),
                ("file", string()),
                ("valid", boolean()),
                (
                    "problems",
                    array(object(&[("key", string()), ("message", string())])),
                ),
            ])),
        ),
        (
            "config-schema",
            "memlog config schema",
            json!({"type": "object", "required": ["$schema", "properties"]}),
        ),
        (
            "completions",
            "memlog completions",
            json!({"type": "string", "description": "The completion script"}),
        ),
        ("bench", "memlog bench", json!({"type": "object"})),
    ]
}

/// Every command's schema, by file name (without `.schema.json`).
pub fn all() -> Vec<(&'static str, Value)> {
    results()
        .into_iter()
        .map(|(name, command, results)| {
            let schema = json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": format!("{command} --json"),
                "description": format!(
                    "What `{command} --json` prints: {{success: true, results, warnings}} when \
                     the command ran, the error format {{success: false, error}} when it failed \
                     (docs/JSON.md)."
                ),
                "oneOf": [
                    {
                        "type": "object",
                        "required": ["success", "results", "warnings"],
                        "additionalProperties": false,
                        "properties": {
                            "success": {"const": true},
                            "results": results,
                            "warnings": {"type": "array", "items": {"$ref": "#/$defs/Warning"}}
                        }
                    },
                    {"$ref": "#/$defs/Error"}
                ],
                "$defs": definitions(),
            });
            (name, schema)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// docs/schemas/commands/ holds exactly what [`super::all`] generates; with
    /// MEMLOG_WRITE_SCHEMAS=1 the test writes the files instead.
    #[test]
    fn the_command_schemas_in_docs_are_the_generated_ones() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schemas/commands");
        let write = std::env::var_os("MEMLOG_WRITE_SCHEMAS").is_some();
        let mut stale = Vec::new();
        for (name, schema) in super::all() {
            let path = dir.join(format!("{name}.schema.json"));
            let text = serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n";
            if write {
                std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
                std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{e}"));
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(path.display().to_string());
            }
        }
        assert!(
            stale.is_empty(),
            "these schemas differ from the code: {stale:?}; regenerate them with \
             `MEMLOG_WRITE_SCHEMAS=1 cargo test --lib schemas`"
        );
    }
}
