//! The test-integrity guard (pure): read a task's change and name what weakens the tests —
//! removed test functions, added skip markers, fewer assertions in a modified test,
//! loosened checks (lint allows, lowered coverage thresholds, `continue-on-error`,
//! `--no-verify`, deleted CI steps) and rewritten snapshot files.
//!
//! Test functions are found in Rust, Python, JS/TS and Go sources by line-level patterns;
//! other languages' files are judged only by the language-neutral rules (CI files, lint
//! configs, snapshots). Each finding has an id stable across line shifts, so a recorded
//! justification keeps applying.

use std::collections::HashMap;

use serde::Serialize;

use crate::support::sha256;

mod forms;
pub mod ignored;

pub use forms::is_test_path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    RemovedTest,
    SkipMarker,
    FewerAssertions,
    LoosenedCheck,
    SnapshotRewritten,
    /// A test kept but hollowed: a tautology asserted, code after an early `return`, a
    /// `#[should_panic]` added to an existing test.
    WeakenedAssertion,
    /// The assertion API itself replaced or patched, so every assertion passes.
    DisarmedAssertion,
    /// A test source too large (or unreadable) to scan: not judged, so it must be justified.
    Unscanned,
    /// A file git ignores that changes how tests run appeared, changed or went (`ignored`).
    IgnoredRunnerFile,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::RemovedTest => "removed-test",
            Kind::SkipMarker => "skip-marker",
            Kind::FewerAssertions => "fewer-assertions",
            Kind::LoosenedCheck => "loosened-check",
            Kind::SnapshotRewritten => "snapshot-rewritten",
            Kind::WeakenedAssertion => "weakened-assertion",
            Kind::DisarmedAssertion => "disarmed-assertion",
            Kind::Unscanned => "unscanned",
            Kind::IgnoredRunnerFile => "ignored-runner-file",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub id: String,
    pub kind: Kind,
    pub file: String,
    /// 1-based; in the new file, or in the old one for something removed.
    pub line: usize,
    pub detail: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} at {}:{}: {}",
            self.id,
            self.kind.as_str(),
            self.file,
            self.line,
            self.detail
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Added,
    Modified,
    Deleted,
}

/// One file of the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    pub path: String,
    pub status: Status,
    pub binary: bool,
    /// Too large to read: not scanned.
    pub too_large: bool,
    /// (new line number, text) of added lines.
    pub added: Vec<(usize, String)>,
    /// (old line number, text) of removed lines.
    pub removed: Vec<(usize, String)>,
    /// Whole contents before and after, when read (test sources only).
    pub old: Option<String>,
    pub new: Option<String>,
}

