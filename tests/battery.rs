//! The whole-process battery: every known state field set to each boundary value, and every
//! verb and hook run on the result in a real git project. A run that exits 101 (a panic),
//! dies of a signal or outlives its bound fails the test, naming field, value and command.
//!
//! The fields are derived, not listed: every leaf of a state the real verbs wrote (task
//! start, verify, critique, task complete, task fail, an isolated group, the Stop hook
//! reading a transcript) and every field of the typed records the type check derives from
//! (`specrun::api::model::state::known_fields`).
//! Task ids and list indices become `*`: the value goes into every entry. Each field gets
//! every boundary value of the type the verbs gave it, null and one value of another type
//! (`values_for`). One project is prepared once; each mutation runs in a copy of it, four
//! at a time.
//!
//! The bound: a hook's is its `timeout` in hooks/hooks.json (Stop and SubagentStop 30 s,
//! SessionStart 10 s, PreToolUse 5 s: where Claude Code kills it), a verb's `common::BOUND`
//! (15 s).

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{self, Ran, TempProject};

const TASKS: &str = "# Tasks

## Phase 1

- [ ] 1.1 First
  - **Do**: write a
  - **Files**: a.txt
  - **Verify**: `test -f a.txt`
- [ ] 1.2 [P] Beta
  - **Files**: b.txt
  - **Verify**: `test -f b.txt`
- [ ] 1.3 [P] Gamma
  - **Files**: c.txt
  - **Verify**: `test -f c.txt`
- [ ] 1.4 [VERIFY] Check
  - **Verify**: `true`
- [ ] 1.5 After
  - **Files**: e.txt
  - **Verify**: `test -f e.txt`
";

const SESSION: &str = "battery-session";

/// The boundary numbers.
fn numbers() -> Vec<(&'static str, Value)> {
    vec![
        ("0", json!(0)),
        ("-1", json!(-1)),
        ("1.5", json!(1.5)),
        ("2^53", json!(9_007_199_254_740_992u64)),
        ("i64::MAX", json!(i64::MAX)),
        ("u64::MAX", json!(u64::MAX)),
        ("1e308", json!(1e308)),
    ]
}

/// The boundary texts: times at the calendar's edges and past them, and strings that
/// break byte-slicing, C strings and paths.
fn texts() -> Vec<(&'static str, Value)> {
    vec![
        ("year 0", json!("0000-01-01T00:00:00Z")),
        ("year 9999", json!("9999-12-31T23:59:59.999Z")),
        ("year +262143", json!("+262143-12-31T23:59:59Z")),
        ("garbage", json!("not a time ~~")),
        ("100,000 chars", json!("x".repeat(100_000))),
        ("split multi-byte", json!("aaaaaaaaaé€😀")),
        ("NUL", json!("a\u{0}b")),
        ("../", json!("../../etc/passwd")),
    ]
}

/// The values field `at` gets, by the type the verbs gave it in the prepared state: every
/// boundary value of that type, null, and one value of another type (the type check
/// treats every value of a wrong type alike: refused, or dropped by the lenient readers).
/// A field the verbs did not write gets every value.
fn values_for(base: Option<&Value>) -> Vec<(&'static str, Value)> {
    let null = ("null", Value::Null);
    match base {
        Some(Value::Number(_)) => numbers()
            .into_iter()
            .chain([null, ("garbage", json!("x"))])
            .collect(),
        Some(Value::String(_)) => texts().into_iter().chain([null, ("0", json!(0))]).collect(),
        Some(Value::Bool(b)) => vec![
            ("flipped", json!(!b)),
            null,
            ("0", json!(0)),
            ("garbage", json!("x")),
        ],
        Some(Value::Object(_) | Value::Array(_)) => vec![
            null,
            ("0", json!(0)),
            ("garbage", json!("x")),
            ("[]", json!([])),
        ],
        Some(Value::Null) | None => numbers().into_iter().chain(texts()).chain([null]).collect(),
    }
}

/// The value at `path` in `doc` (the first entry where a `*` stands).
fn value_at<'a>(doc: &'a Value, path: &[String]) -> Option<&'a Value> {
    let Some((head, rest)) = path.split_first() else {
        return Some(doc);
    };
    let child = match (head.as_str(), doc) {
        ("*", Value::Object(map)) => map.values().find_map(|v| value_at(v, rest)),
        ("*", Value::Array(items)) => items.iter().find_map(|v| value_at(v, rest)),
        (key, Value::Object(map)) => map.get(key).and_then(|v| value_at(v, rest)),
        _ => None,
    };
    child
}

