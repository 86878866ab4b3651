//! Helpers for the protocol verbs' tests: a temp git project with an initialised
//! execution, fresh evidence written the way `verify run` records it, critique records.
#![allow(dead_code)]

use serde_json::{json, Value};

pub use crate::common::critique_record;
use crate::common::TempProject;

pub const SPEC: &str = "demo";
pub const TASKS: &str = "# Tasks\n**Final check**: `true`\n## Phase 1\n- [ ] 1.1 First\n  - **Files**: src/a.rs\n  - **Verify**: `true`\n- [ ] 1.2 Second\n  - **Verify**: `true`\n  - **Files**: src/b.rs\n- [ ] 1.3 Third\n  - **Verify**: `true`\n";

/// A git project with `tasks`, committed, and `state init` run with `init_args`.
pub fn project(tasks: &str, init_args: &[&str]) -> TempProject {
    let p = TempProject::git();
    p.spec(SPEC, tasks);
    p.write("src/a.rs", "fn a() {}\n");
    p.commit_all("spec");
    let mut args = vec!["state", "init", "--spec", SPEC];
    args.extend_from_slice(init_args);
    p.specrun().args(&args).assert().success();
    p
}

pub fn state_path(p: &TempProject) -> std::path::PathBuf {
    p.path(&format!("specs/{SPEC}/.specrun-state.json"))
}

pub fn set_state(p: &TempProject, patch: Value) {
    let mut doc = p.state(SPEC);
    specrun::api::model::state::merge_into(&mut doc, &patch);
    std::fs::write(state_path(p), serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
}

/// The current working-tree fingerprint, as `verify run` would record it.
pub fn tree(p: &TempProject) -> String {
    let project = specrun::api::io::project::Project::discover(Some(&p.root())).unwrap();
    let spec = project.spec(Some(SPEC)).unwrap().unwrap();
    specrun::api::evidence::verify::current_tree(&project, &spec).unwrap()
}

/// Passing evidence for task `id`, bound to the current tree, started at `at`.
pub fn evidence(p: &TempProject, id: &str, at: &str, exit_code: i64) {
    let record = json!({"command": "true", "exitCode": exit_code, "startedAt": at, "durationMs": 1,
        "tree": tree(p), "outputTail": "", "timedOut": false, "taskId": id});
    set_state(p, json!({"taskEvidence": {id: record}}));
}

pub fn critique(p: &TempProject, id: &str, stage: &str, at: &str) {
    p.write(
        &format!("specs/{SPEC}/critique/{id}-{stage}.json"),
        &critique_record(id, stage, at).to_string(),
    );
}

/// Everything `task complete 1.1` needs besides the start and the checkbox.
pub fn ready_to_complete(p: &TempProject, id: &str) {
    evidence(p, id, "2026-01-01T00:00:00Z", 0);
    critique(p, id, "post-code", "2026-01-01T00:00:30Z");
    critique(p, id, "post-test", "2026-01-01T00:01:00Z");
}

/// `task justify <id> --finding <finding> --reason <reason>`, as a person at a shell.
pub fn justify(p: &TempProject, id: &str, finding: &str, reason: &str) -> (i32, String, String) {
    run(
        p,
        &[
            "task",
            "justify",
            id,
            "--finding",
            finding,
            "--reason",
            reason,
        ],
    )
}

pub fn run(p: &TempProject, args: &[&str]) -> (i32, String, String) {
    let out = p.specrun().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `followup add` with a category, priority, title and optional task.
pub fn followup_add(
    p: &TempProject,
    cat: &str,
    pri: &str,
    title: &str,
    task: Option<&str>,
) -> (i32, String, String) {
    let mut args = vec![
        "followup",
        "add",
        "--category",
        cat,
        "--priority",
        pri,
        "--title",
        title,
    ];
    if let Some(t) = task {
        args.extend(["--task", t]);
    }
    run(p, &args)
}

pub fn events(p: &TempProject) -> Vec<Value> {
    std::fs::read_to_string(p.path(".specrun/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
