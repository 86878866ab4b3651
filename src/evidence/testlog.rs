//! Test results read from a verify command's output: which tests passed, failed or were
//! skipped, as the runner printed them. Pure and streaming: bytes in (any chunking), a
//! report out, memory bounded by the number of results.
//!
//! Supported: `cargo test` (libtest), `cargo nextest`, `pytest -v` / `-rA`, `go test -v`,
//! jest (`--verbose`, or one test file), vitest (the default tree and `--reporter=verbose`),
//! `node --test` (TAP, and the spec reporter). Lines are classified one at a time; ANSI
//! colour codes are stripped first.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// What `ac status` names when an output matched no runner.
pub const SUPPORTED: &str = "cargo test, cargo nextest, pytest -v / -rA, go test -v, jest --verbose, vitest (default or --reporter=verbose), node --test (TAP or spec)";

/// Longest line kept; the rest of a longer line is dropped (it is not a result line).
const MAX_LINE: usize = 16 * 1024;
/// Most results kept; a run reporting more is marked truncated.
pub const MAX_RESULTS: usize = 500_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runner {
    Cargo,
    Nextest,
    Pytest,
    GoTest,
    Jest,
    Vitest,
    NodeTest,
}

impl Runner {
    pub fn as_str(self) -> &'static str {
        match self {
            Runner::Cargo => "cargo-test",
            Runner::Nextest => "nextest",
            Runner::Pytest => "pytest",
            Runner::GoTest => "go-test",
            Runner::Jest => "jest",
            Runner::Vitest => "vitest",
            Runner::NodeTest => "node-test",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Passed,
    Skipped,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestResult {
    pub name: String,
    pub outcome: Outcome,
    /// The runner whose line named it (the line's format says which), so the same name
    /// from two runners is two tests. `None` in results stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<Runner>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub runners: BTreeSet<Runner>,
    pub results: Vec<TestResult>,
    /// More than `MAX_RESULTS` results were printed; the rest were not kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// A runner summary said tests passed but no passing test was named (jest without
    /// `--verbose`, vitest's default reporter on a passing file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unnamed: Vec<Runner>,
}

impl Report {
    pub fn count(&self, outcome: Outcome) -> usize {
        self.results.iter().filter(|r| r.outcome == outcome).count()
    }
}

/// Which file-level block the tree reporters (jest, vitest default, node spec) are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    None,
    Jest,
    /// After a jest file's first `●` failure header: no more describe lines.
    JestDetails,
    Vitest,
}

/// The streaming parser: `feed` bytes as they arrive, `finish` for the report.
#[derive(Debug)]
pub struct Parser {
    pending: Vec<u8>,
    overlong: bool,
    report: Report,
    block: Block,
    /// (indent, name) of enclosing describe blocks / TAP subtests / node suites.
    stack: Vec<(usize, String)>,
    /// The vitest file whose tests are listed below it.
    vitest_file: String,
    named: BTreeSet<Runner>,
    summarised: BTreeSet<Runner>,
    /// The runners whose lines count (`None`: every runner's). A run of `printf` prints
    /// runner-shaped lines, but it is no runner's run (`evidence::program`).
    allowed: Option<BTreeSet<Runner>>,
}

impl Default for Parser {
    fn default() -> Self {
        Parser {
            pending: Vec::new(),
            overlong: false,
            report: Report::default(),
            block: Block::None,
            stack: Vec::new(),
            vitest_file: String::new(),
            named: BTreeSet::new(),
            summarised: BTreeSet::new(),
            allowed: None,
        }
    }
}

/// Parse a whole output at once.
pub fn parse(text: &str) -> Report {
    let mut p = Parser::default();
    p.feed(text.as_bytes());
    p.finish()
}

impl Parser {
    /// A parser that reads only the lines of `runners` (the programs the command runs).
    pub fn for_runners(runners: BTreeSet<Runner>) -> Self {
        Parser {
            allowed: Some(runners),
            ..Parser::default()
        }
    }

