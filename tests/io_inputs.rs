//! Inputs that used to crash, hang or mislead: pathological path patterns, spec names
//! that git refs cannot hold, a tasks file without tasks, a very long task list.

use crate::common::{run_bounded, TempProject};
use crate::task_helpers::*;

const PATHOLOGICAL: &str = "**a**a**a**a**a**a**a**a**a**a**a**a**b";

/// Regression: the backtracking matcher took 20 s (last-mile, rollback) and 45 s (a
/// hook) on this pattern; each run here is killed past `BOUND`.
#[test]
fn pathological_patterns_do_not_hang_scope_checks_or_fingerprints() {
    let tasks = format!(
        "# Tasks\n\n## Phase 1\n- [ ] 1.1 First\n  - **Files**: {PATHOLOGICAL}\n  - **Verify**: `true`\n"
    );
    let p = project(&tasks, &["--session-id", "s1"]);
    p.write("specs/.current-spec", "demo\n");
    run(&p, &["task", "start", "1.1"]);
    let long = "a".repeat(60);
    p.write(&format!("{long}/{long}"), "x\n");
    for args in [&["last-mile"][..], &["task", "rollback", "1.1", "--force"]] {
        let ran = run_bounded(&p, args, b"");
        assert!(ran.code.is_some(), "{args:?} hung");
        assert_ne!(ran.code, Some(101), "{args:?}: {}", ran.stderr);
    }
    // Outside git the fingerprint matches .gitignore rules: verify run and the hook.
    let bare = TempProject::bare();
    bare.spec("demo", &tasks);
    bare.write("specs/.current-spec", "demo\n");
    bare.write(".gitignore", &format!("{PATHOLOGICAL}\n"));
    bare.write(&format!("{long}/{long}"), "x\n");
    run(
        &bare,
        &["state", "init", "--spec", "demo", "--session-id", "s1"],
    );
    let ran = run_bounded(&bare, &["verify", "run", "--command", "true"], b"");
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let stop = serde_json::json!({"session_id": "s1", "cwd": bare.root(),
        "last_assistant_message": "ALL_TASKS_COMPLETE"});
    let ran = run_bounded(&bare, &["hook", "stop"], stop.to_string().as_bytes());
    assert_eq!(ran.code, Some(0), "the hook hung or failed: {}", ran.stderr);
}

/// One name rule: whitespace, bidirectional overrides and ref-breaking characters are
/// refused wherever a name enters, so none reaches `task rollback`'s refs.
#[test]
fn spec_names_git_cannot_hold_are_refused_where_they_enter() {
    let p = TempProject::git();
    for name in ["my spec", "evil\u{202e}txt", "a:b"] {
        p.spec(name, TASKS);
        let ran = run_bounded(&p, &["state", "init", "--spec", name], b"");
        assert_eq!(ran.code, Some(2), "{name:?}: {}", ran.stderr);
        assert!(ran.stderr.contains("invalid spec name"), "{}", ran.stderr);
        p.write("specs/.current-spec", &format!("{name}\n"));
        for args in [
            &["task", "rollback", "1.1"][..],
            &["status"],
            &["task", "start", "1.1"],
        ] {
            let ran = run_bounded(&p, args, b"");
            assert_eq!(ran.code, Some(2), "{args:?} {name:?}: {}", ran.stderr);
            assert!(ran.stderr.contains("invalid spec name"), "{}", ran.stderr);
        }
    }
}

#[test]
fn tasks_next_on_a_file_without_tasks_says_there_are_none() {
    let p = TempProject::git();
    p.spec("demo", "# Tasks\n\nNothing planned yet.\n");
    p.write("specs/.current-spec", "demo\n");
    let ran = run_bounded(&p, &["tasks", "next"], b"");
    assert_eq!(ran.code, Some(1));
    assert!(
        !ran.stdout.contains("all tasks are checked"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("holds no tasks"), "{}", ran.stdout);
}

/// `tasks list` streams into a pipe: a reader that closes it after the first bytes must see
/// the command stop and exit 0 (a closed pipe is not an error), not write on or hang.
#[test]
fn tasks_list_into_a_pipe_closed_early_exits_0_without_hanging() {
    use std::io::Read;
    let p = TempProject::git();
    let mut text = String::from("# Tasks\n## Phase 1\n");
    // Far more than a pipe's buffer holds, so the writer is blocked when the pipe closes.
    for i in 1..=40_000 {
        text.push_str(&format!("- [ ] {i} Task {i}\n  - **Verify**: `true`\n"));
    }
    p.spec("demo", &text);
    p.write("specs/.current-spec", "demo\n");
    for json in [true, false] {
        let args: &[&str] = if json {
            &["tasks", "list", "--json"]
        } else {
            &["tasks", "list"]
        };
        let mut child = std::process::Command::new(crate::common::bin_path())
            .args(args)
            .current_dir(p.root())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 100];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                start.elapsed() < crate::common::BOUND,
                "{args:?} hung on a closed pipe"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "{args:?}");
    }
}

/// `tasks list --json` is streamed: the same document, written task by task.
#[test]
fn tasks_list_json_streams_one_valid_document() {
    let p = TempProject::git();
    // One task with every field, quotes, a backslash, a tab and an escape byte, a nested
    // optional sub-task: the hand-written compact JSON must be serde_json's, byte for byte.
    let mut text = String::from(
        "# Tasks\n## Phase \"0\"\n- [x] 0.1 [P] [FIX 0.0] Quote \"it\" \\ \t\u{1b} é\n  - **Do**: a\n    b\n  - **Files**: a.rs, `b.rs`\n  - **Done when**: done\n  - **Verify**: `grep -q \"x\" a.rs`\n  - **Commit**: `feat: a`\n  - **Depends**: 0.0\n  - [ ]* 0.1.1 Sub\n    - **No verify**: docs\n## Phase 1\n",
    );
    for i in 1..=2000 {
        text.push_str(&format!(
            "- [{}] {i} Task {i}\n",
            if i % 3 == 0 { "x" } else { " " }
        ));
    }
    p.spec("demo", &text);
    p.write("specs/.current-spec", "demo\n");
    let ran = run_bounded(&p, &["tasks", "list", "--json"], b"");
    assert_eq!(ran.code, Some(0));
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(doc["counts"]["total"], 2002);
    assert_eq!(doc["counts"]["completed"], 667);
    assert_eq!(doc["tasks"].as_array().unwrap().len(), 2002);
    assert_eq!(doc["tasks"][4]["checked"], true);
    assert_eq!(doc["tasks"][0]["verify"], "grep -q \"x\" a.rs");
    assert_eq!(doc["tasks"][1]["noVerify"], "docs");
    assert_eq!(doc["tasks"][1]["optional"], true);
    // Piped, the list is compact JSON: one line (indentation is for a terminal), laid out
    // as serde_json lays out the same document (its keys in the order written).
    assert_eq!(ran.stdout.trim_end().lines().count(), 1, "not compact");
    assert_eq!(ran.stdout, serde_json::to_string(&doc).unwrap() + "\n");
    let empty = TempProject::git();
    empty.spec("demo", "# none\n");
    empty.write("specs/.current-spec", "demo\n");
    let ran = run_bounded(&empty, &["tasks", "list", "--json"], b"");
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(doc["tasks"], serde_json::json!([]));
}
