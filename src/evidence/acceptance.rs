//! Acceptance criteria (pure): their ids, the mappings to tests kept in
//! `specs/<name>/acceptance.json`, and whether each is covered by tests that passed in
//! fresh verify runs.
//!
//! Ids: a task's `Done when` gives one criterion per bullet (the inline value counts as the
//! first), named `<task label>/AC<n>` by position inside that task only, so editing other
//! tasks never renames them. A bullet that starts with its own id (`AC-1.1: …`) keeps it.
//! `requirements.md` criteria are the `AC-<n>[.<m>…]` items written there.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::evidence::testlog::{self, Outcome, Report};
use crate::evidence::verify::{Freshness, Slot};
use crate::model::tasks::{Task, TaskList};

/// Where a criterion was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Criterion {
    pub id: String,
    /// The owning task's label; `None` for a spec-level requirement.
    pub task: Option<String>,
    pub text: String,
}

/// A bullet marker at the start of a line: `- `, `* `, `+ `, `1. `, `1) `.
fn strip_bullet(line: &str) -> Option<&str> {
    let t = line.trim_start();
    for m in ["- ", "* ", "+ "] {
        if let Some(r) = t.strip_prefix(m) {
            return Some(r);
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let r = &t[digits..];
        return r.strip_prefix(". ").or_else(|| r.strip_prefix(") "));
    }
    None
}

/// `AC-1.2` at the start of `s` (after `**`, `[`, `|`), and the text after it.
pub(crate) fn leading_ac_id(s: &str) -> Option<(String, String)> {
    let t = s.trim_start_matches(['*', '[', '|', ' ']);
    let t = t
        .strip_prefix("[ ] ")
        .or_else(|| t.strip_prefix("[x] "))
        .unwrap_or(t);
    let t = t.trim_start_matches(['*', ' ']);
    let rest = t.strip_prefix("AC-")?;
    let len = rest
        .char_indices()
        .take_while(|(_, c)| c.is_ascii_digit() || *c == '.')
        .map(|(i, c)| i + c.len_utf8())
        .last()?;
    let num = rest[..len].trim_end_matches('.');
    if num.is_empty() || !num.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let after = rest[num.len()..].trim_start_matches(|c: char| {
        matches!(c, '*' | ']' | ':' | '|' | '-' | '—' | '–' | ' ' | '.')
    });
    let text = after.trim().trim_end_matches(['|', ' ']).trim().to_string();
    Some((format!("AC-{num}"), text))
}

/// The criteria of one task's `Done when`, in order.
pub(crate) fn task_criteria(task: &Task) -> Vec<Criterion> {
    let Some(done) = &task.done_when else {
        return Vec::new();
    };
    let label = task.label();
    let mut items: Vec<String> = Vec::new();
    for (i, line) in done.lines().enumerate() {
        match strip_bullet(line) {
            Some(item) => items.push(item.trim().to_string()),
            None if i == 0 => items.push(line.trim().to_string()),
            None => match items.last_mut() {
                Some(last) if !line.trim().is_empty() => {
                    last.push(' ');
                    last.push_str(line.trim());
                }
                Some(_) => {}
                None => items.push(line.trim().to_string()),
            },
        }
    }
    items.retain(|t| !t.is_empty());
    items
        .into_iter()
        .enumerate()
        .map(|(n, text)| match leading_ac_id(&text) {
            Some((id, rest)) => Criterion {
                id,
                task: Some(label.clone()),
                text: rest,
            },
            None => Criterion {
                id: format!("{label}/AC{}", n + 1),
                task: Some(label.clone()),
                text,
            },
        })
        .collect()
}

/// The `AC-…` items of a requirements.md (list items, headings, table rows), outside code.
pub(crate) fn requirement_criteria(text: &str) -> Vec<Criterion> {
    let mut out: Vec<Criterion> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let body = strip_bullet(line)
            .or_else(|| {
                t.strip_prefix('#')
                    .map(|h| h.trim_start_matches('#').trim_start())
            })
            .or_else(|| t.strip_prefix('|'))
            .unwrap_or(t);
        if let Some((id, text)) = leading_ac_id(body) {
            if !out.iter().any(|c| c.id == id) {
                out.push(Criterion {
                    id,
                    task: None,
                    text,
                });
            }
        }
    }
    out
}

