//! The baseline of tests that must still run (issue 24): the tests the final check ran
//! once before the first task, by name, and the comparison with a final run. A test that
//! ran then and does not pass now (skipped, deselected, excluded, renamed away, its runner
//! reconfigured) is a finding only a person accepts; a test that passes in a final run
//! joins. Pure: reports in, baseline and findings out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::testlog::{Outcome, Report};

/// The finding a baseline test that no longer runs is.
pub const FINDING: &str = "baseline-test-missing";

/// What the final check ran before the first task, and what joined since.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Baseline {
    /// The final check that was run.
    pub command: String,
    pub taken_at: String,
    /// The runners whose output was read (`testlog::Runner::as_str`); empty: the command
    /// runs no runner specrun reads, and the baseline holds no test.
    pub runners: Vec<String>,
    /// Each test name and how many times it ran: a name a runner prints more than once
    /// (two test binaries with one module path, a parametrised test) must run as often.
    pub tests: BTreeMap<String, u32>,
    /// Tests a person accepted as no longer running, with their reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub accepted: BTreeMap<String, String>,
}

/// A baseline test the final run did not run and pass as often as the baseline did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    pub name: String,
    pub expected: u32,
    pub passed: u32,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.expected, self.passed) {
            (1, _) => write!(f, "`{}`", self.name),
            (e, p) => write!(f, "`{}` (passed {p} of the {e} times it ran)", self.name),
        }
    }
}

/// A runner's entry for a whole file, not a test: `node --test` reports a file that holds
/// no test (yet) as one named by its absolute path, and drops that entry once the file has
/// tests. A test file that goes away is the integrity scan's `removed-test`.
fn is_file_entry(name: &str) -> bool {
    let b = name.as_bytes();
    name.starts_with('/') || (b.len() > 2 && b[0].is_ascii_alphabetic() && &b[1..3] == b":\\")
}

/// How many times each test name has `outcome` (any outcome but skipped when `None`).
fn counts(report: &Report, ran: impl Fn(Outcome) -> bool) -> BTreeMap<String, u32> {
    let mut out: BTreeMap<String, u32> = BTreeMap::new();
    for r in report
        .results
        .iter()
        .filter(|r| ran(r.outcome) && !is_file_entry(&r.name))
    {
        *out.entry(r.name.clone()).or_default() += 1;
    }
    out
}

impl Baseline {
    /// The baseline of one run of the final check: every test it ran (passed or failed: a
    /// test red before the work must still run after it), not those it skipped.
    pub fn take(command: &str, taken_at: &str, report: &Report) -> Baseline {
        Baseline {
            command: command.to_string(),
            taken_at: taken_at.to_string(),
            runners: report
                .runners
                .iter()
                .map(|r| r.as_str().to_string())
                .collect(),
            tests: counts(report, |o| o != Outcome::Skipped),
            accepted: BTreeMap::new(),
        }
    }

    /// The tests that passed in a passing final run join (a name's count only grows, so
    /// a join never hides a test that went missing).
    pub fn join(&mut self, report: &Report) -> usize {
        let mut joined = 0;
        for (name, n) in counts(report, |o| o == Outcome::Passed) {
            let have = self.tests.entry(name).or_insert_with(|| {
                joined += 1;
                0
            });
            *have = (*have).max(n);
        }
        for r in &report.runners {
            let name = r.as_str().to_string();
            if !self.runners.contains(&name) {
                self.runners.push(name);
            }
        }
        joined
    }

    /// Every baseline test a person has not accepted that `report` (the final run) did
    /// not pass as often as it ran in the baseline, in name order.
    pub fn missing(&self, report: Option<&Report>) -> Vec<Missing> {
        let passed = report
            .map(|r| counts(r, |o| o == Outcome::Passed))
            .unwrap_or_default();
        self.tests
            .iter()
            .filter(|(name, _)| !self.accepted.contains_key(*name))
            .filter_map(|(name, &expected)| {
                let passed = passed.get(name).copied().unwrap_or(0);
                (passed < expected).then(|| Missing {
                    name: name.clone(),
                    expected,
                    passed,
                })
            })
            .collect()
    }

