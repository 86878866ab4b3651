//! Issue 24: a run is genuine. Test results come only from a test runner's run and only
//! from the results file the binary wrote for it (its digest is in the record); the
//! command runs without the runtimes' loader variables; a change to the tree while it runs
//! makes the record stale. Every command here runs as the model's (`CLAUDECODE=1`).

use serde_json::Value;

use crate::common::TempProject;
use crate::task_helpers::{project, SPEC};

const TASKS: &str = "# Tasks\n\n**Final check**: `npm test`\n\n## Phase 1\n- [ ] 1.1 Adder\n  - **Files**: lib/add.test.js\n  - **Verify**: `node --test`\n  - **Done when**:\n    - adding two numbers works\n    - the adder rejects strings\n";

const TEST_FILE: &str = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('adds', () => {\n  assert.strictEqual(1 + 1, 2);\n});\n\ntest('rejects strings', () => {\n  assert.throws(() => { throw new TypeError('x'); });\n});\n";

/// `specrun ARGS` as the model runs it, with `env` added to its environment.
fn model(p: &TempProject, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = p.specrun();
    // A `cargo test` in the temp project builds there, not in this suite's target dir.
    cmd.env("CLAUDECODE", "1")
        .env_remove("CARGO_TARGET_DIR")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn status_of(p: &TempProject, id: &str) -> String {
    let (_, out, err) = model(p, &["ac", "status", "--json"], &[]);
    let m: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    crate::acceptance_cli::status_of(&m, id)
}

fn verify(p: &TempProject, command: &str, env: &[(&str, &str)]) -> (i32, String) {
    let (code, _, err) = model(
        p,
        &["verify", "run", "--task", "1.1", "--command", command],
        env,
    );
    (code, err)
}

fn setup() -> TempProject {
    let p = project(TASKS, &[]);
    p.write("lib/add.test.js", TEST_FILE);
    p
}

#[test]
fn a_results_file_edited_after_the_run_proves_nothing() {
    let p = setup();
    let (code, err) = verify(&p, "node --test", &[]);
    assert_eq!(code, 0, "{err}");
    model(&p, &["ac", "map", "1.1/AC1", "--test", "adds"], &[]);
    model(&p, &["ac", "map", "1.1/AC2", "--test", "ghost"], &[]);
    // The honest control: the run's own results cover the mapped test that ran.
    assert_eq!(status_of(&p, "1.1/AC1"), "covered");
    assert_eq!(status_of(&p, "1.1/AC2"), "missing");
    // The model appends a passing result for a test that never ran.
    let path = format!("specs/{SPEC}/test-results/task-1.1.json");
    let mut doc: Value = serde_json::from_str(&p.read(&path)).unwrap();
    doc["report"]["results"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"name": "ghost", "outcome": "passed"}));
    p.write(&path, &doc.to_string());
    assert_eq!(status_of(&p, "1.1/AC2"), "missing");
    // The whole file no longer matches its digest: nothing in it counts.
    assert_eq!(status_of(&p, "1.1/AC1"), "missing");
}

#[test]
fn runner_shaped_lines_printed_by_another_program_are_no_test_results() {
    let p = setup();
    for fake in [
        "printf 'ok 1 - ghost\\n# pass 1\\n'",
        "echo 'test ghost ... ok'; echo 'test result: ok. 1 passed'",
        "sh -c \"printf 'ok 1 - ghost\\n'\"",
    ] {
        let (code, err) = verify(&p, fake, &[]);
        assert_eq!(code, 0, "{fake}: {err}");
        assert!(err.contains("runs no test runner"), "{fake}: {err}");
        let rec = &p.state(SPEC)["taskEvidence"]["1.1"];
        assert_eq!(
            rec["tests"]["runners"],
            serde_json::json!([]),
            "{fake}: {rec}"
        );
        model(&p, &["ac", "map", "1.1/AC1", "--test", "ghost"], &[]);
        assert_eq!(status_of(&p, "1.1/AC1"), "missing", "{fake}");
    }
    // The honest control: the runner itself, also through a package script (the plan's
    // final check, so its run counts in the task's slot too).
    p.write(
        "package.json",
        r#"{"scripts": {"test": "node --test lib/"}}"#,
    );
    let (code, err) = verify(&p, "npm test", &[]);
    assert_eq!(code, 0, "{err}");
    model(&p, &["ac", "map", "1.1/AC1", "--test", "adds"], &[]);
    assert_eq!(status_of(&p, "1.1/AC1"), "covered");
}

