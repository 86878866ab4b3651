//! The baseline of tests that must still run (issue 24): the tests the final check ran
//! once before the first task, by name, and the comparison with a final run. A test that
//! ran then and does not pass now (skipped, deselected, excluded, renamed away, its runner
//! reconfigured) is a finding only a person accepts; a test that passes in a final run
//! joins. Pure: reports in, baseline and findings out.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::testlog::{Outcome, Report, Runner};

/// The finding a baseline test that no longer runs is.
pub const FINDING: &str = "baseline-test-missing";

/// The runner key of names whose runner is not known: a baseline written before names were
/// kept per runner. Such a name is met by a pass of that name in any runner, as it was.
pub const ANY_RUNNER: &str = "*";

/// Runner (`Runner::as_str`) → test name → how many times it ran.
pub type ByRunner = BTreeMap<String, BTreeMap<String, u32>>;

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
    /// Each runner's test names and how many times each ran: a name a runner prints more
    /// than once (two test binaries with one module path, a parametrised test) must run as
    /// often, and the same name in two runners is two tests (one cannot stand in for the
    /// other).
    #[serde(deserialize_with = "by_runner")]
    pub tests: ByRunner,
    /// Tests a person accepted as no longer running (by name, in every runner), with their
    /// reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub accepted: BTreeMap<String, String>,
}

/// `tests` as written now (runner → name → count), or as first written (name → count,
/// every runner's names in one map), which is kept under `ANY_RUNNER`.
fn by_runner<'de, D: Deserializer<'de>>(d: D) -> Result<ByRunner, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Entry {
        Count(u32),
        Names(BTreeMap<String, u32>),
    }
    let mut out = ByRunner::new();
    for (key, entry) in BTreeMap::<String, Entry>::deserialize(d)? {
        match entry {
            Entry::Names(names) => {
                out.insert(key, names);
            }
            Entry::Count(n) => {
                out.entry(ANY_RUNNER.to_string())
                    .or_default()
                    .insert(key, n);
            }
        }
    }
    Ok(out)
}

/// A baseline test the final run did not run and pass as often as the baseline did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    pub runner: String,
    pub name: String,
    pub expected: u32,
    pub passed: u32,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.name)?;
        let runner = (self.runner != ANY_RUNNER).then_some(self.runner.as_str());
        match (runner, self.expected) {
            (None, 1) => Ok(()),
            (Some(r), 1) => write!(f, " ({r})"),
            (None, e) => write!(f, " (passed {} of the {e} times it ran)", self.passed),
            (Some(r), e) => write!(f, " ({r}; passed {} of the {e} times it ran)", self.passed),
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

/// The runner a result is attributed to: its own, else the report's only runner, else
/// not known (results stored before runners were kept per result).
fn runner_of(report: &Report, own: Option<Runner>) -> &'static str {
    match (own, report.runners.len()) {
        (Some(r), _) => r.as_str(),
        (None, 1) => report
            .runners
            .iter()
            .next()
            .map_or(ANY_RUNNER, |r| r.as_str()),
        (None, _) => ANY_RUNNER,
    }
}

/// How many times each runner's each test name has an outcome `ran` accepts.
fn counts(report: &Report, ran: impl Fn(Outcome) -> bool) -> ByRunner {
    let mut out = ByRunner::new();
    for r in report
        .results
        .iter()
        .filter(|r| ran(r.outcome) && !is_file_entry(&r.name))
    {
        *out.entry(runner_of(report, r.runner).to_string())
            .or_default()
            .entry(r.name.clone())
            .or_default() += 1;
    }
    out
}

