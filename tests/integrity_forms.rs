//! The forms that keep a test but stop it running or asserting, each confirmed with the
//! real runner (the honest failing test fails; with the form applied the run passes) and
//! refused by `task complete` naming the file and line. cargo and node are always here;
//! pytest when found (a venv on PATH will do).

use std::path::Path;
use std::process::Command;

use crate::common::TempProject;
use crate::integrity_scan::integrity_findings;
use crate::task_helpers::{project, run};
use crate::testlog_runners::{did_not_run, on_path, python_with_pytest};

const TASKS: &str = "# Tasks\n\n## Phase 1\n- [ ] 1.1 Adder\n  - **Verify**: `true`\n";

/// The runner's exit code in the project (its own target dir, no colour).
fn runner_passes(p: &TempProject, program: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(program)
        .args(args)
        .current_dir(p.root())
        .env("NO_COLOR", "1")
        .env("CARGO_TARGET_DIR", p.path("target"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", program.display()));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// A project holding `files` (the honest, failing test among them) at the start of task
/// 1.1's attempt; the build and cache directories ignored.
fn started(files: &[(&str, &str)]) -> TempProject {
    let p = project(TASKS, &[]);
    p.write(".gitignore", "target/\n__pycache__/\n.pytest_cache/\n");
    for (path, text) in files {
        p.write(path, text);
    }
    p.commit_all("failing test");
    let (code, out, err) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 0, "{out}{err}");
    p
}

/// For each (file, weakened text, finding expected): the run passes with the form and
/// `task complete` names it; with the file put back the run fails again.
fn confirm(p: &TempProject, runner: (&Path, &[&str]), forms: &[(&str, String, &str)]) {
    let (program, args) = runner;
    let (ok, text) = runner_passes(p, program, args);
    assert!(!ok, "the honest test must fail first:\n{text}");
    for (file, weakened, expected) in forms {
        let honest = std::fs::read(p.path(file)).ok();
        p.write(file, weakened);
        let (ok, text) = runner_passes(p, program, args);
        assert!(
            ok,
            "{expected}: the form must really disable the test:\n{text}"
        );
        let found = integrity_findings(p);
        assert!(
            found.iter().any(|f| f.contains(expected)),
            "{expected} not among {found:#?}"
        );
        match honest {
            Some(bytes) => std::fs::write(p.path(file), bytes).unwrap(),
            None => std::fs::remove_file(p.path(file)).unwrap(),
        }
    }
    let (ok, text) = runner_passes(p, program, args);
    assert!(!ok, "the honest test fails again:\n{text}");
    assert_eq!(integrity_findings(p), Vec::<String>::new());
}

const CARGO_TOML: &str = "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"src/lib.rs\"\n";
const RS: &str = "pub fn add(a: u32, b: u32) -> u32 {\n    a + b + 1\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 1), 2);\n    }\n}\n";

#[test]
fn rust_forms_really_disable_the_test_and_are_refused() {
    let p = started(&[("Cargo.toml", CARGO_TOML), ("src/lib.rs", RS)]);
    let cargo = on_path("cargo").expect("cargo is always here");
    let sub = |from: &str, to: &str| RS.replacen(from, to, 1);
    let forms = [
        (
            "src/lib.rs",
            sub("    #[test]\n", "    #[test]\n    #[cfg(any())]\n"),
            "skip-marker at src/lib.rs:8: test compiled out",
        ),
        (
            "src/lib.rs",
            sub(
                "    #[test]\n",
                "    #[test]\n    #[cfg_attr(all(), ignore)]\n",
            ),
            "skip-marker at src/lib.rs:8: test ignored under a condition",
        ),
        (
            "src/lib.rs",
            sub("        assert_eq!", "        return;\n        assert_eq!"),
            "weakened-assertion at src/lib.rs:9: test `adds` returns",
        ),
        (
            "src/lib.rs",
            sub(
                "assert_eq!(super::add(1, 1), 2)",
                "assert!(true || super::add(1, 1) == 2)",
            ),
            "weakened-assertion at src/lib.rs:9",
        ),
        (
            "src/lib.rs",
            sub("    #[test]\n", "    #[test]\n    #[should_panic]\n"),
            "weakened-assertion at src/lib.rs:8: an existing test now passes by panicking",
        ),
        (
            "Cargo.toml",
            CARGO_TOML.replace("[lib]\n", "[lib]\ntest = false\n"),
            "loosened-check at Cargo.toml:7: the runner selects fewer tests",
        ),
    ];
    confirm(&p, (&cargo, &["test", "-q", "--offline"]), &forms);
}

const JS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst add = require('./add');\n\ntest('adds', () => {\n  assert.strictEqual(add(1, 1), 2);\n});\n";
const ADD: &str = "module.exports = (a, b) => a + b + 1;\n";

#[test]
fn node_forms_really_disable_the_test_and_are_refused() {
    let p = started(&[("lib/add.test.js", JS), ("lib/add.js", ADD)]);
    let node = on_path("node").expect("node is always here");
    let t = "lib/add.test.js";
    let forms = [
        (
            t,
            JS.replace("test('adds', ()", "test('adds', { skip: true }, ()"),
            "skip-marker at lib/add.test.js:5: test skipped by its options",
        ),
        (
            t,
            JS.replace("test('adds', ()", "test('adds', { todo: true }, ()"),
            "skip-marker at lib/add.test.js:5",
        ),
        (
            t,
            JS.replace("\ntest(", "\nreturn;\ntest("),
            "skip-marker at lib/add.test.js:5: the rest of the file never runs",
        ),
        (
            t,
            JS.replace("  assert.strictEqual", "  if (false) assert.strictEqual"),
            "skip-marker at lib/add.test.js:6: code that never runs",
        ),
        (
            t,
            JS.replace(
                "assert.strictEqual(add(1, 1), 2)",
                "assert.ok(true || add(1, 1) === 2)",
            ),
            "weakened-assertion at lib/add.test.js:6",
        ),
        // Disarmed from outside the test: the implementation replaces the assertion.
        (
            "lib/add.js",
            format!("require('node:assert').strictEqual = () => {{}};\n{ADD}"),
            "disarmed-assertion at lib/add.js:1",
        ),
    ];
    confirm(&p, (&node, &["--test"]), &forms);
}

const PY: &str = "from adder import add\n\n\ndef test_adds():\n    assert add(1, 1) == 2\n";
const PY_ADD: &str = "def add(a, b):\n    return a + b + 1\n";

#[test]
fn pytest_forms_really_disable_the_test_and_are_refused() {
    let Some(py) = python_with_pytest() else {
        return did_not_run("pytest");
    };
    let p = started(&[
        ("tests/test_add.py", PY),
        ("tests/adder.py", PY_ADD),
        ("pytest.ini", "[pytest]\naddopts = -p no:cacheprovider\n"),
    ]);
    let t = "tests/test_add.py";
    let top = |line: &str| format!("import pytest\n{line}\n{PY}");
    let forms = [
        (
            t,
            top("pytestmark = pytest.mark.skip"),
            "skip-marker at tests/test_add.py:2",
        ),
        (
            t,
            format!(
                "from pytest import mark\n{}",
                PY.replace("def test_adds", "@mark.skip\ndef test_adds")
            ),
            "skip-marker at tests/test_add.py:5: test skipped by a decorator",
        ),
        (
            t,
            top("pytest.importorskip('no_such_module')"),
            "skip-marker at tests/test_add.py:2",
        ),
        (
            t,
            format!("import unittest\nraise unittest.SkipTest('later')\n{PY}"),
            "skip-marker at tests/test_add.py:2",
        ),
        (
            t,
            PY.replace("assert add", "assert True or add"),
            "weakened-assertion at tests/test_add.py:5",
        ),
        (
            t,
            PY.replace("    assert", "    return\n    assert"),
            "weakened-assertion at tests/test_add.py:5",
        ),
        (
            "tests/conftest.py",
            "collect_ignore_glob = ['test_*.py']\n".to_string(),
            "skip-marker at tests/conftest.py:1: tests left out of collection",
        ),
        (
            "pytest.ini",
            "[pytest]\naddopts = -p no:cacheprovider --deselect tests/test_add.py::test_adds\n"
                .to_string(),
            "loosened-check at pytest.ini:2",
        ),
    ];
    // pytest exits 5 when nothing ran: the forms that leave no test count as passing.
    let wrapper = p.path("target/pytest-or-none.sh");
    std::fs::create_dir_all(p.path("target")).unwrap();
    crate::common::write_executable(
        &wrapper,
        &format!(
            "#!/bin/sh\n'{}' -m pytest -q \"$@\"\nc=$?\n[ $c -eq 5 ] && exit 0\nexit $c\n",
            py.display()
        ),
    );
    confirm(&p, (&wrapper, &[]), &forms);
}
