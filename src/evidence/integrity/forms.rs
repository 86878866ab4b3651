//! The forms that keep a test in the file but stop it running or asserting, the runner
//! settings that select fewer tests, and the assertion API disarmed from outside. The rule
//! behind them: a test that no longer runs, no longer asserts, or asserts a tautology; a
//! configuration that selects fewer tests. Each reader is a few line patterns per
//! language, judged on the change's new lines, with the file's new contents for what a
//! line is attached to.

use super::{body_end, clip, file_name, fresh, is_ci_file, skip_markers};
use super::{FileDiff, Kind, Lang, Out, TestFn};

pub(super) fn check(
    out: &mut Out,
    f: &FileDiff,
    lang: Option<Lang>,
    old: &[TestFn],
    new: &[TestFn],
) {
    let lines: Vec<(usize, &str)> = fresh(f).collect();
    if lines.is_empty() {
        return;
    }
    let text: Vec<&str> = f
        .new
        .as_deref()
        .map_or_else(Vec::new, |t| t.lines().collect());
    let test_file = !old.is_empty() || !new.is_empty() || is_test_path(&f.path);
    let mut push = |kind: Kind, no: usize, code: &str, what: &str| {
        out.push(kind, &f.path, no, code, format!("{what}: `{}`", clip(code)));
    };
    for &(no, line) in &lines {
        let code = line.trim();
        if let Some(lang) = lang {
            let known = skip_markers(lang).iter().any(|m| code.contains(m));
            if test_file && !known {
                if let Some(what) = disables(lang, &f.path, line, no, &text, new) {
                    push(Kind::SkipMarker, no, code, what);
                }
            }
            if let Some(what) = tautology(lang, code) {
                push(Kind::WeakenedAssertion, no, code, what);
            }
            if lang == Lang::Rust && code.starts_with("#[should_panic") {
                let test = new.iter().find(|t| t.line > no);
                if test.is_some_and(|t| old.iter().any(|o| o.name == t.name)) {
                    push(
                        Kind::WeakenedAssertion,
                        no,
                        code,
                        "an existing test now passes by panicking",
                    );
                }
            }
        }
        if let Some(what) = disarms(lang, code) {
            push(Kind::DisarmedAssertion, no, code, what);
        }
        if let Some(what) = narrows(&f.path, code) {
            push(Kind::LoosenedCheck, no, code, what);
        }
    }
    if lang.is_some() {
        early_returns(out, f, new, &lines, &text);
    }
}

/// A test file by its name: where runners look for tests.
pub fn is_test_path(path: &str) -> bool {
    let name = file_name(path);
    name == "conftest.py"
        || name.starts_with("test_")
        || [".test.", ".spec.", "_spec.", "_test."]
            .iter()
            .any(|m| name.contains(m))
        || path
            .split('/')
            .any(|seg| matches!(seg, "tests" | "test" | "__tests__" | "spec"))
}

