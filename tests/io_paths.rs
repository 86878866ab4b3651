//! Every bookkeeping path, attacked: a symbolic link there must not carry a write (or a
//! file creation) outside the project, and a FIFO there must not hang a verb or a hook.
//! Each case runs the verbs and hooks that touch the path, killing any that outlives
//! `BOUND`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common;
use crate::common::{run_bounded, Ran, TempProject, BOUND};
use crate::task_helpers::*;

/// The verbs and hooks that read or write the spec's bookkeeping, in an order that
/// reaches every path (the task is started before it is failed).
fn battery(p: &TempProject) -> Vec<(String, Ran)> {
    let stop = json!({"session_id": "s1", "cwd": p.root(), "hook_event_name": "Stop",
        "last_assistant_message": "ALL_TASKS_COMPLETE", "stop_hook_active": false});
    let subagent = json!({"session_id": "s1", "cwd": p.root(), "hook_event_name": "SubagentStop",
        "agent_type": "specrun-executor", "last_assistant_message": "TASK_COMPLETE 1.1"});
    let record = common::critique_record("1.1", "post-code", "2026-01-01T00:00:30Z").to_string();
    let state = "specs/demo/.specrun-state.json";
    let runs: Vec<(Vec<&str>, Vec<u8>)> = vec![
        (vec!["hook", "session-start"], stop.to_string().into_bytes()),
        (vec!["task", "start", "1.1"], vec![]),
        (vec!["learn", "a lesson"], vec![]),
        (
            vec![
                "followup",
                "add",
                "--category",
                "VERIFY",
                "--priority",
                "low",
                "--title",
                "t",
            ],
            vec![],
        ),
        (
            vec![
                "critique",
                "record",
                "--task",
                "1.1",
                "--stage",
                "post-code",
            ],
            record.into_bytes(),
        ),
        (vec!["hook", "stop"], stop.to_string().into_bytes()),
        (
            vec!["hook", "subagent-stop"],
            subagent.to_string().into_bytes(),
        ),
        (vec!["tasks", "check", "1.3"], vec![]),
        (vec!["state", "merge", state, "{\"x\":1}"], vec![]),
        (vec!["task", "complete", "1.1"], vec![]),
        (vec!["task", "fail", "1.1", "--reason", "r"], vec![]),
        (vec!["snapshot"], vec![]),
        (vec!["status"], vec![]),
        (vec!["cancel"], vec![]),
    ];
    runs.into_iter()
        .map(|(args, stdin)| (args.join(" "), run_bounded(p, &args, &stdin)))
        .collect()
}

/// Every file under `dir` with its content.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.push((path.clone(), Vec::new()));
            out.extend(contents(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
        }
    }
    out.sort();
    out
}

/// The bookkeeping paths (relative to the root), each with whether it is a directory.
const BOOKKEEPING: &[(&str, bool)] = &[
    (".specrun", true),
    (".specrun/events.jsonl", false),
    ("specs/.current-spec", false),
    ("specs/demo/.specrun-state.json", false),
    ("specs/demo/.specrun-state.json.lock", false),
    ("specs/demo/tasks.md", false),
    ("specs/demo/tasks.md.lock", false),
    ("specs/demo/.progress.md", false),
    ("specs/demo/.progress.md.lock", false),
    ("specs/demo/followups.json", false),
    ("specs/demo/followups.json.lock", false),
    ("specs/demo/critique", true),
];

fn fresh() -> TempProject {
    let p = project(TASKS, &["--session-id", "s1", "--recovery-mode"]);
    p.write("specs/.current-spec", "demo\n");
    std::fs::create_dir_all(p.path(".specrun")).unwrap();
    p
}

/// Put a link at `rel`: to a copy of what was there (so reads through it succeed), or to
/// a path that does not exist yet (so a write through it would create a file outside).
fn plant_link(p: &TempProject, rel: &str, is_dir: bool, outside: &Path) {
    let here = p.path(rel);
    let target = outside.join(rel.replace('/', "_"));
    if is_dir {
        std::fs::create_dir_all(&target).unwrap();
        let _ = std::fs::remove_dir_all(&here);
    } else if here.exists() {
        std::fs::copy(&here, &target).unwrap();
        std::fs::remove_file(&here).unwrap();
    }
    std::os::unix::fs::symlink(&target, &here).unwrap();
}

#[test]
fn no_link_at_a_bookkeeping_path_carries_a_write_outside_the_project() {
    for &(rel, is_dir) in BOOKKEEPING {
        let p = fresh();
        let outside = tempfile::tempdir().unwrap();
        plant_link(&p, rel, is_dir, outside.path());
        let before = contents(outside.path());
        let ran = battery(&p);
        assert_eq!(
            contents(outside.path()),
            before,
            "a write went through the link at {rel}"
        );
        let mut named = false;
        for (cmd, r) in &ran {
            assert!(r.code.is_some(), "{cmd} hung with a link at {rel}");
            assert_ne!(r.code, Some(101), "{cmd} panicked: {}", r.stderr);
            if cmd.starts_with("hook") {
                assert_eq!(r.code, Some(0), "{cmd}: {}", r.stderr);
            }
            named |= r.stderr.contains("symbolic link") || r.stdout.contains("symbolic link");
        }
        assert!(
            named,
            "no command named the link at {rel}: {:?}",
            summary(&ran)
        );
    }
}

