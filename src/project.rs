//! A project's files: its config, its log and its local state directory.

use crate::error::{Error, Result};
use crate::log::durable;
use crate::workspace::{GLOBAL_PROJECT, ProjectName, Workspace};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Project configuration file name.
pub const CONFIG_FILE: &str = "memlog.json";
/// The event log file name.
pub const LOG_FILE: &str = "events.jsonl";
/// Local, derived, never committed state.
pub const STATE_DIR: &str = ".memlog";

const GITATTRIBUTES: &str =
    "# Event logs are sets of lines: merge them by union.\n*/events.jsonl merge=union\n";
const GITIGNORE: &str =
    "# Local projections, locks and logs: rebuilt from events.jsonl.\n*/.memlog/\n";

/// `memlog.json`: the project's name, creation time and policies.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProjectConfig {
    pub name: String,
    pub created_at: String,
    /// Configuration format version.
    pub format: u32,
    pub policies: Policies,
}

/// Default policies written by `init`; later commands read them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Policies {
    pub write: WritePolicy,
    pub retrieval: RetrievalPolicy,
    pub lifecycle: LifecyclePolicy,
}

/// What a write must satisfy.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WritePolicy {
    /// Active entries need at least one evidence object; drafts do not. Always true: the
    /// requirement cannot be turned off (`config validate` refuses `false`).
    pub require_evidence_for_active: bool,
    /// Kinds that need code, artifact, ticket or doc evidence.
    pub strong_evidence_kinds: Vec<String>,
    /// Warn below this confidence.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub low_confidence_warning: f64,
    /// Warn (suggesting `compact`) above this many entries.
    pub max_entries_warning: u64,
    /// Extra ticket URL patterns (regular expressions) accepted as `ticket` evidence.
    #[serde(default)]
    pub ticket_patterns: Vec<String>,
}

/// Query defaults.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RetrievalPolicy {
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_confidence: f64,
    /// Entries a query returns when it gives no `--limit` (a query returns at most 50).
    #[schemars(range(min = 1, max = 50))]
    pub max_results: u32,
    pub expiry_warning_days: u32,
    /// A query slower than this (milliseconds, whole command) logs a performance warning.
    #[serde(default = "default_slow_query_ms")]
    pub slow_query_ms: u64,
}

fn default_slow_query_ms() -> u64 {
    100
}

/// Lifecycle policies: decay, TTL, importance, retention, batching. Every key has a default, so
/// a `memlog.json` written before a key existed still loads; [`LifecyclePolicy::validate`]
/// (run whenever the configuration is read) names the key of any bad value. See
/// docs/LIFECYCLE.md.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LifecyclePolicy {
    /// TTL of a kind without an entry in `ttl_days`.
    #[schemars(range(min = 1))]
    pub default_ttl_days: u32,
    /// `exponential`, `linear`, `step` or `custom` (the `decay` object refines it).
    #[schemars(extend("enum" = ["exponential", "linear", "step", "custom"]))]
    pub decay_function: String,
    /// Shorthand for the decay rate: exponential `lambda = ln 2 / half_life`, linear
    /// `period = 2 × half_life`.
    #[schemars(range(min = 1))]
    pub decay_half_life_days: u32,
    /// Below this decay score an active entry becomes `decaying`.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub decaying_threshold: f64,
    /// How long an entry stays archived before it expires.
    #[schemars(range(min = 1))]
    pub archive_retention_days: u32,
    /// Decay parameters beyond the shorthand (lambda, period, steps, custom table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decay: Option<crate::lifecycle::decay::DecaySpec>,
    /// TTL per kind (`decision`, `requirement`, ...), in days.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schemars(extend("additionalProperties" = {"type": "integer", "format": "uint32", "minimum": 1}))]
    pub ttl_days: std::collections::BTreeMap<String, u32>,
    /// Importance weights, the high-importance threshold and its TTL multiplier.
    #[serde(default)]
    pub importance: crate::lifecycle::importance::ImportancePolicy,
    /// Entries never accessed decay faster after this many days.
    #[serde(default = "default_grace_days")]
    pub grace_period_days: u32,
    /// How much faster (time runs this many times faster after the grace period).
    #[serde(default = "default_never_accessed_multiplier")]
    #[schemars(range(min = 1.0))]
    pub never_accessed_decay_multiplier: f64,
    /// How long an expired entry waits before it is purged.
    #[serde(default = "default_expired_retention_days")]
    #[schemars(range(min = 1))]
    pub expired_retention_days: u32,
    /// How long lifecycle audit records (transitions, run reports) of purged entries are kept
    /// in the local run history.
    #[serde(default = "default_audit_retention_days")]
    #[schemars(range(min = 1))]
    pub audit_retention_days: u32,
    /// Warn when more entries than this are archived.
    #[serde(default = "default_archive_size_warning")]
    #[schemars(range(min = 1))]
    pub archive_size_warning: u64,
    /// Entries evaluated per batch (one lock hold, one append).
    #[serde(default = "default_batch_size")]
    #[schemars(range(min = 1))]
    pub batch_size: u32,
}

