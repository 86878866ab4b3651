//! Red before, green after (pure): a criterion's tests prove it only when they fail (or do
//! not exist) on the attempt's start commit with the current tests applied, and pass now.
//! This file decides what to run there and how to read what it printed; the run itself (a
//! temporary worktree of the start commit) is `evidence/red_green_run.rs`.
//!
//! The command is the recorded Verify that passed the tests, narrowed to them with the
//! runner's own name filter (`cargo test -- NAME`, `pytest -k`, `go test -run`,
//! `node --test --test-name-pattern`, jest/vitest `-t`). A command whose runner has no name
//! filter here (a script, `npm test`, a pipeline) is run whole, and the finding says so.
//! Either way the tests are judged by name from the output, never by the exit code alone.

use crate::evidence::testlog::{self, Outcome, Report};
use crate::support::shell;

/// A criterion covered by tests that passed now, to be shown red at the start commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Probe {
    pub criterion: String,
    pub text: String,
    pub tests: Vec<String>,
    /// The recorded Verify command whose fresh run passed them.
    pub command: String,
}

/// One run at the start commit: the command and the probes it judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    pub command: String,
    /// `None` when the name filter was applied; else why the command runs whole.
    pub unfiltered: Option<String>,
    pub probes: Vec<Probe>,
}

/// What the run at the start commit showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ran {
    pub exit: i32,
    pub timed_out: bool,
    pub report: Report,
}

/// The runs to make: one per distinct Verify command, filtered to all its probes' tests.
pub(crate) fn plan(probes: &[Probe]) -> Vec<Plan> {
    let mut out: Vec<Plan> = Vec::new();
    for p in probes {
        match out.iter_mut().find(|pl| pl.probes[0].command == p.command) {
            Some(pl) => pl.probes.push(p.clone()),
            None => out.push(Plan {
                command: String::new(),
                unfiltered: None,
                probes: vec![p.clone()],
            }),
        }
    }
    for pl in &mut out {
        let mut tests: Vec<String> = Vec::new();
        for t in pl.probes.iter().flat_map(|p| &p.tests) {
            if !tests.contains(t) {
                tests.push(t.clone());
            }
        }
        let command = pl.probes[0].command.clone();
        match filtered(&command, &tests) {
            Ok(c) => pl.command = c,
            Err(why) => {
                pl.command = command;
                pl.unfiltered = Some(why);
            }
        }
    }
    out
}

/// The test runners whose name filter this file knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Cargo,
    Pytest,
    Go,
    Node,
    Jest,
}

