//! The integrity scan of `task complete` against the repository's own git settings: each
//! way a setting, an index flag or an object trick could hide a deleted test from a scan
//! that reads `git diff`, on a real git project, and the controls that must stay quiet.

use std::path::Path;

use serde_json::Value;

use crate::common::{write_executable, TempProject};
use crate::task_helpers::{project, run};

const TASKS: &str = "# Tasks\n\n## Phase 1\n- [ ] 1.1 Adder\n  - **Files**: lib/add.test.js\n  - **Verify**: `node --test`\n";

pub const TWO_TESTS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('adds', () => {\n  assert.strictEqual(1 + 1, 2);\n});\n\ntest('subtracts', () => {\n  assert.strictEqual(2 - 1, 1);\n});\n";

/// TWO_TESTS without `subtracts`.
pub fn one_test() -> String {
    TWO_TESTS
        .split("\ntest('subtracts'")
        .next()
        .unwrap()
        .to_string()
        + "\n"
}

/// A project whose `file` holds TWO_TESTS at the start of task 1.1's attempt.
fn started(file: &str) -> TempProject {
    let p = project(TASKS, &[]);
    p.write(file, TWO_TESTS);
    p.commit_all("tests");
    let (code, out, err) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 0, "{out}{err}");
    p
}

/// The test-integrity findings `task complete 1.1 --check` reports, one line each.
pub fn integrity_findings(p: &TempProject) -> Vec<String> {
    findings_with_env(p, "1.1", &[])
}

/// The test-integrity findings of `task complete <id> --check` with `env` added.
pub fn findings_with_env(p: &TempProject, id: &str, env: &[(&str, &str)]) -> Vec<String> {
    findings_in(&p.root(), id, env)
}