fn default_grace_days() -> u32 {
    14
}
fn default_never_accessed_multiplier() -> f64 {
    2.0
}
fn default_expired_retention_days() -> u32 {
    30
}
fn default_audit_retention_days() -> u32 {
    730
}
fn default_archive_size_warning() -> u64 {
    10_000
}
fn default_batch_size() -> u32 {
    500
}

impl Default for Policies {
    fn default() -> Self {
        Self {
            write: WritePolicy {
                require_evidence_for_active: true,
                strong_evidence_kinds: vec![
                    "decision".into(),
                    "requirement".into(),
                    "invariant".into(),
                ],
                low_confidence_warning: 0.5,
                max_entries_warning: 100,
                ticket_patterns: Vec::new(),
            },
            retrieval: RetrievalPolicy {
                min_confidence: 0.6,
                max_results: 50,
                expiry_warning_days: 7,
                slow_query_ms: default_slow_query_ms(),
            },
            lifecycle: LifecyclePolicy {
                default_ttl_days: 90,
                decay_function: "exponential".into(),
                decay_half_life_days: 30,
                decaying_threshold: 0.3,
                archive_retention_days: 365,
                decay: None,
                ttl_days: std::collections::BTreeMap::new(),
                importance: crate::lifecycle::importance::ImportancePolicy::default(),
                grace_period_days: default_grace_days(),
                never_accessed_decay_multiplier: default_never_accessed_multiplier(),
                expired_retention_days: default_expired_retention_days(),
                audit_retention_days: default_audit_retention_days(),
                archive_size_warning: default_archive_size_warning(),
                batch_size: default_batch_size(),
            },
        }
    }
}

/// One initialized (or to-be-initialized) project of a workspace.
#[derive(Debug, Clone)]
pub struct Project {
    pub workspace: Workspace,
    pub name: ProjectName,
    pub dir: PathBuf,
}

impl Project {
    /// The project `name` in `workspace` (not necessarily initialized).
    pub fn new(workspace: &Workspace, name: ProjectName) -> Self {
        let dir = workspace.project_dir(&name);
        Self {
            workspace: workspace.clone(),
            name,
            dir,
        }
    }