impl FileDiff {
    pub fn new(path: &str, status: Status) -> Self {
        FileDiff {
            path: path.to_string(),
            status,
            binary: false,
            too_large: false,
            added: Vec::new(),
            removed: Vec::new(),
            old: None,
            new: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Python,
    Js,
    Go,
}

pub fn lang_of(path: &str) -> Option<Lang> {
    let ext = path.rsplit_once('.').map(|(_, e)| e)?;
    match ext {
        "rs" => Some(Lang::Rust),
        "py" => Some(Lang::Python),
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts" => Some(Lang::Js),
        "go" => Some(Lang::Go),
        _ => None,
    }
}

/// (1-based line number, text) of some lines of a file.
pub type Lines = Vec<(usize, String)>;

/// The lines of `new` not in `old` and of `old` not in `new`, as (line number, text): an
/// order-blind comparison by count, so a line moved unchanged is neither added nor
/// removed (the rules judge what a line says; what depends on where it stands is read
/// from the whole contents by the per-language readers). Linear in the two sizes.
pub fn line_changes(old: &str, new: &str) -> (Lines, Lines) {
    let mut count: HashMap<&str, isize> = HashMap::new();
    for l in old.lines() {
        *count.entry(l).or_default() += 1;
    }
    let mut added = Vec::new();
    for (i, l) in new.lines().enumerate() {
        match count.get_mut(l) {
            Some(n) if *n > 0 => *n -= 1,
            _ => added.push((i + 1, l.to_string())),
        }
    }
    // What is left in `count` is removed: the last occurrences of each line.
    let mut removed = Vec::new();
    let mut lines: Vec<(usize, &str)> = old.lines().enumerate().collect();
    lines.reverse();
    for (i, l) in lines {
        if let Some(n) = count.get_mut(l).filter(|n| **n > 0) {
            *n -= 1;
            removed.push((i + 1, l.to_string()));
        }
    }
    removed.reverse();
    (added, removed)
}

// ---- test functions -------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestFn {
    pub name: String,
    pub line: usize,
    /// 1-based, the last line of its body.
    pub end: usize,
    pub asserts: usize,
}

/// Test functions of a source file with the assertions in each body.
pub fn test_functions(lang: Lang, path: &str, text: &str) -> Vec<TestFn> {
    let lines: Vec<&str> = text.lines().collect();
    match lang {
        Lang::Rust => brace_tests(&lines, rust_test_start, lang),
        Lang::Go if path.ends_with("_test.go") => brace_tests(&lines, go_test_start, lang),
        Lang::Go => Vec::new(),
        Lang::Js => brace_tests(&lines, js_test_start, lang),
        Lang::Python => python_tests(&lines),
    }
}

/// Finds a test starting at line `i`: its name and the line its body opens on.
type TestStart = fn(&[&str], usize) -> Option<(String, usize)>;

/// Test starts whose body is delimited by braces: `start(lines, i)` gives the name and the
/// line the body starts on.
fn brace_tests(lines: &[&str], start: TestStart, lang: Lang) -> Vec<TestFn> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((name, body_line)) = start(lines, i) else {
            i += 1;
            continue;
        };
        let end = body_end(lines, body_line);
        let asserts = lines[body_line..=end.min(lines.len() - 1)]
            .iter()
            .map(|l| count_asserts(lang, l))
            .sum();
        out.push(TestFn {
            name,
            line: body_line + 1,
            end: end + 1,
            asserts,
        });
        i = body_line + 1;
    }
    out
}

/// The last line of the brace block opening on `from` (quotes and comments ignored roughly).
pub(crate) fn body_end(lines: &[&str], from: usize) -> usize {
    let mut depth = 0i64;
    let mut opened = false;
    for (k, line) in lines.iter().enumerate().skip(from) {
        let code = strip_comment(line, "//");
        let mut in_str: Option<char> = None;
        let mut prev = ' ';
        for c in code.chars() {
            match in_str {
                Some(q) if c == q && prev != '\\' => in_str = None,
                Some(_) => {}
                None => match c {
                    '"' | '`' => in_str = Some(c),
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                },
            }
            prev = c;
        }
        if opened && depth <= 0 {
            return k;
        }
        if k > from + 5000 {
            return k;
        }
    }
    lines.len().saturating_sub(1)
}

pub(crate) fn strip_comment<'a>(line: &'a str, marker: &str) -> &'a str {
    match line.find(marker) {
        Some(i) if !line[..i].contains('"') => &line[..i],
        _ => line,
    }
}

pub(crate) fn ident_after<'a>(s: &'a str, keyword: &str) -> Option<&'a str> {
    let i = s.find(keyword)?;
    let rest = &s[i + keyword.len()..];
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `#[test]` (or `#[tokio::test]`, `#[rstest]`, …) then, within a few lines, `fn name`.
fn rust_test_start(lines: &[&str], i: usize) -> Option<(String, usize)> {
    let t = lines[i].trim_start();
    let is_attr = t.starts_with("#[") && {
        let attr = t[2..].split([']', '(']).next().unwrap_or("");
        attr == "test"
            || attr.ends_with("::test")
            || attr == "rstest"
            || attr == "test_case"
            || attr == "proptest"
    };
    if !is_attr {
        return None;
    }
    for (k, line) in lines.iter().enumerate().skip(i + 1).take(8) {
        let l = line.trim_start();
        if l.starts_with("#[") || l.starts_with("//") {
            continue;
        }
        let name = ident_after(l, "fn ")?;
        return Some((name.to_string(), k));
    }
    None
}

fn go_test_start(lines: &[&str], i: usize) -> Option<(String, usize)> {
    let rest = lines[i].strip_prefix("func Test")?;
    let name = ident_after(&format!("func Test{rest}"), "func ")?.to_string();
    Some((name, i))
}

