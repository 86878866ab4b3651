//! Isolated parallel groups: members in their own worktrees and branches, one state from
//! wherever they run, `group merge` (--no-ff, task-id order, conflicts kept, the merged
//! tree verified), crash recovery, cleanup, and the bad inputs.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common;
use crate::common::TempProject;
use crate::hook_common::{json_of, run_hook};

const TASKS: &str = "# Tasks

## Phase 1

- [ ] 1.1 [P] Alpha
  - **Files**: a.txt, shared.txt
  - **Verify**: `test -f a.txt`
- [ ] 1.2 [P] Beta
  - **Files**: b.txt, shared.txt
  - **Verify**: `test -f b.txt`
- [ ] 1.3 [P] Gamma
  - **Files**: c.txt
  - **Verify**: `test -f c.txt`
- [ ] 1.4 [VERIFY] The merged notes
  - **Verify**: `test -f a.txt && test -f c.txt && grep -q alpha shared.txt`
- [ ] 1.5 After
  - **Verify**: `true`\n";

fn project() -> TempProject {
    let p = TempProject::git();
    p.git_cmd(&["config", "user.email", "t@example.com"]);
    p.git_cmd(&["config", "user.name", "t"]);
    p.spec("demo", TASKS);
    p.write("shared.txt", "line one\n");
    p.write(".gitignore", ".specrun/\n");
    p.commit_all("spec");
    p.init_state("demo");
    p
}

pub(crate) fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_in_env(dir, args, &[])
}

fn run_in_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(common::bin_path())
        .current_dir(dir)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) fn ok_in(dir: &Path, args: &[&str]) -> String {
    let (code, out, err) = run_in(dir, args);
    assert_eq!(
        code,
        0,
        "specrun {args:?} in {}:\n{out}\n{err}",
        dir.display()
    );
    out
}

pub(crate) fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `task start ID --worktree`: the path is the last line printed.
pub(crate) fn start(p: &TempProject, id: &str) -> PathBuf {
    let out = ok_in(&p.root(), &["task", "start", id, "--worktree"]);
    let path = PathBuf::from(out.lines().last().unwrap().trim());
    assert!(path.join(".git").is_file(), "{out}");
    path
}

fn critique_input(stage: &str) -> String {
    let items: serde_json::Map<String, Value> = specrun::api::evidence::critique::checklist(stage)
        .unwrap()
        .iter()
        .map(|(id, _)| {
            (
                id.to_string(),
                serde_json::json!({"result": "pass", "note": "checked"}),
            )
        })
        .collect();
    serde_json::json!({"checklist": items, "issuesFound": [], "issuesFixed": []}).to_string()
}

/// What an executor does inside its worktree: write, verify, critique, complete.
pub(crate) fn finish_member(dir: &Path, id: &str, files: &[(&str, &str)], verify: &str) {
    for (rel, text) in files {
        std::fs::write(dir.join(rel), text).unwrap();
    }
    ok_in(dir, &["verify", "run", "--task", id, "--command", verify]);
    for stage in ["post-code", "post-test"] {
        let f = dir.join(format!("../{id}-{stage}.json"));
        std::fs::write(&f, critique_input(stage)).unwrap();
        ok_in(
            dir,
            &[
                "critique",
                "record",
                "--task",
                id,
                "--stage",
                stage,
                "--file",
                f.to_str().unwrap(),
            ],
        );
    }
    ok_in(dir, &["task", "complete", id, "--check"]);
}

fn merge(p: &TempProject) -> (i32, Value) {
    let (code, out, err) = run_in(&p.root(), &["group", "merge", "--json"]);
    let doc = out
        .lines()
        .rev()
        .find_map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(|d| d.get("groupStatus").is_some())
        })
        .unwrap_or_else(|| panic!("no JSON from group merge ({code}):\n{out}\n{err}"));
    (code, doc)
}

fn branch_exists(p: &TempProject, b: &str) -> bool {
    Command::new("git")
        .current_dir(p.root())
        .args(["rev-parse", "-q", "--verify", &format!("refs/heads/{b}")])
        .output()
        .unwrap()
        .status
        .success()
}

fn member(p: &TempProject, id: &str) -> Value {
    p.state("demo")["isolation"]["members"][id].clone()
}

fn dirty(p: &TempProject) -> String {
    git_in(
        &p.root(),
        &[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--",
            ".",
            ":(exclude)specs",
        ],
    )
}

