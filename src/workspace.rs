//! Finding the workspace root and naming projects safely inside it.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Folder under the workspace root that holds all memory.
pub const MEMORY_DIR: &str = "ai-memory";
/// Folder under the workspace root that `sync-context` writes.
pub const CONTEXT_DIR: &str = "ai-context";
/// The cross-project memory.
pub const GLOBAL_PROJECT: &str = "global";
/// Longest project name.
pub const MAX_PROJECT_CHARS: usize = 64;

/// A workspace: the repository root that holds `ai-memory/`.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Uses `root` as the workspace root (for `init` and `--workspace`).
    ///
    /// # Errors
    /// When the directory does not exist.
    pub fn at(root: &Path) -> Result<Self> {
        if !root.is_dir() {
            return Err(Error::Usage(format!(
                "--workspace {}: {}; give the root of your repository (memlog init creates \
                 ai-memory/ inside it, not the directory itself), or leave --workspace (and \
                 MEMLOG_WORKSPACE) out to find it from the current directory",
                root.display(),
                if root.exists() {
                    "not a directory"
                } else {
                    "no such directory"
                }
            )));
        }
        let root = fs_err::canonicalize(root)?;
        Ok(Self { root })
    }

    /// Finds the workspace like git finds its root: the nearest ancestor of `start` holding
    /// `ai-memory/`, else the nearest holding `.git`.
    ///
    /// # Errors
    /// [`Error::NoWorkspace`] when neither exists.
    pub fn discover(start: &Path) -> Result<Self> {
        let start = fs_err::canonicalize(start)?;
        for marker in [MEMORY_DIR, ".git"] {
            if let Some(dir) = start.ancestors().find(|d| d.join(marker).exists()) {
                return Ok(Self {
                    root: dir.to_path_buf(),
                });
            }
        }
        Err(Error::NoWorkspace { start })
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/ai-memory`.
    pub fn memory_dir(&self) -> PathBuf {
        self.root.join(MEMORY_DIR)
    }

    /// The directory of a validated project.
    pub fn project_dir(&self, project: &ProjectName) -> PathBuf {
        self.memory_dir().join(project.as_str())
    }

    /// Initialized projects (those with a `memlog.json`), sorted, `global` included.
    ///
    /// # Errors
    /// When `ai-memory/` cannot be read.
    pub fn projects(&self) -> Result<Vec<ProjectName>> {
        let dir = self.memory_dir();
        if !dir.exists() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for entry in fs_err::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // A directory with a log but no configuration is still a project (a broken one,
            // which `Project::open` reports), never a reason to pick another project.
            if let Ok(project) = ProjectName::new(&name)
                && (entry.path().join(crate::project::CONFIG_FILE).is_file()
                    || entry.path().join(crate::project::LOG_FILE).is_file())
            {
                out.push(project);
            }
        }
        out.sort();
        Ok(out)
    }
}

/// A project name that is safe to use as one path component.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProjectName(String);

impl ProjectName {
    /// Validates a project name: 1 to 64 characters from ASCII letters, digits, `.`, `_` and
    /// `-`, not starting with `.` or `-`, so it can never be `..`, an absolute path, a hidden
    /// directory such as `.memlog`, or anything with a separator or control character; and
    /// nothing the secret detector flags.
    ///
    /// # Errors
    /// [`Error::BadProjectName`] saying which rule failed.
    pub fn new(name: &str) -> Result<Self> {
        let bad = |why| {
            Err(Error::BadProjectName {
                name: name.escape_debug().to_string(),
                why: std::borrow::Cow::Borrowed(why),
            })
        };
        if name.is_empty() {
            return bad("it is empty");
        }
        if name.chars().count() > MAX_PROJECT_CHARS {
            return bad("it is longer than 64 characters");
        }
        if name.chars().any(char::is_control) {
            return bad("it contains control characters");
        }
        if name.contains('/') || name.contains('\\') {
            return bad(
                "it contains a path separator; a project is one directory under ai-memory/",
            );
        }
        if name.starts_with('.') || name.starts_with('-') {
            return bad(
                "it starts with `.` or `-` (names like `..`, `.memlog` or `-x` are reserved)",
            );
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return bad("use only ASCII letters (`a`-`z`, `A`-`Z`), digits, `.`, `_` and `-`");
        }
        if !crate::policy::secret_scan::scan_text(name).is_empty() {
            // The name becomes a directory in git and is echoed by every command.
            return bad("it looks like a credential; name the project after what it is");
        }
        Ok(Self(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the name is a device name on Windows (`con`, `prn`, `aux`, `nul`, `com0`-`com9`,
    /// `lpt0`-`lpt9`, in any case, with or without an extension): no Windows checkout can hold
    /// a directory of that name.
    pub fn is_windows_device(&self) -> bool {
        is_windows_device_name(&self.0)
    }
}

/// Whether a file or directory name is a device name on Windows (`con`, `prn`, `aux`, `nul`,
/// `com0`-`com9`, `lpt0`-`lpt9`, in any case, with or without an extension): no Windows
/// checkout can hold it.
pub fn is_windows_device_name(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or_default();
    let lower = stem.to_ascii_lowercase();
    match lower.as_bytes() {
        b"con" | b"prn" | b"aux" | b"nul" => true,
        [b'c', b'o', b'm', d] | [b'l', b'p', b't', d] => d.is_ascii_digit(),
        _ => false,
    }
}

impl std::fmt::Display for ProjectName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `é` is a letter: the rule says which letters.
    #[test]
    fn a_letter_outside_ascii_is_refused_as_such() {
        let err = ProjectName::new("café");
        assert!(
            matches!(&err, Err(Error::BadProjectName { why, .. }) if why.contains("ASCII letters")),
            "{err:?}"
        );
    }

    #[test]
    fn unsafe_names_are_refused() {
        for bad in [
            "", "..", "../x", "/abs", "a/b", ".memlog", "-rf", "a\nb", "a\u{0}", "é", "a b",
        ] {
            assert!(ProjectName::new(bad).is_err(), "{bad:?} should be refused");
        }
        for good in ["auth-service", "global", "proj_1", "a.b", "X"] {
            assert!(
                ProjectName::new(good).is_ok(),
                "{good:?} should be accepted"
            );
        }
        assert!(ProjectName::new(&"a".repeat(65)).is_err());
    }

    #[test]
    fn windows_device_names_are_recognised() {
        let device = |n: &str| {
            ProjectName::new(n)
                .unwrap_or_else(|e| panic!("{e}"))
                .is_windows_device()
        };
        for name in [
            "con", "NUL", "Aux", "prn", "com1", "COM9", "lpt0", "nul.txt", "con.x.y",
        ] {
            assert!(device(name), "{name}");
        }
        for name in [
            "console", "nully", "com10", "lpt", "comx", "a.con", "global",
        ] {
            assert!(!device(name), "{name}");
        }
    }

    #[test]
    fn a_credential_is_no_project_name() {
        let err = ProjectName::new("ghp_R8x2Lk9Qm4Tz7Vb1Nc6Yh3Jd5Fs0Wp2Ae8Gu");
        assert!(
            matches!(&err, Err(Error::BadProjectName { why, .. }) if why.contains("credential")),
            "{err:?}"
        );
        for name in [
            "api-keys",
            "token-service",
            "my-secret-project",
            "ghp_tools",
        ] {
            assert!(
                ProjectName::new(name).is_ok(),
                "{name:?} should be accepted"
            );
        }
    }
}
