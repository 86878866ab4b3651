//! `specrun goal`: the condition, its limit, readiness from a fake `claude` and the
//! settings files, and the driver it recommends.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, TempProject};

/// A controlled environment: PATH holds only `tools/` (fake claude and the few programs the
/// fake needs), HOME is empty, the managed settings path is private.
struct Env {
    project: TempProject,
    home: tempfile::TempDir,
    tools: tempfile::TempDir,
}

impl Env {
    fn new(tasks_md: &str) -> Env {
        let project = TempProject::git();
        project.spec("demo", tasks_md);
        let tools = tempfile::tempdir().unwrap();
        // No `kill`: the probe signals the process group itself.
        let sleep = which("sleep").expect("sleep is installed");
        std::os::unix::fs::symlink(sleep, tools.path().join("sleep")).unwrap();
        Env {
            project,
            home: tempfile::tempdir().unwrap(),
            tools,
        }
    }

    fn fake_claude(&self, script: &str) {
        let path = self.tools.path().join("claude");
        common::write_executable(&path, &format!("#!/bin/sh\n{script}\n"));
    }

    fn managed(&self) -> PathBuf {
        self.home.path().join("managed-settings.json")
    }

    fn user_settings(&self, text: &str) {
        let dir = self.home.path().join(".claude");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("settings.json"), text).unwrap();
    }

    fn goal(&self, extra: &[&str]) -> (i32, Value, String) {
        let out = self
            .project
            .specrun()
            .arg("goal")
            .args(extra)
            .env("PATH", self.tools.path())
            .env("HOME", self.home.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env("SPECRUN_MANAGED_SETTINGS", self.managed())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code().unwrap_or(-1), json, stderr)
    }
}

fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

fn warnings(v: &Value) -> String {
    v["warnings"].to_string()
}

const TASKS: &str = "- [x] 1.1 First\n- [ ] 1.2 Second\n  - **Verify**: `cargo test`\n";

#[test]
fn output_has_every_field_and_a_transcript_verifiable_condition() {
    let env = Env::new(TASKS);
    env.fake_claude("echo '2.1.197 (Claude Code)'");
    env.project.init_state("demo");
    let (code, v, _) = env.goal(&["--max-turns", "9"]);
    assert_eq!(code, 0);
    let condition = v["condition"].as_str().unwrap();
    assert_eq!(v["slashCommand"], format!("/goal {condition}"));
    for proof in [
        "specrun verify status --spec demo --phase execution",
        "specrun tasks count --spec demo",
        "\"pending\":0",
        "ALL_TASKS_COMPLETE",
        "A halt ends this goal",
        "checked 9 times",
        "1/2 tasks checked",
    ] {
        assert!(condition.contains(proof), "{proof:?} not in {condition}");
    }
    assert_eq!(v["conditionLength"]["limit"], 4000);
    assert_eq!(v["conditionLength"]["status"], "within-limit");
    assert_eq!(
        v["conditionLength"]["chars"].as_u64().unwrap() as usize,
        condition.encode_utf16().count()
    );
    let r = &v["readiness"];
    assert_eq!(r["claudeCodeVersion"], "2.1.197");
    assert_eq!(r["meetsMinimum"], true);
    assert_eq!(r["hooksRestricted"], false);
    assert!(r["minimum"].is_string());
    assert!(r["reasons"].as_array().unwrap().len() >= 2);
    assert_eq!(v["recommendedDriver"], "native-goal");
    assert_eq!(v["evidenceProtocol"].as_array().unwrap().len(), 5);
    assert_eq!(v["warnings"], serde_json::json!([]));
}