#[test]
fn three_members_one_conflict_kept_retried_on_the_merged_base_and_merged() {
    let p = project();
    let dirs: Vec<PathBuf> = ["1.1", "1.2", "1.3"]
        .iter()
        .map(|id| start(&p, id))
        .collect();
    let base = git_in(&p.root(), &["rev-parse", "HEAD"]);
    for d in &dirs {
        assert_eq!(
            git_in(d, &["rev-parse", "HEAD"]),
            base,
            "every member starts from the group's base"
        );
    }
    assert_eq!(
        git_in(&dirs[1], &["branch", "--show-current"]).trim(),
        "specrun/demo/1.2"
    );
    finish_member(
        &dirs[0],
        "1.1",
        &[("a.txt", "A\n"), ("shared.txt", "alpha\n")],
        "test -f a.txt",
    );
    finish_member(
        &dirs[1],
        "1.2",
        &[("b.txt", "B\n"), ("shared.txt", "beta\n")],
        "test -f b.txt",
    );
    finish_member(&dirs[2], "1.3", &[("c.txt", "C\n")], "test -f c.txt");
    // One state: everything was written in the main checkout, nothing in the worktrees.
    for d in &dirs {
        assert!(!d.join("specs/demo/.specrun-state.json").exists());
        assert!(!d.join(".specrun").exists());
    }

    let (code, doc) = merge(&p);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["merged"], serde_json::json!(["1.1", "1.3"]));
    assert_eq!(doc["conflicts"]["1.2"], serde_json::json!(["shared.txt"]));
    assert_eq!(
        doc["verified"]["passed"], true,
        "the two merged members are verified: {doc}"
    );
    assert_eq!(doc["groupStatus"], "partial");
    assert!(
        doc["next"]
            .as_str()
            .unwrap()
            .contains("specrun task start 1.2 --worktree"),
        "{doc}"
    );
    // The base is clean, the conflicting member kept on its branch, its attempt failed.
    assert_eq!(dirty(&p), "");
    assert_eq!(p.read("shared.txt"), "alpha\n");
    assert!(branch_exists(&p, "specrun/demo/1.2"));
    assert!(
        !branch_exists(&p, "specrun/demo/1.1"),
        "a merged member's branch goes"
    );
    assert!(
        !dirs[0].exists() && !dirs[2].exists(),
        "merged worktrees are removed"
    );
    assert!(dirs[1].exists());
    assert_eq!(member(&p, "1.2")["status"], "conflict");
    let state = p.state("demo");
    let attempt = state["attempts"]["1.2"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(attempt["status"], "failed");
    assert!(attempt["reason"].as_str().unwrap().contains("shared.txt"));
    assert!(p.read("specs/demo/tasks.md").contains("- [ ] 1.2 [P] Beta"));
    let followups = p.read("specs/demo/followups.json");
    assert!(
        followups.contains("isolated member 1.2 not merged"),
        "{followups}"
    );
    // The merge commits are --no-ff, in task-id order.
    let log = git_in(&p.root(), &["log", "--merges", "--format=%s"]);
    let merges: Vec<&str> = log.lines().collect();
    assert!(
        merges[1].contains("task 1.1") && merges[0].contains("task 1.3"),
        "{log}"
    );
    // Status names what merged and what remains.
    let status = ok_in(&p.root(), &["status"]);
    assert!(
        status.contains("1.1 merged") && status.contains("1.2 conflict on specrun/demo/1.2"),
        "{status}"
    );
    // The dashboard keeps every line within the terminal, a member on a line of its own.
    let (code, narrow, _) = run_in_env(&p.root(), &["status"], &[("COLUMNS", "40")]);
    assert_eq!(code, 0, "{narrow}");
    assert!(
        narrow
            .lines()
            .all(|l| l.chars().count() <= 40 || l.starts_with("  specrun ")),
        "{narrow}"
    );
    assert!(
        narrow
            .lines()
            .any(|l| l.trim() == "1.2 conflict on specrun/demo/1.2"),
        "{narrow}"
    );
    // --json has the same standing under `isolation`.
    let doc: serde_json::Value =
        serde_json::from_str(&ok_in(&p.root(), &["status", "--json"])).unwrap();
    assert_eq!(
        doc["isolation"]["merged"],
        serde_json::json!(["1.1", "1.3"])
    );
    assert_eq!(doc["isolation"]["remaining"][0]["task"], "1.2");
    assert_eq!(doc["isolation"]["remaining"][0]["status"], "conflict");
    // The next task waits for the group.
    let (code, out, _) = run_in(&p.root(), &["task", "start", "1.4"]);
    assert_eq!(code, 1, "{out}");

    // Retry on the merged base: the base is merged into the member's branch, never rebased.
    let (code, out, err) = run_in(&p.root(), &["task", "start", "1.2", "--worktree"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("conflicts in shared.txt"), "{out}");
    let retry = PathBuf::from(out.lines().last().unwrap());
    assert_eq!(retry, dirs[1]);
    let parents = git_in(&retry, &["rev-parse", "MERGE_HEAD"]);
    assert_eq!(
        parents.trim(),
        git_in(&p.root(), &["rev-parse", "HEAD"]).trim()
    );
    finish_member(
        &retry,
        "1.2",
        &[("shared.txt", "alpha\nbeta\n")],
        "test -f b.txt",
    );
    let (code, doc) = merge(&p);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["merged"], serde_json::json!(["1.2"]));
    assert_eq!(doc["groupStatus"], "complete");
    assert_eq!(doc["verified"]["passed"], true);
    assert!(!branch_exists(&p, "specrun/demo/1.2") && !retry.exists());
    assert!(p.read("specs/demo/followups.json").contains("\"resolved\""));
    // No file lost: every member's content is in the base branch.
    assert_eq!(p.read("a.txt"), "A\n");
    assert_eq!(p.read("b.txt"), "B\n");
    assert_eq!(p.read("c.txt"), "C\n");
    assert_eq!(p.read("shared.txt"), "alpha\nbeta\n");
    // The [VERIFY] task's evidence is on the merged tree: it completes without a new run.
    ok_in(&p.root(), &["task", "start", "1.4"]);
    for stage in ["post-code", "post-test"] {
        let f = p.write(
            &format!(".specrun/{stage}-1.4.json"),
            &critique_input(stage),
        );
        ok_in(
            &p.root(),
            &[
                "critique",
                "record",
                "--task",
                "1.4",
                "--stage",
                stage,
                "--file",
                f.to_str().unwrap(),
            ],
        );
    }
    ok_in(&p.root(), &["verify", "status", "--task", "1.4"]);
    ok_in(&p.root(), &["task", "complete", "1.4", "--check"]);
    // Re-running the merge changes nothing.
    let head = git_in(&p.root(), &["rev-parse", "HEAD"]);
    let (code, _) = merge(&p);
    assert_eq!(code, 0);
    assert_eq!(git_in(&p.root(), &["rev-parse", "HEAD"]), head);
}

