//! `specrun headless run` end to end (issue 29): the built binary supervises the real,
//! pinned Claude Code against the scripted fake model, as a CI job would call it. A completed
//! spec exits 0 with its report and job summary; a run the model makes hang (a Bash step that
//! sleeps, so the stream goes quiet) is resumed once and then fails within its bound; a
//! halted run exits non-zero naming the halt. A wave member's run (`--task`) does its one
//! task and is judged by it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::e2e::fake_model::{bash, text, Agent, Block, FakeModel, Request, Rule};
use crate::e2e::runner::{self, fake_client_env, plugin_root};
use crate::e2e::{
    delegate, executor_steps, honest_executor, phase_check_then_complete, stop_feedback,
    subagent_rules, write_file, Harness, ALL_NOTES_VERIFY, DEMO_TASKS, SESSION,
};

/// What one `specrun headless run` left: its output, its wall time, the model's requests.
struct Headless {
    client: String,
    out: Output,
    root: PathBuf,
    wall: Duration,
    requests: Vec<Request>,
    summary_file: PathBuf,
}

impl Headless {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    fn describe(&self) -> String {
        let mut logs = String::new();
        for n in 1..=2 {
            let text = read(&self.stream_log(n));
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(12)..]
                .iter()
                .map(|l| l.chars().take(300).collect::<String>())
                .collect::<Vec<_>>()
                .join("\n");
            logs.push_str(&format!(
                "attempt {n} ({} lines), last:\n{tail}\n",
                lines.len()
            ));
        }
        format!(
            "stdout:\n{}\n{logs}{}",
            self.stdout(),
            self.as_run().describe()
        )
    }
    fn stream_log(&self, n: usize) -> PathBuf {
        self.root
            .join(format!(".specrun/headless/demo/attempt-{n}.jsonl"))
    }
    /// The run as the e2e runner accounts for one (every model request, the hook
    /// responses, stderr's tail), its events those of both attempts' stream logs.
    fn as_run(&self) -> runner::Run {
        let events = (1..=2)
            .flat_map(|n| {
                read(&self.stream_log(n))
                    .lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect::<Vec<Value>>()
            })
            .collect();
        runner::Run {
            client: self.client.clone(),
            rc: self.out.status.code(),
            wall: self.wall,
            stderr: String::from_utf8_lossy(&self.out.stderr).into_owned(),
            events,
            requests: self.requests.clone(),
            home: self.summary_file.parent().unwrap().to_path_buf(),
            session_id: Some(SESSION.to_string()),
        }
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.out.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{}", self.describe()))
    }
}

/// Runs `specrun headless run --spec demo` in the harness's project, with the environment
/// the e2e runner gives Claude Code (temp HOME, the fake model's URL), through the same
/// pinned client; `extra` are more flags.
fn headless(h: &Harness, rules: Vec<Rule>, extra: &[&str]) -> Headless {
    let model = FakeModel::start(rules);
    let home = h.home.path();
    let summary_file = home.join("step-summary.md");
    let plugin = plugin_root().join("plugin");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_specrun"));
    fake_client_env(&mut cmd, &h.root(), home, &model.base_url());
    cmd.env("GITHUB_STEP_SUMMARY", &summary_file);
    cmd.args(["headless", "run", "--spec", "demo", "--claude"])
        .arg(&h.client.path)
        .arg("--plugin-dir")
        .arg(&plugin)
        .args(["--session-id", SESSION, "--json"])
        .args(extra);
    let started = Instant::now();
    let out = cmd.output().expect("run specrun headless run");
    Headless {
        client: h.client.name(),
        out,
        root: h.root(),
        wall: started.elapsed(),
        requests: model.requests(),
        summary_file,
    }
}