/// A goal set on an execution that cannot run is never met: the output says why first.
#[test]
fn a_missing_or_halted_execution_is_warned_about() {
    let env = Env::new(TASKS);
    let (code, v, _) = env.goal(&[]);
    assert_eq!(code, 0);
    assert!(
        warnings(&v).contains("has no execution state: run `specrun state init --spec demo`"),
        "{v}"
    );
    env.project.init_state("demo");
    let (_, v, _) = env.goal(&[]);
    assert_eq!(v["warnings"], serde_json::json!([]));
    let path = env.project.path("specs/demo/.specrun-state.json");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    state["halt"] = serde_json::json!({"kind": "stall", "reason": "5 stops without progress", "at": "2026-01-01T00:00:00Z"});
    std::fs::write(&path, state.to_string()).unwrap();
    let (code, v, _) = env.goal(&[]);
    assert_eq!(code, 0);
    assert!(
        warnings(&v).contains("spec demo is halted (5 stops without progress): the goal cannot be met until a person runs `specrun resume --spec demo`"),
        "{v}"
    );
}

#[test]
fn condition_never_exceeds_the_limit_for_a_200_char_name_and_500_tasks() {
    let project = TempProject::git();
    let name = "s".repeat(200);
    let tasks: String = (1..=500)
        .map(|i| format!("- [ ] {i}.1 Implement part {i} of a long feature with a long title\n  - **Verify**: `cargo test part_{i}`\n"))
        .collect();
    project.spec(&name, &tasks);
    let out = project
        .specrun()
        .args(["goal", "--spec", &name])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let condition = v["condition"].as_str().unwrap();
    assert!(condition.encode_utf16().count() <= 4000);
    assert_eq!(v["conditionLength"]["status"], "compressed");
    assert!(condition.contains(&name));
    assert!(condition.contains("ALL_TASKS_COMPLETE"));
    assert!(warnings(&v).contains("shortened"));
}

#[test]
fn no_claude_on_path_leaves_readiness_unknown_but_recommends_a_driver() {
    let env = Env::new(TASKS);
    let (code, v, _) = env.goal(&[]);
    assert_eq!(code, 0);
    let r = &v["readiness"];
    assert!(r["claudeCodeVersion"].is_null());
    assert!(r["meetsMinimum"].is_null());
    assert!(r["reasons"].to_string().contains("not on PATH"));
    assert_eq!(v["recommendedDriver"], "stop-hook");
}

#[test]
fn an_old_claude_gets_the_stop_hook_driver() {
    let env = Env::new(TASKS);
    env.fake_claude("echo '2.0.76 (Claude Code)'");
    let (_, v, _) = env.goal(&[]);
    assert_eq!(v["readiness"]["meetsMinimum"], false);
    assert_eq!(v["recommendedDriver"], "stop-hook");
}

#[test]
fn a_failing_claude_is_a_reason_not_a_crash() {
    let env = Env::new(TASKS);
    env.fake_claude("echo broken >&2; exit 3");
    let (code, v, _) = env.goal(&[]);
    assert_eq!(code, 0);
    assert!(v["readiness"]["reasons"].to_string().contains("broken"));
    assert_eq!(v["recommendedDriver"], "stop-hook");
}