/// A new line that stops tests from running (beyond the plain skip markers).
fn disables(
    lang: Lang,
    path: &str,
    line: &str,
    no: usize,
    text: &[&str],
    tests: &[TestFn],
) -> Option<&'static str> {
    let code = line.trim();
    let tight: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    match lang {
        Lang::Rust => {
            if let Some(pred) = tight.strip_prefix("#![cfg(") {
                return (pred != "test)]").then_some("the file's tests compiled out");
            }
            if tight.starts_with("#[cfg_attr(") && tight.contains(",ignore") {
                return Some("test ignored under a condition");
            }
            let pred = tight.strip_prefix("#[cfg(")?;
            (pred != "test)]" && gates_a_test(no, text, tests)).then_some("test compiled out")
        }
        Lang::Python => {
            let deco = code
                .strip_prefix('@')
                .map(|d| d.split('(').next().unwrap_or(d));
            let last = deco.map(|d| d.rsplit('.').next().unwrap_or(d));
            if last.is_some_and(|l| {
                matches!(
                    l,
                    "skip" | "skipif" | "skipIf" | "skipUnless" | "xfail" | "expectedFailure"
                )
            }) {
                return Some("test skipped by a decorator");
            }
            if code.starts_with("pytestmark") && (code.contains("skip") || code.contains("xfail")) {
                return Some("every test of the module skipped");
            }
            if code.contains("importorskip(") {
                return Some("tests skipped when an import fails");
            }
            if (code.starts_with("raise") && code.contains("SkipTest"))
                || code.contains("allow_module_level")
            {
                return Some("the module's tests skipped");
            }
            let collect = [
                "collect_ignore",
                "pytest_ignore_collect",
                "pytest_collection_modifyitems",
                "pytest_deselected",
            ];
            (file_name(path) == "conftest.py" && collect.iter().any(|c| code.contains(c)))
                .then_some("tests left out of collection")
        }
        Lang::Js => {
            if line.starts_with("return") && word_end(line, "return") {
                return Some("the rest of the file never runs");
            }
            if ["if(false)", "if(0)", "if(!1)", "while(false)"]
                .iter()
                .any(|p| tight.contains(p))
            {
                return Some("code that never runs");
            }
            js_option_skip(code).then_some("test skipped by its options")
        }
        Lang::Go => (path.ends_with("_test.go")
            && (code.starts_with("//go:build") || code.starts_with("// +build")))
        .then_some("test file left out of the build"),
    }
}

fn word_end(line: &str, word: &str) -> bool {
    line[word.len()..]
        .chars()
        .next()
        .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
}

/// node:test's `{ skip: true }`, `{ skip: 'why' }`, `{ todo }`, `{ todo: true }`.
fn js_option_skip(code: &str) -> bool {
    let Some(brace) = code.find('{') else {
        return false;
    };
    let rest = &code[brace..];
    ["skip", "todo"].iter().any(|w| {
        rest.match_indices(w).any(|(i, _)| {
            let before = rest[..i].chars().next_back();
            let after = rest[i + w.len()..].trim_start();
            let value = after.strip_prefix(':').map(str::trim_start);
            before.is_some_and(|c| c == '{' || c == ',' || c == ' ')
                && (after.starts_with('}')
                    || after.starts_with(',')
                    || value.is_some_and(|v| !v.starts_with("false") && !v.starts_with("0")))
        })
    })
}

/// The item a `#[cfg(…)]` on line `no` is attached to holds a test.
fn gates_a_test(no: usize, text: &[&str], tests: &[TestFn]) -> bool {
    let Some(item) = (no..text.len()).find(|&k| {
        let t = text[k].trim_start();
        !(t.is_empty() || t.starts_with("#[") || t.starts_with("//"))
    }) else {
        return false;
    };
    let end = if text[item].contains('{') || !text[item].trim_end().ends_with(';') {
        body_end(text, item)
    } else {
        item
    };
    let is_mod = text[item].trim_start().starts_with("mod ")
        || text[item].trim_start().starts_with("pub mod ");
    tests.iter().any(|t| t.line >= no && t.line <= end + 1)
        || (is_mod && text[item].contains("test") && text[item].trim_end().ends_with(';'))
}

// ---- tautologies ----------------------------------------------------------------------