/// Every criterion of a spec: each task's, then the requirements a task did not claim by id.
pub(crate) fn spec_criteria(list: &TaskList, requirements: Option<&str>) -> Vec<Criterion> {
    let mut out: Vec<Criterion> = list.tasks.iter().flat_map(task_criteria).collect();
    if let Some(text) = requirements {
        for c in requirement_criteria(text) {
            if !out.iter().any(|o| o.id == c.id) {
                out.push(c);
            }
        }
    }
    out
}

// ---- the store ------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Manual {
    pub reason: String,
    pub at: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Mapping {
    /// The criterion's text when it was mapped: a rewording asks for a new look.
    pub text: String,
    #[serde(default)]
    pub tests: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual: Option<Manual>,
    /// Proposed by the model (`ac propose`) for a person to confirm by hand: not covered
    /// until a person's `ac confirm` turns it into `manual`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed: Option<Manual>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Justification {
    pub reason: String,
    pub at: String,
    pub kind: String,
    pub file: String,
    pub line: usize,
}

/// `specs/<name>/acceptance.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Store {
    pub version: u32,
    #[serde(default)]
    pub criteria: BTreeMap<String, Mapping>,
    /// Integrity findings justified, per task: finding id → why.
    #[serde(default)]
    pub justifications: BTreeMap<String, BTreeMap<String, Justification>>,
}

impl Default for Store {
    fn default() -> Self {
        Store {
            version: 1,
            criteria: BTreeMap::new(),
            justifications: BTreeMap::new(),
        }
    }
}

// ---- coverage -------------------------------------------------------------------------

/// One recorded verify run, as coverage sees it.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// The spec whose state holds it.
    pub spec: String,
    /// Where it sits: `taskEvidence[1.2]`, `verificationBlocks.execution`.
    pub slot: Slot,
    pub command: String,
    pub freshness: Freshness,
    /// The tests its output named; `None` when no results were stored for it.
    pub report: Option<Report>,
    /// Whether its command is one the plan gives (the slot's task's frozen Verify, or the
    /// final check): another command's run is shown but covers no criterion.
    pub plan_command: bool,
    /// Its record names results (a digest) that did not read back as written: the file
    /// was edited, replaced or removed after the run, so `report` is `None`.
    pub untrusted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TestState {
    Passed,
    Failed,
    Stale,
    Missing,
}

impl TestState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TestState::Passed => "passed",
            TestState::Failed => "failed",
            TestState::Stale => "stale",
            TestState::Missing => "missing",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct TestCoverage {
    pub name: String,
    pub state: TestState,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// Every mapped test passed in a fresh run.
    Covered,
    /// Confirmed by hand (`ac confirm`), not by a test.
    Manual,
    /// Proposed by the model as manual (`ac propose`): waits for a person's confirmation.
    /// Does not hold back `task complete`; holds back the completion ("waiting for a person").
    Proposed,
    Failed,
    Stale,
    Missing,
    /// No test mapped and not confirmed.
    Unmapped,
    /// The criterion's text changed since it was mapped.
    Changed,
    /// Checked by its task's own Verify, a shell check (not a test runner), which passed in
    /// a fresh run the binary recorded.
    Checked,
}

impl Status {
    pub(crate) fn is_covered(self) -> bool {
        matches!(self, Status::Covered | Status::Manual | Status::Checked)
    }
    /// Whether the task may complete with it: covered, or waiting for a person.
    pub(crate) fn settled_for_task(self) -> bool {
        self.is_covered() || self == Status::Proposed
    }
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Covered => "covered",
            Status::Manual => "manual",
            Status::Proposed => "proposed",
            Status::Failed => "failed",
            Status::Stale => "stale",
            Status::Missing => "missing",
            Status::Unmapped => "unmapped",
            Status::Changed => "changed",
            Status::Checked => "checked",
        }
    }
}

