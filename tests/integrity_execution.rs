//! The integrity scan reads the whole execution's change: from the commit `state init`
//! started from, across every attempt, so a test deleted before `task start` or in a
//! failed attempt is still refused; a finding a person justified for an earlier task is
//! not asked again; a start commit that is gone is said, not silently skipped.

use serde_json::json;

use crate::common::TempProject;
use crate::integrity_scan::{findings_with_env, one_test, TWO_TESTS};
use crate::task_helpers::{run, set_state, SPEC};

const TASKS: &str = "# Tasks\n\n## Phase 1\n- [ ] 1.1 Adder\n  - **Verify**: `true`\n- [ ] 1.2 Docs\n  - **Verify**: `true`\n";

/// A project whose tests exist when the execution starts.
fn initialised() -> TempProject {
    let p = TempProject::git();
    p.spec(SPEC, TASKS);
    p.write("lib/add.test.js", TWO_TESTS);
    p.commit_all("spec and tests");
    p.init_state(SPEC);
    p
}

fn findings_of(p: &TempProject, id: &str) -> Vec<String> {
    findings_with_env(p, id, &[])
}

fn ok(p: &TempProject, args: &[&str]) {
    let (code, out, err) = run(p, args);
    assert_eq!(code, 0, "{args:?}: {out}{err}");
}

const REMOVED: &str = "removed-test at lib/add.test.js:8: test `subtracts` was removed";

#[test]
fn the_start_commit_is_recorded_at_init() {
    let p = initialised();
    let head = p.git_cmd(&["rev-parse", "HEAD"]);
    assert_eq!(p.state(SPEC)["baseCommit"], head.trim());
}

#[test]
fn a_test_deleted_and_committed_before_task_start_is_refused() {
    let p = initialised();
    p.write("lib/add.test.js", &one_test());
    p.commit_all("drop a test before the task starts");
    ok(&p, &["task", "start", "1.1"]);
    let found = findings_of(&p, "1.1");
    assert!(found.iter().any(|f| f.contains(REMOVED)), "{found:#?}");
}

#[test]
fn a_test_deleted_in_a_failed_attempt_is_refused_in_the_next() {
    let p = initialised();
    ok(&p, &["task", "start", "1.1"]);
    p.write("lib/add.test.js", &one_test());
    p.commit_all("attempt 1 drops a test");
    ok(&p, &["task", "fail", "1.1", "--reason", "red"]);
    ok(&p, &["task", "start", "1.1"]);
    let found = findings_of(&p, "1.1");
    assert!(found.iter().any(|f| f.contains(REMOVED)), "{found:#?}");
}

#[test]
fn a_finding_justified_for_an_earlier_task_is_not_asked_again() {
    let p = initialised();
    ok(&p, &["task", "start", "1.1"]);
    p.write("lib/add.test.js", &one_test());
    p.commit_all("drop a test");
    let found = findings_of(&p, "1.1");
    let id = found[0].split(' ').next().unwrap().to_string();
    let (code, out, err) = crate::task_helpers::justify(&p, "1.1", &id, "moved to 2.1");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(findings_of(&p, "1.1"), Vec::<String>::new());
    crate::task_helpers::ready_to_complete(&p, "1.1");
    ok(&p, &["task", "complete", "1.1", "--check"]);
    ok(&p, &["task", "start", "1.2"]);
    assert_eq!(findings_of(&p, "1.2"), Vec::<String>::new());
}

#[test]
fn a_start_commit_that_is_gone_is_said_not_skipped() {
    let p = initialised();
    ok(&p, &["task", "start", "1.1"]);
    set_state(
        &p,
        json!({"baseCommit": "0123456789abcdef0123456789abcdef01234567"}),
    );
    let found = findings_of(&p, "1.1");
    assert!(
        found.iter().any(|f| f.contains("could not be scanned")
            && f.contains("the start commit 0123456789 is not readable here")),
        "{found:#?}"
    );
}

#[test]
fn an_execution_begun_before_the_field_scans_from_the_attempt_start() {
    let p = initialised();
    let mut st = p.state(SPEC);
    st.as_object_mut().unwrap().remove("baseCommit");
    std::fs::write(
        crate::task_helpers::state_path(&p),
        serde_json::to_vec_pretty(&st).unwrap(),
    )
    .unwrap();
    p.write("lib/add.test.js", &one_test());
    p.commit_all("before the attempt");
    ok(&p, &["task", "start", "1.1"]);
    assert_eq!(findings_of(&p, "1.1"), Vec::<String>::new());
}
