//! `memlog git install` / `uninstall` and the pre-commit hook they manage.

use crate::common::{Env, git};
use std::process::Command;

const FAKE_TOKEN: &str = "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0000";

/// Runs git like `common::git`, returning the exit code and both outputs.
fn git_try(env: &Env, args: &[&str]) -> (i32, String) {
    let out = crate::common::isolate_git(Command::new("git").args(args).current_dir(env.root()))
        .output()
        .unwrap_or_else(|e| panic!("git: {e}"));
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// A git repository with project `demo` and memlog's driver and hooks installed.
fn installed() -> Env {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    env.run(&["git", "install"]).ok();
    env
}

/// Commits what is staged, which the hooks must let through.
#[track_caller]
fn commits(env: &Env, message: &str) {
    let (code, out) = git_try(env, &["commit", "-qm", message]);
    assert_eq!(code, 0, "{message}: {out}");
}

fn actions(env: &Env, args: &[&str]) -> Vec<String> {
    env.run(args).ok().json()["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            format!(
                "{} {}",
                s["action"].as_str().unwrap_or(""),
                s["what"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn install_is_idempotent_keeps_a_user_hook_and_uninstall_undoes_it() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    let hooks = env.root().join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap_or_else(|e| panic!("{e}"));
    let user_hook = "#!/bin/sh\necho user-hook-ran\n";
    std::fs::write(hooks.join("pre-commit"), user_hook).unwrap_or_else(|e| panic!("{e}"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            hooks.join("pre-commit"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }

    let info = env.root().join(".git/info");
    std::fs::create_dir_all(&info).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(info.join("attributes"), "*.png binary\n").unwrap_or_else(|e| panic!("{e}"));
    let first = actions(&env, &["git", "install", "--json"]);
    assert_eq!(
        first,
        [
            "added merge.memlog.name",
            "added merge.memlog.driver",
            "added merge=memlog attribute",
            "moved your pre-commit hook (run after memlog's)",
            "added pre-commit hook",
            "added pre-merge-commit hook",
        ]
    );
    let again = actions(&env, &["git", "install", "--json"]);
    assert!(
        again.iter().all(|a| a.starts_with("unchanged")),
        "{again:?}"
    );
    assert_eq!(
        git(
            &env,
            &["check-attr", "merge", "ai-memory/demo/events.jsonl"]
        )
        .trim(),
        "ai-memory/demo/events.jsonl: merge: memlog"
    );
    assert!(
        git(&env, &["config", "--get", "merge.memlog.driver"]).contains("merge-driver %O %A %B %P")
    );

    // A clean commit passes memlog's checks and runs the user's hook.
    env.add("auth", "Sessions expire after 30 minutes");
    git(&env, &["add", "-A"]);
    let (code, out) = git_try(&env, &["commit", "-qm", "clean"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("user-hook-ran"), "{out}");

    // A staged credential under ai-memory/ stops the commit, named by rule, never echoed.
    let notes = env.root().join("ai-memory/demo/notes.md");
    std::fs::write(&notes, format!("ok\nthe token is {FAKE_TOKEN}\n"))
        .unwrap_or_else(|e| panic!("{e}"));
    git(&env, &["add", "-A"]);
    let (code, out) = git_try(&env, &["commit", "-qm", "leak"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("ai-memory/demo/notes.md:2:14: github-token"),
        "{out}"
    );
    assert!(!out.contains(FAKE_TOKEN), "{out}");
    assert!(!out.contains("user-hook-ran"), "{out}");
    git(&env, &["rm", "-q", "--cached", "ai-memory/demo/notes.md"]);
    std::fs::remove_file(&notes).unwrap_or_else(|e| panic!("{e}"));

    // Event lines are scanned field by field: ids and hashes beside prose are not credentials,
    let id = env.add("auth.tokens", "Access tokens live 15 minutes");
    env.run(&["update", &id, "--summary", "Access tokens live 10 minutes"])
        .ok();
    git(&env, &["add", "-A"]);
    commits(&env, "tokens");
    // but a credential in an event that came from elsewhere (memlog refuses to write one) is.
    let mut set = serde_json::Map::new();
    set.insert("content".into(), format!("deploy with {FAKE_TOKEN}").into());
    let forged = projections::Event::build(
        &id,
        "elsewhere",
        "2026-11-22T12:00:00.000Z",
        Vec::new(),
        projections::EventData::Update { set, reason: None },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let before = log.clone();
    log.push_str(&forged.to_line().unwrap_or_else(|e| panic!("{e}")));
    log.push('\n');
    std::fs::write(env.log(), &log).unwrap_or_else(|e| panic!("{e}"));
    git(&env, &["add", "-A"]);
    let (code, out) = git_try(&env, &["commit", "-qm", "forged"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("github-token (GitHub token) in field data.set.content"),
        "{out}"
    );
    assert!(!out.contains(FAKE_TOKEN), "{out}");
    // So is one in a line of JSON that is no event, wherever it is: a member, or a key.
    for line in [
        format!(r#"{{"note":"{FAKE_TOKEN}"}}"#),
        format!(r#"{{"type":"create","extra":"{FAKE_TOKEN}"}}"#),
        format!(r#"{{"{FAKE_TOKEN}":1}}"#),
        format!(r#"{{"data":{{"{FAKE_TOKEN}":{{"x":1}}}}}}"#),
    ] {
        std::fs::write(env.log(), format!("{before}{line}\n")).unwrap_or_else(|e| panic!("{e}"));
        git(&env, &["add", "-A"]);
        let (code, out) = git_try(&env, &["commit", "-qm", "hand edit"]);
        assert_ne!(code, 0, "{line}: {out}");
        assert!(out.contains("github-token"), "{out}");
        assert!(!out.contains(FAKE_TOKEN), "{out}");
    }
    std::fs::write(env.log(), &before).unwrap_or_else(|e| panic!("{e}"));
    git(&env, &["add", "-A"]);

    // A stale ai-context file stops the commit too, naming the entry.
    env.run(&["sync-context", "demo"]).ok();
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "context"]);
    let id = env.add("db", "Use Postgres");
    git(&env, &["add", "-A"]);
    let (code, out) = git_try(&env, &["commit", "-qm", "stale"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("ai-context/demo.md is stale: added") && out.contains(&id),
        "{out}"
    );
    // Regenerated but not staged: the commit would still hold the stale file.
    env.run(&["sync-context", "demo"]).ok();
    let (code, out) = git_try(&env, &["commit", "-qm", "unstaged context"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("ai-context/demo.md is stale"), "{out}");
    git(&env, &["add", "-A"]);
    commits(&env, "synced");
    // A commit that changes neither the log nor the context file is not checked again (the
    // last commit's were): here the context is left stale by a commit without the hooks, and
    // an unrelated file still commits; the next change to the log is refused.
    env.add("cache", "Use Redis");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "skipped hooks", "--no-verify"]);
    std::fs::write(env.root().join("README.txt"), "notes").unwrap_or_else(|e| panic!("{e}"));
    git(&env, &["add", "README.txt"]);
    commits(&env, "unrelated");
    env.add("queue", "Use a queue");
    git(&env, &["add", "-A"]);
    let (code, out) = git_try(&env, &["commit", "-qm", "stale again"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("ai-context/demo.md is stale"), "{out}");
    env.run(&["sync-context", "demo"]).ok();
    git(&env, &["add", "-A"]);
    commits(&env, "synced again");

    let removed = actions(&env, &["git", "uninstall", "--json"]);
    assert_eq!(
        removed,
        [
            "removed merge.memlog",
            "removed merge=memlog attribute",
            "restored your pre-commit hook",
            "removed pre-merge-commit hook",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(hooks.join("pre-commit")).unwrap_or_default(),
        user_hook
    );
    assert_eq!(
        git(
            &env,
            &["check-attr", "merge", "ai-memory/demo/events.jsonl"]
        )
        .trim(),
        "ai-memory/demo/events.jsonl: merge: union"
    );
    assert_eq!(
        std::fs::read_to_string(info.join("attributes")).unwrap_or_default(),
        "*.png binary\n",
        "the user's attributes stay"
    );
    let again = actions(&env, &["git", "uninstall", "--json"]);
    assert!(
        again.iter().all(|a| a.starts_with("unchanged")),
        "{again:?}"
    );
}

/// The hooks refuse a log line that is not an intact event (edited by hand, or not an event at
/// all), and a merge commit runs the same checks as a commit: a credential or a stale
/// `ai-context/` file that a clean merge brings in stops it.
#[test]
fn hooks_refuse_damaged_lines_and_check_merge_commits() {
    let env = installed();
    env.add("auth", "Sessions expire after 30 minutes");
    env.run(&["sync-context", "demo"]).ok();
    git(&env, &["add", "-A"]);
    commits(&env, "base");

    let base = std::fs::read_to_string(env.log()).unwrap_or_default();
    let tampered = base.replacen("30 minutes", "45 minutes", 1);
    assert_ne!(tampered, base);
    for (what, text) in [
        ("an edited line", tampered),
        ("a line that is no event", format!("{base}not json\n")),
    ] {
        std::fs::write(env.log(), &text).unwrap_or_else(|e| panic!("{e}"));
        git(&env, &["add", "-A"]);
        let (code, out) = git_try(&env, &["commit", "-qm", what]);
        assert_ne!(code, 0, "{what}: {out}");
        assert!(
            out.contains("ai-memory/demo/events.jsonl:1: not an intact event")
                || out.contains("ai-memory/demo/events.jsonl:2: not an intact event"),
            "{what}: {out}"
        );
    }
    // An update whose values cannot apply (a section that is none) is no intact event either.
    let entry = base
        .lines()
        .next()
        .and_then(|l| projections::decode_line(l).ok())
        .map(|e| e.entry)
        .unwrap_or_default();
    let mut set = serde_json::Map::new();
    set.insert("section".into(), "nonsense".into());
    let bad = projections::Event::build(
        &entry,
        "elsewhere",
        "2026-11-22T12:00:00.000Z",
        Vec::new(),
        projections::EventData::Update { set, reason: None },
    )
    .and_then(|e| e.to_line())
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(env.log(), format!("{base}{bad}\n")).unwrap_or_else(|e| panic!("{e}"));
    git(&env, &["add", "-A"]);
    let (code, out) = git_try(&env, &["commit", "-qm", "bad set"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("not an intact event (cannot set fields"),
        "{out}"
    );
    std::fs::write(env.log(), &base).unwrap_or_else(|e| panic!("{e}"));
    git(&env, &["add", "-A"]);

    // A branch whose commit skipped the hooks carries a credential in a hand-added line and a
    // context file that is stale after the merge.
    git(&env, &["checkout", "-qb", "elsewhere"]);
    let forged = projections::Event::build(
        "",
        "elsewhere",
        "2026-11-22T12:00:00.000Z",
        Vec::new(),
        projections::EventData::Create {
            fields: serde_json::from_value(serde_json::json!({
                "section": "learnings", "kind": "other", "subject": "deploy", "scope": "repo",
                "summary": "Deploy key", "content": format!("use {FAKE_TOKEN}"),
                "tags": [], "confidence": 0.9, "evidence": [], "related_entries": []
            }))
            .unwrap_or_else(|e| panic!("{e}")),
            status: projections::Status::Active,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let line = forged.to_line().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(env.log(), format!("{base}{line}\n")).unwrap_or_else(|e| panic!("{e}"));
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "from elsewhere", "--no-verify"]);
    git(&env, &["checkout", "-q", "main"]);
    env.add("db", "Use Postgres");
    env.run(&["sync-context", "demo"]).ok();
    git(&env, &["add", "-A"]);
    commits(&env, "main");
    let (code, out) = git_try(&env, &["merge", "--no-edit", "elsewhere"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("github-token"), "{out}");
    assert!(!out.contains(FAKE_TOKEN), "{out}");
    assert!(
        git(&env, &["log", "-1", "--format=%s"]).trim() == "main",
        "no merge commit was made"
    );
}

/// A credential in a file whose name git quotes (non-ASCII, a quote) or pads (a space) is
/// found all the same, and the finding names the file as it is.
#[test]
fn files_with_quoted_names_are_scanned_too() {
    let env = installed();
    let dir = env.root().join("ai-context");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    for name in ["ñotes.md", "q\"uote.md", "with space.md"] {
        let path = dir.join(name);
        std::fs::write(&path, format!("token {FAKE_TOKEN}\n")).unwrap_or_else(|e| panic!("{e}"));
        git(&env, &["add", "-A"]);
        let (code, out) = git_try(&env, &["commit", "-qm", "leak"]);
        assert_ne!(code, 0, "{name}: {out}");
        assert!(
            out.contains(&format!("ai-context/{name}:1:7: github-token")),
            "{name}: {out}"
        );
        assert!(!out.contains(FAKE_TOKEN), "{out}");
        git(
            &env,
            &["rm", "-q", "--cached", &format!("ai-context/{name}")],
        );
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The hooks are shared by every worktree of a repository: each commit is checked against its
/// own worktree's memory, whichever worktree installed them.
#[test]
fn the_hooks_check_the_worktree_they_run_in() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    let id = env.add("auth", "Sessions expire after 30 minutes");
    env.run(&["sync-context", "demo"]).ok();
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);
    let tree = env.root().join("wt");
    git(&env, &["worktree", "add", "-q", "wt", "-b", "agent-a"]);
    let in_tree = |args: &[&str]| {
        let out = env
            .command(args)
            .current_dir(&tree)
            .env("MEMLOG_WORKSPACE", &tree)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "{args:?}: {out:?}");
    };
    // Installed from the worktree; used from both.
    in_tree(&["git", "install"]);
    in_tree(&["update", &id, "--confidence", "0.95"]);
    in_tree(&["sync-context", "demo"]);
    let commit = |dir: &std::path::Path, message: &str| {
        crate::common::isolate_git(
            Command::new("git")
                .args(["commit", "-qam", message])
                .current_dir(dir),
        )
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let out = commit(&tree, "in the worktree");
    assert!(out.status.success(), "{out:?}");
    std::fs::write(env.root().join("README.md"), "hello\n").unwrap_or_else(|e| panic!("{e}"));
    git(&env, &["add", "README.md"]);
    let out = commit(env.root(), "in the main checkout");
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn install_outside_git_is_refused_and_changes_nothing() {
    let env = Env::with_project();
    let r = env.run(&["git", "install"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("git init"), "{}", r.stderr);
    assert!(!env.root().join(".git").exists());
}

/// The driver called directly: ours stays in place, their new lines follow once each in
/// (time, id) order, duplicates are dropped.
#[test]
fn merge_driver_writes_the_deduplicated_union() {
    let env = Env::with_project();
    // Their new line is dated before ours, a pin before its entry's create (made by hand: memlog
    // refuses to write it), and still follows ours.
    let id = env.add("x", "X");
    let create = std::fs::read_to_string(env.log()).unwrap_or_default();
    let create = create.trim_end().to_owned();
    let parent = projections::decode_line(&create)
        .unwrap_or_else(|e| panic!("{e}"))
        .id;
    let pin = projections::Event::build(
        &id,
        "agent-7",
        "2026-11-22T10:00:00.000Z",
        vec![parent],
        projections::EventData::Pin { reason: None },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let lines = [create, pin.to_line().unwrap_or_else(|e| panic!("{e}"))];
    let dir = env.root();
    std::fs::write(dir.join("base"), "").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("ours"), format!("{}\n{}\n", lines[0], lines[0]))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        dir.join("theirs"),
        format!("{}\r\n{}\n", lines[1], lines[0]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = env.run(&[
        "merge-driver",
        "base",
        "ours",
        "theirs",
        "ai-memory/demo/events.jsonl",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("1 added"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.join("ours")).unwrap_or_default(),
        format!("{}\n{}\n", lines[0], lines[1])
    );
    let missing = env.run(&["merge-driver", "base", "nope", "theirs"]);
    assert_eq!(missing.code, 7, "{}", missing.stderr);
    assert!(missing.stderr.contains("nope"), "{}", missing.stderr);
}

/// A write acknowledged while `git merge` runs (here: just before git calls the driver) is in
/// the merged log: the driver merges in what the working copy holds, which git then replaces.
#[cfg(unix)]
#[test]
fn a_write_made_during_a_merge_survives_it() {
    let env = installed();
    env.add("base", "Base entry");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base", "--no-verify"]);
    git(&env, &["checkout", "-qb", "b"]);
    env.add("on.b", "Written on b");
    git(&env, &["commit", "-qam", "b", "--no-verify"]);
    git(&env, &["checkout", "-q", "main"]);
    env.add("on.main", "Written on main");
    git(&env, &["commit", "-qam", "main", "--no-verify"]);
    // A driver that lets an agent write first, the way a concurrent writer would.
    let acked = env.root().join("acked");
    let script = env.root().join("driver.sh");
    let bin = crate::common::bin();
    let root = env.root().display().to_string();
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n\"{bin}\" --workspace \"{root}\" add demo --section decisions --kind decision \
             --subject during --scope repo --summary \"Written during the merge\" --content c \
             --confidence 0.8 --evidence code:src/lib.rs:n > \"{}\" || exit 1\n\
             exec \"{bin}\" --workspace \"{root}\" merge-driver \"$@\"\n",
            acked.display()
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    git(
        &env,
        &[
            "config",
            "merge.memlog.driver",
            &format!("sh {} %O %A %B %P", script.display()),
        ],
    );
    git(&env, &["merge", "-q", "--no-edit", "b", "--no-verify"]);
    let id = std::fs::read_to_string(&acked).unwrap_or_default();
    let id = id.trim();
    assert!(
        id.starts_with("m-"),
        "the write was not acknowledged: {id:?}"
    );
    env.run(&["show", id]).ok();
    assert_eq!(env.listed(), Some(4));
    env.run(&["verify"]).ok();
}

/// The hooks compare a staged ai-context file with the memory the commit holds: a write left
/// unstaged neither blocks an unrelated commit nor lets a context that the committed log
/// does not back through.
#[test]
fn the_context_check_reads_the_staged_log() {
    let env = installed();
    env.add("auth", "Sessions expire after 30 minutes");
    env.run(&["sync-context", "demo"]).ok();
    git(&env, &["add", "-A"]);
    commits(&env, "base");
    // An agent's write, not staged: an unrelated commit goes through.
    env.add("db", "Use Postgres");
    std::fs::write(env.root().join("code.txt"), "x\n").unwrap_or_else(|e| panic!("{e}"));
    git(&env, &["add", "code.txt"]);
    commits(&env, "code");
    // A context regenerated from it, staged without the log: refused.
    env.run(&["sync-context", "demo"]).ok();
    git(&env, &["add", "ai-context/demo.md"]);
    let (code, out) = git_try(&env, &["commit", "-qm", "context only"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("ai-context/demo.md is stale"), "{out}");
    // With the log staged too: accepted.
    git(&env, &["add", "-A"]);
    commits(&env, "both");
}

/// Content a purge removes does not get into a commit: the purged entry's lines staged whole
/// beside the purge (no `gc` yet) are refused with the fix, and pass once `gc` has run.
#[test]
fn purged_content_is_kept_out_of_commits() {
    let env = installed();
    env.add("keep", "Kept entry");
    git(&env, &["add", "-A"]);
    commits(&env, "base");
    let id = env.add("leak", "Pasted by mistake");
    env.run(&["purge", &id, "--reason", "mistake"]).ok();
    git(&env, &["add", "-A"]);
    let (code, out) = git_try(&env, &["commit", "-qm", "purged but whole"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("run `memlog gc`"), "{out}");
    env.run(&["gc", "demo"]).ok();
    git(&env, &["add", "-A"]);
    commits(&env, "after gc");
}

/// A line that claims to be a tombstone (it names a purge) while no purge vouches for it is
/// served by no command and refused by the commit hook; restoring the line from git mends all.
#[test]
fn a_forged_tombstone_is_neither_read_nor_committed() {
    let env = installed();
    let id = env.add("a.c", "Genuine summary");
    git(&env, &["add", "-A"]);
    commits(&env, "base");
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let purge = "f".repeat(64);
    let forged = log
        .replacen("\"subject\":\"a.c\"", "\"subject\":\"hijacked\"", 1)
        .replacen(
            "\"parents\":[],",
            &format!("\"parents\":[],\"purged_by\":\"{purge}\","),
            1,
        );
    let blanked = serde_json::from_str::<serde_json::Value>(forged.trim())
        .map(|mut v| {
            v["data"]["summary"] = "".into();
            v["data"]["content"] = "".into();
            v["data"]["evidence"] = serde_json::json!([]);
            let mut line = projections::canonical::to_canonical_string(&v).unwrap_or_default();
            line.push('\n');
            line
        })
        .unwrap_or_else(|e| panic!("{e}: {forged}"));
    std::fs::write(env.log(), &blanked).unwrap_or_else(|e| panic!("{e}"));
    for args in [
        vec!["list"],
        vec!["show", id.as_str()],
        vec!["export", "demo", "--format", "events", "-"],
        vec!["list", "--as-of", "2099-01-01T00:00:00Z"],
        vec!["fork", "demo", "copy"],
    ] {
        let r = env.run(&args);
        assert_eq!(r.code, 6, "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains("which is not in the log"), "{}", r.stderr);
        assert!(!r.stdout.contains("hijacked"), "{}", r.stdout);
    }
    git(&env, &["add", "-A"]);
    let (code, out) = git_try(&env, &["commit", "-qm", "forged"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("only `memlog gc` writes tombstones"), "{out}");
    git(&env, &["checkout", "HEAD", "--", "ai-memory"]);
    let r = env.run(&["list"]).ok();
    assert!(r.stdout.contains("Genuine summary"), "{}", r.stdout);
}

/// A commit that drops events from a log (emptied or cut by hand) is refused; one that `gc`
/// rewrote, which keeps every id, goes through.
#[test]
fn a_commit_that_drops_events_is_refused() {
    let env = installed();
    env.add("a", "First");
    env.add("b", "Second");
    git(&env, &["add", "-A"]);
    commits(&env, "base");
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let first: String = log.lines().take(1).map(|l| format!("{l}\n")).collect();
    for (what, text) in [("emptied", String::new()), ("cut", first)] {
        std::fs::write(env.log(), &text).unwrap_or_else(|e| panic!("{e}"));
        git(&env, &["add", "-A"]);
        let (code, out) = git_try(&env, &["commit", "-qm", what]);
        assert_ne!(code, 0, "{what}: {out}");
        assert!(out.contains("removes event"), "{what}: {out}");
    }
    std::fs::write(env.log(), &log).unwrap_or_else(|e| panic!("{e}"));
    git(&env, &["add", "-A"]);
}

/// A merge commit that leaves out events the merged branch holds is refused, whichever way
/// the log lost them: a conflict resolved with our version (`git checkout --ours`), checked by
/// `pre-commit`, or `git merge -s ours` / `-X ours`, checked by `pre-merge-commit`. The message
/// names the events, the branch and the fix, which works.
#[test]
fn a_merge_that_drops_the_other_sides_events_is_refused() {
    let env = installed();
    // Without the union attribute and memlog's driver (a clone that never set them up), git
    // merges the log line by line and stops at a conflict where both branches appended.
    std::fs::remove_file(env.root().join("ai-memory/.gitattributes"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(env.root().join(".git/info/attributes"), "").unwrap_or_else(|e| panic!("{e}"));
    env.add("base", "Base entry");
    git(&env, &["add", "-A"]);
    commits(&env, "base");
    git(&env, &["checkout", "-qb", "a"]);
    let theirs = env.add("on.a", "Written on a");
    let theirs_event = std::fs::read_to_string(env.log())
        .unwrap_or_default()
        .lines()
        .last()
        .and_then(|l| projections::decode_line(l).ok())
        .map(|e| e.id)
        .unwrap_or_default();
    git(&env, &["add", "-A"]);
    commits(&env, "a");
    git(&env, &["checkout", "-q", "main"]);
    env.add("on.main", "Written on main");
    git(&env, &["add", "-A"]);
    commits(&env, "main");
    let head = git(&env, &["rev-parse", "HEAD"]);

    // `-s ours` keeps our tree, `-X ours` our side of the conflicting lines: both make their
    // commit through `pre-merge-commit`, which refuses it.
    for how in [["-s", "ours"], ["-X", "ours"]] {
        let (code, out) = git_try(&env, &["merge", "--no-edit", how[0], how[1], "a"]);
        assert_ne!(code, 0, "{how:?}: {out}");
        assert!(
            out.contains("ai-memory/demo/events.jsonl: the merge drops 1 event that `a`"),
            "{how:?}: {out}"
        );
        assert!(out.contains(&theirs_event[..12]), "{how:?}: {out}");
        assert_eq!(git(&env, &["rev-parse", "HEAD"]), head, "{how:?}: {out}");
        git(&env, &["merge", "--abort"]);
    }

    // A conflict resolved with our version, committed with `git commit`: `pre-commit` refuses.
    let (code, out) = git_try(&env, &["merge", "--no-edit", "a"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("CONFLICT"), "{out}");
    git(
        &env,
        &["checkout", "--ours", "--", "ai-memory/demo/events.jsonl"],
    );
    git(&env, &["add", "-A"]);
    let (code, out) = git_try(&env, &["commit", "--no-edit"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("ai-memory/demo/events.jsonl: the merge drops 1 event that `a`"),
        "{out}"
    );
    assert!(out.contains(&theirs_event[..12]), "{out}");
    assert!(
        out.contains("memlog merge-driver /dev/null ai-memory/demo/events.jsonl -`"),
        "{out}"
    );
    let v = env.run(&["git", "pre-commit", "--json"]);
    assert_eq!(v.code, 1, "{}", v.stdout);
    let v = v.json();
    assert_eq!(
        v["dropped_by_merge"][0]["missing"],
        serde_json::json!([theirs_event]),
        "{v}"
    );
    assert_eq!(v["dropped_by_merge"][0]["branch"], "a", "{v}");

    // The fix the message names: their log merged into ours, staged, committed.
    let merge_head =
        std::fs::read_to_string(env.root().join(".git/MERGE_HEAD")).unwrap_or_default();
    let theirs_log = git(
        &env,
        &[
            "show",
            &format!("{}:./ai-memory/demo/events.jsonl", merge_head.trim()),
        ],
    );
    crate::common::stdin_run(
        &env,
        &[
            "merge-driver",
            "/dev/null",
            "ai-memory/demo/events.jsonl",
            "-",
        ],
        theirs_log.as_bytes(),
    )
    .ok();
    git(&env, &["add", "-A"]);
    commits(&env, "merge a");
    assert_eq!(
        env.run(&["show", &theirs, "--json"]).ok().json()["summary"],
        "Written on a"
    );
    assert_eq!(env.listed(), Some(3));
}
