//! `memlog git install` / `uninstall`: the merge driver (local git configuration plus the
//! repository's local attributes file) and the hooks that check what a commit or a merge
//! brings (`pre-commit`, `pre-merge-commit`). Both are idempotent and say what they changed.
//!
//! The attribute goes to `.git/info/attributes`, not to the committed `ai-memory/.gitattributes`:
//! a clone without the driver configured would fall back to git's line merge for a committed
//! `merge=memlog` and stop at conflicts, whereas `merge=union` (what `init` commits) always
//! works. The local file takes precedence for this clone only.

use super::repo::Repo;
use crate::error::{Error, Result};
use crate::log::durable;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// First line of the block memlog owns in the attributes file, and the marker of its hook.
const MARK: &str = "# memlog: added by `memlog git install`; `memlog git uninstall` removes it";
const END: &str = "# memlog: end";
/// The hooks memlog installs: `pre-commit` for commits, `pre-merge-commit` for the commit a
/// merge makes (git runs no `pre-commit` for it, and a merge is how memory written elsewhere
/// arrives). Both run the same checks.
pub const HOOKS: [&str; 2] = ["pre-commit", "pre-merge-commit"];

/// Where an existing hook of the user's named `hook` is kept; memlog's hook runs it after its
/// own checks.
pub fn user_hook(hook: &str) -> String {
    format!("{hook}.memlog-user")
}

/// One thing install or uninstall looked at.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Step {
    pub what: String,
    pub path: String,
    /// `added`, `updated`, `removed`, `moved`, `restored` or `unchanged`.
    pub action: &'static str,
}

/// How the hook and the driver call memlog.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The program, e.g. `/usr/local/bin/memlog`.
    pub exe: PathBuf,
    /// Arguments before the subcommand (`memory` for bass-agents).
    pub prefix: Vec<String>,
    /// The workspace root: the repository to configure.
    pub workspace: PathBuf,
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Invocation {
    fn command(&self) -> String {
        let mut parts = vec![quote(&self.exe.display().to_string())];
        parts.extend(self.prefix.iter().map(|p| quote(p)));
        parts.join(" ")
    }

    /// The merge driver command line git runs.
    pub fn driver(&self) -> String {
        format!("{} merge-driver %O %A %B %P", self.command())
    }

    /// The hook script. The workspace is found at run time, from the work tree git runs the
    /// hook in (`prefix`: the workspace's place in it, `""` or ending in `/`): the hooks are
    /// shared by every worktree of the repository, and each must check its own index.
    fn hook(&self, name: &str, prefix: &str) -> String {
        format!(
            "#!/bin/sh\n{MARK}\n# Checks staged memory: every added log line is an intact event, no credentials, ai-context/ in sync with memory, and a merge keeps the merged branches' events.\n\
             top=\"$(git rev-parse --show-toplevel)\" || exit 1\n\
             {} --workspace \"$top\"/{} git pre-commit || exit 1\n\
             user_hook=\"$(dirname \"$0\")/{}\"\n\
             if [ -x \"$user_hook\" ]; then exec \"$user_hook\" \"$@\"; fi\n",
            self.command(),
            quote(prefix),
            user_hook(name),
        )
    }
}

fn step(what: &str, path: &Path, action: &'static str) -> Step {
    Step {
        what: what.to_owned(),
        path: path.display().to_string(),
        action,
    }
}

fn attributes_block(prefix: &str) -> String {
    format!(
        "{MARK}\n{prefix}{mem}/*/events.jsonl merge=memlog\n{END}\n",
        mem = crate::workspace::MEMORY_DIR
    )
}

/// `text` without memlog's block.
fn without_block(text: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == MARK {
            inside = true;
        } else if inside && bare == END {
            inside = false;
        } else if !inside {
            out.push_str(line);
        }
    }
    out
}

