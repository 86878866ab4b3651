//! `specrun doctor`: each check passing and failing, the exit code, and the 80-column
//! table.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;
use crate::common::TempProject;

struct Env {
    project: TempProject,
    home: tempfile::TempDir,
    tools: tempfile::TempDir,
}

fn which(prog: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap();
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{prog} is installed"))
}

fn executable(path: &Path, text: &str) {
    common::write_executable(path, text);
}

impl Env {
    fn new() -> Env {
        let project = TempProject::git();
        project.spec("demo", "- [ ] 1 One\n  - **Verify**: `true`\n");
        let tools = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(which("git"), tools.path().join("git")).unwrap();
        executable(
            &tools.path().join("claude"),
            "#!/bin/sh\necho '2.1.197 (Claude Code)'\n",
        );
        Env {
            project,
            home: tempfile::tempdir().unwrap(),
            tools,
        }
    }

    fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = self.project.specrun();
        cmd.arg("doctor")
            .env("PATH", self.tools.path())
            .env("HOME", self.home.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CLAUDE_PLUGIN_ROOT")
            .env(
                "SPECRUN_MANAGED_SETTINGS",
                self.home.path().join("managed.json"),
            )
            .env("SPECRUN_DOCTOR_LOCK_GRACE_MS", "200");
        cmd
    }

    fn json(&self, cmd: &mut assert_cmd::Command) -> (i32, Value) {
        let out = cmd.arg("--json").output().unwrap();
        let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "not JSON: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code().unwrap(), v)
    }
}

fn check<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}: {v:#}"))
}

#[test]
fn a_healthy_setup_passes_every_check() {
    let env = Env::new();
    env.project.write("specs/demo/.specrun-state.json.lock", "");
    let (code, v) = env.json(&mut env.cmd());
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], true);
    for id in [
        "binary-version",
        "git",
        "claude-code",
        "hooks",
        "state",
        "plan",
        "locks",
        "spec-names",
    ] {
        assert_eq!(check(&v, id)["status"], "pass", "{id}: {v:#}");
    }
    assert!(check(&v, "locks")["detail"]
        .as_str()
        .unwrap()
        .contains("none held"));
}

#[test]
fn a_plan_the_format_misreads_is_a_warning_naming_the_line() {
    let env = Env::new();
    env.project
        .spec_as_written("demo", "- [ ] 1 One\n  - **Verfiy**: `true`\n");
    let (code, v) = env.json(&mut env.cmd());
    let plan = check(&v, "plan");
    assert_eq!(plan["status"], "warn", "{v:#}");
    let detail = plan["detail"].as_str().unwrap();
    assert!(
        detail.contains("spec demo: 2 error(s), 0 warning(s)"),
        "{detail}"
    );
    assert!(detail.contains("line 1: task 1 has no Verify"), "{detail}");
    assert_eq!(
        plan["fix"],
        "run `specrun tasks lint --spec demo` and fix each line it names"
    );
    // A warning: doctor's verdict is the other checks'.
    assert_eq!(code, 0, "{v:#}");
}

#[test]
fn the_human_table_fits_80_columns() {
    let env = Env::new();
    env.user_settings_with_long_path();
    let out = env.cmd().output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("CHECK"));
    assert!(text.contains("binary-version"));
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "{line:?}");
    }
    assert_eq!(out.status.code(), Some(1));
    assert!(text.contains("fix: "));
}

