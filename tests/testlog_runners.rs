//! The test-result parsers against real runner output: checked-in captures (tool and
//! version in tests/fixtures/testlogs/README.md) always, and the tools themselves where
//! they are installed here (cargo and node always are; pytest, go, jest, vitest and
//! nextest when found).

use std::path::{Path, PathBuf};
use std::process::Command;

use specrun::api::evidence::testlog::{parse, Outcome, Report, Runner};

use Outcome::{Failed, Passed, Skipped};

fn capture(name: &str) -> Report {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/testlogs")
        .join(name);
    parse(&std::fs::read_to_string(&path).expect("capture exists"))
}

/// The (name, outcome) pairs, duplicates removed, in first-seen order.
fn results(r: &Report) -> Vec<(String, Outcome)> {
    let mut out: Vec<(String, Outcome)> = Vec::new();
    for t in &r.results {
        let pair = (t.name.clone(), t.outcome);
        if !out.contains(&pair) {
            out.push(pair);
        }
    }
    out
}

fn pairs(items: &[(&str, Outcome)]) -> Vec<(String, Outcome)> {
    items.iter().map(|(n, o)| (n.to_string(), *o)).collect()
}

const CARGO: &[(&str, Outcome)] = &[
    ("tests::adds", Passed),
    ("tests::fails", Failed),
    ("tests::skipped", Skipped),
    ("tests::skipped_with_reason", Skipped),
    ("tests::panics", Passed),
    ("integration_adds", Passed),
    ("src/lib.rs - add (line 3)", Passed),
];

#[test]
fn cargo_test_capture() {
    let r = capture("cargo-test.txt");
    assert_eq!(results(&r), pairs(CARGO));
    assert!(r.runners.contains(&Runner::Cargo));
}

#[test]
fn nextest_capture() {
    let r = capture("nextest.txt");
    assert_eq!(
        results(&r),
        pairs(&[
            ("tests::adds", Passed),
            ("tests::fails", Failed),
            ("integration_adds", Passed),
            ("tests::panics", Passed),
        ])
    );
    assert!(r.runners.contains(&Runner::Nextest));
}

const PYTEST_V: &[(&str, Outcome)] = &[
    ("test_sample.py::test_adds", Passed),
    ("test_sample.py::test_fails", Failed),
    ("test_sample.py::test_skipped", Skipped),
    ("test_sample.py::test_xfail", Skipped),
    ("test_sample.py::TestGroup::test_method", Passed),
    ("test_sample.py::test_param[1]", Passed),
    ("test_sample.py::test_param[2]", Passed),
];

#[test]
fn pytest_captures() {
    assert_eq!(results(&capture("pytest-v.txt")), pairs(PYTEST_V));
    // -rA names passes and failures in its summary; a skip there has no node id.
    assert_eq!(
        results(&capture("pytest-rA.txt")),
        pairs(&[
            ("test_sample.py::test_adds", Passed),
            ("test_sample.py::TestGroup::test_method", Passed),
            ("test_sample.py::test_param[1]", Passed),
            ("test_sample.py::test_param[2]", Passed),
            ("test_sample.py::test_xfail", Skipped),
            ("test_sample.py::test_fails", Failed),
        ])
    );
}

const GO: &[(&str, Outcome)] = &[
    ("TestAdds", Passed),
    ("TestFails", Failed),
    ("TestSkipped", Skipped),
    ("TestTable", Passed),
    ("TestTable/one", Passed),
    ("TestTable/two_words", Passed),
];

#[test]
fn go_test_capture() {
    assert_eq!(results(&capture("go-test-v.txt")), pairs(GO));
}

#[test]
fn jest_captures() {
    let r = capture("jest-verbose.txt");
    let got = results(&r);
    for (name, o) in [
        ("jt/sample.test.js › adds", Passed),
        ("jt/sample.test.js › fails", Failed),
        ("jt/sample.test.js › skipped", Skipped),
        ("jt/sample.test.js › later", Skipped),
        ("jt/sample.test.js › group › nested passes", Passed),
        ("jt/sample.test.js › group › inner › deep", Passed),
        ("jt/other.test.js › group › inner › deep", Passed),
    ] {
        assert!(got.contains(&(name.to_string(), o)), "{name}: {got:#?}");
    }
    assert_eq!(got.len(), 12, "{got:#?}");
    // Without --verbose jest names no passing test of several files: said so, not guessed.
    let d = capture("jest-default.txt");
    assert!(d.results.is_empty());
    assert_eq!(d.unnamed, [Runner::Jest]);
    assert_eq!(
        results(&capture("jest-single-default.txt")),
        pairs(&[
            ("jp/one.test.js › a", Passed),
            ("jp/one.test.js › g › b", Passed)
        ])
    );
}

