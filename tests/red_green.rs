//! Red before, green after (issue 25, item 5): `task complete` runs a criterion's mapped
//! tests at the attempt's start commit with the current tests applied; a test that passes
//! there proves nothing and is refused naming the criterion and the run. Real runners on
//! temp git projects: `node --test` (always here) and `cargo test`.

use crate::common::TempProject;
use crate::task_helpers::{self, project, run};

const NODE_TASKS: &str = "# Tasks\n\n## Phase 1\n- [ ] 1.1 Adder\n  - **Files**: lib/add.js, test/add.test.js\n  - **Verify**: `node --test`\n  - **Done when**: adding two numbers works\n";

/// The code before the task: an adder that does not add.
const ADD_BEFORE: &str = "module.exports = { add: (a, b) => 0 };\n";
const ADD_AFTER: &str = "module.exports = { add: (a, b) => a + b };\n";

fn node_test(name: &str, body: &str) -> String {
    format!(
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst {{ add }} = require('../lib/add');\n\ntest('{name}', () => {{\n  {body}\n}});\n"
    )
}

/// A node project whose adder does not add yet, an execution started, 1.1 running.
fn node_project(tasks: &str) -> TempProject {
    let p = project(tasks, &[]);
    p.write("lib/add.js", ADD_BEFORE);
    p.commit_all("the adder, not adding yet");
    let (code, _, err) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 0, "{err}");
    p
}

/// Verify, critiques and the mapping: everything `task complete 1.1` needs.
fn ready(p: &TempProject, command: &str, test: &str) {
    let (code, _, err) = run(p, &["verify", "run", "--task", "1.1", "--command", command]);
    assert_eq!(code, 0, "{err}");
    task_helpers::critique(p, "1.1", "post-code", "2099-01-01T00:00:00Z");
    task_helpers::critique(p, "1.1", "post-test", "2099-01-01T00:00:01Z");
    let (code, _, err) = run(p, &["ac", "map", "1.1/AC1", "--test", test]);
    assert_eq!(code, 0, "{err}");
}

/// The adder made to add, tested by `body` in a test named after the criterion, and the
/// task made ready to complete with `command`.
fn change(p: &TempProject, command: &str, body: &str) {
    p.write("lib/add.js", ADD_AFTER);
    p.write(
        "test/add.test.js",
        &node_test("adding two numbers works", body),
    );
    ready(p, command, "adding two numbers works");
}

/// A test that passes with or without the change.
const PROVES_NOTHING: &str = "assert.ok(typeof add === 'function');";
/// A test that fails without the change.
const PROVES_IT: &str = "assert.strictEqual(add(1, 2), 3);";

fn start_commit(p: &TempProject) -> String {
    let s = p.state("demo");
    s["attempts"]["1.1"][0]["startCommit"]
        .as_str()
        .unwrap()
        .to_string()
}

fn no_worktree_left(p: &TempProject) {
    let list = p.git_cmd(&["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
}

#[test]
fn a_test_that_passes_before_the_change_does_not_cover_its_criterion() {
    let p = node_project(NODE_TASKS);
    // Named after the criterion, asserting nothing of the change.
    change(&p, "node --test", PROVES_NOTHING);
    let start = start_commit(&p);
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "red-before: 1.1/AC1 (adding two numbers works) is not shown red before the change"
        ),
        "{out}"
    );
    assert!(
        out.contains(&format!("start commit {}", &start[..10])),
        "{out}"
    );
    assert!(
        out.contains("`node --test '--test-name-pattern=^(?:adding two numbers works)$'` exited 0"),
        "{out}"
    );
    assert!(
        out.contains("its test adding two numbers works passed there"),
        "{out}"
    );
    assert!(!p.read("specs/demo/tasks.md").contains("- [x] 1.1"));
    no_worktree_left(&p);
}