/// `it('name', …)`, `test("name", …)`, with `.only`/`.skip`/`.each(…)` and such.
fn js_test_start(lines: &[&str], i: usize) -> Option<(String, usize)> {
    let t = lines[i].trim_start();
    let head_len = ["it", "test", "xit", "xtest", "fit"]
        .iter()
        .find(|h| t.starts_with(**h) && matches!(t.as_bytes().get(h.len()), Some(b'(' | b'.')))?
        .len();
    let rest = &t[head_len..];
    let open = rest.find('(')?;
    let after = rest[open + 1..].trim_start();
    let q = after
        .chars()
        .next()
        .filter(|c| matches!(c, '\'' | '"' | '`'))?;
    let end = after[1..].find(q)?;
    Some((after[1..1 + end].to_string(), i))
}

/// `def test_x` / `async def test_x`, qualified by its enclosing `class`; the body is the
/// lines indented deeper.
fn python_tests(lines: &[&str]) -> Vec<TestFn> {
    let mut out = Vec::new();
    let mut class: Option<(usize, String)> = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if t.is_empty() {
            continue;
        }
        if class.as_ref().is_some_and(|(ci, _)| indent <= *ci) && !t.starts_with('@') {
            class = None;
        }
        if let Some(name) = t
            .strip_prefix("class ")
            .and_then(|_| ident_after(t, "class "))
        {
            class = Some((indent, name.to_string()));
            continue;
        }
        let def = t.strip_prefix("async ").unwrap_or(t);
        let Some(name) = def
            .strip_prefix("def ")
            .and_then(|_| ident_after(def, "def "))
        else {
            continue;
        };
        if !name.starts_with("test") {
            continue;
        }
        let mut asserts = 0;
        let mut end = i + 1;
        for (k, body) in lines.iter().enumerate().skip(i + 1) {
            let bt = body.trim_start();
            if !bt.is_empty() && body.len() - bt.len() <= indent {
                break;
            }
            if !bt.is_empty() {
                end = k + 1;
            }
            asserts += count_asserts(Lang::Python, body);
        }
        let full = match &class {
            Some((_, c)) => format!("{c}::{name}"),
            None => name.to_string(),
        };
        out.push(TestFn {
            name: full,
            line: i + 1,
            end,
            asserts,
        });
    }
    out
}

/// Assertions on one line: `assert*` calls and macros everywhere; `expect(` in JS/TS;
/// `t.Error*`/`t.Fatal*` and testify in Go; `pytest.raises` in Python.
pub fn count_asserts(lang: Lang, line: &str) -> usize {
    let code = match lang {
        Lang::Python => strip_comment(line, "#"),
        _ => strip_comment(line, "//"),
    };
    let mut n = code.matches("assert").count();
    n += match lang {
        Lang::Js => code.matches("expect(").count(),
        Lang::Go => {
            code.matches("t.Error").count()
                + code.matches("t.Fatal").count()
                + code.matches("require.").count()
        }
        Lang::Python => code.matches("pytest.raises").count(),
        Lang::Rust => code.matches("panic!").count(),
    };
    n
}

// ---- line rules -----------------------------------------------------------------------

fn skip_markers(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Rust => &["#[ignore"],
        Lang::Python => &[
            "@pytest.mark.skip",
            "@pytest.mark.xfail",
            "@unittest.skip",
            "@unittest.expectedFailure",
            "pytest.skip(",
            "pytest.xfail(",
            ".skipTest(",
        ],
        Lang::Js => &[
            ".skip(",
            ".only(",
            ".todo(",
            "xit(",
            "xdescribe(",
            "xtest(",
            ".skipIf(",
            "fit(",
            "fdescribe(",
        ],
        Lang::Go => &["t.Skip(", "t.Skipf(", "t.SkipNow("],
    }
}

/// Markers that silence a linter or type checker, in any source file.
const LINT_ALLOWS: &[&str] = &[
    "#[allow(",
    "#![allow(",
    "allow(clippy::",
    "# noqa",
    "# type: ignore",
    "# pylint: disable",
    "# pyright: ignore",
    "# mypy: ignore",
    "eslint-disable",
    "@ts-ignore",
    "@ts-nocheck",
    "@ts-expect-error",
    "biome-ignore",
    "//nolint",
    "// nolint",
    "//lint:ignore",
];

