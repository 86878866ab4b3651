//! Helpers for the hook tests: an executing spec in a temp git project, and `specrun hook`
//! runs that must always exit 0 and print at most one JSON object.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::common;
pub use crate::common::TempProject;

pub const SESSION: &str = "sess-1";
pub const TASKS: &str = "## Phase 1: Core\n- [x] 1.1 First\n  - **Verify**: `true`\n- [ ] 1.2 Second\n  - **Do**: write the second part\n  - **Files**: src/b.rs\n  - **Verify**: `test -f src/b.rs`\n";
pub const ALL_DONE: &str = "## Phase 1: Core\n- [x] 1.1 First\n- [x] 1.2 Second\n";

/// A state document for an execution of spec `demo` owned by `SESSION`.
pub fn base_state() -> Value {
    json!({
        "version": 1, "name": "demo", "phase": "execution", "sessionId": SESSION,
        "taskIndex": 1, "totalTasks": 2, "taskIteration": 0, "maxTaskIterations": 5,
        "globalIteration": 0, "maxGlobalIterations": 30,
        "budget": {"maxOutputTokens": null, "maxMinutes": null, "maxStallStops": 5},
        "usage": {"outputTokens": 0, "inputTokens": 0},
        "startedAt": chrono::Utc::now().to_rfc3339(),
        "executionDriver": "manual", "quickMode": false, "recoveryMode": false,
        "awaitingApproval": false, "halt": null, "completed": false, "completedAt": null,
        "guard": {}, "checkedAtInit": ["1.1", "1.2"]
    })
}

pub struct Exec {
    pub p: TempProject,
}

impl Exec {
    /// A git project with spec `demo` (tasks `tasks_md`) whose state is `base_state()`
    /// merged with `patch`.
    pub fn new(tasks_md: &str, patch: Value) -> Exec {
        let p = TempProject::git();
        p.spec("demo", tasks_md);
        p.commit_all("spec");
        let mut state = base_state();
        merge(&mut state, &patch);
        let exec = Exec { p };
        exec.write_state(&state);
        exec
    }

    pub fn state_path(&self) -> PathBuf {
        self.p.path("specs/demo/.specrun-state.json")
    }

    pub fn write_state(&self, state: &Value) {
        std::fs::write(self.state_path(), serde_json::to_vec_pretty(state).unwrap()).unwrap();
    }

    pub fn state(&self) -> Value {
        self.p.state("demo")
    }

    pub fn state_bytes(&self) -> Vec<u8> {
        std::fs::read(self.state_path()).unwrap()
    }

    /// Run `specrun hook <event>` with `stdin`; asserts exit 0 and returns stdout.
    pub fn hook(&self, event: &str, stdin: impl Into<Vec<u8>>) -> String {
        run_hook(&self.p, event, stdin)
    }

    /// Events recorded in .specrun/events.jsonl.
    pub fn events(&self) -> Vec<Value> {
        match std::fs::read_to_string(self.p.path(".specrun/events.jsonl")) {
            Ok(text) => text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Record passing execution evidence bound to the current tree.
    pub fn fresh_execution_evidence(&self, command: &str) {
        let tree = self.current_tree();
        let mut state = self.state();
        state["verificationBlocks"] = json!({"execution": evidence(command, &tree, 0)});
        self.write_state(&state);
    }

    /// A valid self-critique record of task `id` at `stage`, dated `at`.
    pub fn critique(&self, id: &str, stage: &str, at: &str) {
        self.p.write(
            &format!("specs/demo/critique/{id}-{stage}.json"),
            &common::critique_record(id, stage, at).to_string(),
        );
    }

    pub fn current_tree(&self) -> String {
        let project = specrun::api::io::project::Project::discover(Some(&self.p.root())).unwrap();
        let spec = project.spec(Some("demo")).unwrap().unwrap();
        specrun::api::evidence::verify::current_tree(&project, &spec).unwrap()
    }
}

pub fn evidence(command: &str, tree: &str, exit_code: i64) -> Value {
    json!({"command": command, "exitCode": exit_code, "startedAt": "2026-01-01T00:00:00Z",
           "durationMs": 5, "tree": tree, "outputTail": "", "timedOut": false, "taskId": null})
}

pub fn merge(target: &mut Value, patch: &Value) {
    specrun::api::model::state::merge_into(target, patch);
}

pub fn run_hook(p: &TempProject, event: &str, stdin: impl Into<Vec<u8>>) -> String {
    let out = p
        .specrun()
        .args(["hook", event])
        .write_stdin(stdin)
        .output()
        .expect("hook runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "hook {event} exited {:?}; stderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("stdout is UTF-8");
    if !stdout.is_empty() {
        assert!(
            stdout.ends_with('\n') && stdout.lines().count() == 1,
            "not one JSON line: {stdout:?}"
        );
        serde_json::from_str::<Value>(&stdout).expect("stdout is one JSON object");
    }
    stdout
}

/// Parse a hook's stdout (which must be one JSON object).
pub fn json_of(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout:?}"))
}

/// Stop hook stdin for `SESSION` in `p`.
pub fn stop_stdin(
    p: &TempProject,
    message: &str,
    active: bool,
    transcript: Option<&str>,
) -> String {
    json!({
        "session_id": SESSION,
        "transcript_path": transcript,
        "cwd": p.root(),
        "permission_mode": "bypassPermissions",
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        "last_assistant_message": message,
        "background_tasks": [],
        "session_crons": [],
    })
    .to_string()
}

/// One assistant transcript line (as Claude Code writes them).
pub fn assistant_line(id: &str, input: u64, output: u64) -> String {
    format!(
        "{{\"type\":\"assistant\",\"message\":{{\"id\":\"{id}\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[{{\"type\":\"text\",\"text\":\"hi\"}}],\"usage\":{{\"input_tokens\":{input},\"output_tokens\":{output}}}}},\"sessionId\":\"{SESSION}\"}}\n"
    )
}

/// Hold `file`'s flock (util-linux `flock`) for `secs` seconds in another process; returns
/// once it is held. The holder's shell keeps the lock until its sleep ends.
pub fn hold_lock(file: &std::path::Path, secs: u32) -> std::process::Child {
    use std::io::{BufRead, BufReader};
    let mut holder = std::process::Command::new("flock")
        .arg(file)
        .args(["-c", &format!("echo locked; sleep {secs}")])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("flock (util-linux) runs");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "locked\n");
    holder
}

/// Append `text` to `path` (created when missing), as Claude Code grows a transcript.
pub fn append(path: &std::path::Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}
