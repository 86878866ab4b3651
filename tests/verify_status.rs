//! `specrun verify status`: evidence is fresh exactly while the code it verified is
//! unchanged; the spec's bookkeeping never stales it (the seed's ticked-checkbox defect).

use serde_json::Value;

use crate::common::TempProject;

const TASKS: &str = "# Tasks\n\n- [ ] 1.1 First\n  - **Verify**: `true`\n- [ ] 1.2 Second\n  - **Verify**: `true`\n";

fn project() -> TempProject {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    p.write("src/lib.rs", "pub fn a() {}\n");
    p.write(".gitignore", "target/\n");
    p.commit_all("spec");
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .success();
    p
}

fn verify(p: &TempProject, args: &[&str]) {
    p.specrun()
        .args(["verify", "run"])
        .args(args)
        .assert()
        .success();
}

/// (status word, exit code) of `verify status --json` with `args`.
fn status(p: &TempProject, args: &[&str]) -> (String, i32, Value) {
    let out = p
        .specrun()
        .args(["verify", "status", "--json"])
        .args(args)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    (
        doc["status"].as_str().unwrap().to_string(),
        out.status.code().unwrap(),
        doc,
    )
}

fn assert_status(p: &TempProject, args: &[&str], expected: &str, why: &str) {
    let (word, code, doc) = status(p, args);
    assert_eq!(word, expected, "{why}: {doc}");
    assert_eq!(code, if expected == "fresh" { 0 } else { 1 }, "{why}");
}

#[test]
fn source_edit_stales_bookkeeping_does_not_and_a_revert_restores() {
    let p = project();
    verify(&p, &["--command", "true"]);
    assert_status(&p, &[], "fresh", "just recorded");

    // The regression the seed had: ticking a checkbox staled evidence.
    p.specrun()
        .args(["tasks", "check", "1.1"])
        .assert()
        .success();
    assert_status(&p, &[], "fresh", "after a checkbox tick");
    p.write("specs/demo/.progress.md", "## Learnings\n- one\n");
    assert_status(&p, &[], "fresh", "after writing progress");
    p.write("specs/demo/critique/1.1-post-code.json", "{}");
    p.write(".specrun/events.jsonl", "{}\n");
    assert_status(&p, &[], "fresh", "after critique and events");

    p.write("src/lib.rs", "pub fn a() { todo!() }\n");
    let (word, code, doc) = status(&p, &[]);
    assert_eq!((word.as_str(), code), ("stale", 1), "after a source edit");
    assert_ne!(doc["recordedTree"], doc["currentTree"]);
    assert!(doc["rerun"]
        .as_str()
        .unwrap()
        .starts_with("specrun verify run --spec demo --command true"));

    p.write("src/lib.rs", "pub fn a() {}\n");
    assert_status(&p, &[], "fresh", "after reverting the edit");

    // Committing the verified code (the executor's commit) changes nothing it verified.
    p.commit_all("task 1.1");
    assert_status(&p, &[], "fresh", "after committing");
}

#[test]
fn untracked_files_count_and_ignored_files_do_not() {
    let p = project();
    verify(&p, &["--command", "true"]);
    p.write("target/debug/out.bin", "build output");
    assert_status(&p, &[], "fresh", "an ignored file");
    p.write("src/new.rs", "pub fn b() {}\n");
    assert_status(&p, &[], "stale", "a new untracked source file");
    std::fs::remove_file(p.path("src/new.rs")).unwrap();
    assert_status(&p, &[], "fresh", "the new file removed");
    std::fs::remove_file(p.path("src/lib.rs")).unwrap();
    assert_status(&p, &[], "stale", "a deleted tracked file");
}

