//! What a person watching an unattended run sees: notifications, `status --watch`,
//! `statusline`, `report`, shell completions.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{bin_path, TempProject};
use crate::shell_common::Shell;

const TASKS: &str =
    "**Final check**: `true`\n- [ ] 1.1 One\n  - **Verify**: `true`\n- [ ] 1.2 Two\n  - **Verify**: `true`\n";

fn project(init: &str) -> TempProject {
    let p = TempProject::git();
    let mut sh = Shell::new(&p);
    sh.ok("specrun new demo");
    p.write("specs/demo/tasks.md", TASKS);
    p.commit_all("plan");
    sh.ok(&format!("specrun state init --spec demo {init}"));
    p
}

/// Wait (polling, bounded) until `cond` holds; the bound only guards against a hang.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn events(p: &TempProject) -> Vec<Value> {
    std::fs::read_to_string(p.path(".specrun/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `specrun hook stop` with the notify command set; returns the hook's stdout.
fn hook_stop(p: &TempProject, notify: &str) -> String {
    let stdin = json!({"session_id": "s1", "cwd": p.root(), "hook_event_name": "Stop",
        "stop_hook_active": false, "last_assistant_message": "working"});
    let mut child = Command::new(bin_path())
        .args(["hook", "stop"])
        .current_dir(p.root())
        .env("SPECRUN_NOTIFY", notify)
        .env("SPECRUN_NOTIFY_TIMEOUT_MS", "3000")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.to_string().as_bytes())
        .unwrap();
    // The hook's stdout reaches EOF only when no process holds it: a notify command that
    // inherited it would keep this read waiting.
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(child.wait().unwrap().success());
    out
}

#[test]
fn a_hanging_notify_command_neither_delays_the_hook_nor_survives_its_bound() {
    let p = project("--max-global-iterations 1 --session-id s1");
    let notify = "cat > event.json; echo $$ > notify.pid; exec sleep 60";
    let mut sh = Shell::new(&p);
    // The notify command in force is the one set when the execution starts.
    sh.ok(&format!(
        "SPECRUN_NOTIFY='{notify}' specrun state init --spec demo --session-id s1"
    ));
    sh.ok("specrun state merge specs/demo/.specrun-state.json '{\"globalIteration\": 1}'");
    let out = hook_stop(&p, notify);
    let answer: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(answer["continue"], false, "{out}");
    // The hook has answered; the notify command is still running (it sleeps 60 s).
    wait_until("the notify command", || {
        p.path("notify.pid").exists() && !p.read("notify.pid").is_empty()
    });
    let pid = p.read("notify.pid").trim().to_string();
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "already gone"
    );
    let event: Value = serde_json::from_str(&p.read("event.json")).unwrap();
    assert_eq!(
        (event["event"].as_str(), event["spec"].as_str()),
        (Some("halt"), Some("demo"))
    );
    assert_eq!(event["rule"], "cap:global-cap");
    // Killed at its bound, and the kill recorded.
    wait_until("the notify line", || {
        events(&p)
            .iter()
            .any(|e| e["event"] == "notify" && e["timedOut"] == true)
    });
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "still running: {stat}"
    );
}