#[test]
fn vitest_captures() {
    assert_eq!(
        results(&capture("vitest-verbose.txt")),
        pairs(&[
            ("sample.test.js > adds", Passed),
            ("sample.test.js > fails", Failed),
            ("sample.test.js > skipped", Skipped),
            ("sample.test.js > later", Skipped),
            ("sample.test.js > group > nested passes", Passed),
            ("sample.test.js > group > inner > deep", Passed),
        ])
    );
    // The default reporter lists a failing file's tests (without describe names)…
    assert_eq!(
        results(&capture("vitest-default.txt")),
        pairs(&[
            ("sample.test.js > adds", Passed),
            ("sample.test.js > fails", Failed),
            ("sample.test.js > skipped", Skipped),
            ("sample.test.js > later", Skipped),
            ("sample.test.js > nested passes", Passed),
            ("sample.test.js > deep", Passed),
        ])
    );
    // …and only counts a passing file's.
    let p = capture("vitest-pass-default.txt");
    assert!(p.results.is_empty());
    assert_eq!(p.unnamed, [Runner::Vitest]);
}

const NODE: &[(&str, Outcome)] = &[
    ("adds", Passed),
    ("fails", Failed),
    ("skipped", Skipped),
    ("later", Skipped),
    ("group > nested passes", Passed),
    ("group > inner > deep", Passed),
    ("group > inner", Passed),
    ("group", Passed),
];

#[test]
fn node_test_captures() {
    assert_eq!(results(&capture("node-test-tap.txt")), pairs(NODE));
    assert_eq!(results(&capture("node-test-spec.txt")), pairs(NODE));
}

#[test]
fn unknown_output_names_no_runner() {
    let r = parse("Running checks...\nAll good: 3 files checked\nok\n");
    assert!(r.runners.is_empty() && r.results.is_empty(), "{r:?}");
}

// ---- live runs ------------------------------------------------------------------------

/// A python on PATH that can import pytest.
pub(crate) fn python_with_pytest() -> Option<PathBuf> {
    let python = ["python3", "python"].iter().find_map(|p| on_path(p))?;
    Command::new(&python)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success())
        .then_some(python)
}

pub(crate) fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(program))
            .find(|f| f.is_file())
    })
}

/// Run `program args` in `dir` and parse its combined output (the exit code is expected
/// to be non-zero: every sample has a failing test).
fn run_live(dir: &Path, program: &Path, args: &[&str]) -> Report {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", program.display()));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    let r = parse(&text);
    assert!(!r.results.is_empty(), "no results parsed from:\n{text}");
    r
}

/// A missing runner: a failure under CI (scripts/install-test-runners installs it there),
/// a loud note elsewhere; its checked-in capture is tested either way.
pub(crate) fn did_not_run(tool: &str) {
    let ci =
        std::env::var("CI").is_ok_and(|v| !matches!(v.to_lowercase().as_str(), "" | "false" | "0"));
    if ci && tool != "cargo-nextest" {
        panic!("{tool} is missing under CI: scripts/install-test-runners installs it");
    }
    eprintln!("DID NOT RUN live: {tool} is not installed here; its checked-in capture is tested");
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const RUST_LIB: &str = "/// Adds.\n///\n/// ```\n/// assert_eq!(rs::add(1, 1), 2);\n/// ```\npub fn add(a: u32, b: u32) -> u32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(1, 1), 2); }\n    #[test]\n    fn fails() { assert_eq!(super::add(1, 1), 3); }\n    #[test]\n    #[ignore]\n    fn skipped() {}\n    #[test]\n    #[ignore = \"slow\"]\n    fn skipped_with_reason() {}\n    #[test]\n    #[should_panic]\n    fn panics() { panic!(\"boom\") }\n}\n";

fn rust_crate() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "Cargo.toml",
        "[package]\nname = \"rs\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    write(dir.path(), "src/lib.rs", RUST_LIB);
    write(
        dir.path(),
        "tests/it.rs",
        "#[test]\nfn integration_adds() { assert_eq!(rs::add(2, 2), 4); }\n",
    );
    dir
}

#[test]
fn live_cargo_test_and_nextest() {
    let dir = rust_crate();
    let cargo = PathBuf::from(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    let r = run_live(dir.path(), &cargo, &["test", "--no-fail-fast"]);
    let mut got = results(&r);
    got.sort();
    let mut want = pairs(CARGO);
    want.sort();
    assert_eq!(got, want);
    // The terse format names failures only: passing tests are reported as unnamed.
    let q = run_live(dir.path(), &cargo, &["test", "--no-fail-fast", "-q"]);
    assert_eq!(results(&q), pairs(&[("tests::fails", Failed)]));
    assert_eq!(q.unnamed, [Runner::Cargo]);
    match on_path("cargo-nextest") {
        Some(_) => {
            let r = run_live(dir.path(), &cargo, &["nextest", "run", "--no-fail-fast"]);
            assert!(results(&r).contains(&("tests::fails".into(), Failed)));
            assert!(results(&r).contains(&("integration_adds".into(), Passed)));
        }
        None => did_not_run("cargo-nextest"),
    }
}

const NODE_SAMPLE: &str = "const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds', () => { assert.strictEqual(1 + 1, 2); });\ntest('fails', () => { assert.strictEqual(1 + 1, 3); });\ntest('skipped', { skip: true }, () => {});\ntest('later', { todo: true }, () => {});\ntest.describe('group', () => {\n  test.it('nested passes', () => { assert.ok(true); });\n  test.describe('inner', () => {\n    test.it('deep', () => { assert.ok(true); });\n  });\n});\n";

#[test]
fn live_node_test_tap_and_spec() {
    let Some(node) = on_path("node") else {
        panic!("node is required (Claude Code runs on it)");
    };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "sample.test.js", NODE_SAMPLE);
    for reporter in ["--test-reporter=tap", "--test-reporter=spec"] {
        let r = run_live(dir.path(), &node, &["--test", reporter]);
        assert_eq!(results(&r), pairs(NODE), "{reporter}");
    }
}

