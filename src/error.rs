//! Errors of the library, each with the context a user needs: which file, line, entry or lock.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong in memlog's library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Io(#[from] std::io::Error),

    #[error(
        "no memlog workspace found from {start}: run `memlog init <project>` at the root of your repository, or pass --workspace DIR"
    )]
    NoWorkspace { start: PathBuf },

    #[error("invalid project name `{name}`: {why}")]
    BadProjectName {
        name: String,
        why: std::borrow::Cow<'static, str>,
    },

    #[error("project `{project}` is not initialized in {root}: run `memlog init {project}`")]
    NoProject { project: String, root: PathBuf },

    #[error("no project given and {why}: name one with --project NAME (or MEMLOG_PROJECT)")]
    AmbiguousProject { why: String },

    #[error(
        "{path}: line {line} (byte offset {offset}): {problem}{}",
        corrupt_log_fix(path, *line, problem),
        path = path.display()
    )]
    CorruptLog {
        path: PathBuf,
        line: usize,
        offset: u64,
        problem: String,
    },

    #[error("{path}: {problem}")]
    CorruptFile { path: PathBuf, problem: String },

    #[error(
        "timed out after {} waiting for the {what} lock {path}: another memlog process is using it; wait for it to finish, or raise --lock-timeout (MEMLOG_LOCK_TIMEOUT_MS)",
        whole_millis(*waited)
    )]
    LockTimeout {
        what: &'static str,
        path: PathBuf,
        waited: Duration,
    },

    #[error(
        "the projection store at {path} failed: {message}; the store is derived from the log, which is unharmed: {}",
        store_fix(message),
        path = path.display()
    )]
    Store { path: PathBuf, message: String },

    #[error("no entry matches `{prefix}` in project `{project}`")]
    NotFound { project: String, prefix: String },

    #[error("`{prefix}` is ambiguous in project `{project}`: it matches {}; give more characters", candidates.join(", "))]
    AmbiguousId {
        project: String,
        prefix: String,
        candidates: Vec<String>,
    },

    #[error("{0}")]
    Invalid(#[from] crate::policy::validate::Invalid),

    #[error("{0}")]
    Event(#[from] projections::EventError),

    #[error("{message}")]
    Rejected { message: String },

    #[error("{0}")]
    Usage(String),

    #[error(
        "{} is not a valid memlog.json: {}; fix {} (`memlog config validate {project}` checks it against docs/schemas/memlog.schema.json) or restore it from git",
        path.display(), problems.join("; "), if problems.len() == 1 { "it" } else { "them" }
    )]
    InvalidConfig {
        path: PathBuf,
        project: String,
        problems: Vec<String>,
    },
}

/// Result with memlog's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An input file named on the command line that cannot be read: a missing file, a
    /// directory or one without permission is the caller's mistake (a usage error naming the
    /// path and the way out), anything else an I/O error.
    pub fn input(path: &std::path::Path, e: std::io::Error) -> Self {
        use std::io::ErrorKind;
        let why = match e.kind() {
            ErrorKind::NotFound => "no such file",
            ErrorKind::PermissionDenied => "permission denied",
            ErrorKind::IsADirectory => "it is a directory",
            _ => return Self::Io(e),
        };
        Self::Usage(format!(
            "cannot read `{}`: {why}; give the path of a readable file, or `-` to read standard input",
            path.display()
        ))
    }

    pub(crate) fn store(path: &std::path::Path, e: impl std::fmt::Display) -> Self {
        Self::Store {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }
}

/// True when a store error says its files are damaged (a checksum or a block that does not
/// decode), rather than that it could not be written.
pub fn store_damaged(message: &str) -> bool {
    [
        "ChecksumMismatch",
        "Decompress",
        "InvalidTrailer",
        "InvalidHeader",
        "Unrecoverable",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// A wait as people read it: whole milliseconds (`500 ms`), whole seconds from 10 s on.
fn whole_millis(d: Duration) -> String {
    let ms = d.as_millis();
    if ms >= 10_000 {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

/// What to do about a store error: a damaged store is marked (see
/// [`crate::store::session::mark_damaged`]) and rebuilt by the next command.
fn store_fix(message: &str) -> &'static str {
    if store_damaged(message) {
        "the store's files are damaged: the next command rebuilds it from the log (or run `memlog rebuild`)"
    } else {
        "free disk space if the disk is full, then run the command again (the store is rebuilt automatically)"
    }
}

/// How to repair a log with a bad line: from git, unless the line is a conflict marker (the
/// problem then says what to do, and during a merge `git checkout -- <file>` fails).
fn corrupt_log_fix(path: &std::path::Path, line: usize, problem: &str) -> String {
    if problem == crate::log::read::CONFLICT_MARKER_HELP {
        return String::new();
    }
    // A line that ends inside its JSON is a write cut short. Past the log's end the next
    // command sets it aside; here a merge (or a hand edit) put lines after it, and git's
    // version holds it too when it was committed: restoring from git does not help.
    if problem.contains("EOF while parsing") {
        return format!(
            "; the line is cut short (a write that stopped midway, which a merge or a hand edit \
             then placed before other lines); if `git diff -- {path}` shows no change, the \
             committed log holds it too and restoring from git will not help: remove line \
             {line} (keep a copy first; an event that was never whole was never acknowledged, \
             and no other event names it), then run `memlog verify` and commit",
            path = path.display()
        );
    }
    format!(
        "; if the log is committed to git, see what changed with `git diff -- {path}` and restore \
         the committed lines with `git checkout -- {path}` (appends since the last commit are \
         then lost; keep a copy first); if it is not, fix or remove that line by hand (keep a \
         copy first); then run `memlog verify`",
        path = path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::Error;
    use std::time::Duration;

    #[test]
    fn a_line_cut_short_in_mid_log_is_to_be_removed_not_restored_from_git() {
        let error = |problem: &str| {
            Error::CorruptLog {
                path: "ai-memory/demo/events.jsonl".into(),
                line: 5,
                offset: 2097,
                problem: problem.into(),
            }
            .to_string()
        };
        let torn = error("not valid JSON: EOF while parsing a string at line 1 column 34");
        assert!(torn.contains("remove line 5"), "{torn}");
        assert!(!torn.contains("git checkout"), "{torn}");
        let edited = error("id mismatch");
        assert!(
            edited.contains("git checkout -- ai-memory/demo/events.jsonl"),
            "{edited}"
        );
    }

    #[test]
    fn a_lock_timeout_says_whole_milliseconds_or_seconds() {
        let timeout = |waited| {
            Error::LockTimeout {
                what: "store",
                path: "/w/store.lock".into(),
                waited,
            }
            .to_string()
        };
        assert!(
            timeout(Duration::from_micros(500_124)).starts_with("timed out after 500 ms waiting"),
            "{}",
            timeout(Duration::from_micros(500_124))
        );
        assert!(timeout(Duration::from_millis(10_003)).starts_with("timed out after 10 s waiting"));
    }
}
