//! `specrun headless run` against a stand-in `claude` (a shell script printing stream-json
//! lines as each invocation's mode says): the command line it builds, the version check,
//! and how each ending is judged and resumed, without the real client (the e2e tests in
//! end_to_end_headless.rs run that).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{bin_path, write_executable, TempProject};

const SESSION: &str = "5e55a0d1-0000-4000-8000-0000000000aa";

const FAKE_CLAUDE: &str = r#"#!/bin/sh
dir="$FAKE_CLAUDE_DIR"
if [ "$1" = "--version" ]; then echo "${FAKE_CLAUDE_VERSION:-2.1.332} (Claude Code)"; exit 0; fi
n=$(( $(cat "$dir/n" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$dir/n"
for a in "$@"; do printf '%s\n' "$a"; done > "$dir/args-$n"
mode=$(sed -n "${n}p" "$dir/modes")
echo '{"type":"system","subtype":"init","session_id":"'"$SESSION"'"}'
ok='{"type":"result","subtype":"success","is_error":false,"num_turns":3,"total_cost_usd":0.5,"permission_denials":[{"tool_name":"Write","tool_input":{"file_path":"/etc/x"}}],"result":"done"}'
case "$mode" in
  crash) exit 1 ;;
  ok) echo "$ok" ;;
  linger) echo "$ok"; exec sleep 300 ;;
  api529) echo '{"type":"result","subtype":"success","is_error":true,"num_turns":1,"total_cost_usd":0.01,"api_error_status":529,"result":"API Error: 529 overloaded"}'; exit 1 ;;
  silent) exec sleep 300 ;;
  member) for step in "state init" "verify run --task 1.1" "tasks check 1.1"; do
      $SPECRUN $step --spec demo >/dev/null 2>&1 || exit 3
    done; echo "$ok" ;;
esac
"#;

struct Fake {
    project: TempProject,
    dir: tempfile::TempDir,
}

impl Fake {
    /// A project with a one-task spec and a stand-in claude that plays `modes`, one per run.
    fn new(modes: &[&str]) -> Fake {
        let project = TempProject::git();
        project.spec(
            "demo",
            "# Tasks\n\n- [ ] 1.1 One\n  - **Do**: x\n  - **Verify**: `true`\n",
        );
        project.commit_all("spec");
        let dir = tempfile::tempdir().unwrap();
        write_executable(&dir.path().join("claude"), FAKE_CLAUDE);
        std::fs::write(dir.path().join("modes"), modes.join("\n") + "\n").unwrap();
        Fake { project, dir }
    }

    fn run(&self, env: &[(&str, &str)], extra: &[&str]) -> (Output, Duration) {
        let plugin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("plugin");
        let mut cmd = Command::new(bin_path());
        cmd.current_dir(self.project.root())
            .env_remove("CLAUDECODE")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env("FAKE_CLAUDE_DIR", self.dir.path())
            .env("SESSION", SESSION)
            .args(["headless", "run", "--spec", "demo", "--json", "--claude"])
            .arg(self.dir.path().join("claude"))
            .arg("--plugin-dir")
            .arg(&plugin)
            .args(["--session-id", SESSION])
            .args(extra);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let started = Instant::now();
        let out = cmd.output().unwrap();
        (out, started.elapsed())
    }

    /// The arguments of the `n`th run (1-based), one per line.
    fn args(&self, n: usize) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join(format!("args-{n}")))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn runs(&self) -> usize {
        (1..10)
            .take_while(|n| self.dir.path().join(format!("args-{n}")).exists())
            .count()
    }
}

