//! Running git in the workspace, for the commands that configure it or read what is staged.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The git repository around a workspace.
#[derive(Debug, Clone)]
pub struct Repo {
    /// Where git runs: the workspace root.
    pub cwd: PathBuf,
}

impl Repo {
    /// The repository holding `workspace_root`.
    ///
    /// # Errors
    /// [`Error::Rejected`] when the directory is not in a git work tree, or git cannot run.
    pub fn at(workspace_root: &Path) -> Result<Self> {
        let repo = Self {
            cwd: workspace_root.to_path_buf(),
        };
        let inside = repo.run(&["rev-parse", "--is-inside-work-tree"])?;
        if inside.trim() != "true" {
            return Err(Self::not_a_repo(workspace_root));
        }
        Ok(repo)
    }

    fn not_a_repo(root: &Path) -> Error {
        Error::Rejected {
            message: format!(
                "{} is not in a git work tree: run `git init` there first (memlog's git \
                 integration configures that repository)",
                root.display()
            ),
        }
    }

    /// Runs git with `args` and returns its standard output.
    ///
    /// # Errors
    /// When git cannot be started or fails (its message is included).
    pub fn run(&self, args: &[&str]) -> Result<String> {
        let out = self.output(args)?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("not a git repository") {
                return Err(Self::not_a_repo(&self.cwd));
            }
            return Err(Error::Rejected {
                message: format!("`git {}` failed: {}", args.join(" "), err.trim()),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs git and returns its output whatever its status (for `git config --get`, which
    /// exits 1 when the key is unset).
    ///
    /// # Errors
    /// When git cannot be started.
    pub fn output(&self, args: &[&str]) -> Result<std::process::Output> {
        Command::new("git")
            .args(args)
            .current_dir(&self.cwd)
            .output()
            .map_err(|e| {
                Error::Io(std::io::Error::new(
                    e.kind(),
                    format!(
                        "cannot run git in {}: {e}; install git or put it on PATH",
                        self.cwd.display()
                    ),
                ))
            })
    }

    /// A path inside the git directory (`git rev-parse --git-path`), absolute.
    ///
    /// # Errors
    /// As [`Repo::run`].
    pub fn git_path(&self, name: &str) -> Result<PathBuf> {
        let p = PathBuf::from(self.run(&["rev-parse", "--git-path", name])?.trim());
        Ok(if p.is_absolute() { p } else { self.cwd.join(p) })
    }

    /// The workspace root relative to the top of the work tree, `""` or ending in `/`.
    ///
    /// # Errors
    /// As [`Repo::run`].
    pub fn prefix(&self) -> Result<String> {
        Ok(self.run(&["rev-parse", "--show-prefix"])?.trim().to_owned())
    }

    /// A local configuration value, if set.
    ///
    /// # Errors
    /// When git cannot be started.
    pub fn config_get(&self, key: &str) -> Result<Option<String>> {
        let out = self.output(&["config", "--local", "--get", key])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_owned()))
    }

    /// Those of `ids` (event ids) that some branch, remote-tracking branch or `HEAD` holds in
    /// its copy of `path` (relative to the workspace root): events a checkout left behind are
    /// still there.
    ///
    /// # Errors
    /// When git cannot run or fails.
    pub fn events_in_refs(
        &self,
        path: &str,
        ids: &[&str],
    ) -> Result<std::collections::HashSet<String>> {
        use std::io::Write as _;
        let mut revs: Vec<String> = self
            .run(&[
                "for-each-ref",
                "--format=%(objectname)",
                "refs/heads",
                "refs/remotes",
            ])?
            .lines()
            .map(str::to_owned)
            .collect();
        revs.push("HEAD".into());
        revs.sort();
        revs.dedup();
        // An event's own id is its top-level `"id"` member; a parent list names ids too, and a
        // line naming one as its parent is not the event.
        let patterns: String = ids.iter().map(|id| format!("\"id\":\"{id}\"\n")).collect();
        let mut child = Command::new("git")
            .args(["grep", "--no-color", "-F", "-h", "-o", "-f", "-"])
            .args(&revs)
            .args(["--", path])
            .current_dir(&self.cwd)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            // git may exit before reading everything (no revision holds the file).
            let _ = stdin.write_all(patterns.as_bytes());
        }
        let out = child.wait_with_output()?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                l.strip_prefix("\"id\":\"")
                    .and_then(|r| r.strip_suffix('"'))
            })
            .map(str::to_owned)
            .collect())
    }
}