impl Env {
    /// A failing hooks check whose detail holds a long path, to exercise wrapping.
    fn user_settings_with_long_path(&self) {
        let dir = self
            .home
            .path()
            .join("a-very-long-directory-name-".repeat(4));
        std::fs::create_dir_all(&dir).unwrap();
        let managed = dir.join("managed-settings.json");
        std::fs::write(&managed, r#"{"disableAllHooks": true}"#).unwrap();
        std::fs::copy(&managed, self.home.path().join("managed.json")).unwrap();
        let user = self.home.path().join(".claude");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(
            user.join("settings.json"),
            r#"{"allowManagedHooksOnly": true}"#,
        )
        .unwrap();
    }
}

#[test]
fn a_plugin_version_mismatch_fails() {
    let env = Env::new();
    let plugin = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(plugin.path().join(".claude-plugin")).unwrap();
    std::fs::write(
        plugin.path().join(".claude-plugin/plugin.json"),
        r#"{"name": "specrun", "version": "9.9.9"}"#,
    )
    .unwrap();
    let (code, v) = env.json(env.cmd().env("CLAUDE_PLUGIN_ROOT", plugin.path()));
    assert_eq!(code, 1);
    let c = check(&v, "binary-version");
    assert_eq!(c["status"], "fail");
    assert!(c["detail"].as_str().unwrap().contains("9.9.9"));
    assert!(c["fix"].as_str().unwrap().contains("cargo install"));
}

#[test]
fn an_unknown_plugin_root_is_said_not_failed() {
    let env = Env::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let copy = elsewhere.path().join("specrun");
    // Copied by `cp`: never open for writing in this process (see `write_executable`).
    common::copy_executable(&common::bin_path(), &copy);
    let mut cmd = assert_cmd::Command::new(&copy);
    cmd.current_dir(env.project.root())
        .arg("doctor")
        .env("PATH", env.tools.path())
        .env("HOME", env.home.path())
        .env_remove("CLAUDE_PLUGIN_ROOT")
        .env("SPECRUN_MANAGED_SETTINGS", env.home.path().join("m.json"));
    let (code, v) = env.json(&mut cmd);
    assert_eq!(code, 0, "{v:#}");
    let c = check(&v, "binary-version");
    assert_eq!(c["status"], "warn");
    assert!(c["detail"].as_str().unwrap().contains("unknown"));
}

#[test]
fn restricted_hooks_and_malformed_settings_fail() {
    let env = Env::new();
    env.project
        .write(".claude/settings.json", r#"{"disableAllHooks": true}"#);
    let (code, v) = env.json(&mut env.cmd());
    assert_eq!(code, 1);
    let c = check(&v, "hooks");
    assert_eq!(c["status"], "fail");
    assert!(c["detail"].as_str().unwrap().contains("disableAllHooks"));
    env.project.write(".claude/settings.json", "{ broken");
    let (code, v) = env.json(&mut env.cmd());
    assert_eq!(code, 1);
    let c = check(&v, "hooks");
    assert!(c["detail"]
        .as_str()
        .unwrap()
        .contains(".claude/settings.json"));
}

/// Doctor places Claude Code against the supported range and says what to do, and the
/// driver `specrun goal` picks from the same probe still follows `/goal` support.
#[test]
fn claude_code_is_placed_against_the_supported_range() {
    let env = Env::new();
    let claude = env.tools.path().join("claude");
    let mut goal = env.project.specrun();
    goal.args(["goal", "--spec", "demo"])
        .env("PATH", env.tools.path())
        .env("HOME", env.home.path())
        .env(
            "SPECRUN_MANAGED_SETTINGS",
            env.home.path().join("managed.json"),
        );
    let mut driver = || -> String {
        let out = goal.output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["recommendedDriver"].as_str().unwrap().to_string()
    };
    // (claude --version, doctor exit, status, detail words, fix words, driver)
    let cases = [
        (
            "2.1.197",
            0,
            "pass",
            "tested (supported 2.1.197–2.1.332)",
            "",
            "native-goal",
        ),
        ("2.1.332", 0, "pass", "tested", "", "native-goal"),
        (
            "2.1.250",
            0,
            "pass",
            "this release untested",
            "",
            "native-goal",
        ),
        (
            "2.1.400",
            0,
            "warn",
            "untested: newer than 2.1.332",
            "npm install -g @anthropic-ai/claude-code@2.1.332",
            "native-goal",
        ),
        (
            "2.1.150",
            0,
            "warn",
            "untested: older than 2.1.197",
            "claude update",
            "native-goal",
        ),
        (
            "2.0.1",
            1,
            "fail",
            "too old: no /goal (first in 2.1.139)",
            "stop-hook driver",
            "stop-hook",
        ),
    ];
    for (version, exit, status, detail, fix, want_driver) in cases {
        executable(
            &claude,
            &format!("#!/bin/sh\necho '{version} (Claude Code)'\n"),
        );
        let (code, v) = env.json(&mut env.cmd());
        let c = check(&v, "claude-code");
        assert_eq!(
            (code, c["status"].as_str()),
            (exit, Some(status)),
            "{version}: {c}"
        );
        assert!(
            c["detail"].as_str().unwrap().contains(detail),
            "{version}: {c}"
        );
        if !fix.is_empty() {
            assert!(c["fix"].as_str().unwrap().contains(fix), "{version}: {c}");
        }
        assert_eq!(driver(), want_driver, "{version}");
    }

    std::fs::remove_file(&claude).unwrap();
    let (code, v) = env.json(&mut env.cmd());
    assert_eq!(code, 0);
    let c = check(&v, "claude-code");
    assert_eq!(c["status"], "warn", "{c}");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("Claude Code not found"),
        "{c}"
    );
    assert!(
        c["detail"].as_str().unwrap().contains("2.1.197–2.1.332"),
        "{c}"
    );
    assert!(
        c["fix"]
            .as_str()
            .unwrap()
            .contains("npm install -g @anthropic-ai/claude-code@2.1.332"),
        "{c}"
    );
    assert_eq!(driver(), "stop-hook");
}

#[test]
fn an_invalid_state_fails_with_the_init_fix() {
    let env = Env::new();
    env.project
        .write("specs/demo/.specrun-state.json", "{ not json");
    let (code, v) = env.json(&mut env.cmd());
    assert_eq!(code, 1);
    let c = check(&v, "state");
    assert_eq!(c["status"], "fail");
    assert!(c["fix"]
        .as_str()
        .unwrap()
        .contains("specrun state init --spec demo --force"));
}

/// Regression: only the active spec's state was checked, so a broken state of another
/// spec (which its guard and verbs cannot read) passed.
#[test]
fn an_invalid_state_of_a_spec_that_is_not_active_fails_too() {
    let env = Env::new();
    env.project.init_state("demo");
    env.project.write(
        "specs/other/tasks.md",
        "**Final check**: `true`\n- [ ] 1 One\n  - **Verify**: `true`\n",
    );
    env.project
        .write("specs/other/.specrun-state.json", "[1, 2]");
    let (code, v) = env.json(&mut env.cmd());
    assert_eq!(code, 1, "{v}");
    let c = check(&v, "state");
    assert_eq!(c["status"], "fail");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("specs/other/.specrun-state.json"),
        "{c}"
    );
    assert!(c["fix"]
        .as_str()
        .unwrap()
        .contains("specrun state init --spec other --force"));
    // Repaired, every spec's state passes and is listed.
    env.project
        .specrun()
        .args(["state", "init", "--spec", "other", "--force"])
        .assert()
        .success();
    let (code, v) = env.json(&mut env.cmd());
    assert_eq!(code, 0, "{v}");
    let detail = check(&v, "state")["detail"].as_str().unwrap().to_string();
    assert!(
        detail.contains("spec demo: valid") && detail.contains("spec other: valid"),
        "{detail}"
    );
}