    fn allows(&self, runner: Runner) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.contains(&runner))
    }

    /// A runner's line was seen (counted only when the runner is allowed).
    fn saw(&mut self, runner: Runner) {
        if self.allows(runner) {
            self.report.runners.insert(runner);
        }
    }

    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(pos) = bytes.iter().position(|&b| b == b'\n') {
            self.push_partial(&bytes[..pos]);
            let line = std::mem::take(&mut self.pending);
            self.overlong = false;
            self.line_bytes(&line);
            self.pending = line;
            self.pending.clear();
            bytes = &bytes[pos + 1..];
        }
        self.push_partial(bytes);
    }

    fn push_partial(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.pending.len());
        if bytes.len() > room {
            self.overlong = true;
        }
        self.pending
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    pub fn finish(mut self) -> Report {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line_bytes(&line);
        }
        let allowed = self.allowed.take();
        self.report.unnamed = self
            .summarised
            .difference(&self.named)
            .copied()
            .filter(|r| allowed.as_ref().is_none_or(|a| a.contains(r)))
            .collect();
        self.report
    }

    fn line_bytes(&mut self, bytes: &[u8]) {
        if self.overlong {
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        let clean = strip_ansi(text.trim_end_matches('\r'));
        self.line(&clean);
    }

    fn push(&mut self, runner: Runner, name: &str, outcome: Outcome) {
        let name = name.trim();
        if name.is_empty() || !self.allows(runner) {
            return;
        }
        self.report.runners.insert(runner);
        if outcome == Outcome::Passed {
            self.named.insert(runner);
        }
        if self.report.results.len() >= MAX_RESULTS {
            self.report.truncated = true;
            return;
        }
        self.report.results.push(TestResult {
            name: name.to_string(),
            outcome,
            runner: Some(runner),
        });
    }

    fn line(&mut self, line: &str) {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if self.libtest(trimmed)
            || self.nextest(trimmed)
            || self.pytest(trimmed)
            || self.go(trimmed)
            || self.tap(line)
            || self.summary(trimmed)
        {
            return;
        }
        self.tree(indent, trimmed);
    }

    /// `test path::name ... ok|FAILED|ignored[, reason]` (also `- should panic`); in the
    /// terse format (`cargo test -q`) only failures are named: `path::name --- FAILED`.
    fn libtest(&mut self, t: &str) -> bool {
        if let Some(name) = t.strip_suffix(" --- FAILED") {
            if !name.contains(' ') {
                self.push(Runner::Cargo, name, Outcome::Failed);
                return true;
            }
        }
        if t.starts_with("test result: ") {
            self.saw(Runner::Cargo);
            if !t.contains(" 0 passed") {
                self.summarised.insert(Runner::Cargo);
            }
            return true;
        }
        let Some(rest) = t.strip_prefix("test ") else {
            return false;
        };
        let Some((name, verdict)) = rest.rsplit_once(" ... ") else {
            return false;
        };
        let outcome = match verdict.trim() {
            "ok" => Outcome::Passed,
            "FAILED" => Outcome::Failed,
            v if v == "ignored" || v.starts_with("ignored, ") => Outcome::Skipped,
            _ => return false,
        };
        let name = name.strip_suffix(" - should panic").unwrap_or(name);
        self.push(Runner::Cargo, name, outcome);
        true
    }

    /// `PASS [   0.039s] (1/4) binary-id test::name`.
    fn nextest(&mut self, t: &str) -> bool {
        let Some((status, rest)) = t.split_once(" [") else {
            return false;
        };
        let outcome = match status {
            "PASS" | "LEAK" | "SLOW" => Outcome::Passed,
            "FAIL" | "LEAK-FAIL" | "TIMEOUT" | "ABORT" | "SIGSEGV" | "SIGABRT" | "SIGKILL"
            | "SIGBUS" | "SIGILL" | "SIGFPE" => Outcome::Failed,
            "SKIP" => Outcome::Skipped,
            _ => return false,
        };
        let Some((_, after)) = rest.split_once(']') else {
            return false;
        };
        let mut words = after.split_whitespace().peekable();
        if words
            .peek()
            .is_some_and(|w| w.starts_with('(') && w.ends_with(')'))
        {
            words.next();
        }
        let Some(_binary) = words.next() else {
            return false;
        };
        let name: Vec<&str> = words.collect();
        if name.is_empty() || status == "SLOW" {
            return status == "SLOW";
        }
        self.push(Runner::Nextest, &name.join(" "), outcome);
        true
    }

    /// `path::test PASSED [ 14%]` (-v, also `[gw0] [ 50%] PASSED path::test` under xdist)
    /// and `PASSED path::test` / `FAILED path::test - msg` (-rA summary).
    fn pytest(&mut self, t: &str) -> bool {
        // Every pytest node id has `::`; most lines of any log do not (cheap reject).
        if !t.contains("::") {
            return false;
        }
        let verdict = |w: &str| match w {
            "PASSED" => Some(Outcome::Passed),
            "FAILED" | "ERROR" => Some(Outcome::Failed),
            "SKIPPED" | "XFAIL" | "XPASS" => Some(Outcome::Skipped),
            _ => None,
        };
        let is_node = |w: &str| w.contains("::") && !w.starts_with('[');
        // -v: the node id first, the verdict second.
        let mut words = t.split_whitespace();
        if let (Some(node), Some(v)) = (words.next(), words.next()) {
            if let (true, Some(o)) = (is_node(node), verdict(v)) {
                self.push(Runner::Pytest, node, o);
                return true;
            }
        }
        // -rA summary, or xdist's `[gw0] [ 50%] PASSED node`.
        let mut rest = t
            .split_whitespace()
            .skip_while(|w| w.starts_with('[') || w.ends_with(']'));
        if let (Some(v), Some(node)) = (rest.next(), rest.next()) {
            if let (Some(o), true) = (verdict(v), is_node(node)) {
                self.push(Runner::Pytest, node, o);
                return true;
            }
        }
        false
    }

    /// `--- PASS: TestName (0.00s)` at any indent (subtests are indented).
    fn go(&mut self, t: &str) -> bool {
        let Some(rest) = t.strip_prefix("--- ") else {
            return false;
        };
        let (outcome, rest) = if let Some(r) = rest.strip_prefix("PASS: ") {
            (Outcome::Passed, r)
        } else if let Some(r) = rest.strip_prefix("FAIL: ") {
            (Outcome::Failed, r)
        } else if let Some(r) = rest.strip_prefix("SKIP: ") {
            (Outcome::Skipped, r)
        } else {
            return false;
        };
        let name = rest.rsplit_once(" (").map_or(rest, |(n, _)| n);
        self.push(Runner::GoTest, name, outcome);
        true
    }

    /// TAP from `node --test`: `# Subtest: name` opens a level, `ok N - name` /
    /// `not ok N - name [# SKIP|# TODO]` closes it; 4 spaces per level.
    fn tap(&mut self, line: &str) -> bool {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if let Some(name) = t.strip_prefix("# Subtest: ") {
            self.stack.retain(|(i, _)| *i < indent);
            self.stack.push((indent, name.to_string()));
            return true;
        }
        let (failed, rest) = if let Some(r) = t.strip_prefix("not ok ") {
            (true, r)
        } else if let Some(r) = t.strip_prefix("ok ") {
            (false, r)
        } else {
            return false;
        };
        let Some((num, desc)) = rest.split_once(" - ") else {
            return false;
        };
        if num.parse::<u64>().is_err() {
            return false;
        }
        let (desc, directive) = match desc.rsplit_once(" # ") {
            Some((d, dir)) => (d, dir.to_ascii_uppercase()),
            None => (desc, String::new()),
        };
        let outcome = if directive.starts_with("SKIP") || directive.starts_with("TODO") {
            Outcome::Skipped
        } else if failed {
            Outcome::Failed
        } else {
            Outcome::Passed
        };
        self.stack.retain(|(i, _)| *i < indent);
        let name = self.qualified(desc, " > ");
        self.push(Runner::NodeTest, &name, outcome);
        true
    }

    fn qualified(&self, name: &str, sep: &str) -> String {
        let mut out = String::new();
        for (_, parent) in &self.stack {
            out.push_str(parent);
            out.push_str(sep);
        }
        out.push_str(name);
        out
    }

    /// Summary lines that prove a runner ran even when it named no passing test.
    fn summary(&mut self, t: &str) -> bool {
        let runner = if t.starts_with("Tests:") && t.contains(" total") {
            Runner::Jest
        } else if t.starts_with("Tests ") && (t.contains(" passed") || t.contains(" failed")) {
            Runner::Vitest
        } else {
            return false;
        };
        self.saw(runner);
        if t.contains(" passed") {
            self.summarised.insert(runner);
        }
        true
    }

    /// The tree reporters: jest (`PASS file`, describe lines, `✓ name (3 ms)`), vitest
    /// (` ✓ file > a > b 3ms` verbose; ` ❯ file (6 tests | 1 failed)` then the tests),
    /// node's spec reporter (`▶ suite`, `✔ name (1ms)`).
    fn tree(&mut self, indent: usize, t: &str) {
        if indent == 0 {
            if let Some(rest) = t.strip_prefix("PASS ").or_else(|| t.strip_prefix("FAIL ")) {
                // `FAIL a/x.test.js` or, for a slow file, `FAIL a/x.test.js (5.033 s)`.
                let (file, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                if tail.is_empty() || (tail.starts_with('(') && tail.ends_with("s)")) {
                    self.block = Block::Jest;
                    self.stack.clear();
                    // The file qualifies the names, so tests of two files can be told apart.
                    self.stack.push((0, file.to_string()));
                    self.saw(Runner::Jest);
                    return;
                }
            }
        }
        let Some((symbol, rest)) = split_symbol(t) else {
            self.describe_line(indent, t);
            return;
        };
        let rest = rest.trim();
        match symbol {
            '✔' | '✖' | '﹣' => self.node_spec(indent, symbol, rest),
            // Jest's failure details start: what follows are messages and code, not describes.
            '●' if self.block == Block::Jest => self.block = Block::JestDetails,
            '▶' => {
                self.stack.retain(|(i, _)| *i < indent);
                self.stack.push((indent, rest.to_string()));
            }
            '❯' | '✓' | '×' | '↓' | '□' | '✕' | '○' | '✎' => {
                self.jest_or_vitest(indent, symbol, rest)
            }
            _ => {}
        }
    }

    fn describe_line(&mut self, indent: usize, t: &str) {
        // A jest describe header: an indented plain line inside a jest file block, before
        // its failure details (`● name` and the code frames below it).
        if self.block == Block::Jest && indent >= 2 && !t.is_empty() {
            self.stack.retain(|(i, _)| *i < indent);
            self.stack.push((indent, t.to_string()));
        } else if indent == 0 && !t.is_empty() {
            self.block = Block::None;
            self.stack.clear();
        }
    }

    fn node_spec(&mut self, indent: usize, symbol: char, rest: &str) {
        // `✖ failing tests:` heads the repeat of the failures, not a test.
        if rest.ends_with(':') {
            return;
        }
        let (name, directive) = match rest.rsplit_once(" # ") {
            Some((n, d)) => (n, d.to_ascii_uppercase()),
            None => (rest, String::new()),
        };
        let name = strip_paren_duration(name);
        let outcome =
            if symbol == '﹣' || directive.starts_with("SKIP") || directive.starts_with("TODO") {
                Outcome::Skipped
            } else if symbol == '✖' {
                Outcome::Failed
            } else {
                Outcome::Passed
            };
        self.stack.retain(|(i, _)| *i < indent);
        // A suite's own result line closes it rather than nesting under itself.
        let name = self.qualified(name, " > ");
        self.push(Runner::NodeTest, &name, outcome);
    }

    fn jest_or_vitest(&mut self, indent: usize, symbol: char, rest: &str) {
        let outcome = match symbol {
            '✓' => Outcome::Passed,
            '×' | '✕' => Outcome::Failed,
            '❯' => Outcome::Failed,
            _ => Outcome::Skipped,
        };
        // Vitest's file line: `file (6 tests | 1 failed) 14ms`.
        if indent <= 1 && rest.contains(" test") && rest.contains(" (") && !rest.contains(" > ") {
            if let Some((file, _)) = rest.split_once(" (") {
                self.block = Block::Vitest;
                self.vitest_file = file.trim().to_string();
                self.saw(Runner::Vitest);
                return;
            }
        }
        if symbol == '❯' {
            return;
        }
        if rest.contains(" > ") && indent <= 1 {
            let name = strip_ms_duration(rest);
            self.push(Runner::Vitest, name, outcome);
            return;
        }
        match self.block {
            Block::Jest => {
                let name = strip_paren_duration(rest);
                let name = match symbol {
                    '○' => name.strip_prefix("skipped ").unwrap_or(name),
                    '✎' => name.strip_prefix("todo ").unwrap_or(name),
                    _ => name,
                };
                self.stack.retain(|(i, _)| *i < indent);
                let full = self.qualified(name, " › ");
                self.push(Runner::Jest, &full, outcome);
            }
            Block::Vitest => {
                let name = format!("{} > {}", self.vitest_file, strip_ms_duration(rest));
                self.push(Runner::Vitest, &name, outcome);
            }
            Block::None | Block::JestDetails => {}
        }
    }
}

fn split_symbol(t: &str) -> Option<(char, &str)> {
    let mut chars = t.chars();
    let c = chars.next()?;
    let rest = chars.as_str();
    (rest.starts_with(' ') && !c.is_ascii()).then_some((c, rest))
}

/// `name (3 ms)` / `name (1.7ms)` → `name`.
fn strip_paren_duration(s: &str) -> &str {
    if let Some((name, tail)) = s.rsplit_once(" (") {
        let inner = tail.trim_end_matches(')');
        if tail.ends_with(')')
            && inner.ends_with("ms")
            && inner.starts_with(|c: char| c.is_ascii_digit())
        {
            return name;
        }
    }
    s
}

/// `name 3ms` → `name` (vitest prints durations bare).
fn strip_ms_duration(s: &str) -> &str {
    if let Some((name, tail)) = s.rsplit_once(' ') {
        if let Some(num) = tail.strip_suffix("ms") {
            if !num.is_empty() && num.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return name;
            }
        }
    }
    s
}

