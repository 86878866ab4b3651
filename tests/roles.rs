//! Issue 23 class 1: a person's decisions are refused inside Claude Code (CLAUDECODE set,
//! as Claude Code's Bash tool runs commands) with the one refusal of `claude::roles`, which
//! names the model's legal steps and no person's command; at a shell (CLAUDECODE unset) the
//! same command line works.

use std::process::Output;

use crate::hook_common::*;

/// Two tasks with criteria; 1.1 is ticked before the execution starts.
pub const PLAN: &str = "# Tasks\n\n## Phase 1\n\
- [x] 1.1 Done before\n  - **Verify**: `true`\n\
- [ ] 1.2 Write b\n  - **Files**: b.txt\n  - **Verify**: `test -f b.txt`\n  - **Done when**: b.txt reads well\n";

/// Words of a person's command line; no message the model reads holds one.
pub const PERSON_MARKERS: &[&str] = specrun::api::claude::roles::PERSON_MARKERS;

pub fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn at_shell(p: &TempProject, args: &[&str]) -> Output {
    p.specrun()
        .args(args)
        .env_remove("CLAUDECODE")
        .output()
        .expect("specrun runs")
}

pub fn inside(p: &TempProject, args: &[&str]) -> Output {
    p.specrun()
        .args(args)
        .env("CLAUDECODE", "1")
        .output()
        .expect("specrun runs")
}

