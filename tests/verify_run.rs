//! `specrun verify run`: what it records, its exit codes, timeouts and bad input.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common;
use crate::common::TempProject;

const TASKS: &str = "# Tasks\n\n- [ ] 1.1 First\n  - **Verify**: `true`\n- [ ] 1.2 Second\n  - **Verify**: `true`\n";

/// A git project with spec `demo`, committed, and an initialised state.
fn project() -> TempProject {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    p.write("src/lib.rs", "pub fn a() {}\n");
    p.commit_all("spec");
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .success();
    p
}

fn stdout_json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Whether a process is still running (a zombie waiting for its reaper is not).
fn running(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        Ok(stat) => {
            let state = stat.rsplit_once(')').unwrap().1.split_whitespace().next();
            state != Some("Z")
        }
        Err(_) => false,
    }
}

#[test]
fn records_every_field_streams_output_to_stderr_and_prints_json() {
    let p = project();
    let out = p
        .specrun()
        .args(["verify", "run", "--command", "echo to-out; echo to-err >&2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("to-out") && stderr.contains("to-err"),
        "{stderr}"
    );
    let printed = stdout_json(&out);
    assert_eq!(printed["slot"], "verificationBlocks.execution");
    let state = p.state("demo");
    let rec = &state["verificationBlocks"]["execution"];
    for field in [
        "command",
        "exitCode",
        "startedAt",
        "durationMs",
        "tree",
        "treeMethod",
        "outputTail",
        "timedOut",
        "taskId",
    ] {
        assert!(rec.get(field).is_some(), "missing {field}: {rec}");
    }
    assert_eq!(rec["exitCode"], 0);
    assert_eq!(rec["timedOut"], false);
    assert_eq!(rec["taskId"], Value::Null);
    assert_eq!(rec["treeMethod"], "git");
    assert_eq!(rec["outputTail"], "to-out\nto-err\n");
    assert_eq!(rec["tree"].as_str().unwrap().len(), 40);
    assert_eq!(printed["tree"], rec["tree"]);
    // The state keeps what state init wrote.
    assert_eq!(state["phase"], "execution");
}

#[test]
fn exit_code_is_the_commands_and_a_failure_is_recorded() {
    let p = project();
    p.specrun()
        .args(["verify", "run", "--phase", "lint", "--command", "exit 3"])
        .assert()
        .code(3);
    assert_eq!(p.state("demo")["verificationBlocks"]["lint"]["exitCode"], 3);
    p.specrun()
        .args(["verify", "status", "--phase", "lint"])
        .assert()
        .code(1)
        .stdout(predicates::str::starts_with("failed:"));
}

#[test]
fn task_evidence_goes_to_its_own_slot() {
    let p = project();
    p.specrun()
        .args(["verify", "run", "--task", "1.2", "--command", "true"])
        .assert()
        .success();
    let state = p.state("demo");
    assert_eq!(state["taskEvidence"]["1.2"]["taskId"], "1.2");
    assert!(state
        .get("verificationBlocks")
        .and_then(|v| v.get("execution"))
        .is_none());
}

#[test]
fn nonexistent_command_records_exit_127() {
    let p = project();
    p.specrun()
        .args(["verify", "run", "--command", "no-such-program-xyz --flag"])
        .assert()
        .code(127);
    let rec = &p.state("demo")["verificationBlocks"]["execution"];
    assert_eq!(rec["exitCode"], 127);
    assert!(rec["outputTail"].as_str().unwrap().contains("not found"));
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let p = project();
    let before = p.read("specs/demo/.specrun-state.json");
    let marker = p.path("ran");
    let touch = format!("touch {}", marker.display());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--command", ""], "--command is empty"),
        (vec!["--command", "   "], "--command is empty"),
        (
            vec!["--task", "9.9", "--command", &touch],
            "no task with id 9.9",
        ),
        (
            vec!["--task", "1.1", "--phase", "x", "--command", &touch],
            "give one of them",
        ),
        (vec!["--phase", "a.b", "--command", &touch], "contains '.'"),
        (
            vec!["--timeout", "0", "--command", &touch],
            "at least 1 second",
        ),
    ];
    for (args, message) in cases {
        p.specrun()
            .args(["verify", "run"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
    }
    assert!(!marker.exists(), "a refused command ran");
    assert_eq!(p.read("specs/demo/.specrun-state.json"), before);
}

#[test]
fn missing_state_is_refused_telling_how_to_start() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    let marker = p.path("ran");
    p.specrun()
        .args([
            "verify",
            "run",
            "--command",
            &format!("touch {}", marker.display()),
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("specrun state init --spec demo"));
    assert!(!marker.exists());
    assert!(!p.path("specs/demo/.specrun-state.json").exists());
}

#[test]
fn timeout_kills_the_whole_group_even_when_it_ignores_sigterm() {
    let p = project();
    let pid_dir = tempfile::tempdir().unwrap();
    let pid_file = pid_dir.path().join("grandchild.pid");
    // The shell ignores SIGTERM, and so does its background sleep (ignored signals are
    // inherited); only the SIGKILL after the grace period stops them.
    let command = format!(
        "trap '' TERM; sleep 300 & echo $! > {}; wait; wait",
        pid_file.display()
    );
    let out = p
        .specrun()
        .args(["verify", "run", "--timeout", "1", "--command", &command])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124));
    let rec = &stdout_json(&out);
    assert_eq!(rec["timedOut"], true);
    assert_eq!(rec["exitCode"], 124);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        !running(&pid),
        "grandchild sleep {pid} survived the timeout"
    );
    p.specrun()
        .args(["verify", "status"])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("timed out"));
}