fn headless_events(h: &Harness) -> Vec<Value> {
    h.events()
        .into_iter()
        .filter(|e| e["event"] == "headless")
        .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The honest three-task run of e2e_2, started by `headless run` instead of a person: exit 0,
/// the spec completed, its report written, the result mapped into events.jsonl, the job summary.
#[test]
fn e2e_29a_headless_run_of_a_completing_spec_exits_0_with_its_report() {
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
    rules.extend(phase_check_then_complete(
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

    let run = headless(&h, rules, &["--idle-timeout", "120", "--timeout", "300"]);

    assert_eq!(run.out.status.code(), Some(0), "{}", run.describe());
    assert_eq!(h.state()["phase"], "completed", "{}", run.describe());
    // The prompt the client sent the model was the implement skill for this spec.
    let first = &run
        .requests
        .iter()
        .find(|r| r.agent == Agent::Main)
        .unwrap();
    assert!(
        first.first_user.contains("specrun snapshot --spec"),
        "the implement skill was not what ran:\n{}",
        run.describe()
    );
    let summary = run.json();
    assert_eq!(summary["completed"], true, "{summary:#}");
    assert_eq!(summary["sessionId"], SESSION);
    assert_eq!(summary["clientVersion"], h.client.version.as_str());
    let attempts = summary["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{summary:#}");
    assert_eq!(attempts[0]["ending"], "result");
    assert_eq!(attempts[0]["result"]["subtype"], "success");
    assert!(
        attempts[0]["result"]["numTurns"].as_u64() > Some(0),
        "{summary:#}"
    );

    let events = headless_events(&h);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["spec"], "demo");
    assert_eq!(events[0]["ending"], "result");
    assert_eq!(events[0]["result"]["subtype"], "success", "{}", events[0]);
    // The scripted executors' `ac confirm` (a person's verb) is denied by the guard's
    // PreToolUse hook. Claude Code 2.1.332 lists each such denial in the result (2.1.197
    // lists none), and the ledger keeps them with what was asked, for the person who reads
    // the summary.
    let denials: Vec<&str> = events[0]["result"]["permissionDenials"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let listed = match h.client.version.as_str() {
        "2.1.197" => Some(0),
        "2.1.332" => Some(3),
        _ => None,
    };
    assert!(
        listed.is_none_or(|n| n == denials.len()),
        "{} on {}",
        events[0],
        h.client.name()
    );
    for (d, id) in denials.iter().zip(["1.1", "1.2", "1.3"]) {
        assert!(
            d.starts_with(&format!("Bash: specrun ac confirm {id}/AC1")),
            "{d}"
        );
    }

    let md = PathBuf::from(summary["reportMd"].as_str().expect("a markdown report"));
    let html = PathBuf::from(summary["reportHtml"].as_str().expect("an html report"));
    assert!(read(&md).contains("1.1"), "report.md:\n{}", read(&md));
    assert!(read(&html).contains("<html"), "report.html");
    assert!(
        std::fs::read_to_string(root.join(".specrun/headless/demo/attempt-1.jsonl"))
            .unwrap()
            .contains("\"type\":\"result\""),
        "the stream log lacks the result event"
    );
    let job = read(&run.summary_file);
    assert!(job.contains("## specrun headless: demo"), "{job}");
    assert!(job.contains("spec demo completed (1 attempt)"), "{job}");
    assert!(job.contains(&read(&md)), "the job summary lacks the report");
}

/// The model never answers (each request is held for two minutes: a hang before the first
/// response, as users report of headless runs): the attempt is stopped at the no-progress
/// bound, the session resumed once (`--resume`), the resumed attempt hangs as well, and the
/// run fails naming the hang, within its bounds.
///
/// The no-progress bound counts from the client's spawn, so it must outlast the client's
/// own start-up (about 1.5 s to its first stream line and model request at load 5 here; a
/// 5 s bound once fired before the first request at load 15). It is 20 s, and the hang is
/// proven by what the run shows, not by how long it took: each attempt reached the model
/// once, the held reply never reached either stream, and both attempts ended `hung` (the
/// no-progress bound), not `out-of-time` (the wall-clock bound).
#[test]
fn e2e_29b_a_hanging_run_is_resumed_once_then_fails_within_its_bound() {
    let Some(h) = Harness::new() else {
        return;
    };
    const IDLE: u64 = 20;
    // Held past both attempts' no-progress bounds: only a stop ends an attempt.
    let stall = Duration::from_secs(6 * IDLE);
    let rules = vec![Rule::main().times(0).stall(stall).reply([text("TOO_LATE")])];
    let wall = 10 * IDLE;

    let run = headless(
        &h,
        rules,
        &[
            "--idle-timeout",
            &IDLE.to_string(),
            "--timeout",
            &wall.to_string(),
        ],
    );

    assert_eq!(run.out.status.code(), Some(1), "{}", run.describe());
    // Within the run's own wall-clock bound (it stops at that bound, reports and exits).
    assert!(
        run.wall < Duration::from_secs(wall),
        "took {:?}\n{}",
        run.wall,
        run.describe()
    );
    for n in 1..=2 {
        assert!(
            !read(&run.stream_log(n)).contains("TOO_LATE"),
            "attempt {n} got the held reply: it was not stopped at the bound\n{}",
            run.describe()
        );
    }
    let summary = run.json();
    let verdict = summary["verdict"].as_str().unwrap_or_default();
    for said in [
        "spec demo not completed".to_string(),
        format!("hung: no stream line for {IDLE} s"),
        "2 attempts, resumed once".to_string(),
    ] {
        assert!(
            verdict.contains(&said),
            "{said:?} not in {verdict:?}\n{}",
            run.describe()
        );
    }
    let attempts = summary["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{summary:#}");
    assert_eq!(
        (&attempts[0]["ending"], &attempts[1]["ending"]),
        (&json!("hung"), &json!("hung")),
        "{}",
        run.describe()
    );
    assert_eq!(
        (&attempts[0]["resumed"], &attempts[1]["resumed"]),
        (&json!(false), &json!(true))
    );
    let events = headless_events(&h);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1]["resumed"], true);
    assert_eq!(events[1]["sessionId"], SESSION);
    // Each attempt reached the model once; the second continued the first session
    // (`--resume`): Claude Code started it as a resume of the same session id.
    let main = run
        .requests
        .iter()
        .filter(|r| r.agent == Agent::Main)
        .count();
    assert_eq!(main, 2, "{}", run.describe());
    let second = read(&h.root().join(".specrun/headless/demo/attempt-2.jsonl"));
    assert!(
        second.contains("\"hook_name\":\"SessionStart:resume\""),
        "the second attempt was not a resume\n{}",
        run.describe()
    );
    assert!(second.contains(&format!("\"session_id\":\"{SESSION}\"")));
    let job = read(&run.summary_file);
    assert!(job.contains("| 2 (resumed) | hung |"), "{job}");
}

/// An execution at its global cap halts at the first Stop: `headless run` exits 1 naming
/// the halt, with one attempt (a halt is not a hang: nothing to resume).
#[test]
fn e2e_29c_a_halted_run_exits_non_zero_naming_the_halt() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(
        SESSION,
        &["--driver", "stop-hook", "--max-global-iterations", "2"],
    );
    h.merge_state(json!({"globalIteration": 2}));
    let rules = vec![Rule::main().turn(0).reply([text("Pausing for a moment.")])];

    let run = headless(&h, rules, &["--idle-timeout", "60", "--timeout", "120"]);

    assert_eq!(run.out.status.code(), Some(1), "{}", run.describe());
    assert_eq!(h.state()["halt"]["kind"], "global-cap");
    let summary = run.json();
    let verdict = summary["verdict"].as_str().unwrap_or_default();
    assert!(
        verdict.contains("spec demo halted: global-cap"),
        "{verdict:?}\n{}",
        run.describe()
    );
    assert_eq!(summary["attempts"].as_array().map(Vec::len), Some(1));
    assert!(read(&run.summary_file).contains("halted: global-cap"));
}