fn read_optional(path: &Path) -> Result<Option<String>> {
    match fs_err::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<()> {
    Ok(())
}

/// Configures the driver and the hook for the repository around `inv.workspace`.
///
/// # Errors
/// When the workspace is not in a git work tree, a file cannot be written, or an existing
/// hook and a kept user hook are both present (nothing is changed then).
pub fn install(inv: &Invocation) -> Result<Vec<Step>> {
    let repo = Repo::at(&inv.workspace)?;
    let hooks = repo.git_path("hooks")?;
    let mut existing = Vec::new();
    for name in HOOKS {
        let hook = hooks.join(name);
        let user = hooks.join(user_hook(name));
        let text = read_optional(&hook)?;
        let foreign = text.as_deref().is_some_and(|h| !h.contains(MARK));
        if foreign && user.exists() {
            return Err(Error::Rejected {
                message: format!(
                    "{} exists and so does {}: memlog keeps your hook under that second name and \
                     runs it after its checks; move one of them away, then run `memlog git install` \
                     again",
                    hook.display(),
                    user.display()
                ),
            });
        }
        existing.push((name, hook, user, text, foreign));
    }
    let mut steps = Vec::new();
    let config = repo.git_path("config")?;
    for (key, value) in [
        (
            "merge.memlog.name",
            "memlog event log: deduplicated union".to_owned(),
        ),
        ("merge.memlog.driver", inv.driver()),
    ] {
        let now = repo.config_get(key)?;
        if now.as_deref() == Some(value.as_str()) {
            steps.push(step(key, &config, "unchanged"));
        } else {
            repo.run(&["config", "--local", key, &value])?;
            steps.push(step(
                key,
                &config,
                if now.is_some() { "updated" } else { "added" },
            ));
        }
    }
    let attributes = repo.git_path("info/attributes")?;
    let prefix = repo.prefix()?;
    let block = attributes_block(&prefix);
    let text = read_optional(&attributes)?.unwrap_or_default();
    let mut next = without_block(&text);
    if !next.is_empty() && !next.ends_with('\n') {
        next.push('\n');
    }
    next.push_str(&block);
    if next == text {
        steps.push(step("merge=memlog attribute", &attributes, "unchanged"));
    } else {
        if let Some(dir) = attributes.parent() {
            fs_err::create_dir_all(dir)?;
        }
        durable::write_atomic(&attributes, next.as_bytes())?;
        let action = if text.contains(MARK) {
            "updated"
        } else {
            "added"
        };
        steps.push(step("merge=memlog attribute", &attributes, action));
    }
    fs_err::create_dir_all(&hooks)?;
    for (name, hook, user, text, foreign) in existing {
        if foreign {
            fs_err::rename(&hook, &user)?;
            steps.push(step(
                &format!("your {name} hook (run after memlog's)"),
                &user,
                "moved",
            ));
        }
        let wanted = inv.hook(name, &prefix);
        let what = format!("{name} hook");
        if text.as_deref() == Some(wanted.as_str()) {
            steps.push(step(&what, &hook, "unchanged"));
        } else {
            durable::write_atomic(&hook, wanted.as_bytes())?;
            make_executable(&hook)?;
            let action = if text.is_some() && !foreign {
                "updated"
            } else {
                "added"
            };
            steps.push(step(&what, &hook, action));
        }
    }
    Ok(steps)
}

/// Undoes [`install`]: the configuration section, the attribute block, memlog's hook (a kept
/// user hook gets its name back). A hook memlog did not write is left alone.
///
/// # Errors
/// When the workspace is not in a git work tree or a file cannot be written.
pub fn uninstall(workspace: &Path) -> Result<Vec<Step>> {
    let repo = Repo::at(workspace)?;
    let mut steps = Vec::new();
    let config = repo.git_path("config")?;
    let configured = repo.config_get("merge.memlog.driver")?.is_some()
        || repo.config_get("merge.memlog.name")?.is_some();
    if configured {
        repo.run(&["config", "--local", "--remove-section", "merge.memlog"])?;
        steps.push(step("merge.memlog", &config, "removed"));
    } else {
        steps.push(step("merge.memlog", &config, "unchanged"));
    }
    let attributes = repo.git_path("info/attributes")?;
    match read_optional(&attributes)? {
        Some(text) if text.contains(MARK) => {
            durable::write_atomic(&attributes, without_block(&text).as_bytes())?;
            steps.push(step("merge=memlog attribute", &attributes, "removed"));
        }
        _ => steps.push(step("merge=memlog attribute", &attributes, "unchanged")),
    }
    let hooks = repo.git_path("hooks")?;
    for name in HOOKS {
        let hook = hooks.join(name);
        let user = hooks.join(user_hook(name));
        let what = format!("{name} hook");
        match read_optional(&hook)? {
            Some(text) if text.contains(MARK) => {
                if user.exists() {
                    fs_err::rename(&user, &hook)?;
                    steps.push(step(&format!("your {name} hook"), &hook, "restored"));
                } else {
                    fs_err::remove_file(&hook)?;
                    steps.push(step(&what, &hook, "removed"));
                }
            }
            _ => steps.push(step(&what, &hook, "unchanged")),
        }
    }
    Ok(steps)
}