const LINT_CONFIGS: &[&str] = &[
    "Cargo.toml",
    "clippy.toml",
    ".clippy.toml",
    "pyproject.toml",
    "setup.cfg",
    "ruff.toml",
    ".ruff.toml",
    ".flake8",
    "tox.ini",
    "mypy.ini",
    ".pylintrc",
    "tsconfig.json",
    ".golangci.yml",
    ".golangci.yaml",
    "package.json",
];

pub(crate) fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn is_lint_config(path: &str) -> bool {
    let name = file_name(path);
    LINT_CONFIGS.contains(&name)
        || name.starts_with(".eslintrc")
        || name.starts_with("eslint.config.")
}

/// Words that, added to a lint config, loosen it.
const CONFIG_LOOSENERS: &[&str] = &[
    "\"allow\"",
    "'allow'",
    "\"off\"",
    "'off'",
    "ignore",
    "disable",
    "\"strict\": false",
    "noImplicitAny\": false",
    "skipLibCheck\": true",
];

pub fn is_ci_file(path: &str) -> bool {
    path.starts_with(".github/workflows/")
        || matches!(
            path,
            ".gitlab-ci.yml"
                | ".circleci/config.yml"
                | "azure-pipelines.yml"
                | ".travis.yml"
                | "Jenkinsfile"
                | "bitbucket-pipelines.yml"
                | ".pre-commit-config.yaml"
        )
}

const CI_LOOSENERS: &[&str] = &[
    "continue-on-error: true",
    "allow_failure: true",
    "|| true",
    "--no-verify",
];

pub fn is_snapshot(path: &str) -> bool {
    path.ends_with(".snap")
        || path.ends_with(".snap.new")
        || path.ends_with(".ambr")
        || path.ends_with(".golden")
        || path.contains("__snapshots__/")
}

const THRESHOLD_KEYS: &[&str] = &[
    "fail_under",
    "fail-under",
    "cov-fail-under",
    "coverageThreshold",
    "branches",
    "functions",
    "statements",
    "lines",
    "minimum_coverage",
    "threshold",
];