/// The demo spec with 1.1 and 1.2 as one `[P]` group: a wave of two members, then the
/// `[VERIFY]` task (a wave of its own), as `specrun waves` plans it.
fn member_harness() -> Option<Harness> {
    let h = Harness::new()?;
    let tasks = DEMO_TASKS
        .replace("- [ ] 1.1 Write", "- [ ] 1.1 [P] Write")
        .replace("- [ ] 1.2 Write", "- [ ] 1.2 [P] Write");
    h.project.spec("demo", &tasks);
    h.project.commit_all("demo spec: 1.1 and 1.2 in one wave");
    Some(h)
}

/// `headless run --task 1.2`, a member's job, with bounds a loaded runner meets.
fn member_run(h: &Harness, rules: Vec<Rule>) -> Headless {
    headless(
        h,
        rules,
        &["--task", "1.2", "--idle-timeout", "120", "--timeout", "300"],
    )
}

/// What the scripted coordinator says when its member's task is done.
const MEMBER_DONE: &str = "Task 1.2 is done and confirmed; this member's job ends here.";

/// The coordinator of a member's run, as the implement skill (steps 1 to 5, `--manual`)
/// and references/ci-member.md say: snapshot, `state init --driver manual`, goal,
/// last-mile, `task start 1.2`, one foreground delegation of 1.2. What it does with the
/// executor's report is the scenario's.
fn member_coordinator() -> Vec<Rule> {
    [
        bash("specrun snapshot --spec demo"),
        bash(&format!(
            "specrun state init --spec demo --session-id {SESSION} --driver manual"
        )),
        bash("specrun goal --spec demo"),
        bash("specrun last-mile --spec demo --record"),
        bash("specrun task start 1.2 --spec demo"),
        delegate("specrun:spec-executor", "1.2"),
    ]
    .into_iter()
    .enumerate()
    .map(|(turn, step)| Rule::main().turn(turn).reply([step]))
    .collect()
}

