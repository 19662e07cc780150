use crate::common::Env;
use std::process::Command;

fn git(env: &Env, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(env.root())
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap_or_else(|e| panic!("git: {e}"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Two branches of agents append to the same log; a real `git merge` unions the lines; nothing
/// is lost, a concurrent change to one memory shows as a conflict, and `resolve` clears it.
#[test]
fn real_git_merge_of_two_branches() {
    let env = Env::new();
    git(&env, &["init", "-q", "-b", "main"]);
    env.run(&["init", "demo"]).ok();
    let shared = env.add("shared.subject", "written before the branches split");
    git(&env, &["add", "-A"]);
    git(&env, &["commit", "-qm", "base"]);

    git(&env, &["checkout", "-qb", "agent-a"]);
    let a = env.add("a.only", "written on branch a");
    env.run_at(
        "2026-11-23T00:00:00Z",
        &["update", &shared, "--confidence", "0.9"],
    )
    .ok();
    git(&env, &["commit", "-qam", "a"]);

    git(&env, &["checkout", "-q", "main"]);
    let b = env.add("b.only", "written on branch b");
    env.run_at(
        "2026-11-23T00:00:01Z",
        &["update", &shared, "--confidence", "0.7"],
    )
    .ok();
    git(&env, &["commit", "-qam", "b"]);

    git(&env, &["merge", "-q", "--no-edit", "agent-a"]);
    assert!(!git(&env, &["status", "--porcelain"]).contains("UU"));

    let verify = env.run(&["verify", "--json"]).ok().json();
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(verify["conflicts"][0], shared.as_str());
    for id in [&shared, &a, &b] {
        env.run(&["show", id]).ok();
    }
    let shown = env.run(&["show", &shared, "--json"]).ok().json();
    assert_eq!(shown["conflict"], true);
    assert_eq!(shown["heads"].as_array().map(Vec::len), Some(2));
    // The deterministic winner is the later write.
    assert_eq!(shown["confidence"], 0.7);

    // Other writes to an entry in conflict extend one head: the conflict stays visible, once.
    env.run_at(
        "2026-11-23T12:00:00Z",
        &["pin", &shared[2..], "--reason", "keep"],
    )
    .ok();
    let shown = env.run(&["show", &shared, "--json"]).ok().json();
    assert_eq!(
        (shown["conflict"].as_bool(), shown["pinned"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(shown["heads"].as_array().map(Vec::len), Some(2));

    env.run_at(
        "2026-11-24T00:00:00Z",
        &[
            "resolve",
            &shared,
            "--confidence",
            "0.9",
            "--reason",
            "a measured it",
        ],
    )
    .ok();
    let shown = env.run(&["show", &shared, "--json"]).ok().json();
    assert_eq!(shown["conflict"], false);
    assert_eq!(shown["confidence"], 0.9);
    let audit = env.run(&["audit", &shared, "--json"]).ok().json();
    let dims: Vec<String> = audit
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "{}:{}",
                r["dimension"].as_str().unwrap_or(""),
                r["to"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        dims.iter()
            .filter(|d| d.starts_with("conflict:"))
            .collect::<Vec<_>>(),
        ["conflict:open", "conflict:resolved"],
        "{dims:?}"
    );

    // The merged store equals a rebuild from the merged log.
    let before = env.run(&["dump"]).ok().stdout;
    env.run(&["rebuild"]).ok();
    assert_eq!(env.run(&["dump"]).ok().stdout, before);
}