#[test]
fn no_fifo_at_a_bookkeeping_path_hangs_a_verb_or_a_hook() {
    for &(rel, is_dir) in BOOKKEEPING {
        if is_dir {
            continue;
        }
        let p = fresh();
        let here = p.path(rel);
        let _ = std::fs::remove_file(&here);
        let status = Command::new("mkfifo").arg(&here).status().unwrap();
        assert!(status.success());
        let ran = battery(&p);
        for (cmd, r) in &ran {
            assert!(r.code.is_some(), "{cmd} hung on a FIFO at {rel}");
            assert_ne!(r.code, Some(101), "{cmd} panicked: {}", r.stderr);
            if cmd.starts_with("hook") {
                assert_eq!(r.code, Some(0), "{cmd}: {}", r.stderr);
            }
        }
    }
}

fn summary(ran: &[(String, Ran)]) -> Vec<(String, Option<i32>, String)> {
    ran.iter()
        .map(|(c, r)| (c.clone(), r.code, r.stderr.clone()))
        .collect()
}

#[test]
fn a_hook_reads_a_bounded_stdin_and_answers() {
    let p = fresh();
    // An endless stdin (/dev/zero): read up to the bound, then the fast path.
    let start = Instant::now();
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let out = Command::new(common::bin_path())
        .args(["hook", "stop", "--cwd"])
        .arg(p.root())
        .stdin(zero)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(start.elapsed() < BOUND);
    // A stdin nobody closes: the hook stops waiting and answers.
    answers_with_stdin_held_open(&p, &["hook", "stop"]);
}

/// Runs `args` in `p` with a stdin that is never written to nor closed: the command must
/// stop waiting within the bound and exit 0.
fn answers_with_stdin_held_open(p: &TempProject, args: &[&str]) {
    let mut child = Command::new(common::bin_path())
        .args(args)
        .current_dir(p.root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let held_open = child.stdin.take().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < BOUND, "{args:?} waited for stdin forever");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(held_open);
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

/// `statusline` reads its stdin like a hook: a stdin nobody closes does not hang it.
#[test]
fn the_status_line_stops_waiting_for_a_silent_stdin() {
    answers_with_stdin_held_open(&fresh(), &["statusline"]);
}

#[test]
fn an_explicit_file_argument_is_read_where_it_points_but_never_a_fifo_or_a_device() {
    let p = fresh();
    let outside = tempfile::tempdir().unwrap();
    let md = outside.path().join("t.md");
    std::fs::write(&md, "- [ ] 1 A\n  - **Verify**: `true`\n").unwrap();
    let ran = run_bounded(&p, &["tasks", "count", md.to_str().unwrap()], b"");
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let fifo = outside.path().join("fifo.md");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // A link is followed, but to a regular file only: /dev/zero would never end.
    let zero = outside.path().join("zero.md");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for file in [fifo.to_str().unwrap(), zero.to_str().unwrap(), "/dev/zero"] {
        for args in [
            vec!["tasks", "count", file],
            vec!["state", "get", file],
            vec![
                "critique",
                "record",
                "--task",
                "1.1",
                "--stage",
                "post-code",
                "--file",
                file,
            ],
        ] {
            let ran = run_bounded(&p, &args, b"");
            assert_eq!(ran.code, Some(2), "{args:?}: {}", ran.stderr);
            assert!(ran.stderr.contains("not a regular file"), "{}", ran.stderr);
        }
    }
    // Writing through an explicit path outside the root stays refused.
    let ran = run_bounded(
        &p,
        &[
            "state",
            "merge",
            outside.path().join("s.json").to_str().unwrap(),
            "{}",
        ],
        b"",
    );
    assert_eq!(ran.code, Some(2));
    assert!(!outside.path().join("s.json").exists());
}

/// A link at .progress.md is found only after `task complete` has ticked the box and
/// written the state: the verb says the task is complete and warns that its progress line
/// was not written (exit 0), instead of an error for a change already made.
#[test]
fn a_linked_progress_file_warns_after_a_completion_it_does_not_undo() {
    let p = fresh();
    run(&p, &["task", "start", "1.1"]);
    ready_to_complete(&p, "1.1");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("progress.md");
    std::fs::write(&target, "OUTSIDE\n").unwrap();
    std::os::unix::fs::symlink(&target, p.path("specs/demo/.progress.md")).unwrap();
    let (code, out, err) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("task 1.1 is complete, but its .progress.md line was not written")
            && err.contains("symbolic link"),
        "{err}"
    );
    assert!(p.read("specs/demo/tasks.md").contains("- [x] 1.1"));
    assert_eq!(p.state("demo")["attempts"]["1.1"][0]["status"], "done");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "OUTSIDE\n");
}

/// Regression: a spec-kit tasks file named through `..` (scripts/test's
/// `$PWD/../shared/…` corpus path) was refused by `tasks lint` as "a symbolic link" (the
/// default-Verify lookup beside it checked the directory with its `..`), while `tasks
/// count` read it. A `..` over a real directory is no link.
#[test]
fn a_foreign_tasks_file_named_through_dot_dot_is_linted() {
    let p = TempProject::bare();
    p.write(
        "elsewhere/plan/tasks.md",
        "# Tasks: x\n\n## Phase 1: Setup\n- [ ] T001 Create the module in src/users.py\n",
    );
    std::fs::create_dir_all(p.path("here")).unwrap();
    let out = p
        .specrun()
        .args(["tasks", "lint", "--json", "here/../elsewhere/plan/tasks.md"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("symbolic link"), "{err}");
    let lint: serde_json::Value = serde_json::from_slice(&out.stdout).expect("lint's JSON");
    assert_eq!(lint["format"], "spec-kit", "{lint}");
}