#[test]
fn a_lock_held_past_the_grace_period_fails_and_a_free_one_passes() {
    let env = Env::new();
    let lock = env.project.write("specs/demo/.specrun-state.json.lock", "");
    let holder = std::fs::OpenOptions::new().write(true).open(&lock).unwrap();
    holder.lock().unwrap();
    let (code, v) = env.json(&mut env.cmd());
    assert_eq!(code, 1);
    let c = check(&v, "locks");
    assert_eq!(c["status"], "fail");
    assert!(c["detail"]
        .as_str()
        .unwrap()
        .contains(".specrun-state.json.lock"));
    holder.unlock().unwrap();
    let (code, v) = env.json(&mut env.cmd());
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(check(&v, "locks")["status"], "pass");
    assert!(lock.exists(), "doctor never deletes a lock file");
}

#[test]
fn an_invalid_spec_directory_name_fails() {
    let env = Env::new();
    std::fs::create_dir_all(env.project.path("specs/bad..name")).unwrap();
    std::fs::create_dir_all(env.project.path("specs/.archive")).unwrap();
    let (code, v) = env.json(&mut env.cmd());
    assert_eq!(code, 1);
    let c = check(&v, "spec-names");
    assert_eq!(c["status"], "fail");
    let detail = c["detail"].as_str().unwrap();
    assert!(detail.contains("bad..name"), "{detail}");
    assert!(!detail.contains(".archive"), "hidden dirs are not specs");
}
