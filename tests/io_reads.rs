//! Every path the binary reads, replaced by a FIFO and by a link to `/dev/zero`: each
//! command that reads it answers (it is killed past `BOUND` otherwise) with a clear error
//! or a safe default, never a wait or an endless read; a hook always answers (exit 0).
//! The build keeps it so: clippy.toml forbids a direct `std::fs` open outside the store.

use std::process::Command;

use serde_json::{json, Value};

use crate::common::{run_bounded, Ran, TempProject};
use crate::task_helpers::*;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Fifo,
    /// A link to `/dev/zero`: a read through it never ends.
    Zero,
}

/// A project whose next Stop halts at the global cap (a halt sends a notification, which
/// reads `.specrun/config.json`), with one task started and a few records written.
fn fresh() -> TempProject {
    let p = running();
    let merged = run(
        &p,
        &[
            "state",
            "merge",
            "specs/demo/.specrun-state.json",
            "{\"globalIteration\": 5}",
        ],
    );
    assert_eq!(merged.0, 0, "{merged:?}");
    p
}

/// A project with one task started whose next Stop goes on (and so reads the transcript).
fn running() -> TempProject {
    let p = project(
        TASKS,
        &["--session-id", "s1", "--max-global-iterations", "5"],
    );
    p.write("specs/.current-spec", "demo\n");
    run(&p, &["task", "start", "1.1"]);
    let add = "followup add --category VERIFY --priority low --title t";
    run(&p, &add.split(' ').collect::<Vec<_>>());
    run(&p, &["learn", "a lesson"]);
    p
}

/// Put a FIFO or a link to /dev/zero at `path` (creating its directory).
fn plant(path: &std::path::Path, kind: Kind) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(path);
    match kind {
        Kind::Fifo => assert!(Command::new("mkfifo").arg(path).status().unwrap().success()),
        Kind::Zero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
    }
}

fn stop_input(p: &TempProject, transcript: Option<&str>) -> Vec<u8> {
    let mut input = json!({"session_id": "s1", "cwd": p.root(), "hook_event_name": "Stop",
        "stop_hook_active": false, "last_assistant_message": "working"});
    if let Some(t) = transcript {
        input["transcript_path"] = json!(t);
    }
    input.to_string().into_bytes()
}

fn subagent_input(p: &TempProject, transcript: &str) -> Vec<u8> {
    json!({"session_id": "s1", "cwd": p.root(), "hook_event_name": "SubagentStop",
        "agent_type": "specrun:spec-executor", "agent_id": "a1",
        "agent_transcript_path": transcript, "last_assistant_message": "TASK_COMPLETE 1.1"})
    .to_string()
    .into_bytes()
}

/// Each path the binary reads in the project, with the commands that read it.
const PROJECT_PATHS: &[(&str, &[&[&str]])] = &[
    (
        ".specrun/config.json",
        &[&["hook", "stop"], &["status"], &["report"]],
    ),
    (
        ".specrun/events.jsonl",
        &[&["report"], &["status"], &["hook", "stop"]],
    ),
    (
        ".specrun/demo.uncounted.jsonl",
        &[&["status"], &["hook", "stop"]],
    ),
    (
        "specs/.current-spec",
        &[&["status"], &["statusline"], &["hook", "stop"]],
    ),
    ("specs/.gitignore", &[&["new", "other"]]),
    (
        "specs/demo/.specrun-state.json",
        &[
            &["status"],
            &["report"],
            &["statusline"],
            &["tasks", "list"],
            &["hook", "stop"],
        ],
    ),
    (
        "specs/demo/tasks.md",
        &[
            &["tasks", "list"],
            &["tasks", "show", "1.1"],
            &["tasks", "next"],
            &["hook", "stop"],
        ],
    ),
    (
        "specs/demo/.progress.md",
        &[&["learn", "more"], &["report"]],
    ),
    (
        "specs/demo/followups.json",
        &[&["followup", "list"], &["report"], &["status"]],
    ),
    (
        "specs/demo/acceptance.json",
        &[&["ac", "list"], &["snapshot"]],
    ),
    (
        "specs/demo/critique/1.1-post-code.json",
        &[&["critique", "status"], &["report"]],
    ),
    (
        "specs/demo/test-results/task-1.1.json",
        &[&["ac", "list"], &["task", "complete", "1.1"]],
    ),
    (".claude/settings.json", &[&["doctor"]]),
];

fn check(what: &str, args: &[&str], r: &Ran) {
    assert!(r.code.is_some(), "{args:?} hung on {what}");
    assert_ne!(
        r.code,
        Some(101),
        "{args:?} panicked on {what}: {}",
        r.stderr
    );
    if args[0] == "hook" || args[0] == "statusline" {
        assert_eq!(r.code, Some(0), "{args:?} on {what}: {}", r.stderr);
    }
}

#[test]
fn no_fifo_or_device_at_a_path_the_binary_reads_hangs_it() {
    for kind in [Kind::Fifo, Kind::Zero] {
        for &(rel, runs) in PROJECT_PATHS {
            let p = fresh();
            plant(&p.path(rel), kind);
            let what = format!("a {kind:?} at {rel}");
            for args in runs {
                let stdin = if args[0] == "hook" {
                    stop_input(&p, None)
                } else {
                    vec![]
                };
                check(&what, args, &run_bounded(&p, args, &stdin));
            }
        }
    }
}

/// The notify path read `.specrun/config.json` with an unbounded blocking read: the Stop
/// that halts never answered. Now it answers; and since the notify command in force is
/// the one kept at `state init`, a config planted during the run is not run at all.
#[test]
fn a_halting_stop_answers_over_an_unreadable_config_planted_during_the_run() {
    for kind in [Kind::Fifo, Kind::Zero] {
        let p = fresh();
        plant(&p.path(".specrun/config.json"), kind);
        let r = run_bounded(&p, &["hook", "stop"], &stop_input(&p, None));
        check("config.json", &["hook", "stop"], &r);
        let answer: Value = serde_json::from_str(r.stdout.trim()).unwrap();
        assert_eq!(answer["continue"], false, "the cap halts: {}", r.stdout);
        let notify: Vec<_> = events(&p)
            .into_iter()
            .filter(|e| e["event"] == "notify")
            .collect();
        assert!(
            notify.is_empty(),
            "{kind:?}: no notify was in force at init: {notify:?}"
        );
    }
}

/// Paths the hook input names (Claude Code's transcripts) are not specrun's: a link is
/// followed, but only to a regular file. The hook answers and counts nothing from it.
#[test]
fn a_transcript_path_that_is_a_fifo_or_a_device_never_holds_a_hook() {
    for kind in [Kind::Fifo, Kind::Zero] {
        let p = running();
        let outside = tempfile::tempdir().unwrap();
        let t = outside.path().join("t.jsonl");
        plant(&t, kind);
        let t = t.to_str().unwrap();
        for (args, stdin) in [
            (["hook", "stop"], stop_input(&p, Some(t))),
            (["hook", "stop"], stop_input(&p, Some("/dev/zero"))),
            (["hook", "subagent-stop"], subagent_input(&p, t)),
            (["hook", "subagent-stop"], subagent_input(&p, "/dev/zero")),
        ] {
            check(
                &format!("a {kind:?} transcript"),
                &args,
                &run_bounded(&p, &args, &stdin),
            );
        }
    }
}
