//! Issue 23, the guard's record: the execution is bound to its session by the hooks and
//! kept outside the spec (`$SPECRUN_STATE_DIR`), so the model cannot switch the guard off
//! through the files it can touch (class 3), launder ticked boxes through a new
//! `state init` (class 2), or keep tokens out of the count (class 6). Each attack runs with
//! `CLAUDECODE=1`, as in Claude Code's Bash tool; each has an honest control.

use std::process::Output;

use serde_json::{json, Value};

use crate::hook_common::*;

/// Two tasks; 1.1 is ticked in the committed plan (ticked before the session started).
const PLAN: &str = "# Tasks\n\n## Phase 1\n\
- [x] 1.1 Done before\n  - **Verify**: `true`\n\
- [ ] 1.2 Write b\n  - **Files**: b.txt\n  - **Verify**: `test -f b.txt`\n\
- [ ] 1.3 Write c\n  - **Files**: c.txt\n  - **Verify**: `test -f c.txt`\n";

/// A verb as the model runs it (inside Claude Code) or as a person does (at a shell).
fn run(p: &TempProject, inside: bool, args: &[&str]) -> Output {
    let mut cmd = p.specrun();
    cmd.args(args);
    if inside {
        cmd.env("CLAUDECODE", "1");
    } else {
        cmd.env_remove("CLAUDECODE");
    }
    cmd.output().expect("specrun runs")
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A hook run as Claude Code runs it (CLAUDECODE is set in its hooks too).
fn hook(p: &TempProject, event: &str, stdin: &Value) -> String {
    let out = p
        .specrun()
        .args(["hook", event])
        .env("CLAUDECODE", "1")
        .write_stdin(stdin.to_string())
        .output()
        .expect("hook runs");
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn transcript(p: &TempProject) -> String {
    p.root().join("transcript.jsonl").display().to_string()
}

fn session_start(p: &TempProject) {
    let stdin = json!({"session_id": SESSION, "transcript_path": transcript(p),
        "cwd": p.root(), "hook_event_name": "SessionStart", "source": "startup"});
    hook(p, "session-start", &stdin);
}

fn stop_with(p: &TempProject, transcript: &str) -> String {
    let stdin = json!({"session_id": SESSION, "transcript_path": transcript, "cwd": p.root(),
        "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "working", "background_tasks": []});
    hook(p, "stop", &stdin)
}

fn stop(p: &TempProject) -> String {
    stop_with(p, &transcript(p))
}

fn agent_call(p: &TempProject) -> String {
    let stdin = json!({"session_id": SESSION, "cwd": p.root(), "hook_event_name": "PreToolUse",
        "tool_name": "Agent", "tool_input": {"description": "next task", "prompt": "go"}});
    hook(p, "pre-tool-use", &stdin)
}

/// A committed spec `demo`, a session that started (SessionStart bound it), and the
/// execution the model starts in it with `state init` (inside Claude Code).
fn executing() -> TempProject {
    let p = TempProject::git();
    p.spec("demo", PLAN);
    p.commit_all("plan");
    append(transcript(&p).as_ref(), &assistant_line("m0", 10, 1000));
    session_start(&p);
    let out = run(
        &p,
        true,
        &["state", "init", "--spec", "demo", "--session-id", SESSION],
    );
    assert!(out.status.success(), "{}", said(&out));
    p
}

fn halted(answer: &str) -> Value {
    let v = json_of(answer);
    assert_eq!(v["continue"], false, "expected a halt: {answer}");
    v
}

/// A person accepts the files at a shell; the next Stop does not halt.
fn accept_and_go_on(p: &TempProject) {
    let ok = run(p, false, &["resume", "--accept-record", "--spec", "demo"]);
    assert!(ok.status.success(), "{}", said(&ok));
    let answer = stop(p);
    assert!(
        answer.is_empty() || json_of(&answer)["continue"] != false,
        "{answer}"
    );
}

fn state_path(p: &TempProject) -> std::path::PathBuf {
    p.path("specs/demo/.specrun-state.json")
}

// ---- class 3: the guard switched off ----

#[test]
fn an_honest_stop_with_the_files_intact_is_not_halted() {
    let p = executing();
    let answer = stop(&p);
    assert!(
        answer.is_empty() || json_of(&answer)["continue"] != false,
        "{answer}"
    );
    assert_eq!(p.state("demo")["globalIteration"], 1);
    assert!(agent_call(&p).is_empty() || !agent_call(&p).contains("deny"));
}

#[test]
fn removing_current_spec_halts_the_execution_and_denies_delegation() {
    let p = executing();
    std::fs::remove_file(p.path("specs/.current-spec")).unwrap();
    let v = halted(&stop(&p));
    assert!(
        v["stopReason"].as_str().unwrap().contains(".current-spec"),
        "{v}"
    );
    let deny = json_of(&agent_call(&p));
    assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");
    // The halt is kept: putting .current-spec back does not lift it.
    p.write("specs/.current-spec", "demo\n");
    halted(&stop(&p));
}

#[test]
fn pointing_current_spec_elsewhere_or_moving_the_spec_halts() {
    let p = executing();
    p.write("specs/other/tasks.md", PLAN);
    p.write("specs/.current-spec", "other\n");
    let v = halted(&stop(&p));
    assert!(v["stopReason"].as_str().unwrap().contains("'other'"), "{v}");

    let p = executing();
    std::fs::rename(p.path("specs/demo"), p.path("specs/moved")).unwrap();
    p.write("specs/.current-spec", "moved\n");
    halted(&stop(&p));
}

fn bash_call(p: &TempProject, command: &str) -> String {
    bash_call_of(p, SESSION, command)
}

/// A Bash call of session `caller` as the PreToolUse hook sees it.
fn bash_call_of(p: &TempProject, caller: &str, command: &str) -> String {
    let stdin = json!({"session_id": caller, "cwd": p.root(), "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": command}});
    hook(p, "pre-tool-use", &stdin)
}

fn denied(answer: &str) -> bool {
    !answer.is_empty() && json_of(answer)["hookSpecificOutput"]["permissionDecision"] == "deny"
}

/// The fast allow of a code-changing Bash call must not outrun the record: with
/// `.current-spec` pointed elsewhere or the spec moved (no Stop in between), the call goes
/// the whole way and is denied; read-only calls stay allowed.
#[test]
fn a_code_changing_bash_call_after_switching_the_spec_is_denied() {
    let p = executing();
    assert!(!denied(&bash_call(&p, "cargo test")), "honest control");
    p.write("specs/other/tasks.md", PLAN);
    p.write("specs/.current-spec", "other\n");
    assert!(
        denied(&bash_call(&p, "cargo test")),
        "switched .current-spec"
    );
    assert!(
        !denied(&bash_call(&p, "git status")),
        "read-only stays allowed"
    );

    let p = executing();
    std::fs::remove_file(p.path("specs/.current-spec")).unwrap();
    assert!(
        denied(&bash_call(&p, "cargo test")),
        "removed .current-spec"
    );

    let p = executing();
    std::fs::rename(p.path("specs/demo"), p.path("specs/moved")).unwrap();
    p.write("specs/.current-spec", "moved\n");
    assert!(denied(&bash_call(&p, "touch x")), "moved spec dir");
}

#[test]
fn a_deleted_garbled_or_rewound_state_halts() {
    let p = executing();
    std::fs::remove_file(state_path(&p)).unwrap();
    let v = halted(&stop(&p));
    assert!(v["stopReason"].as_str().unwrap().contains("deleted"), "{v}");

    let p = executing();
    std::fs::write(state_path(&p), "{ not json").unwrap();
    halted(&stop(&p));
    let deny = json_of(&agent_call(&p));
    assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");

    let p = executing();
    stop(&p);
    stop(&p);
    let mut s = p.state("demo");
    s["globalIteration"] = json!(0);
    std::fs::write(state_path(&p), serde_json::to_vec(&s).unwrap()).unwrap();
    let v = halted(&stop(&p));
    assert!(
        v["stopReason"].as_str().unwrap().contains("backwards"),
        "{v}"
    );
}

#[test]
fn editing_the_states_snapshot_of_ignored_files_halts_until_a_person_accepts() {
    let p = executing();
    let mut s = p.state("demo");
    assert!(s["ignoredFiles"].is_object(), "{s:#}");
    s["ignoredFiles"]["conftest.py"] = json!("0".repeat(64));
    std::fs::write(state_path(&p), serde_json::to_vec(&s).unwrap()).unwrap();
    let v = halted(&stop(&p));
    assert!(
        v["stopReason"].as_str().unwrap().contains("ignoredFiles"),
        "{v}"
    );
    let refused = run(&p, true, &["resume", "--accept-record", "--spec", "demo"]);
    assert_eq!(refused.status.code(), Some(1), "{}", said(&refused));
    halted(&stop(&p));
    accept_and_go_on(&p);
}

#[test]
fn only_a_person_at_a_shell_accepts_the_files_over_the_record() {
    let p = executing();
    std::fs::remove_file(p.path("specs/.current-spec")).unwrap();
    halted(&stop(&p));
    let refused = run(&p, true, &["resume", "--accept-record", "--spec", "demo"]);
    assert_eq!(refused.status.code(), Some(1), "{}", said(&refused));
    halted(&stop(&p));
    // A person puts .current-spec back and accepts: the execution goes on.
    p.write("specs/.current-spec", "demo\n");
    accept_and_go_on(&p);
}

#[test]
fn a_persons_state_merge_at_a_shell_is_followed_and_a_rewind_still_halts() {
    let p = executing();
    stop(&p);
    let file = "specs/demo/.specrun-state.json";
    // A person raises a cap by hand: the record follows (main halted: caps differ).
    let raise = run(
        &p,
        false,
        &["state", "merge", file, r#"{"maxGlobalIterations": 99}"#],
    );
    assert!(raise.status.success(), "{}", said(&raise));
    let answer = stop(&p);
    assert!(
        answer.is_empty() || json_of(&answer)["continue"] != false,
        "{answer}"
    );
    // Control: a merge that rewinds the counters is not followed: the next Stop halts.
    let rewind = run(
        &p,
        false,
        &["state", "merge", file, r#"{"globalIteration": 0}"#],
    );
    assert!(rewind.status.success(), "{}", said(&rewind));
    let v = halted(&stop(&p));
    assert!(
        v["stopReason"].as_str().unwrap().contains("backwards"),
        "{v}"
    );
}

// ---- class 2: laundering by losing the record ----

#[test]
fn re_initialising_after_deleting_the_state_is_refused_inside_claude_code() {
    let p = executing();
    let tasks = p.read("specs/demo/tasks.md").replace("- [ ]", "- [x]");
    p.write("specs/demo/tasks.md", &tasks);
    std::fs::remove_file(state_path(&p)).unwrap();
    let args = ["state", "init", "--spec", "demo", "--session-id", SESSION];
    let out = run(&p, true, &args);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("record"), "{}", said(&out));
    assert!(!state_path(&p).exists());
    // Garbled and forced: refused too.
    std::fs::write(state_path(&p), "{ garbled").unwrap();
    let forced = run(&p, true, &[&args[..], &["--force"]].concat());
    assert_eq!(forced.status.code(), Some(1), "{}", said(&forced));
}

#[test]
fn a_copied_ticked_spec_counts_no_box_inside_claude_code() {
    let p = executing();
    let ticked = p.read("specs/demo/tasks.md").replace("- [ ]", "- [x]");
    p.write("specs/copy/tasks.md", &ticked);
    let args = ["state", "init", "--spec", "copy", "--session-id", SESSION];
    let out = run(&p, true, &args);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(p.state("copy")["checkedAtInit"], json!([]));
}

#[test]
fn boxes_ticked_in_the_start_commit_or_by_a_person_at_a_shell_still_count() {
    // Inside Claude Code: 1.1 was ticked in the commit the session started from.
    let p = executing();
    assert_eq!(p.state("demo")["checkedAtInit"], json!(["1.1"]));
    // At a shell, a person's init keeps today's rule: every box ticked now counts.
    let q = TempProject::git();
    q.spec("demo", &PLAN.replace("- [ ] 1.2", "- [x] 1.2"));
    let out = run(&q, false, &["state", "init", "--spec", "demo"]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(q.state("demo")["checkedAtInit"], json!(["1.1", "1.2"]));
}

/// A committed spec `demo` whose session started (its start commit has 1.1 ticked), after
/// which the model ticks 1.2 and commits it.
fn ticked_and_committed_after_the_start() -> TempProject {
    let p = TempProject::git();
    p.spec("demo", PLAN);
    p.commit_all("plan");
    session_start(&p);
    let ticked = p
        .read("specs/demo/tasks.md")
        .replace("- [ ] 1.2", "- [x] 1.2");
    p.write("specs/demo/tasks.md", &ticked);
    p.commit_all("tick 1.2");
    p
}

#[test]
fn a_box_the_model_ticked_and_committed_counts_only_from_the_session_s_start_commit() {
    // Bound to its session: only 1.1, ticked in the commit the session started from.
    let p = ticked_and_committed_after_the_start();
    let args = ["state", "init", "--spec", "demo", "--session-id", SESSION];
    let out = run(&p, true, &args);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(p.state("demo")["checkedAtInit"], json!(["1.1"]));
    // Bound to no session: no start commit is known, so no box counts (main took HEAD,
    // the model's own commit, and counted 1.2).
    let q = ticked_and_committed_after_the_start();
    let out = run(&q, true, &["state", "init", "--spec", "demo"]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(q.state("demo")["checkedAtInit"], json!([]));
}

#[test]
fn an_init_bound_to_a_session_no_hook_saw_is_refused_inside_claude_code() {
    // A made-up session: its binding would take HEAD (the model's commit) as the start,
    // and this session's hooks would not guard the execution. Main accepted it.
    let p = ticked_and_committed_after_the_start();
    let args = ["state", "init", "--spec", "demo", "--session-id", "made-up"];
    let out = run(&p, true, &args);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("SessionStart hook has not seen session `made-up`"));
    assert!(!state_path(&p).exists());
    // Moving a running execution to a made-up session is refused the same way.
    let e = executing();
    let out = run(&e, true, &args);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert_eq!(e.state("demo")["sessionId"], SESSION);
    // Control: a person at a shell binds any session (before it starts, say).
    let out = run(&p, false, &args);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(p.state("demo")["checkedAtInit"], json!(["1.1", "1.2"]));
}

#[test]
fn binding_the_execution_to_another_real_session_is_denied_before_it_runs() {
    // Another session really started in this project, so `state init` alone would accept
    // its id, and this session's turns would go unguarded from then on.
    let p = ticked_and_committed_after_the_start();
    let other = json!({"session_id": "other-session", "transcript_path": transcript(&p),
        "cwd": p.root(), "hook_event_name": "SessionStart", "source": "startup"});
    hook(&p, "session-start", &other);
    let cheat = "specrun state init --spec demo --session-id other-session";
    let answer = json_of(&bash_call_of(&p, SESSION, cheat));
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{answer}");
    let reason = out["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("binds to session `other-session`"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("--session-id {SESSION}")),
        "{reason}"
    );
    let logged = std::fs::read_to_string(p.path(".specrun/events.jsonl")).unwrap();
    assert!(logged.contains("foreign-session"), "{logged}");
    // The `=` form and a wrapped shell are the same call; during an execution too.
    let e = executing();
    for cheat in [
        "specrun state init --spec demo --session-id=other-session --force",
        "sh -c 'specrun state init --spec demo --session-id other-session'",
    ] {
        let answer = json_of(&bash_call_of(&e, SESSION, cheat));
        assert_eq!(
            answer["hookSpecificOutput"]["permissionDecision"], "deny",
            "{cheat}: {answer}"
        );
    }
    // Control: this session's own id passes the hook untouched, and the init then works.
    let own = format!("specrun state init --spec demo --session-id {SESSION}");
    assert_eq!(bash_call_of(&p, SESSION, &own).trim(), "");
    let args = ["state", "init", "--spec", "demo", "--session-id", SESSION];
    let out = run(&p, true, &args);
    assert!(out.status.success(), "{}", said(&out));
}

// ---- class 6: tokens kept out of the count ----

#[test]
fn output_before_the_first_stop_counts_from_the_execution_start() {
    let p = executing();
    // Written after `state init`, before the execution's first Stop.
    append(transcript(&p).as_ref(), &assistant_line("m1", 5, 50));
    stop(&p);
    assert_eq!(p.state("demo")["usage"]["outputTokens"], 50);
}

#[test]
fn a_stop_with_another_transcript_does_not_move_the_offset() {
    let p = executing();
    append(transcript(&p).as_ref(), &assistant_line("m1", 5, 50));
    stop(&p);
    // The model runs `specrun hook stop` itself with an empty transcript of its own.
    let fake = p.root().join("fake.jsonl").display().to_string();
    append(fake.as_ref(), "");
    stop_with(&p, &fake);
    append(transcript(&p).as_ref(), &assistant_line("m2", 5, 70));
    stop(&p);
    let s = p.state("demo");
    assert_eq!(s["usage"]["outputTokens"], 120, "{s}");
    assert_eq!(s["usage"]["transcriptPath"], json!(transcript(&p)));
}

#[test]
fn a_continued_execution_in_a_new_session_counts_its_transcript_from_init() {
    let p = executing();
    append(transcript(&p).as_ref(), &assistant_line("m1", 5, 50));
    stop(&p);
    // A second session starts (its own transcript, with output from before the run) and
    // takes the execution on.
    let second = p.root().join("second.jsonl").display().to_string();
    append(second.as_ref(), &assistant_line("s0", 5, 1000));
    let start = json!({"session_id": "second", "transcript_path": second,
        "cwd": p.root(), "hook_event_name": "SessionStart", "source": "resume"});
    hook(&p, "session-start", &start);
    let args = ["state", "init", "--spec", "demo", "--session-id", "second"];
    let out = run(&p, true, &args);
    assert!(out.status.success(), "{}", said(&out));
    // Written after init, before the second session's first Stop: counted (main read the
    // new transcript from its end at that Stop, and counted none of it).
    append(second.as_ref(), &assistant_line("s1", 5, 30));
    let stdin = json!({"session_id": "second", "transcript_path": second, "cwd": p.root(),
        "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "working", "background_tasks": []});
    hook(&p, "stop", &stdin);
    let s = p.state("demo");
    assert_eq!(s["usage"]["outputTokens"], 80, "{s}");
}

#[test]
fn past_the_read_bound_tokens_are_estimated_and_said() {
    let p = executing();
    // 65 MiB of transcript after the offset: more than one read takes (64 MiB).
    let filler = format!(
        "{{\"type\":\"user\",\"pad\":\"{}\"}}\n",
        "x".repeat(1 << 20)
    );
    let path = transcript(&p);
    let mut big = String::with_capacity(66 << 20);
    for _ in 0..65 {
        big.push_str(&filler);
    }
    append(path.as_ref(), &big);
    append(path.as_ref(), &assistant_line("m1", 5, 50));
    stop(&p);
    let tokens = p.state("demo")["usage"]["outputTokens"].as_u64().unwrap();
    assert!(tokens >= 50 + (1 << 20) / 4, "{tokens}");
    let said = p.read(".specrun/events.jsonl");
    assert!(said.contains("estimatedOutputTokens"), "{said}");
}

#[test]
fn a_person_s_init_before_the_session_counts_the_session_s_first_turn() {
    // At a shell, before Claude Code starts: no hook has seen the session yet.
    let p = TempProject::git();
    p.spec("demo", PLAN);
    p.commit_all("plan");
    let args = ["state", "init", "--spec", "demo", "--session-id", SESSION];
    let out = run(&p, false, &args);
    assert!(out.status.success(), "{}", said(&out));
    // The session starts; its SessionStart gives the transcript, its first turn writes.
    session_start(&p);
    append(transcript(&p).as_ref(), &assistant_line("m1", 5, 40));
    // The model's own `hook stop` with another transcript is ignored.
    let fake = p.root().join("fake.jsonl").display().to_string();
    append(fake.as_ref(), &assistant_line("f1", 5, 0));
    stop_with(&p, &fake);
    stop(&p);
    assert_eq!(p.state("demo")["usage"]["outputTokens"], 40);
}

/// Removing the state's frozen plan halts; a person who checked the files and accepts them
/// at a shell lets the execution go on (the record takes the state's plan, here none),
/// instead of halting again at the next Stop.
#[test]
fn a_removed_plan_halts_until_a_person_accepts_and_then_goes_on() {
    let p = executing();
    let mut s = p.state("demo");
    assert!(s["plan"].is_object(), "{s:#}");
    s.as_object_mut().unwrap().remove("plan");
    std::fs::write(state_path(&p), serde_json::to_vec(&s).unwrap()).unwrap();
    let v = halted(&stop(&p));
    assert!(
        v["stopReason"].as_str().unwrap().contains("frozen plan"),
        "{v}"
    );
    accept_and_go_on(&p);
}