/// One row of the matrix `ac status` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Row {
    pub id: String,
    pub task: Option<String>,
    pub text: String,
    pub status: Status,
    pub tests: Vec<TestCoverage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manual: Option<Manual>,
    /// Why it is not covered, in one sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The task's own Verify that checks it directly (`Status::Checked`, or what would).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_by: Option<String>,
}

/// A task whose own (frozen) Verify is a shell check, and how its run in the task's slot
/// stands: the task's unmapped criteria are covered by that run passing fresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    pub task: String,
    pub command: String,
    /// The task slot's run of exactly `command` with no test results in its output, as it
    /// counts: a passing run gone stale after the task was completed on it counts as fresh.
    pub freshness: Freshness,
}

/// Commands that assert something of a file or text: a Verify made only of these (and the
/// plain filters around them) checks its criteria itself.
const ASSERTS: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "test", "[", "diff", "cmp", "jq",
];
/// Filters that may feed an assertion (`wc -l < f | grep -qx 3`).
const FILTERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "wc",
    "cut",
    "sort",
    "uniq",
    "tr",
    "ls",
    "stat",
    "file",
    "find",
    "sha256sum",
    "md5sum",
    "!",
];

/// Whether `command` is a shell check rather than a test runner (or a script, or a check
/// that asserts nothing such as `true`): every `|`, `&&`, `||` or `;` segment starts with an
/// assertion or a filter, and one asserts. Conservative: quoting the separators, an
/// environment prefix or any other program makes it not one, and its criteria need tests.
pub(crate) fn is_shell_check(command: &str) -> bool {
    let mut asserts = false;
    for segment in command.split(['|', '&', ';']) {
        // `! grep …` asserts the opposite: still an assertion.
        let Some(first) = segment.split_whitespace().find(|w| *w != "!") else {
            continue;
        };
        if ASSERTS.contains(&first) {
            asserts = true;
        } else if !FILTERS.contains(&first) {
            return false;
        }
    }
    asserts
}

/// The state of one mapped test across the recorded runs.
pub(crate) fn test_state(name: &str, runs: &[Run]) -> TestCoverage {
    let mut failed_in = Vec::new();
    let mut fresh_pass = None;
    let mut stale_pass: Option<&Run> = None;
    let mut seen_elsewhere = None;
    let mut off_plan = None;
    for run in runs {
        let Some(report) = &run.report else { continue };
        let mut outcome: Option<Outcome> = None;
        for r in report
            .results
            .iter()
            .filter(|r| testlog::name_matches(&r.name, name))
        {
            outcome = Some(outcome.map_or(r.outcome, |o| o.max(r.outcome)));
        }
        if !run.plan_command {
            if outcome.is_some() {
                off_plan = Some(format!("{} ran `{}`", run.slot, run.command.trim()));
            }
            continue;
        }
        match (outcome, run.freshness) {
            (None, _) => {}
            (Some(Outcome::Failed), Freshness::Fresh | Freshness::Failed) => {
                failed_in.push(run.slot.describe())
            }
            (Some(Outcome::Passed), Freshness::Fresh) => fresh_pass = Some(run.slot.describe()),
            (Some(Outcome::Passed), Freshness::Stale) => stale_pass = Some(run),
            (Some(o), _) => {
                seen_elsewhere = Some(format!(
                    "{} in {} ({})",
                    outcome_word(o),
                    run.slot,
                    run.freshness.as_str()
                ))
            }
        }
    }
    let (state, detail) = if !failed_in.is_empty() {
        (
            TestState::Failed,
            format!("failed in {}", failed_in.join(", ")),
        )
    } else if let Some(slot) = fresh_pass {
        (TestState::Passed, format!("passed in {slot} (fresh)"))
    } else if let Some(run) = stale_pass {
        (
            TestState::Stale,
            format!(
                "passed in {}, but the code changed since: run it again (`{}`)",
                run.slot,
                rerun(run)
            ),
        )
    } else if let Some(seen) = seen_elsewhere {
        (TestState::Missing, format!("no fresh pass: {seen}"))
    } else if let Some(ran) = off_plan {
        (
            TestState::Missing,
            format!("no run of a plan command named it: {ran}, which is neither a task's Verify nor the final check, and proves nothing"),
        )
    } else {
        (TestState::Missing, missing_detail(runs))
    };
    TestCoverage {
        name: name.to_string(),
        state,
        detail,
    }
}

