//! `specrun headless run` end to end (issue 29): the built binary supervises the real,
//! pinned Claude Code against the scripted fake model, as a CI job would call it. A completed
//! spec exits 0 with its report and job summary; a run the model makes hang (a Bash step that
//! sleeps, so the stream goes quiet) is resumed once and then fails within its bound; a
//! halted run exits non-zero naming the halt.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::e2e::fake_model::{bash, text, Agent, FakeModel, Request, Rule};
use crate::e2e::runner::{fake_client_env, plugin_root};
use crate::e2e::{
    delegate, executor_steps, honest_executor, phase_check_then_complete, subagent_rules, Harness,
    ALL_NOTES_VERIFY, SESSION,
};

/// What one `specrun headless run` left: its output, its wall time, the model's requests.
struct Headless {
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
            let log = self
                .root
                .join(format!(".specrun/headless/demo/attempt-{n}.jsonl"));
            let text = read(&log);
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
            "rc={:?} wall={:.1}s, {} model requests\nstdout:\n{}\nstderr:\n{}\n{logs}",
            self.out.status.code(),
            self.wall.as_secs_f64(),
            self.requests.len(),
            self.stdout(),
            String::from_utf8_lossy(&self.out.stderr)
        )
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
/// run fails naming the hang, well within its bounds.
#[test]
fn e2e_29b_a_hanging_run_is_resumed_once_then_fails_within_its_bound() {
    let Some(h) = Harness::new() else {
        return;
    };
    let rules = vec![Rule::main()
        .times(0)
        .stall(Duration::from_secs(120))
        .reply([text("TOO_LATE")])];

    let run = headless(&h, rules, &["--idle-timeout", "5", "--timeout", "40"]);

    assert_eq!(run.out.status.code(), Some(1), "{}", run.describe());
    // Two attempts of ~5 s of silence each, plus start-up: never the model's 240 s.
    assert!(
        run.wall < Duration::from_secs(90),
        "took {:?}\n{}",
        run.wall,
        run.describe()
    );
    let summary = run.json();
    let verdict = summary["verdict"].as_str().unwrap_or_default();
    for said in [
        "spec demo not completed",
        "hung: no stream line for 5 s",
        "2 attempts, resumed once",
    ] {
        assert!(
            verdict.contains(said),
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