pub fn ok_at_shell(p: &TempProject, args: &[&str]) -> String {
    let out = at_shell(p, args);
    assert!(out.status.success(), "{args:?} at a shell: {}", said(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A git project with `PLAN` and an execution owned by `SESSION`.
pub fn executing() -> TempProject {
    let p = TempProject::git();
    p.spec("demo", PLAN);
    p.commit_all("spec");
    ok_at_shell(
        &p,
        &["state", "init", "--spec", "demo", "--session-id", SESSION],
    );
    p
}

/// The shared refusal: exit 1, the model's steps, no person's command.
pub fn assert_persons_refusal(out: &Output, what: &str) {
    let text = said(out);
    assert_eq!(out.status.code(), Some(1), "{what}: {text}");
    for step in [
        "is a person's decision",
        "specrun task fail",
        "specrun followup add",
        "end your turn",
        "a person decides at a shell",
    ] {
        assert!(text.contains(step), "{what}: no {step:?} in {text}");
    }
    assert_no_persons_command(&text, what);
}

pub fn assert_no_persons_command(text: &str, what: &str) {
    for marker in PERSON_MARKERS {
        assert!(!text.contains(marker), "{what} names {marker:?}: {text}");
    }
}

#[test]
fn confirming_a_criterion_by_hand_is_a_persons() {
    let p = executing();
    let args = [
        "ac",
        "confirm",
        "1.2/AC1",
        "--reason",
        "read it by hand, twice",
    ];
    assert_persons_refusal(&inside(&p, &args), "ac confirm");
    assert!(!p.path("specs/demo/acceptance.json").exists());
    ok_at_shell(&p, &args);
    let store = p.read("specs/demo/acceptance.json");
    assert!(store.contains("read it by hand"), "{store}");
}

#[test]
fn justifying_a_finding_is_a_persons() {
    let p = executing();
    let args = [
        "task",
        "justify",
        "1.2",
        "--finding",
        "F1",
        "--reason",
        "the test moved",
    ];
    assert_persons_refusal(&inside(&p, &args), "task justify");
    // At a shell the verb runs (and refuses on its own terms: no attempt is running).
    let out = at_shell(&p, &args);
    assert!(!said(&out).contains("person's decision"), "{}", said(&out));
    assert!(said(&out).contains("no running attempt"), "{}", said(&out));
}

#[test]
fn resolving_a_blocking_followup_is_a_persons() {
    let p = executing();
    for (category, priority) in [("VERIFY", "high"), ("IDEA", "low")] {
        ok_at_shell(
            &p,
            &[
                "followup",
                "add",
                "--category",
                category,
                "--priority",
                priority,
                "--title",
                "look at it",
            ],
        );
    }
    let blocking = ["followup", "resolve", "F1", "--note", "looked"];
    assert_persons_refusal(&inside(&p, &blocking), "followup resolve F1");
    assert!(p.read("specs/demo/followups.json").contains("\"open\""));
    // A follow-up that blocks nothing is the model's to resolve.
    let out = inside(&p, &["followup", "resolve", "F2", "--note", "done"]);
    assert!(out.status.success(), "{}", said(&out));
    ok_at_shell(&p, &blocking);
    let out = ok_at_shell(&p, &["followup", "list", "--open"]);
    assert!(!out.contains("F1"), "{out}");
}

#[test]
fn restarting_replacing_the_state_and_raising_a_cap_are_a_persons() {
    let p = executing();
    let state = p.read("specs/demo/.specrun-state.json");
    for (args, what) in [
        (&["--restart"][..], "--restart"),
        (&["--force"][..], "--force over a state"),
        (
            &["--max-global-iterations", "60"][..],
            "a global cap above 30",
        ),
        (&["--max-task-iterations", "9"][..], "a task cap above 5"),
        (&["--max-stall-stops", "0"][..], "the stall cap off"),
    ] {
        let mut line = vec!["state", "init", "--spec", "demo"];
        line.extend_from_slice(args);
        assert_persons_refusal(&inside(&p, &line), what);
        assert_eq!(p.read("specs/demo/.specrun-state.json"), state, "{what}");
    }
    // Tightening is the model's: a lower cap, a token budget where there was none.
    let out = inside(
        &p,
        &[
            "state",
            "init",
            "--spec",
            "demo",
            "--max-global-iterations",
            "20",
            "--max-output-tokens",
            "5000",
        ],
    );
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(p.state("demo")["maxGlobalIterations"], 20);
    // Raising the token budget it now has is a person's.
    let raise = [
        "state",
        "init",
        "--spec",
        "demo",
        "--max-output-tokens",
        "9000",
    ];
    assert_persons_refusal(&inside(&p, &raise), "a token budget raised");
    // A person, at a shell.
    ok_at_shell(&p, &raise);
    ok_at_shell(
        &p,
        &[
            "state",
            "init",
            "--spec",
            "demo",
            "--max-global-iterations",
            "60",
        ],
    );
    assert_eq!(p.state("demo")["maxGlobalIterations"], 60);
    ok_at_shell(&p, &["state", "init", "--spec", "demo", "--restart"]);
    ok_at_shell(&p, &["state", "init", "--spec", "demo", "--force"]);
}

#[test]
fn clearing_a_halt_is_a_persons_in_every_form() {
    let p = executing();
    ok_at_shell(&p, &["cancel", "--spec", "demo"]);
    for args in [
        &["resume", "--spec", "demo"][..],
        &["resume", "--spec", "demo", "--raise-global", "100"],
        &["resume", "--spec", "demo", "--session-id", "other"],
    ] {
        assert_persons_refusal(&inside(&p, args), "resume");
        assert_eq!(p.state("demo")["phase"], "cancelled");
    }
    ok_at_shell(&p, &["resume", "--spec", "demo"]);
    assert_eq!(p.state("demo")["phase"], "execution");
}

#[test]
fn accepting_another_command_is_a_persons() {
    let p = executing();
    let args = [
        "verify",
        "run",
        "--task",
        "1.2",
        "--spec",
        "demo",
        "--command",
        "touch ran.txt",
        "--accept-other",
        "needs a display",
    ];
    assert_persons_refusal(&inside(&p, &args), "verify run --accept-other");
    assert!(!p.path("ran.txt").exists());
    let out = at_shell(&p, &args);
    assert!(out.status.success(), "{}", said(&out));
    assert!(p.path("ran.txt").exists());
}

/// Cancelling is the model's (it never completes anything); lifting it is a person's.
#[test]
fn cancelling_is_the_models() {
    let p = executing();
    let out = inside(&p, &["cancel", "--spec", "demo"]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(p.state("demo")["phase"], "cancelled");
    assert_no_persons_command(&said(&out), "cancel inside Claude Code");
}

/// A hook run as Claude Code runs it (CLAUDECODE set); returns stdout (one JSON or nothing).
fn hook_inside(p: &TempProject, event: &str, stdin: serde_json::Value) -> String {
    let out = p
        .specrun()
        .args(["hook", event])
        .env("CLAUDECODE", "1")
        .write_stdin(stdin.to_string())
        .output()
        .expect("hook runs");
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    said(&out)
}

fn stop_input(p: &TempProject, message: &str) -> serde_json::Value {
    serde_json::json!({
        "session_id": SESSION, "transcript_path": null, "cwd": p.root(),
        "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": message, "background_tasks": [],
    })
}

fn tool_input(p: &TempProject, tool: &str) -> serde_json::Value {
    serde_json::json!({
        "session_id": SESSION, "cwd": p.root(), "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": {"prompt": "[task 1.2]", "description": "d"},
        "tool_use_id": "toolu_1",
    })
}

/// Issue 23 class 1, the messages: inside Claude Code no verb's output and no hook answer
/// names a person's command as the way forward, on the paths where one used to (a halt, a
/// cap reached by `task fail`, a cancel, the halted snapshot/status/goal/last-mile, a
/// blocking follow-up at completion, a criterion without a test, another command than the
/// Verify); at a shell the person still gets the command.
#[test]
fn no_message_inside_claude_code_names_a_persons_command() {
    let p = executing();
    let mut seen = Vec::new();
    let mut run = |args: &[&str]| {
        let out = inside(&p, args);
        seen.push((args.join(" "), said(&out)));
    };
    run(&[
        "verify",
        "run",
        "--task",
        "1.2",
        "--spec",
        "demo",
        "--command",
        "true",
    ]);
    run(&["ac", "status", "--spec", "demo"]);
    run(&["ac", "propose", "1.2/AC1", "--reason", "read b.txt by eye"]);
    run(&[
        "followup",
        "add",
        "--category",
        "VERIFY",
        "--priority",
        "high",
        "--title",
        "ask",
    ]);
    run(&["last-mile", "--spec", "demo"]);
    for _ in 0..5 {
        run(&["task", "start", "1.2", "--spec", "demo"]);
        run(&["task", "fail", "1.2", "--reason", "no", "--spec", "demo"]);
    }
    for args in [
        &["status", "--spec", "demo"][..],
        &["status", "--spec", "demo", "--json"],
        &["snapshot", "--spec", "demo"],
        &["goal", "--spec", "demo"],
        &["last-mile", "--spec", "demo"],
        &["doctor", "--spec", "demo"],
        &["finish", "--spec", "demo"],
        &["state", "init", "--spec", "demo"],
        &["resume", "--spec", "demo"],
    ] {
        run(args);
    }
    for (event, stdin) in [
        ("stop", stop_input(&p, "ALL_TASKS_COMPLETE")),
        (
            "session-start",
            serde_json::json!({"session_id": SESSION, "cwd": p.root(), "hook_event_name": "SessionStart", "source": "startup"}),
        ),
        ("pre-tool-use", tool_input(&p, "Agent")),
    ] {
        seen.push((
            format!("hook {event} (halted)"),
            hook_inside(&p, event, stdin),
        ));
    }
    let shell_status = said(&at_shell(&p, &["status", "--spec", "demo"]));
    let mut run = |args: &[&str]| {
        let out = inside(&p, args);
        seen.push((args.join(" "), said(&out)));
    };
    run(&["cancel", "--spec", "demo"]);
    seen.push((
        "hook pre-tool-use (cancelled)".into(),
        hook_inside(&p, "pre-tool-use", tool_input(&p, "Agent")),
    ));
    for (what, text) in &seen {
        assert_no_persons_command(text, what);
    }
    assert!(
        seen.iter()
            .any(|(_, t)| t.contains("a person decides at a shell")),
        "{seen:#?}"
    );
    assert!(
        seen.iter()
            .any(|(w, t)| w.starts_with("task fail") && t.contains("halted")),
        "{seen:#?}"
    );
    // At a shell the person reads the command.
    assert!(
        shell_status.contains("specrun resume --spec demo"),
        "{shell_status}"
    );
}

fn critique(p: &TempProject, id: &str, stage: &str) {
    let input = crate::common::critique_input(stage);
    p.specrun()
        .args([
            "critique", "record", "--task", id, "--stage", stage, "--spec", "demo",
        ])
        .env("CLAUDECODE", "1")
        .write_stdin(input.to_string())
        .assert()
        .success();
}

/// Issue 23, manual criteria: the model proposes a criterion no command checks; its task
/// completes, but the run ends "waiting for a person" (the Stop hook allows the stop and
/// says so, status says so), never complete, until a person confirms it at a shell.
#[test]
fn a_proposed_criterion_ends_the_run_waiting_for_a_person_until_one_confirms() {
    let p = executing();
    let step = |args: &[&str]| {
        let out = inside(&p, args);
        assert!(out.status.success(), "{args:?}: {}", said(&out));
        said(&out)
    };
    step(&["task", "start", "1.2", "--spec", "demo"]);
    p.write("b.txt", "b\n");
    critique(&p, "1.2", "post-code");
    step(&["verify", "run", "--task", "1.2", "--spec", "demo"]);
    critique(&p, "1.2", "post-test");
    let proposed = step(&["ac", "propose", "1.2/AC1", "--reason", "read b.txt by eye"]);
    assert!(proposed.contains("proposed"), "{proposed}");
    assert_no_persons_command(&proposed, "ac propose");
    step(&["task", "complete", "1.2", "--check", "--spec", "demo"]);
    step(&["verify", "run", "--final", "--spec", "demo"]);
    let answer = hook_inside(&p, "stop", stop_input(&p, "Done.\nALL_TASKS_COMPLETE"));
    assert!(!answer.contains("\"block\""), "{answer}");
    assert!(answer.contains("waiting for a person"), "{answer}");
    assert_no_persons_command(&answer, "the waiting stop");
    assert_ne!(p.state("demo")["completed"], true);
    let status = said(&at_shell(&p, &["status", "--spec", "demo"]));
    assert!(status.contains("waiting"), "{status}");
    assert!(status.contains("specrun ac confirm 1.2/AC1"), "{status}");
    // The person confirms at a shell; the next claim completes.
    ok_at_shell(
        &p,
        &[
            "ac",
            "confirm",
            "1.2/AC1",
            "--reason",
            "looked at b.txt myself",
        ],
    );
    let answer = hook_inside(&p, "stop", stop_input(&p, "Done.\nALL_TASKS_COMPLETE"));
    assert!(answer.contains("complete"), "{answer}");
    assert_eq!(p.state("demo")["completed"], true);
}