#[test]
fn a_preload_in_the_environment_does_not_reach_the_command() {
    let p = setup();
    p.write(
        "lib/add.test.js",
        &TEST_FILE.replace("1 + 1, 2", "1 + 1, 3"),
    );
    // Turns any exit into 0 (also in the test files' processes).
    p.write(
        "neuter.js",
        "process.on('exit', () => { process.exitCode = 0; });\n",
    );
    let neuter = format!("--require {}", p.path("neuter.js").display());
    let (code, err) = verify(&p, "node --test", &[("NODE_OPTIONS", neuter.as_str())]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("NODE_OPTIONS was removed"), "{err}");
    assert_eq!(p.state(SPEC)["taskEvidence"]["1.1"]["exitCode"], 1);
    for (name, value) in [
        ("PYTHONPATH", "/tmp/x"),
        ("LD_PRELOAD", ""),
        ("DYLD_INSERT_LIBRARIES", "x"),
    ] {
        let (_, err) = verify(
            &p,
            &format!("test -z \"${{{name}+set}}\""),
            &[(name, value)],
        );
        assert!(
            err.contains(&format!("{name} was removed")),
            "{name}: {err}"
        );
        assert_eq!(
            p.state(SPEC)["taskEvidence"]["1.1"]["exitCode"],
            0,
            "{name}"
        );
    }
    // The control: a command that sets the variable itself (a plan that needs it says so
    // in its Verify, where the record shows it) keeps it.
    let declared = format!("NODE_OPTIONS='{neuter}' node --test");
    let (code, err) = verify(&p, &declared, &[]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = verify(
        &p,
        "env NODE_OPTIONS=--no-warnings node -e 'process.exit(process.env.NODE_OPTIONS ? 0 : 1)'",
        &[("NODE_OPTIONS", neuter.as_str())],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("NODE_OPTIONS was removed"), "{err}");
}

#[test]
fn a_file_swapped_in_and_back_while_the_command_runs_makes_the_record_stale() {
    let p = setup();
    p.write("lib/add.js", "module.exports = (a, b) => a + b;\n");
    p.commit_all("adder");
    // The honest control: nothing changes while it runs.
    let (code, err) = verify(&p, "node --test", &[]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = model(&p, &["verify", "status", "--task", "1.1", "--json"], &[]);
    assert!(out.contains("\"fresh\""), "{out}");
    // The run sees another adder, and the tree is put back before the end fingerprint.
    let swap = "cp lib/add.js /tmp/.h && echo 'module.exports = () => 3;' > lib/add.js && node --test; cp /tmp/.h lib/add.js";
    let swap = swap.replace("/tmp/.h", &p.path("../held.js").display().to_string());
    let (code, err) = verify(&p, &swap, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("the tree changed while the command ran (lib/add.js)"),
        "{err}"
    );
    let rec = &p.state(SPEC)["taskEvidence"]["1.1"];
    assert_eq!(
        rec["touchedDuringRun"],
        serde_json::json!(["lib/add.js"]),
        "{rec}"
    );
    let (_, out, _) = model(&p, &["verify", "status", "--task", "1.1", "--json"], &[]);
    assert!(out.contains("\"stale\""), "{out}");
    // A background process (not the command's) that swaps a new file in and out.
    let bg = std::process::Command::new("sh")
        .arg("-c")
        .arg("sleep 0.3; echo 'x' > lib/extra.js; sleep 0.2; rm lib/extra.js")
        .current_dir(p.root())
        .spawn()
        .unwrap();
    let (code, err) = verify(&p, "sleep 1", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("lib/extra.js"), "{err}");
    let _ = bg.wait_with_output();
    let (_, out, _) = model(&p, &["verify", "status", "--task", "1.1", "--json"], &[]);
    assert!(out.contains("\"stale\""), "{out}");
    // What git ignores may change: a cache is no part of the tree.
    p.write(".gitignore", "cache/\n");
    p.commit_all("ignore");
    let (code, err) = verify(&p, "mkdir -p cache && echo 1 > cache/x && node --test", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("changed while"), "{err}");
    let (_, out, _) = model(&p, &["verify", "status", "--task", "1.1", "--json"], &[]);
    assert!(out.contains("\"fresh\""), "{out}");
}

/// Regression (e2e_15 under load): a sibling's state write in flight while a member's
/// Verify runs (the store's temp file beside the state, a lock sidecar) is bookkeeping, as
/// the fingerprint already says; the watch staled the record.
#[test]
fn bookkeeping_written_in_flight_while_the_command_runs_leaves_the_record_fresh() {
    let p = setup();
    p.write("lib/add.js", "module.exports = (a, b) => a + b;\n");
    p.commit_all("adder");
    let in_flight = format!(
        "t=specs/{SPEC}/..specrun-state.json.specrun-tmp-Ab12Cd; echo '{{' > $t; rm $t; \
         : > specs/{SPEC}/.progress.md.lock; t=specs/..current-spec.specrun-tmp-x9; echo x > $t; rm $t; \
         node --test"
    );
    let (code, err) = verify(&p, &in_flight, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("changed while"), "{err}");
    let (_, out, _) = model(&p, &["verify", "status", "--task", "1.1", "--json"], &[]);
    assert!(out.contains("\"fresh\""), "{out}");
    // The controls: a temp-looking name that is not the store's (no leading dot), and one
    // shaped like the store's but beside no bookkeeping file, are files of the tree.
    for name in ["lib/specrun-tmp-x.js", "lib/.add.js.specrun-tmp-x"] {
        let (code, err) = verify(&p, &format!("echo x > {name}; rm {name}; node --test"), &[]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("changed while"), "{name}: {err}");
    }
}

/// The executor's SubagentStop with `message`, as Claude Code sends it: the hook's stdout.
fn executor_stop(p: &TempProject, message: &str) -> String {
    let input = serde_json::json!({
        "session_id": "s-1", "transcript_path": "/nonexistent/t.jsonl", "cwd": p.root(),
        "permission_mode": "bypassPermissions", "agent_id": "agent-7",
        "agent_type": "specrun:spec-executor", "hook_event_name": "SubagentStop",
        "stop_hook_active": false, "agent_transcript_path": "/nonexistent/a.jsonl",
        "last_assistant_message": message,
    });
    hook(p, "subagent-stop", &input)
}

/// `specrun hook EVENT` inside Claude Code with `input` on stdin: its stdout.
fn hook(p: &TempProject, event: &str, input: &Value) -> String {
    let out = p
        .specrun()
        .env("CLAUDECODE", "1")
        .args(["hook", event])
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_claim_needs_a_run_of_the_program_it_names() {
    let p = setup();
    crate::task_helpers::set_state(
        &p,
        serde_json::json!({"sessionId": "s-1", "phase": "execution"}),
    );
    let claim = "All 2 tests passed and eslint is clean.";
    // An echo that prints libtest lines and whose text names the linter.
    let echo = "echo 'test adds ... ok'; echo 'test rejects ... ok'; echo 'test result: ok. 2 passed' # eslint";
    let (code, _, err) = model(
        &p,
        &["verify", "run", "--phase", "checks", "--command", echo],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let out = executor_stop(&p, claim);
    assert!(out.contains("\"block\""), "{out}");
    assert!(
        out.contains("no run at the current code reported 2 passed tests"),
        "{out}"
    );
    assert!(out.contains("no passing eslint run"), "{out}");
    // The honest control: the runner and the linter themselves ran.
    p.write("node_modules/.bin/eslint", "");
    crate::common::write_executable(&p.path("node_modules/.bin/eslint"), "#!/bin/sh\nexit 0\n");
    for (phase, command) in [
        ("tests", "node --test"),
        ("lint", "./node_modules/.bin/eslint lib"),
    ] {
        let (code, _, err) = model(
            &p,
            &["verify", "run", "--phase", phase, "--command", command],
            &[],
        );
        assert_eq!(code, 0, "{command}: {err}");
    }
    assert_eq!(executor_stop(&p, claim), "");
}

/// Issue 24 class 1: a real runner's run under a command the plan does not give (a phase
/// of the model's naming) is recorded and shown but covers no criterion; the task's own
/// Verify run does.
#[test]
fn a_run_of_a_command_the_plan_does_not_give_covers_no_criterion() {
    let p = setup();
    let (code, _, err) = model(
        &p,
        &[
            "verify",
            "run",
            "--phase",
            "mine",
            "--command",
            "node --test lib/",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    model(&p, &["ac", "map", "1.1/AC1", "--test", "adds"], &[]);
    assert_eq!(status_of(&p, "1.1/AC1"), "missing");
    let (_, out, _) = model(&p, &["ac", "status", "--json"], &[]);
    assert!(
        out.contains("neither a task's Verify nor the final check"),
        "{out}"
    );
    // The honest control: the task's frozen Verify.
    let (code, err) = verify(&p, "node --test", &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(status_of(&p, "1.1/AC1"), "covered");
}

fn node_test(name: &str) -> String {
    format!("const test = require('node:test');\ntest('{name}', () => {{}});\n")
}

fn shell(p: &TempProject, args: &[&str]) -> (i32, String) {
    let out = p
        .specrun()
        .env_remove("CLAUDECODE")
        .env_remove("CARGO_TARGET_DIR")
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// Issue 24 class 7: tests switched off without touching them. `state init` runs the final
/// check once; a baseline test that no longer runs in the final run (here renamed out of
/// the runner's glob) is `baseline-test-missing`, named, until it runs again or a person
/// accepts it; a new test that passes joins; an edited baseline file proves nothing.
#[test]
fn a_baseline_test_that_no_longer_runs_is_a_finding_only_a_person_accepts() {
    let p = two_node_tests();
    let (code, said) = shell(&p, &["state", "init", "--spec", SPEC]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("the baseline holds 2 test(s)"), "{said}");
    assert_eq!(p.state(SPEC)["testBaseline"]["tests"], 2);

    // The cheat: a test renamed out of the runner's reach; the final check still passes.
    std::fs::rename(p.path("lib/b.test.js"), p.path("lib/b.test.js.off")).unwrap();
    let (code, _, err) = model(&p, &["verify", "run", "--final"], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = model(&p, &["finish"], &[]);
    let said = format!("{out}{err}");
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("baseline-test-missing") && said.contains("`subs`"),
        "{said}"
    );
    assert!(
        !said.contains("plan accept"),
        "the person's flag is never named to the model: {said}"
    );
    assert!(!said.contains("`adds`"), "{said}");

    // The honest control: the test runs again.
    std::fs::rename(p.path("lib/b.test.js.off"), p.path("lib/b.test.js")).unwrap();
    model(&p, &["verify", "run", "--final"], &[]);
    let (_, out, err) = model(&p, &["finish"], &[]);
    assert!(
        !format!("{out}{err}").contains("baseline-test-missing"),
        "{out}{err}"
    );

    // A new test that passes in a final run joins.
    p.write("lib/c.test.js", &node_test("muls"));
    model(&p, &["verify", "run", "--final"], &[]);
    assert_eq!(p.state(SPEC)["testBaseline"]["tests"], 3);

    // Only a person accepts a test that no longer runs.
    std::fs::remove_file(p.path("lib/c.test.js")).unwrap();
    model(&p, &["verify", "run", "--final"], &[]);
    let accept = [
        "plan",
        "accept",
        "--missing-test",
        "muls",
        "--reason",
        "merged into adds",
    ];
    let (code, _, err) = model(&p, &accept, &[]);
    assert_ne!(code, 0, "{err}");
    assert!(!err.contains("plan accept"), "{err}");
    let (code, said) = shell(&p, &accept);
    assert_eq!(code, 0, "{said}");
    let (_, said) = shell(&p, &["finish"]);
    assert!(!said.contains("baseline-test-missing"), "{said}");

    // A baseline file edited by hand proves nothing.
    let file = format!("specs/{SPEC}/test-results/baseline.json");
    let edited = p.read(&file).replace("\"subs\":1", "\"subs\":0");
    p.write(&file, &edited);
    let (_, said) = shell(&p, &["finish"]);
    assert!(
        said.contains("the baseline of tests cannot be trusted"),
        "{said}"
    );
}

/// A final check that runs no runner specrun reads: the baseline is empty and says so.
#[test]
fn an_unknown_runner_gives_an_empty_baseline_that_says_so() {
    let p = TempProject::git();
    p.spec(
        SPEC,
        "# Tasks\n\n**Final check**: `make check`\n\n- [ ] 1.1 One\n  - **Verify**: `true`\n",
    );
    p.commit_all("spec");
    let (code, said) = shell(&p, &["state", "init", "--spec", SPEC]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("the baseline is empty"), "{said}");
    assert_eq!(p.state(SPEC)["testBaseline"]["tests"], 0);
}

/// A crate whose tests are named `adds` in the library and in one integration test binary
/// per file of `tests/`.
const ADDS_CRATE: &str = "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
const ADDS_RS: &str = "#[test]\nfn adds() {}\n";

/// Per-runner attribution: one final check runs cargo and node, and both name a test
/// `adds` (cargo's twice: the library and `tests/two.rs`). Each runner's `adds` is its own
/// baseline test: node's skipped is missing though cargo runs one `adds` more, and cargo's
/// gone is missing though node runs one more (by name alone both cheats met the count).
#[test]
fn a_test_name_two_runners_share_is_one_baseline_test_of_each() {
    let p = TempProject::git();
    p.spec(
        SPEC,
        "# Tasks\n\n**Final check**: `cargo test --offline && node --test`\n\n## Phase 1\n- [ ] 1.1 Adder\n  - **Verify**: `node --test`\n",
    );
    p.write(".gitignore", "target/\n");
    p.write("Cargo.toml", ADDS_CRATE);
    p.write("src/lib.rs", ADDS_RS);
    p.write("tests/two.rs", ADDS_RS);
    p.write("lib/a.test.js", &node_test("adds"));
    p.commit_all("spec");
    let (code, said) = shell(&p, &["state", "init", "--spec", SPEC]);
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains("the baseline holds 2 test(s) (3 run(s)) of cargo-test: 1, node-test: 1"),
        "{said}"
    );
    let file = format!("specs/{SPEC}/test-results/baseline.json");
    let base: Value = serde_json::from_str(&p.read(&file)).unwrap();
    assert_eq!(
        base["tests"],
        serde_json::json!({"cargo-test": {"adds": 2}, "node-test": {"adds": 1}}),
        "{base:#}"
    );
    let finish = |p: &TempProject| {
        let (code, out, err) = model(p, &["verify", "run", "--final"], &[]);
        assert_eq!(code, 0, "{out}{err}");
        let (_, out, err) = model(p, &["finish"], &[]);
        format!("{out}{err}")
    };

    // Node's `adds` skipped, a third cargo `adds` added: cargo's does not stand in.
    p.write(
        "lib/a.test.js",
        &node_test("adds").replace("test('adds'", "test.skip('adds'"),
    );
    p.write("tests/three.rs", ADDS_RS);
    let said = finish(&p);
    assert!(
        said.contains("baseline-test-missing") && said.contains("`adds` (node-test)"),
        "{said}"
    );
    assert!(!said.contains("cargo-test"), "{said}");

    // Node's back twice, cargo's down to one (the passing run above raised it to three):
    // node's second does not stand in.
    let twice = format!("{}test('adds', () => {{}});\n", node_test("adds"));
    p.write("lib/a.test.js", &twice);
    std::fs::remove_file(p.path("tests/two.rs")).unwrap();
    std::fs::remove_file(p.path("tests/three.rs")).unwrap();
    let said = finish(&p);
    assert!(
        said.contains("`adds` (cargo-test; passed 1 of the 3 times it ran)"),
        "{said}"
    );
    assert!(!said.contains("node-test"), "{said}");

    // The honest control: each runner runs its tests as often as they ran.
    p.write("tests/two.rs", ADDS_RS);
    p.write("tests/three.rs", ADDS_RS);
    let said = finish(&p);
    assert!(!said.contains("baseline-test-missing"), "{said}");
}

/// The Stop hook's answer for session `s-1`, as Claude Code sends it.
fn stop_answer(p: &TempProject) -> String {
    let input = serde_json::json!({
        "session_id": "s-1", "transcript_path": "/nonexistent/t.jsonl", "cwd": p.root(),
        "hook_event_name": "Stop", "stop_hook_active": false,
    });
    hook(p, "stop", &input)
}

/// A committed spec whose final check, `node --test`, runs two tests (`adds`, `subs`).
fn two_node_tests() -> TempProject {
    let p = TempProject::git();
    p.spec(
        SPEC,
        "# Tasks\n\n**Final check**: `node --test`\n\n## Phase 1\n- [ ] 1.1 Adder\n  - **Verify**: `node --test`\n",
    );
    p.write("lib/a.test.js", &node_test("adds"));
    p.write("lib/b.test.js", &node_test("subs"));
    p.commit_all("spec");
    p
}

/// An execution owned by session `s-1` whose final check (`node --test`) ran two tests at
/// `state init`.
fn baseline_execution() -> TempProject {
    let p = two_node_tests();
    let (code, said) = shell(
        &p,
        &["state", "init", "--spec", SPEC, "--session-id", "s-1"],
    );
    assert_eq!(code, 0, "{said}");
    assert_eq!(p.state(SPEC)["testBaseline"]["tests"], 2);
    p
}

/// The baseline of tests that must still run lives in the state, which the model can
/// edit: removing `testBaseline` (so no test is held to run), or rewriting the baseline
/// file with fewer tests and its digest in the state (so the file still "matches"), is a
/// mismatch with the guard's record and halts the execution at the next hook. The honest
/// control: a new test that joins through a final run of `verify run` halts nothing.
#[test]
fn a_baseline_removed_or_rewritten_by_hand_halts_the_execution() {
    let p = baseline_execution();
    assert!(!stop_answer(&p).contains("halted"), "{}", stop_answer(&p));
    p.write("lib/c.test.js", &node_test("muls"));
    let (code, _, err) = model(&p, &["verify", "run", "--final"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(p.state(SPEC)["testBaseline"]["tests"], 3, "{err}");
    let answer = stop_answer(&p);
    assert!(!answer.contains("halted"), "{answer}");

    let state_file = format!("specs/{SPEC}/.specrun-state.json");
    let mut state = p.state(SPEC);
    state.as_object_mut().unwrap().remove("testBaseline");
    p.write(&state_file, &serde_json::to_string_pretty(&state).unwrap());
    let answer = stop_answer(&p);
    assert!(
        answer.contains("halted") && answer.contains("`testBaseline`"),
        "{answer}"
    );
    // The halt names no person's verb, and none of specrun's verbs gets the model past it
    // inside Claude Code: not the merge, not a fresh init, not the person's accept.
    for verb in ["resume", "accept", "justify", "confirm", "raise", "restart"] {
        assert!(!answer.contains(verb), "{verb}: {answer}");
    }
    let patch = r#"{"testBaseline": null}"#;
    for args in [
        vec!["state", "merge", state_file.as_str(), patch],
        vec![
            "state",
            "init",
            "--spec",
            SPEC,
            "--session-id",
            "s-1",
            "--force",
        ],
        vec!["resume", "--accept-record", "--spec", SPEC],
    ] {
        let (code, _, err) = model(&p, &args, &[]);
        assert_ne!(code, 0, "{args:?}: {err}");
        assert!(
            err.contains("refused inside Claude Code"),
            "{args:?}: {err}"
        );
        assert!(stop_answer(&p).contains("halted"), "{args:?}");
    }
    // A person who checked the files accepts them at a shell: the record takes the state's
    // baseline (here none) and the next Stop goes on.
    let (code, said) = shell(&p, &["resume", "--accept-record", "--spec", SPEC]);
    assert_eq!(code, 0, "{said}");
    let answer = stop_answer(&p);
    assert!(!answer.contains("halted"), "{answer}");

    // The same cheat done carefully: a file holding one test, its own digest in the state.
    let p = baseline_execution();
    let file = format!("specs/{SPEC}/test-results/baseline.json");
    let fewer = p.read(&file).replace(",\"subs\":1", "");
    assert_ne!(fewer, p.read(&file));
    p.write(&file, &fewer);
    let sum = std::process::Command::new("sha256sum")
        .arg(p.path(&file))
        .output()
        .unwrap();
    let digest = String::from_utf8_lossy(&sum.stdout)[..64].to_string();
    let mut state = p.state(SPEC);
    state["testBaseline"]["digest"] = Value::String(digest);
    p.write(&state_file, &serde_json::to_string_pretty(&state).unwrap());
    let answer = stop_answer(&p);
    assert!(
        answer.contains("halted") && answer.contains("`testBaseline`"),
        "{answer}"
    );
}