/// What one mutation runs, in this order (read-only first; the state is written again
/// before each run, so every run sees the mutated value).
fn commands(root: &Path) -> Vec<(String, Vec<String>, Vec<u8>)> {
    let state = "specs/demo/.specrun-state.json";
    let plain: &[&[&str]] = &[
        &["state", "get", state],
        &["tasks", "list"],
        &["tasks", "next"],
        &["tasks", "show", "1.1"],
        &["tasks", "count"],
        &["verify", "status"],
        &["verify", "status", "--task", "1.1"],
        &["status"],
        &["snapshot"],
        &["statusline"],
        &["report"],
        &["report", "--format", "html"],
        &["critique", "status", "--task", "1.1"],
        &["ac", "list"],
        &["ac", "status"],
        &["followup", "list"],
        &["last-mile"],
        &["goal"],
        &["doctor"],
        &["finish"],
        &["state", "merge", state, r#"{"executionDriver":"manual"}"#],
        &["task", "complete", "1.1"],
        &[
            "task",
            "justify",
            "1.1",
            "--finding",
            "F1",
            "--reason",
            "battery",
        ],
        &["task", "start", "1.5"],
        &["task", "fail", "1.5", "--reason", "battery"],
        &["task", "rollback", "1.1", "--force"],
        &["task", "start", "1.3", "--worktree"],
        &["group", "merge", "--command", "true"],
        &["tasks", "check", "1.5"],
        &["resume"],
        &["cancel"],
    ];
    let mut out: Vec<(String, Vec<String>, Vec<u8>)> = plain
        .iter()
        .map(|args| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            (args.join(" "), args, Vec::new())
        })
        .collect();
    let base = json!({
        "session_id": SESSION, "cwd": root, "permission_mode": "bypassPermissions",
        "transcript_path": root.join("transcript.jsonl"),
    });
    let with = |extra: Value| {
        let mut doc = base.clone();
        specrun::api::model::state::merge_into(&mut doc, &extra);
        doc.to_string().into_bytes()
    };
    let hooks = [
        (
            "stop",
            json!({"hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "All tasks complete. SPEC_COMPLETE"}),
        ),
        (
            "subagent-stop",
            json!({"hook_event_name": "SubagentStop", "stop_hook_active": false,
            "agent_id": "agent-1", "agent_type": "specrun:spec-executor",
            "agent_transcript_path": root.join("transcript.jsonl"),
            "last_assistant_message": "done\nTASK_COMPLETE 1.1"}),
        ),
        (
            "session-start",
            json!({"hook_event_name": "SessionStart", "source": "startup"}),
        ),
        (
            "pre-tool-use",
            json!({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion",
            "tool_input": {"questions": [{"question": "which?"}]}}),
        ),
        (
            "pre-tool-use",
            json!({"hook_event_name": "PreToolUse", "tool_name": "Agent",
            "tool_input": {"subagent_type": "specrun:spec-executor", "prompt": "do 1.5"}}),
        ),
    ];
    for (event, extra) in hooks {
        let args = vec!["hook".to_string(), event.to_string()];
        out.push((format!("hook {event}"), args, with(extra)));
    }
    out
}

/// Each hook's bound is its `timeout` in hooks/hooks.json (what Claude Code kills it at);
/// a verb gets `common::BOUND`.
fn bound(command: &str) -> Duration {
    let hooks: Value =
        serde_json::from_str(include_str!("../plugin/hooks/hooks.json")).expect("hooks.json");
    let event = match command {
        "hook stop" => "Stop",
        "hook subagent-stop" => "SubagentStop",
        "hook session-start" => "SessionStart",
        "hook pre-tool-use" => "PreToolUse",
        _ => return common::BOUND,
    };
    let secs = hooks["hooks"][event][0]["hooks"][0]["timeout"]
        .as_u64()
        .expect("every hook has a timeout");
    Duration::from_secs(secs)
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

fn ok(dir: &Path, args: &[&str], stdin: &[u8]) {
    let ran = common::run_within(dir, args, stdin, common::BOUND);
    let said = format!("{}{}", ran.stdout, ran.stderr);
    assert_eq!(ran.code, Some(0), "setup: specrun {args:?}: {said}");
}

/// The prepared project: every part of the state the verbs write, written by them.
fn prepare() -> TempProject {
    let p = TempProject::git();
    let root = p.root();
    git(&root, &["config", "user.email", "t@example.com"]);
    git(&root, &["config", "user.name", "t"]);
    p.spec("demo", TASKS);
    p.write(".gitignore", ".specrun/\ntranscript.jsonl\n");
    p.commit_all("spec");
    ok(&root, &["state", "init", "--spec", "demo"], b"");
    let state = "specs/demo/.specrun-state.json";
    ok(
        &root,
        &[
            "state",
            "merge",
            state,
            &json!({"sessionId": SESSION}).to_string(),
        ],
        b"",
    );
    ok(&root, &["task", "start", "1.1"], b"");
    p.write("a.txt", "a\n");
    ok(&root, &["verify", "run", "--task", "1.1"], b"");
    for stage in ["post-code", "post-test"] {
        let record = common::critique_input(stage).to_string();
        let args = [
            "critique", "record", "--task", "1.1", "--stage", stage, "--file", "-",
        ];
        ok(&root, &args, record.as_bytes());
    }
    ok(&root, &["task", "complete", "1.1", "--check"], b"");
    let line = |id: &str| {
        json!({"type": "assistant", "message": {"id": id, "role": "assistant", "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 10, "output_tokens": 20}, "content": [{"type": "text", "text": "hi"}]}})
        .to_string()
    };
    p.write(
        "transcript.jsonl",
        &format!("{}\n{}\n", line("m1"), line("m2")),
    );
    let stop = json!({"session_id": SESSION, "cwd": root, "hook_event_name": "Stop",
        "transcript_path": root.join("transcript.jsonl"), "stop_hook_active": false,
        "last_assistant_message": "working"});
    ok(&root, &["hook", "stop"], stop.to_string().as_bytes());
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "1.1"]);
    ok(&root, &["task", "start", "1.2", "--worktree"], b"");
    let claim = json!({"session_id": SESSION, "cwd": root, "hook_event_name": "SubagentStop",
        "agent_id": "agent-1", "agent_type": "specrun:spec-executor", "stop_hook_active": true,
        "last_assistant_message": "TASK_COMPLETE 1.2"});
    ok(
        &root,
        &["hook", "subagent-stop"],
        claim.to_string().as_bytes(),
    );
    let add: Vec<&str> = "followup add --category IDEA --priority low --title later"
        .split(' ')
        .collect();
    ok(&root, &add, b"");
    let fail = ["task", "fail", "1.2", "--reason", "broken"];
    let fail = common::run_within(&root, &fail, b"", common::BOUND);
    assert!(fail.code.is_some(), "setup: task fail 1.2 hung");
    p
}

/// Every leaf of `doc`, task ids and list indices as `*`.
fn leaves(doc: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let items: Vec<(String, &Value)> = match doc {
        Value::Object(map) => map.iter().map(|(k, v)| (generic(k), v)).collect(),
        Value::Array(items) => items.iter().map(|v| ("*".to_string(), v)).collect(),
        _ => {
            out.push(at.clone());
            return;
        }
    };
    for (key, v) in items {
        at.push(key);
        leaves(v, at, out);
        at.pop();
    }
}

/// A task id (`1.2`) or an index stands for every entry.
fn generic(key: &str) -> String {
    let id = !key.is_empty()
        && key
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if id {
        "*".into()
    } else {
        key.into()
    }
}

/// `doc` with every place `path` names set to `value` (created where absent; `*` is every
/// entry present).
fn set(doc: &mut Value, path: &[String], value: &Value) {
    let Some((head, rest)) = path.split_first() else {
        *doc = value.clone();
        return;
    };
    if head == "*" {
        // No entry to set: one for task 1.5 (or a first list item) is made.
        match doc {
            Value::Object(map) if !map.is_empty() => {
                map.values_mut().for_each(|v| set(v, rest, value))
            }
            Value::Array(items) if !items.is_empty() => {
                items.iter_mut().for_each(|v| set(v, rest, value))
            }
            Value::Array(items) => items.push(entry(rest, value)),
            _ => *doc = json!({ "1.5": entry(rest, value) }),
        }
        return;
    }
    if !doc.is_object() {
        *doc = json!({});
    }
    let child = doc
        .as_object_mut()
        .unwrap()
        .entry(head.clone())
        .or_insert(Value::Null);
    set(child, rest, value);
}

/// A new entry holding `value` at `rest`; a `*` inside it is a one-item list.
fn entry(rest: &[String], value: &Value) -> Value {
    let mut v = if rest.first().is_some_and(|k| k == "*") {
        json!([])
    } else {
        json!({})
    };
    set(&mut v, rest, value);
    v
}

/// The fields to mutate: the prepared state's leaves and the type check's paths.
fn fields(state: &Value) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    leaves(state, &mut Vec::new(), &mut out);
    for known in specrun::api::model::state::known_fields() {
        out.push(known.split('.').map(str::to_string).collect());
    }
    out.sort();
    out.dedup();
    out
}

fn copy_project(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
    // The member worktrees' links name the prepared project: point them at the copy, so no
    // command in a copy writes into the prepared project's git directory while another
    // thread copies it (`git worktree repair` left them pointing there).
    let canonical = from.canonicalize().unwrap();
    let retarget = |file: &Path| {
        let Ok(text) = std::fs::read_to_string(file) else {
            return;
        };
        let text = text
            .replace(&*canonical.to_string_lossy(), &to.to_string_lossy())
            .replace(&*from.to_string_lossy(), &to.to_string_lossy());
        std::fs::write(file, &text).unwrap();
        assert!(
            !text.contains(&*from.to_string_lossy()),
            "{}: {text}",
            file.display()
        );
    };
    for dir in [".specrun/worktrees/demo", ".git/worktrees"] {
        let Ok(entries) = std::fs::read_dir(to.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            retarget(&entry.path().join(".git"));
            retarget(&entry.path().join("gitdir"));
        }
    }
}

/// What was wrong with a run, if anything: a panic, a signal, or past its bound.
fn verdict(ran: &Ran, limit: Duration) -> Option<String> {
    let what = if ran.killed {
        format!("over its {limit:?} bound")
    } else if ran.code == Some(101) {
        "exit 101 (panic)".to_string()
    } else {
        format!("signal {}", ran.signal?)
    };
    let panic = ran.stderr.lines().find(|l| l.contains("panicked"));
    Some(format!("{what} {}", panic.unwrap_or("")))
}

/// Every command on `state` in `dir` (a copy of the prepared project): the failures, and
/// how many runs there were.
fn run_all(dir: &Path, state: &Value, mutation: &str) -> (Vec<String>, usize) {
    let bytes = serde_json::to_vec_pretty(state).unwrap();
    let mut failures = Vec::new();
    let commands = commands(dir);
    for (label, args, stdin) in &commands {
        std::fs::write(dir.join("specs/demo/.specrun-state.json"), &bytes).unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let limit = bound(label);
        if let Some(what) = verdict(&common::run_within(dir, &args, stdin, limit), limit) {
            failures.push(format!("{mutation}: `specrun {label}`: {what}"));
        }
    }
    (failures, commands.len())
}

#[test]
fn every_field_at_every_boundary_under_every_command() {
    let prepared = prepare();
    let state_file = prepared.path("specs/demo/.specrun-state.json");
    let base: Value = serde_json::from_slice(&std::fs::read(&state_file).unwrap()).unwrap();
    let fields = fields(&base);
    let jobs: Vec<(&Vec<String>, &'static str, Value)> = fields
        .iter()
        .flat_map(|path| {
            let values = values_for(value_at(&base, path));
            values.into_iter().map(move |(n, v)| (path, n, v))
        })
        .collect();
    let scratch = tempfile::tempdir().unwrap();
    let (next, runs) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let failures = Mutex::new(Vec::new());
    let started = Instant::now();
    // Four at a time on two cores: much of a run waits on fsync and git, not the CPU.
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((path, name, value)) = jobs.get(i) else {
                    break;
                };
                let mut state = base.clone();
                set(&mut state, path, value);
                let dir = scratch.path().join(i.to_string());
                copy_project(&prepared.root(), &dir);
                let (found, n) = run_all(&dir, &state, &format!("{} = {name}", path.join(".")));
                runs.fetch_add(n, Ordering::Relaxed);
                failures.lock().unwrap().extend(found);
                let _ = std::fs::remove_dir_all(&dir);
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    eprintln!(
        "battery: {} fields, {} mutations, {} runs in {:.0?}, {} failures",
        fields.len(),
        jobs.len(),
        runs.load(Ordering::Relaxed),
        started.elapsed(),
        failures.len()
    );
    let list = failures.join("\n");
    assert!(failures.is_empty(), "{} failures:\n{list}", failures.len());
}
