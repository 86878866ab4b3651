//! End to end against the real Claude Code: a scripted fake model drives the plugin in this
//! repository, offline. `scripts/test` runs these `e2e_…` tests once per pinned release
//! (2.1.197, the oldest supported, and 2.1.332, the current one; `SPECRUN_E2E_CLIENT` picks
//! one, or any other `claude` as a canary). Each scenario's script serves both clients: a result
//! is matched however it arrives (tool result or background notification), and where the
//! clients differ the test asserts the client's own path. Tests assert on the project's
//! files and on what the model was sent, not only on exit codes.
//!
//! A missing Claude Code fails these tests (see `e2e::runner::client_or_skip`).

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use crate::e2e;
use crate::e2e::fake_model::{bash, text, Agent, Rule};
use crate::e2e::runner::{plugin_root, Run, Session};
use crate::e2e::{
    commit_subject, delegate, delegate_as, executor_steps, honest_executor, notification_turns,
    stop_feedback, subagent_rules, waiting_rules, Harness, Mode, ALL_NOTES_VERIFY, DEMO_TASKS,
    LAUNCHED, OTHER_SESSION, SESSION,
};

const EXECUTOR: &str = "specrun:spec-executor";

/// Asserts that the init event's list `key` holds every one of `wanted`.
fn assert_lists(init: &Value, key: &str, wanted: &[&str]) {
    let listed: Vec<&str> = init[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for name in wanted {
        assert!(
            listed.contains(name),
            "{name} missing from init.{key}: {listed:?}"
        );
    }
}

/// `claude plugin ARGS` with the harness's HOME, from the checkout: its output, having
/// succeeded.
fn claude_plugin(h: &Harness, args: &[&str]) -> String {
    let out = Command::new(&h.client.path)
        .arg("plugin")
        .args(args)
        .current_dir(plugin_root())
        .env("HOME", h.home.path())
        .output()
        .expect("claude plugin");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "claude plugin {args:?} failed:\n{said}"
    );
    said
}