#[test]
fn every_verb_in_a_worktree_uses_the_main_checkouts_spec_and_binds_evidence_to_the_worktree() {
    let p = project();
    let dir = start(&p, "1.1");
    let events_before = p.read(".specrun/events.jsonl").lines().count();
    std::fs::write(dir.join("a.txt"), "A\n").unwrap();
    ok_in(
        &dir,
        &[
            "verify",
            "run",
            "--task",
            "1.1",
            "--command",
            "test -f a.txt",
        ],
    );
    let record = p.state("demo")["taskEvidence"]["1.1"].clone();
    assert_eq!(record["worktree"], "1.1");
    // Fresh from both places; a change in the main checkout does not touch it...
    ok_in(&dir, &["verify", "status", "--task", "1.1"]);
    ok_in(&p.root(), &["verify", "status", "--task", "1.1"]);
    p.write("unrelated.txt", "x\n");
    ok_in(&p.root(), &["verify", "status", "--task", "1.1"]);
    std::fs::remove_file(p.path("unrelated.txt")).unwrap();
    // ...a change in the worktree does.
    std::fs::write(dir.join("a.txt"), "changed\n").unwrap();
    let (code, out, _) = run_in(&p.root(), &["verify", "status", "--task", "1.1"]);
    assert_eq!(code, 1, "{out}");
    ok_in(
        &dir,
        &[
            "followup",
            "add",
            "--category",
            "IDEA",
            "--priority",
            "low",
            "--title",
            "from the worktree",
        ],
    );
    ok_in(
        &dir,
        &[
            "learn",
            "worktrees share one progress file",
            "--task",
            "1.1",
        ],
    );
    ok_in(&dir, &["tasks", "check", "1.5"]);
    assert!(p.read("specs/demo/tasks.md").contains("- [x] 1.5 After"));
    assert!(p
        .read("specs/demo/followups.json")
        .contains("from the worktree"));
    assert!(p
        .read("specs/demo/.progress.md")
        .contains("worktrees share one progress file"));
    assert!(p.read(".specrun/events.jsonl").lines().count() > events_before);
    assert!(!dir.join("specs/demo/followups.json").exists());
    assert!(!dir.join("specs/demo/.progress.md").exists());
    assert!(!dir.join(".specrun").exists());
    let (code, out, err) = run_in(&dir, &["task", "fail", "1.1", "--reason", "try again"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(p.state("demo")["attempts"]["1.1"][0]["status"], "failed");
}

#[test]
fn sigkill_between_two_member_merges_then_a_rerun_merges_each_once() {
    let p = project();
    let dirs: Vec<PathBuf> = ["1.1", "1.2", "1.3"]
        .iter()
        .map(|id| start(&p, id))
        .collect();
    finish_member(
        &dirs[0],
        "1.1",
        &[("a.txt", "A\n"), ("shared.txt", "alpha\n")],
        "test -f a.txt",
    );
    // 1.1 is merged and recorded while its siblings still run.
    let (code, doc) = merge(&p);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["merged"], serde_json::json!(["1.1"]));
    assert!(
        doc["next"].as_str().unwrap().contains("wait for 1.2"),
        "{doc}"
    );
    finish_member(&dirs[1], "1.2", &[("b.txt", "B\n")], "test -f b.txt");
    finish_member(&dirs[2], "1.3", &[("c.txt", "C\n")], "test -f c.txt");
    // Right after the next merges reach the base branch, git's post-merge hook SIGKILLs
    // specrun (its grandparent): merged in git, not yet recorded in the state.
    let hook = p.root().join(".git/hooks/post-merge");
    common::write_executable(&hook, "#!/bin/sh\nkill -9 $(ps -o ppid= -p $PPID)\n");
    let (code, _, _) = run_in(&p.root(), &["group", "merge"]);
    assert_eq!(code, -1, "killed by the signal");
    std::fs::remove_file(&hook).unwrap();
    assert_eq!(member(&p, "1.1")["status"], "merged");
    assert_eq!(
        member(&p, "1.2")["status"],
        "ready",
        "the kill came before the record"
    );
    assert_eq!(
        git_in(&p.root(), &["log", "--merges", "--format=%s"])
            .lines()
            .count(),
        3
    );
    // Status and resume say where the group stands.
    let status = ok_in(&p.root(), &["status"]);
    assert!(
        status.contains("1.1 merged") && status.contains("1.3 ready"),
        "{status}"
    );
    let resume = run_in(&p.root(), &["resume"]).1;
    assert!(resume.contains("group 1.1, 1.2, 1.3"), "{resume}");
    let (code, doc) = merge(&p);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["merged"], serde_json::json!(["1.2", "1.3"]));
    let merges = git_in(&p.root(), &["log", "--merges", "--format=%s"]);
    assert_eq!(
        merges.lines().count(),
        3,
        "no member merged twice:\n{merges}"
    );
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(p.path(f).exists());
    }
    // A crash inside a merge (MERGE_HEAD left behind) is aborted and redone.
    let (code, _) = merge(&p);
    assert_eq!(code, 0);
}

