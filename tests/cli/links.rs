//! Symbolic links in `ai-memory/`: a repository can commit one that points anywhere, so memlog
//! refuses to read or write through them, and nothing outside the workspace changes.

use crate::common::{Env, add_args};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A workspace `<temp>/ws` with project `demo` and one entry, and an `<temp>/outside` directory
/// holding `victim` (`precious`).
fn setup() -> (Env, PathBuf) {
    let env = Env::nested();
    env.run(&["init", "demo"]).ok();
    env.add("links.a", "An entry before the link");
    let outside = env.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(outside.join("victim"), "precious").unwrap_or_else(|e| panic!("{e}"));
    (env, outside)
}

/// Every path under `dir` (links not followed) with the contents of its files, sorted.
fn listing(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for item in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = item.unwrap_or_else(|e| panic!("{e}")).path();
            let meta = std::fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("{e}"));
            if meta.is_dir() {
                todo.push(path.clone());
                out.push((path, b"/".to_vec()));
            } else if meta.is_file() {
                let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
                out.push((path, bytes));
            } else {
                out.push((path, b"@".to_vec()));
            }
        }
    }
    out.sort();
    out
}

fn add(env: &Env, project: &str) -> crate::common::Run {
    let mut args = add_args(
        ("learnings", "other"),
        "links.b",
        "Written after the link",
        "c",
        "0.9",
        "assumption:none:n",
    );
    args.insert(1, project);
    env.run(&args)
}

#[track_caller]
fn assert_refused(r: &crate::common::Run, link: &str) {
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("is a symbolic link")
            && r.stderr.contains(&format!("`rm {link}`"))
            && r.stderr.contains("never writes outside the workspace"),
        "{}",
        r.stderr
    );
}

/// A log linked to a file outside: reads and writes refuse it; the file is neither emptied
/// (a "torn tail" moved to quarantine) nor appended to.
#[test]
fn a_linked_log_is_refused_and_its_target_left_alone() {
    let (env, outside) = setup();
    let log = env.log();
    std::fs::remove_file(&log).unwrap_or_else(|e| panic!("{e}"));
    symlink("../../../outside/victim", &log).unwrap_or_else(|e| panic!("{e}"));
    let before = listing(&outside);
    for r in [
        env.run(&["list"]),
        env.run(&["verify"]),
        env.run(&["query", "entry"]),
        add(&env, "demo"),
    ] {
        assert_refused(&r, "ai-memory/demo/events.jsonl");
    }
    assert_eq!(listing(&outside), before);
    assert!(
        !env.root()
            .join("ai-memory/demo/.memlog/quarantine.jsonl")
            .exists()
    );
    // A dangling link: a write does not create its target.
    std::fs::remove_file(&log).unwrap_or_else(|e| panic!("{e}"));
    symlink("../../../outside/new", &log).unwrap_or_else(|e| panic!("{e}"));
    assert_refused(&add(&env, "demo"), "ai-memory/demo/events.jsonl");
    assert_eq!(listing(&outside), before);
}

/// A project directory linked outside: neither `add` nor `init` writes there.
#[test]
fn a_linked_project_directory_is_refused() {
    let (env, outside) = setup();
    symlink(&outside, env.root().join("ai-memory/evil")).unwrap_or_else(|e| panic!("{e}"));
    let before = listing(&outside);
    for r in [
        add(&env, "evil"),
        env.run(&["init", "evil"]),
        env.run(&["list", "evil"]),
    ] {
        assert_refused(&r, "ai-memory/evil");
    }
    assert_eq!(listing(&outside), before);
}

