//! Issue 11 ("fails open", "completions the protocol did not earn") and issue 15 item 5:
//! each test drives the built binary on a temp git project the way a model or a broken
//! machine would, and checks that the guard holds and says why.

use std::process::Output;

use serde_json::{json, Value};

use crate::hook_common::*;

/// Three tasks; 1.1 is ticked before the execution starts.
const THREE: &str = "# Tasks\n\n**Final check**: `test -f b.txt`\n\n## Phase 1\n\
- [x] 1.1 Done before\n  - **Verify**: `true`\n\
- [ ] 1.2 Write b\n  - **Files**: b.txt\n  - **Verify**: `test -f b.txt`\n\
- [ ] 1.3 Write c\n  - **Files**: c.txt\n  - **Verify**: `test -f c.txt`\n";

fn specrun(p: &TempProject, args: &[&str]) -> Output {
    p.specrun()
        .args(args)
        .env_remove("CLAUDECODE")
        .output()
        .expect("specrun runs")
}

/// Runs `args`, which must exit 0; returns stdout.
fn ok(p: &TempProject, args: &[&str]) -> String {
    let out = specrun(p, args);
    assert!(
        out.status.success(),
        "specrun {args:?} exited {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A git project with `tasks` and an execution owned by `SESSION`, as `state init` makes it.
fn executing(tasks: &str, flags: &[&str]) -> TempProject {
    let p = TempProject::git();
    p.spec("demo", tasks);
    p.commit_all("spec");
    let mut args = vec!["state", "init", "--spec", "demo", "--session-id", SESSION];
    args.extend_from_slice(flags);
    ok(&p, &args);
    p
}

/// Records a passing self-critique of `stage` through `critique record`.
fn critique(p: &TempProject, id: &str, stage: &str) {
    let ids = specrun::api::evidence::critique::checklist(stage).unwrap();
    let items: serde_json::Map<String, Value> = ids
        .iter()
        .map(|(cid, _)| {
            (
                cid.to_string(),
                json!({"result": "pass", "note": "read it"}),
            )
        })
        .collect();
    let input = json!({"checklist": items, "issuesFound": [], "issuesFixed": []});
    p.specrun()
        .args([
            "critique", "record", "--task", id, "--stage", stage, "--spec", "demo",
        ])
        .write_stdin(input.to_string())
        .assert()
        .success();
}

fn tick(p: &TempProject, id: &str) {
    // What `sed -i 's/- \[ \] 1.2/- [x] 1.2/'` does.
    let text = p.read("specs/demo/tasks.md");
    p.write(
        "specs/demo/tasks.md",
        &text.replace(&format!("- [ ] {id} "), &format!("- [x] {id} ")),
    );
}

fn stop(p: &TempProject, message: &str, active: bool) -> String {
    run_hook(p, "stop", stop_stdin(p, message, active, None))
}

fn executor_stop(p: &TempProject, message: &str, active: bool) -> String {
    let stdin = json!({
        "session_id": SESSION, "cwd": p.root(), "agent_id": "agent-7",
        "agent_type": "specrun:spec-executor", "hook_event_name": "SubagentStop",
        "stop_hook_active": active, "last_assistant_message": message,
    });
    run_hook(p, "subagent-stop", stdin.to_string())
}

fn events(p: &TempProject) -> Vec<Value> {
    std::fs::read_to_string(p.path(".specrun/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn last_event(p: &TempProject, event: &str) -> Value {
    events(p)
        .into_iter()
        .rev()
        .find(|e| e["event"] == event)
        .unwrap_or_else(|| panic!("no {event} event"))
}

/// The sed run of issue 11: an executor ticks its box (and the next one) by hand while its
/// attempt runs, its claim is recorded unverified, a phase verify passes, and the
/// coordinator claims completion. Refused with every reason; each printed fix, followed,
/// leads to an accepted completion.
#[test]
fn a_completion_with_hand_ticked_boxes_is_refused_until_each_is_earned() {
    let p = executing(THREE, &["--driver", "manual"]);
    assert_eq!(p.state("demo")["checkedAtInit"], json!(["1.1"]));
    ok(&p, &["task", "start", "1.2", "--spec", "demo"]);
    p.write("b.txt", "b\n");
    tick(&p, "1.2");
    tick(&p, "1.3");
    // The executor claims twice; the second time its claim is recorded as unverified.
    assert!(executor_stop(&p, "TASK_COMPLETE 1.2", false).contains("\"block\""));
    executor_stop(&p, "TASK_COMPLETE 1.2", true);
    assert_eq!(p.state("demo")["unverifiedClaims"][0]["taskId"], "1.2");
    ok(&p, &["verify", "run", "--final", "--spec", "demo"]);

    let out = json_of(&stop(&p, "All done.\nALL_TASKS_COMPLETE", false));
    let reason = out["reason"].as_str().unwrap_or_else(|| panic!("{out}"));
    for want in [
        "task 1.2 is checked but attempt 1 is still running",
        "task 1.3 was ticked during this execution without `specrun task complete` (it was never started)",
        "`specrun tasks check 1.3 --undo --spec demo`",
        "the executor's TASK_COMPLETE 1.2",
    ] {
        assert!(reason.contains(want), "{want:?} not in:\n{reason}");
    }
    assert_ne!(p.state("demo")["phase"], "completed");
    assert_eq!(
        last_event(&p, "stop")["unmet"],
        json!([
            "attempt-running",
            "checked-without-complete",
            "unverified-claim"
        ])
    );
    // last-mile agrees: no completion to claim.
    let lm: Value = serde_json::from_str(&ok(&p, &["last-mile", "--spec", "demo"])).unwrap();
    assert_eq!(lm["phase"], "verifying", "{lm:#}");
    assert!(
        lm["coordinatorInstruction"]
            .as_str()
            .unwrap()
            .starts_with("Do not claim completion yet"),
        "{lm:#}"
    );

    // Follow the fixes: 1.2 through `task complete`, 1.3 unticked and done properly.
    critique(&p, "1.2", "post-code");
    ok(&p, &["verify", "run", "--task", "1.2", "--spec", "demo"]);
    critique(&p, "1.2", "post-test");
    ok(&p, &["task", "complete", "1.2", "--spec", "demo"]);
    ok(&p, &["tasks", "check", "1.3", "--undo", "--spec", "demo"]);
    ok(&p, &["task", "start", "1.3", "--spec", "demo"]);
    p.write("c.txt", "c\n");
    critique(&p, "1.3", "post-code");
    ok(&p, &["verify", "run", "--task", "1.3", "--spec", "demo"]);
    critique(&p, "1.3", "post-test");
    ok(
        &p,
        &["task", "complete", "1.3", "--check", "--spec", "demo"],
    );
    ok(&p, &["verify", "run", "--final", "--spec", "demo"]);
    let out = json_of(&stop(&p, "ALL_TASKS_COMPLETE", false));
    assert!(out.get("decision").is_none(), "{out}");
    assert_eq!(p.state("demo")["phase"], "completed");
    assert_eq!(last_event(&p, "stop")["rule"], "completion-accepted");
}

/// Re-running `state init` does not launder a box ticked by hand in the execution.
#[test]
fn state_init_again_keeps_the_earlier_baseline() {
    let p = executing(THREE, &[]);
    tick(&p, "1.2");
    ok(
        &p,
        &["state", "init", "--spec", "demo", "--session-id", SESSION],
    );
    assert_eq!(p.state("demo")["checkedAtInit"], json!(["1.1"]));
    // Garbling another field first and forcing the init does not launder the hand-ticked
    // box into the baseline either.
    tick(&p, "1.3");
    let mut doc = p.state("demo");
    doc["quickMode"] = json!("yes");
    p.write(
        "specs/demo/.specrun-state.json",
        &serde_json::to_string(&doc).unwrap(),
    );
    ok(
        &p,
        &[
            "state",
            "init",
            "--spec",
            "demo",
            "--session-id",
            SESSION,
            "--force",
        ],
    );
    assert_eq!(p.state("demo")["checkedAtInit"], json!(["1.1"]));
}

/// `verify run --task 1.2 --command true` is recorded as another command and counts
/// neither for `task complete` nor for SubagentStop; only the task's Verify command, or
/// another one a person accepts with a reason from their own shell, does.
#[test]
fn a_tasks_evidence_must_come_from_its_own_verify_command() {
    let p = executing(THREE, &[]);
    ok(&p, &["task", "start", "1.2", "--spec", "demo"]);
    tick(&p, "1.2");
    critique(&p, "1.2", "post-code");
    let run = specrun(
        &p,
        &[
            "verify",
            "run",
            "--task",
            "1.2",
            "--command",
            "true",
            "--spec",
            "demo",
        ],
    );
    assert!(run.status.success(), "{}", said(&run));
    assert!(
        said(&run).contains("`true` is not its Verify command `test -f b.txt`"),
        "{}",
        said(&run)
    );
    let record = &p.state("demo")["taskEvidence"]["1.2"];
    assert_eq!(
        (&record["ownVerify"], &record["verifyCommand"]),
        (&json!(false), &json!("test -f b.txt"))
    );
    assert_eq!(last_event(&p, "verify")["ownVerify"], false);
    critique(&p, "1.2", "post-test");
    let complete = specrun(&p, &["task", "complete", "1.2", "--spec", "demo"]);
    assert_eq!(complete.status.code(), Some(1), "{}", said(&complete));
    assert!(
        said(&complete).contains("taskEvidence[1.2] is not the task's (it ran `true`"),
        "{}",
        said(&complete)
    );
    let claim = json_of(&executor_stop(&p, "TASK_COMPLETE 1.2", false));
    let reason = claim["reason"].as_str().unwrap();
    assert!(
        reason.contains("evidence for task 1.2 does not count: it ran `true`"),
        "{reason}"
    );
    let status = specrun(&p, &["verify", "status", "--task", "1.2", "--spec", "demo"]);
    assert_eq!(status.status.code(), Some(1));
    assert!(
        said(&status).contains("re-run: specrun verify run --spec demo --task 1.2\n"),
        "{}",
        said(&status)
    );

    // Without --command the task's Verify runs (and fails: b.txt does not exist).
    let own = specrun(&p, &["verify", "run", "--task", "1.2", "--spec", "demo"]);
    assert_eq!(own.status.code(), Some(1), "{}", said(&own));
    assert_eq!(
        p.state("demo")["taskEvidence"]["1.2"]["command"],
        "test -f b.txt"
    );
    // A task without Verify is sent to its plan, not invited to name any command as its
    // own evidence (issue 26); a phase needs --command.
    let bare = executing("- [ ] 1 One\n  - **No verify**: checked by hand (this test is about a task without Verify)\n", &[]);
    let out = specrun(&bare, &["verify", "run", "--task", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        said(&out).contains("task 1 has no **Verify** in") && said(&out).contains("(line 2)"),
        "{}",
        said(&out)
    );
    assert!(!said(&out).contains("--command"), "{}", said(&out));
    let given = specrun(
        &bare,
        &["verify", "run", "--task", "1", "--command", "true"],
    );
    assert_eq!(given.status.code(), Some(0), "{}", said(&given));
    assert_eq!(bare.state("demo")["taskEvidence"]["1"]["ownVerify"], false);
    assert!(
        said(&given).contains("not a Verify the plan gives"),
        "{}",
        said(&given)
    );
    let out = specrun(&bare, &["verify", "run", "--phase", "execution"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        said(&out).contains("--command is required for a phase"),
        "{}",
        said(&out)
    );

    // Inside Claude Code (CLAUDECODE set) --accept-other is refused before anything runs.
    let inside = p
        .specrun()
        .args([
            "verify",
            "run",
            "--task",
            "1.2",
            "--spec",
            "demo",
            "--command",
            "touch ran.txt",
        ])
        .args(["--accept-other", "the Verify needs a display"])
        .env("CLAUDECODE", "1")
        .output()
        .unwrap();
    assert!(!inside.status.success(), "{}", said(&inside));
    assert!(
        said(&inside).contains("a person's decision"),
        "{}",
        said(&inside)
    );
    assert!(!p.path("ran.txt").exists());
    // A person, from their own shell: recorded with the reason, shown, and it counts.
    let accepted = specrun(
        &p,
        &[
            "verify",
            "run",
            "--task",
            "1.2",
            "--spec",
            "demo",
            "--command",
            "true",
            "--accept-other",
            "b.txt is generated at deploy time",
        ],
    );
    assert!(accepted.status.success(), "{}", said(&accepted));
    assert_eq!(
        p.state("demo")["taskEvidence"]["1.2"]["acceptedOther"]["reason"],
        "b.txt is generated at deploy time"
    );
    assert_eq!(
        last_event(&p, "verify")["acceptedOther"],
        "b.txt is generated at deploy time"
    );
    let status = ok(&p, &["status", "--spec", "demo"]);
    assert!(
        status.contains("accepted  task 1.2: another command than its Verify, by a person: b.txt"),
        "{status}"
    );
    let status: Value =
        serde_json::from_str(&ok(&p, &["status", "--spec", "demo", "--json"])).unwrap();
    assert_eq!(status["acceptedOther"][0]["task"], "1.2");
    critique(&p, "1.2", "post-test");
    ok(&p, &["task", "complete", "1.2", "--spec", "demo"]);
}

/// After `specrun cancel` (or a halt) the owner's next delegation is denied, and every
/// PreToolUse decision of the owner is an events.jsonl line.
#[test]
fn a_cancelled_or_halted_execution_denies_new_work_and_each_decision_is_logged() {
    let p = executing(THREE, &[]);
    let pre = |tool: &str, session: &str| {
        let stdin = json!({"session_id": session, "cwd": p.root(), "hook_event_name": "PreToolUse",
                           "tool_name": tool, "tool_input": {}});
        run_hook(&p, "pre-tool-use", stdin.to_string())
    };
    assert_eq!(pre("Agent", SESSION), "");
    let e = last_event(&p, "pre-tool-use");
    assert_eq!(
        (&e["decision"], &e["rule"], &e["tool"]),
        (&json!("allow"), &json!("allow"), &json!("Agent"))
    );

    ok(&p, &["cancel", "--spec", "demo"]);
    let out = json_of(&pre("Agent", SESSION));
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(reason.contains("spec 'demo' was cancelled"), "{reason}");
    assert!(reason.contains("a person decides at a shell"), "{reason}");
    assert!(!reason.contains("specrun resume"), "{reason}");
    let e = last_event(&p, "pre-tool-use");
    assert_eq!(
        (&e["decision"], &e["rule"]),
        (&json!("deny"), &json!("cancelled"))
    );
    // Another session's calls are not this execution's business: nothing said or written.
    let before = events(&p).len();
    assert_eq!(pre("Agent", "someone-else"), "");
    assert_eq!(events(&p).len(), before);
    // The undo works, and a halt denies as well.
    ok(&p, &["resume", "--spec", "demo"]);
    assert_eq!(pre("Task", SESSION), "");
    let path = p.path("specs/demo/.specrun-state.json");
    ok(
        &p,
        &[
            "state",
            "merge",
            path.to_str().unwrap(),
            r#"{"halt": {"kind": "stall", "reason": "stuck"}}"#,
        ],
    );
    let out = json_of(&pre("Agent", SESSION));
    assert!(out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("halted (stuck)"));
    assert_eq!(last_event(&p, "pre-tool-use")["rule"], "halted");
}

fn ago(minutes: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::minutes(minutes))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A missing, garbled or future `startedAt` does not turn the time cap off: the cap counts
/// from the earliest sound time recorded, and the hook says what is wrong.
#[test]
fn the_time_cap_fails_closed() {
    for bad in [
        json!(null),
        json!("yesterday"),
        json!("2099-01-01T00:00:00Z"),
        json!(42),
    ] {
        let e = Exec::new(
            TASKS,
            json!({"budget": {"maxMinutes": 30},
                   "attempts": {"1.2": [{"n": 1, "status": "running", "startedAt": ago(45)}]}}),
        );
        let mut s = e.state();
        s["startedAt"] = bad.clone();
        e.write_state(&s);
        let out = json_of(&e.hook("stop", stop_stdin(&e.p, "working", false, None)));
        assert_eq!(out["continue"], false, "{bad}: {out}");
        let m = out["systemMessage"].as_str().unwrap();
        assert!(
            m.contains("45 minutes since the first attempt's startedAt >= budget.maxMinutes 30"),
            "{m}"
        );
        assert!(
            m.contains("the time cap counts from the first attempt's startedAt"),
            "{m}"
        );
        assert_eq!(e.state()["halt"]["kind"], "time-cap");
        let stop = e.events().into_iter().last().unwrap();
        assert!(stop["timeCapProblem"].is_string(), "{stop}");
        // resume measures the same minutes: a raise below them is refused.
        let out =
            e.p.specrun()
                .args(["resume", "--raise-minutes", "40"])
                .output()
                .unwrap();
        assert!(!out.status.success());
        assert!(said(&out).contains("45 minutes elapsed"), "{}", said(&out));
    }
    // Nothing recorded at all: the first stop says so and stamps the clock; the cap then
    // counts from it.
    let e = Exec::new(
        TASKS,
        json!({"budget": {"maxMinutes": 30}, "startedAt": null}),
    );
    let out = json_of(&e.hook("stop", stop_stdin(&e.p, "working", false, None)));
    assert!(
        out["systemMessage"]
            .as_str()
            .unwrap()
            .contains("startedAt is missing"),
        "{out}"
    );
    assert!(e.state()["guard"]["clockStartedAt"].is_string());
    let status = e.p.specrun().args(["status"]).output().unwrap();
    assert!(
        said(&status).contains("time cap  startedAt is missing"),
        "{}",
        said(&status)
    );
    let mut s = e.state();
    s["guard"]["clockStartedAt"] = json!(ago(31));
    e.write_state(&s);
    let out = json_of(&e.hook("stop", stop_stdin(&e.p, "working", false, None)));
    assert_eq!(out["continue"], false, "{out}");
}

#[test]
fn state_merge_refuses_times_it_cannot_read() {
    let e = Exec::new(TASKS, json!({}));
    let path = e.state_path();
    let before = e.state_bytes();
    for patch in [
        r#"{"startedAt": "last tuesday"}"#,
        r#"{"startedAt": "2999-01-01T00:00:00Z"}"#,
        r#"{"startedAt": 5}"#,
        r#"{"completedAt": "soon"}"#,
        r#"{"halt": {"kind": "stall", "reason": "r", "at": "noon"}}"#,
    ] {
        let out =
            e.p.specrun()
                .args(["state", "merge", path.to_str().unwrap(), patch])
                .output()
                .unwrap();
        assert!(!out.status.success(), "{patch} was accepted");
        assert!(said(&out).contains("patch: field `"), "{}", said(&out));
        assert_eq!(e.state_bytes(), before, "{patch}");
    }
    e.p.specrun()
        .args([
            "state",
            "merge",
            path.to_str().unwrap(),
            r#"{"startedAt": "2026-01-01T00:00:00Z"}"#,
        ])
        .assert()
        .success();
}

fn lock_dir(e: &Exec) -> std::path::PathBuf {
    e.p.path("specs/demo/.specrun-state.json.lock")
}

fn doctor(e: &Exec) -> (Option<i32>, Value) {
    let out = e.p.specrun().args(["doctor", "--json"]).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "guard-counting")
        .cloned()
        .expect("a guard-counting check");
    (out.status.code(), check)
}

/// A directory at the lock path: every stop is uncounted, but each leaves a ledger line;
/// from the third in a row the guard says it cannot count (hook, status, doctor); once
/// fixed, the next stop counts the missed ones too.
#[test]
fn uncounted_stops_leave_a_trace_say_so_loudly_and_are_caught_up() {
    let e = Exec::new(TASKS, json!({}));
    std::fs::create_dir(lock_dir(&e)).unwrap();
    let before = e.state_bytes();
    for n in 1..=3 {
        let out = json_of(&e.hook("stop", stop_stdin(&e.p, "working", false, None)));
        let m = out["systemMessage"].as_str().unwrap();
        assert!(
            m.contains("this stop of spec 'demo' was not counted"),
            "{m}"
        );
        assert!(m.contains(".specrun/demo.uncounted.jsonl"), "{m}");
        assert_eq!(
            m.contains("THE GUARD CANNOT COUNT: 3 stops in a row"),
            n == 3,
            "{m}"
        );
        let ev = e.events().into_iter().last().unwrap();
        assert_eq!(
            (&ev["uncounted"], &ev["missedInARow"]),
            (&json!(true), &json!(n))
        );
    }
    assert_eq!(e.state_bytes(), before);
    let ledger = e.p.read(".specrun/demo.uncounted.jsonl");
    assert_eq!(ledger.lines().count(), 3);
    let status = e.p.specrun().args(["status"]).output().unwrap();
    assert!(
        said(&status).contains("guard     THE GUARD CANNOT COUNT: 3 stop(s) in a row"),
        "{}",
        said(&status)
    );
    let (code, check) = doctor(&e);
    assert_eq!(
        (code, &check["status"]),
        (Some(1), &json!("fail")),
        "{check}"
    );
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("is not a regular file"),
        "{check}"
    );

    // Fixed as doctor says: the next stop counts itself and the three it missed.
    std::fs::remove_dir(lock_dir(&e)).unwrap();
    let out = json_of(&e.hook("stop", stop_stdin(&e.p, "working", false, None)));
    assert!(
        out["systemMessage"]
            .as_str()
            .unwrap()
            .contains("3 earlier stop(s) of spec 'demo' could not be counted"),
        "{out}"
    );
    let s = e.state();
    assert_eq!(s["globalIteration"], 4);
    assert_eq!(s["guard"]["uncountedStops"], 3);
    assert_eq!(s["guard"]["uncountedOffset"], ledger.len());
    assert_eq!(doctor(&e).1["status"], "pass");
    assert_eq!(e.hook("stop", stop_stdin(&e.p, "working", false, None)), "");
    assert_eq!(e.state()["globalIteration"], 5);
}

/// The caps hold while nothing can be counted: past the global cap the uncounted stop
/// halts the session, though the halt cannot be written.
#[test]
fn the_global_cap_holds_while_stops_cannot_be_counted() {
    let e = Exec::new(
        TASKS,
        json!({"globalIteration": 1, "maxGlobalIterations": 2}),
    );
    std::fs::create_dir(lock_dir(&e)).unwrap();
    let first = json_of(&e.hook("stop", stop_stdin(&e.p, "x", false, None)));
    assert!(first.get("continue").is_none(), "{first}");
    let second = json_of(&e.hook("stop", stop_stdin(&e.p, "x", false, None)));
    assert_eq!(second["continue"], false, "{second}");
    assert!(
        second["stopReason"]
            .as_str()
            .unwrap()
            .contains("global iterations 3 > maxGlobalIterations 2"),
        "{second}"
    );
    // The ledger cannot be written either (.specrun is a file): still said, still a halt.
    let e = Exec::new(
        TASKS,
        json!({"globalIteration": 2, "maxGlobalIterations": 2}),
    );
    std::fs::create_dir(lock_dir(&e)).unwrap();
    e.p.write(".specrun", "not a directory");
    let out = json_of(&e.hook("stop", stop_stdin(&e.p, "x", false, None)));
    assert_eq!(out["continue"], false, "{out}");
    assert!(
        out["systemMessage"]
            .as_str()
            .unwrap()
            .contains("could not be recorded either"),
        "{out}"
    );
}

/// Lock contention past the hook's 500 ms bound: the stop is uncounted, traced, and
/// counted by the next stop.
#[test]
fn a_stop_lost_to_lock_contention_is_counted_by_the_next() {
    let e = Exec::new(TASKS, json!({}));
    let mut holder = hold_lock(&lock_dir(&e), 1);
    let out = json_of(&e.hook("stop", stop_stdin(&e.p, "x", false, None)));
    // The holder's shell keeps the lock until its sleep ends.
    holder.wait().ok();
    assert!(
        out["systemMessage"]
            .as_str()
            .unwrap()
            .contains("stayed locked"),
        "{out}"
    );
    assert_eq!(e.state()["globalIteration"], 0);
    e.hook("stop", stop_stdin(&e.p, "x", false, None));
    assert_eq!(e.state()["globalIteration"], 2);
}

fn inside_claude(p: &TempProject, args: &[&str]) -> Output {
    p.specrun()
        .args(args)
        .env("CLAUDECODE", "1")
        .output()
        .expect("specrun runs")
}

/// A model cannot forge the record with `state merge`: inside Claude Code the state file
/// takes only `executionDriver`; a person at a shell may still patch anything.
#[test]
fn state_merge_inside_claude_code_cannot_rewrite_the_guards_record() {
    let p = executing(THREE, &[]);
    let state = "specs/demo/.specrun-state.json";
    let before = std::fs::read(p.path(state)).unwrap();
    for patch in [
        r#"{"completed": true, "phase": "completed"}"#,
        r#"{"unverifiedClaims": []}"#,
        r#"{"checkedAtInit": ["1.1", "1.2", "1.3"]}"#,
        r#"{"acceptanceGate": false}"#,
        r#"{"halt": null}"#,
        r#"{"maxGlobalIterations": 1000, "executionDriver": "stop-hook"}"#,
    ] {
        let out = inside_claude(&p, &["state", "merge", state, patch]);
        assert!(!out.status.success(), "{patch} accepted: {}", said(&out));
        assert!(
            said(&out).contains("refused inside Claude Code"),
            "{}",
            said(&out)
        );
        assert_eq!(
            std::fs::read(p.path(state)).unwrap(),
            before,
            "{patch} changed the state"
        );
    }
    // The implement skill's one use of it stays open.
    let out = inside_claude(
        &p,
        &[
            "state",
            "merge",
            state,
            r#"{"executionDriver": "stop-hook"}"#,
        ],
    );
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(p.state("demo")["executionDriver"], "stop-hook");
    // A person, from a shell.
    ok(
        &p,
        &["state", "merge", state, r#"{"acceptanceGate": false}"#],
    );
    assert_eq!(p.state("demo")["acceptanceGate"], false);
}

/// `state init --restart` inside Claude Code does not lift a halt or a cancel, nor restart
/// a running execution (issue 23: its counters would start over).
#[test]
fn a_model_cannot_restart_its_way_out_of_a_halt() {
    let p = executing(THREE, &[]);
    ok(&p, &["cancel", "--spec", "demo"]);
    let out = inside_claude(&p, &["state", "init", "--spec", "demo", "--restart"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("a person decides at a shell"),
        "{}",
        said(&out)
    );
    assert_eq!(p.state("demo")["phase"], "cancelled");
    // Not halted: restarting is still a person's.
    ok(&p, &["resume", "--spec", "demo"]);
    let out = inside_claude(&p, &["state", "init", "--spec", "demo", "--restart"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    // A person may restart a halted one.
    ok(&p, &["cancel", "--spec", "demo"]);
    ok(&p, &["state", "init", "--spec", "demo", "--restart"]);
    assert_eq!(p.state("demo")["phase"], "execution");
}

/// A model that writes its own evidence entry by hand, as a bare value instead of a record
/// (`"passed"`, `true`, a list, a number), inside Claude Code: the state reads as broken,
/// never as evidence. `task complete` is refused without touching the files, re-running
/// `state init` over it is a person's decision, and the Stop hook halts the spec instead
/// of letting the loop go on.
#[test]
fn a_hand_written_evidence_entry_that_is_not_a_record_earns_nothing() {
    for forged in [json!("passed"), json!(true), json!(["ok"]), json!(0)] {
        let p = executing(THREE, &[]);
        ok(&p, &["task", "start", "1.2", "--spec", "demo"]);
        p.write("b.txt", "b\n");
        tick(&p, "1.2");
        let path = "specs/demo/.specrun-state.json";
        let mut state = p.state("demo");
        state["taskEvidence"] = json!({ "1.2": forged });
        p.write(path, &serde_json::to_string_pretty(&state).unwrap());
        let (before, tasks) = (p.read(path), p.read("specs/demo/tasks.md"));
        let inside = |args: &[&str]| {
            p.specrun()
                .args(args)
                .env("CLAUDECODE", "1")
                .output()
                .expect("specrun runs")
        };

        let complete = inside(&["task", "complete", "1.2", "--spec", "demo"]);
        assert_eq!(
            complete.status.code(),
            Some(2),
            "{forged}: {}",
            said(&complete)
        );
        assert!(
            said(&complete).contains("field `taskEvidence.1.2` must be an object"),
            "{forged}: {}",
            said(&complete)
        );
        let init = inside(&["state", "init", "--spec", "demo", "--session-id", SESSION]);
        assert_ne!(init.status.code(), Some(0), "{forged}: {}", said(&init));
        assert!(
            said(&init).contains("a person's decision"),
            "{forged}: {}",
            said(&init)
        );
        assert_eq!(
            (p.read(path), p.read("specs/demo/tasks.md")),
            (before, tasks)
        );

        let answer = json_of(&stop(&p, "Task 1.2 done.", false));
        assert_eq!(answer["continue"], false, "{forged}: {answer}");
        let reason = answer["stopReason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("state file cannot be read") && reason.contains("a person decides"),
            "{forged}: {reason}"
        );
    }
}