/// The command that records `run` again: its slot's `verify run` with its own command.
fn rerun(run: &Run) -> String {
    run.slot.rerun(&run.spec, &run.command)
}

fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Passed => "passed",
        Outcome::Failed => "failed",
        Outcome::Skipped => "skipped",
    }
}

/// Why a test name was found nowhere: no runs, runs of no known runner, or absent.
fn missing_detail(runs: &[Run]) -> String {
    let untrusted: Vec<String> = runs
        .iter()
        .filter(|r| r.untrusted)
        .map(|r| r.slot.describe())
        .collect();
    // A results file changed after its run is named, so a reviewer sees why its tests
    // count for nothing (rather than "no run named it").
    let untrusted = if untrusted.is_empty() {
        String::new()
    } else {
        format!(
            "; the results file of {} does not match the digest its run recorded (changed after the run), so its tests prove nothing",
            untrusted.join(", ")
        )
    };
    let with_report: Vec<&Run> = runs.iter().filter(|r| r.report.is_some()).collect();
    if with_report.is_empty() {
        return format!(
            "no recorded verify run has test results yet: `specrun verify run` the tests{untrusted}"
        );
    }
    let unrecognised: Vec<String> = with_report
        .iter()
        .filter(|r| r.report.as_ref().is_some_and(|rep| rep.runners.is_empty()))
        .map(|r| r.slot.describe())
        .collect();
    let unnamed: Vec<&str> = with_report
        .iter()
        .flat_map(|r| {
            r.report
                .as_ref()
                .map(|rep| rep.unnamed.clone())
                .unwrap_or_default()
        })
        .map(|r| r.as_str())
        .collect();
    let mut why = format!(
        "appears in no recorded verify output ({} run(s) with results)",
        with_report.len()
    );
    if !unrecognised.is_empty() {
        why.push_str(&format!(
            "; the output of {} matched no supported runner ({})",
            unrecognised.join(", "),
            testlog::SUPPORTED
        ));
    }
    if !unnamed.is_empty() {
        why.push_str(&format!(
            "; {} named no passing test: run jest with --verbose, vitest with --reporter=verbose",
            unnamed.join(", ")
        ));
    }
    why.push_str(&untrusted);
    why
}

/// The matrix: one row per criterion.
pub(crate) fn coverage(
    criteria: &[Criterion],
    store: &Store,
    runs: &[Run],
    checks: &[Check],
) -> Vec<Row> {
    criteria
        .iter()
        .map(|c| row(c, store, runs, checks))
        .collect()
}