#[test]
fn the_users_index_is_not_touched() {
    let p = project();
    p.write("src/lib.rs", "pub fn a() { 2 }\n");
    p.write("src/untracked.rs", "x");
    p.git_cmd(&["add", "src/lib.rs"]);
    p.write("src/lib.rs", "pub fn a() { 3 }\n");
    let index = std::fs::read(p.path(".git/index")).unwrap();
    let staged = p.git_cmd(&["diff", "--cached", "--name-only"]);
    verify(&p, &["--command", "true"]);
    assert_status(&p, &[], "fresh", "unstaged changes are part of the tree");
    assert_eq!(std::fs::read(p.path(".git/index")).unwrap(), index);
    assert_eq!(p.git_cmd(&["diff", "--cached", "--name-only"]), staged);
    let leftovers: Vec<_> = std::fs::read_dir(p.path(".git"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("specrun-index"))
        .collect();
    assert!(leftovers.is_empty(), "temporary index left behind");
}

#[test]
fn missing_failed_and_slot_specific_answers() {
    let p = project();
    assert_status(&p, &[], "missing", "nothing recorded");
    assert_status(&p, &["--task", "1.1"], "missing", "no task evidence");
    verify(&p, &["--task", "1.1", "--command", "true"]);
    assert_status(&p, &["--task", "1.1"], "fresh", "task evidence");
    assert_status(&p, &[], "missing", "the phase slot is separate");
    p.specrun()
        .args(["verify", "run", "--task", "1.2", "--command", "false"])
        .assert()
        .code(1);
    assert_status(&p, &["--task", "1.2"], "failed", "a failing command");
    // Human output names the slot and the verdict.
    p.specrun()
        .args(["verify", "status", "--task", "1.1"])
        .assert()
        .success()
        .stdout(predicates::str::starts_with(
            "fresh: taskEvidence[1.1] of demo",
        ));
    p.specrun()
        .args(["verify", "status", "--task", "7"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no task with id 7"));
}

#[test]
fn no_state_file_is_missing_not_an_error() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    let (word, code, doc) = status(&p, &[]);
    assert_eq!((word.as_str(), code), ("missing", 1));
    assert!(doc["reason"].as_str().unwrap().contains("state init"));
}

#[test]
fn a_command_that_changes_the_tree_leaves_stale_evidence_until_rerun() {
    let p = project();
    // A formatter-like command: it rewrites a source file that is not formatted yet (as
    // real formatters do, it leaves a formatted one alone: a write during the run, even of
    // the same bytes, makes the run stale), then passes.
    let out = p
        .specrun()
        .args([
            "verify",
            "run",
            "--command",
            "grep -q formatted src/lib.rs || printf 'pub fn a() {}\\n// formatted\\n' > src/lib.rs",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["treeChanged"], true);
    assert!(String::from_utf8_lossy(&out.stderr).contains("changed the working tree"));
    let (word, _, doc) = status(&p, &[]);
    assert_eq!(word, "stale");
    assert!(doc["reason"].as_str().unwrap().contains("command itself"));
    // Run again on the result: nothing changes now, so the evidence holds.
    verify(
        &p,
        &[
            "--command",
            "grep -q formatted src/lib.rs || printf 'pub fn a() {}\\n// formatted\\n' > src/lib.rs",
        ],
    );
    assert_status(&p, &[], "fresh", "a re-run on the formatted tree");
}

const PARALLEL: &str = "# Tasks\n\n- [ ] 1 [P] A\n  - **Verify**: `true`\n  - **Files**: src/a.rs\n- [ ] 2 [P] B\n  - **Verify**: `true`\n  - **Files**: src/b.rs, src/shared.rs\n- [ ] 3 C\n  - **Verify**: `true`\n  - **Files**: src/c.rs\n";

/// Regression: a parallel sibling's edit staled a finished member's evidence, so members
/// of a `[P]` group could not complete while the group ran.
#[test]
fn a_parallel_member_is_not_staled_by_its_siblings_files() {
    let p = TempProject::git();
    p.spec("demo", PARALLEL);
    for f in [
        "src/a.rs",
        "src/b.rs",
        "src/shared.rs",
        "src/c.rs",
        "src/other.rs",
    ] {
        p.write(f, "// v1\n");
    }
    p.commit_all("spec");
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .success();
    verify(&p, &["--task", "1", "--command", "true"]);
    let record = p.state("demo")["taskEvidence"]["1"].clone();
    assert_eq!(
        record["excludedPaths"],
        serde_json::json!(["src/b.rs", "src/shared.rs"])
    );
    // The sibling edits its own files: task 1's evidence stays fresh.
    p.write("src/b.rs", "// v2\n");
    p.write("src/shared.rs", "// v2\n");
    assert_eq!(status(&p, &["--task", "1"]).0, "fresh");
    // The sibling finishes (the group changes): the record keeps its own exclusions.
    p.specrun().args(["tasks", "check", "2"]).assert().success();
    assert_eq!(status(&p, &["--task", "1"]).0, "fresh");
    // Anything else still stales it: its own file, a file no sibling declared.
    p.write("src/other.rs", "// v2\n");
    assert_eq!(status(&p, &["--task", "1"]).0, "stale");
    p.write("src/other.rs", "// v1\n");
    assert_eq!(status(&p, &["--task", "1"]).0, "fresh");
    p.write("src/a.rs", "// v2\n");
    assert_eq!(status(&p, &["--task", "1"]).0, "stale");
    // A task outside a parallel group and phase evidence cover the whole tree.
    verify(&p, &["--phase", "execution", "--command", "true"]);
    assert!(p.state("demo")["verificationBlocks"]["execution"]
        .get("excludedPaths")
        .is_none());
    p.write("src/b.rs", "// v3\n");
    assert_eq!(status(&p, &["--phase", "execution"]).0, "stale");
}
