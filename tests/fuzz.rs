//! Property tests (a bounded fuzz run inside `cargo test`, so CI runs it): the tasks
//! parser on arbitrary markdown, every state value `state merge` accepts through the verbs'
//! decisions and through the built binary's verbs and hooks, and arbitrary hook input.
//! Case counts are fixed and small enough for CI; raise PROPTEST_CASES locally to fuzz
//! longer.

use std::process::Output;

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use specrun::api::model::state::{self, InitParams};
use specrun::api::model::tasks;
use specrun::api::protocol::{self, FailInput, Raises};

use crate::common::TempProject;

const TASKS: &str = "# Tasks\n\n## Phase 1\n- [ ] 1.1 First\n  - **Files**: src/a.rs, src/**/x.rs\n  - **Verify**: `true`\n- [ ] 1.2 [P] Second\n  - **Verify**: `true`\n  - **Depends**: 1.1\n- [x] 1.3 Third\n";

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Lines that look like a tasks.md, with the markers the parser cares about.
fn tasks_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "- \\[[ xX]\\] [0-9.]{0,6} ?(\\[[A-Z0-9 .]{0,6}\\] )?[a-z ]{0,10}",
        "  - \\*\\*(Do|Files|Verify|Depends|Done when|Commit)\\*\\*: [a-z0-9`.,* /]{0,12}",
        "#{1,3} [A-Za-z0-9: ]{0,12}",
        "```[a-z]{0,3}",
        // Nesting, GFM and Kiro boxes, letter ids, multi-line strings and heredocs.
        " {0,6}([-*+]|1\\.) \\[[ xX\\-\t]\\]\\*? (V|T0|VE)?[0-9.]{0,4} ?(\\[[A-Z0-9 .]{0,6}\\] )?[a-z ]{0,8}",
        "  - \\*\\*(Do|Verify)\\*\\*: `gh pr create --body \"\\$\\(cat <<'EOF'",
        " {0,2}(EOF|```|~~~)",
        "[a-z ]{0,5}`[a-z ]{0,5}",
        "\\PC{0,16}",
        Just(String::new()),
    ];
    (
        proptest::collection::vec(line, 0..24),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, crlf, bom)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let body = lines.join(eol);
            if bom {
                format!("\u{feff}{body}")
            } else {
                body
            }
        })
}

