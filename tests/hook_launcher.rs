//! bin/specrun (the plugin's launcher) and hooks/hooks.json: the launcher finds the binary
//! in the documented order, never recurses into itself, exits 0 silently for hooks when no
//! binary exists and 127 with an install hint otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A copy of the plugin's launcher in a temp checkout: the plugin is its `plugin/` folder,
/// the build its `target/` (so target/ is under our control).
fn plugin_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("plugin/bin")).unwrap();
    common::copy_executable(
        &repo().join("plugin/bin/specrun"),
        &dir.path().join("plugin/bin/specrun"),
    );
    dir
}

fn launch(launcher: &Path, path_env: &str, spec_bin: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(launcher);
    cmd.args(args)
        .env("PATH", path_env)
        .env_remove("SPECRUN_LAUNCHED")
        .env_remove("SPECRUN_BIN");
    if let Some(bin) = spec_bin {
        cmd.env("SPECRUN_BIN", bin);
    }
    cmd.output().unwrap()
}

fn fake_binary(dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("specrun");
    common::write_executable(&path, &format!("#!/bin/sh\necho {name} \"$@\"\n"));
    path
}

const SYS_PATH: &str = "/usr/bin:/bin";

#[test]
fn finds_spec_bin_then_release_then_path() {
    let plugin = plugin_copy();
    let launcher = plugin.path().join("plugin/bin/specrun");
    let elsewhere = tempfile::tempdir().unwrap();
    let on_path = fake_binary(&elsewhere.path().join("path-bin"), "path");
    let path_env = format!(
        "{}:{}:{SYS_PATH}",
        plugin.path().join("plugin/bin").display(),
        on_path.parent().unwrap().display()
    );

    let out = launch(&launcher, &path_env, None, &["status"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "path status\n");

    fake_binary(&plugin.path().join("target/release"), "release");
    let out = launch(&launcher, &path_env, None, &["hook", "stop"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "release hook stop\n");

    let explicit = fake_binary(&elsewhere.path().join("explicit"), "explicit");
    let out = launch(&launcher, &path_env, Some(&explicit), &["x"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "explicit x\n");
}

#[test]
fn without_a_binary_hooks_exit_0_silently_and_commands_exit_127() {
    let plugin = plugin_copy();
    let launcher = plugin.path().join("plugin/bin/specrun");
    // Its own bin/ on PATH, plus a second launcher copy: neither may be taken as the binary.
    let other = plugin_copy();
    let path_env = format!(
        "{}:{}:{SYS_PATH}",
        plugin.path().join("plugin/bin").display(),
        other.path().join("plugin/bin").display()
    );
    let out = launch(&launcher, &path_env, None, &["hook", "stop"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    let out = launch(&launcher, &path_env, None, &["status"]);
    assert_eq!(out.status.code(), Some(127));
    let err = String::from_utf8_lossy(&out.stderr);
    // A marketplace copy (the plugin folder alone): the binary comes from a clone.
    assert!(
        err.contains("cargo install --locked --path <a clone of specrun>"),
        "{err}"
    );
    // In a checkout, its own path.
    std::fs::write(plugin.path().join("Cargo.toml"), "").unwrap();
    let out = launch(&launcher, SYS_PATH, None, &["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let checkout = std::fs::canonicalize(plugin.path()).unwrap();
    assert!(
        err.contains(&format!(
            "cargo install --locked --path \"{}\"",
            checkout.display()
        )),
        "{err}"
    );
    // A debug build is not picked up (SPECRUN_BIN points at it when wanted).
    fake_binary(&plugin.path().join("target/debug"), "debug");
    assert_eq!(
        launch(&launcher, &path_env, None, &["status"])
            .status
            .code(),
        Some(127)
    );
}

#[test]
fn hooks_json_runs_every_event_through_the_launcher_with_timeouts() {
    let text = std::fs::read_to_string(repo().join("plugin/hooks/hooks.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let hooks = doc["hooks"].as_object().unwrap();
    let mut events: Vec<&str> = hooks.keys().map(String::as_str).collect();
    events.sort();
    assert_eq!(
        events,
        ["PreToolUse", "SessionStart", "Stop", "SubagentStop"]
    );
    for (event, groups) in hooks {
        for group in groups.as_array().unwrap() {
            for hook in group["hooks"].as_array().unwrap() {
                let command = hook["command"].as_str().unwrap();
                assert!(
                    command.starts_with("\"${CLAUDE_PLUGIN_ROOT}/bin/specrun\" hook "),
                    "{event}: {command}"
                );
                assert!(
                    hook["timeout"].as_u64().is_some_and(|t| t > 0),
                    "{event}: no timeout"
                );
            }
        }
    }
    // The matcher is AskUserQuestion, every tool the guard denies once halted, and the
    // tools the PreToolUse guard reads (Bash and the editors).
    let mut wanted = vec!["AskUserQuestion"];
    wanted.extend(specrun::api::hooks::WORK_TOOLS);
    wanted.extend(specrun::api::hooks::tool_guard::GUARDED_TOOLS);
    assert_eq!(hooks["PreToolUse"][0]["matcher"], wanted.join("|"));
}

/// A binary that answers `--version` with `version`, and otherwise prints its name, its
/// arguments and the launcher's stated choice.
fn versioned_binary(dir: &Path, name: &str, version: &str, mtime: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("specrun");
    common::write_executable(
        &path,
        &format!("#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 'specrun {version}'; exit 0; }}\necho {name} \"$@\" \"| $SPECRUN_LAUNCHER_CHOICE\"\n"),
    );
    let touched = Command::new("touch")
        .args(["-d", mtime])
        .arg(&path)
        .status()
        .unwrap();
    assert!(touched.success());
    path
}

/// A marketplace copy of a checkout carries an old target/release: the launcher takes the
/// newer binary when it proves the plugin's version, the proven one when only one is, and
/// the plugin's build when neither is; each choice is stated for `doctor`.
#[test]
fn with_two_binaries_the_newer_one_of_the_plugins_version_wins() {
    let plugin = plugin_copy();
    std::fs::create_dir_all(plugin.path().join("plugin/.claude-plugin")).unwrap();
    std::fs::write(
        plugin.path().join("plugin/.claude-plugin/plugin.json"),
        "{\n  \"name\": \"specrun\",\n  \"version\": \"9.9.9\"\n}\n",
    )
    .unwrap();
    let launcher = plugin.path().join("plugin/bin/specrun");
    let elsewhere = tempfile::tempdir().unwrap();
    let path_dir = elsewhere.path().join("path-bin");
    let path_env = format!("{}:{SYS_PATH}", path_dir.display());
    let release_dir = plugin.path().join("target/release");
    let run = || {
        let out = launch(&launcher, &path_env, None, &["status"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    versioned_binary(&release_dir, "release", "9.9.9", "2020-01-01");
    versioned_binary(&path_dir, "path", "9.9.9", "2024-01-01");
    let out = run();
    assert!(out.starts_with("path status | "), "{out}");
    assert!(
        out.contains("(the newer of two, specrun 9.9.9 as the plugin)"),
        "{out}"
    );

    // The newer one is another version: the older, proven one.
    versioned_binary(&path_dir, "path", "9.10.0", "2024-01-01");
    let out = run();
    assert!(out.starts_with("release status | "), "{out}");
    assert!(out.contains("only it is specrun 9.9.9"), "{out}");

    // Neither proves it: the plugin's build, said so.
    versioned_binary(&release_dir, "release", "1.0.0", "2020-01-01");
    let out = run();
    assert!(out.starts_with("release status | "), "{out}");
    assert!(
        out.contains("neither is proven to be specrun 9.9.9"),
        "{out}"
    );

    // Newer plugin build, proven: it wins over the older install.
    versioned_binary(&release_dir, "release", "9.9.9", "2025-01-01");
    versioned_binary(&path_dir, "path", "9.9.9", "2024-01-01");
    assert!(run().starts_with("release status | "));
}

#[test]
fn doctor_says_which_binary_the_launcher_chose() {
    let plugin = plugin_copy();
    let launcher = plugin.path().join("plugin/bin/specrun");
    let bin = common::bin_path();
    let out = launch(&launcher, SYS_PATH, Some(&bin), &["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "launcher")
        .unwrap_or_else(|| panic!("{v:#}"));
    let detail = check["detail"].as_str().unwrap();
    assert_eq!(
        detail,
        format!("bin/specrun chose {} (SPECRUN_BIN)", bin.display())
    );
    // Run directly, it says so.
    let out = Command::new(&bin)
        .args(["doctor", "--json"])
        .env_remove("SPECRUN_LAUNCHER_CHOICE")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.to_string().contains("run directly"), "{v:#}");
}
