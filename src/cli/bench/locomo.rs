//! The LoCoMo conversations (Maharana et al. 2024, "Evaluating Very Long-Term Conversational
//! Memory of LLM Agents") as a retrieval evaluation from another source than memlog's own
//! generator: each conversation is a project, each turn a memory written as an agent would
//! record what someone said, and each question (categories 1 to 4; the unanswerable category 5
//! is left out) is answered by the turns its evidence names.
//!
//! Both published layouts are read: `locomo10.json`, an array of samples that hold a
//! `conversation` object and a `qa` array, and a directory of one JSON file per conversation
//! whose object holds the sessions and `qa` itself (`data/multimodal_dialog/locomo10_v2/` of the
//! LoCoMo repository's `data/locomo10.zip`).

use super::eval_data::{DataSet, Question};
use crate::error::{Error, Result};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;

const SUMMARY_CHARS: usize = 300;
const CONTENT_CHARS: usize = 2000;

/// The category names of the LoCoMo paper's tables.
fn category(c: u64) -> Option<&'static str> {
    match c {
        1 => Some("multi-hop"),
        2 => Some("temporal"),
        3 => Some("open-domain"),
        4 => Some("single-hop"),
        _ => None,
    }
}

/// Reads the conversations at `path` (a `locomo10.json` file or a directory of conversations).
///
/// # Errors
/// When `path` cannot be read or holds no conversation in either layout.
pub fn load(path: &Path) -> Result<DataSet> {
    let mut files = Vec::new();
    if path.is_dir() {
        for e in fs_err::read_dir(path)? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "json") {
                files.push(p);
            }
        }
        files.sort();
    } else {
        files.push(path.to_owned());
    }
    let mut d = DataSet {
        name: format!("LoCoMo ({})", path.display()),
        ..DataSet::default()
    };
    for file in &files {
        let v: Value = serde_json::from_slice(&fs_err::read(file)?).map_err(|e| {
            Error::Usage(format!(
                "bench --locomo: `{}` is not JSON ({e}); give locomo10.json or the directory of its conversations",
                file.display()
            ))
        })?;
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        match &v {
            Value::Array(samples) => {
                for (i, s) in samples.iter().enumerate() {
                    let id = s["sample_id"]
                        .as_str()
                        .map_or_else(|| i.to_string(), str::to_owned);
                    conversation(&mut d, &id, &s["conversation"], &s["qa"]);
                }
            }
            Value::Object(_) => conversation(&mut d, &stem, &v, &v["qa"]),
            _ => {}
        }
    }
    if d.questions.is_empty() {
        return Err(Error::Usage(format!(
            "bench --locomo: `{}` holds no LoCoMo conversation with questions; give locomo10.json or the directory of its conversations",
            path.display()
        )));
    }
    Ok(d)
}

fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

