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

/// `object` with more properties that may be absent.
fn with_optional(mut object: Value, props: &[(&str, Value)]) -> Value {
    if let Some(properties) = object["properties"].as_object_mut() {
        for (k, v) in props {
            properties.insert((*k).to_owned(), v.clone());
        }
    }
    object
}

/// The line of an update in JSON Lines input (absent for a JSON document).
fn input_line() -> Value {
    json!({"type": "integer", "minimum": 1, "description": "The update's line in JSON Lines input (blank lines counted); absent for a JSON document."})
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
        "Verdict": with_optional(object(&[
            ("index", json!({"type": "integer", "minimum": 1})),
            ("operation", nullable_string()),
            ("valid", boolean()),
            ("errors", array(object(&[
                ("code", json!({"enum": ERROR_CODES})),
                ("field", string()),
                ("constraint", string()),
                ("message", string()),
            ]))),
            ("warnings", array(json!({"$ref": "#/$defs/Warning"}))),
        ]), &[("line", input_line())]),
        "Error": {
            "type": "object",
            "required": ["success", "error"],
            "additionalProperties": false,
            "properties": {
                "success": {"const": false},
                "warnings": {"type": "array", "items": {"$ref": "#/$defs/Warning"}},
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
    // A place in the log and what is wrong there (`verify`).
    let finding = object(&[
        ("line", integer()),
        ("offset", integer()),
        ("problem", string()),
    ]);
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
                    array(with_optional(
                        object(&[
                            ("index", json!({"type": "integer", "minimum": 1})),
                            ("id", string()),
                            ("events", array(string())),
                        ]),
                        &[("line", input_line())],
                    )),
                ),
                (
                    "skipped",
                    array(with_optional(
                        object(&[
                            ("index", json!({"type": "integer", "minimum": 1})),
                            ("operation", nullable_string()),
                            ("code", json!({"enum": ERROR_CODES})),
                        ]),
                        &[("line", input_line())],
                    )),
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
                "description": "The AgentTask with memory_context filled (--format json; the task as read when memory_enabled is not true), or the prompt prefix (--format prompt; empty when memory_enabled is not true)",
                "anyOf": [
                    {"type": "object", "required": ["prompt", "entries", "tokens", "budget"], "properties": {
                        "prompt": string(), "entries": integer(), "tokens": integer(), "budget": integer()
                    }},
                    {"type": "object", "properties": {"memory_context": array(json!({"type": "object"}))}}
                ]
            }),
        ),
        ("history", "memlog history", array(history_record)),
        ("audit", "memlog audit", array(audit_record)),
        ("stats", "memlog stats", stats_results()),
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
                ("problems", array(finding.clone())),
                ("warnings", array(finding)),
                ("conflicts", array(string())),
                ("missing", boolean()),
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
            "compact",
            "memlog compact",
            object(&[("project", string()), ("compacted", boolean())]),
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
                    object(&[
                        ("file", string()),
                        ("readable", boolean()),
                        ("exists", boolean()),
                        ("bytes", json!({"type": ["integer", "null"], "minimum": 0})),
                    ]),
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
        (
            "lifecycle-run",
            "memlog lifecycle run",
            json!({
                "description": "The run report of the project; with --all, one per project",
                "anyOf": [run_report(), array(run_report())]
            }),
        ),
        ("lifecycle-daemon", "memlog lifecycle daemon", {
            let mut a = array(run_report());
            a["description"] = json!("The report of every evaluation, in the order they ran");
            a
        }),
        (
            "lifecycle-report",
            "memlog lifecycle report",
            lifecycle_metrics(),
        ),
        ("purge", "memlog purge", {
            let mut w = object(&[("id", string()), ("events", array(string()))]);
            w["description"] = json!(
                "The purged entry's id and the purge event; with --dry-run no event, and the \
                 entry as it is before the purge"
            );
            w["properties"]["entry"] = entry();
            w
        }),
        (
            "gc",
            "memlog gc",
            object(&[
                ("project", string()),
                ("dry_run", boolean()),
                ("purges", integer()),
                ("tombstoned", integer()),
                ("duplicates_dropped", integer()),
                ("bytes_before", integer()),
                ("bytes_after", integer()),
                ("problems", array(string())),
            ]),
        ),
        ("pinned", "memlog pinned", array(entry())),
        (
            "drop",
            "memlog drop",
            object(&[
                ("project", string()),
                ("dropped", json!({"const": true})),
                ("unpinned", array(string())),
            ]),
        ),
        (
            "check-freshness",
            "memlog check-freshness",
            array(object(&[
                ("id", string()),
                ("section", string()),
                ("subject", string()),
                ("summary", string()),
                (
                    "problem",
                    json!({"enum": ["expired", "expiring", "review_due"]}),
                ),
                ("due", string()),
                ("days", json!({"type": "number"})),
            ])),
        ),
        (
            "validate-evidence",
            "memlog validate-evidence",
            object(&[
                ("project", string()),
                ("online", boolean()),
                (
                    "entries",
                    array(object(&[
                        ("id", string()),
                        (
                            "checks",
                            array(object(&[
                                ("uri", string()),
                                ("result", json!({"enum": ["ok", "stale", "unchecked"]})),
                                ("detail", string()),
                            ])),
                        ),
                        ("stale", array(string())),
                        ("complete", boolean()),
                    ])),
                ),
                ("dry_run", boolean()),
                ("marked_stale", array(string())),
                ("cleared", array(string())),
            ]),
        ),
        (
            "conflicts",
            "memlog conflicts",
            array(object(&[
                ("entry", string()),
                ("summary", string()),
                ("status", string()),
                ("base", array(string())),
                (
                    "sides",
                    array(object(&[
                        ("head", string()),
                        ("actors", array(string())),
                        (
                            "events",
                            array(object(&[
                                ("event", string()),
                                ("type", string()),
                                ("actor", string()),
                                ("at", string()),
                            ])),
                        ),
                        ("set", json!({"type": "object"})),
                    ])),
                ),
                ("disputed", array(string())),
                ("current", json!({"type": "object"})),
            ])),
        ),
        (
            "merge-driver",
            "memlog merge-driver",
            object(&[
                ("path", string()),
                ("ours", integer()),
                ("added", integer()),
                ("duplicates", integer()),
                ("replaced", integer()),
            ]),
        ),
        ("git-install", "memlog git install", git_steps()),
        ("git-uninstall", "memlog git uninstall", git_steps()),
        (
            "git-pre-commit",
            "memlog git pre-commit",
            object(&[
                ("ok", boolean()),
                (
                    "secrets",
                    array(object(&[
                        ("path", string()),
                        ("line", integer()),
                        ("column", integer()),
                        ("rule", string()),
                        ("description", string()),
                    ])),
                ),
                (
                    "damaged_log_lines",
                    array(object(&[
                        ("path", string()),
                        ("line", integer()),
                        ("problem", string()),
                    ])),
                ),
                (
                    "dropped_by_merge",
                    array(object(&[
                        ("path", string()),
                        ("commit", string()),
                        ("branch", json!({"type": ["string", "null"]})),
                        ("missing", array(string())),
                    ])),
                ),
                (
                    "stale_context",
                    array(object(&[("project", string()), ("stale", staleness())])),
                ),
            ]),
        ),
        ("sync-context", "memlog sync-context", {
            let mut o = object(&[
                ("path", string()),
                ("entries", integer()),
                (
                    "withheld",
                    array(object(&[
                        ("entry", string()),
                        ("rule", string()),
                        ("description", string()),
                    ])),
                ),
                ("stale", staleness()),
            ]);
            o["description"] = json!(
                "The context file and how it differs from memory: `written` when it was \
                 (re)written, `up_to_date` with --check or --dry-run, and with --dry-run the \
                 `content` that would be written; `withheld`: the selected entries left out \
                 because their text looks like a credential (entry id and secret rule)"
            );
            o["properties"]["written"] = boolean();
            o["properties"]["up_to_date"] = boolean();
            o["properties"]["content"] = string();
            o
        }),
        (
            "export",
            "memlog export",
            json!({
                "description": "What was written (to a file or a directory); with `-` as the \
                    path, the exported text itself",
                "anyOf": [
                    {
                        "type": "object",
                        "required": ["path", "format", "files"],
                        "properties": {
                            "path": string(),
                            "format": {"enum": ["json", "jsonl", "events"]},
                            "files": integer(),
                            "entries": integer(),
                            "events": integer()
                        }
                    },
                    string()
                ]
            }),
        ),
        (
            "import",
            "memlog import",
            object(&[
                ("imported", array(import_outcome())),
                ("merged", array(import_outcome())),
                ("overwritten", array(import_outcome())),
                ("skipped", array(import_outcome())),
                ("rejected", array(import_outcome())),
            ]),
        ),
        (
            "fork",
            "memlog fork",
            object(&[
                ("from", string()),
                ("project", string()),
                ("events", integer()),
            ]),
        ),
        (
            "merge-project",
            "memlog merge-project",
            object(&[
                ("added", integer()),
                ("already", integer()),
                (
                    "rejected",
                    array(json!({
                        "type": "array",
                        "description": "[event id, why it was rejected]",
                        "items": string(),
                        "minItems": 2,
                        "maxItems": 2
                    })),
                ),
                (
                    "duplicates",
                    array(object(&[("kept", string()), ("deprecated", string())])),
                ),
                ("conflicts", array(string())),
            ]),
        ),
        (
            "dashboard",
            "memlog dashboard",
            json!({
                "description": "dashboard prints no JSON: with --json it always fails \
                    (USAGE_ERROR, pointing to `memlog stats --json`)",
                "not": {}
            }),
        ),
    ]
}