fn alive(pid: &str) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn a_hanging_claude_is_killed_with_its_children() {
    let env = Env::new(TASKS);
    let pid_file = env.home.path().join("child.pid");
    env.fake_claude(&format!(
        "sleep 300 &\necho $! > '{}'\nwait",
        pid_file.display()
    ));
    let (code, v, _) = env.goal(&[]);
    assert_eq!(code, 0);
    assert!(warnings(&v).contains("did not answer within 2 s"), "{v}");
    assert!(v["readiness"]["claudeCodeVersion"].is_null());
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let pid = pid.trim();
    // The kill is asynchronous; give the kernel a moment to reap.
    for _ in 0..100 {
        if !alive(pid) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the probe's child {pid} survived");
}

#[test]
fn malformed_settings_are_named_in_warnings() {
    let env = Env::new(TASKS);
    env.fake_claude("echo 2.1.197");
    env.project.write(".claude/settings.json", "{ not json");
    let (code, v, stderr) = env.goal(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(warnings(&v).contains(".claude/settings.json"), "{v}");
    assert!(v["readiness"]["hooksRestricted"].is_null());
    assert_eq!(v["recommendedDriver"], "stop-hook");
}

#[test]
fn disable_all_hooks_in_user_settings_means_manual() {
    let env = Env::new(TASKS);
    env.fake_claude("echo 2.1.197");
    env.user_settings(r#"{"disableAllHooks": true}"#);
    let (_, v, _) = env.goal(&[]);
    assert_eq!(v["readiness"]["hooksRestricted"], true);
    assert_eq!(v["recommendedDriver"], "manual");
    let reasons = v["readiness"]["reasons"].to_string();
    assert!(reasons.contains("disableAllHooks"), "{reasons}");
    assert!(reasons.contains("hooks are restricted"), "{reasons}");
}

#[test]
fn managed_allow_managed_hooks_only_means_manual() {
    let env = Env::new(TASKS);
    env.fake_claude("echo 2.1.197");
    std::fs::write(env.managed(), r#"{"allowManagedHooksOnly": true}"#).unwrap();
    let (_, v, _) = env.goal(&[]);
    assert_eq!(v["recommendedDriver"], "manual");
    assert!(v["readiness"]["reasons"]
        .to_string()
        .contains("allowManagedHooksOnly"));
}

#[test]
fn local_settings_are_read_too() {
    let env = Env::new(TASKS);
    env.fake_claude("echo 2.1.197");
    env.project.write(
        ".claude/settings.local.json",
        r#"{"disableAllHooks": true}"#,
    );
    let (_, v, _) = env.goal(&[]);
    assert_eq!(v["recommendedDriver"], "manual");
}

#[test]
fn max_turns_must_be_a_positive_integer() {
    let env = Env::new(TASKS);
    for bad in ["0", "-3", "abc", "1.5"] {
        let (code, v, stderr) = env.goal(&[&format!("--max-turns={bad}")]);
        assert_eq!(code, 2, "--max-turns {bad}");
        assert!(v.is_null());
        assert!(stderr.contains("--max-turns"), "{stderr}");
    }
}

#[test]
fn max_turns_defaults_to_the_state_cap() {
    let env = Env::new(TASKS);
    env.project.write(
        "specs/demo/.specrun-state.json",
        r#"{"version":1,"name":"demo","phase":"execution","maxGlobalIterations":17}"#,
    );
    let (_, v, _) = env.goal(&[]);
    assert!(v["condition"]
        .as_str()
        .unwrap()
        .contains("checked 17 times"));
}

#[test]
fn no_active_spec_is_a_usage_error() {
    let project = TempProject::git();
    project
        .specrun()
        .arg("goal")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no active spec"));
}

/// Issue 26: a PR body's checkboxes inside a task's Do are not tasks the goal lists, and a
/// nested sub-task under a checked parent is one it does.
#[test]
fn the_goal_lists_sub_tasks_and_not_the_checkboxes_of_a_pr_body() {
    let env = Env::new(
        "- [x] 1.1 Parent\n  - **Verify**: `true`\n  - [ ] 1.1.1 Sub-step\n    - **Verify**: `true`\n- [ ] 1.2 Create PR\n  - **Do**: `gh pr create --body \"$(cat <<'EOF'\n## Test plan\n- [ ] CI checks pass\nEOF\n)\"`\n  - **Verify**: `gh pr view`\n",
    );
    env.fake_claude("echo '2.1.197 (Claude Code)'");
    env.project.init_state("demo");
    let (code, v, _) = env.goal(&[]);
    assert_eq!(code, 0);
    let condition = v["condition"].as_str().unwrap();
    assert!(
        condition.contains("Remaining tasks: 1.1.1 Sub-step; 1.2 Create PR."),
        "{condition}"
    );
    assert!(!condition.contains("CI checks pass"), "{condition}");
}