    /// What the baseline holds, in one line.
    pub fn describe(&self) -> String {
        if self.runners.is_empty() {
            return format!(
                "the final check `{}` runs no test runner specrun reads ({}): the baseline is empty, no test is held to still run",
                self.command,
                super::testlog::SUPPORTED
            );
        }
        let runs: u32 = self.tests.values().sum();
        format!(
            "the baseline holds {} test(s) ({runs} run(s)) of {}, from `{}`",
            self.tests.len(),
            self.runners.join(", "),
            self.command
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::testlog::{Runner, TestResult};

    fn report(results: &[(&str, Outcome)]) -> Report {
        Report {
            runners: [Runner::Cargo].into_iter().collect(),
            results: results
                .iter()
                .map(|(n, o)| TestResult {
                    name: n.to_string(),
                    outcome: *o,
                })
                .collect(),
            ..Report::default()
        }
    }

    /// Regression (e2e_14b): a test file empty at `state init` was a "test" named by its
    /// path, which node stops reporting once the file holds tests: never missing.
    #[test]
    fn a_runners_whole_file_entry_is_not_a_test() {
        use Outcome::*;
        let before = report(&[
            ("/tmp/p/lib/add.test.js", Passed),
            ("C:\\p\\a.test.js", Passed),
        ]);
        let base = Baseline::take("node --test", "t", &before);
        assert!(base.tests.is_empty(), "{base:?}");
        let after = report(&[("adds", Passed)]);
        assert_eq!(base.missing(Some(&after)), Vec::new());
        // A test whose name merely holds a slash is a test.
        let base = Baseline::take("node --test", "t", &report(&[("a/b works", Failed)]));
        assert_eq!(base.tests.len(), 1);
    }

    #[test]
    fn a_test_that_no_longer_runs_is_missing_and_a_new_one_joins() {
        use Outcome::*;
        let before = report(&[("a", Passed), ("b", Failed), ("c", Skipped)]);
        let mut base = Baseline::take("cargo test", "t", &before);
        assert_eq!(
            base.tests.keys().collect::<Vec<_>>(),
            ["a", "b"],
            "a skipped test did not run"
        );
        let honest = report(&[("a", Passed), ("b", Passed), ("n", Passed)]);
        assert!(base.missing(Some(&honest)).is_empty());
        let cheat = report(&[("a", Passed), ("b", Skipped)]);
        let missing = base.missing(Some(&cheat));
        assert_eq!(
            missing.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
            ["`b`"]
        );
        assert_eq!(
            base.missing(None).len(),
            2,
            "no final run: every test is missing"
        );
        assert_eq!(base.join(&honest), 1);
        assert!(base.tests.contains_key("n"));
        base.join(&cheat);
        assert_eq!(
            base.missing(Some(&cheat)).len(),
            2,
            "a join never hides a missing test"
        );
        base.accepted.insert("b".into(), "merged into a".into());
        base.accepted
            .insert("n".into(), "removed on purpose".into());
        assert!(
            base.missing(Some(&cheat)).is_empty(),
            "accepted by a person"
        );
    }

    #[test]
    fn a_repeated_name_must_run_as_often_and_an_unknown_runner_holds_nothing() {
        use Outcome::*;
        let before = report(&[("tests::works", Passed), ("tests::works", Passed)]);
        let base = Baseline::take("cargo test", "t", &before);
        assert_eq!(base.tests["tests::works"], 2);
        let one = report(&[("tests::works", Passed)]);
        let missing = base.missing(Some(&one));
        assert_eq!(
            missing[0].to_string(),
            "`tests::works` (passed 1 of the 2 times it ran)"
        );
        let unknown = Baseline::take("make check", "t", &Report::default());
        assert!(unknown.tests.is_empty() && unknown.missing(None).is_empty());
        assert!(
            unknown.describe().contains("the baseline is empty"),
            "{}",
            unknown.describe()
        );
    }
}