#[test]
fn an_honest_test_written_failing_first_then_the_code_completes() {
    let p = node_project(NODE_TASKS);
    // The test first: it fails against the code as it is.
    p.write(
        "test/add.test.js",
        &node_test(
            "adding two numbers works",
            "assert.strictEqual(add(1, 2), 3);",
        ),
    );
    let (code, _, _) = run(
        &p,
        &["verify", "run", "--task", "1.1", "--command", "node --test"],
    );
    assert_eq!(code, 1, "the test fails before the code");
    // Then the code.
    p.write("lib/add.js", ADD_AFTER);
    ready(&p, "node --test", "adding two numbers works");
    let (code, out, err) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(p.read("specs/demo/tasks.md").contains("- [x] 1.1"));
    no_worktree_left(&p);
}

#[test]
fn a_start_commit_rebased_away_is_refused_not_passed() {
    let p = node_project(NODE_TASKS);
    change(&p, "node --test", PROVES_IT);
    // The attempt's start commit is rewritten out of history and pruned.
    let start = start_commit(&p);
    p.git_cmd(&["reset", "-q", "--soft", "HEAD~1"]);
    p.git_cmd(&["commit", "-q", "-m", "rewritten"]);
    p.git_cmd(&["reflog", "expire", "--expire=now", "--all"]);
    p.git_cmd(&["gc", "-q", "--prune=now"]);
    let gone = std::process::Command::new("git")
        .current_dir(p.root())
        .args(["cat-file", "-e", &format!("{start}^{{commit}}")])
        .status()
        .unwrap();
    assert!(!gone.success(), "the start commit is gone");
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "red-before: the criteria 1.1/AC1 cannot be shown red before the change: the attempt's start commit {} no longer exists here",
            &start[..10]
        )),
        "{out}"
    );
}

#[test]
fn a_runner_without_a_name_filter_runs_whole_and_says_so() {
    let tasks = NODE_TASKS.replace("`node --test`", "`npm test`");
    let p = project(&tasks, &[]);
    p.write("lib/add.js", ADD_BEFORE);
    p.write(
        "package.json",
        "{\"name\": \"adder\", \"scripts\": {\"test\": \"node --test\"}}\n",
    );
    p.commit_all("the adder, not adding yet, and its package script");
    run(&p, &["task", "start", "1.1"]);
    change(&p, "npm test", PROVES_NOTHING);
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("`npm test` (run whole, without a name filter: `npm` is not a runner whose tests can be selected by name"),
        "{out}"
    );
    assert!(
        out.contains("its test adding two numbers works passed there"),
        "{out}"
    );
}

#[test]
fn a_passing_test_renamed_after_the_criterion_in_the_same_change_is_refused() {
    let p = project(NODE_TASKS, &[]);
    p.write("lib/add.js", ADD_AFTER);
    p.write(
        "test/add.test.js",
        &node_test("adds one and two", "assert.strictEqual(add(1, 2), 3);"),
    );
    p.commit_all("an adder that adds, tested");
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .success();
    run(&p, &["task", "start", "1.1"]);
    // The same test, renamed after the criterion: it passed before the task began.
    p.write(
        "test/add.test.js",
        &node_test(
            "adding two numbers works",
            "assert.strictEqual(add(1, 2), 3);",
        ),
    );
    ready(&p, "node --test", "adding two numbers works");
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("red-before: 1.1/AC1 (adding two numbers works) is not shown red"),
        "{out}"
    );
}

#[test]
fn an_execution_a_person_started_without_it_skips_it_and_status_says_so() {
    let p = node_project(NODE_TASKS);
    let (code, out, _) = run(&p, &["status"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("red before, green after: a task's mapped tests run"),
        "{out}"
    );
    // Inside Claude Code the flag is a person's decision.
    let refused = p
        .specrun()
        .env("CLAUDECODE", "1")
        .args(["state", "init", "--spec", "demo", "--no-red-green"])
        .output()
        .unwrap();
    assert_ne!(refused.status.code(), Some(0));
    assert_eq!(p.state("demo")["redGreen"], true);
    p.specrun()
        .args(["state", "init", "--spec", "demo", "--no-red-green"])
        .assert()
        .success();
    assert_eq!(p.state("demo")["redGreen"], false);
    let (_, out, _) = run(&p, &["status"]);
    assert!(
        out.contains("red before, green after: off for this execution"),
        "{out}"
    );
    change(&p, "node --test", PROVES_NOTHING);
    let (code, out, err) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 0, "{out}{err}");
}