/// Each demo task's id and whether its box is ticked, as specrun's own parser reads tasks.md.
fn boxes(h: &Harness) -> Vec<(String, bool)> {
    specrun::api::model::tasks::parse(&h.read("specs/demo/tasks.md"))
        .tasks
        .iter()
        .map(|t| (t.label(), t.checked))
        .collect()
}

/// What a member's run asserts whatever its verdict: the prompt was the member's
/// (`--manual --task 1.2`, the ci-member reference offered), one delegation, of 1.2
/// only; the manual driver's Stop hook let every stop go (`allow`), so no Stop-hook
/// re-prompt reached the coordinator; one attempt (a result is not resumed).
fn assert_one_member_turn(h: &Harness, run: &Headless) {
    let first = run
        .requests
        .iter()
        .find(|r| r.agent == Agent::Main)
        .unwrap_or_else(|| panic!("no model request\n{}", run.describe()));
    for said in ["demo --manual --task 1.2", "ci-member.md"] {
        assert!(
            first.first_user.contains(said),
            "{said:?} not in the prompt the model got:\n{}",
            run.describe()
        );
    }
    let delegated = run.as_run().delegations();
    assert_eq!(delegated.len(), 1, "{delegated:?}\n{}", run.describe());
    assert!(delegated[0].starts_with("[task 1.2]"), "{delegated:?}");
    for r in run.requests.iter().filter(|r| r.agent == Agent::Sub) {
        assert!(
            r.first_user.contains("[task 1.2]"),
            "a subagent worked on something else: {:?}\n{}",
            r.first_user,
            run.describe()
        );
    }
    let run_account = run.as_run();
    let fed_back = stop_feedback(&run_account, Agent::Main);
    assert!(fed_back.is_empty(), "{fed_back:?}\n{}", run.describe());
    let stops: Vec<Value> = h
        .events()
        .into_iter()
        .filter(|e| e["event"] == "stop")
        .collect();
    assert!(
        !stops.is_empty(),
        "the Stop hook never ran\n{}",
        run.describe()
    );
    for stop in &stops {
        assert_eq!(
            (&stop["decision"], &stop["rule"]),
            (&json!("allow"), &json!("allow")),
            "{stop}\n{}",
            run.describe()
        );
    }
    assert_eq!(h.state()["executionDriver"], "manual");
    let summary = run.json();
    let attempts = summary["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{summary:#}");
    assert_eq!(attempts[0]["ending"], "result", "{summary:#}");
    assert_eq!(attempts[0]["result"]["subtype"], "success", "{summary:#}");
}

