//! `resume` and `cancel`.

use serde_json::json;

use crate::task_helpers::*;

#[test]
fn resume_when_nothing_is_halted_is_a_well_formed_no() {
    let p = project(TASKS, &[]);
    let before = p.read("specs/demo/.specrun-state.json");
    let (code, out, _) = run(&p, &["resume"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("halted: demo is not halted; nothing to resume"),
        "{out}"
    );
    assert_eq!(p.read("specs/demo/.specrun-state.json"), before);
}

#[test]
fn a_cap_halt_needs_its_flag_and_a_real_raise() {
    let p = project(TASKS, &[]);
    set_state(
        &p,
        json!({"globalIteration": 30, "halt": {"kind": "global-cap", "reason": "30 stops", "at": "x"}, "guard": {"stallStops": 3}}),
    );
    let (code, out, _) = run(&p, &["resume"]);
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "clearing it needs --raise-global: `specrun resume --spec demo --raise-global 60`"
        ),
        "{out}"
    );
    let (code, out, _) = run(&p, &["resume", "--raise-task", "9"]);
    assert_eq!(code, 1, "the wrong cap's flag cleared the halt: {out}");
    let (code, out, _) = run(&p, &["resume", "--raise-global", "30"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("--raise-global 30 does not lift the cap: 30 global iterations used"),
        "{out}"
    );
    let (code, out, _) = run(
        &p,
        &["resume", "--raise-global", "60", "--session-id", "sess-2"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("halt (global-cap) cleared; continue with: claude --resume sess-2 \"/specrun:implement\""), "{out}");
    let s = p.state(SPEC);
    assert!(s["halt"].is_null());
    assert_eq!(
        (s["maxGlobalIterations"].as_u64(), s["sessionId"].as_str()),
        (Some(60), Some("sess-2"))
    );
    assert_eq!(s["guard"]["stallStops"], 0);
}

#[test]
fn each_cap_names_its_flag() {
    for (kind, flag, raise) in [
        ("task-cap", "--raise-task", "9"),
        ("token-cap", "--raise-tokens", "999999"),
        ("time-cap", "--raise-minutes", "100000000"),
    ] {
        let p = project(TASKS, &[]);
        set_state(
            &p,
            json!({"halt": {"kind": kind, "reason": "r", "at": "x"}}),
        );
        let (code, out, _) = run(&p, &["resume"]);
        assert_eq!(code, 1);
        assert!(
            out.contains(&format!("clearing it needs {flag}")),
            "{kind}: {out}"
        );
        let (code, out, _) = run(&p, &["resume", flag, raise, "--json"]);
        assert_eq!(code, 0, "{kind}: {out}");
        let doc: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(doc["ok"], true);
    }
}

#[test]
fn a_stall_halt_clears_without_a_flag() {
    let p = project(TASKS, &[]);
    set_state(
        &p,
        json!({"halt": {"kind": "stall", "reason": "r", "at": "x"}, "guard": {"stallStops": 5, "blocks": 2}}),
    );
    let (code, out, _) = run(&p, &["resume"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("/specrun:implement inside Claude Code"),
        "{out}"
    );
    let s = p.state(SPEC);
    assert_eq!(s["guard"], json!({"stallStops": 0, "blocks": 2}));
}

#[test]
fn cancel_deletes_nothing_and_is_idempotent() {
    let p = project(TASKS, &[]);
    p.write("specs/demo/requirements.md", "reqs\n");
    let files_before = p.git_cmd(&["ls-files", "--others", "--cached"]);
    let (code, out, _) = run(&p, &["cancel"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("demo: cancelled; nothing was deleted"),
        "{out}"
    );
    let s = p.state(SPEC);
    assert_eq!(
        (s["phase"].as_str(), s["halt"]["kind"].as_str()),
        (Some("cancelled"), Some("cancelled"))
    );
    for f in files_before.lines() {
        assert!(p.path(f).exists(), "{f} was deleted");
    }
    let (code, out, _) = run(&p, &["cancel"]);
    assert_eq!((code, out.trim()), (0, "demo is already cancelled"));
    // The task verbs refuse while cancelled; resume undoes it.
    let (code, out, _) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 1);
    assert!(out.contains("phase: the execution is cancelled"), "{out}");
    assert_eq!(run(&p, &["resume"]).0, 0);
    assert_eq!(p.state(SPEC)["phase"], "execution");
    assert!(events(&p).iter().any(|e| e["event"] == "cancel"));
}

/// `specrun resume --raise-global 60`, then `/specrun:implement` (which runs `state init`
/// with its own flags): the execution continues with the raised cap and its counters.
#[test]
fn state_init_after_a_resume_continues_and_keeps_the_raise() {
    let p = project(
        TASKS,
        &["--session-id", "s1", "--max-global-iterations", "30"],
    );
    run(&p, &["task", "start", "1.1"]);
    run(&p, &["task", "fail", "1.1", "--reason", "red"]);
    set_state(
        &p,
        json!({"globalIteration": 30, "usage": {"outputTokens": 1234},
               "halt": {"kind": "global-cap", "reason": "30 stops", "at": "x"}}),
    );
    assert_eq!(run(&p, &["resume", "--raise-global", "60"]).0, 0);
    let (code, out, _) = run(
        &p,
        &[
            "state",
            "init",
            "--spec",
            SPEC,
            "--session-id",
            "s2",
            "--driver",
            "native-goal",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("execution continued at task 1/3"), "{out}");
    let s = p.state(SPEC);
    assert_eq!(
        (
            s["maxGlobalIterations"].clone(),
            s["globalIteration"].clone()
        ),
        (json!(60), json!(30))
    );
    assert_eq!(s["taskIteration"], 1);
    assert_eq!(s["usage"]["outputTokens"], 1234);
    assert_eq!(s["attempts"]["1.1"][0]["status"], "failed");
    assert_eq!(s["sessionId"], "s2");
    assert!(s["halt"].is_null());
    // A halted execution stays halted through init; --restart starts over on purpose.
    set_state(
        &p,
        json!({"halt": {"kind": "stall", "reason": "r", "at": "x"}}),
    );
    let (code, _, err) = run(&p, &["state", "init", "--spec", SPEC]);
    assert_eq!(code, 0);
    assert!(
        err.contains("halted (stall)") && err.contains("specrun resume --spec demo"),
        "{err}"
    );
    assert_eq!(p.state(SPEC)["halt"]["kind"], "stall");
    let (code, out, _) = run(&p, &["state", "init", "--spec", SPEC, "--restart"]);
    assert_eq!(code, 0);
    assert!(out.contains("execution initialised"), "{out}");
    let s = p.state(SPEC);
    assert_eq!(
        (
            s["globalIteration"].clone(),
            s["maxGlobalIterations"].clone()
        ),
        (json!(0), json!(30))
    );
    assert!(s["halt"].is_null());
}
