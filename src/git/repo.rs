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

    /// Those of `ids` (event ids) that some branch, remote-tracking branch, the latest stash or
    /// `HEAD` holds in its copy of `path` (relative to the workspace root): events a checkout
    /// or a `git stash` left behind are still there.
    ///
    /// # Errors
    /// When git cannot run or fails.
    pub fn events_in_refs(
        &self,
        path: &str,
        ids: &[&str],
    ) -> Result<std::collections::HashSet<String>> {
        use std::io::{BufRead as _, Read as _, Write as _};
        let mut revs: Vec<String> = self
            .run(&[
                "for-each-ref",
                "--format=%(objectname)",
                "refs/heads",
                "refs/remotes",
                // Work set aside by `git stash` is held too.
                "refs/stash",
            ])?
            .lines()
            .map(str::to_owned)
            .collect();
        revs.push("HEAD".into());
        revs.sort();
        revs.dedup();
        // Each revision's copy of the file once (revisions often share it), read whole and its
        // lines' ids looked up: linear in the bytes read. A `git grep -F` with one pattern per
        // id took time in proportion to ids times bytes: 47 s for 1,000 events at 40 MB.
        let wanted: std::collections::HashSet<&str> = ids.iter().copied().collect();
        let mut found = std::collections::HashSet::new();
        let mut child = Command::new("git")
            .args(["cat-file", "--batch"])
            .current_dir(&self.cwd)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        // `./`: the path is relative to the workspace, which may be a directory of the
        // repository rather than its root.
        let requests: String = revs.iter().map(|r| format!("{r}:./{path}\n")).collect();
        // Written on a thread of its own: git answers each request as it reads it, so with
        // many branches the answers would fill their pipe while this still wrote.
        let writer = child.stdin.take().map(|mut stdin| {
            std::thread::spawn(move || {
                let _ = stdin.write_all(requests.as_bytes());
            })
        });
        let mut blobs = std::collections::HashSet::new();
        if let Some(stdout) = child.stdout.take() {
            let mut out = std::io::BufReader::new(stdout);
            let mut header = String::new();
            loop {
                header.clear();
                if out.read_line(&mut header)? == 0 {
                    break;
                }
                // `<oid> blob <size>`, or `<request> missing` for a revision without the file.
                let mut parts = header.split_whitespace();
                let (Some(oid), Some(kind), Some(size)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                let Ok(size) = size.parse::<u64>() else {
                    continue;
                };
                let mut blob = Vec::new();
                out.by_ref().take(size + 1).read_to_end(&mut blob)?;
                if kind != "blob" || !blobs.insert(oid.to_owned()) {
                    continue;
                }
                for line in blob.split(|b| *b == b'\n') {
                    if let Some(id) = crate::log::line_id::stated_id_unchecked(line)
                        && wanted.contains(id)
                    {
                        found.insert(id.to_owned());
                    }
                }
            }
        }
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        child.wait()?;
        Ok(found)
    }
}