/// The results of `stats`: the schema documented in docs/ANALYTICS.md (between its markers),
/// with its own `$defs` written in place.
fn stats_results() -> Value {
    const DOC: &str = include_str!("../../docs/ANALYTICS.md");
    let schema = DOC
        .split_once("<!-- schema:start -->\n```json\n")
        .and_then(|(_, rest)| rest.split_once("```\n<!-- schema:end -->"))
        .and_then(|(text, _)| serde_json::from_str::<Value>(text).ok())
        .unwrap_or_else(|| json!({"type": "object"}));
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    fn inline(v: &mut Value, defs: &Value) {
        if let Some(name) = v
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            && let Some(def) = defs.get(name)
        {
            *v = def.clone();
            return;
        }
        match v {
            Value::Object(m) => m.values_mut().for_each(|x| inline(x, defs)),
            Value::Array(a) => a.iter_mut().for_each(|x| inline(x, defs)),
            _ => {}
        }
    }
    let mut results = schema;
    if let Some(m) = results.as_object_mut() {
        m.remove("$schema");
        m.remove("$defs");
        m.remove("title");
    }
    inline(&mut results, &defs);
    results
}

/// A lifecycle run report (`lifecycle run`, `lifecycle daemon`).
fn run_report() -> Value {
    let tier = object(&[("entries", integer()), ("bytes", integer())]);
    let kind = object(&[
        ("entries", integer()),
        ("archived", integer()),
        ("lifespan_days_sum", json!({"type": "number"})),
    ]);
    object(&[
        ("project", string()),
        ("now", string()),
        ("dry_run", boolean()),
        ("duration_ms", integer()),
        ("processed", integer()),
        ("batches", integer()),
        ("pinned", integer()),
        (
            "transitions",
            array({
                let mut t = object(&[
                    ("entry", string()),
                    ("from", string()),
                    ("to", string()),
                    ("reason", string()),
                ]);
                t["properties"]["event"] = json!({"type": "string", "description": "The event appended (none in a dry run)"});
                t
            }),
        ),
        (
            "skipped",
            array(object(&[("entry", string()), ("error", string())])),
        ),
        ("archived", integer()),
        ("stopped", boolean()),
        (
            "storage",
            json!({"type": "object", "additionalProperties": tier}),
        ),
        (
            "kinds",
            json!({"type": "object", "additionalProperties": kind}),
        ),
        ("reclaimed_bytes", integer()),
    ])
}