/// 1.1 to 1.3 started in worktrees and completed there (the merged notes: alpha).
fn three_finished(p: &TempProject) -> [PathBuf; 3] {
    let d1 = start(p, "1.1");
    let d2 = start(p, "1.2");
    let d3 = start(p, "1.3");
    finish_member(
        &d1,
        "1.1",
        &[("a.txt", "A\n"), ("shared.txt", "alpha\n")],
        "test -f a.txt",
    );
    finish_member(&d2, "1.2", &[("b.txt", "B\n")], "test -f b.txt");
    finish_member(&d3, "1.3", &[("c.txt", "C\n")], "test -f c.txt");
    [d1, d2, d3]
}

/// A merge of 1.1 a crash left half-done in the main checkout.
fn half_merge(p: &TempProject) {
    git_in(
        &p.root(),
        &["merge", "--no-ff", "--no-commit", "specrun/demo/1.1"],
    );
}

#[test]
fn a_merge_left_half_done_by_a_crash_is_aborted_and_redone() {
    let p = project();
    three_finished(&p);
    half_merge(&p);
    let (code, doc) = merge(&p);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        git_in(&p.root(), &["log", "--merges", "--format=%s"])
            .lines()
            .count(),
        3
    );
}

#[test]
fn rollback_of_a_member_saves_its_branch_work_and_removes_the_worktree() {
    let p = project();
    let dir = start(&p, "1.1");
    std::fs::write(dir.join("a.txt"), "committed\n").unwrap();
    git_in(&dir, &["add", "a.txt"]);
    git_in(&dir, &["commit", "-qm", "member work"]);
    std::fs::write(dir.join("shared.txt"), "uncommitted\n").unwrap();
    let out = ok_in(&p.root(), &["task", "rollback", "1.1", "--json"]);
    let doc: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let saved = doc["savedRef"].as_str().unwrap();
    assert!(!dir.exists());
    assert!(!branch_exists(&p, "specrun/demo/1.1"));
    assert_eq!(
        git_in(&p.root(), &["show", &format!("{saved}:a.txt")]),
        "committed\n"
    );
    assert_eq!(
        git_in(&p.root(), &["show", &format!("{saved}:shared.txt")]),
        "uncommitted\n"
    );
    assert_eq!(member(&p, "1.1")["status"], "rolled-back");
    // The retry starts clean from the base.
    let again = start(&p, "1.1");
    assert!(!again.join("a.txt").exists());
}

#[test]
fn cancel_leaves_no_worktree_and_saves_every_members_work() {
    let p = project();
    let d1 = start(&p, "1.1");
    let d2 = start(&p, "1.2");
    std::fs::write(d1.join("a.txt"), "A\n").unwrap();
    let out = ok_in(&p.root(), &["cancel", "--json"]);
    let doc: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(doc["savedRefs"].as_array().unwrap().len(), 2, "{doc}");
    assert!(!d1.exists() && !d2.exists());
    assert_eq!(
        git_in(&p.root(), &["show", "specrun/cancelled/demo/1.1:a.txt"]),
        "A\n"
    );
    assert!(!git_in(&p.root(), &["worktree", "list"]).contains(".specrun"));
}