fn summary(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn has_pair(args: &[String], flag: &str, value: &str) -> bool {
    args.windows(2).any(|w| w[0] == flag && w[1] == value)
}

#[test]
fn inside_claude_code_it_is_refused_without_naming_itself() {
    let fake = Fake::new(&["ok"]);
    let (out, _) = fake.run(&[("CLAUDECODE", "1")], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a person's decision"), "{err}");
    assert!(!err.contains("headless"), "{err}");
    assert_eq!(fake.runs(), 0, "claude was started");
}

#[test]
fn a_client_older_than_the_supported_range_is_refused_before_it_runs() {
    let fake = Fake::new(&["ok"]);
    let (out, _) = fake.run(&[("FAKE_CLAUDE_VERSION", "2.1.100")], &[]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Claude Code 2.1.100") && err.contains("older than the supported range"),
        "{err}"
    );
    assert_eq!(fake.runs(), 0, "an unsupported claude was run");
}

/// The command line: plugin, explicit permissions, the session pinned, the implement skill,
/// stream-json with --verbose; a crash without a result is resumed once with --resume;
/// the second run's result is the ledger's, and an unfinished spec exits 1.
#[test]
fn a_crash_is_resumed_once_with_the_same_session_and_the_result_is_recorded() {
    let fake = Fake::new(&["crash", "ok"]);
    let (out, _) = fake.run(&[], &["--max-turns", "40", "--max-budget-usd", "2.5"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fake.runs(), 2);
    let (first, second) = (fake.args(1), fake.args(2));
    let plugin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("plugin");
    for args in [&first, &second] {
        assert!(
            has_pair(args, "--plugin-dir", &plugin.display().to_string()),
            "{args:?}"
        );
        assert!(
            args.contains(&"--dangerously-skip-permissions".to_string()),
            "{args:?}"
        );
        assert!(has_pair(args, "-p", "/specrun:implement demo"), "{args:?}");
        assert!(has_pair(args, "--output-format", "stream-json"), "{args:?}");
        assert!(args.contains(&"--verbose".to_string()), "{args:?}");
        assert!(has_pair(args, "--max-turns", "40"), "{args:?}");
        assert!(has_pair(args, "--max-budget-usd", "2.5"), "{args:?}");
    }
    assert!(has_pair(&first, "--session-id", SESSION), "{first:?}");
    assert!(has_pair(&second, "--resume", SESSION), "{second:?}");
    let s = summary(&out);
    let attempts = s["attempts"].as_array().unwrap();
    assert_eq!(attempts[0]["ending"], "exited");
    assert_eq!(attempts[1]["ending"], "result");
    assert_eq!(attempts[1]["result"]["totalCostUsd"], 0.5);
    assert_eq!(
        attempts[1]["result"]["permissionDenials"][0],
        "Write: /etc/x"
    );
    assert_eq!(s["costUsd"], 0.5);
    let verdict = s["verdict"].as_str().unwrap();
    assert!(verdict.contains("not completed"), "{verdict}");
    assert!(
        verdict.contains("exited 1 without a result event"),
        "{verdict}"
    );
    let events = std::fs::read_to_string(fake.project.path(".specrun/events.jsonl")).unwrap();
    let headless: Vec<Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "headless")
        .collect();
    assert_eq!(headless.len(), 2, "{events}");
    assert_eq!(headless[1]["result"]["numTurns"], 3);
}

#[test]
fn allowed_tools_replace_the_permission_skip() {
    let fake = Fake::new(&["ok"]);
    let (_, _) = fake.run(&[], &["--allowed-tools", "Bash Read Agent"]);
    let args = fake.args(1);
    assert!(
        has_pair(&args, "--allowedTools", "Bash Read Agent"),
        "{args:?}"
    );
    assert!(!args.contains(&"--dangerously-skip-permissions".to_string()));
}

/// A transient API error is resumed once; a second one ends the run.
#[test]
fn a_transient_api_error_is_resumed_once() {
    let fake = Fake::new(&["api529", "api529", "ok"]);
    let (out, _) = fake.run(&[], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fake.runs(), 2, "resumed more than once");
    let verdict = summary(&out)["verdict"].as_str().unwrap().to_string();
    assert!(verdict.contains("API Error: 529"), "{verdict}");
}

/// A client that stays after its result is stopped and its result kept: no resume, and
/// the run ends within the no-progress bound, not the client's 300 s.
#[test]
fn a_client_hanging_after_its_result_is_stopped_and_not_resumed() {
    let fake = Fake::new(&["linger", "ok"]);
    let (out, wall) = fake.run(&[], &["--idle-timeout", "2"]);
    assert_eq!(fake.runs(), 1, "resumed after a result");
    assert!(wall < Duration::from_secs(30), "took {wall:?}");
    let s = summary(&out);
    assert_eq!(s["attempts"][0]["ending"], "result", "{s:#}");
}

/// Silence twice: stopped at the bound each time, resumed once, and the stand-in's
/// `sleep` does not outlive the run.
#[test]
fn silence_is_stopped_at_the_bound_and_resumed_once() {
    let fake = Fake::new(&["silent", "silent", "ok"]);
    let (out, wall) = fake.run(&[], &["--idle-timeout", "2", "--timeout", "60"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fake.runs(), 2);
    assert!(wall < Duration::from_secs(30), "took {wall:?}");
    let verdict = summary(&out)["verdict"].as_str().unwrap().to_string();
    assert!(verdict.contains("no stream line for 2 s"), "{verdict}");
    assert!(
        !sleeping_in(fake.dir.path()),
        "the stand-in's sleep outlived the run"
    );
}

/// The wall-clock bound stops a run that keeps a silent client past it, with no resume.
#[test]
fn the_wall_clock_bound_ends_the_run_without_a_resume() {
    let fake = Fake::new(&["silent", "ok"]);
    let (out, wall) = fake.run(&[], &["--idle-timeout", "60", "--timeout", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fake.runs(), 1);
    assert!(wall < Duration::from_secs(30), "took {wall:?}");
    let verdict = summary(&out)["verdict"].as_str().unwrap().to_string();
    assert!(verdict.contains("wall-clock bound of 2 s"), "{verdict}");
}

/// Whether a process started with FAKE_CLAUDE_DIR=`dir` in its environment still runs.
fn sleeping_in(dir: &Path) -> bool {
    let needle = format!("FAKE_CLAUDE_DIR={}", dir.display());
    std::thread::sleep(Duration::from_millis(300));
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|p| {
            std::fs::read(p.path().join("environ"))
                .is_ok_and(|e| e.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
                && std::fs::read_to_string(p.path().join("stat")).is_ok_and(|s| {
                    !s.rsplit_once(')')
                        .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
                })
        })
}

/// `waves --json` as a workflow reads it: the plan, and one wave's matrix alone.
#[test]
fn waves_print_the_plan_and_one_waves_matrix() {
    let p = TempProject::git();
    p.spec(
        "demo",
        "# Tasks\n- [ ] 1.1 [P] A\n- [ ] 1.2 [P] B\n- [ ] 1.3 [VERIFY] Check\n",
    );
    let run = |args: &[&str]| {
        Command::new(bin_path())
            .current_dir(p.root())
            .env_remove("CLAUDECODE")
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["waves", "--spec", "demo", "--json"]);
    assert!(out.status.success());
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["waves"].as_array().map(Vec::len), Some(2), "{plan}");
    assert_eq!(plan["waves"][0]["parallel"], true);
    assert_eq!(plan["matrix"]["include"][2]["task"], "1.3");
    let out = run(&["waves", "--spec", "demo", "--wave", "1", "--json"]);
    let matrix: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        matrix,
        serde_json::json!({"include": [
            {"task": "1.1", "title": "A", "wave": 1},
            {"task": "1.2", "title": "B", "wave": 1}
        ]})
    );
    let out = run(&["waves", "--spec", "demo", "--wave", "3", "--json"]);
    assert_eq!(out.status.code(), Some(1), "no wave 3");
}

fn git_clone(from: &Path, to: &Path) {
    let out = Command::new("git")
        .args(["clone", "-q"])
        .arg(from)
        .arg(to)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn specrun_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin_path())
        .current_dir(dir)
        .env_remove("CLAUDECODE")
        .args(args)
        .output()
        .unwrap()
}

/// A job's state and evidence travel as one bundle: adopted by another checkout of the same
/// tree; refused, with nothing written, when its digest does not match or the tree differs.
#[test]
fn export_then_import_adopts_on_the_same_tree_and_refuses_a_tampered_or_foreign_one() {
    let a = TempProject::git();
    a.spec("demo", "# Tasks\n- [ ] 1.1 One\n  - **Verify**: `true`\n");
    a.commit_all("spec");
    a.init_state("demo");
    let out = specrun_in(
        &a.root(),
        &["verify", "run", "--task", "1.1", "--spec", "demo"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dirs = tempfile::tempdir().unwrap();
    let dirs_path = std::fs::canonicalize(dirs.path()).unwrap();
    let bundle = dirs_path.join("bundle.json");
    let out = specrun_in(
        &a.root(),
        &["headless", "export", "--spec", "demo", "--out"]
            .iter()
            .copied()
            .chain([bundle.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let b = dirs_path.join("b");
    git_clone(&a.root(), &b);
    let state = "specs/demo/.specrun-state.json";
    assert!(!b.join(state).exists(), "the state is not committed");
    let import = |dir: &Path, file: &Path| {
        specrun_in(
            dir,
            &["headless", "import", "--file", file.to_str().unwrap()],
        )
    };
    let out = import(&b, &bundle);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(b.join(state)).unwrap(),
        a.read(state),
        "the state was not adopted as exported"
    );
    let st: Value = serde_json::from_str(&std::fs::read_to_string(b.join(state)).unwrap()).unwrap();
    assert_eq!(st["taskEvidence"]["1.1"]["exitCode"], 0, "{st:#}");
    // The spec's events travelled too, each line once however often it is imported.
    let events = |dir: &Path| std::fs::read_to_string(dir.join(".specrun/events.jsonl")).unwrap();
    let verify_line = |text: &str| {
        text.lines()
            .filter(|l| l.contains("\"event\":\"verify\""))
            .count()
    };
    assert_eq!(verify_line(&events(&b)), 1, "{}", events(&b));
    assert_eq!(
        verify_line(&events(&b)),
        verify_line(&a.read(".specrun/events.jsonl"))
    );
    assert!(import(&b, &bundle).status.success());
    assert_eq!(verify_line(&events(&b)), 1, "{}", events(&b));

    // Tampered: the evidence's exit code changed, the digest kept.
    let c = dirs_path.join("c");
    git_clone(&a.root(), &c);
    let tampered = dirs_path.join("tampered.json");
    let text = std::fs::read_to_string(&bundle).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let key = ".specrun-state.json";
    let s = v["files"][key]
        .as_str()
        .unwrap()
        .replace("\"exitCode\": 0", "\"exitCode\": 1");
    v["files"][key] = Value::String(s);
    std::fs::write(&tampered, v.to_string()).unwrap();
    let out = import(&c, &tampered);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("digest does not match"));
    assert!(!c.join(state).exists(), "a tampered bundle wrote the state");

    // Another tree: a commit the bundle's evidence never saw.
    std::fs::write(c.join("extra.txt"), "x\n").unwrap();
    let out = import(&c, &bundle);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("this checkout's tree is"), "{err}");
    assert!(!c.join(state).exists(), "a foreign tree adopted the state");
}

/// Without --plugin-dir the plugin is the checkout's plugin/ beside this binary
/// (target/<profile>/specrun); a --plugin-dir that holds no plugin is refused before claude runs.
#[test]
fn the_plugin_defaults_to_the_checkouts_and_a_wrong_one_is_refused() {
    let fake = Fake::new(&["ok"]);
    let run = |extra: &[&str]| {
        Command::new(bin_path())
            .current_dir(fake.project.root())
            .env_remove("CLAUDECODE")
            .env("FAKE_CLAUDE_DIR", fake.dir.path())
            .env("SESSION", SESSION)
            .args(["headless", "run", "--spec", "demo", "--claude"])
            .arg(fake.dir.path().join("claude"))
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&["--plugin-dir", "nowhere"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("plugin"));
    assert_eq!(fake.runs(), 0);
    run(&[]);
    let plugin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("plugin");
    assert!(
        has_pair(&fake.args(1), "--plugin-dir", &plugin.display().to_string()),
        "{:?}",
        fake.args(1)
    );
}

/// A wave member's job (`--task`): the prompt names the task and the manual driver, and
/// the run is judged by that task alone, ticked with passing evidence.
#[test]
fn a_members_run_does_its_one_task_and_is_judged_by_it() {
    let fake = Fake::new(&["ok", "member"]);
    let bin = bin_path();
    let env = [("SPECRUN", bin.to_str().unwrap())];
    let (out, _) = fake.run(&env, &["--task", "9.9"]);
    assert_eq!(out.status.code(), Some(2), "an unknown task is refused");
    assert_eq!(fake.runs(), 0);
    let (out, _) = fake.run(&env, &["--task", "1.1"]);
    assert_eq!(out.status.code(), Some(1));
    let s = summary(&out);
    assert!(
        s["verdict"]
            .as_str()
            .unwrap()
            .starts_with("task 1.1 of spec demo not done"),
        "{s}"
    );
    assert!(
        has_pair(
            &fake.args(1),
            "-p",
            "/specrun:implement demo --manual --task 1.1"
        ),
        "{:?}",
        fake.args(1)
    );
    let (out, _) = fake.run(&env, &["--task", "1.1"]);
    let s = summary(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert_eq!(
        s["verdict"], "task 1.1 of spec demo done (1 attempt)",
        "{s}"
    );
    assert_eq!(s["completed"], true);
}