#[test]
fn completion_notifies_through_the_config_file_and_a_task_halt_through_the_variable() {
    let p = project("--max-task-iterations 1");
    p.write(".specrun/config.json", r#"{"notify": "cat > halted.json"}"#);
    let mut sh = Shell::new(&p);
    // A person's config counts from the `state init` after it (the run keeps what it began with).
    sh.ok("specrun state init --spec demo");
    sh.ok("specrun task start 1.1");
    sh.ok("specrun task fail 1.1 --reason broken");
    wait_until("the halt notification", || {
        p.path("halted.json").exists() && !p.read("halted.json").is_empty()
    });
    let event: Value = serde_json::from_str(&p.read("halted.json")).unwrap();
    assert_eq!(
        (event["event"].as_str(), event["task"].as_str()),
        (Some("halt"), Some("1.1"))
    );
    assert!(
        event["message"]
            .as_str()
            .unwrap()
            .contains("specrun resume"),
        "{event}"
    );

    p.write(".specrun/config.json", r#"{"notify": "cat > done.json"}"#);
    sh.ok("specrun resume --raise-task 3");
    sh.ok("specrun state init --spec demo");
    for id in ["1.1", "1.2"] {
        sh.ok(&format!("specrun task start {id}"));
        sh.ok(&format!("specrun verify run --task {id} --command true"));
        sh.ok(&format!(
            "specrun critique record --task {id} --stage post-code"
        ));
        sh.ok(&format!(
            "specrun critique record --task {id} --stage post-test"
        ));
        sh.ok(&format!("specrun task complete {id} --check"));
    }
    sh.ok("specrun verify run --command true");
    sh.ok("specrun finish");
    wait_until("the completion notification", || {
        p.path("done.json").exists() && !p.read("done.json").is_empty()
    });
    let event: Value = serde_json::from_str(&p.read("done.json")).unwrap();
    assert_eq!(event["event"], "completed");
}

/// `specrun status --watch`, its stdout collected by a thread (joined by `drained`).
fn watch(p: &TempProject) -> (Child, Arc<Mutex<String>>, std::thread::JoinHandle<()>) {
    let mut child = Command::new(bin_path())
        .args(["status", "--watch"])
        .current_dir(p.root())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let mut out = child.stdout.take().unwrap();
    let sink = Arc::clone(&seen);
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (child, seen, reader)
}

/// Everything the watch printed, once it has exited: its last draw may still be in the
/// pipe when the process is gone, so the reader is joined first.
fn drained(seen: &Mutex<String>, reader: std::thread::JoinHandle<()>) -> String {
    reader.join().unwrap();
    seen.lock().unwrap().clone()
}

fn exit_of(child: &mut Child) -> i32 {
    let mut code = None;
    wait_until("status --watch to exit", || {
        code = child.try_wait().unwrap().map(|s| s.code().unwrap_or(-1));
        code.is_some()
    });
    code.unwrap()
}

#[test]
fn watch_redraws_on_change_and_stops_at_a_halt() {
    let p = project("--max-task-iterations 1");
    let (mut child, seen, reader) = watch(&p);
    wait_until("the first draw", || {
        seen.lock().unwrap().contains("spec      demo")
    });
    let mut sh = Shell::new(&p);
    sh.ok("specrun task start 1.1");
    wait_until("the running attempt", || {
        seen.lock()
            .unwrap()
            .contains("running   task 1.1 attempt 1")
    });
    sh.ok("specrun task fail 1.1 --reason broken");
    assert_eq!(exit_of(&mut child), 0);
    let all = drained(&seen, reader);
    assert!(all.contains("HALTED"), "{all}");
}

#[test]
fn watch_on_a_deleted_spec_says_so_and_exits() {
    let p = project("");
    let (mut child, seen, reader) = watch(&p);
    wait_until("the first draw", || {
        seen.lock().unwrap().contains("spec      demo")
    });
    std::fs::remove_dir_all(p.path("specs/demo")).unwrap();
    assert_eq!(exit_of(&mut child), 2);
    drained(&seen, reader);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("spec demo was deleted while watching"),
        "{err}"
    );
    // Started on a spec that is already gone: the same clear error, at once.
    let out = p.specrun().args(["status", "--watch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
}

#[test]
fn status_fits_columns_shows_the_running_attempt_and_json_carries_every_figure() {
    let p = project("--max-output-tokens 1000 --max-minutes 90");
    let mut sh = Shell::new(&p);
    sh.ok("specrun task start 1.1");
    sh.ok(
        "specrun state merge specs/demo/.specrun-state.json '{\"usage\": {\"outputTokens\": 250}}'",
    );
    for cols in ["50", "80", "132"] {
        let out = p
            .specrun()
            .arg("status")
            .env("COLUMNS", cols)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let width: usize = cols.parse().unwrap();
        for l in text.lines().filter(|l| !l.starts_with("  specrun ")) {
            assert!(l.chars().count() <= width, "{cols}: {l:?}");
        }
        assert!(!text.contains('\x1b'), "no colour off a terminal");
        for needle in [
            "running   task 1.1 attempt 1",
            "250/1000 (25%)",
            "elapsed 0 (cap 90)",
            "remaining 90 min",
        ] {
            assert!(text.contains(needle), "{needle}:\n{text}");
        }
    }
    let doc: Value = serde_json::from_slice(
        &p.specrun()
            .args(["status", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let d = &doc["dashboard"];
    assert_eq!(d["running"]["task"], "1.1");
    assert_eq!(d["running"]["attempt"], 1);
    assert_eq!(
        (d["outputTokens"].as_u64(), d["maxOutputTokens"].as_u64()),
        (Some(250), Some(1000))
    );
    assert_eq!(
        (
            d["elapsedMinutes"].as_u64(),
            d["maxMinutes"].as_u64(),
            d["remainingMinutes"].as_u64()
        ),
        (Some(0), Some(90), Some(90))
    );
    assert_eq!(
        d["nextShell"],
        "specrun verify run --task 1.1 --spec demo --command true"
    );
    assert!(d["nextClaude"].as_str().unwrap().contains("1.1"));
}

fn statusline(p: &TempProject, stdin: &str) -> (i32, String) {
    let mut child = Command::new(bin_path())
        .arg("statusline")
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let _ = p;
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn statusline_prints_one_short_line_from_claude_codes_json_and_never_fails() {
    let p = project("--max-output-tokens 1000");
    let input = json!({"hook_event_name": "Status", "session_id": "s", "cwd": p.root(),
        "workspace": {"current_dir": p.root(), "project_dir": p.root()}, "model": {"id": "m"}});
    let (code, out) = statusline(&p, &input.to_string());
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "specrun demo 0/2 · 1.1 One · try 1/5 stops 0/30 tok 0%\n"
        )
    );
    for bad in [
        "",
        "not json",
        "[]",
        &json!({"cwd": "/no/such/dir"}).to_string(),
    ] {
        assert_eq!(statusline(&p, bad), (0, String::new()), "{bad:?}");
    }
}

#[test]
fn report_tells_the_story_in_markdown_json_and_one_html_file() {
    let p = project("--max-task-iterations 1");
    let mut sh = Shell::new(&p);
    sh.ok("specrun task start 1.1");
    sh.ok("specrun task fail 1.1 --reason 'first try broke'");
    sh.ok("specrun resume --raise-task 3");
    sh.ok("specrun task start 1.1");
    sh.ok("specrun verify run --task 1.1 --command true");
    sh.ok("specrun critique record --task 1.1 --stage post-code");
    sh.ok("specrun critique record --task 1.1 --stage post-test");
    sh.ok("specrun task complete 1.1 --check");
    sh.ok("specrun followup add --category IDEA --priority low --title 'cache it' --task 1.1");
    // What the hooks charge to the ledger, and a price table.
    sh.ok(
        r#"specrun state merge specs/demo/.specrun-state.json '{"ledger": {"tasks": {"1.1": {"byModel": {"m": {"input": 1000, "output": 200}}}}, "run": {"byModel": {"m": {"output": 7}}}}}'"#,
    );
    p.write(
        ".specrun/config.json",
        r#"{"prices": {"m": {"input": 3, "output": 15}}}"#,
    );
    // The prices in force are those taken at `state init`: a person's re-init takes them.
    sh.ok("specrun state init --spec demo");
    let doc: Value = serde_json::from_str(&sh.ok("specrun report --format json").stdout).unwrap();
    let status: Value = serde_json::from_str(&sh.ok("specrun status --json").stdout).unwrap();
    let t = &doc["tasks"][0];
    assert_eq!(t["attempts"].as_array().unwrap().len(), 2);
    assert_eq!(t["attempts"][0]["reason"], "first try broke");
    assert_eq!(t["evidence"]["command"], "true");
    assert!(t["postTestAt"].is_string());
    assert_eq!(t["followups"][0], "F1 IDEA low (open): cache it");
    assert_eq!(doc["halts"].as_array().unwrap().len(), 1);
    assert!(doc["halts"][0]["resumedAt"].is_string());
    assert_eq!(doc["totals"]["attempts"], 2);
    // Per-task cost figures are status's cost table (the ledger, priced).
    let row = &status["cost"]["tasks"][0];
    assert_eq!(row["id"], "1.1");
    assert_eq!(
        (t["tokens"].as_u64(), row["totalTokens"].as_u64()),
        (Some(1200), Some(1200))
    );
    assert_eq!(t["outputTokens"], row["tokens"]["output"]);
    assert_eq!(t["usd"], row["usd"]);
    assert_eq!(t["minutes"], row["minutes"]);
    assert!((t["usd"].as_f64().unwrap() - 0.006).abs() < 1e-9, "{t}");
    assert_eq!(doc["totals"]["ledgerTokens"], status["cost"]["totalTokens"]);
    assert_eq!(doc["totals"]["overheadTokens"], 7);
    assert_eq!(doc["tasks"][1]["tokens"], Value::Null, "task 1.2 never ran");
    let md = sh.ok("specrun report").stdout;
    assert!(
        md.contains("| 1.1 | One | yes | #1 failed, #2 done |"),
        "{md}"
    );
    assert!(
        md.contains(" | 1200 | 200 | 0.01 | exit 0 `true` |"),
        "{md}"
    );
    let html = sh.ok("specrun report --format html").stdout;
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("<svg"),
        "{html}"
    );
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
    // No execution yet: a clear refusal naming the step that starts one.
    let q = TempProject::git();
    let mut sq = Shell::new(&q);
    sq.ok("specrun new demo");
    q.write("specs/demo/tasks.md", TASKS);
    let out = sq.sh("specrun report");
    assert_eq!(out.code, 2);
    sq.follow(&out);
    sq.ok("specrun report");
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = Command::new(bin_path())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("finish") && text.contains("max-task-iterations"),
            "{shell}"
        );
    }
    let bash = Command::new(bin_path())
        .args(["completions", "bash"])
        .output()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("specrun.bash");
    std::fs::write(&file, &bash.stdout).unwrap();
    assert!(Command::new("bash")
        .arg("-n")
        .arg(&file)
        .status()
        .unwrap()
        .success());
    let out = Command::new(bin_path())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