    /// Opens an initialized project.
    ///
    /// # Errors
    /// [`Error::NoProject`] when it has no `memlog.json`.
    pub fn open(workspace: &Workspace, name: ProjectName) -> Result<Self> {
        let p = Self::new(workspace, name);
        p.refuse_links()?;
        p.refuse_file_for_directory()?;
        p.refuse_config_directory()?;
        if !p.config_path().is_file() && p.log_path().is_file() {
            return Err(Error::CorruptFile {
                path: p.config_path(),
                problem: format!(
                    "missing: project `{0}` has a log but no memlog.json; restore it from git \
                     (`git checkout -- {1}`) or run `memlog init {0}` to write a default one",
                    p.name,
                    p.config_path()
                        .strip_prefix(workspace.root())
                        .unwrap_or(&p.config_path())
                        .display()
                ),
            });
        }
        if !p.config_path().is_file() {
            return Err(Error::NoProject {
                project: p.name.to_string(),
                root: workspace.root().to_path_buf(),
            });
        }
        Ok(p)
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE)
    }

    /// Refuses a file where the project's directory goes (`ai-memory/demo` a file): `init`
    /// cannot create the directory, and the project is not merely uninitialized.
    fn refuse_file_for_directory(&self) -> Result<()> {
        if !self.dir.exists() || self.dir.is_dir() {
            return Ok(());
        }
        let shown = self
            .dir
            .strip_prefix(self.workspace.root())
            .unwrap_or(&self.dir)
            .display()
            .to_string();
        Err(Error::CorruptFile {
            problem: format!(
                "is a file where project `{0}`'s directory goes; move it away or remove it \
                 (`rm {shown}`), then run `memlog init {0}` (or restore the directory from git: \
                 `git checkout -- {shown}`)",
                self.name
            ),
            path: self.dir.clone(),
        })
    }

    /// Refuses a `memlog.json` that is a directory: neither missing (`init` would find it
    /// there) nor a configuration.
    fn refuse_config_directory(&self) -> Result<()> {
        let path = self.config_path();
        if !path.is_dir() {
            return Ok(());
        }
        let shown = path
            .strip_prefix(self.workspace.root())
            .unwrap_or(&path)
            .display()
            .to_string();
        Err(Error::CorruptFile {
            problem: format!(
                "is a directory, not the project's configuration file; move it away or remove \
                 it (`rm -r {shown}`), then run `memlog init {}` to write the default \
                 configuration (or restore the file from git: `git checkout -- {shown}`)",
                self.name
            ),
            path,
        })
    }
    pub fn log_path(&self) -> PathBuf {
        self.dir.join(LOG_FILE)
    }
    pub fn state_dir(&self) -> PathBuf {
        self.dir.join(STATE_DIR)
    }
    pub fn store_dir(&self) -> PathBuf {
        self.state_dir().join("store")
    }
    pub fn store_lock_path(&self) -> PathBuf {
        self.state_dir().join("store.lock")
    }
    pub fn write_lock_path(&self) -> PathBuf {
        self.state_dir().join("write.lock")
    }
    /// Local log of rejected secrets (rule, field, actor, time; never the value).
    pub fn security_log_path(&self) -> PathBuf {
        self.state_dir().join("security.jsonl")
    }
    pub fn quarantine_path(&self) -> PathBuf {
        self.state_dir().join("quarantine.jsonl")
    }

    /// Reads `memlog.json`.
    ///
    /// # Errors
    /// When it is missing or malformed (naming the file).
    pub fn config(&self) -> Result<ProjectConfig> {
        let path = self.config_path();
        let text = fs_err::read_to_string(&path)?;
        let config: ProjectConfig =
            serde_json::from_str(&text).map_err(|e| Error::CorruptFile {
                path: path.clone(),
                problem: conflict_markers(&text).map_or_else(
                    || format!("{e}; fix the JSON or restore it from git"),
                    str::to_owned,
                ),
            })?;
        let problems = config.policies.lifecycle.problems();
        if !problems.is_empty() {
            return Err(Error::InvalidConfig {
                path,
                project: self.name.to_string(),
                problems: problems
                    .iter()
                    .map(|p| format!("{p}; fix it in the file (see docs/LIFECYCLE.md)"))
                    .collect(),
            });
        }
        Ok(config)
    }

    /// Refuses a project whose directory, `memlog.json`, `events.jsonl` or `.memlog/` is a
    /// symbolic link, or whose `ai-memory/` resolves outside the workspace. A repository can
    /// commit a link that points anywhere: a read would recover a "torn tail" of whatever file
    /// it names (truncating it), and a write would append there.
    ///
    /// # Errors
    /// [`Error::Rejected`] naming the link, where it points and the fix.
    pub fn refuse_links(&self) -> Result<()> {
        refuse_memory_outside(&self.workspace)?;
        for (path, what) in [
            (self.dir.clone(), "directory"),
            (self.config_path(), "file"),
            (self.log_path(), "file"),
            (self.state_dir(), "directory"),
        ] {
            if is_link(&path) {
                return Err(self.link_error(&path, &format!("put the {what} itself in its place")));
            }
        }
        // What memlog keeps in `.memlog/` (the store, locks, local logs) is never committed, but
        // a repository can force it in: a link there is refused too.
        if let Ok(entries) = std::fs::read_dir(self.state_dir()) {
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_symlink() {
                    return Err(self.link_error(
                        &entry.path(),
                        "memlog creates what it needs in .memlog/ again (local state, rebuilt \
                         from the log)",
                    ));
                }
                // A lock's queue (`store.lock.queue/`, see `crate::log::lock`): memlog creates
                // and removes the tickets in it, so a link among them is refused as well.
                if kind.is_dir() && entry.file_name().as_encoded_bytes().ends_with(b".queue") {
                    self.refuse_links_in(&entry.path())?;
                }
            }
        }
        Ok(())
    }

    /// Refuses a symbolic link directly inside `dir`, a lock's queue folder in `.memlog/`.
    fn refuse_links_in(&self, dir: &std::path::Path) -> Result<()> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                return Err(self.link_error(
                    &entry.path(),
                    "memlog takes its place in the lock's queue again (local state)",
                ));
            }
        }
        Ok(())
    }

    /// Why the link `path` is refused, and `fix` after removing it.
    fn link_error(&self, path: &std::path::Path, fix: &str) -> Error {
        let target = fs_err::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "an unreadable target".into());
        let shown = path
            .strip_prefix(self.workspace.root())
            .unwrap_or(path)
            .display()
            .to_string();
        Error::Rejected {
            message: format!(
                "{} is a symbolic link to {target}; memlog never reads or writes through a link \
                 in ai-memory/ (a repository can commit one that points outside the workspace, \
                 and memlog never writes outside the workspace): remove the link (`rm {shown}`) \
                 and {fix}",
                path.display()
            ),
        }
    }

    /// Creates the local state directory if needed.
    ///
    /// # Errors
    /// When it cannot be created, or a link leads to it (see [`Project::refuse_links`]).
    pub fn ensure_state_dir(&self) -> Result<()> {
        self.refuse_links()?;
        fs_err::create_dir_all(self.state_dir())?;
        Ok(())
    }
}