fn row(c: &Criterion, store: &Store, runs: &[Run], checks: &[Check]) -> Row {
    let mapping = store.criteria.get(&c.id);
    let mut r = Row {
        id: c.id.clone(),
        task: c.task.clone(),
        text: c.text.clone(),
        status: Status::Unmapped,
        tests: Vec::new(),
        manual: None,
        why: None,
        checked_by: None,
    };
    let check = checks.iter().find(|k| Some(&k.task) == c.task.as_ref());
    if let (None, Some(check)) = (mapping, check) {
        return checked_row(r, check);
    }
    let Some(m) = mapping else {
        r.why = Some(format!(
            "no test mapped: `specrun ac map {} --test '<test name>'` (or, when no test or command can check it, `specrun ac propose {} --reason '<how it was checked>'` for a person to confirm)",
            c.id, c.id
        ));
        return r;
    };
    if m.text.trim() != c.text.trim() {
        r.status = Status::Changed;
        r.why = Some(format!(
            "the criterion was reworded since it was mapped (was {:?}): map or confirm it again",
            m.text
        ));
        return r;
    }
    if let Some(manual) = &m.manual {
        r.status = Status::Manual;
        r.manual = Some(manual.clone());
        return r;
    }
    if let Some(proposed) = &m.proposed {
        r.status = Status::Proposed;
        r.manual = Some(proposed.clone());
        r.why = Some(format!(
            "proposed as manual ({}): it counts once a person confirms it; {}",
            proposed.reason,
            crate::claude::roles::for_person(&format!(
                "specrun ac confirm {} --reason \"<how it was checked>\"",
                crate::support::shell::word(&c.id)
            ))
        ));
        return r;
    }
    r.tests = m.tests.iter().map(|t| test_state(t, runs)).collect();
    r.status = worst(&r.tests);
    if !r.status.is_covered() {
        let bad: Vec<String> = r
            .tests
            .iter()
            .filter(|t| t.state != TestState::Passed)
            .map(|t| format!("{}: {}", t.name, t.detail))
            .collect();
        r.why = Some(bad.join("; "));
    }
    r
}

/// An unmapped criterion of a task whose Verify is a shell check: as its run stands.
fn checked_row(mut r: Row, check: &Check) -> Row {
    let id = crate::support::shell::word(&check.task);
    r.checked_by = Some(check.command.clone());
    r.status = match check.freshness {
        Freshness::Fresh => {
            return Row {
                status: Status::Checked,
                ..r
            }
        }
        Freshness::Stale => Status::Stale,
        Freshness::Failed => Status::Failed,
        Freshness::Missing => Status::Missing,
    };
    r.why = Some(format!(
        "task {}'s Verify `{}` checks it directly: its run is {}; `specrun verify run --task {id}` records it",
        check.task,
        check.command,
        check.freshness.as_str()
    ));
    r
}