/// `command` narrowed to `tests`, or why it cannot be.
pub(crate) fn filtered(command: &str, tests: &[String]) -> Result<String, String> {
    if command.contains([
        '|', '&', ';', '$', '`', '(', ')', '<', '>', '\n', '\'', '"', '\\',
    ]) {
        return Err("it is not one plain command".into());
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    // `VAR=value` prefixes are kept as they are.
    let env = words.iter().take_while(|w| is_assignment(w)).count();
    let prog = &words[env..];
    let Some(kind) = kind_of(prog) else {
        return Err(format!(
            "`{}` is not a runner whose tests can be selected by name (cargo test, pytest, go test, node --test, jest, vitest)",
            prog.first().copied().unwrap_or("")
        ));
    };
    let names: Vec<String> = tests.iter().map(|t| leaf(kind, t)).collect();
    let has = |flag: &str| {
        prog.iter()
            .any(|w| *w == flag || w.starts_with(&format!("{flag}=")))
    };
    let joined = |sep: &str| {
        names
            .iter()
            .map(|n| regex_escape(n))
            .collect::<Vec<_>>()
            .join(sep)
    };
    let mut out: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    match kind {
        Kind::Cargo => {
            if !prog.contains(&"--") {
                out.push("--".into());
            }
            out.extend(names.iter().map(|n| shell::word(n)));
        }
        Kind::Pytest => {
            if has("-k") {
                return Err("it selects tests with -k already".into());
            }
            if let Some(bad) = names.iter().find(|n| !is_identifier(n)) {
                return Err(format!("{bad:?} is not a name -k can select"));
            }
            out.push("-k".into());
            out.push(shell::word(&names.join(" or ")));
        }
        Kind::Go => {
            if has("-run") {
                return Err("it selects tests with -run already".into());
            }
            out.push("-run".into());
            out.push(shell::word(&format!("^({})$", joined("|"))));
        }
        Kind::Node => {
            if has("--test-name-pattern") {
                return Err("it selects tests with --test-name-pattern already".into());
            }
            // Node's flags go before the files: right after `--test`.
            let at = env + prog.iter().position(|w| *w == "--test").unwrap_or(0) + 1;
            out.insert(
                at,
                shell::word(&format!("--test-name-pattern=^(?:{})$", joined("|"))),
            );
        }
        Kind::Jest => {
            if has("-t") || has("--testNamePattern") {
                return Err("it selects tests by name already".into());
            }
            out.push("-t".into());
            out.push(shell::word(&format!("(?:{})$", joined("|"))));
        }
    }
    Ok(out.join(" "))
}

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn kind_of(prog: &[&str]) -> Option<Kind> {
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    let first = base(prog.first()?);
    let rest = &prog[1..];
    // `npx jest`, `pnpm exec vitest`, `yarn jest`, `bunx vitest`.
    let rest_first = rest.first().map(|w| base(w));
    match first.as_str() {
        "cargo" => {
            let sub = rest.iter().find(|w| !w.starts_with('+'))?;
            (*sub == "test").then_some(Kind::Cargo)
        }
        "pytest" | "py.test" => Some(Kind::Pytest),
        "python" | "python3" => {
            (rest.len() >= 2 && rest[0] == "-m" && rest[1] == "pytest").then_some(Kind::Pytest)
        }
        "go" => (rest.first() == Some(&"test")).then_some(Kind::Go),
        "node" => rest.contains(&"--test").then_some(Kind::Node),
        "jest" | "vitest" => Some(Kind::Jest),
        "npx" | "bunx" | "yarn" | "pnpm" => {
            let r = if first == "pnpm" && rest_first.as_deref() == Some("exec") {
                rest.get(1).map(|w| base(w))
            } else {
                rest_first
            };
            matches!(r.as_deref(), Some("jest" | "vitest")).then_some(Kind::Jest)
        }
        _ => None,
    }
}

/// The part of a recorded name the runner's filter sees: pytest and go select by the test
/// function's own name, the JS runners by the test's title (the last scope).
fn leaf(kind: Kind, name: &str) -> String {
    match kind {
        Kind::Cargo => name.to_string(),
        Kind::Pytest => {
            let last = name.rsplit("::").next().unwrap_or(name);
            last.split('[').next().unwrap_or(last).to_string()
        }
        Kind::Go => name.split('/').next().unwrap_or(name).to_string(),
        Kind::Node | Kind::Jest => {
            let mut last = name;
            for sep in [" > ", " › "] {
                if let Some((_, l)) = last.rsplit_once(sep) {
                    last = l;
                }
            }
            last.to_string()
        }
    }
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !matches!(s, "and" | "or" | "not")
}

fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// How one mapped test stood at the start commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Before {
    /// Failed, skipped or absent: red, as it should be.
    Red,
    /// Passed without the change: it proves nothing for the criterion.
    Passed,
    /// The run told nothing (no recognised results, exit 0): not shown red.
    Unknown,
}

/// The state of `test` in the run at the start commit.
pub(crate) fn before(ran: &Ran, test: &str) -> Before {
    if ran.timed_out {
        return Before::Unknown;
    }
    let outcome = ran
        .report
        .results
        .iter()
        .filter(|r| testlog::name_matches(&r.name, test))
        .map(|r| r.outcome)
        .max();
    match outcome {
        Some(Outcome::Passed) => Before::Passed,
        Some(_) => Before::Red,
        // Absent from a run that printed results, or a build that failed: the test does not
        // exist (or compile) without the change.
        None if !ran.report.runners.is_empty() || ran.exit != 0 => Before::Red,
        None => Before::Unknown,
    }
}