const PY_SAMPLE: &str = "import pytest\n\ndef test_adds():\n    assert 1 + 1 == 2\n\ndef test_fails():\n    assert 1 + 1 == 3\n\n@pytest.mark.skip(reason=\"not now\")\ndef test_skipped():\n    assert True\n\n@pytest.mark.xfail\ndef test_xfail():\n    assert False\n\nclass TestGroup:\n    def test_method(self):\n        assert True\n\n@pytest.mark.parametrize(\"n\", [1, 2])\ndef test_param(n):\n    assert n > 0\n";

#[test]
fn live_pytest() {
    let Some(py) = python_with_pytest() else {
        return did_not_run("pytest");
    };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "test_sample.py", PY_SAMPLE);
    let r = run_live(
        dir.path(),
        &py,
        &["-m", "pytest", "-v", "-p", "no:cacheprovider"],
    );
    assert_eq!(results(&r), pairs(PYTEST_V));
}

const GO_SAMPLE: &str = "package sample\n\nimport \"testing\"\n\nfunc TestAdds(t *testing.T) {\n\tif 1+1 != 2 {\n\t\tt.Fatal(\"math\")\n\t}\n}\n\nfunc TestFails(t *testing.T) {\n\tt.Errorf(\"wrong\")\n}\n\nfunc TestSkipped(t *testing.T) {\n\tt.Skip(\"not now\")\n}\n\nfunc TestTable(t *testing.T) {\n\tt.Run(\"one\", func(t *testing.T) {})\n\tt.Run(\"two words\", func(t *testing.T) {})\n}\n";

#[test]
fn live_go_test() {
    let Some(go) = on_path("go") else {
        return did_not_run("go");
    };
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "go.mod",
        "module example.com/sample\n\ngo 1.19\n",
    );
    write(dir.path(), "sample_test.go", GO_SAMPLE);
    let cache = dir.path().join(".gocache");
    let out = Command::new(&go)
        .args(["test", "-v", "./..."])
        .current_dir(dir.path())
        .env("GOCACHE", &cache)
        .env("GOFLAGS", "-mod=mod")
        .output()
        .expect("run go");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(results(&parse(&text)), pairs(GO), "{text}");
}

const JS_SAMPLE: &str = "test('adds', () => { expect(1 + 1).toBe(2); });\ntest('fails', () => { expect(1 + 1).toBe(3); });\ntest.skip('skipped', () => {});\ntest.todo('later');\ndescribe('group', () => {\n  it('nested passes', () => { expect(true).toBe(true); });\n  describe('inner', () => {\n    it('deep', () => { expect(1).toBe(1); });\n  });\n});\n";

/// jest or vitest from PATH or `$SPECRUN_JS_RUNNERS` (a node_modules/.bin directory).
fn js_runner(name: &str) -> Option<PathBuf> {
    std::env::var_os("SPECRUN_JS_RUNNERS")
        .map(|d| PathBuf::from(d).join(name))
        .filter(|p| p.is_file())
        .or_else(|| on_path(name))
}

#[test]
fn live_jest_and_vitest() {
    match js_runner("jest") {
        Some(jest) => {
            let dir = tempfile::tempdir().unwrap();
            write(dir.path(), "package.json", "{\"name\": \"sample\"}\n");
            write(dir.path(), "a/sample.test.js", JS_SAMPLE);
            let r = run_live(dir.path(), &jest, &["--verbose", "--ci"]);
            let got = results(&r);
            assert!(
                got.contains(&("a/sample.test.js › group › inner › deep".into(), Passed)),
                "{got:?}"
            );
            assert!(
                got.contains(&("a/sample.test.js › fails".into(), Failed)),
                "{got:?}"
            );
        }
        None => did_not_run("jest"),
    }
    match js_runner("vitest") {
        Some(vitest) => {
            let dir = tempfile::tempdir().unwrap();
            let sample =
                format!("import {{ test, expect, describe, it }} from 'vitest';\n{JS_SAMPLE}");
            write(dir.path(), "package.json", "{\"name\": \"sample\"}\n");
            write(dir.path(), "sample.test.mjs", &sample);
            let r = run_live(dir.path(), &vitest, &["run", "--reporter=verbose"]);
            let got = results(&r);
            assert!(
                got.contains(&("sample.test.mjs > group > inner > deep".into(), Passed)),
                "{got:?}"
            );
            assert!(
                got.contains(&("sample.test.mjs > fails".into(), Failed)),
                "{got:?}"
            );
        }
        None => did_not_run("vitest"),
    }
}