fn worst(tests: &[TestCoverage]) -> Status {
    if tests.is_empty() {
        return Status::Unmapped;
    }
    let has = |s| tests.iter().any(|t| t.state == s);
    if has(TestState::Failed) {
        Status::Failed
    } else if has(TestState::Missing) {
        Status::Missing
    } else if has(TestState::Stale) {
        Status::Stale
    } else {
        Status::Covered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_check_asserts_with_plain_tools_and_a_runner_is_not_one() {
        for check in [
            "grep -qx 1 one.txt",
            "test -f b.txt && grep -q BETA notes/beta.txt",
            "wc -l < out.txt | grep -qx 3",
            "diff -u want.txt got.txt",
            "jq -e '.ok' result.json",
            "! grep -q TODO src/a.rs",
        ] {
            assert!(is_shell_check(check), "{check}");
        }
        for not in [
            "true",
            "cargo test",
            "npm test",
            "pytest -v",
            "sh -c 'grep -q x f'",
            "./check.sh",
            "FOO=1 grep -q x f",
            "cat f",
            "grep -q x f && make test",
            "",
        ] {
            assert!(!is_shell_check(not), "{not}");
        }
    }

    #[test]
    fn an_unmapped_criterion_of_a_shell_check_task_is_checked_by_its_run() {
        let crit = |task: &str| Criterion {
            id: format!("{task}/AC1"),
            task: Some(task.into()),
            text: "x".into(),
        };
        let check = |task: &str, freshness| Check {
            task: task.into(),
            command: "grep -q x f".into(),
            freshness,
        };
        let checks = [check("1", Freshness::Fresh), check("2", Freshness::Failed)];
        let rows = coverage(
            &[crit("1"), crit("2"), crit("3")],
            &Store::default(),
            &[],
            &checks,
        );
        let st: Vec<Status> = rows.iter().map(|r| r.status).collect();
        assert_eq!(st, [Status::Checked, Status::Failed, Status::Unmapped]);
        assert!(rows[0].status.is_covered() && rows[0].why.is_none());
        assert_eq!(rows[0].checked_by.as_deref(), Some("grep -q x f"));
        assert!(rows[1]
            .why
            .as_deref()
            .unwrap()
            .contains("`specrun verify run --task 2`"));
    }
    use crate::evidence::testlog::TestResult;

    fn task(done: &str) -> Task {
        let text = format!("- [ ] 1.2 Do it\n  - **Done when**: {done}\n");
        crate::model::tasks::parse(&text).tasks.remove(0)
    }

    #[test]
    fn each_bullet_is_a_criterion_and_the_inline_value_the_first() {
        let t = task("it parses\n    - empty input is refused\n      with a message\n    - AC-3.1: ids are kept");
        let c = task_criteria(&t);
        let ids: Vec<&str> = c.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["1.2/AC1", "1.2/AC2", "AC-3.1"]);
        assert_eq!(c[1].text, "empty input is refused with a message");
        assert_eq!(c[2].text, "ids are kept");
    }

    #[test]
    fn ids_survive_edits_to_other_tasks() {
        let before =
            "- [ ] 1 A\n  - **Done when**: a works\n- [ ] 2 B\n  - **Done when**:\n    - b works\n";
        let after = "- [ ] 0 New\n  - **Done when**: x\n- [ ] 1 A\n  - **Done when**: a works\n    - more\n- [ ] 2 B\n  - **Done when**:\n    - b works\n";
        let ids = |t: &str| -> Vec<String> {
            spec_criteria(&crate::model::tasks::parse(t), None)
                .into_iter()
                .filter(|c| c.task.as_deref() == Some("2"))
                .map(|c| c.id)
                .collect()
        };
        assert_eq!(ids(before), ids(after));
        assert_eq!(ids(before), ["2/AC1"]);
    }

    #[test]
    fn requirements_in_lists_headings_and_tables() {
        let text = "# R\n- **AC-1.1**: first\n- AC-1.2 — second\n### AC-2.1: third\n| AC-2.2 | fourth |\n```\n- AC-9.9: code\n```\nAC-3: plain\nsee AC-1.1 above\n";
        let c = requirement_criteria(text);
        let ids: Vec<&str> = c.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["AC-1.1", "AC-1.2", "AC-2.1", "AC-2.2", "AC-3"]);
        assert_eq!(c[0].text, "first");
        assert_eq!(c[1].text, "second");
        assert_eq!(c[3].text, "fourth");
    }

    fn run(slot: &str, f: Freshness, results: &[(&str, Outcome)]) -> Run {
        let mut report = Report::default();
        report.runners.insert(testlog::Runner::Cargo);
        report.results = results
            .iter()
            .map(|(n, o)| TestResult {
                name: n.to_string(),
                outcome: *o,
                runner: Some(testlog::Runner::Cargo),
            })
            .collect();
        Run {
            plan_command: true,
            untrusted: false,
            spec: "demo".into(),
            slot: Slot::Phase(slot.into()),
            command: "cargo test".into(),
            freshness: f,
            report: Some(report),
        }
    }

    #[test]
    fn a_test_passes_only_in_a_fresh_run_and_a_fresh_failure_wins() {
        let fresh = run("a", Freshness::Fresh, &[("m::t", Outcome::Passed)]);
        let stale = run("b", Freshness::Stale, &[("m::u", Outcome::Passed)]);
        let failed = run(
            "c",
            Freshness::Failed,
            &[("m::v", Outcome::Failed), ("m::t", Outcome::Passed)],
        );
        let runs = [fresh, stale, failed];
        assert_eq!(test_state("t", &runs).state, TestState::Passed);
        assert_eq!(test_state("u", &runs).state, TestState::Stale);
        // The stale pass names the run that records it again, for its own spec.
        assert!(
            test_state("u", &runs).detail.ends_with(
                "run it again (`specrun verify run --phase b --spec demo --command 'cargo test'`)"
            ),
            "{}",
            test_state("u", &runs).detail
        );
        let task = Run {
            plan_command: true,
            slot: Slot::Task("1.2".into()),
            ..run("x", Freshness::Stale, &[("m::x", Outcome::Passed)])
        };
        assert!(test_state("x", &[task])
            .detail
            .contains("(`specrun verify run --task 1.2 --spec demo --command 'cargo test'`)"));
        assert_eq!(test_state("v", &runs).state, TestState::Failed);
        assert_eq!(test_state("w", &runs).state, TestState::Missing);
        let skipped = [run("d", Freshness::Fresh, &[("m::s", Outcome::Skipped)])];
        let s = test_state("s", &skipped);
        assert_eq!(s.state, TestState::Missing);
        assert!(s.detail.contains("skipped"), "{}", s.detail);
    }

    #[test]
    fn a_run_whose_results_file_changed_is_named_as_proving_nothing() {
        let forged = Run {
            untrusted: true,
            report: None,
            slot: Slot::Task("1.1".into()),
            ..run("x", Freshness::Fresh, &[])
        };
        let t = test_state("adds", &[forged]);
        assert_eq!(t.state, TestState::Missing);
        assert!(
            t.detail.contains(
                "the results file of taskEvidence[1.1] does not match the digest its run recorded"
            ),
            "{}",
            t.detail
        );
        // The control: a run with no results at all is not called changed.
        let none = Run {
            report: None,
            ..run("x", Freshness::Fresh, &[])
        };
        assert!(!test_state("adds", &[none]).detail.contains("digest"));
    }

    #[test]
    fn unknown_runner_output_names_the_supported_runners() {
        let runs = [Run {
            plan_command: true,
            untrusted: false,
            spec: "demo".into(),
            slot: Slot::Phase("execution".into()),
            command: "make check".into(),
            freshness: Freshness::Fresh,
            report: Some(Report::default()),
        }];
        let t = test_state("anything", &runs);
        assert_eq!(t.state, TestState::Missing);
        assert!(
            t.detail.contains("matched no supported runner"),
            "{}",
            t.detail
        );
        assert!(t.detail.contains("pytest"), "{}", t.detail);
    }

    #[test]
    fn rows_unmapped_manual_changed_covered() {
        let crit = |id: &str, text: &str| Criterion {
            id: id.into(),
            task: Some("1".into()),
            text: text.into(),
        };
        let mut store = Store::default();
        store.criteria.insert(
            "1/AC2".into(),
            Mapping {
                text: "b".into(),
                tests: vec!["t".into()],
                ..Default::default()
            },
        );
        store.criteria.insert(
            "1/AC3".into(),
            Mapping {
                text: "c".into(),
                manual: Some(Manual {
                    reason: "UI".into(),
                    at: "x".into(),
                }),
                ..Default::default()
            },
        );
        store.criteria.insert(
            "1/AC4".into(),
            Mapping {
                text: "old".into(),
                tests: vec!["t".into()],
                ..Default::default()
            },
        );
        let runs = [run("a", Freshness::Fresh, &[("t", Outcome::Passed)])];
        let rows = coverage(
            &[
                crit("1/AC1", "a"),
                crit("1/AC2", "b"),
                crit("1/AC3", "c"),
                crit("1/AC4", "new"),
            ],
            &store,
            &runs,
            &[],
        );
        let st: Vec<Status> = rows.iter().map(|r| r.status).collect();
        assert_eq!(
            st,
            [
                Status::Unmapped,
                Status::Covered,
                Status::Manual,
                Status::Changed
            ]
        );
        assert!(rows[0]
            .why
            .as_deref()
            .unwrap()
            .contains("specrun ac map 1/AC1"));
    }
}