/// What `init` did.
#[derive(Debug, Clone, Serialize)]
pub struct InitReport {
    pub project: String,
    pub path: PathBuf,
    pub created: bool,
    pub global_created: bool,
}

/// Creates `ai-memory/` with its `.gitattributes` and `.gitignore`, the `global` project and
/// `project`. Existing files are left as they are, so `init` can be run again safely.
///
/// # Errors
/// When a file cannot be written, or `ai-memory/` resolves outside the workspace (a symlink).
pub fn init(workspace: &Workspace, project: &ProjectName, now: &str) -> Result<InitReport> {
    let memory = workspace.memory_dir();
    refuse_memory_outside(workspace)?;
    refuse_unportable(workspace, project)?;
    fs_err::create_dir_all(&memory)?;
    durable::create_if_missing(&memory.join(".gitattributes"), GITATTRIBUTES.as_bytes())?;
    durable::create_if_missing(&memory.join(".gitignore"), GITIGNORE.as_bytes())?;
    let global = ProjectName::new(GLOBAL_PROJECT)?;
    let global_created = init_one(workspace, &global, now)?;
    let created = if *project == global {
        global_created
    } else {
        init_one(workspace, project, now)?
    };
    Ok(InitReport {
        project: project.to_string(),
        path: workspace.project_dir(project),
        created,
        global_created,
    })
}