/// Adds one conversation: its turns as memories of a new project, its questions.
fn conversation(d: &mut DataSet, id: &str, conv: &Value, qa: &Value) {
    let Some(obj) = conv.as_object() else { return };
    let slug: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let project = d.projects.len();
    d.projects
        .push(format!("locomo-{}", slug.trim_matches('-')));
    let mut sessions: Vec<(u32, &Vec<Value>)> = obj
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse().ok()?;
            Some((n, v.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|s| s.0);
    let mut turns: HashMap<String, usize> = HashMap::new();
    // A turn said twice ("Thanks!") is one memory: `apply` refuses the copy as a duplicate.
    let mut said_before: HashMap<(String, String), usize> = HashMap::new();
    for (_, session) in sessions {
        for t in session {
            let (Some(speaker), Some(text), Some(dia)) = (
                t["speaker"].as_str(),
                t["text"].as_str(),
                t["dia_id"].as_str(),
            ) else {
                continue;
            };
            // What was said, and what was shown: a shared photo is part of the turn.
            let mut said = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if let Some(caption) = t["blip_caption"].as_str() {
                said.push_str(&format!(" [shares {caption}]"));
            }
            if said.is_empty() {
                continue;
            }
            let subject = speaker
                .to_lowercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join("-");
            let summary = cut(&said, SUMMARY_CHARS);
            if let Some(&i) = said_before.get(&(subject.clone(), summary.clone())) {
                turns.insert(dia.to_owned(), i);
                continue;
            }
            let entry = json!({
                "section": "observations",
                "kind": "other",
                "subject": subject.clone(),
                "scope": "repo",
                "summary": summary.clone(),
                "content": cut(&said, CONTENT_CHARS),
                "confidence": 0.8,
                "evidence": [{"type": "doc", "uri": format!("locomo/{slug}/{dia}"), "note": "conversation turn"}],
            });
            let i = d.push(project, entry);
            turns.insert(dia.to_owned(), i);
            said_before.insert((subject, summary), i);
        }
    }
    for q in qa.as_array().into_iter().flatten() {
        let (Some(text), Some(style)) = (
            q["question"].as_str(),
            q["category"].as_u64().and_then(category),
        ) else {
            continue;
        };
        let answers: Vec<usize> = q["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| turns.get(e.as_str()?.trim()).copied())
            .collect();
        if answers.is_empty() {
            continue;
        }
        d.questions.push(Question {
            text: text.to_owned(),
            answers,
            style: style.to_owned(),
            project,
        });
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn conversation_json() -> Value {
        json!({
            "speaker_a": "Ana", "speaker_b": "Bo",
            "session_2": [
                {"speaker": "Bo", "dia_id": "D2:1", "text": "Thanks!"},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "I adopted a  puppy\nnamed Toby.",
                 "blip_caption": "a photo of a small dog"}
            ],
            "session_1": [
                {"speaker": "Bo", "dia_id": "D1:1", "text": "Thanks!"},
                {"speaker": "Ana", "dia_id": "D1:2", "text": "I started pottery classes."}
            ],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "qa": [
                {"question": "What is the name of Ana's dog?", "answer": "Toby", "evidence": ["D2:2"], "category": 4},
                {"question": "What did Bo say?", "answer": "Thanks", "evidence": ["D2:1"], "category": 1},
                {"question": "What is Bo's dog called?", "adversarial_answer": "Toby", "evidence": ["D2:2"], "category": 5},
                {"question": "Where?", "answer": "?", "evidence": ["D9:9"], "category": 2}
            ]
        })
    }

    #[test]
    fn turns_become_memories_and_questions_point_at_them() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join("26.json"), conversation_json().to_string()).unwrap();
        let d = load(dir.path()).unwrap();
        assert_eq!(d.projects, ["locomo-26"]);
        // Sessions in order; the second "Thanks!" of Bo is the first one's memory.
        let summaries: Vec<&str> = d
            .memories
            .iter()
            .map(|m| m["summary"].as_str().unwrap())
            .collect();
        assert_eq!(
            summaries,
            [
                "Thanks!",
                "I started pottery classes.",
                "I adopted a puppy named Toby. [shares a photo of a small dog]"
            ]
        );
        assert_eq!(d.memories[2]["subject"], "ana");
        // Category 5 and evidence naming no turn are left out.
        assert_eq!(d.questions.len(), 2);
        assert_eq!(d.questions[0].answers, [2]);
        assert_eq!(d.questions[0].style, "single-hop");
        assert_eq!(d.questions[1].answers, [0]);
    }

    #[test]
    fn the_array_layout_reads_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("locomo10.json");
        let c = conversation_json();
        let samples = json!([{"sample_id": "conv-26", "conversation": c, "qa": c["qa"]}]);
        fs_err::write(&file, samples.to_string()).unwrap();
        let d = load(&file).unwrap();
        assert_eq!(d.projects, ["locomo-conv-26"]);
        assert_eq!(d.memories.len(), 3);
        assert_eq!(d.questions.len(), 2);
    }

    #[test]
    fn a_file_without_conversations_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.json");
        fs_err::write(&file, "{}").unwrap();
        let e = load(&file).unwrap_err().to_string();
        assert!(e.contains("holds no LoCoMo conversation"), "{e}");
        fs_err::write(&file, "not json").unwrap();
        let e = load(&file).unwrap_err().to_string();
        assert!(e.contains("is not JSON"), "{e}");
    }
}
