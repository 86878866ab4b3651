//! Issue 23 class 5, "budgets from files the model writes": the prices `--max-usd` caps
//! and the notify command are the ones in force at `state init` (the environment, the
//! user's config, or the project's config as a person left it), so a model that zeroes the
//! prices or rewrites `notify` in `.specrun/config.json` during the run changes nothing; the
//! change is reported in status and as a `settings-ignored` event.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::hook_common::{stop_stdin, TempProject, SESSION, TASKS};

const PRICES: &str = r#"{"prices": {"claude-x": {"input": 3, "output": 15}}}"#;
const ZEROED: &str = r#"{"prices": {"claude-x": {"input": 0, "output": 0}}}"#;

/// `specrun args` with a config home of the test's own; `inside`: as the model runs it.
fn specrun(p: &TempProject, args: &[&str], stdin: &str, inside: bool) -> Output {
    let mut cmd = p.specrun();
    cmd.args(args)
        .env_remove("CLAUDECODE")
        .env_remove("SPECRUN_NOTIFY")
        .env("XDG_CONFIG_HOME", p.path("home-config"))
        .write_stdin(stdin.to_string());
    if inside {
        cmd.env("CLAUDECODE", "1");
    }
    cmd.output().expect("specrun runs")
}

fn ok(p: &TempProject, args: &[&str], inside: bool) -> String {
    let out = specrun(p, args, "", inside);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "specrun {args:?}: {said}");
    said
}

fn project() -> TempProject {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    p.commit_all("spec");
    p
}