#[test]
fn children_left_behind_after_the_command_exits_are_stopped() {
    let p = project();
    let pid_dir = tempfile::tempdir().unwrap();
    let quiet = pid_dir.path().join("quiet.pid");
    let holding = pid_dir.path().join("holding.pid");
    // One leftover keeps our output pipe open, one does not; both are in the group.
    let command = format!(
        "sleep 300 >/dev/null 2>&1 & echo $! > {}; sleep 300 & echo $! > {}; echo started",
        quiet.display(),
        holding.display()
    );
    let out = p
        .specrun()
        .args(["verify", "run", "--timeout", "120", "--command", &command])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_json(&out)["timedOut"], false);
    for f in [&quiet, &holding] {
        let pid = std::fs::read_to_string(f).unwrap();
        assert!(!running(&pid), "leftover {pid} still runs");
    }
}

#[test]
fn fifty_megabytes_of_output_keep_a_4_kib_tail_in_bounded_memory() {
    let p = project();
    // `$PPID` of `sh -c` is specrun itself: its peak resident size is read after the flood.
    let command = "head -c 52428800 /dev/zero | tr '\\0' x; echo; grep VmHWM /proc/$PPID/status";
    let out = Command::new(common::bin_path())
        .current_dir(p.root())
        .args(["verify", "run", "--command", command])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let tail = stdout_json(&out)["outputTail"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(tail.len(), 4096);
    let peak_kb: u64 = tail
        .lines()
        .last()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        peak_kb < 30 * 1024,
        "specrun peaked at {peak_kb} kB while streaming 50 MB"
    );
}

#[test]
fn state_written_by_others_during_the_run_is_kept() {
    let p = project();
    // The command itself updates the state (as a concurrent hook would); the record is
    // merged under the lock into the state as it is at the end, not as it was at the start.
    let command = "specrun_bin=\"$SPECRUN_BIN\"; \"$specrun_bin\" state merge specs/demo/.specrun-state.json '{\"note\":\"kept\"}'";
    p.specrun()
        .env("SPECRUN_BIN", common::bin_path())
        .args(["verify", "run", "--command", command])
        .assert()
        .success();
    let state = p.state("demo");
    assert_eq!(state["note"], "kept");
    assert_eq!(state["verificationBlocks"]["execution"]["exitCode"], 0);
}