/// The arguments of the call whose `(` `s` starts after, split at top-level commas, and
/// what follows the `)`.
fn call_args(s: &str) -> Option<(Vec<&str>, &str)> {
    let (mut depth, mut start, mut quote) = (0i32, 0usize, None::<char>);
    let mut args = Vec::new();
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q && prev != '\\' => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' | '`' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' if depth > 0 => depth -= 1,
                ')' => {
                    args.push(s[start..i].trim());
                    return Some((args, &s[i + 1..]));
                }
                ',' if depth == 0 => {
                    args.push(s[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            },
        }
        prev = c;
    }
    None
}

/// An expression true whatever the code does.
fn always_true(e: &str) -> bool {
    let e = e
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    if matches!(e, "true" | "True" | "1" | "!false" | "not False" | "!0") {
        return true;
    }
    for or in [" || ", " or "] {
        if let Some((a, b)) = e.split_once(or) {
            if always_true(a) || always_true(b) {
                return true;
            }
        }
    }
    for eq in [" === ", " == ", " is "] {
        if let Some((a, b)) = e.split_once(eq) {
            return a.trim() == b.trim() && !a.trim().is_empty();
        }
    }
    false
}

const EQUALITY_ASSERTS: &[&str] = &[
    "assert_eq!(",
    "assert.equal(",
    "assert.strictEqual(",
    "assert.deepEqual(",
    "assert.deepStrictEqual(",
    "assertEqual(",
    "assertEquals(",
    "assert.Equal(",
];
const TRUTH_ASSERTS: &[&str] = &[
    "assert!(",
    "assert.ok(",
    "assert(",
    "assertTrue(",
    "assert.True(",
];

/// A new assertion that cannot fail.
fn tautology(lang: Lang, code: &str) -> Option<&'static str> {
    let is_go = lang == Lang::Go;
    for head in EQUALITY_ASSERTS {
        for (i, _) in code.match_indices(head) {
            let Some((args, _)) = call_args(&code[i + head.len()..]) else {
                continue;
            };
            // testify's assert.Equal(t, want, got)
            let skip = usize::from(is_go);
            if let (Some(a), Some(b)) = (args.get(skip), args.get(skip + 1)) {
                if a == b && !a.is_empty() {
                    return Some("asserts a value equals itself");
                }
            }
        }
    }
    for head in TRUTH_ASSERTS {
        for (i, _) in code.match_indices(head) {
            let ident_before = code[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
            if ident_before {
                continue;
            }
            let Some((args, _)) = call_args(&code[i + head.len()..]) else {
                continue;
            };
            let arg = args.get(usize::from(is_go)).copied().unwrap_or("");
            if always_true(arg) {
                return Some("asserts a constant truth");
            }
        }
    }
    if lang == Lang::Python {
        if let Some(expr) = code.strip_prefix("assert ") {
            let expr = call_args(&format!("{expr})"))
                .and_then(|(a, _)| a.first().map(|s| s.to_string()))
                .unwrap_or_default();
            if always_true(&expr) {
                return Some("asserts a constant truth");
            }
        }
    }
    if lang == Lang::Js {
        for (i, _) in code.match_indices("expect(") {
            let Some((a, rest)) = call_args(&code[i + 7..]) else {
                continue;
            };
            let a = a.first().copied().unwrap_or("");
            for m in [".toBe(", ".toEqual(", ".toStrictEqual("] {
                if let Some(r) = rest.strip_prefix(m) {
                    if call_args(r).is_some_and(|(b, _)| b.first() == Some(&a)) {
                        return Some("asserts a value equals itself");
                    }
                }
            }
            if rest.starts_with(".toBeTruthy(") && always_true(a) {
                return Some("asserts a constant truth");
            }
        }
    }
    None
}

// ---- early returns --------------------------------------------------------------------

/// A new `return` at a test's top level with more of the test after it.
fn early_returns(
    out: &mut Out,
    f: &FileDiff,
    tests: &[TestFn],
    fresh: &[(usize, &str)],
    text: &[&str],
) {
    for t in tests {
        // Body lines, 0-based: after the header to before the closing line (brace
        // languages) or to the last body line (Python, whose `end` is that line).
        let last = if f.path.ends_with(".py") {
            t.end
        } else {
            t.end.saturating_sub(1)
        };
        let body: Vec<usize> = (t.line..last.min(text.len()))
            .filter(|&k| !text[k].trim().is_empty())
            .collect();
        let Some(&first) = body.first() else { continue };
        let indent = |k: usize| text[k].len() - text[k].trim_start().len();
        for (pos, &k) in body.iter().enumerate() {
            let code = text[k].trim();
            let is_return = code.starts_with("return") && word_end(code, "return");
            if !is_return || indent(k) != indent(first) {
                continue;
            }
            if !fresh.iter().any(|(n, _)| *n == k + 1) {
                continue;
            }
            let after = body[pos + 1..].iter().any(|&j| {
                let c = text[j].trim();
                !(c.starts_with("//") || c.starts_with('#') || c.starts_with('}'))
            });
            if after {
                out.push(
                    Kind::WeakenedAssertion,
                    &f.path,
                    k + 1,
                    &format!("{}\0{code}", t.name),
                    format!(
                        "test `{}` returns before the rest of its body: `{}`",
                        t.name,
                        clip(code)
                    ),
                );
            }
        }
    }
}

// ---- the assertion API disarmed -------------------------------------------------------

/// `prefix` then a name, then `=` (not `==`): an assignment to a member of `prefix`.
fn assigns_to(code: &str, prefix: &str) -> bool {
    code.match_indices(prefix).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return false;
        }
        let rest = &code[i + prefix.len()..];
        let name_end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        let after = rest[name_end..].trim_start();
        name_end > 0
            && after.starts_with('=')
            && !after.starts_with("==")
            && !after.starts_with("=>")
    })
}

/// A new line that replaces or patches the test framework's assertions.
fn disarms(lang: Option<Lang>, code: &str) -> Option<&'static str> {
    const WHAT: &str = "assertion API replaced, so assertions stop checking";
    let tight: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    let hit = match lang? {
        Lang::Js => {
            [
                "assert.",
                "expect.",
                "require('assert').",
                "require(\"assert\").",
                "require('node:assert').",
            ]
            .iter()
            .any(|p| assigns_to(code, p))
                || [
                    "globalThis.assert",
                    "globalThis.expect",
                    "global.assert",
                    "global.expect",
                ]
                .iter()
                .any(|p| {
                    assigns_to(&tight, &p[..p.find('.').unwrap_or(0) + 1]) && tight.starts_with(p)
                })
                || ["Object.defineProperty(assert", "Object.assign(assert"]
                    .iter()
                    .any(|p| tight.contains(p))
        }
        Lang::Python => {
            [
                "TestCase.assert",
                "TestCase.fail",
                "self.assert",
                "pytest.",
                "builtins.",
            ]
            .iter()
            .any(|p| assigns_to(code, p))
                || [
                    "setattr(unittest",
                    "setattr(TestCase",
                    "setattr(pytest",
                    "setattr(builtins",
                    "sys.modules['pytest']",
                    "sys.modules[\"pytest\"]",
                ]
                .iter()
                .any(|p| tight.contains(p))
                || (tight.starts_with("AssertionError=") && !tight.starts_with("AssertionError=="))
        }
        Lang::Rust => code.starts_with("macro_rules! assert"),
        Lang::Go => false,
    };
    hit.then_some(WHAT)
}

// ---- runner and CI configuration ------------------------------------------------------

fn is_runner_config(path: &str) -> bool {
    let name = file_name(path);
    matches!(
        name,
        "package.json"
            | "pyproject.toml"
            | "setup.cfg"
            | "pytest.ini"
            | "tox.ini"
            | "Cargo.toml"
            | "Makefile"
            | "justfile"
            | "noxfile.py"
            | "karma.conf.js"
            | ".nextest.toml"
            | "nextest.toml"
    ) || [
        "jest.config.",
        "vitest.config.",
        ".mocharc",
        "playwright.config.",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

const NARROWERS: &[&str] = &[
    "testPathIgnorePatterns",
    "modulePathIgnorePatterns",
    "--test-skip-pattern",
    "--test-name-pattern",
    "--testNamePattern",
    "passWithNoTests",
    "--deselect",
    "--ignore-glob",
    "--ignore=",
    "autotests=false",
    "test=false",
    "doctest=false",
    "--skip",
];

/// A new runner or CI setting that selects fewer tests, or a CI step switched off.
fn narrows(path: &str, code: &str) -> Option<&'static str> {
    let ci = is_ci_file(path);
    if !ci && !is_runner_config(path) {
        return None;
    }
    let tight: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if ci {
        let off = [
            "if:false",
            "if:${{false}}",
            "if:'false'",
            "if:\"false\"",
            "if:0",
            "when:never",
        ];
        if off.iter().any(|o| tight.trim_start_matches('-') == *o) {
            return Some("CI step switched off");
        }
    }
    if NARROWERS
        .iter()
        .any(|n| code.contains(n) || tight.contains(n))
    {
        return Some("the runner selects fewer tests");
    }
    let pytest_k = (code.contains("addopts") || code.contains("pytest"))
        && code
            .split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '=')
            .any(|w| w == "-k" || w == "-m");
    pytest_k.then_some("the runner selects fewer tests")
}

#[cfg(test)]
mod tests {
    use super::super::{line_changes, scan, FileDiff, Kind, Status};

    /// The findings (kind, line) of changing `path` from `old` to `new`.
    fn found(path: &str, old: &str, new: &str) -> Vec<(Kind, usize)> {
        let mut f = FileDiff::new(path, Status::Modified);
        (f.added, f.removed) = line_changes(old, new);
        f.old = Some(old.into());
        f.new = Some(new.into());
        scan(&[f]).iter().map(|f| (f.kind, f.line)).collect()
    }

    fn expect(path: &str, old: &str, new: &str, want: &[(Kind, usize)]) {
        assert_eq!(found(path, old, new), want, "{path}: {new}");
    }

    const RS: &str = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(1 + 1, 2);\n    }\n}\n";

    #[test]
    fn rust_tests_compiled_out_ignored_inverted_or_hollowed() {
        use Kind::*;
        let sub = |from: &str, to: &str| RS.replacen(from, to, 1);
        expect(
            "src/lib.rs",
            RS,
            &sub("#[cfg(test)]", "#[cfg(any())]"),
            &[(SkipMarker, 1)],
        );
        expect(
            "src/lib.rs",
            RS,
            &sub("    #[test]\n", "    #[test]\n    #[cfg(any())]\n"),
            &[(SkipMarker, 4)],
        );
        expect(
            "tests/a.rs",
            RS,
            &format!("#![cfg(any())]\n{RS}"),
            &[(SkipMarker, 1)],
        );
        expect(
            "src/lib.rs",
            RS,
            &sub(
                "    #[test]\n",
                "    #[test]\n    #[cfg_attr(all(), ignore)]\n",
            ),
            &[(SkipMarker, 4)],
        );
        expect(
            "src/lib.rs",
            RS,
            &sub("    #[test]\n", "    #[test]\n    #[should_panic]\n"),
            &[(WeakenedAssertion, 4)],
        );
        let same = sub("assert_eq!(1 + 1, 2)", "assert_eq!(x, x)");
        let found_same = found("src/lib.rs", RS, &same);
        assert_eq!(found_same, [(WeakenedAssertion, 5)]);
        expect(
            "src/lib.rs",
            RS,
            &sub("assert_eq!(1 + 1, 2)", "assert!(true || 1 + 1 == 3)"),
            &[(WeakenedAssertion, 5)],
        );
        expect(
            "src/lib.rs",
            RS,
            &sub("        assert_eq!", "        return;\n        assert_eq!"),
            &[(WeakenedAssertion, 5)],
        );
        // Controls: a cfg on a helper, a new should_panic test, a return at the end.
        let helper = format!("#[cfg(unix)]\nfn helper() {{}}\n{RS}");
        expect("src/lib.rs", RS, &helper, &[]);
        let new_test = sub(
            "}\n",
            "}\n    #[test]\n    #[should_panic]\n    fn panics() {\n        panic!(\"x\");\n    }\n",
        );
        expect("src/lib.rs", RS, &new_test, &[]);
        expect(
            "src/lib.rs",
            RS,
            &sub(
                "        assert_eq!(1 + 1, 2);\n",
                "        assert_eq!(1 + 1, 2);\n        return;\n",
            ),
            &[],
        );
    }

    const PY: &str = "import pytest\n\n\ndef test_adds():\n    assert 1 + 1 == 2\n";

    #[test]
    fn python_modules_skipped_and_assertions_hollowed() {
        use Kind::*;
        let top = |line: &str| {
            format!("import pytest\n{line}\n\n\ndef test_adds():\n    assert 1 + 1 == 2\n")
        };
        expect(
            "t/test_a.py",
            PY,
            &top("pytestmark = pytest.mark.skip"),
            &[(SkipMarker, 2)],
        );
        expect(
            "t/test_a.py",
            PY,
            &PY.replace("def test_adds", "@mark.skip\ndef test_adds")
                .replace("import pytest", "from pytest import mark"),
            &[(SkipMarker, 4)],
        );
        expect(
            "t/test_a.py",
            PY,
            &top("np = pytest.importorskip('nope')"),
            &[(SkipMarker, 2)],
        );
        expect(
            "t/test_a.py",
            PY,
            &top("raise unittest.SkipTest('later')"),
            &[(SkipMarker, 2)],
        );
        expect(
            "t/test_a.py",
            PY,
            &PY.replace("assert 1 + 1 == 2", "assert True or 1 + 1 == 3"),
            &[(WeakenedAssertion, 5)],
        );
        expect(
            "t/test_a.py",
            PY,
            &PY.replace("    assert", "    return\n    assert"),
            &[(WeakenedAssertion, 5)],
        );
        expect(
            "t/conftest.py",
            "",
            "collect_ignore_glob = ['test_*.py']\n",
            &[(SkipMarker, 1)],
        );
        // Control: a plain new assertion and a helper returning a value.
        expect(
            "t/test_a.py",
            PY,
            &format!("{PY}    assert 2 * 2 == 4\n\n\ndef helper():\n    return 1\n"),
            &[],
        );
    }

    const JS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('adds', () => {\n  assert.strictEqual(1 + 1, 2);\n});\n";

    #[test]
    fn js_tests_skipped_by_options_dead_code_or_a_top_level_return() {
        use Kind::*;
        let f = "lib/add.test.js";
        expect(
            f,
            JS,
            &JS.replace("test('adds', ()", "test('adds', { skip: true }, ()"),
            &[(SkipMarker, 4)],
        );
        expect(
            f,
            JS,
            &JS.replace("test('adds', ()", "test('adds', { todo }, ()"),
            &[(SkipMarker, 4)],
        );
        expect(
            f,
            JS,
            &JS.replace("  assert.strictEqual", "  if (false) assert.strictEqual"),
            &[(SkipMarker, 5)],
        );
        expect(
            f,
            JS,
            &JS.replace("\ntest(", "\nreturn;\ntest("),
            &[(SkipMarker, 4)],
        );
        expect(
            f,
            JS,
            &JS.replace("assert.strictEqual(1 + 1, 2)", "assert.ok(true)"),
            &[(WeakenedAssertion, 5)],
        );
        expect(
            f,
            JS,
            &JS.replace("assert.strictEqual(1 + 1, 2)", "expect(sum).toBe(sum)"),
            &[(WeakenedAssertion, 5)],
        );
        // Control: a skip option set to false, a new real assertion.
        expect(
            f,
            JS,
            &JS.replace("test('adds', ()", "test('adds', { skip: false }, ()"),
            &[],
        );
        expect(
            f,
            JS,
            &JS.replace(
                "  assert.strictEqual(1 + 1, 2);\n",
                "  assert.strictEqual(1 + 1, 2);\n  assert.ok(add(1, 1) === 2);\n",
            ),
            &[],
        );
    }

    #[test]
    fn go_build_constraint_on_a_test_file() {
        let old = "package a\n\nfunc TestX(t *testing.T) {\n\tt.Fatal(\"x\")\n}\n";
        expect(
            "a_test.go",
            old,
            &format!("//go:build ignore\n\n{old}"),
            &[(Kind::SkipMarker, 1)],
        );
        expect(
            "a.go",
            "package a\n",
            "//go:build linux\n\npackage a\n",
            &[],
        );
    }

    #[test]
    fn configurations_that_select_fewer_tests() {
        use Kind::*;
        type Case<'a> = (&'a str, &'a str, &'a str, &'a [(Kind, usize)]);
        let cases: &[Case] = &[
            (
                "pytest.ini",
                "[pytest]\n",
                "[pytest]\naddopts = --deselect t/test_a.py::test_adds\n",
                &[(LoosenedCheck, 2)],
            ),
            (
                "pyproject.toml",
                "[tool.pytest.ini_options]\n",
                "[tool.pytest.ini_options]\naddopts = \"-k 'not adds'\"\n",
                &[(LoosenedCheck, 2)],
            ),
            (
                "pyproject.toml",
                "[tool.coverage.report]\nfail_under = 90\n",
                "[tool.coverage.report]\n",
                &[(LoosenedCheck, 2)],
            ),
            (
                "Cargo.toml",
                "[package]\nname = \"a\"\n",
                "[package]\nname = \"a\"\nautotests = false\n",
                &[(LoosenedCheck, 3)],
            ),
            (
                "Cargo.toml",
                "[lib]\n",
                "[lib]\ntest = false\n",
                &[(LoosenedCheck, 2)],
            ),
            (
                "jest.config.js",
                "",
                "module.exports = { testPathIgnorePatterns: ['add'] };\n",
                &[(LoosenedCheck, 1)],
            ),
            (
                "package.json",
                "{\"scripts\": {\"test\": \"jest\"}}\n",
                "{\"scripts\": {\"test\": \"jest --testPathIgnorePatterns add\"}}\n",
                &[(LoosenedCheck, 1)],
            ),
            (
                ".github/workflows/ci.yml",
                "    steps:\n      - run: cargo test\n",
                "    steps:\n      - if: false\n        run: cargo test\n",
                &[(LoosenedCheck, 2)],
            ),
            // Controls: a new dependency, a new CI step.
            (
                "package.json",
                "{}\n",
                "{\"dependencies\": {\"left-pad\": \"1\"}}\n",
                &[],
            ),
            (
                ".github/workflows/ci.yml",
                "    steps:\n",
                "    steps:\n      - run: cargo test\n",
                &[],
            ),
        ];
        for (path, old, new, want) in cases {
            let got = found(path, old, new);
            let got: Vec<(Kind, usize)> = got
                .into_iter()
                .filter(|(k, _)| *k != WeakenedAssertion)
                .collect();
            assert_eq!(&got, want, "{path}: {new}");
        }
    }

    #[test]
    fn the_assertion_api_disarmed_from_outside_a_test() {
        use Kind::*;
        for (path, line) in [
            ("lib/add.js", "assert.equal = () => {};"),
            ("lib/add.js", "assert.ok = function () {};"),
            (
                "lib/add.js",
                "require('node:assert').strictEqual = () => {};",
            ),
            (
                "src/patch.py",
                "unittest.TestCase.assertEqual = lambda *a: None",
            ),
            ("src/patch.py", "pytest.raises = nullcontext"),
            ("src/patch.py", "builtins.AssertionError = Exception"),
            (
                "src/patch.py",
                "setattr(unittest.TestCase, 'assertTrue', lambda *a: None)",
            ),
            (
                "src/lib.rs",
                "macro_rules! assert_eq { ($($t:tt)*) => {}; }",
            ),
        ] {
            assert_eq!(
                found(path, "", &format!("{line}\n")),
                [(DisarmedAssertion, 1)],
                "{line}"
            );
        }
        // Controls: using the API, comparing with it, declaring it.
        for (path, line) in [
            ("lib/add.js", "const assert = require('node:assert');"),
            ("lib/add.js", "if (assert.equal === undefined) {}"),
            ("lib/add.test.js", "assert.equal(add(1, 1), 2);"),
            ("src/patch.py", "unittest.TestCase.maxDiff = None"),
        ] {
            assert_eq!(found(path, "", &format!("{line}\n")), [], "{line}");
        }
    }
}