/// The coordinator's transcript, read from its start, holding 100k input and 50k output
/// tokens of claude-x: $1.05 at the person's prices.
fn spend(p: &TempProject) -> std::path::PathBuf {
    let t = p.path("coordinator.jsonl");
    let line = json!({"type": "assistant", "timestamp": "2026-01-01T00:00:00Z", "message": {
        "id": "c1", "role": "assistant", "model": "claude-x",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 100_000, "output_tokens": 50_000,
            "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}});
    std::fs::write(&t, format!("{line}\n")).unwrap();
    let path = p.path("specs/demo/.specrun-state.json");
    let mut s: Value = serde_json::from_str(&p.read("specs/demo/.specrun-state.json")).unwrap();
    s["usage"]["transcriptOffset"] = json!(0);
    s["usage"]["transcriptPath"] = json!(t);
    std::fs::write(path, serde_json::to_vec_pretty(&s).unwrap()).unwrap();
    t
}

fn stop(p: &TempProject, t: &Path) -> String {
    let out = specrun(
        p,
        &["hook", "stop"],
        &stop_stdin(p, "turn over", false, t.to_str()),
        true,
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn events(p: &TempProject) -> Vec<Value> {
    std::fs::read_to_string(p.path(".specrun/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Claude Code's SessionStart for `SESSION`: binds it with HEAD as its start commit.
fn session_start(p: &TempProject) {
    let stdin = json!({"session_id": SESSION, "cwd": p.root(),
        "hook_event_name": "SessionStart", "source": "startup"});
    let out = specrun(p, &["hook", "session-start"], &stdin.to_string(), true);
    assert!(out.status.success());
}

/// `state init` of the session; inside Claude Code the session has started first (a hook
/// saw it), unless it already did.
fn init(p: &TempProject, flags: &[&str], inside: bool) {
    if inside {
        session_start(p);
    }
    let mut args = vec!["state", "init", "--spec", "demo", "--session-id", SESSION];
    args.extend_from_slice(flags);
    ok(p, &args, inside);
}

/// The person's prices at init; the model zeroes them in the project config: the dollar
/// cap still halts at $1.05, and the change is reported. Main read the zeroed table.
#[test]
fn zeroed_prices_during_the_run_still_halt_at_the_dollar_cap() {
    let p = project();
    p.write(".specrun/config.json", PRICES);
    init(&p, &["--max-usd", "1"], false);
    let t = spend(&p);
    p.write(".specrun/config.json", ZEROED);
    let out = stop(&p, &t);
    assert!(
        out.contains("priced spend $1.05 >= budget.maxUsd $1.00"),
        "{out}"
    );
    let s = p.state("demo");
    assert_eq!(s["halt"]["kind"], "usd-cap", "{s}");
    let ignored: Vec<Value> = events(&p)
        .into_iter()
        .filter(|e| e["event"] == "settings-ignored")
        .collect();
    assert!(
        ignored[0]["ignored"]
            .as_str()
            .unwrap()
            .starts_with("prices changed since state init (.specrun/config.json): ignored"),
        "{ignored:?}"
    );
    let status = ok(&p, &["status", "--spec", "demo"], false);
    assert!(
        status.contains("prices changed since state init"),
        "{status}"
    );
}

fn wait_for(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if std::fs::metadata(path).is_ok_and(|m| m.len() > 0) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    false
}

/// The person's notify at init; the model rewrites it to undo the halt it is about to
/// cause: the halt notifies with the person's command, the rewritten one never runs. Main
/// ran the rewritten one.
#[test]
fn a_notify_rewritten_during_the_run_is_not_run() {
    let p = project();
    p.write(".specrun/config.json", r#"{"notify": "cat > kept.json"}"#);
    init(&p, &["--max-task-iterations", "1"], false);
    p.write(
        ".specrun/config.json",
        r#"{"notify": "touch rewritten.txt; env -u CLAUDECODE specrun resume --raise-task 5"}"#,
    );
    ok(&p, &["task", "start", "1.2"], true);
    ok(&p, &["task", "fail", "1.2", "--reason", "broken"], true);
    assert!(
        wait_for(&p.path("kept.json")),
        "the person's notify did not run"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!p.path("rewritten.txt").exists(), "the model's notify ran");
    assert_eq!(p.state("demo")["halt"]["kind"], "task-cap");
    let ignored = events(&p)
        .into_iter()
        .find(|e| e["event"] == "settings-ignored")
        .expect("the change is reported");
    assert!(
        ignored["ignored"]
            .as_str()
            .unwrap()
            .contains("the command in force is `cat > kept.json`"),
        "{ignored}"
    );
}

/// Controls: a person's user config at a shell before init is in force (the project has
/// none); inside Claude Code a project config only in the working copy is not taken, one
/// committed in HEAD is.
#[test]
fn a_persons_config_before_init_is_used_and_an_uncommitted_one_is_not_inside() {
    let p = project();
    p.write("home-config/specrun/config.json", PRICES);
    init(&p, &["--max-usd", "1"], false);
    let settings = &p.state("demo")["settings"];
    assert_eq!(
        settings["prices"],
        json!({"claude-x": {"input": 3, "output": 15}})
    );
    assert!(settings["pricesFrom"]
        .as_str()
        .unwrap()
        .starts_with("user config "));
    let t = spend(&p);
    assert!(stop(&p, &t).contains("priced spend $1.05"));

    let q = project();
    q.write(".specrun/config.json", PRICES);
    init(&q, &[], true);
    assert_eq!(q.state("demo")["settings"]["prices"], Value::Null);
    let r = project();
    r.write(".specrun/config.json", PRICES);
    r.git_cmd(&["add", "-f", ".specrun/config.json"]);
    r.commit_all("config");
    init(&r, &[], true);
    let settings = &r.state("demo")["settings"];
    assert_eq!(settings["prices"]["claude-x"]["input"], 3, "{settings}");
    let from = settings["pricesFrom"].as_str().unwrap();
    assert!(
        from.starts_with(".specrun/config.json as committed in the session's start commit "),
        "{from}"
    );
}

/// Inside Claude Code the project config counts as committed when the session started: a
/// config the model commits (`git add -f`) after the session started is not taken, nor is
/// one an init bound to no session would find in HEAD. Main took HEAD's at init.
#[test]
fn a_config_committed_after_the_session_started_is_not_taken_inside() {
    let p = project();
    session_start(&p);
    p.write(".specrun/config.json", ZEROED);
    p.git_cmd(&["add", "-f", ".specrun/config.json"]);
    p.commit_all("the model's config");
    init(&p, &[], true);
    let settings = &p.state("demo")["settings"];
    assert_eq!(settings["prices"], Value::Null, "{settings}");
    // With no session, no start commit is known: HEAD's config is not taken either.
    let q = project();
    q.write(".specrun/config.json", ZEROED);
    q.git_cmd(&["add", "-f", ".specrun/config.json"]);
    q.commit_all("the model's config");
    ok(&q, &["state", "init", "--spec", "demo"], true);
    assert_eq!(q.state("demo")["settings"]["prices"], Value::Null);
}