/// `lifecycle report`: the lifecycle metrics of a project.
fn lifecycle_metrics() -> Value {
    let numbers = json!({"type": "object", "additionalProperties": {"type": "number"}});
    object(&[
        ("entries_by_lifecycle", counts()),
        ("pinned", integer()),
        ("purged", integer()),
        ("stale_evidence", integer()),
        ("access_frequency", counts()),
        (
            "storage",
            json!({"type": "object", "additionalProperties":
                object(&[("entries", integer()), ("bytes", integer())])}),
        ),
        ("average_lifespan_days", numbers.clone()),
        ("archival_rate", numbers),
        (
            "last_run",
            json!({"anyOf": [
                object(&[
                    ("now", string()),
                    ("duration_ms", integer()),
                    ("processed", integer()),
                    ("transitions", counts()),
                    ("skipped", integer()),
                    ("stopped", boolean()),
                ]),
                {"type": "null"}
            ]}),
        ),
    ])
}

fn git_steps() -> Value {
    object(&[(
        "steps",
        array(object(&[
            ("action", string()),
            ("what", string()),
            ("path", string()),
        ])),
    )])
}

fn staleness() -> Value {
    object(&[
        ("added", array(string())),
        ("removed", array(string())),
        ("changed", array(string())),
        ("missing", boolean()),
        ("other", boolean()),
    ])
}

fn import_outcome() -> Value {
    let mut o = object(&[("source", string())]);
    o["properties"]["record"] = string();
    o["properties"]["entry"] = string();
    o["properties"]["reason"] = string();
    o
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
                     the command ran, the error format {{success: false, error}} when it failed, \
                     with the warnings given before the error in `warnings` (docs/JSON.md)."
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