/// How many times `name` passed in `runner` (in any runner for `ANY_RUNNER`).
fn passes(passed: &ByRunner, runner: &str, name: &str) -> u32 {
    let of = |names: &BTreeMap<String, u32>| names.get(name).copied().unwrap_or(0);
    match runner {
        ANY_RUNNER => passed.values().map(of).sum(),
        r => passed.get(r).map_or(0, of),
    }
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

    /// How many tests (distinct runner and name) the baseline holds.
    pub fn len(&self) -> usize {
        self.tests.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The runners that hold a test named `name`.
    pub fn runners_of(&self, name: &str) -> Vec<&str> {
        self.tests
            .iter()
            .filter(|(_, names)| names.contains_key(name))
            .map(|(r, _)| r.as_str())
            .collect()
    }

    /// The tests that passed in a passing final run join (a count only grows, so a join
    /// never hides a test that went missing).
    pub fn join(&mut self, report: &Report) -> usize {
        let mut joined = 0;
        for (runner, names) in counts(report, |o| o == Outcome::Passed) {
            let held = self.tests.entry(runner).or_default();
            for (name, n) in names {
                let have = held.entry(name).or_insert_with(|| {
                    joined += 1;
                    0
                });
                *have = (*have).max(n);
            }
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
    /// not pass as often as it ran in the baseline, in the same runner; by runner, then
    /// name.
    pub fn missing(&self, report: Option<&Report>) -> Vec<Missing> {
        let passed = report
            .map(|r| counts(r, |o| o == Outcome::Passed))
            .unwrap_or_default();
        let mut out = Vec::new();
        for (runner, names) in &self.tests {
            for (name, &expected) in names {
                if self.accepted.contains_key(name) {
                    continue;
                }
                let passed = passes(&passed, runner, name);
                if passed < expected {
                    out.push(Missing {
                        runner: runner.clone(),
                        name: name.clone(),
                        expected,
                        passed,
                    });
                }
            }
        }
        out
    }

    /// What the baseline holds, in one line: the tests, their runs, and each runner's share.
    pub fn describe(&self) -> String {
        if self.runners.is_empty() {
            return format!(
                "the final check `{}` runs no test runner specrun reads ({}): the baseline is empty, no test is held to still run",
                self.command,
                super::testlog::SUPPORTED
            );
        }
        let runs: u32 = self.tests.values().flat_map(BTreeMap::values).sum();
        let shares: Vec<String> = self
            .runners
            .iter()
            .map(|r| format!("{r}: {}", self.tests.get(r).map_or(0, BTreeMap::len)))
            .collect();
        format!(
            "the baseline holds {} test(s) ({runs} run(s)) of {}, from `{}`",
            self.len(),
            shares.join(", "),
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
                    runner: Some(Runner::Cargo),
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
        assert!(base.is_empty(), "{base:?}");
        let after = report(&[("adds", Passed)]);
        assert_eq!(base.missing(Some(&after)), Vec::new());
        // A test whose name merely holds a slash is a test.
        let base = Baseline::take("node --test", "t", &report(&[("a/b works", Failed)]));
        assert_eq!(base.len(), 1);
    }

    #[test]
    fn a_test_that_no_longer_runs_is_missing_and_a_new_one_joins() {
        use Outcome::*;
        let before = report(&[("a", Passed), ("b", Failed), ("c", Skipped)]);
        let mut base = Baseline::take("cargo test", "t", &before);
        assert_eq!(
            base.tests["cargo-test"].keys().collect::<Vec<_>>(),
            ["a", "b"],
            "a skipped test did not run"
        );
        let honest = report(&[("a", Passed), ("b", Passed), ("n", Passed)]);
        assert!(base.missing(Some(&honest)).is_empty());
        let cheat = report(&[("a", Passed), ("b", Skipped)]);
        let missing = base.missing(Some(&cheat));
        assert_eq!(
            missing.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
            ["`b` (cargo-test)"]
        );
        assert_eq!(
            base.missing(None).len(),
            2,
            "no final run: every test is missing"
        );
        assert_eq!(base.join(&honest), 1);
        assert!(base.tests["cargo-test"].contains_key("n"));
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
        assert_eq!(base.tests["cargo-test"]["tests::works"], 2);
        let one = report(&[("tests::works", Passed)]);
        let missing = base.missing(Some(&one));
        assert_eq!(
            missing[0].to_string(),
            "`tests::works` (cargo-test; passed 1 of the 2 times it ran)"
        );
        let unknown = Baseline::take("make check", "t", &Report::default());
        assert!(unknown.is_empty() && unknown.missing(None).is_empty());
        assert!(
            unknown.describe().contains("the baseline is empty"),
            "{}",
            unknown.describe()
        );
    }

    fn result(name: &str, outcome: Outcome, runner: Option<Runner>) -> TestResult {
        TestResult {
            name: name.into(),
            outcome,
            runner,
        }
    }

    fn of(runners: &[Runner], results: Vec<TestResult>) -> Report {
        Report {
            runners: runners.iter().copied().collect(),
            results,
            ..Report::default()
        }
    }

    #[test]
    fn the_same_name_in_two_runners_is_two_tests_and_neither_stands_in() {
        use Outcome::*;
        use Runner::{Cargo, NodeTest};
        // One run of `cargo test && node --test`: each `(runner, outcome)` names `adds`.
        let run = |results: &[(Runner, Outcome)]| {
            let results = results
                .iter()
                .map(|&(r, o)| result("adds", o, Some(r)))
                .collect();
            of(&[Cargo, NodeTest], results)
        };
        let shown = |base: &Baseline, report: Report| -> Vec<String> {
            let missing = base.missing(Some(&report));
            missing.iter().map(|m| m.to_string()).collect()
        };
        let base = Baseline::take("c", "t", &run(&[(Cargo, Passed), (NodeTest, Failed)]));
        assert_eq!(base.len(), 2);
        assert_eq!(base.runners_of("adds"), ["cargo-test", "node-test"]);
        assert!(base
            .describe()
            .starts_with("the baseline holds 2 test(s) (2 run(s)) of cargo-test: 1, node-test: 1"));
        // Node's `adds` skipped: cargo's pass does not stand in for it.
        let cheat = run(&[(Cargo, Passed), (NodeTest, Skipped)]);
        assert_eq!(shown(&base, cheat), ["`adds` (node-test)"]);
        // Nor the other way round, even with node's passing twice.
        let cheat = run(&[(NodeTest, Passed), (NodeTest, Passed)]);
        assert_eq!(shown(&base, cheat), ["`adds` (cargo-test)"]);
        let honest = run(&[(Cargo, Passed), (NodeTest, Passed)]);
        assert!(shown(&base, honest).is_empty());
        // A name passing in a new runner joins as that runner's test.
        let mut base = base;
        let go = of(
            &[Runner::GoTest],
            vec![result("adds", Passed, Some(Runner::GoTest))],
        );
        assert_eq!(base.join(&go), 1);
        assert_eq!(base.runners_of("adds").len(), 3);
    }

    #[test]
    fn results_and_baselines_from_before_runners_were_kept_still_count() {
        use Outcome::*;
        // A stored result with no runner is its report's only runner's.
        let one = of(&[Runner::Pytest], vec![result("t.py::a", Passed, None)]);
        let base = Baseline::take("pytest", "t", &one);
        assert_eq!(base.tests["pytest"]["t.py::a"], 1);
        // A baseline file as first written (name → count) holds names of any runner.
        let old = r#"{"command":"x","takenAt":"t","runners":["cargo-test","node-test"],"tests":{"adds":2}}"#;
        let base: Baseline = serde_json::from_str(old).unwrap();
        assert_eq!(base.tests[ANY_RUNNER]["adds"], 2);
        let split = of(
            &[Runner::Cargo, Runner::NodeTest],
            vec![
                result("adds", Passed, Some(Runner::Cargo)),
                result("adds", Passed, Some(Runner::NodeTest)),
            ],
        );
        assert!(base.missing(Some(&split)).is_empty());
        let missing = base.missing(Some(&of(&[], vec![])));
        assert_eq!(
            missing[0].to_string(),
            "`adds` (passed 0 of the 2 times it ran)"
        );
        // Written back, it keeps the shape it is read in.
        let again: Baseline = serde_json::from_slice(&serde_json::to_vec(&base).unwrap()).unwrap();
        assert_eq!(again, base);
    }
}