/// A linked `memlog.json` or `.memlog/` is refused as well, by reads and writes.
#[test]
fn a_linked_configuration_or_state_directory_is_refused() {
    let (env, outside) = setup();
    let demo = env.root().join("ai-memory/demo");
    std::fs::rename(demo.join("memlog.json"), outside.join("memlog.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    symlink("../../../outside/memlog.json", demo.join("memlog.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    let before = listing(&outside);
    assert_refused(&env.run(&["list"]), "ai-memory/demo/memlog.json");
    assert_refused(&add(&env, "demo"), "ai-memory/demo/memlog.json");
    std::fs::remove_file(demo.join("memlog.json")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(outside.join("memlog.json"), demo.join("memlog.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_dir_all(demo.join(".memlog")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir(outside.join("state")).unwrap_or_else(|e| panic!("{e}"));
    symlink("../../../outside/state", demo.join(".memlog")).unwrap_or_else(|e| panic!("{e}"));
    let before_state = listing(&outside);
    assert_refused(&env.run(&["list"]), "ai-memory/demo/.memlog");
    assert_refused(&add(&env, "demo"), "ai-memory/demo/.memlog");
    assert_eq!(listing(&outside), before_state);
    assert_ne!(before, before_state);
}

/// `ai-memory/` itself linked outside the workspace: read commands refuse it too, not only
/// `init`.
#[test]
fn a_memory_directory_outside_the_workspace_is_refused_by_reads() {
    let (env, outside) = setup();
    let memory = env.root().join("ai-memory");
    std::fs::rename(&memory, outside.join("ai-memory")).unwrap_or_else(|e| panic!("{e}"));
    symlink(outside.join("ai-memory"), &memory).unwrap_or_else(|e| panic!("{e}"));
    let before = listing(&outside);
    for r in [env.run(&["list", "demo"]), add(&env, "demo")] {
        assert_eq!(r.code, 3, "{}", r.stderr);
        assert!(
            r.stderr.contains("outside the workspace")
                && r.stderr.contains("replace the link with a directory"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(listing(&outside), before);
}

/// A link inside `.memlog/` (local state a repository can still force into git: the store, a
/// lock, a local log) is refused before memlog writes through it.
#[test]
fn a_link_inside_the_state_directory_is_refused() {
    let (env, outside) = setup();
    let state = env.root().join("ai-memory/demo/.memlog");
    std::fs::create_dir(outside.join("store")).unwrap_or_else(|e| panic!("{e}"));
    for name in ["store", "quarantine.jsonl", "write.lock"] {
        let path = state.join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            std::fs::remove_dir_all(&path).unwrap_or_else(|e| panic!("{e}"));
        } else if path.exists() {
            std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
        }
        let target = if name == "store" { "store" } else { "victim" };
        symlink(outside.join(target), &path).unwrap_or_else(|e| panic!("{e}"));
        let before = listing(&outside);
        let shown = format!("ai-memory/demo/.memlog/{name}");
        assert_refused(&env.run(&["list"]), &shown);
        assert_refused(&add(&env, "demo"), &shown);
        assert_eq!(listing(&outside), before, "{name}");
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
    }
    env.run(&["list"]).ok();
}

/// A lock's queue folder (`.memlog/store.lock.queue/`, where waiting processes take their
/// turn) that is a link, or a link among its tickets, is refused as every link in `.memlog/`
/// is: memlog creates and removes files there, and never through a link.
#[test]
fn a_link_in_a_locks_queue_is_refused() {
    let (env, outside) = setup();
    let state = env.root().join("ai-memory/demo/.memlog");
    let queue = state.join("store.lock.queue");
    let ticket = queue.join(format!("{:024}-0000000001-000000", 1));
    for (link, target) in [(&queue, outside.clone()), (&ticket, outside.join("victim"))] {
        if link == &ticket {
            std::fs::create_dir_all(&queue).unwrap_or_else(|e| panic!("{e}"));
        }
        symlink(&target, link).unwrap_or_else(|e| panic!("{e}"));
        let before = listing(&outside);
        let shown = link
            .strip_prefix(env.root())
            .unwrap_or(link)
            .display()
            .to_string();
        assert_refused(&env.run(&["list"]), &shown);
        assert_refused(&add(&env, "demo"), &shown);
        assert_eq!(listing(&outside), before, "{shown}");
        std::fs::remove_file(link).unwrap_or_else(|e| panic!("{e}"));
    }
    env.run(&["list"]).ok();
    add(&env, "demo").ok();
}

/// A log with a second hard link (a name elsewhere, maybe outside the workspace) is not
/// written through: a write is refused naming the file and the fix, and changes neither name;
/// reads go on. Given a file of its own, as the error says, the log takes the write.
#[test]
fn a_hard_linked_log_is_read_but_not_written() {
    let (env, outside) = setup();
    let log = env.root().join("ai-memory/demo/events.jsonl");
    let other = outside.join("events.jsonl");
    std::fs::hard_link(&log, &other).unwrap_or_else(|e| panic!("{e}"));
    let before = std::fs::read(&log).unwrap_or_default();
    let refused = add(&env, "demo");
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    let shown = log.display().to_string();
    assert!(
        refused
            .stderr
            .contains(&format!("{shown} has 2 hard links"))
            && refused.stderr.contains(&format!(
                "`cp {shown} {shown}.own && mv {shown}.own {shown}`"
            )),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read(&other).unwrap_or_default(), before);
    assert_eq!(std::fs::read(&log).unwrap_or_default(), before);
    let listed = env.run(&["list", "--json"]).ok().json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    let own = format!("{shown}.own");
    std::fs::copy(&log, &own).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(&own, &log).unwrap_or_else(|e| panic!("{e}"));
    add(&env, "demo").ok();
    assert_eq!(std::fs::read(&other).unwrap_or_default(), before);
}

/// The merge driver, which takes the project's write lock without opening the project, does
/// not make its lock through a `.memlog/` that is a link either.
#[test]
fn the_merge_driver_refuses_a_linked_state_directory() {
    let (env, outside) = setup();
    let state = env.root().join("ai-memory/demo/.memlog");
    std::fs::remove_dir_all(&state).unwrap_or_else(|e| panic!("{e}"));
    symlink(&outside, &state).unwrap_or_else(|e| panic!("{e}"));
    let log = std::fs::read_to_string(env.log()).unwrap_or_default();
    let dir = env.dir.path().join("merge");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    for name in ["base", "ours", "theirs"] {
        std::fs::write(dir.join(name), &log).unwrap_or_else(|e| panic!("{e}"));
    }
    let path = |n: &str| dir.join(n).display().to_string();
    let before = listing(&outside);
    let r = env.run(&[
        "merge-driver",
        &path("base"),
        &path("ours"),
        &path("theirs"),
        "ai-memory/demo/events.jsonl",
    ]);
    assert_refused(&r, "ai-memory/demo/.memlog");
    assert_eq!(listing(&outside), before);
}