const CARGO_TASKS: &str = "# Tasks\n\n## Phase 1\n- [ ] 1.1 Adder\n  - **Files**: src/lib.rs, tests/add.rs\n  - **Verify**: `cargo test`\n  - **Done when**: adding two numbers works\n";

#[test]
fn cargo_a_test_passing_before_is_refused_and_one_red_before_completes() {
    let p = project(CARGO_TASKS, &[]);
    p.write(
        "Cargo.toml",
        "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    // `cargo test` writes the lock file: ignored, so the run it writes it in stays fresh.
    p.write(".gitignore", "/target\nCargo.lock\n");
    p.write(
        "src/lib.rs",
        "pub fn add(_a: i32, _b: i32) -> i32 {\n    0\n}\n",
    );
    p.commit_all("the adder, not adding yet");
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .success();
    run(&p, &["task", "start", "1.1"]);
    p.write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    );
    p.write(
        "tests/add.rs",
        "#[test]\nfn adds() {\n    assert_eq!(adder::add(0, 0), 0);\n}\n",
    );
    ready(&p, "cargo test", "adds");
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("red-before: 1.1/AC1 (adding two numbers works) is not shown red"),
        "{out}"
    );
    assert!(out.contains("`cargo test -- adds` exited 0"), "{out}");
    // The test made to exercise the change: red at the start commit, green now.
    p.write(
        "tests/add.rs",
        "#[test]\nfn adds() {\n    assert_eq!(adder::add(1, 2), 3);\n}\n",
    );
    let (code, _, err) = run(
        &p,
        &["verify", "run", "--task", "1.1", "--command", "cargo test"],
    );
    assert_eq!(code, 0, "{err}");
    task_helpers::critique(&p, "1.1", "post-test", "2099-01-01T00:00:02Z");
    let (code, out, err) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 0, "{out}{err}");
    // The project's own build is not touched: the start commit builds elsewhere.
    no_worktree_left(&p);
}

/// An isolated member's tests are read where the member writes them, its worktree (the
/// main checkout holds none of them until `group merge`): a test written there that fails
/// without the change completes; one that passes without it is refused as it is outside
/// isolation.
#[test]
fn a_members_tests_are_run_at_the_start_commit_from_its_own_worktree() {
    const PARALLEL: &str = "# Tasks\n\n## Phase 1\n- [ ] 1.1 [P] Adder\n  - **Files**: lib/add.js, test/add.test.js\n  - **Verify**: `node --test`\n  - **Done when**: adding two numbers works\n- [ ] 1.2 [P] Other\n  - **Files**: b.txt\n  - **Verify**: `test -f b.txt`\n";
    for (body, completes) in [(PROVES_IT, true), (PROVES_NOTHING, false)] {
        let p = project(PARALLEL, &[]);
        p.write(".gitignore", ".specrun/\n");
        p.write("lib/add.js", ADD_BEFORE);
        p.commit_all("the adder, not adding yet");
        let dir = crate::group_isolation::start(&p, "1.1");
        std::fs::write(dir.join("lib/add.js"), ADD_AFTER).unwrap();
        std::fs::create_dir_all(dir.join("test")).unwrap();
        let test = node_test("adding two numbers works", body);
        std::fs::write(dir.join("test/add.test.js"), test).unwrap();
        let verify = ["verify", "run", "--task", "1.1", "--command", "node --test"];
        crate::group_isolation::ok_in(&dir, &verify);
        task_helpers::critique(&p, "1.1", "post-code", "2099-01-01T00:00:00Z");
        task_helpers::critique(&p, "1.1", "post-test", "2099-01-01T00:00:01Z");
        let map = ["ac", "map", "1.1/AC1", "--test", "adding two numbers works"];
        crate::group_isolation::ok_in(&p.root(), &map);
        let complete = ["task", "complete", "1.1", "--check"];
        let (code, out, err) = crate::group_isolation::run_in(&dir, &complete);
        let said = format!("{out}{err}");
        if completes {
            assert_eq!(code, 0, "{said}");
        } else {
            assert_eq!(code, 1, "{said}");
            assert!(
                said.contains("red-before") && said.contains("1.1/AC1"),
                "{said}"
            );
        }
    }
}