/// Any JSON value, with the shapes and extremes that break code that trusts its input.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![Just(0u64), Just(1), Just(5), Just(u64::MAX)].prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![
            Just(""),
            Just("running"),
            Just("done"),
            Just("failed"),
            Just("1.1"),
            Just("execution"),
            Just("2026-01-01T00:00:00Z"),
            Just("not a date"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(("[a-zA-Z.]{0,8}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Where a fuzzed value goes: state paths as key segments (`#0` = index 0 of an array).
const PATHS: &[&[&str]] = &[
    &["attempts"],
    &["attempts", "1.1"],
    &["attempts", "1.1", "#0"],
    &["attempts", "1.1", "#0", "n"],
    &["attempts", "1.1", "#0", "status"],
    &["attempts", "1.1", "#0", "startCommit"],
    &["attempts", "1.1", "#0", "fixTaskId"],
    &["fixTaskMap", "1.1"],
    &["fixTaskMap", "1.1", "attempts"],
    &["fixTaskMap", "1.1", "fixTaskIds"],
    &["taskEvidence", "1.1"],
    &["taskEvidence", "1.1", "exitCode"],
    &["taskEvidence", "1.1", "tree"],
    &["verificationBlocks", "execution"],
    &["verificationBlocks", "execution", "startedAt"],
    &["usage", "agents"],
    &["usage", "agents", "a1"],
    &["usage", "agents", "a1", "offset"],
    &["usage", "transcriptOffset"],
    &["usage", "outputTokens"],
    &["guard"],
    &["guard", "stallStops"],
    &["guard", "lastFingerprint"],
    &["unverifiedClaims"],
    &["halt"],
    &["halt", "kind"],
    &["halt", "at"],
    &["taskIteration"],
    &["taskIndex"],
    &["globalIteration"],
    &["maxTaskIterations"],
    &["maxGlobalIterations"],
    &["budget", "maxMinutes"],
    &["budget", "maxOutputTokens"],
    &["startedAt"],
    &["sessionId"],
    &["modificationMap"],
    &["recoveryMode"],
    &["name"],
];

/// `value` placed at `path`, as a patch.
fn at_path(path: &[&str], value: Value) -> Value {
    path.iter()
        .rev()
        .fold(value, |inner, seg| match seg.strip_prefix('#') {
            Some(_) => Value::Array(vec![inner]),
            None => json!({ *seg: inner }),
        })
}

fn state_patch() -> impl Strategy<Value = Value> {
    proptest::collection::vec((0..PATHS.len(), json_value()), 1..4).prop_map(|parts| {
        let mut patch = json!({});
        for (i, v) in parts {
            state::merge_into(&mut patch, &at_path(PATHS[i], v));
        }
        patch
    })
}

/// An executing state with a running attempt of 1.1, as the verbs leave it.
fn base_state() -> Value {
    let params = InitParams {
        name: "demo".into(),
        session_id: Some("s1".into()),
        recovery_mode: true,
        ..Default::default()
    };
    let mut doc = state::init_execution(None, &params, 0, 3, "2026-01-01T00:00:00Z");
    state::merge_into(
        &mut doc,
        &json!({"attempts": {"1.1": [{"n": 1, "status": "running", "startedAt": "2026-01-01T00:00:00Z", "startCommit": "abc"}]}}),
    );
    doc
}

/// Every pure verb decision on `doc`; a panic fails the property.
fn decide_everything(doc: &Value) {
    let list = tasks::parse(TASKS);
    let now = "2026-01-02T00:00:00Z";
    // What `state merge` accepts is a typed state: the verbs take that.
    let typed = state::State::from_value(doc).expect("an accepted state reads as State");
    for task in &list.tasks {
        let _ = protocol::start(&typed, &list, task, Some("abc"), now);
        for insert in [false, true] {
            let _ = protocol::fail(&FailInput {
                state: &typed,
                list: &list,
                task,
                reason: "boom",
                insert,
                head: Some("def"),
                now,
            });
        }
        let changed = vec!["src/a.rs".to_string(), "src/ax.rs".into()];
        for force in [false, true] {
            if let Ok(plan) = protocol::plan_rollback(&typed, task, Some("def"), &changed, force) {
                let _ = protocol::rollback_done(&typed, task, &plan, "refs/x", now);
            }
        }
    }
    let raises = Raises {
        global: Some(u64::MAX),
        task: Some(1),
        tokens: None,
        minutes: Some(0),
        usd: Some(f64::NAN),
    };
    let _ = protocol::resume(&typed, raises, f64::INFINITY, Some("s2"), now);
    let _ = protocol::cancel(&typed, now);
    let _ = typed.resume_command("demo");
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn the_tasks_parser_takes_any_text(text in tasks_text()) {
        let list = tasks::parse(&text);
        let counts = tasks::count(&text);
        prop_assert_eq!(counts.total, list.tasks.len());
        // The fast count and the full parse agree on every figure, the next task included.
        prop_assert_eq!(counts, list.counts());
        let next = list.next().map(|t| (t.label(), t.title.clone()));
        prop_assert_eq!(tasks::headline(&text), (counts, next));
        for task in &list.tasks {
            for checked in [false, true] {
                if let Some(next) = tasks::set_checked(&text, task, checked) {
                    // Ticking changes one box, never the number of tasks.
                    prop_assert_eq!(tasks::parse(&next).tasks.len(), list.tasks.len());
                }
            }
        }
    }

    #[test]
    fn every_state_merge_accepts_is_decided_without_panic(patch in state_patch()) {
        if let Ok(doc) = state::apply_patch(Some(base_state()), &patch, "fuzz") {
            decide_everything(&doc);
        }
    }
}

fn run(p: &TempProject, args: &[&str], stdin: &str) -> Output {
    p.specrun()
        .args(args)
        .write_stdin(stdin.to_string())
        .output()
        .unwrap()
}

/// The built binary: after any patch `state merge` accepts, no verb panics (exit 101) and
/// every hook exits 0 with at most one JSON line.
fn verbs_and_hooks_survive(p: &TempProject, patch: &Value) -> Result<(), TestCaseError> {
    let merged = run(
        p,
        &[
            "state",
            "merge",
            "specs/demo/.specrun-state.json",
            &patch.to_string(),
        ],
        "",
    );
    if !merged.status.success() {
        return Ok(());
    }
    let verbs: &[&[&str]] = &[
        &["task", "start", "1.1"],
        &["task", "complete", "1.1"],
        &["task", "fail", "1.1", "--reason", "r", "--insert"],
        &["task", "rollback", "1.1", "--force"],
        &["status"],
        &["snapshot"],
        &["resume", "--raise-task", "9"],
        &["last-mile"],
    ];
    for args in verbs {
        let out = run(p, args, "");
        prop_assert_ne!(
            out.status.code(),
            Some(101),
            "{:?} panicked after {}: {}",
            args,
            patch,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let root = p.root();
    for (event, stdin) in [
        (
            "stop",
            json!({"session_id": "s1", "cwd": root, "last_assistant_message": "ALL_TASKS_COMPLETE"}),
        ),
        (
            "subagent-stop",
            json!({"session_id": "s1", "cwd": root, "agent_type": "specrun-executor",
            "agent_id": "a1", "agent_transcript_path": root.join("t.jsonl"),
            "last_assistant_message": "TASK_COMPLETE 1.1"}),
        ),
        (
            "pre-tool-use",
            json!({"session_id": "s1", "cwd": root, "tool_name": "Agent"}),
        ),
        ("session-start", json!({"session_id": "s1", "cwd": root})),
    ] {
        let out = run(p, &["hook", event], &stdin.to_string());
        prop_assert_eq!(out.status.code(), Some(0), "hook {} after {}", event, patch);
        prop_assert!(out.stdout.iter().filter(|&&b| b == b'\n').count() <= 1);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn the_binary_takes_every_state_merge_accepts(patch in state_patch()) {
        let p = TempProject::git();
        p.spec("demo", TASKS);
        p.write("src/a.rs", "fn a() {}\n");
        p.write("t.jsonl", "{\"type\":\"assistant\"}\n");
        p.commit_all("spec");
        run(&p, &["state", "init", "--spec", "demo", "--session-id", "s1", "--recovery-mode"], "");
        p.write("specs/.current-spec", "demo\n");
        run(&p, &["task", "start", "1.1"], "");
        verbs_and_hooks_survive(&p, &patch)?;
    }

    #[test]
    fn a_hook_answers_any_input(input in prop_oneof![
        json_value().prop_map(|v| v.to_string()),
        "\\PC{0,64}",
        (json_value(), json_value(), json_value()).prop_map(|(a, b, c)| {
            json!({"session_id": a, "last_assistant_message": b, "transcript_path": c,
                   "stop_hook_active": true}).to_string()
        }),
    ], event in prop_oneof![Just("stop"), Just("subagent-stop"), Just("pre-tool-use"), Just("session-start")]) {
        let p = TempProject::git();
        p.spec("demo", TASKS);
        p.write("specs/.current-spec", "demo\n");
        run(&p, &["state", "init", "--spec", "demo"], "");
        let out = run(&p, &["hook", event], &input);
        prop_assert_eq!(out.status.code(), Some(0));
        let stdout = String::from_utf8_lossy(&out.stdout);
        prop_assert!(stdout.is_empty() || serde_json::from_str::<Value>(stdout.trim()).is_ok());
    }
}

/// The examples the fuzzing found: each is refused by `state merge` naming the field, and
/// a state file holding it (written by hand) is refused by the verbs, never a panic.
#[test]
fn malformed_attempts_are_refused_naming_the_field() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    p.commit_all("spec");
    run(
        &p,
        &["state", "init", "--spec", "demo", "--recovery-mode"],
        "",
    );
    run(&p, &["task", "start", "1.1", "--spec", "demo"], "");
    let good = p.read("specs/demo/.specrun-state.json");
    for bad in [json!([1]), json!([""]), json!([[]]), json!(3)] {
        p.write("specs/demo/.specrun-state.json", &good);
        let patch = json!({"attempts": {"1.1": bad}}).to_string();
        let out = run(
            &p,
            &["state", "merge", "specs/demo/.specrun-state.json", &patch],
            "",
        );
        assert_eq!(out.status.code(), Some(2), "{bad} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("attempts.1.1"), "{err}");
        // Written by hand instead: the verbs refuse it the same way.
        let mut doc = p.state("demo");
        doc["attempts"]["1.1"] = bad.clone();
        p.write("specs/demo/.specrun-state.json", &doc.to_string());
        let out = run(
            &p,
            &["task", "fail", "1.1", "--reason", "r", "--spec", "demo"],
            "",
        );
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("attempts.1.1"));
    }
}