fn doctor_worktrees(p: &TempProject) -> Value {
    let (_, out, _) = run_in(&p.root(), &["doctor", "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let checks = doc["checks"].as_array().unwrap();
    checks
        .iter()
        .find(|c| c["id"] == "worktrees")
        .unwrap()
        .clone()
}

#[test]
fn doctor_lists_stale_specrun_worktrees() {
    let p = project();
    let dir = start(&p, "1.1");
    let check = doctor_worktrees(&p);
    assert_eq!(
        check["status"], "pass",
        "an open member's worktree is not stale: {check}"
    );
    // The state forgets the member (a crash before the record, a re-init): now it is stale.
    let mut state = p.state("demo");
    state["isolation"]["members"] = serde_json::json!({});
    std::fs::write(p.path("specs/demo/.specrun-state.json"), state.to_string()).unwrap();
    let check = doctor_worktrees(&p);
    assert_eq!(check["status"], "warn");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains(dir.to_str().unwrap()),
        "{check}"
    );
}

#[test]
fn a_dirty_main_checkout_is_refused_with_the_files_named() {
    let p = project();
    p.write("shared.txt", "edited by hand\n");
    p.write("new.txt", "x\n");
    let (code, out, _) = run_in(&p.root(), &["task", "start", "1.1", "--worktree"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("shared.txt") && out.contains("new.txt"),
        "{out}"
    );
    assert!(
        p.state("demo")["attempts"].get("1.1").is_none(),
        "nothing started"
    );
    assert_eq!(p.read("shared.txt"), "edited by hand\n");
    assert!(!p.path(".specrun/worktrees").join("demo/1.1").exists());
}

#[test]
fn a_detached_head_is_refused() {
    let p = project();
    let head = git_in(&p.root(), &["rev-parse", "HEAD"]);
    git_in(&p.root(), &["checkout", "-q", head.trim()]);
    let (code, out, _) = run_in(&p.root(), &["task", "start", "1.1", "--worktree"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("detached HEAD") && out.contains("git switch"),
        "{out}"
    );
}

#[test]
fn outside_git_the_group_runs_in_the_shared_tree() {
    let p = TempProject::bare();
    p.spec("demo", TASKS);
    p.init_state("demo");
    let (code, out, err) = run_in(&p.root(), &["task", "start", "1.1", "--worktree"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("isolation unavailable") && err.contains("shared tree"),
        "{err}"
    );
    assert_eq!(PathBuf::from(out.lines().last().unwrap()), p.root());
    assert_eq!(p.state("demo")["attempts"]["1.1"][0]["status"], "running");
}

/// Regression (issue 25): a branch made before the run, carrying a change no attempt's
/// scan saw, was taken up as "from an earlier attempt" and later merged.
#[test]
fn a_branch_this_execution_did_not_create_is_refused_not_reused() {
    let p = project();
    git_in(&p.root(), &["branch", "specrun/demo/1.1"]);
    git_in(&p.root(), &["checkout", "-q", "specrun/demo/1.1"]);
    p.write("a.txt", "made before the run\n");
    git_in(&p.root(), &["add", "a.txt"]);
    git_in(&p.root(), &["commit", "-qm", "before the run"]);
    git_in(&p.root(), &["checkout", "-q", "main"]);
    let (code, out, err) = run_in(&p.root(), &["task", "start", "1.1", "--worktree"]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        err.contains("branch specrun/demo/1.1 exists but this execution did not create it"),
        "{out}{err}"
    );
    assert!(
        !p.path(".specrun/worktrees/demo/1.1").exists(),
        "nothing was changed"
    );
    assert_eq!(p.state("demo")["attempts"]["1.1"], Value::Null);
}

#[test]
fn a_branch_from_an_earlier_attempt_is_reused() {
    let p = project();
    let (code, out, err) = run_in(&p.root(), &["task", "start", "1.1", "--worktree"]);
    assert_eq!(code, 0, "{out}{err}");
    let dir = PathBuf::from(out.lines().last().unwrap());
    std::fs::write(dir.join("a.txt"), "earlier attempt\n").unwrap();
    git_in(&dir, &["add", "a.txt"]);
    git_in(&dir, &["commit", "-qm", "earlier attempt"]);
    let (code, out, err) = run_in(&p.root(), &["task", "fail", "1.1", "--reason", "red"]);
    assert_eq!(code, 0, "{out}{err}");
    if dir.exists() {
        git_in(
            &p.root(),
            &["worktree", "remove", "--force", dir.to_str().unwrap()],
        );
    }
    let (code, out, err) = run_in(&p.root(), &["task", "start", "1.1", "--worktree"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("exists from an earlier attempt"), "{out}");
    let dir = PathBuf::from(out.lines().last().unwrap());
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "earlier attempt\n"
    );
}

#[test]
fn a_member_that_changed_files_outside_its_files_is_refused_and_loses_nothing() {
    let p = project();
    let dir = start(&p, "1.3");
    std::fs::write(dir.join("c.txt"), "C\n").unwrap();
    std::fs::write(dir.join("stray.txt"), "not mine\n").unwrap();
    ok_in(
        &dir,
        &[
            "verify",
            "run",
            "--task",
            "1.3",
            "--command",
            "test -f c.txt",
        ],
    );
    for stage in ["post-code", "post-test"] {
        let f = dir.join(format!("../{stage}.json"));
        std::fs::write(&f, critique_input(stage)).unwrap();
        ok_in(
            &dir,
            &[
                "critique",
                "record",
                "--task",
                "1.3",
                "--stage",
                stage,
                "--file",
                f.to_str().unwrap(),
            ],
        );
    }
    let (code, out, _) = run_in(&dir, &["task", "complete", "1.3", "--check"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("outside its Files") && out.contains("stray.txt"),
        "{out}"
    );
    assert!(dir.join("stray.txt").exists());
    assert_eq!(member(&p, "1.3")["status"], "running");
}

#[test]
fn sequential_tasks_run_isolated_only_after_state_init_isolate() {
    let p = TempProject::git();
    p.spec(
        "demo",
        "- [ ] 1 One\n  - **Files**: one.txt\n  - **Verify**: `test -f one.txt`\n- [ ] 2 Two\n  - **Verify**: `true`\n",
    );
    p.write(".gitignore", ".specrun/\n");
    p.commit_all("spec");
    p.init_state("demo");
    let (code, out, _) = run_in(&p.root(), &["task", "start", "1", "--worktree"]);
    assert_eq!(code, 1);
    assert!(out.contains("state init --isolate"), "{out}");
    ok_in(&p.root(), &["state", "init", "--isolate"]);
    let dir = start(&p, "1");
    finish_member(&dir, "1", &[("one.txt", "1\n")], "test -f one.txt");
    // No [VERIFY] task and no recorded command: the member's own Verify checks the merged
    // tree (group_next_step has the case with nothing to check with).
    let (code, out, err) = run_in(&p.root(), &["group", "merge"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("passed: test -f one.txt (verificationBlocks.isolated-group)"),
        "{out}"
    );
    assert_eq!(p.read("one.txt"), "1\n");
}

#[test]
fn evidence_is_recorded_when_the_specrun_directory_is_gitignored() {
    // Regression: the fingerprint named `.specrun` in an `:(exclude)` pathspec, and git
    // fails an add whose pathspec names an ignored path.
    let p = project();
    p.write(".specrun/other.txt", "x\n");
    ok_in(&p.root(), &["verify", "run", "--command", "true"]);
    ok_in(&p.root(), &["verify", "status"]);
}

/// The coordinator's shortcut: both members completed in their worktrees (which ticks the
/// main checkout's boxes), the phase verified on the base, `ALL_TASKS_COMPLETE` claimed
/// without `group merge`. The Stop hook refuses (`group-unmerged`, naming the members and
/// the merge command) and `snapshot` says the completion is unearned; after the merge and
/// a fresh phase verify the same claim is accepted.
#[test]
fn a_completion_claim_before_the_group_is_merged_is_refused() {
    use crate::hook_common::{json_of, run_hook, stop_stdin, SESSION};
    let p = TempProject::git();
    p.git_cmd(&["config", "user.email", "t@example.com"]);
    p.git_cmd(&["config", "user.name", "t"]);
    p.spec(
        "demo",
        "# Tasks\n\n**Final check**: `true`\n\n- [ ] 1.1 [P] Alpha\n  - **Files**: a.txt\n  - **Verify**: `test -f a.txt`\n- [ ] 1.2 [P] Beta\n  - **Files**: b.txt\n  - **Verify**: `test -f b.txt`\n",
    );
    p.write(".gitignore", ".specrun/\n");
    p.commit_all("spec");
    ok_in(
        &p.root(),
        &["state", "init", "--spec", "demo", "--session-id", SESSION],
    );
    let a = start(&p, "1.1");
    let b = start(&p, "1.2");
    finish_member(&a, "1.1", &[("a.txt", "A\n")], "test -f a.txt");
    finish_member(&b, "1.2", &[("b.txt", "B\n")], "test -f b.txt");
    assert!(p.read("specs/demo/tasks.md").contains("- [x] 1.2"));
    let phase = ["verify", "run", "--final"];
    ok_in(&p.root(), &phase);

    let claim = stop_stdin(&p, "ALL_TASKS_COMPLETE", false, None);
    let refused = json_of(&run_hook(&p, "stop", claim.clone()));
    let reason = refused["reason"].as_str().unwrap_or_default();
    assert_eq!(refused["decision"], "block", "{refused}");
    assert!(
        reason.contains("not merged: 1.1") && reason.contains("`specrun group merge --spec demo`"),
        "{reason}"
    );
    let snapshot: Value = serde_json::from_str(&ok_in(&p.root(), &["snapshot"])).unwrap();
    assert!(
        snapshot["gates"]
            .to_string()
            .contains("completion-unearned"),
        "{snapshot}"
    );
    assert_ne!(p.state("demo")["completed"], true);

    let (code, doc) = merge(&p);
    assert_eq!(
        (code, &doc["groupStatus"]),
        (0, &Value::from("complete")),
        "{doc}"
    );
    ok_in(&p.root(), &phase);
    let accepted = run_hook(&p, "stop", claim);
    assert!(!accepted.contains("\"block\""), "{accepted}");
    assert_eq!(p.state("demo")["completed"], true);
}

/// A project whose spec was never committed (the shell flow never says to): `specs/` is
/// untracked, with the ignore rules `specrun new` writes.
fn uncommitted_spec_project() -> TempProject {
    let p = TempProject::git();
    p.git_cmd(&["config", "user.email", "t@example.com"]);
    p.git_cmd(&["config", "user.name", "t"]);
    p.write("shared.txt", "line one\n");
    p.write(".gitignore", ".specrun/\n");
    p.commit_all("code only");
    p.spec("demo", TASKS);
    p.write(
        "specs/.gitignore",
        &format!("{}\n", specrun::api::commands::new::SPECS_IGNORE.join("\n")),
    );
    p.write("specs/demo/requirements.md", "the why\n");
    p.init_state("demo");
    assert!(git_in(&p.root(), &["status", "--porcelain"]).contains("?? specs/"));
    p
}

/// Every file under specs/ with its content.
fn bookkeeping(p: &TempProject) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&p.path("specs"), &mut out);
    out.sort();
    out
}

/// Every file of `before` is still there with the same content, but the ones a verb
/// rewrites by design (the state; tasks.md and .progress.md where `rewritten` says).
fn assert_kept(p: &TempProject, before: &[(PathBuf, Vec<u8>)], rewritten: &[&str]) {
    for (path, bytes) in before {
        let name = path.file_name().unwrap().to_string_lossy();
        if name.starts_with(".specrun-state.json") || rewritten.contains(&name.as_ref()) {
            continue;
        }
        assert_eq!(
            std::fs::read(path).ok().as_ref(),
            Some(bytes),
            "{} lost or changed",
            path.display()
        );
    }
    assert!(p.path(".specrun/events.jsonl").is_file());
}

#[test]
fn members_of_a_never_committed_spec_start_roll_back_and_cancel_losing_no_bookkeeping() {
    let p = uncommitted_spec_project();
    let before = bookkeeping(&p);
    // specs/.gitignore and the rest of specs/ are not "uncommitted changes" in the way.
    let d1 = start(&p, "1.1");
    std::fs::write(d1.join("a.txt"), "A\n").unwrap();
    let out = ok_in(&p.root(), &["task", "rollback", "1.1", "--json"]);
    assert!(!d1.exists(), "{out}");
    assert_kept(&p, &before, &[]);
    assert_eq!(member(&p, "1.1")["status"], "rolled-back");
    let d1 = start(&p, "1.1");
    let d2 = start(&p, "1.2");
    std::fs::write(d2.join("b.txt"), "B\n").unwrap();
    let out = ok_in(&p.root(), &["cancel", "--json"]);
    assert!(!d1.exists() && !d2.exists(), "{out}");
    assert_kept(&p, &before, &[".progress.md"]);
}

#[test]
fn a_group_of_a_never_committed_spec_merges_and_aborts_a_half_done_merge_losing_nothing() {
    let p = uncommitted_spec_project();
    let [d1, d2, d3] = three_finished(&p);
    let before = bookkeeping(&p);
    half_merge(&p);
    let (code, doc) = merge(&p);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["groupStatus"], "complete", "{doc}");
    assert!(!d1.exists() && !d2.exists() && !d3.exists());
    assert_eq!(p.read("a.txt"), "A\n");
    // tasks.md gained the ticks; nothing else of the spec changed or went.
    assert_kept(&p, &before, &["tasks.md", ".progress.md"]);
    assert!(p.read("specs/demo/tasks.md").contains("- [x] 1.1"));
    assert_eq!(
        p.state("demo")["isolation"]["members"]["1.1"]["status"],
        "merged"
    );
}

#[test]
fn a_member_checkout_is_never_written_through_a_link_out_of_the_project() {
    for link in [".specrun", ".specrun/worktrees"] {
        let p = project();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(p.path(".specrun")).unwrap();
        if link == ".specrun" {
            std::fs::remove_dir_all(p.path(".specrun")).unwrap();
        }
        std::os::unix::fs::symlink(outside.path(), p.path(link)).unwrap();
        let (code, out, err) = run_in(&p.root(), &["task", "start", "1.1", "--worktree"]);
        assert_eq!(code, 2, "{link}: {out}{err}");
        assert!(
            err.contains(&p.path(link).display().to_string()) && err.contains("symbolic link"),
            "{link}: {err}"
        );
        assert_eq!(
            std::fs::read_dir(outside.path()).unwrap().count(),
            0,
            "{link}: nothing written outside"
        );
        assert!(
            !git_in(&p.root(), &["worktree", "list"]).contains(outside.path().to_str().unwrap())
        );
        assert!(
            p.state("demo")["attempts"]["1.1"].is_null(),
            "{link}: no attempt recorded"
        );
    }
}

#[test]
fn state_init_isolate_outside_git_says_the_tasks_run_in_the_shared_tree() {
    let p = TempProject::bare();
    p.spec("demo", TASKS);
    let (code, out, err) = run_in(&p.root(), &["state", "init", "--isolate"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("isolation unavailable")
            && err.contains(&p.root().display().to_string())
            && err.contains("shared tree"),
        "{err}"
    );
    assert_eq!(p.state("demo")["isolation"]["sequential"], true);
    // In git, nothing to say.
    let p = project();
    let (code, _, err) = run_in(&p.root(), &["state", "init", "--isolate"]);
    assert_eq!(
        (code, err.contains("isolation unavailable")),
        (0, false),
        "{err}"
    );
}

/// A project whose member 1.1 may change a committed test file (its Files name it), and
/// whose `.gitignore` hides a conftest.py; owned by session `s-1`, 1.1 started in its
/// worktree.
fn member_with_tests() -> (TempProject, PathBuf) {
    let p = TempProject::git();
    p.git_cmd(&["config", "user.email", "t@example.com"]);
    p.git_cmd(&["config", "user.name", "t"]);
    p.spec(
        "demo",
        &TASKS.replace("a.txt, shared.txt", "a.txt, lib/add.test.js"),
    );
    p.write("shared.txt", "line one\n");
    p.write(".gitignore", ".specrun/\nconftest.py\n");
    p.write("lib/add.test.js", crate::integrity_scan::TWO_TESTS);
    // The main checkout's own ignored runner file, there at init: no worktree has it.
    p.write("conftest.py", "# the project's fixtures\n");
    p.commit_all("spec");
    ok_in(
        &p.root(),
        &["state", "init", "--spec", "demo", "--session-id", "s-1"],
    );
    let dir = start(&p, "1.1");
    (p, dir)
}

/// The member's test file with its second test removed.
fn delete_a_test(dir: &Path) {
    std::fs::write(
        dir.join("lib/add.test.js"),
        crate::integrity_scan::one_test(),
    )
    .unwrap();
}

fn integrity_unmet(dir: &Path) -> Vec<String> {
    crate::integrity_scan::findings_in(dir, "1.1", &[])
}

#[test]
fn a_member_deleting_a_test_in_its_worktree_is_refused_naming_it() {
    let (_p, dir) = member_with_tests();
    delete_a_test(&dir);
    let found = integrity_unmet(&dir);
    assert!(
        found
            .iter()
            .any(|f| f.contains("removed-test at lib/add.test.js:8")),
        "{found:#?}"
    );
}

#[test]
fn a_member_adding_an_ignored_conftest_in_its_worktree_is_a_finding_and_main_s_ignored_files_are_not(
) {
    let (_p, dir) = member_with_tests();
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::write(
        dir.join("lib/conftest.py"),
        "# a hook that passes every test\n",
    )
    .unwrap();
    let found = integrity_unmet(&dir);
    let ignored: Vec<&String> = found
        .iter()
        .filter(|f| f.contains("ignored-runner-file"))
        .collect();
    assert_eq!(ignored.len(), 1, "{found:#?}");
    assert!(ignored[0].contains("at lib/conftest.py:1"), "{found:#?}");
}

/// The executor's claim for a member that deleted a test in its worktree: SubagentStop
/// scans the member's tree (as `task complete` does) and the re-prompt names the finding.
#[test]
fn a_members_claim_after_deleting_a_test_in_its_worktree_is_sent_back_naming_it() {
    let (p, dir) = member_with_tests();
    delete_a_test(&dir);
    let input = serde_json::json!({
        "session_id": "s-1", "transcript_path": "/nonexistent/t.jsonl", "cwd": p.root(),
        "agent_id": "agent-7", "agent_type": "specrun:spec-executor",
        "hook_event_name": "SubagentStop", "stop_hook_active": false,
        "last_assistant_message": "Done.\nTASK_COMPLETE 1.1",
    });
    let answer = json_of(&run_hook(&p, "subagent-stop", input.to_string()));
    let reason = answer["reason"].as_str().unwrap_or_default();
    assert_eq!(answer["decision"], "block", "{answer}");
    assert!(
        reason.contains("removed-test at lib/add.test.js:8"),
        "{reason}"
    );
}