/// Scenario 1: the plugin loads — `claude plugin validate` passes on the marketplace and
/// the plugin, a marketplace install copies the plugin folder alone, and the init event
/// lists specrun's skills, commands and agents with no plugin_errors; its hooks run.
#[test]
fn e2e_1_plugin_loads() {
    let Some(h) = Harness::new() else {
        return;
    };

    // The marketplace (the checkout) and the plugin it points at (plugin/).
    for dir in [".", "plugin"] {
        let said = claude_plugin(&h, &["validate", dir]);
        assert!(said.contains("Validation passed"), "{said}");
        assert!(
            !said.to_lowercase().contains("warning"),
            "validate {dir} warned:\n{said}"
        );
    }
    // Installed from the checkout as a marketplace, only plugin/ is copied: no build
    // outputs (target/, .claude-code/) ride along into Claude Code's plugin cache.
    let checkout = plugin_root().display().to_string();
    claude_plugin(&h, &["marketplace", "add", &checkout]);
    claude_plugin(&h, &["install", "specrun@specrun"]);
    let cache = h.home.path().join(".claude/plugins/cache/specrun/specrun");
    let installed: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap_or_else(|e| panic!("{}: {e}", cache.display()))
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(installed.len(), 1, "{installed:?}");
    let copy = &installed[0];
    for shipped in [
        ".claude-plugin/plugin.json",
        "bin/specrun",
        "hooks/hooks.json",
        "skills",
    ] {
        assert!(
            copy.join(shipped).exists(),
            "{shipped} not installed in {copy:?}"
        );
    }
    for build in [
        "target",
        ".claude-code",
        ".test-runners",
        "src",
        "Cargo.toml",
    ] {
        assert!(!copy.join(build).exists(), "{build} copied into {copy:?}");
    }

    let run = h.run(
        vec![Rule::main().turn(0).reply([text("LOADED_OK")])],
        Session::new("say hello").session_id(SESSION),
    );
    assert_eq!(run.rc, Some(0), "{}", run.describe());
    let init = run.init();
    let plugins: Vec<&str> = init["plugins"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(plugins.contains(&"specrun"), "plugins: {plugins:?}");
    let errors = init["plugin_errors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(errors.is_empty(), "plugin_errors: {errors:?}");

    assert_lists(init, "skills", &["specrun:start", "specrun:implement"]);
    assert_lists(
        init,
        "slash_commands",
        &[
            "specrun:start",
            "specrun:implement",
            "specrun:status",
            "specrun:cancel",
            "specrun:resume",
        ],
    );
    assert_lists(
        init,
        "agents",
        &[
            "specrun:spec-executor",
            "specrun:qa-engineer",
            "specrun:spec-reviewer",
            "specrun:task-planner",
        ],
    );

    // The model was told about them too (the role:"system" listing message).
    let first = &run.requests_of(Agent::Main)[0];
    for listed in ["specrun:implement", "specrun:spec-executor"] {
        assert!(
            first.mid_system.contains(listed),
            "{listed} not in the listing the model got"
        );
    }

    // The hooks are wired: Stop ran our launcher and exited 0 with nothing to say (no spec
    // execution is active, the fast path).
    let stops = run.hook_responses("Stop");
    assert_eq!(stops.len(), 1, "{}", run.describe());
    assert_eq!(stops[0]["exit_code"], 0, "{}", run.describe());
    assert_eq!(run.result()["result"], "LOADED_OK");
    assert_eq!(run.terminal_reason(), "completed");
}

/// A coordinator that delegates one task to the executor and, once it reports
/// `TASK_COMPLETE`, ends its turn with `then_says`.
fn delegate_one_task_then_stop(task_id: &str, then_says: &str) -> Vec<Rule> {
    delegate_one_task_as(task_id, then_says, Mode::Foreground)
}

fn delegate_one_task_as(task_id: &str, then_says: &str, mode: Mode) -> Vec<Rule> {
    vec![
        Rule::main()
            .turn(0)
            .reply([delegate_as(EXECUTOR, task_id, mode)]),
        Rule::main()
            .result(&format!("TASK_COMPLETE {task_id}"))
            .reply([text(then_says)]),
    ]
}

fn stop_events(h: &Harness) -> Vec<Value> {
    h.events()
        .into_iter()
        .filter(|e| e["event"] == "stop")
        .collect()
}

fn assert_completed(h: &Harness, run: &Run) {
    h.completed_state(run);
    let count = h.task_count();
    assert_eq!(count["pending"], 0, "tasks count {count}");
    assert_eq!(count["completed"], 3, "tasks count {count}");
}

/// Scenario 2: `/specrun:implement demo` runs the whole protocol. The coordinator follows
/// the skill (snapshot, state init, one Agent call per task, phase evidence, the completion
/// line); each executor runs the verbs its agent file lists; the guard accepts the claim.
#[test]
fn e2e_2_implement_runs_a_three_task_spec_to_completion() {
    let Some(h) = Harness::new() else {
        return;
    };
    let root = h.root();
    let mut rules = vec![
        Rule::main()
            .turn(0)
            .reply([bash("specrun snapshot --spec demo")]),
        Rule::main().turn(1).reply([bash(&format!(
            "specrun state init --spec demo --session-id {SESSION} --driver native-goal"
        ))]),
        Rule::main()
            .turn(2)
            .reply([delegate("specrun:spec-executor", "1.1")]),
        Rule::main()
            .result("TASK_COMPLETE 1.1")
            .reply([delegate("specrun:spec-executor", "1.2")]),
        Rule::main()
            .result("TASK_COMPLETE 1.2")
            .reply([delegate("specrun:qa-engineer", "1.3")]),
    ];
    rules.extend(e2e::phase_check_then_complete(
        Rule::main().result("VERIFICATION_PASS 1.3"),
        &format!("specrun verify run --phase execution --command '{ALL_NOTES_VERIFY}'"),
        "All three tasks are done and verified.",
    ));
    rules.extend(honest_executor(
        &root,
        "1.1",
        Some(("notes/alpha.txt", "ALPHA\n")),
        "grep -q ALPHA notes/alpha.txt",
    ));
    rules.extend(honest_executor(
        &root,
        "1.2",
        Some(("notes/beta.txt", "BETA\n")),
        "grep -q BETA notes/beta.txt",
    ));
    rules.extend(subagent_rules(
        "1.3",
        0,
        executor_steps(&root, "1.3", None, ALL_NOTES_VERIFY),
        "Both notes check out.\nVERIFICATION_PASS 1.3",
    ));

    let run = h.run(
        rules,
        Session::new("/specrun:implement demo").session_id(SESSION),
    );

    assert_eq!(run.rc, Some(0), "{}", run.describe());
    assert_eq!(run.terminal_reason(), "completed", "{}", run.describe());
    assert!(
        stop_feedback(&run, Agent::Main).is_empty(),
        "the honest run was blocked:\n{}",
        run.describe()
    );
    assert_completed(&h, &run);
    assert_eq!(h.read("notes/alpha.txt"), "ALPHA\n");
    assert_eq!(h.read("notes/beta.txt"), "BETA\n");
    let progress = h.read("specs/demo/.progress.md");
    for line in [
        "- [x] 1.1 Write the alpha note",
        "- [x] 1.2 Write the beta note",
        "- [x] 1.3 Check both notes",
    ] {
        assert!(
            progress.contains(line),
            "no progress line {line:?} in:\n{progress}"
        );
    }
    for id in ["1.1", "1.2", "1.3"] {
        for stage in ["post-code", "post-test"] {
            let record = root.join(format!("specs/demo/critique/{id}-{stage}.json"));
            assert!(
                record.exists(),
                "{} missing\n{}",
                record.display(),
                run.describe()
            );
        }
    }
    let state = h.state();
    assert_eq!(
        state["verificationBlocks"]["execution"]["exitCode"], 0,
        "state: {state:#}"
    );
    let stops = stop_events(&h);
    let last = stops
        .last()
        .unwrap_or_else(|| panic!("no stop decision in events.jsonl\n{}", run.describe()));
    assert_eq!(last["session"], SESSION, "{last}");
    assert_eq!(
        (last["decision"].as_str(), last["rule"].as_str()),
        (Some("allow"), Some("completion-accepted")),
        "the completion was not accepted: {last}"
    );
    // Each executor's TASK_COMPLETE was checked by SubagentStop and accepted first time.
    let claims: Vec<(String, String)> = h
        .events()
        .iter()
        .filter(|e| e["event"] == "subagent-stop" && e["rule"] != "usage")
        .map(|e| {
            (
                e["taskId"].as_str().unwrap_or_default().to_string(),
                e["rule"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        claims,
        [
            ("1.1".to_string(), "claim-accepted".to_string()),
            ("1.2".to_string(), "claim-accepted".to_string())
        ],
        "events.jsonl subagent-stop decisions"
    );
    // Every subagent's transcript was read into the execution's usage (the token budget
    // counts the executors' work too).
    let agents = h.state()["usage"]["agents"].clone();
    assert_eq!(
        agents.as_object().map(|a| a.len()),
        Some(3),
        "usage.agents: {agents}"
    );
    // One commit per implementing task, with the task's Commit field as the subject, and
    // the commit did not stale the evidence it followed.
    let log = h.project.git_cmd(&["log", "--format=%s"]);
    for id in ["1.1", "1.2"] {
        assert!(
            log.lines().any(|l| l == commit_subject(id)),
            "no commit {:?} in:\n{log}",
            commit_subject(id)
        );
    }

    // What the model was sent: the skill text names every command the coordinator ran
    // (with this session's id substituted), and the executor's agent body names every verb.
    let first = &run.requests_of(Agent::Main)[0];
    for needle in [
        "specrun snapshot --spec",
        "specrun state init --spec",
        &format!("--session-id {SESSION}"),
        "specrun:spec-executor",
        "specrun:qa-engineer",
        "run_in_background: false",
        "specrun verify run --final",
        "ALL_TASKS_COMPLETE",
    ] {
        assert!(
            first.first_user.contains(needle),
            "the implement skill text lacks {needle:?}"
        );
    }
    let executor = run
        .requests_of(Agent::Sub)
        .into_iter()
        .find(|r| r.first_user.contains("[task 1.1]"))
        .expect("executor request");
    for needle in [
        "specrun task start <id> --spec <name>",
        "specrun verify run --task <id>",
        "specrun critique record --task <id> --stage post-code",
        "specrun critique record --task <id> --stage post-test",
        "git commit",
        "specrun task complete <id> --check",
        "TASK_COMPLETE <id>",
    ] {
        assert!(
            executor.system.contains(needle),
            "the executor's agent text lacks {needle:?}"
        );
    }
    let qa = run
        .requests_of(Agent::Sub)
        .into_iter()
        .find(|r| r.first_user.contains("[task 1.3]"))
        .expect("qa request");
    assert!(
        qa.system.contains("VERIFICATION_PASS <id>"),
        "qa-engineer body not sent"
    );
}

/// Scenario 3: `ALL_TASKS_COMPLETE` while a task is unchecked is refused: the very next
/// model request carries the Stop feedback naming that task; after the fix, the claim stands.
#[test]
fn e2e_3_premature_completion_is_refused_then_accepted_after_the_fix() {
    let Some(h) = Harness::new() else {
        return;
    };
    let root = h.root();
    h.project.write("notes/alpha.txt", "ALPHA\n");
    h.project.write("notes/beta.txt", "BETA\n");
    h.project.commit_all("notes");
    // Ticked before the execution starts: only boxes ticked during it must go through
    // `task complete`.
    h.specrun(&["tasks", "check", "1.1", "--spec", "demo"]);
    h.specrun(&["tasks", "check", "1.2", "--spec", "demo"]);
    h.init_execution(SESSION, &["--driver", "manual"]);
    // Hand-ticked tasks' criteria are uncovered too; this scenario is about 1.3.
    for id in ["1.1/AC1", "1.2/AC1"] {
        h.specrun(&[
            "ac",
            "confirm",
            id,
            "--reason",
            "the note was read by hand",
            "--spec",
            "demo",
        ]);
    }

    let mut rules = vec![
        Rule::main()
            .turn(0)
            .reply([text("Everything is finished.\nALL_TASKS_COMPLETE")]),
        Rule::main()
            .turn(1)
            .last_user("Stop hook feedback:")
            .reply([delegate("specrun:qa-engineer", "1.3")]),
    ];
    rules.extend(e2e::phase_check_then_complete(
        Rule::main().result("VERIFICATION_PASS 1.3"),
        &format!("specrun verify run --phase execution --command '{ALL_NOTES_VERIFY}'"),
        "Now it is finished.",
    ));
    rules.extend(subagent_rules(
        "1.3",
        0,
        executor_steps(&root, "1.3", None, ALL_NOTES_VERIFY),
        "VERIFICATION_PASS 1.3",
    ));

    let run = h.run(
        rules,
        Session::new("Finish the demo spec.").session_id(SESSION),
    );

    let main = run.requests_of(Agent::Main);
    assert!(
        main.len() >= 2,
        "the false claim ended the session\n{}",
        run.describe()
    );
    // 2.1.197 sends the feedback as the turn itself; 2.1.332 wraps it in a
    // <system-reminder> with a preamble: either way the reason follows this line.
    let next = &main[1].last_user;
    assert!(
        next.contains("Stop hook feedback:"),
        "request after the claim: {next:?}\n{}",
        run.describe()
    );
    assert!(
        next.contains("1 of 3 tasks unchecked (1.3)"),
        "the feedback does not name the unchecked task: {next:?}"
    );
    assert_eq!(
        stop_feedback(&run, Agent::Main).len(),
        1,
        "{}",
        run.describe()
    );
    assert_eq!(run.terminal_reason(), "completed", "{}", run.describe());
    assert!(run.result()["result"]
        .as_str()
        .unwrap_or_default()
        .ends_with("ALL_TASKS_COMPLETE"));
    assert_completed(&h, &run);
    let decisions: Vec<String> = stop_events(&h)
        .iter()
        .filter(|e| e["session"] == SESSION)
        .map(|e| e["decision"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        decisions.first().map(String::as_str),
        Some("block"),
        "events.jsonl stop decisions: {decisions:?}"
    );
    assert_eq!(
        decisions.len(),
        2,
        "events.jsonl stop decisions: {decisions:?}"
    );
    assert_ne!(
        decisions[1], "block",
        "events.jsonl stop decisions: {decisions:?}"
    );
}

/// Scenario 4: an execution at its global cap halts at the next Stop (the session ends
/// with no further model request, the halt is recorded), and `specrun resume
/// --raise-global` clears it.
#[test]
fn e2e_4_global_cap_halts_the_session_and_resume_raises_it() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(
        SESSION,
        &["--driver", "stop-hook", "--max-global-iterations", "2"],
    );
    h.merge_state(json!({"globalIteration": 2}));

    let run = h.run(
        vec![Rule::main().turn(0).reply([text("Pausing for a moment.")])],
        Session::new("Keep going with the demo spec.").session_id(SESSION),
    );

    assert_eq!(
        run.terminal_reason(),
        "stop_hook_prevented",
        "{}",
        run.describe()
    );
    assert_eq!(
        run.requests.len(),
        1,
        "a model request followed the halt\n{}",
        run.describe()
    );
    let stop = run.hook_responses("Stop");
    let said: Value = serde_json::from_str(stop[0]["stdout"].as_str().unwrap_or_default().trim())
        .unwrap_or_else(|e| panic!("Stop hook output is not JSON ({e})\n{}", run.describe()));
    assert_eq!(said["continue"], false, "{said}");
    assert!(
        said["stopReason"]
            .as_str()
            .unwrap_or_default()
            .contains("a person decides at a shell"),
        "{said}"
    );

    let stopped = run
        .transcript()
        .into_iter()
        .find(|l| l["attachment"]["type"] == "hook_stopped_continuation")
        .unwrap_or_else(|| {
            panic!(
                "no hook_stopped_continuation in the transcript\n{}",
                run.describe()
            )
        });
    assert!(stopped["attachment"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("a person decides at a shell"));

    let state = h.state();
    assert_eq!(state["halt"]["kind"], "global-cap", "state: {state:#}");
    assert_eq!(state["globalIteration"], 3, "state: {state:#}");
    let halt = stop_events(&h)
        .into_iter()
        .last()
        .expect("the halt is in events.jsonl");
    assert_eq!(halt["decision"], "halt", "{halt}");

    // A halt is lifted only by raising the cap that caused it.
    let refused = h.specrun_status(&["resume", "--spec", "demo"]);
    assert!(
        !refused.status.success(),
        "resume without --raise-global cleared a cap halt"
    );
    assert_eq!(h.state()["halt"]["kind"], "global-cap");
    h.specrun(&["resume", "--spec", "demo", "--raise-global", "10"]);
    let state = h.state();
    assert!(state["halt"].is_null(), "state: {state:#}");
    assert_eq!(state["maxGlobalIterations"], 10, "state: {state:#}");
}

/// Scenario 5: an executor that claims `TASK_COMPLETE` without doing the work is sent back
/// once by SubagentStop with what is missing; it then does the work and is accepted.
#[test]
fn e2e_5_lying_executor_is_reprompted_once_then_accepted() {
    lying_executor(Mode::Foreground);
}

/// Scenario 18 (issue 10): the same lying executor in the background. SubagentStop checks
/// its claim exactly as a foreground one's: sent back once, then accepted; the coordinator
/// gets the honest result in the notification.
#[test]
fn e2e_18_lying_background_executor_is_reprompted_once_then_accepted() {
    lying_executor(Mode::Background);
}

fn lying_executor(mode: Mode) {
    let Some(h) = Harness::new() else {
        return;
    };
    let root = h.root();
    h.init_execution(SESSION, &["--driver", "manual"]);
    let mut rules = delegate_one_task_as("1.1", "Task 1.1 is done.", mode);
    rules.extend([
        // The lie: no start, no edit, no evidence, no critique.
        Rule::sub()
            .first_user("[task 1.1]")
            .turn(0)
            .reply([text("All good.\nTASK_COMPLETE 1.1")]),
    ]);
    rules.extend(subagent_rules(
        "1.1",
        1,
        executor_steps(
            &root,
            "1.1",
            Some(("notes/alpha.txt", "ALPHA\n")),
            "grep -q ALPHA notes/alpha.txt",
        ),
        "Done for real.\nTASK_COMPLETE 1.1",
    ));
    rules.extend(waiting_rules());

    let run = h.run(
        rules,
        Session::new("Run task 1.1 of the demo spec.").session_id(SESSION),
    );

    let feedback = stop_feedback(&run, Agent::Sub);
    assert_eq!(
        feedback.len(),
        1,
        "the executor was not re-prompted exactly once\n{}",
        run.describe()
    );
    let executor_ids: std::collections::BTreeSet<_> = run
        .requests_of(Agent::Sub)
        .iter()
        .map(|r| r.agent_id.clone())
        .collect();
    assert_eq!(
        executor_ids.len(),
        1,
        "the re-prompt went to another agent: {executor_ids:?}"
    );
    let missing = feedback[0].to_lowercase();
    for item in ["1.1", "evidence", "critique"] {
        assert!(
            missing.contains(item),
            "the re-prompt does not name {item:?}: {}",
            feedback[0]
        );
    }
    assert_eq!(run.rc, Some(0), "{}", run.describe());
    assert_eq!(h.read("notes/alpha.txt"), "ALPHA\n");
    let count = h.task_count();
    assert_eq!(count["completed"], 1, "{count}\n{}", run.describe());
    let state = h.state();
    assert_eq!(
        state["taskEvidence"]["1.1"]["exitCode"], 0,
        "state: {state:#}"
    );
    let unverified = state["unverifiedClaims"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        unverified.is_empty(),
        "the honest second claim was recorded as unverified: {unverified:?}"
    );
    let claims: Vec<Value> = h
        .events()
        .into_iter()
        .filter(|e| e["event"] == "subagent-stop")
        .collect();
    let decisions: Vec<&str> = claims
        .iter()
        .map(|e| e["decision"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        decisions,
        ["block", "allow"],
        "events.jsonl subagent-stop decisions: {claims:?}"
    );
    // The coordinator got the honest report (the tool result, or the notification), and
    // only that one.
    let delivered: Vec<&String> = run
        .requests_of(Agent::Main)
        .into_iter()
        .flat_map(|r| r.last_delivered.iter())
        .filter(|t| t.contains("TASK_COMPLETE 1.1"))
        .collect();
    assert_eq!(delivered.len(), 1, "{}", run.describe());
    assert!(
        delivered[0].contains("Done for real."),
        "{}",
        run.describe()
    );
    assert_eq!(
        notification_turns(&run),
        usize::from(mode == Mode::Background),
        "{}",
        run.describe()
    );
}

/// Scenario 6: a second session stops freely while the first session's execution is
/// active, and the first session's state is untouched.
#[test]
fn e2e_6_another_session_is_never_driven_or_counted() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(SESSION, &["--driver", "stop-hook"]);
    let before = std::fs::read(h.state_path()).unwrap();

    let run = h.run(
        vec![Rule::main()
            .turn(0)
            .reply([text("Here is the answer to your question.")])],
        Session::new("What does this repository do?").session_id(OTHER_SESSION),
    );

    assert_eq!(run.rc, Some(0), "{}", run.describe());
    assert_eq!(run.terminal_reason(), "completed", "{}", run.describe());
    assert_eq!(
        run.requests.len(),
        1,
        "the other session was driven\n{}",
        run.describe()
    );
    assert!(
        stop_feedback(&run, Agent::Main).is_empty(),
        "{}",
        run.describe()
    );
    assert_eq!(
        run.result()["result"],
        "Here is the answer to your question."
    );
    assert_eq!(run.hook_responses("Stop").len(), 1, "{}", run.describe());
    let foreign: Vec<Value> = h
        .events()
        .into_iter()
        .filter(|e| e["session"] == OTHER_SESSION)
        .collect();
    assert!(
        foreign.is_empty(),
        "the guard recorded the other session: {foreign:?}"
    );
    let after = std::fs::read(h.state_path()).unwrap();
    assert!(
        before == after,
        "the first session's state changed:\n{}",
        String::from_utf8_lossy(&after)
    );
}

/// Scenario 7: with the stop-hook driver, a model that stops after task 1.1 is re-prompted
/// with task 1.2's brief — and only task 1.2's.
#[test]
fn e2e_7_stop_hook_driver_reprompts_with_the_next_task_only() {
    let Some(h) = Harness::new() else {
        return;
    };
    let root = h.root();
    h.init_execution(SESSION, &["--driver", "stop-hook"]);
    let mut rules = delegate_one_task_then_stop("1.1", "Task 1.1 is done; stopping here.");
    rules.extend([Rule::main()
        .turn(2)
        .last_user("Stop hook feedback:")
        .reply([text("Understood; I will continue later.")])]);
    rules.extend(honest_executor(
        &root,
        "1.1",
        Some(("notes/alpha.txt", "ALPHA\n")),
        "grep -q ALPHA notes/alpha.txt",
    ));

    let run = h.run(
        rules,
        Session::new("Start on the demo spec.").session_id(SESSION),
    );

    let feedback = stop_feedback(&run, Agent::Main);
    assert!(
        !feedback.is_empty(),
        "the stop-hook driver did not re-prompt\n{}",
        run.describe()
    );
    let brief = &feedback[0];
    for needle in [
        "1.2",
        "Write the beta note",
        "BETA_DO_MARKER",
        "notes/beta.txt",
        "grep -q BETA notes/beta.txt",
    ] {
        assert!(
            brief.contains(needle),
            "task 1.2's brief lacks {needle:?}: {brief}"
        );
    }
    for other in [
        "ALPHA_DO_MARKER",
        "Write the alpha note",
        "notes/alpha.txt",
        "Check both notes",
        "GAMMA_DO_MARKER",
    ] {
        assert!(
            !brief.contains(other),
            "the brief carries another task ({other:?}): {brief}"
        );
    }
    // Nothing progressed after the re-prompt, so the next stop is allowed (bounded).
    assert_eq!(feedback.len(), 1, "{}", run.describe());
    assert_eq!(run.terminal_reason(), "completed", "{}", run.describe());
    assert_eq!(h.task_count()["completed"], 1);
    let state = h.state();
    assert_eq!(state["phase"], "execution", "state: {state:#}");
    assert!(state["halt"].is_null(), "state: {state:#}");
}

/// Scenario 8: under Claude Code's native `/goal` (condition from `specrun goal`), an
/// evaluator that keeps answering "not met" does not keep the session alive past the
/// guard: the global cap's halt ends it.
#[test]
fn e2e_8_guard_halt_ends_a_native_goal_session() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(
        SESSION,
        &["--driver", "native-goal", "--max-global-iterations", "3"],
    );
    h.merge_state(json!({"globalIteration": 2}));
    let goal: Value = serde_json::from_slice(&h.specrun(&["goal", "--spec", "demo"]).stdout)
        .expect("goal prints JSON");
    let slash = goal["slashCommand"]
        .as_str()
        .expect("slashCommand")
        .to_string();
    assert!(slash.starts_with("/goal "), "{goal:#}");

    let not_met = r#"{"ok": false, "reason": "EVAL_NOT_MET: no ALL_TASKS_COMPLETE line yet"}"#;
    let rules = vec![
        Rule::side()
            .system("evaluating a stop-condition hook")
            .times(0)
            .reply([text(not_met)]),
        Rule::main()
            .turn(0)
            .reply([text("Working toward the goal.")]),
        Rule::main()
            .last_user("EVAL_NOT_MET")
            .times(0)
            .reply([text("Still working toward the goal.")]),
    ];

    let run = h.run(rules, Session::new(&slash).session_id(SESSION));

    let main = run.requests_of(Agent::Main);
    assert!(
        main[0].first_user.contains("Goal set:"),
        "/goal was not accepted\n{}",
        run.describe()
    );
    assert!(
        main.len() >= 2 && main[1].last_user.contains("EVAL_NOT_MET"),
        "the goal evaluator did not re-prompt\n{}",
        run.describe()
    );
    let evaluator = run.requests_of(Agent::Side);
    assert!(
        !evaluator.is_empty(),
        "no evaluator request\n{}",
        run.describe()
    );
    for r in &evaluator {
        assert!(r.last_user.contains("Condition:"), "{}", run.describe());
        assert_eq!(
            r.body["output_config"]["format"]["type"], "json_schema",
            "not the goal evaluator"
        );
    }
    assert_eq!(
        run.terminal_reason(),
        "stop_hook_prevented",
        "{}",
        run.describe()
    );
    assert_eq!(
        main.len(),
        2,
        "the session went on after the halt\n{}",
        run.describe()
    );
    let state = h.state();
    assert_eq!(state["halt"]["kind"], "global-cap", "state: {state:#}");
    let last = stop_events(&h)
        .into_iter()
        .last()
        .expect("stop decisions in events.jsonl");
    assert_eq!(last["decision"], "halt", "{last}");
    // Claude Code recorded the evaluator's verdicts: the goal was never met.
    let verdicts: Vec<Value> = run
        .transcript()
        .into_iter()
        .filter(|l| {
            l["attachment"]["type"] == "goal_status" && l["attachment"]["sentinel"].is_null()
        })
        .collect();
    assert!(
        !verdicts.is_empty(),
        "no goal_status verdict in the transcript"
    );
    assert!(
        verdicts.iter().all(|l| l["attachment"]["met"] == false),
        "{verdicts:?}"
    );
}

/// Scenario 9 (beyond the issue's eight): a coordinator that never ends its turn never
/// meets the Stop hook, so the caps also hold at delegation. With the token budget spent,
/// PreToolUse denies the `Agent` call (the `AskUserQuestion|Agent|Task` matcher really
/// matches it), no subagent runs, and the Stop that follows halts the session.
#[test]
fn e2e_9_spent_budget_denies_delegation_then_the_stop_halts() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(SESSION, &["--max-output-tokens", "100"]);
    h.merge_state(json!({"usage": {"outputTokens": 100}}));

    let run = h.run(
        vec![
            Rule::main()
                .turn(0)
                .reply([delegate("specrun:spec-executor", "1.1")]),
            Rule::main()
                .turn(1)
                .last_tool_result("do not delegate more work")
                .reply([text("The budget is spent; ending the turn.")]),
        ],
        Session::new("Continue the demo spec.").session_id(SESSION),
    );

    assert!(
        run.requests_of(Agent::Sub).is_empty(),
        "a subagent ran despite the spent budget\n{}",
        run.describe()
    );
    let denied = run.tool_result(None, "do not delegate more work");
    assert!(
        denied.contains("output tokens 100 >= budget.maxOutputTokens 100"),
        "{denied}"
    );
    assert_eq!(
        run.terminal_reason(),
        "stop_hook_prevented",
        "{}",
        run.describe()
    );
    let state = h.state();
    assert_eq!(state["halt"]["kind"], "token-cap", "state: {state:#}");
}

/// Scenario 10 (beyond the issue's eight): a `[P]` group runs as two concurrent executors.
/// Each records its evidence while the other edits its own declared file; neither is
/// staled by its sibling, both claims pass SubagentStop first time, and the run completes.
#[test]
fn e2e_10_parallel_group_members_complete_side_by_side() {
    let Some(h) = Harness::new() else {
        return;
    };
    let tasks = DEMO_TASKS
        .replace("- [ ] 1.1 Write", "- [ ] 1.1 [P] Write")
        .replace("- [ ] 1.2 Write", "- [ ] 1.2 [P] Write");
    let tasks = &tasks[..tasks.find("- [ ] 1.3").expect("demo has 1.3")];
    let tasks = e2e::with_final_check(tasks, ALL_NOTES_VERIFY);
    h.project.write("specs/demo/tasks.md", &tasks);
    h.project.commit_all("parallel demo");
    h.init_execution(SESSION, &[]);

    // Timing makes the race certain: 1.2 writes its file after 1.1 has recorded its
    // evidence and before 1.1 completes.
    let (run, state) = run_parallel_group(
        &h,
        &[
            ("1.1", "notes/alpha.txt", "ALPHA", "0", "3"),
            ("1.2", "notes/beta.txt", "BETA", "1.5", "0"),
        ],
        ALL_NOTES_VERIFY,
    );
    assert_eq!(
        state["taskEvidence"]["1.1"]["excludedPaths"],
        json!(["notes/beta.txt"]),
        "state: {state:#}"
    );
    let agents: std::collections::BTreeSet<_> = run
        .requests_of(Agent::Sub)
        .iter()
        .filter_map(|r| r.agent_id.clone())
        .collect();
    assert_eq!(agents.len(), 2, "two executors ran\n{}", run.describe());
}

/// One `[P]` member: (id, file, word, seconds before writing, seconds before committing).
type Member<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str);

/// Runs a `[P]` group as the coordinator protocol says (every member delegated with
/// `run_in_background: true` in one message, a waiting turn until every result is in, then
/// the phase evidence and the completion line) and asserts what every such run must show:
/// completed, each member's claim accepted first time by SubagentStop, and the background
/// path (`assert_background_path`). Returns the run and the final state.
fn run_parallel_group(h: &Harness, members: &[Member], verify: &str) -> (Run, Value) {
    let mut group = Rule::main();
    for (id, ..) in members {
        group = group.delivered(&format!("TASK_COMPLETE {id}"));
    }
    let mut rules = vec![Rule::main().turn(0).reply(
        members
            .iter()
            .map(|(id, ..)| delegate_as(EXECUTOR, id, Mode::Background)),
    )];
    rules.extend(e2e::phase_check_then_complete(
        group,
        &format!("specrun verify run --phase execution --command '{verify}' --spec demo"),
        "Every member is verified.",
    ));
    for (id, file, word, before_write, before_complete) in members {
        rules.extend(parallel_member(
            id,
            file,
            word,
            before_write,
            before_complete,
        ));
    }
    rules.extend(waiting_rules());

    let run = h.run(
        rules,
        Session::new("Run the demo spec.").session_id(SESSION),
    );

    assert_eq!(run.rc, Some(0), "{}", run.describe());
    let state = h.completed_state(&run);
    let mut claims: Vec<String> = h
        .events()
        .iter()
        .filter(|e| e["event"] == "subagent-stop" && e["rule"] != "usage")
        .map(|e| {
            format!(
                "{} {}",
                e["taskId"].as_str().unwrap_or("?"),
                e["rule"].as_str().unwrap_or("?")
            )
        })
        .collect();
    claims.sort();
    let wanted: Vec<String> = members
        .iter()
        .map(|(id, ..)| format!("{id} claim-accepted"))
        .collect();
    assert_eq!(claims, wanted, "{}", run.describe());
    let last = stop_events(h).pop().expect("stop decisions");
    assert_eq!(last["rule"], "completion-accepted", "{last}");
    assert_background_path(h, &run, members.len());
    (run, state)
}

/// A member of a `[P]` group that edits `file` after `before_write` seconds and commits it
/// `before_complete` seconds after its post-test critique.
fn parallel_member(
    id: &str,
    file: &str,
    word: &str,
    before_write: &str,
    before_complete: &str,
) -> Vec<Rule> {
    let critique = |stage: &str| e2e::critique_step(id, stage);
    let steps = vec![
        bash(&format!("specrun task start {id} --spec demo")),
        bash(&format!(
            "sleep {before_write}; mkdir -p notes && echo {word} > {file}"
        )),
        critique("post-code"),
        bash(&format!(
            "specrun verify run --task {id} --command 'grep -q {word} {file}' --spec demo"
        )),
        critique("post-test"),
        // A sibling may hold index.lock: retry, as commit-discipline says.
        bash(&format!(
            "sleep {before_complete}; for i in 1 2 3 4 5 6 7 8 9 10; do git add {file} && git commit -q -m 'feat(notes): {id}' -- {file} && break; sleep 0.3; done"
        )),
        bash(&format!(
            "specrun ac confirm {id}/AC1 --reason 'the Verify grep checks the note' --spec demo"
        )),
        bash(&format!("specrun task complete {id} --check --spec demo")),
    ];
    subagent_rules(id, 0, steps, &format!("Done.\nTASK_COMPLETE {id}"))
}

/// The path of a run whose coordinator delegated `members` executors with
/// `run_in_background: true` (which both pinned releases honour): every delegation returned
/// at once, every result came as a notification, and the coordinator's stops
/// while they worked were allowed as waiting, never counted as stalls.
fn assert_background_path(h: &Harness, run: &Run, members: usize) {
    let launched = run
        .requests_of(Agent::Main)
        .iter()
        .flat_map(|r| r.last_tool_results.iter())
        .filter(|t| t.contains(LAUNCHED))
        .count();
    assert_eq!(launched, members, "{}", run.describe());
    assert_eq!(
        e2e::notifications_delivered(run),
        members,
        "one notification per member (results finishing together may share a turn)\n{}",
        run.describe()
    );
    let waits: Vec<Value> = stop_events(h)
        .into_iter()
        .filter(|e| {
            e["rule"]
                .as_str()
                .unwrap_or_default()
                .starts_with("agents-running")
        })
        .collect();
    assert!(!waits.is_empty(), "no waiting stop\n{}", run.describe());
    for stop in &waits {
        assert_eq!(
            stop["stallStops"], 0,
            "a waiting stop counted as a stall: {stop}"
        );
    }
}

/// Three tasks of one `[P]` group, each writing its own note.
const PARALLEL_TASKS: &str = "# Tasks: demo

**Final check**: `grep -q ALPHA notes/alpha.txt && grep -q BETA notes/beta.txt && grep -q GAMMA notes/gamma.txt`

## Phase 1: Notes

- [ ] 1.1 [P] Write the alpha note
  - **Do**: Create notes/alpha.txt holding ALPHA
  - **Files**: notes/alpha.txt
  - **Done when**: notes/alpha.txt holds ALPHA
  - **Verify**: `grep -q ALPHA notes/alpha.txt`
  - **Commit**: `feat(notes): 1.1`
- [ ] 1.2 [P] Write the beta note
  - **Do**: Create notes/beta.txt holding BETA
  - **Files**: notes/beta.txt
  - **Done when**: notes/beta.txt holds BETA
  - **Verify**: `grep -q BETA notes/beta.txt`
  - **Commit**: `feat(notes): 1.2`
- [ ] 1.3 [P] Write the gamma note
  - **Do**: Create notes/gamma.txt holding GAMMA
  - **Files**: notes/gamma.txt
  - **Done when**: notes/gamma.txt holds GAMMA
  - **Verify**: `grep -q GAMMA notes/gamma.txt`
  - **Commit**: `feat(notes): 1.3`
";

const ALL_THREE_VERIFY: &str =
    "grep -q ALPHA notes/alpha.txt && grep -q BETA notes/beta.txt && grep -q GAMMA notes/gamma.txt";

/// Scenario 15 (issue 10): a 3-member `[P]` group whose executors run in the background
/// completes. The coordinator delegates the three in one message with
/// `run_in_background: true`, ends its turn, confirms each member on its notification and
/// finishes when all three are in. Each background executor's claim passes SubagentStop.
#[test]
fn e2e_15_background_parallel_group_of_three_completes() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.project.write("specs/demo/tasks.md", PARALLEL_TASKS);
    h.project.commit_all("three parallel notes");
    h.init_execution(SESSION, &[]);

    run_parallel_group(
        &h,
        &[
            ("1.1", "notes/alpha.txt", "ALPHA", "0", "0"),
            ("1.2", "notes/beta.txt", "BETA", "0.5", "0"),
            ("1.3", "notes/gamma.txt", "GAMMA", "1", "0"),
        ],
        ALL_THREE_VERIFY,
    );
    assert_eq!(h.task_count()["completed"], 3);
    for (file, word) in [("alpha", "ALPHA"), ("beta", "BETA"), ("gamma", "GAMMA")] {
        assert_eq!(h.read(&format!("notes/{file}.txt")), format!("{word}\n"));
    }
}

/// Scenario 16 (issue 10): a coordinator that ends its turn while an executor works. It
/// delegates task 1.1 leaving `run_in_background` to the client (background on 2.1.332)
/// and ends its turn under the stop-hook driver, which would otherwise re-prompt with task
/// 1.1's brief. The Stop hook tells it to wait instead (once), counts no stall (with
/// `--max-stall-stops 1` one counted stop would halt), the executor is delegated exactly
/// once, and the run finishes after the notification. On 2.1.197, which runs an unmarked
/// delegation in the foreground, the same script finishes without waiting.
#[test]
fn e2e_16_a_coordinator_stopping_while_an_executor_works_is_told_to_wait() {
    let Some(h) = Harness::new() else {
        return;
    };
    let root = h.root();
    let one_task = &DEMO_TASKS[..DEMO_TASKS.find("- [ ] 1.2").expect("demo has 1.2")];
    let one_task = e2e::with_final_check(one_task, "grep -q ALPHA notes/alpha.txt");
    h.project.write("specs/demo/tasks.md", &one_task);
    h.project.commit_all("one task");
    h.init_execution(
        SESSION,
        &["--driver", "stop-hook", "--max-stall-stops", "1"],
    );

    let mut rules = vec![
        Rule::main()
            .turn(0)
            .reply([delegate_as(EXECUTOR, "1.1", Mode::Default)]),
        Rule::main()
            .last_tool_result(LAUNCHED)
            .reply([text("Task 1.1 is delegated; stopping here.")]),
        Rule::main()
            .last_user("still working in the background")
            .reply([text("Understood: waiting for the notification.")]),
    ];
    rules.extend(e2e::phase_check_then_complete(
        Rule::main().result("TASK_COMPLETE 1.1"),
        "specrun verify run --phase execution --command 'grep -q ALPHA notes/alpha.txt' --spec demo",
        "Task 1.1 is verified.",
    ));
    // The executor takes a while, so the coordinator's stops happen while it works.
    let mut steps = executor_steps(
        &root,
        "1.1",
        Some(("notes/alpha.txt", "ALPHA\n")),
        "grep -q ALPHA notes/alpha.txt",
    );
    steps.insert(0, bash("sleep 3"));
    rules.extend(subagent_rules("1.1", 0, steps, "Done.\nTASK_COMPLETE 1.1"));

    let run = h.run(
        rules,
        Session::new("Start on the demo spec.").session_id(SESSION),
    );

    assert_eq!(run.rc, Some(0), "{}", run.describe());
    assert_eq!(run.terminal_reason(), "completed", "{}", run.describe());
    let state = h.completed_state(&run);
    let delegations = run.delegations().len();
    assert_eq!(
        delegations,
        1,
        "task 1.1 was delegated again\n{}",
        run.describe()
    );
    let executors: std::collections::BTreeSet<_> = run
        .requests_of(Agent::Sub)
        .iter()
        .filter_map(|r| r.agent_id.clone())
        .collect();
    assert_eq!(executors.len(), 1, "{}", run.describe());
    let feedback = stop_feedback(&run, Agent::Main);
    if h.client.background_by_default() {
        assert_eq!(feedback.len(), 1, "{}", run.describe());
        let told = &feedback[0];
        assert!(told.contains("end your turn and wait"), "{told}");
        assert!(told.contains("Execute task 1.1"), "{told}");
        assert!(
            !told.contains("Delegate it"),
            "re-prompted a delegation: {told}"
        );
        let rules: Vec<String> = stop_events(&h)
            .iter()
            .map(|e| e["rule"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            rules,
            [
                "agents-running-wait",
                "agents-running",
                "completion-accepted"
            ],
            "{}",
            run.describe()
        );
        assert_eq!(notification_turns(&run), 1, "{}", run.describe());
    } else {
        assert!(feedback.is_empty(), "{}", run.describe());
        assert_eq!(notification_turns(&run), 0, "{}", run.describe());
    }
    for stop in stop_events(&h) {
        assert_eq!(
            stop["stallStops"], 0,
            "a waiting stop counted as a stall: {stop}"
        );
    }
    assert!(state["halt"].is_null(), "state: {state:#}");
}

/// Scenario 17 (issue 10): once halted, no new work starts. The coordinator calls
/// `Workflow` (whose agents fire no PreToolUse for `Agent`): where the client offers the
/// tool (2.1.332) PreToolUse denies it with the halt's reason and no agent runs; where it
/// does not (2.1.197) the call fails with no agent either. The stop that follows halts.
#[test]
fn e2e_17_a_halted_execution_denies_a_workflow() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(SESSION, &[]);
    h.merge_state(json!({"halt": {"kind": "stall", "reason": "5 stops without progress", "at": "2026-01-01T00:00:00Z"}}));

    let workflow = e2e::fake_model::tool(
        "Workflow",
        json!({
            "description": "demo tasks",
            "script": "export const meta = { name: 'demo', description: 'demo tasks', phases: ['run'] };\nawait agent('[task 1.1] Execute task 1.1 of spec demo.', {});",
        }),
    );
    let run = h.run(
        vec![
            Rule::main().turn(0).reply([workflow]),
            // Then it tries to restart its way out of the halt.
            Rule::main().turn(1).reply([bash(&format!(
                "specrun state init --spec demo --restart --session-id {SESSION}"
            ))]),
            Rule::main()
                .turn(2)
                .reply([text("The workflow did not start; ending the turn.")]),
        ],
        Session::new("Continue the demo spec.").session_id(SESSION),
    );

    assert!(
        run.requests_of(Agent::Sub).is_empty(),
        "an agent ran in a halted execution\n{}",
        run.describe()
    );
    let result = run.requests_of(Agent::Main)[1].last_tool_results.join("\n");
    let offered = run.requests_of(Agent::Main)[0].body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Workflow"));
    if offered {
        assert!(
            result.contains("do not delegate more work (Workflow starts work)")
                && result.contains("halted (5 stops without progress)"),
            "the Workflow call was not denied by specrun: {result}\n{}",
            run.describe()
        );
        let denials: Vec<&Value> = run
            .hook_responses("PreToolUse")
            .into_iter()
            .filter(|e| {
                e["stdout"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("\"deny\"")
            })
            .collect();
        // The Workflow, then the restart: the PreToolUse guard denies a person's verb in Bash.
        assert_eq!(denials.len(), 2, "{}", run.describe());
    } else {
        assert!(
            !result.contains("Workflow launched"),
            "2.1.197 ran a workflow: {result}"
        );
    }
    assert_eq!(
        run.terminal_reason(),
        "stop_hook_prevented",
        "{}",
        run.describe()
    );
    let restart = run.requests_of(Agent::Main)[2].last_tool_results.join("\n");
    assert!(
        restart.contains("is a person's decision")
            && restart.contains("a person decides at a shell"),
        "the restart was not refused: {restart}"
    );
    assert_eq!(h.state()["halt"]["kind"], "stall");
    assert_eq!(h.state()["phase"], "execution");
}

/// Scenario 11 (issue 11): an executor ticks the boxes with `sed` while its attempt runs,
/// claims `TASK_COMPLETE` twice (recorded unverified), the coordinator runs a passing phase
/// verify and claims `ALL_TASKS_COMPLETE`: refused with each reason, and a repeat without
/// progress is let through without marking the spec complete.
#[test]
fn e2e_11_a_sed_ticked_run_is_not_accepted_as_complete() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(SESSION, &["--driver", "manual"]);
    let mut rules = vec![
        e2e::delegate_first("1.1"),
        Rule::main()
            .turn(1)
            .last_tool_result("TASK_COMPLETE 1.1")
            .reply([bash(
                "specrun verify run --phase execution --command 'grep -q ALPHA notes/alpha.txt' --spec demo",
            )]),
        Rule::main()
            .turn(2)
            .reply([text("Every task is done.\nALL_TASKS_COMPLETE")]),
        Rule::main()
            .turn(3)
            .last_user("Stop hook feedback:")
            .reply([text("It is all done.\nALL_TASKS_COMPLETE")]),
    ];
    rules.extend(subagent_rules(
        "1.1",
        0,
        vec![
            bash("specrun task start 1.1 --spec demo"),
            bash(
                "mkdir -p notes && echo ALPHA > notes/alpha.txt && sed -i 's/- \\[ \\] /- [x] /' specs/demo/tasks.md",
            ),
        ],
        "Done.\nTASK_COMPLETE 1.1",
    ));
    rules.push(
        Rule::sub()
            .first_user("[task 1.1]")
            .turn(3)
            .reply([text("Really done.\nTASK_COMPLETE 1.1")]),
    );

    let run = h.run(
        rules,
        Session::new("Run the demo spec.").session_id(SESSION),
    );

    assert_eq!(
        h.task_count()["pending"],
        0,
        "the executor's sed did not tick the boxes\n{}",
        run.describe()
    );
    let state = h.state();
    assert_eq!(
        state["unverifiedClaims"][0]["taskId"],
        "1.1",
        "state: {state:#}\n{}",
        run.describe()
    );
    assert_eq!(state["verificationBlocks"]["execution"]["exitCode"], 0);
    assert_ne!(
        state["phase"],
        "completed",
        "the sed run was accepted as complete\n{}",
        run.describe()
    );
    assert_ne!(state["completed"], true, "state: {state:#}");
    e2e::the_one_feedback(
        &run,
        Agent::Main,
        &[
            "task 1.1 is checked but attempt 1 is still running",
            "task 1.2 was ticked during this execution without `specrun task complete`",
            "task 1.3 was ticked during this execution without `specrun task complete`",
            "TASK_COMPLETE 1.1",
        ],
    );
    let rules: Vec<String> = stop_events(&h)
        .iter()
        .map(|e| e["rule"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        rules,
        ["completion-refused", "completion-refused-no-progress"],
        "{}",
        run.describe()
    );
}

/// Scenario 12 (issue 11): after `specrun cancel`, the coordinator's next `Agent`
/// delegation is denied (no executor runs) and the denial is in events.jsonl.
#[test]
fn e2e_12_a_delegation_after_cancel_is_denied() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(SESSION, &["--driver", "manual"]);
    let rules = vec![
        Rule::main()
            .turn(0)
            .reply([bash("specrun cancel --spec demo")]),
        Rule::main()
            .turn(1)
            .reply([delegate("specrun:spec-executor", "1.1")]),
        Rule::main()
            .turn(2)
            .last_tool_result("was cancelled")
            .reply([text("The spec was cancelled; stopping.")]),
    ];

    let run = h.run(
        rules,
        Session::new("Cancel the demo spec, then go on.").session_id(SESSION),
    );

    assert!(
        run.requests_of(Agent::Sub).is_empty(),
        "an executor ran after the cancel\n{}",
        run.describe()
    );
    let denied = run.tool_result(None, "was cancelled");
    assert!(denied.contains("a person decides at a shell"), "{denied}");
    assert_eq!(h.state()["phase"], "cancelled");
    let denial = h
        .events()
        .into_iter()
        .find(|e| e["event"] == "pre-tool-use" && e["decision"] == "deny")
        .unwrap_or_else(|| panic!("no denial in events.jsonl\n{}", run.describe()));
    assert_eq!(
        (&denial["rule"], &denial["tool"], &denial["session"]),
        (&json!("cancelled"), &json!("Agent"), &json!(SESSION))
    );
    assert_eq!(run.terminal_reason(), "completed", "{}", run.describe());
}

/// The fake model itself (no Claude Code needed): two requests on one keep-alive
/// connection, one body by Content-Length and one chunked, answered by the matching rules
/// as SSE in the event order of contract §1, and logged with the agent they came from.
#[test]
fn fake_model_serves_keep_alive_chunked_and_content_length_requests() {
    use std::io::{BufRead, BufReader, Read, Write};

    use e2e::fake_model::{tool, FakeModel};

    let model = FakeModel::start(vec![
        Rule::main()
            .turn(0)
            .reply([text("FIRST"), tool("Bash", json!({"command": "ls"}))]),
        Rule::sub().last_user("SECOND").reply([text("SUB_REPLY")]),
    ]);
    let addr = model.base_url().trim_start_matches("http://").to_string();
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    // A parsing bug shows as a timeout, not a hang.
    conn.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let main_body = json!({"stream": true, "tools": [{"name": "Bash"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "FIRST please"}]}]})
    .to_string();
    write!(
        conn,
        "POST /v1/messages?beta=true HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{main_body}",
        main_body.len()
    )
    .unwrap();
    let sub_body = json!({"stream": true, "tools": [{"name": "Bash"}],
        "messages": [{"role": "user", "content": "SECOND please"}]})
    .to_string();
    let (a, b) = sub_body.split_at(10);
    write!(
        conn,
        "POST /v1/messages HTTP/1.1\r\nx-claude-code-agent-id: agent7\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    )
    .unwrap();

    let mut reader = BufReader::new(conn);
    let mut read_response = || {
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        String::from_utf8(body).unwrap()
    };
    let first = read_response();
    let events: Vec<&str> = first
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(
        events,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert!(
        first.contains(r#""partial_json":"{\"command\":\"ls\"}""#),
        "{first}"
    );
    assert!(first.contains(r#""stop_reason":"tool_use""#), "{first}");
    let second = read_response();
    assert!(
        second.contains("SUB_REPLY") && second.contains(r#""stop_reason":"end_turn""#),
        "{second}"
    );

    let log = model.requests();
    assert_eq!(log.len(), 2);
    assert_eq!((log[0].agent, log[0].rule), (Agent::Main, Some(0)));
    assert_eq!((log[1].agent, log[1].rule), (Agent::Sub, Some(1)));
    assert_eq!(log[1].agent_id.as_deref(), Some("agent7"));
    assert_eq!(log[1].last_user, "SECOND please");
}

/// `scripts/install-claude-code` installs exactly the releases the binary states as its
/// supported range (`specrun::api::claude::releases::PINNED`), which are the ones this suite runs on.
#[test]
fn the_install_script_pins_the_supported_releases() {
    let out = Command::new(plugin_root().join("scripts/install-claude-code"))
        .arg("--list")
        .output()
        .expect("run scripts/install-claude-code --list");
    assert!(out.status.success());
    let listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(listed, specrun::api::claude::releases::PINNED);
    assert_eq!(
        specrun::api::claude::releases::OLDEST_SUPPORTED,
        specrun::api::claude::releases::PINNED[0]
    );
}

// ---- issue 14: proof that the work meets its criteria ---------------------------------

/// One task whose criteria are tested by `node --test`: the adder adds and subtracts.
pub(crate) const PROOF_TASKS: &str = "# Tasks: demo

**Final check**: `node --test`

## Phase 1: Adder

- [ ] 1.1 Adder tests
  - **Do**: Make lib/add.test.js pass
  - **Files**: lib/add.test.js, lib/add.js
  - **Done when**:
    - adding two numbers works
    - subtracting two numbers works
  - **Verify**: `node --test`
  - **Commit**: `test(adder): cover add and subtract`
";

pub(crate) const PASSING_TESTS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add, sub } = require('./add');\ntest('adds', () => {\n  assert.strictEqual(add(1, 1), 2);\n});\n\ntest('subtracts', () => {\n  assert.strictEqual(sub(2, 1), 1);\n});\n";

/// The adder the tests exercise, and the one the spec starts from (it neither adds nor
/// subtracts: an honest test of it fails before the task's change).
pub(crate) const ADDER: &str = "module.exports = { add: (a, b) => a + b, sub: (a, b) => a - b };\n";
pub(crate) const ADDER_BEFORE: &str = "module.exports = { add: () => 0, sub: () => 0 };\n";

/// A harness whose spec is PROOF_TASKS with lib/add.test.js committed as `tests` and
/// lib/add.js as `code`.
pub(crate) fn proof_harness(tests: &str, code: &str) -> Option<Harness> {
    let h = Harness::new()?;
    h.project.write("specs/demo/tasks.md", PROOF_TASKS);
    h.project.write("lib/add.test.js", tests);
    h.project.write("lib/add.js", code);
    h.project.commit_all("adder spec");
    h.init_execution(SESSION, &["--driver", "manual"]);
    Some(h)
}

/// The executor's steps for 1.1 with `content` as the test file, `maps` as its `ac map`
/// commands, ending with commit and `task complete`.
pub(crate) fn proof_executor_steps(
    root: &std::path::Path,
    content: &str,
    maps: &[&str],
) -> Vec<e2e::fake_model::Block> {
    let mut steps = vec![
        bash("specrun task start 1.1 --spec demo"),
        // Bash, not Write: Claude Code's Write refuses a file it has not read first.
        bash(&format!(
            "cat > {} <<'JS'\n{content}JS",
            root.join("lib/add.test.js").display()
        )),
        e2e::critique_step("1.1", "post-code"),
        bash("specrun verify run --task 1.1 --command 'node --test' --spec demo"),
        e2e::critique_step("1.1", "post-test"),
    ];
    steps.extend(maps.iter().map(|m| bash(m)));
    steps.push(bash(
        "git add lib/add.test.js && git commit -q -m 'test(adder): cover add and subtract' -- lib/add.test.js",
    ));
    steps.push(bash("specrun task complete 1.1 --check --spec demo"));
    steps
}

/// The honest executor of PROOF_TASKS over `ADDER_BEFORE`: red before, green after (the
/// tests first, which fail on the adder as it is, then the code that makes them pass), each
/// criterion mapped to its passing test, ending with `2 tests passed` and TASK_COMPLETE.
pub(crate) fn honest_adder_executor(root: &std::path::Path) -> Vec<Rule> {
    let mut steps = proof_executor_steps(
        root,
        PASSING_TESTS,
        &[
            "specrun ac map 1.1/AC1 --test adds --spec demo",
            "specrun ac map 1.1/AC2 --test subtracts --spec demo",
        ],
    );
    steps.splice(
        2..2,
        [
            bash("node --test; echo red before the code: $?"),
            bash(&format!(
                "cat > {} <<'JS'\n{ADDER}JS",
                root.join("lib/add.js").display()
            )),
        ],
    );
    subagent_rules("1.1", 0, steps, "2 tests passed.\nTASK_COMPLETE 1.1")
}

/// Issue 14: an executor whose subtract test fails deletes it, makes the rest pass and
/// claims success. `task complete` refuses naming the removed test (file and line), the
/// SubagentStop re-prompt names it too, and the task stays unchecked.
#[test]
fn e2e_14a_executor_deleting_a_failing_test_is_refused_with_the_finding() {
    let only_adds = PASSING_TESTS
        .split("\ntest('subtracts'")
        .next()
        .unwrap()
        .to_string()
        + "\n";
    executor_weakening_a_failing_test(
        &only_adds,
        "removed-test at lib/add.test.js:8: test `subtracts` was removed",
    );
}

/// Issue 14 (issue 11's skip marker, on the real clients): the same executor keeps the
/// failing test but marks it skipped, so the suite passes; refused the same way, naming
/// the skip marker's line.
#[test]
fn e2e_14c_executor_skipping_a_failing_test_is_refused_with_the_finding() {
    let skipped = failing_tests().replace("test('subtracts'", "test.skip('subtracts'");
    executor_weakening_a_failing_test(&skipped, "skip-marker at lib/add.test.js:8");
}

/// PASSING_TESTS with the subtract test failing.
fn failing_tests() -> String {
    PASSING_TESTS.replace("sub(2, 1), 1", "sub(2, 1), 5")
}

/// An executor facing `failing_tests()` writes `weakened` instead of fixing the code, maps both
/// criteria to the passing test and claims the task, twice. The refusal, the one re-prompt
/// and the claim kept as unverified all name `finding`; the box stays open.
fn executor_weakening_a_failing_test(weakened: &str, finding: &str) {
    let Some(h) = proof_harness(&failing_tests(), ADDER) else {
        return;
    };
    let root = h.root();
    let steps = proof_executor_steps(
        &root,
        weakened,
        &[
            "specrun ac map 1.1/AC1 --test adds --spec demo",
            "specrun ac map 1.1/AC2 --test adds --spec demo",
        ],
    );
    let rules = e2e::insisting_executor(
        steps,
        "All tests pass.\nTASK_COMPLETE 1.1",
        "All tests pass.\nTASK_COMPLETE 1.1",
    );

    let run = h.run(
        rules,
        Session::new("Run task 1.1 of the demo spec.").session_id(SESSION),
    );

    let refusal = run.tool_result(Some(Agent::Sub), "task complete 1.1 refused");
    assert!(refusal.contains(finding), "{refusal}");
    assert!(
        refusal.contains("waiving the finding") && !refusal.contains("task justify"),
        "{refusal}"
    );
    let feedback = stop_feedback(&run, Agent::Sub);
    assert_eq!(
        feedback.len(),
        1,
        "re-prompted exactly once\n{}",
        run.describe()
    );
    assert!(feedback[0].contains(finding), "{}", feedback[0]);
    assert_eq!(run.rc, Some(0), "{}", run.describe());
    assert!(
        h.read("specs/demo/tasks.md").contains("- [ ] 1.1"),
        "1.1 must stay unchecked"
    );
    let state = h.state();
    let kept = state["unverifiedClaims"].to_string();
    let kind = finding.split(' ').next().unwrap();
    assert!(kept.contains(kind), "state: {state:#}");
    let refused: Vec<Value> = h
        .events()
        .into_iter()
        .filter(|e| e["event"] == "task-complete" && e["refused"].is_array())
        .collect();
    assert!(
        refused
            .iter()
            .any(|e| e["refused"].to_string().contains("test-integrity")),
        "{refused:?}"
    );
}

/// Issue 25: an executor maps a criterion to a test that passes before the change (the
/// code it tests was already there): `task complete` runs the mapped tests at the
/// attempt's start commit and refuses, naming the criterion and that run.
#[test]
fn e2e_25b_executor_mapping_a_criterion_to_a_test_passing_before_is_refused() {
    let Some(h) = proof_harness("", ADDER) else {
        return;
    };
    let root = h.root();
    let steps = proof_executor_steps(
        &root,
        PASSING_TESTS,
        &[
            "specrun ac map 1.1/AC1 --test adds --spec demo",
            "specrun ac map 1.1/AC2 --test subtracts --spec demo",
        ],
    );
    let rules = e2e::insisting_executor(
        steps,
        "All tests pass.\nTASK_COMPLETE 1.1",
        "All tests pass.\nTASK_COMPLETE 1.1",
    );

    let run = h.run(
        rules,
        Session::new("Run task 1.1 of the demo spec.").session_id(SESSION),
    );

    let refusal = run.tool_result(Some(Agent::Sub), "task complete 1.1 refused");
    assert!(
        refusal.contains(
            "red-before: 1.1/AC1 (adding two numbers works) is not shown red before the change: at the start commit"
        ),
        "{refusal}"
    );
    assert!(
        refusal.contains("`node --test '--test-name-pattern=^(?:adds|subtracts)$'` exited 0"),
        "{refusal}"
    );
    assert!(refusal.contains("its test adds passed there"), "{refusal}");
    assert!(
        refusal.contains("1.1/AC2 (subtracting two numbers works)"),
        "{refusal}"
    );
    assert!(
        h.read("specs/demo/tasks.md").contains("- [ ] 1.1"),
        "1.1 must stay unchecked"
    );
    let refused: Vec<Value> = h
        .events()
        .into_iter()
        .filter(|e| e["event"] == "task-complete" && e["refused"].is_array())
        .collect();
    assert!(
        refused
            .iter()
            .any(|e| e["refused"].to_string().contains("red-before")),
        "{refused:?}"
    );
}

/// One task over a small cargo crate whose subtract test fails; `.gitattributes` marks every
/// Rust file `-diff`, which blinded git's own diff to the change.
const CARGO_TASKS: &str = "# Tasks: demo

**Final check**: `cargo test --offline`

## Phase 1: Adder

- [ ] 1.1 Fix subtract
  - **Do**: Make sub(a, b) return a - b
  - **Files**: src/lib.rs
  - **Done when**:
    - subtracting two numbers works
  - **Verify**: `cargo test --offline`
  - **Commit**: `fix(adder): subtract`
";

const CARGO_MANIFEST: &str = "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"src/lib.rs\"\n";

/// The crate as the spec starts: `sub` is wrong and its test says so.
const CARGO_LIB: &str = "pub fn sub(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn subtracts() {\n        assert_eq!(super::sub(3, 1), 2);\n    }\n}\n";

/// Issue 25: an executor facing the failing Rust test compiles it out with
/// `#[cfg(any())]` (cargo then runs 0 tests and passes) in a repository whose
/// `.gitattributes` says `*.rs -diff`. `task complete` reads the blobs itself and refuses,
/// naming the line; SubagentStop re-prompts with it; the box stays open.
#[test]
fn e2e_25a_executor_compiling_out_a_failing_test_under_a_minus_diff_line_is_refused() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.project.write("specs/demo/tasks.md", CARGO_TASKS);
    h.project.write(".gitattributes", "*.rs -diff\n");
    h.project.write(".gitignore", "target/\n");
    h.project.write("Cargo.toml", CARGO_MANIFEST);
    h.project.write("src/lib.rs", CARGO_LIB);
    h.project.commit_all("adder spec");
    h.init_execution(SESSION, &["--driver", "manual"]);
    let root = h.root();
    let compiled_out = CARGO_LIB.replacen("    #[test]\n", "    #[test]\n    #[cfg(any())]\n", 1);
    let steps = vec![
        bash("specrun task start 1.1 --spec demo"),
        bash(&format!(
            "cat > {} <<'RS'\n{compiled_out}RS",
            root.join("src/lib.rs").display()
        )),
        e2e::critique_step("1.1", "post-code"),
        bash("specrun verify run --task 1.1 --command 'cargo test --offline' --spec demo"),
        e2e::critique_step("1.1", "post-test"),
        bash("specrun ac map 1.1/AC1 --test subtracts --spec demo"),
        bash("git add src/lib.rs && git commit -q -m 'fix(adder): subtract' -- src/lib.rs"),
        bash("specrun task complete 1.1 --check --spec demo"),
    ];
    let rules = e2e::insisting_executor(
        steps,
        "All tests pass.\nTASK_COMPLETE 1.1",
        "All tests pass.\nTASK_COMPLETE 1.1",
    );

    let run = h.run(
        rules,
        Session::new("Run task 1.1 of the demo spec.").session_id(SESSION),
    );

    let finding = "skip-marker at src/lib.rs:8: test compiled out";
    let refusal = run.tool_result(Some(Agent::Sub), "task complete 1.1 refused");
    assert!(refusal.contains(finding), "{refusal}");
    assert!(!refusal.contains("task justify"), "{refusal}");
    let feedback = stop_feedback(&run, Agent::Sub);
    assert_eq!(feedback.len(), 1, "re-prompted once\n{}", run.describe());
    assert!(feedback[0].contains(finding), "{}", feedback[0]);
    assert_eq!(run.rc, Some(0), "{}", run.describe());
    assert!(
        h.read("specs/demo/tasks.md").contains("- [ ] 1.1"),
        "1.1 must stay unchecked"
    );
}

/// Issue 14: an executor that writes the tests, maps each criterion to one that passes
/// and completes; the coordinator verifies the whole suite and the guard accepts
/// completion with every criterion covered.
#[test]
fn e2e_14b_executor_mapping_every_criterion_to_passing_tests_completes() {
    let Some(h) = proof_harness("", ADDER_BEFORE) else {
        return;
    };
    let root = h.root();
    let mut rules = delegate_one_task_then_stop("1.1", "unused");
    rules.truncate(1);
    rules.extend([
        Rule::main()
            .turn(1)
            .last_tool_result("TASK_COMPLETE 1.1")
            .reply([bash(
                "specrun verify run --phase execution --command 'node --test' --spec demo",
            )]),
        Rule::main()
            .turn(2)
            .reply([bash("specrun ac status --spec demo")]),
        Rule::main().turn(3).reply([text(
            "Every criterion is covered by a passing test.\nALL_TASKS_COMPLETE",
        )]),
    ]);
    rules.extend(honest_adder_executor(&root));

    let run = h.run(
        rules,
        Session::new("Run the demo spec.").session_id(SESSION),
    );

    assert_eq!(run.rc, Some(0), "{}", run.describe());
    let state = h.completed_state(&run);
    assert!(state.get("unverifiedClaims").is_none(), "state: {state:#}");
    let status = run.tool_result(Some(Agent::Main), "1.1/AC2");
    assert!(
        status.contains(
            "2 covered by tests, 0 checked by their task's Verify, 0 manual, 0 proposed (waiting for a person), 0 uncovered"
        ),
        "{status}"
    );
    let claims: Vec<String> = h
        .events()
        .iter()
        .filter(|e| e["event"] == "subagent-stop" && e["rule"] != "usage")
        .map(|e| e["rule"].as_str().unwrap_or("?").to_string())
        .collect();
    assert_eq!(claims, ["claim-accepted"], "{}", run.describe());
}

/// Scenario 15a (issue 15): an executor that keeps working past `--max-task-tokens` has its
/// task failed by the guard at its SubagentStop, through the normal failure path (the
/// attempt failed, a fix task in recovery mode); it is told once to stop and report it.
#[test]
fn e2e_15a_an_executor_past_the_task_token_cap_has_its_task_failed() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(SESSION, &["--max-task-tokens", "2000", "--recovery-mode"]);
    let mut steps = vec![bash("specrun task start 1.1 --spec demo")];
    steps.extend((0..4).map(|i| bash(&format!("echo still working {i}"))));
    let mut rules = vec![
        Rule::main()
            .turn(0)
            .reply([delegate("specrun:spec-executor", "1.1")]),
        Rule::main()
            .turn(1)
            .last_tool_result("TASK_FAILED 1.1")
            .reply([text("Task 1.1 failed on its token cap.")]),
        Rule::sub()
            .first_user("[task 1.1]")
            .last_user("task-token-cap")
            .reply([text("TASK_FAILED 1.1: task-token-cap")]),
    ];
    // Each working turn reports 800 output tokens: 3,200 and more by the fifth.
    for (i, step) in steps.into_iter().enumerate() {
        rules.push(
            Rule::sub()
                .first_user("[task 1.1]")
                .turn(i)
                .output_tokens(800)
                .reply([step]),
        );
    }
    rules.push(
        Rule::sub()
            .first_user("[task 1.1]")
            .turn(5)
            .reply([text("Almost there.\nTASK_COMPLETE 1.1")]),
    );

    let run = h.run(
        rules,
        Session::new("Run task 1.1 of the demo spec.").session_id(SESSION),
    );

    let told: Vec<&str> = run
        .requests_of(Agent::Sub)
        .into_iter()
        .map(|r| r.last_user.as_str())
        .filter(|u| u.contains("Stop hook feedback:"))
        .collect();
    assert_eq!(told.len(), 1, "{}", run.describe());
    assert!(
        told[0].contains("spent") && told[0].contains(">= budget.maxTaskTokens 2000"),
        "{}",
        told[0]
    );
    let state = h.state();
    let attempt = &state["attempts"]["1.1"][0];
    assert_eq!(attempt["status"], "failed", "state: {state:#}");
    assert!(
        attempt["reason"]
            .as_str()
            .unwrap_or_default()
            .starts_with("task-token-cap: attempt 1 of task 1.1 spent"),
        "{attempt}"
    );
    assert_eq!(state["taskIteration"], 1);
    assert!(
        state["ledger"]["tasks"]["1.1"]["attemptTokens"]
            .as_u64()
            .unwrap_or(0)
            >= 3200,
        "{:#}",
        state["ledger"]
    );
    assert!(h
        .read("specs/demo/tasks.md")
        .contains("- [ ] 1.1.1 [FIX 1.1]"));
    let failed: Vec<Value> = h
        .events()
        .into_iter()
        .filter(|e| e["rule"] == "task-token-cap")
        .collect();
    assert_eq!(failed.len(), 1, "{:?}", h.events());
    assert_eq!(run.rc, Some(0), "{}", run.describe());
}

/// Scenario 15b (issue 15): with two tasks done and two left, the forecast passes the
/// output-token budget by more than 50 % while the budget is not yet spent: the Stop
/// halts the session (`continue:false`) with the figures and the raise that lets it finish.
#[test]
fn e2e_15b_a_forecast_past_the_budget_halts_the_session() {
    let Some(h) = Harness::new() else {
        return;
    };
    let tasks = DEMO_TASKS
        .replace("- [ ] 1.1 Write", "- [x] 1.1 Write")
        .replace("- [ ] 1.2 Write", "- [x] 1.2 Write")
        + "- [ ] 1.4 Write the delta note\n  - **Verify**: `true`\n";
    h.project.write("specs/demo/tasks.md", &tasks);
    h.project.commit_all("two tasks done");
    h.init_execution(SESSION, &["--max-output-tokens", "2500"]);
    let done = |start: &str, end: &str| json!([{"n": 1, "status": "done", "startedAt": start, "endedAt": end}]);
    let account = |out: u64| json!({"byModel": {"claude-x": {"input": 50, "output": out}}});
    h.merge_state(json!({
        "usage": {"outputTokens": 2000},
        "attempts": {"1.1": done("2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"),
                     "1.2": done("2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z")},
        "ledger": {"tasks": {"1.1": account(900), "1.2": account(1100)}}
    }));

    let run = h.run(
        vec![Rule::main().turn(0).reply([text("Next I delegate 1.3.")])],
        Session::new("Continue the demo spec.").session_id(SESSION),
    );

    assert_eq!(
        run.terminal_reason(),
        "stop_hook_prevented",
        "{}",
        run.describe()
    );
    let state = h.state();
    assert_eq!(state["halt"]["kind"], "forecast-cap", "state: {state:#}");
    let spent = state["usage"]["outputTokens"].as_u64().unwrap();
    assert!(
        spent < 2500,
        "the budget was spent before the halt: {spent}"
    );
    let halt = stop_events(&h).into_iter().last().expect("a stop event");
    assert_eq!(halt["decision"], "halt", "{halt}");
    let reason = halt["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("median 1000 × 2 task(s) left (from 2 completed), budget 2500"),
        "{reason}"
    );
    assert!(!reason.contains("specrun resume"), "{reason}");
    let raise = state["halt"]["raiseTo"].as_u64().unwrap().to_string();
    h.specrun(&["resume", "--spec", "demo", "--raise-tokens", &raise]);
    assert!(h.state()["halt"].is_null());
}

/// Issue 11/13 gates against a coordinator that cheats through its own tools: it patches
/// the record with `specrun state merge` (completed, the hand-ticked boxes made "earned"),
/// asks Claude Code for its own worktree, then claims completion. Every step is refused on
/// the client as it runs commands (CLAUDECODE is set by its Bash tool), and the spec is never
/// completed.
#[test]
fn e2e_19_a_coordinator_forging_the_record_is_refused() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(SESSION, &["--driver", "manual"]);
    let state_path = "specs/demo/.specrun-state.json";
    let rules = vec![
        Rule::main().turn(0).reply([bash(&format!(
            "sed -i 's/- \\[ \\] /- [x] /' specs/demo/tasks.md && specrun state merge {state_path} '{{\"checkedAtInit\": [\"1.1\", \"1.2\", \"1.3\"], \"completed\": true}}'"
        ))]),
        Rule::main().turn(1).reply([e2e::fake_model::tool(
            "Agent",
            json!({"description": "Execute task 1.1",
                   "prompt": "[task 1.1] Execute task 1.1 of spec demo.",
                   "subagent_type": EXECUTOR, "isolation": "worktree"}),
        )]),
        Rule::main()
            .turn(2)
            .reply([text("Every task is done.\nALL_TASKS_COMPLETE")]),
        Rule::main()
            .turn(3)
            .last_user("Stop hook feedback:")
            .reply([text("Stopping here.")]),
    ];
    let run = h.run(
        rules,
        Session::new("Run the demo spec.").session_id(SESSION),
    );

    let state = h.state();
    assert_ne!(
        state["completed"],
        true,
        "state: {state:#}\n{}",
        run.describe()
    );
    assert_ne!(state["phase"], "completed", "{}", run.describe());
    assert_eq!(
        state["checkedAtInit"],
        json!([]),
        "the merge went through\n{}",
        run.describe()
    );
    let merge_result = run
        .requests_of(Agent::Main)
        .iter()
        .flat_map(|r| r.last_tool_results.iter())
        .any(|t| t.contains("state merge refused inside Claude Code"));
    assert!(
        merge_result,
        "the merge was not refused\n{}",
        run.describe()
    );
    let denied: Vec<Value> = h
        .events()
        .into_iter()
        .filter(|e| e["event"] == "pre-tool-use" && e["rule"] == "native-isolation")
        .collect();
    assert_eq!(denied.len(), 1, "{}", run.describe());
    assert!(
        run.requests.iter().all(|r| r.agent != Agent::Sub),
        "an executor ran in Claude Code's worktree\n{}",
        run.describe()
    );
    let feedback = stop_feedback(&run, Agent::Main);
    assert!(
        feedback.first().is_some_and(
            |f| f.contains("ticked during this execution without `specrun task complete`")
        ),
        "{}",
        run.describe()
    );
}

/// Scenario 20 (issue 11, on the real clients): an executor whose note is wrong records
/// evidence with another command than the task's Verify (`--command true`), tries the
/// person's override (`--accept-other`) from inside Claude Code, and claims the task. The
/// evidence is marked as not the task's, the override is refused, `task complete` refuses,
/// the SubagentStop sends the claim back once naming the command it ran, and the insisted
/// claim is kept for the coordinator as unverified; the box stays open.
#[test]
fn e2e_20_an_executor_verifying_with_another_command_is_refused() {
    let Some(h) = Harness::new() else {
        return;
    };
    let root = h.root();
    h.init_execution(SESSION, &["--driver", "manual"]);
    let mut rules = delegate_one_task_as("1.1", "Task 1.1 reported back.", Mode::Background);
    let steps = vec![
        bash("specrun task start 1.1 --spec demo"),
        e2e::write_file(&root, "notes/alpha.txt", "nothing yet\n"),
        e2e::critique_step("1.1", "post-code"),
        bash("specrun verify run --task 1.1 --command true --spec demo"),
        bash("specrun verify run --task 1.1 --command true --accept-other 'the grep is flaky' --spec demo"),
        e2e::critique_step("1.1", "post-test"),
        bash("specrun task complete 1.1 --check --spec demo"),
    ];
    let n = steps.len();
    rules.extend(subagent_rules(
        "1.1",
        0,
        steps,
        "Verified.\nTASK_COMPLETE 1.1",
    ));
    // Sent back: it insists.
    rules.push(
        Rule::sub()
            .first_user("[task 1.1]")
            .turn(n + 1)
            .reply([text("It passes.\nTASK_COMPLETE 1.1")]),
    );
    rules.extend(waiting_rules());

    let run = h.run(
        rules,
        Session::new("Run task 1.1 of the demo spec.").session_id(SESSION),
    );

    let sub = Some(Agent::Sub);
    let other = run.tool_result(sub, "is not its Verify command");
    assert!(
        other.contains("`true` is not its Verify command `grep -q ALPHA notes/alpha.txt`"),
        "{other}"
    );
    run.tool_result(sub, "a person's decision");
    let refusal = run.tool_result(sub, "task complete 1.1 refused");
    assert!(
        refusal.contains("taskEvidence[1.1] is not the task's (it ran `true`"),
        "{refusal}"
    );
    let feedback = stop_feedback(&run, Agent::Sub);
    assert_eq!(feedback.len(), 1, "{}", run.describe());
    assert!(
        feedback[0].contains("evidence for task 1.1 does not count: it ran `true`"),
        "{}",
        feedback[0]
    );
    assert_eq!(h.task_count()["completed"], 0, "{}", run.describe());
    let state = h.state();
    assert_eq!(
        state["taskEvidence"]["1.1"]["ownVerify"], false,
        "{state:#}"
    );
    assert!(state["taskEvidence"]["1.1"].get("acceptedOther").is_none());
    assert_eq!(state["unverifiedClaims"][0]["taskId"], "1.1", "{state:#}");
}

/// Scenario 21 (issue 11, on the real clients): the events log and the progress file are
/// links to files outside the project, planted by a process outside Claude Code (the
/// coordinator's own attempt to plant them is denied by the PreToolUse guard); then task 1.1
/// runs with an honest executor. No hook or verb writes through a link (the outside files
/// keep their bytes), each names the link, the task's completion still counts (its progress
/// line is a warning) and the session is never trapped.
#[test]
fn e2e_21_links_planted_at_bookkeeping_paths_carry_no_write_outside() {
    let Some(h) = Harness::new() else {
        return;
    };
    let root = h.root();
    h.init_execution(SESSION, &["--driver", "manual"]);
    let outside = tempfile::tempdir().unwrap();
    let (events, progress) = (
        outside.path().join("events.jsonl"),
        outside.path().join("progress.md"),
    );
    std::fs::write(&events, "OUTSIDE\n").unwrap();
    std::fs::write(&progress, "OUTSIDE\n").unwrap();
    let plant = format!(
        "mkdir -p .specrun && ln -sf {} .specrun/events.jsonl && ln -sf {} specs/demo/.progress.md && echo PLANTED",
        events.display(),
        progress.display()
    );
    // Planted from outside Claude Code (the guard reads words, not other processes).
    let planted = std::process::Command::new("sh")
        .args(["-c", &plant])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(planted.status.success(), "{planted:?}");
    let mut rules = vec![
        Rule::main().turn(0).reply([bash(&plant)]),
        Rule::main()
            .last_tool_result("denied during an execution")
            .reply([delegate_as(EXECUTOR, "1.1", Mode::Background)]),
        Rule::main()
            .result("TASK_COMPLETE 1.1")
            .reply([text("Task 1.1 reported back.")]),
    ];
    rules.extend(honest_executor(
        &root,
        "1.1",
        Some(("notes/alpha.txt", "ALPHA\n")),
        "grep -q ALPHA notes/alpha.txt",
    ));
    rules.extend(waiting_rules());

    let run = h.run(
        rules,
        Session::new("Run task 1.1 of the demo spec.").session_id(SESSION),
    );

    assert_eq!(run.rc, Some(0), "{}", run.describe());
    assert_eq!(std::fs::read_to_string(&events).unwrap(), "OUTSIDE\n");
    assert_eq!(std::fs::read_to_string(&progress).unwrap(), "OUTSIDE\n");
    // The executor's verbs warned and went on: the completion counts, its log lines did
    // not go through the links.
    let complete = run.tool_result(Some(Agent::Sub), "task 1.1 is complete, but");
    assert!(complete.contains("symbolic link"), "{complete}");
    assert!(h.read("specs/demo/tasks.md").contains("- [x] 1.1"));
    let stops = run.hook_responses("Stop");
    assert!(
        stops.iter().any(|r| r["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains("symbolic link")),
        "no Stop hook named the link\n{}",
        run.describe()
    );
}