/// The findings of one plan's run: one line per criterion not shown red, naming it, the
/// run at the start commit (command, exit) and the test that passed there.
pub(crate) fn judge(plan: &Plan, ran: &Ran, start: &str) -> Vec<String> {
    let mut out = Vec::new();
    let whole = plan
        .unfiltered
        .as_ref()
        .map(|why| format!(" (run whole, without a name filter: {why})"))
        .unwrap_or_default();
    for p in &plan.probes {
        let mut passed = Vec::new();
        let mut unknown = false;
        for t in &p.tests {
            match before(ran, t) {
                Before::Passed => passed.push(t.as_str()),
                Before::Unknown => unknown = true,
                Before::Red => {}
            }
        }
        let run = format!(
            "at the start commit {start} with the current tests, `{}`{whole} {}",
            plan.command,
            if ran.timed_out {
                "timed out".to_string()
            } else {
                format!("exited {}", ran.exit)
            }
        );
        if !passed.is_empty() {
            out.push(format!(
                "{} ({}) is not shown red before the change: {run} and its test {} passed there. A test that passes without the change proves nothing for it: make the mapped test exercise what the task changes (it must fail at the start commit and pass now)",
                p.criterion,
                p.text,
                passed.join(", ")
            ));
        } else if unknown {
            out.push(format!(
                "{} ({}) is not shown red before the change: {run} and reported no test results, so its test {} cannot be shown to fail without the change",
                p.criterion,
                p.text,
                p.tests.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::testlog::parse;

    fn probe(id: &str, command: &str, tests: &[&str]) -> Probe {
        Probe {
            criterion: id.into(),
            text: "adds".into(),
            tests: tests.iter().map(|t| t.to_string()).collect(),
            command: command.into(),
        }
    }

    fn t(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn each_runner_gets_its_own_name_filter() {
        let f = |c: &str, n: &[&str]| filtered(c, &t(n)).unwrap();
        assert_eq!(
            f("cargo test", &["tests::adds"]),
            "cargo test -- tests::adds"
        );
        assert_eq!(
            f("cargo test --test api -- --nocapture", &["adds", "subs"]),
            "cargo test --test api -- --nocapture adds subs"
        );
        assert_eq!(
            f(
                "python -m pytest -v",
                &["test_x.py::test_adds[1]", "test_subs"]
            ),
            "python -m pytest -v -k 'test_adds or test_subs'"
        );
        assert_eq!(
            f("go test -v ./...", &["TestAdd/one", "TestSub"]),
            "go test -v ./... -run '^(TestAdd|TestSub)$'"
        );
        assert_eq!(
            f("node --test test/", &["math > adds two"]),
            "node --test '--test-name-pattern=^(?:adds two)$' test/"
        );
        assert_eq!(
            f("npx jest --verbose", &["sum › adds (1+1)"]),
            "npx jest --verbose -t '(?:adds \\(1\\+1\\))$'"
        );
        assert_eq!(
            f("CI=1 vitest run", &["adds"]),
            "CI=1 vitest run -t '(?:adds)$'"
        );
    }

    #[test]
    fn a_command_without_a_name_filter_runs_whole_and_says_why() {
        for (c, why) in [
            ("npm test", "`npm` is not a runner"),
            ("cargo test && cargo clippy", "not one plain command"),
            ("pytest -k adds", "-k already"),
            ("go test -run X ./...", "-run already"),
        ] {
            let plans = plan(&[probe("1.1/AC1", c, &["adds"])]);
            assert_eq!(plans[0].command, c);
            let got = plans[0].unfiltered.as_deref().unwrap();
            assert!(got.contains(why), "{c}: {got}");
        }
        assert!(filtered("pytest", &t(&["not a name"])).is_err());
    }

    #[test]
    fn one_run_per_command_for_all_its_probes() {
        let plans = plan(&[
            probe("1.1/AC1", "cargo test", &["a"]),
            probe("1.1/AC2", "cargo test", &["b", "a"]),
            probe("1.1/AC3", "pytest -v", &["test_c"]),
        ]);
        assert_eq!(plans.len(), 2);
        assert_eq!(plans[0].command, "cargo test -- a b");
        assert_eq!(plans[0].probes.len(), 2);
        assert_eq!(plans[1].command, "pytest -v -k test_c");
    }

    #[test]
    fn a_test_passing_at_the_start_is_named_with_the_run() {
        let plans = plan(&[
            probe("1.1/AC1", "cargo test", &["tests::adds"]),
            probe("1.1/AC2", "cargo test", &["tests::subs"]),
        ]);
        let ran = Ran {
            exit: 101,
            timed_out: false,
            report: parse("test tests::adds ... ok\ntest tests::subs ... FAILED\n"),
        };
        let found = judge(&plans[0], &ran, "abc1234");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("1.1/AC1 (adds) is not shown red"));
        assert!(found[0].contains("abc1234"));
        assert!(found[0].contains("`cargo test -- tests::adds tests::subs` exited 101"));
        assert!(found[0].contains("its test tests::adds passed"));
    }

    #[test]
    fn absent_failing_or_not_compiling_is_red() {
        let results = Ran {
            exit: 0,
            timed_out: false,
            report: parse("test other ... ok\n"),
        };
        assert_eq!(before(&results, "adds"), Before::Red);
        let build_failed = Ran {
            exit: 101,
            timed_out: false,
            report: Report::default(),
        };
        assert_eq!(before(&build_failed, "adds"), Before::Red);
        let silent = Ran {
            exit: 0,
            timed_out: false,
            report: Report::default(),
        };
        assert_eq!(before(&silent, "adds"), Before::Unknown);
        let plans = plan(&[probe("AC-1", "npm test", &["adds"])]);
        let found = judge(&plans[0], &silent, "abc1234");
        assert!(
            found[0].contains("run whole, without a name filter"),
            "{found:?}"
        );
        assert!(found[0].contains("reported no test results"));
        let timed_out = Ran {
            timed_out: true,
            ..results
        };
        assert_eq!(before(&timed_out, "adds"), Before::Unknown);
    }
}