/// Refuses to create a project that a checkout on another system could not hold: a Windows
/// device name (`con`, `nul`, ...), or a name that differs only by case from a project there
/// (`GLOBAL` beside `global`), which macOS and Windows take for one directory. Checked before
/// anything is written.
///
/// # Errors
/// [`Error::BadProjectName`], with the fix.
fn refuse_unportable(workspace: &Workspace, project: &ProjectName) -> Result<()> {
    if project.is_windows_device() {
        return Err(Error::BadProjectName {
            name: project.to_string(),
            why: "it is a device name on Windows (`con`, `prn`, `aux`, `nul`, `com0`-`com9`, \
                  `lpt0`-`lpt9`, with or without an extension), which no Windows checkout can \
                  hold: choose another name"
                .into(),
        });
    }
    let mut names = vec![GLOBAL_PROJECT.to_owned()];
    if let Ok(dir) = fs_err::read_dir(workspace.memory_dir()) {
        names.extend(
            dir.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned()),
        );
    }
    let name = project.as_str();
    match names
        .iter()
        .find(|n| n.as_str() != name && n.eq_ignore_ascii_case(name))
    {
        Some(twin) => Err(Error::BadProjectName {
            name: name.to_owned(),
            why: format!(
                "it differs from the project `{twin}` only by case, and macOS and Windows take \
                 both for one directory: use `{twin}`, or a name that differs by more than case"
            )
            .into(),
        }),
        None => Ok(()),
    }
}

fn is_link(path: &std::path::Path) -> bool {
    fs_err::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Refuses an `ai-memory/` that is a link resolving outside the workspace (or nowhere).
fn refuse_memory_outside(workspace: &Workspace) -> Result<()> {
    let memory = workspace.memory_dir();
    if !is_link(&memory) {
        return Ok(());
    }
    let resolved = fs_err::canonicalize(&memory).unwrap_or_else(|_| {
        // A dangling link: creating the directory would create its target.
        fs_err::read_link(&memory).unwrap_or_default()
    });
    if resolved.starts_with(workspace.root()) && resolved.is_dir() {
        return Ok(());
    }
    Err(Error::Rejected {
        message: format!(
            "{} resolves to {}, outside the workspace {}; memlog never writes outside the \
             workspace: replace the link with a directory",
            memory.display(),
            resolved.display(),
            workspace.root().display()
        ),
    })
}

fn init_one(workspace: &Workspace, name: &ProjectName, now: &str) -> Result<bool> {
    let p = Project::new(workspace, name.clone());
    p.refuse_links()?;
    p.refuse_file_for_directory()?;
    p.refuse_config_directory()?;
    fs_err::create_dir_all(&p.dir)?;
    let config = ProjectConfig {
        name: name.to_string(),
        created_at: now.to_owned(),
        format: 1,
        policies: Policies::default(),
    };
    let mut text = serde_json::to_string_pretty(&config).map_err(|e| Error::Rejected {
        message: e.to_string(),
    })?;
    text.push('\n');
    let created = durable::create_if_missing(&p.config_path(), text.as_bytes())?;
    durable::create_if_missing(&p.log_path(), b"")?;
    Ok(created)
}

/// What to say of a configuration that holds git's conflict markers, when it does.
pub fn conflict_markers(text: &str) -> Option<&'static str> {
    text.lines()
        .any(|l| l.starts_with("<<<<<<<") || l.starts_with(">>>>>>>") || l == "=======")
        .then_some(
            "it holds git conflict markers (<<<<<<< ======= >>>>>>>): two branches changed it \
             (each initialized the project, or edited its policies) and git could not merge \
             them; keep one side with `git checkout --ours -- <file>` (or `--theirs`), or edit \
             it to keep what you want of both and delete the marker lines, then check it with \
             `memlog config validate` and `git add` it",
        )
}