/// (key, number) of a coverage-threshold line.
fn threshold(line: &str) -> Option<(&'static str, f64)> {
    let key = THRESHOLD_KEYS.iter().find(|k| line.contains(**k))?;
    let after = &line[line.find(key)? + key.len()..];
    let start = after.find(|c: char| c.is_ascii_digit())?;
    let num: String = after[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    Some((key, num.parse().ok()?))
}

// ---- the scan -------------------------------------------------------------------------

fn finding_id(kind: Kind, file: &str, key: &str) -> String {
    let digest = sha256::hex(format!("{}\0{file}\0{}", kind.as_str(), key.trim()).as_bytes());
    format!("F{}", &digest[..8])
}

pub(crate) struct Out {
    findings: Vec<Finding>,
}

impl Out {
    pub(crate) fn push(&mut self, kind: Kind, file: &str, line: usize, key: &str, detail: String) {
        let mut id = finding_id(kind, file, key);
        let mut k = 2;
        while self.findings.iter().any(|f| f.id == id) {
            id = finding_id(kind, file, &format!("{key}#{k}"));
            k += 1;
        }
        self.findings.push(Finding {
            id,
            kind,
            file: file.to_string(),
            line,
            detail,
        });
    }
}

/// Every finding of a change.
pub fn scan(files: &[FileDiff]) -> Vec<Finding> {
    let mut out = Out {
        findings: Vec::new(),
    };
    // Test names that exist after the change anywhere, so a test moved between files is
    // not "removed".
    let mut all_new: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut parsed: Vec<(Vec<TestFn>, Vec<TestFn>)> = Vec::with_capacity(files.len());
    for f in files {
        let (old, new) = match lang_of(&f.path) {
            Some(lang) if !f.binary && !f.too_large => (
                f.old
                    .as_deref()
                    .map(|t| test_functions(lang, &f.path, t))
                    .unwrap_or_default(),
                f.new
                    .as_deref()
                    .map(|t| test_functions(lang, &f.path, t))
                    .unwrap_or_default(),
            ),
            _ => (Vec::new(), Vec::new()),
        };
        all_new.extend(new.iter().map(|t| t.name.clone()));
        parsed.push((old, new));
    }
    for (f, (old, new)) in files.iter().zip(&parsed) {
        scan_file(&mut out, f, old, new, &all_new);
    }
    out.findings
}

fn scan_file(
    out: &mut Out,
    f: &FileDiff,
    old: &[TestFn],
    new: &[TestFn],
    all_new: &std::collections::HashSet<String>,
) {
    let path = f.path.as_str();
    if is_snapshot(path) && f.status != Status::Added {
        let line = f
            .added
            .first()
            .or(f.removed.first())
            .map_or(1, |(n, _)| (*n).max(1));
        let what = if f.status == Status::Deleted {
            "deleted"
        } else {
            "rewritten"
        };
        out.push(
            Kind::SnapshotRewritten,
            path,
            line,
            "",
            format!("snapshot file {what}: the expected output changed instead of the code"),
        );
        return;
    }
    let lang = lang_of(path);
    if f.too_large {
        if lang.is_some() {
            out.push(
                Kind::Unscanned,
                path,
                1,
                "",
                "too large to scan for test changes: not judged".into(),
            );
        }
        return;
    }
    if f.binary {
        return;
    }
    forms::check(out, f, lang, old, new);
    if let Some(lang) = lang {
        tests_changed(out, path, old, new, all_new);
        added_markers(
            out,
            f,
            skip_markers(lang),
            Kind::SkipMarker,
            "skip marker added",
        );
    }
    added_markers(
        out,
        f,
        LINT_ALLOWS,
        Kind::LoosenedCheck,
        "lint/type check silenced",
    );
    if is_lint_config(path) {
        added_markers(
            out,
            f,
            CONFIG_LOOSENERS,
            Kind::LoosenedCheck,
            "lint configuration loosened",
        );
    }
    if is_ci_file(path) {
        added_markers(
            out,
            f,
            CI_LOOSENERS,
            Kind::LoosenedCheck,
            "CI check loosened",
        );
        ci_steps_removed(out, f);
    } else {
        added_markers(
            out,
            f,
            &["--no-verify"],
            Kind::LoosenedCheck,
            "git hooks bypassed",
        );
    }
    thresholds_lowered(out, f);
}

fn tests_changed(
    out: &mut Out,
    path: &str,
    old: &[TestFn],
    new: &[TestFn],
    all_new: &std::collections::HashSet<String>,
) {
    for t in old {
        match new.iter().find(|n| n.name == t.name) {
            None if !all_new.contains(&t.name) => out.push(
                Kind::RemovedTest,
                path,
                t.line,
                &t.name,
                format!("test `{}` was removed", t.name),
            ),
            Some(n) if n.asserts < t.asserts => out.push(
                Kind::FewerAssertions,
                path,
                n.line,
                &t.name,
                format!(
                    "test `{}` has {} assertion(s), {} before",
                    t.name, n.asserts, t.asserts
                ),
            ),
            _ => {}
        }
    }
}

/// The added lines that are new: a line moved unchanged, or only re-indented, is not.
pub(crate) fn fresh(f: &FileDiff) -> impl Iterator<Item = (usize, &str)> {
    let removed: std::collections::HashSet<&str> =
        f.removed.iter().map(|(_, r)| r.trim()).collect();
    f.added
        .iter()
        .filter(move |(_, t)| !removed.contains(t.trim()))
        .map(|(n, t)| (*n, t.as_str()))
}

/// Added lines holding one of `markers` (a line moved unchanged is not new).
fn added_markers(out: &mut Out, f: &FileDiff, markers: &[&str], kind: Kind, what: &str) {
    for (no, text) in fresh(f) {
        let Some(m) = markers.iter().find(|m| text.contains(**m)) else {
            continue;
        };
        let trimmed = text.trim();
        out.push(
            kind,
            &f.path,
            no,
            trimmed,
            format!("{what}: `{}` ({m})", clip(trimmed)),
        );
    }
}

pub(crate) fn clip(s: &str) -> String {
    crate::support::chars::clip(s, 80, "...")
}

fn ci_steps_removed(out: &mut Out, f: &FileDiff) {
    if f.status == Status::Deleted {
        out.push(
            Kind::LoosenedCheck,
            &f.path,
            1,
            "",
            "CI file deleted".into(),
        );
        return;
    }
    // A step's key, whether it opens the list item (`- run: x`) or not (`run: x`).
    let key = |l: &str| l.trim().trim_start_matches("- ").trim_start().to_string();
    for (no, text) in &f.removed {
        let t = key(text);
        let is_step = ["run:", "uses:", "name:", "script:"]
            .iter()
            .any(|k| t.starts_with(k));
        if is_step && !f.added.iter().any(|(_, a)| key(a) == t) {
            out.push(
                Kind::LoosenedCheck,
                &f.path,
                *no,
                text,
                format!("CI step removed: `{}`", clip(text.trim())),
            );
        }
    }
}

fn thresholds_lowered(out: &mut Out, f: &FileDiff) {
    let lowered = |key: &str, was: f64| {
        f.added
            .iter()
            .filter_map(|(n, a)| {
                threshold(a)
                    .filter(|(k, _)| *k == key)
                    .map(|(_, v)| (*n, v))
            })
            .find(|(_, v)| *v < was)
    };
    for (no, text) in &f.removed {
        let Some((key, was)) = threshold(text) else {
            continue;
        };
        // A threshold key alone (`lines`, `branches`) counts only in coverage contexts.
        let coverage_line = ["cov", "fail", "threshold", "Threshold", "minimum"]
            .iter()
            .any(|w| text.contains(w));
        let coverage_file = f.path.contains("jest") || f.path.contains("vitest");
        if !coverage_line && !coverage_file {
            continue;
        }
        if let Some((line, now)) = lowered(key, was) {
            out.push(
                Kind::LoosenedCheck,
                &f.path,
                line,
                text,
                format!("coverage threshold `{key}` lowered from {was} to {now}"),
            );
        } else if !f
            .added
            .iter()
            .any(|(_, a)| threshold(a).is_some_and(|(k, _)| k == key))
        {
            out.push(
                Kind::LoosenedCheck,
                &f.path,
                *no,
                text,
                format!("coverage threshold `{key}` ({was}) removed"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modified(
        path: &str,
        old: &str,
        new: &str,
        added: &[(usize, &str)],
        removed: &[(usize, &str)],
    ) -> FileDiff {
        let mut f = FileDiff::new(path, Status::Modified);
        f.old = Some(old.into());
        f.new = Some(new.into());
        f.added = added.iter().map(|(n, t)| (*n, t.to_string())).collect();
        f.removed = removed.iter().map(|(n, t)| (*n, t.to_string())).collect();
        f
    }

    fn kinds(f: &[Finding]) -> Vec<Kind> {
        f.iter().map(|f| f.kind).collect()
    }

    #[test]
    fn line_changes_by_count_not_order() {
        let old = "a\nb\nx\nb\nc\n";
        let new = "b\na\nb\nb\nc\nd\n";
        let (added, removed) = line_changes(old, new);
        assert_eq!(added, [(4, "b".to_string()), (6, "d".to_string())]);
        assert_eq!(removed, [(3, "x".to_string())]);
        let (added, removed) = line_changes("", "p\n");
        assert_eq!((added.len(), removed.len()), (1, 0));
    }

    #[test]
    fn rust_removed_test_fewer_asserts_and_ignore() {
        let old = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn keeps() {\n        assert_eq!(1, 1);\n        assert!(true);\n    }\n    #[test]\n    fn goes() {\n        assert!(false);\n    }\n}\n";
        let new = "#[cfg(test)]\nmod tests {\n    #[test]\n    #[ignore]\n    fn keeps() {\n        assert_eq!(1, 1);\n    }\n}\n";
        let f = modified(
            "src/lib.rs",
            old,
            new,
            &[(4, "    #[ignore]")],
            &[(6, "        assert!(true);")],
        );
        let found = scan(&[f]);
        assert_eq!(
            kinds(&found),
            [Kind::FewerAssertions, Kind::RemovedTest, Kind::SkipMarker],
            "{found:?}"
        );
        assert_eq!(found[1].line, 9);
        assert!(found[1].detail.contains("goes"));
    }

    #[test]
    fn python_js_go_tests() {
        let py_old = "import pytest\n\nclass TestA:\n    def test_one(self):\n        assert 1\n        assert 2\n\ndef test_two():\n    assert True\n";
        let py_new = "import pytest\n\nclass TestA:\n    def test_one(self):\n        assert 1\n\n@pytest.mark.skip(reason='x')\ndef test_two():\n    assert True\n";
        let py = modified(
            "t/test_a.py",
            py_old,
            py_new,
            &[(7, "@pytest.mark.skip(reason='x')")],
            &[(6, "        assert 2")],
        );
        let js_old = "describe('g', () => {\n  it('works', () => {\n    expect(1).toBe(1);\n  });\n  test(\"gone\", () => { expect(2).toBe(2); });\n});\n";
        let js_new = "describe('g', () => {\n  it.skip('works', () => {\n    expect(1).toBe(1);\n  });\n});\n";
        let js = modified(
            "a.test.ts",
            js_old,
            js_new,
            &[(2, "  it.skip('works', () => {")],
            &[
                (2, "  it('works', () => {"),
                (5, "  test(\"gone\", () => { expect(2).toBe(2); });"),
            ],
        );
        let go_old = "package a\n\nfunc TestX(t *testing.T) {\n\tif f() != 1 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n";
        let go_new = "package a\n\nfunc TestX(t *testing.T) {\n\tt.Skip(\"later\")\n}\n";
        let go = modified(
            "a_test.go",
            go_old,
            go_new,
            &[(4, "\tt.Skip(\"later\")")],
            &[(4, "\tif f() != 1 {")],
        );
        let found = scan(&[py, js, go]);
        let got: Vec<(Kind, &str)> = found.iter().map(|f| (f.kind, f.file.as_str())).collect();
        assert_eq!(
            got,
            [
                (Kind::FewerAssertions, "t/test_a.py"),
                (Kind::SkipMarker, "t/test_a.py"),
                (Kind::RemovedTest, "a.test.ts"),
                (Kind::SkipMarker, "a.test.ts"),
                (Kind::FewerAssertions, "a_test.go"),
                (Kind::SkipMarker, "a_test.go"),
            ],
            "{found:#?}"
        );
    }

    #[test]
    fn a_test_moved_to_another_file_is_not_removed() {
        let a = modified(
            "src/a.rs",
            "#[test]\nfn moved() { assert!(true); }\n",
            "",
            &[],
            &[(1, "#[test]")],
        );
        let mut b = FileDiff::new("src/b.rs", Status::Added);
        b.new = Some("#[test]\nfn moved() { assert!(true); }\n".into());
        assert!(scan(&[a, b]).is_empty());
    }

    #[test]
    fn loosened_checks_and_snapshots() {
        let ci = modified(
            ".github/workflows/ci.yml",
            "",
            "",
            &[(5, "        continue-on-error: true")],
            &[(9, "      - run: cargo clippy -- -D warnings")],
        );
        let lint = modified("src/main.rs", "", "", &[(1, "#![allow(clippy::all)]")], &[]);
        let cov = modified(
            "pyproject.toml",
            "",
            "",
            &[(3, "fail_under = 60")],
            &[(3, "fail_under = 90")],
        );
        let snap = modified("src/snapshots/x.snap", "", "", &[(2, "new")], &[(2, "old")]);
        let hook = modified(
            "Makefile",
            "",
            "",
            &[(4, "\tgit commit --no-verify -m x")],
            &[],
        );
        let found = scan(&[ci, lint, cov, snap, hook]);
        assert_eq!(found.len(), 6, "{found:#?}");
        assert!(found
            .iter()
            .all(|f| f.kind == Kind::LoosenedCheck || f.kind == Kind::SnapshotRewritten));
        assert!(found
            .iter()
            .any(|f| f.detail.contains("lowered from 90 to 60")));
    }

    #[test]
    fn ids_are_stable_when_lines_move() {
        let f1 = modified("a.py", "", "", &[(3, "x = 1  # noqa")], &[]);
        let f2 = modified("a.py", "", "", &[(30, "x = 1  # noqa")], &[]);
        assert_eq!(scan(&[f1])[0].id, scan(&[f2])[0].id);
    }

    #[test]
    fn other_languages_and_binary_files_are_not_judged() {
        let mut bin = FileDiff::new("lib.so", Status::Modified);
        bin.binary = true;
        let rb = modified(
            "spec/a_spec.rb",
            "it 'x' do\nend\n",
            "",
            &[],
            &[(1, "it 'x' do")],
        );
        let mut big = FileDiff::new("tests/huge.rs", Status::Modified);
        big.too_large = true;
        let found = scan(&[bin, rb, big]);
        assert_eq!(kinds(&found), [Kind::Unscanned]);
    }
}