/// Remove ANSI escape sequences (CSI `ESC [ … final`, and lone `ESC x`).
pub fn strip_ansi(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            for n in chars.by_ref() {
                if ('@'..='~').contains(&n) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether a recorded result name is the test a person mapped: the same, or ending with
/// it after a separator runners use between scopes (`::`, `/`, ` > `, ` › `, `.`).
pub fn name_matches(result: &str, wanted: &str) -> bool {
    if result == wanted {
        return true;
    }
    let Some(prefix) = result.strip_suffix(wanted) else {
        return false;
    };
    ["::", "/", " > ", " › ", ".", " "]
        .iter()
        .any(|sep| prefix.ends_with(sep))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(r: &Report, name: &str) -> Option<Outcome> {
        r.results.iter().find(|t| t.name == name).map(|t| t.outcome)
    }

    #[test]
    fn chunking_does_not_change_the_result() {
        let text = "test a::b ... ok\ntest a::c ... FAILED\n--- PASS: TestX (0.00s)\n";
        let whole = parse(text);
        let mut p = Parser::default();
        for b in text.as_bytes() {
            p.feed(std::slice::from_ref(b));
        }
        assert_eq!(p.finish(), whole);
        assert_eq!(whole.results.len(), 3);
    }

    #[test]
    fn overlong_lines_are_dropped_not_kept() {
        let long = format!(
            "test {} ... ok\ntest short ... ok\n",
            "x".repeat(MAX_LINE * 2)
        );
        let r = parse(&long);
        assert_eq!(r.results.len(), 1);
        assert_eq!(outcome(&r, "short"), Some(Outcome::Passed));
    }

    #[test]
    fn names_match_whole_or_after_a_separator() {
        assert!(name_matches("tasks::tests::parses", "parses"));
        assert!(name_matches("tasks::tests::parses", "tests::parses"));
        assert!(name_matches("test_x.py::test_adds", "test_adds"));
        assert!(name_matches("TestTable/one", "one"));
        assert!(name_matches("group › nested", "nested"));
        assert!(!name_matches("tasks::tests::reparses", "parses"));
        assert!(!name_matches("a", "b"));
    }

    #[test]
    fn ansi_codes_are_stripped() {
        assert_eq!(strip_ansi("\u{1b}[32m✓\u{1b}[39m adds"), "✓ adds");
    }

    #[test]
    fn each_result_names_the_runner_whose_line_it_was() {
        let r = parse("test adds ... ok\nok 1 - adds\n--- PASS: adds (0.00s)\n");
        let runners: Vec<_> = r
            .results
            .iter()
            .map(|t| (t.name.as_str(), t.runner))
            .collect();
        assert_eq!(
            runners,
            [
                ("adds", Some(Runner::Cargo)),
                ("adds", Some(Runner::NodeTest)),
                ("adds", Some(Runner::GoTest))
            ]
        );
        // Results stored before the runner was kept still read.
        let old: TestResult = serde_json::from_str(r#"{"name":"a","outcome":"passed"}"#).unwrap();
        assert_eq!(old.runner, None);
    }

    #[test]
    fn prose_is_not_a_result() {
        let r = parse("the test of ok ... maybe\nok, done\n-- PASS: no\n");
        assert!(r.results.is_empty(), "{r:?}");
        assert!(r.runners.is_empty());
    }
}
