use memlog::project::Project;
use memlog::store::session::Session;
use memlog::workspace::{ProjectName, Workspace};
use std::io::{BufRead, BufReader, Lines};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::Duration;

/// A fake GitHub token (never a real one), as a line pulled from another clone may hold.
pub const PULLED_TOKEN: &str = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";

pub const NOW: &str = "2026-11-22T10:31:12.123Z";

/// A temporary workspace and a way to run memlog in it.
pub struct Env {
    /// Removed when the test ends.
    pub dir: tempfile::TempDir,
    /// The workspace root: `dir` itself, or a directory inside it (see [`Env::nested`]).
    root: PathBuf,
}

/// A running `memlog mcp`: the process, its standard input and its output's lines.
pub type Server = (Child, ChildStdin, Lines<BufReader<ChildStdout>>);

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    #[track_caller]
    pub fn ok(self) -> Self {
        assert_eq!(
            self.code, 0,
            "expected success\nstdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self
    }

    /// What a `--json` command answered: the `results` of a success (docs/JSON.md), or the
    /// whole error object (`{"success": false, "error": ...}`) of a failure.
    pub fn json(&self) -> serde_json::Value {
        let mut v = self.envelope();
        if v["success"] == true
            && let Some(results) = v.get_mut("results")
        {
            return results.take();
        }
        v
    }

    /// The whole JSON object a `--json` command printed (`success`, `results`, `warnings`).
    pub fn envelope(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }

    /// The messages of the `warnings` of a `--json` success.
    pub fn warnings(&self) -> Vec<String> {
        self.envelope()["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w["message"].as_str().map(str::to_owned))
            .collect()
    }
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_memlog")
}

impl Env {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("memlog-test-")
            .tempdir_in(fast_temp_dir())
            .unwrap_or_else(|e| panic!("tempdir: {e}"));
        let root = dir.path().to_path_buf();
        Self { dir, root }
    }

    /// A workspace at `<temp>/ws`, so that the test owns the directory around the workspace
    /// too and can check that nothing outside the workspace changed.
    pub fn nested() -> Self {
        let mut env = Self::new();
        env.root = env.dir.path().join("ws");
        std::fs::create_dir(&env.root).unwrap_or_else(|e| panic!("{e}"));
        env
    }

    /// A workspace with project `demo` initialized.
    pub fn with_project() -> Self {
        let env = Self::new();
        env.run(&["init", "demo"]).ok();
        env
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn log(&self) -> PathBuf {
        self.root().join("ai-memory/demo/events.jsonl")
    }

    /// Appends `bytes` to the log as they are (a torn line, a blank line), as a hand or a
    /// crash would.
    pub fn append_log(&self, bytes: &[u8]) {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(self.log())
            .and_then(|mut f| f.write_all(bytes))
            .unwrap_or_else(|e| panic!("{e}"));
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .current_dir(self.root())
            .env("MEMLOG_WORKSPACE", self.root())
            .env("MEMLOG_ACTOR", "agent-7")
            .env("MEMLOG_NOW", NOW)
            // A compaction started in the background would outlive the test's command; the
            // tests of compaction turn it back on.
            .env("MEMLOG_AUTO_COMPACT", "0")
            .env_remove("MEMLOG_PROJECT")
            .env_remove("MEMLOG_LOCK_TIMEOUT_MS");
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        output(self.command(args).output())
    }

    /// `memlog mcp` (with `args` before it) serving this workspace: the process, its standard
    /// input and the lines of its standard output.
    pub fn mcp(&self, args: &[&str]) -> Server {
        let mut child = self
            .command(args)
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
        (child, stdin, BufReader::new(stdout).lines())
    }

    pub fn run_at(&self, now: &str, args: &[&str]) -> Run {
        output(self.command(args).env("MEMLOG_NOW", now).output())
    }

    /// How many entries `list --json` shows (all of them by default).
    #[track_caller]
    pub fn listed(&self) -> Option<usize> {
        self.run(&["list", "--json"])
            .ok()
            .json()
            .as_array()
            .map(Vec::len)
    }

    /// Adds a valid decision and returns its id.
    pub fn add(&self, subject: &str, summary: &str) -> String {
        self.add_at(NOW, subject, summary, "0.8")
    }

    /// Adds a valid decision at `now` with the given confidence and returns its id.
    pub fn add_at(&self, now: &str, subject: &str, summary: &str, confidence: &str) -> String {
        let mut args = add_args(
            ("decisions", "decision"),
            subject,
            summary,
            "Details of the decision.",
            confidence,
            "code:src/lib.rs#L1-L9:where it happens",
        );
        args.extend(["--tag", "test"]);
        self.run_at(now, &args).ok().stdout.trim().to_owned()
    }

    /// Applies `n` creates to project `demo` in one `apply` (decisions with code evidence,
    /// subjects `bulk.<i>`, summaries `Bulk decision number <i>`, the given content).
    pub fn apply_creates(&self, n: usize, content: &str) {
        let lines: Vec<String> = (0..n)
            .map(|i| {
                serde_json::json!({"operation": "create", "entry": {
                    "section": "decisions", "kind": "decision", "subject": format!("bulk.{i}"),
                    "scope": "repo", "summary": format!("Bulk decision number {i}"),
                    "content": content, "confidence": 0.9,
                    "evidence": [{"type": "code", "uri": "src/lib.rs", "note": "where"}]}})
                .to_string()
            })
            .collect();
        let file = self.root().join("bulk.jsonl");
        std::fs::write(&file, lines.join("\n")).unwrap_or_else(|e| panic!("{e}"));
        self.run(&["apply", "demo", file.to_str().unwrap_or_default()])
            .ok();
    }

    /// The project `demo`, opened as the library opens it.
    pub fn demo_project(&self) -> Project {
        let ws = Workspace::at(self.root()).unwrap_or_else(|e| panic!("{e}"));
        let name = ProjectName::new("demo").unwrap_or_else(|e| panic!("{e}"));
        Project::open(&ws, name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The text of project `demo`'s security log and its records (empty when there is none).
    pub fn security_log(&self) -> (String, Vec<serde_json::Value>) {
        let text =
            std::fs::read_to_string(self.root().join("ai-memory/demo/.memlog/security.jsonl"))
                .unwrap_or_default();
        let records = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        (text, records)
    }

    /// Appends to the log a hash-valid update of entry `id` that puts [`PULLED_TOKEN`] in its
    /// content and summary: a credential that reached the log without memlog's checks.
    pub fn forge_credential(&self, id: &str) {
        self.forge_update(
            id,
            "2026-11-22T10:31:13.000Z",
            serde_json::json!({
                "content": format!("deploy token {PULLED_TOKEN} rotate monthly"),
                "summary": format!("Deploy token {PULLED_TOKEN}"),
            }),
        );
    }

    /// Appends to the log a hash-valid update of entry `id` at `at` that sets the fields of
    /// `set`, following the entry's latest event: what a merge can bring from elsewhere,
    /// though memlog refuses to write it (control characters, a credential).
    pub fn forge_update(&self, id: &str, at: &str, set: serde_json::Value) {
        let mut log = std::fs::read_to_string(self.log()).unwrap_or_else(|e| panic!("{e}"));
        let parent = log
            .lines()
            .rev()
            .filter_map(|l| projections::decode_line(l).ok())
            .find(|e| e.entry == id)
            .map(|e| e.id)
            .unwrap_or_else(|| panic!("no event of {id}"));
        let serde_json::Value::Object(set) = set else {
            panic!("`set` is not an object: {set}")
        };
        let forged = projections::Event::build(
            id,
            "elsewhere",
            at,
            vec![parent],
            projections::EventData::Update { set, reason: None },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        log.push_str(&forged.to_line().unwrap_or_else(|e| panic!("{e}")));
        log.push('\n');
        std::fs::write(self.log(), log).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The log line of the event `body` (an object without `id`), with its id: a line as another
/// writer may make it, which memlog would not (`"reason":null`, say).
pub fn forge_line(body: serde_json::Value) -> String {
    let canonical =
        projections::canonical::to_canonical_string(&body).unwrap_or_else(|e| panic!("{e}"));
    let mut hasher = blake3::Hasher::new();
    hasher.update(projections::event::EVENT_DOMAIN);
    hasher.update(canonical.as_bytes());
    let serde_json::Value::Object(mut map) = body else {
        panic!("an event is an object: {body}")
    };
    map.insert(
        "id".into(),
        serde_json::Value::String(hasher.finalize().to_hex().to_string()),
    );
    let line = projections::canonical::to_canonical_string(&serde_json::Value::Object(map))
        .unwrap_or_else(|e| panic!("{e}"));
    projections::decode_line(&line).unwrap_or_else(|e| panic!("forged line does not verify: {e}"));
    line
}

/// The arguments of an `add` in scope `repo`: (section, kind), subject, summary, content,
/// confidence and evidence as given.
pub fn add_args<'a>(
    (section, kind): (&'a str, &'a str),
    subject: &'a str,
    summary: &'a str,
    content: &'a str,
    confidence: &'a str,
    evidence: &'a str,
) -> Vec<&'a str> {
    vec![
        "add",
        "--section",
        section,
        "--kind",
        kind,
        "--subject",
        subject,
        "--scope",
        "repo",
        "--summary",
        summary,
        "--content",
        content,
        "--confidence",
        confidence,
        "--evidence",
        evidence,
    ]
}

pub fn output(o: std::io::Result<Output>) -> Run {
    let o = o.unwrap_or_else(|e| panic!("cannot run memlog: {e}"));
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Replaces the temp dir path so snapshots are stable.
pub fn redact(env: &Env, text: &str) -> String {
    text.replace(&env.root().display().to_string(), "[WORKSPACE]")
}

/// Project `demo` initialized in a fresh temporary workspace (for tests that drive the store
/// directly). Keep the directory alive as long as the project is used.
pub fn temp_project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::Builder::new()
        .prefix("memlog-store-")
        .tempdir_in(fast_temp_dir())
        .unwrap_or_else(|e| panic!("tempdir: {e}"));
    let ws = Workspace::at(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let name = ProjectName::new("demo").unwrap_or_else(|e| panic!("{e}"));
    memlog::project::init(&ws, &name, NOW).unwrap_or_else(|e| panic!("{e}"));
    let project = Project::new(&ws, name);
    (dir, project)
}

/// A store session on `project`: the store lock taken and the store caught up with the log.
pub fn session(project: &Project) -> Session {
    Session::open(project, Duration::from_secs(10)).unwrap_or_else(|e| panic!("{e}"))
}

/// Every projection record of the session's store, canonically (what `memlog dump` prints).
pub fn store_dump(session: &Session) -> String {
    let mut out = Vec::new();
    session
        .store()
        .dump(&mut out)
        .unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8(out).unwrap_or_else(|e| panic!("{e}"))
}

/// A memory-backed temporary directory where there is one (`/dev/shm`), else the system's.
/// Every write and every store build syncs files to disk; the tests check what is written, not
/// that a disk keeps it, and on a busy disk the syncs alone would take minutes.
pub fn fast_temp_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    let writable = shm.is_dir() && tempfile::tempdir_in(shm).is_ok_and(|d| d.close().is_ok());
    if writable {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Gives `c` (git, or a shell that runs git) a fixed identity and keeps the machine's git
/// configuration out of the test.
pub fn isolate_git(c: &mut Command) -> &mut Command {
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
}

/// Runs git in the workspace with a fixed identity and without the machine's configuration.
pub fn git(env: &Env, args: &[&str]) -> String {
    let out = isolate_git(Command::new("git").args(args).current_dir(env.root()))
        .output()
        .unwrap_or_else(|e| panic!("git: {e}"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The body of [`fake_key_block`]: where it is found, a key was echoed or kept.
pub const FAKE_KEY_BODY: &str = "MIIEFAKEKEYBODY0";

/// A git repository at `repo` (relative to the workspace root: `.`, or `..` for a workspace
/// below the repository's root) holding project `demo` with one entry, committed on branch
/// `main`; the entry's id.
pub fn committed_entry(env: &Env, repo: &str, subject: &str, summary: &str) -> String {
    git(env, &["-C", repo, "init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    let id = env.add(subject, summary);
    git(env, &["add", "-A"]);
    git(env, &["commit", "-qm", "base"]);
    id
}

/// A fake RSA private key block, made at run time so that none is committed: two lines of
/// [`FAKE_KEY_BODY`] and, when `end`, the END line.
pub fn fake_key_block(end: bool) -> String {
    let body = FAKE_KEY_BODY.repeat(4);
    let mut block = format!("-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body}");
    if end {
        block.push_str("\n-----END RSA PRIVATE KEY-----");
    }
    block
}

/// Asserts that `secret` is in none of `runs`' output (a credential the log holds, say, which
/// memlog must still never print).
#[track_caller]
pub fn assert_not_printed(runs: &[&Run], secret: &str) {
    for r in runs {
        assert!(
            !r.stdout.contains(secret) && !r.stderr.contains(secret),
            "printed: {}{}",
            r.stdout,
            r.stderr
        );
    }
}

/// Asserts that `secret` is in none of `runs`' output and nowhere under the workspace: not in
/// a file (the log, the store, the local logs of `.memlog/`) nor in a file's name. A detected
/// credential is never printed nor stored.
#[track_caller]
pub fn assert_nowhere(env: &Env, runs: &[&Run], secret: &str) {
    assert_not_printed(runs, secret);
    let mut dirs = vec![env.root().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for item in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = item.unwrap_or_else(|e| panic!("{e}")).path();
            assert!(
                !path.to_string_lossy().contains(secret),
                "named: {}",
                path.display()
            );
            if path.is_dir() {
                dirs.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "stored in {}: {}",
                    path.display(),
                    String::from_utf8_lossy(&bytes)
                        .chars()
                        .take(2000)
                        .collect::<String>()
                );
            }
        }
    }
}

/// Runs memlog in `env` with `args`, `input` on its standard input.
pub fn stdin_run(env: &Env, args: &[&str], input: &[u8]) -> Run {
    use std::io::Write;
    let mut child = env
        .command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    if let Some(mut stdin) = child.stdin.take() {
        // A command that stops reading early (a refused input) is judged by what it printed.
        let _ = stdin.write_all(input);
    }
    output(child.wait_with_output())
}