/// The test-integrity findings of `task complete <id> --check` run in `dir` (a member's
/// worktree, say), one line each.
pub fn findings_in(dir: &Path, id: &str, env: &[(&str, &str)]) -> Vec<String> {
    let mut cmd = std::process::Command::new(crate::common::bin_path());
    cmd.current_dir(dir)
        .args(["task", "complete", id, "--check", "--json"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: {text}{}", String::from_utf8_lossy(&out.stderr)));
    v["unmet"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|u| u["name"] == "test-integrity")
        .map(|u| u["detail"].as_str().unwrap().to_string())
        .collect()
}

fn assert_removed(found: &[String], at: &str) {
    assert!(
        found.iter().any(|f| f.contains(&format!(
            "removed-test at {at}: test `subtracts` was removed"
        ))),
        "{found:#?}"
    );
}

fn delete_subtracts(p: &TempProject) {
    p.write("lib/add.test.js", &one_test());
}

/// A program that prints the start's test file whatever it is asked (a textconv or clean
/// filter that makes the file read as unchanged).
fn original_printer(p: &TempProject) -> String {
    let saved = p.path(".git/orig.js");
    std::fs::write(&saved, TWO_TESTS).unwrap();
    let script = p.path(".git/print-orig");
    write_executable(
        &script,
        &format!(
            "#!/bin/sh\ncat >/dev/null 2>&1\ncat '{}'\n",
            saved.display()
        ),
    );
    script.display().to_string()
}

#[test]
fn a_gitattributes_minus_diff_line_does_not_hide_a_deleted_test() {
    let p = started("lib/add.test.js");
    p.write(".gitattributes", "*.js -diff\n");
    delete_subtracts(&p);
    p.commit_all("drop a test");
    assert_removed(&integrity_findings(&p), "lib/add.test.js:8");
}

#[test]
fn info_attributes_binary_does_not_hide_a_deleted_test() {
    let p = started("lib/add.test.js");
    p.write(".git/info/attributes", "*.js binary\n");
    delete_subtracts(&p);
    assert_removed(&integrity_findings(&p), "lib/add.test.js:8");
}

#[test]
fn diff_prefix_settings_do_not_hide_a_deleted_test() {
    for (key, value) in [
        ("diff.noprefix", "true"),
        ("diff.mnemonicPrefix", "true"),
        ("color.diff", "always"),
        ("color.ui", "always"),
        ("diff.relative", "true"),
    ] {
        let p = started("lib/add.test.js");
        p.git_cmd(&["config", key, value]);
        delete_subtracts(&p);
        assert_removed(&integrity_findings(&p), "lib/add.test.js:8");
    }
}

#[test]
fn a_textconv_or_external_diff_does_not_hide_a_deleted_test() {
    let p = started("lib/add.test.js");
    let printer = original_printer(&p);
    p.write(".git/info/attributes", "*.js diff=same\n");
    p.git_cmd(&["config", "diff.same.textconv", &printer]);
    delete_subtracts(&p);
    assert_removed(&integrity_findings(&p), "lib/add.test.js:8");
    p.git_cmd(&["config", "diff.external", &printer]);
    p.git_cmd(&["config", "diff.same.command", &printer]);
    assert_removed(&integrity_findings(&p), "lib/add.test.js:8");
}

#[test]
fn a_clean_filter_does_not_hide_a_deleted_test() {
    let p = started("lib/add.test.js");
    let printer = original_printer(&p);
    p.write(".git/info/attributes", "*.js filter=same\n");
    p.git_cmd(&["config", "filter.same.clean", &printer]);
    delete_subtracts(&p);
    assert!(
        p.git_cmd(&["diff", "HEAD", "--", "lib/add.test.js"])
            .trim()
            .is_empty(),
        "git diff itself no longer shows the change"
    );
    assert_removed(&integrity_findings(&p), "lib/add.test.js:8");
}

#[test]
fn index_flags_do_not_hide_a_deleted_test() {
    for flag in ["--assume-unchanged", "--skip-worktree"] {
        let p = started("lib/add.test.js");
        delete_subtracts(&p);
        p.git_cmd(&["update-index", flag, "lib/add.test.js"]);
        assert!(
            p.git_cmd(&["diff", "HEAD", "--stat", "--", "lib/add.test.js"])
                .trim()
                .is_empty(),
            "{flag}: git itself no longer sees the change"
        );
        assert_removed(&integrity_findings(&p), "lib/add.test.js:8");
    }
}

#[test]
fn a_replace_ref_does_not_make_the_old_test_read_as_the_new_one() {
    let p = started("lib/add.test.js");
    let old = p.git_cmd(&["rev-parse", "HEAD:lib/add.test.js"]);
    delete_subtracts(&p);
    p.commit_all("drop a test");
    let new = p.git_cmd(&["rev-parse", "HEAD:lib/add.test.js"]);
    p.git_cmd(&["replace", old.trim(), new.trim()]);
    assert_removed(&integrity_findings(&p), "lib/add.test.js:8");
}

#[test]
fn git_variables_of_the_caller_do_not_blind_the_scan() {
    let p = started("lib/add.test.js");
    delete_subtracts(&p);
    let found = findings_with_env(
        &p,
        "1.1",
        &[
            ("GIT_CONFIG_PARAMETERS", "'diff.noprefix'='true'"),
            ("GIT_NO_REPLACE_OBJECTS", "0"),
        ],
    );
    assert_removed(&found, "lib/add.test.js:8");
}

#[test]
fn a_path_holding_space_b_slash_is_read_whole() {
    let p = started("lib/a b/add.test.js");
    p.write("lib/a b/add.test.js", &one_test());
    assert_removed(&integrity_findings(&p), "lib/a b/add.test.js:8");
}

#[test]
fn a_test_file_that_is_not_utf8_is_still_text() {
    let p = project(TASKS, &[]);
    let latin1 = |s: &str| {
        let mut b = b"// caf\xe9\n".to_vec();
        b.extend_from_slice(s.as_bytes());
        b
    };
    std::fs::create_dir_all(p.path("lib")).unwrap();
    std::fs::write(p.path("lib/add.test.js"), latin1(TWO_TESTS)).unwrap();
    p.commit_all("tests");
    run(&p, &["task", "start", "1.1"]);
    std::fs::write(p.path("lib/add.test.js"), latin1(&one_test())).unwrap();
    assert_removed(&integrity_findings(&p), "lib/add.test.js:9");
}

// ---- controls -------------------------------------------------------------------------

#[test]
fn an_honest_change_under_the_same_settings_has_no_finding() {
    let p = started("lib/add.test.js");
    p.write(".git/info/attributes", "*.js -diff filter=same\n");
    let printer = original_printer(&p);
    p.git_cmd(&["config", "filter.same.clean", &printer]);
    p.git_cmd(&["config", "diff.noprefix", "true"]);
    p.write(
        "lib/add.test.js",
        &(TWO_TESTS.to_string()
            + "\ntest('multiplies', () => {\n  assert.strictEqual(2 * 2, 4);\n});\n"),
    );
    p.write("lib/add.js", "module.exports = (a, b) => a + b;\n");
    assert_eq!(integrity_findings(&p), Vec::<String>::new());
}

#[test]
fn a_truly_binary_file_and_an_unchanged_tree_are_not_judged() {
    let p = started("lib/add.test.js");
    assert_eq!(integrity_findings(&p), Vec::<String>::new());
    std::fs::write(p.path("lib/blob.js"), [b'x', 0, 1, 2, 0]).unwrap();
    assert_eq!(integrity_findings(&p), Vec::<String>::new());
    assert!(Path::new(&p.path("lib/blob.js")).exists());
}

/// A name shaped like the store's temp files (`.<file>.specrun-tmp-…`) is no hiding place:
/// the scan reads every file of the tree by content, whatever it is called.
#[test]
fn a_disarming_file_named_like_a_store_temp_file_is_still_scanned() {
    let p = started("lib/add.test.js");
    p.write(
        "lib/.add.js.specrun-tmp-1.js",
        "require('node:assert').strictEqual = () => {};\n",
    );
    let found = integrity_findings(&p);
    assert!(
        found
            .iter()
            .any(|f| f.contains("disarmed-assertion at lib/.add.js.specrun-tmp-1.js:1")),
        "{found:#?}"
    );
}