/// A wave member's job, `headless run --task 1.2`, on a spec of three tasks: the
/// coordinator delegates 1.2 alone, the executor does it honestly (its Verify, both
/// critiques, a commit, `task complete --check`), the coordinator confirms it and ends its
/// turn. Exit 0 naming the task; 1.2 alone is ticked with passing evidence, 1.1 (the
/// other member, the first unchecked task) and 1.3 are untouched; the execution is not
/// completed (the merge job finishes the spec).
#[test]
fn e2e_29d_a_members_run_does_its_one_task_and_exits_0() {
    let Some(h) = member_harness() else {
        return;
    };
    let root = h.root();
    let mut rules = member_coordinator();
    rules.push(
        Rule::main()
            .result("TASK_COMPLETE 1.2")
            .reply([bash("specrun task complete 1.2 --check --spec demo")]),
    );
    rules.push(
        Rule::main()
            .last_tool_result("task 1.2 is already complete")
            .reply([text(MEMBER_DONE)]),
    );
    rules.extend(honest_executor(
        &root,
        "1.2",
        Some(("notes/beta.txt", "BETA\n")),
        "grep -q BETA notes/beta.txt",
    ));

    let run = member_run(&h, rules);

    assert_eq!(run.out.status.code(), Some(0), "{}", run.describe());
    let summary = run.json();
    assert_eq!(
        summary["verdict"], "task 1.2 of spec demo done (1 attempt)",
        "{summary:#}"
    );
    assert_eq!(summary["completed"], true);
    assert_one_member_turn(&h, &run);
    // last-mile sees the whole plan and names the whole wave (1.1 with 1.2), as the
    // coordinator of a whole spec needs; ci-member.md tells a member to start no other.
    let account = run.as_run();
    let last_mile = account.tool_result(Some(Agent::Main), "coordinatorInstruction");
    let said: Value = serde_json::from_str(last_mile).expect("last-mile prints JSON");
    let instruction = said["coordinatorInstruction"].as_str().unwrap_or_default();
    assert!(instruction.contains("1.1"), "{instruction}");
    // The coordinator's last turn was its closing line: nothing asked it for more.
    let last = run
        .requests
        .iter()
        .rfind(|r| r.agent == Agent::Main)
        .unwrap();
    assert!(
        matches!(last.reply.as_slice(), [Block::Text(t)] if t == MEMBER_DONE),
        "{}",
        run.describe()
    );
    assert_eq!(
        boxes(&h),
        [
            ("1.1".to_string(), false),
            ("1.2".to_string(), true),
            ("1.3".to_string(), false)
        ],
        "{}",
        run.describe()
    );
    let state = h.state();
    assert_ne!(state["phase"], "completed", "{state:#}");
    assert_eq!(state["taskEvidence"]["1.2"]["exitCode"], 0, "{state:#}");
    for other in ["1.1", "1.3"] {
        assert!(state["taskEvidence"][other].is_null(), "{state:#}");
    }
    assert!(!root.join("notes/alpha.txt").exists());
    let log = h.project.git_cmd(&["log", "--format=%s"]);
    assert!(log.contains("feat(notes): beta"), "{log}");
    assert!(!log.contains("feat(notes): alpha"), "{log}");
    let verify = h.specrun_status(&["verify", "status", "--task", "1.2", "--spec", "demo"]);
    assert!(verify.status.success(), "{verify:?}");
    assert!(read(&run.summary_file).contains("task 1.2 of spec demo done"));
}

/// The control: the executor stops after its edit, without its checks or `task
/// complete`, and the coordinator ends its turn. The manual driver does not push it on,
/// and the run exits 1 naming the task not done, with its box still open.
#[test]
fn e2e_29e_a_member_whose_task_is_not_finished_exits_1_naming_it() {
    let Some(h) = member_harness() else {
        return;
    };
    let root = h.root();
    const STOPPED: &str = "Stopping before the checks: out of time for task 1.2.";
    let mut rules = member_coordinator();
    rules.push(
        Rule::main()
            .result(STOPPED)
            .reply([text("The executor stopped before finishing task 1.2.")]),
    );
    rules.extend(subagent_rules(
        "1.2",
        0,
        vec![
            bash("specrun task start 1.2 --spec demo"),
            write_file(&root, "notes/beta.txt", "BETA\n"),
        ],
        STOPPED,
    ));

    let run = member_run(&h, rules);

    assert_eq!(run.out.status.code(), Some(1), "{}", run.describe());
    let summary = run.json();
    let verdict = summary["verdict"].as_str().unwrap_or_default();
    assert!(
        verdict.starts_with(
            "task 1.2 of spec demo not done (not ticked with passing evidence): the last attempt ended with result success"
        ),
        "{verdict:?}\n{}",
        run.describe()
    );
    assert_eq!(summary["completed"], false);
    assert_one_member_turn(&h, &run);
    assert!(
        boxes(&h).iter().all(|(_, ticked)| !ticked),
        "{:?}",
        boxes(&h)
    );
    assert!(h.state()["taskEvidence"]["1.2"].is_null());
    assert!(read(&run.summary_file).contains("task 1.2 of spec demo not done"));
}
