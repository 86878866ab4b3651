//! Claims against evidence (pure): an executor's final message is read for claims — tests
//! pass, N tests passed, lint/clippy/ruff clean, builds, type-checks — and each is checked
//! against the verify runs recorded at the current fingerprint. A claim nothing supports is
//! quoted back with what evidence is missing.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::evidence::program::{self, Invocation};
use crate::hooks::decision::{Decision, Outcome, SubagentInput};
use crate::model::state::{Patch, State};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub(crate) enum Kind {
    Tests,
    TestCount { n: u64 },
    Lint { tool: Option<String> },
    Build,
    TypeCheck,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Claim {
    #[serde(flatten)]
    pub kind: Kind,
    /// The sentence that makes the claim.
    pub quote: String,
}

/// One recorded verify run that passed on the current code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FreshRun {
    pub slot: String,
    pub command: String,
    /// (passed, failed) test counts, when the output named tests.
    pub tests: Option<(u64, u64)>,
}

/// A claim no fresh run supports, with what is missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Unsupported {
    pub quote: String,
    pub missing: String,
}

const LINT_TOOLS: &[&str] = &[
    "clippy",
    "ruff",
    "eslint",
    "flake8",
    "pylint",
    "golangci-lint",
    "biome",
];

fn sentences(message: &str) -> impl Iterator<Item = &str> {
    message
        .split(['\n', ';'])
        .flat_map(|l| l.split(". "))
        .map(|s| s.trim().trim_start_matches(['-', '*', '•', ' ']).trim())
        .filter(|s| !s.is_empty())
}

fn negated(lower: &str) -> bool {
    [" not ", "n't ", "never ", " no longer", "cannot ", "unable"]
        .iter()
        .any(|n| lower.contains(n))
        || lower.starts_with("not ")
}

/// The claims a message makes, in order, at most one of each kind per sentence.
pub(crate) fn extract(message: &str) -> Vec<Claim> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in message.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for s in sentences(line) {
            let lower = s.to_lowercase();
            if negated(&lower) {
                continue;
            }
            let quote = clip(s);
            for kind in kinds_in(&lower) {
                out.push(Claim {
                    kind,
                    quote: quote.clone(),
                });
            }
        }
    }
    out
}

fn kinds_in(lower: &str) -> Vec<Kind> {
    let mut kinds = Vec::new();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if let Some(n) = count_claim(lower) {
        kinds.push(Kind::TestCount { n });
    } else if has(TESTS_PASS) {
        kinds.push(Kind::Tests);
    }
    let tool = LINT_TOOLS.iter().find(|t| lower.contains(**t));
    if (tool.is_some() || has(&["lint", "linter"])) && has(PASSING) {
        kinds.push(Kind::Lint {
            tool: tool.map(|t| t.to_string()),
        });
    }
    if has(BUILDS) {
        kinds.push(Kind::Build);
    }
    if has(TYPE_CHECKS) && has(PASSING) {
        kinds.push(Kind::TypeCheck);
    }
    kinds
}

/// Words that make a lint or type-check mention a claim of success.
const PASSING: &[&str] = &[
    "pass",
    "green",
    "succeed",
    "success",
    "clean",
    "ok",
    "no errors",
    "no warnings",
    "all checks",
];
/// Phrases that claim the tests pass.
const TESTS_PASS: &[&str] = &[
    "tests pass",
    "tests passed",
    "tests are passing",
    "tests now pass",
    "all tests",
    "test suite passes",
    "tests are green",
    "tests succeed",
    "test suite is green",
    "tests all pass",
];
/// Phrases that claim a build.
const BUILDS: &[&str] = &[
    "builds",
    "build succeeds",
    "build passes",
    "build is green",
    "compiles",
    "compiled successfully",
    "build ok",
    "builds cleanly",
    "build succeeded",
];
/// Words that name a type check.
const TYPE_CHECKS: &[&str] = &[
    "type-check",
    "typecheck",
    "type check",
    "tsc ",
    "mypy",
    "pyright",
];

/// `38 tests passed`, `12/12 tests passing`, `all 7 tests pass`, `5 passed`.
fn count_claim(lower: &str) -> Option<u64> {
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')' || c == ':')
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        let num = w.split('/').next().unwrap_or(w);
        let Ok(n) = num.parse::<u64>() else { continue };
        let next: Vec<&str> = words.iter().skip(i + 1).take(3).copied().collect();
        let says_pass = next.iter().any(|x| x.starts_with("pass"));
        let says_test = next.iter().take(2).any(|x| x.starts_with("test"))
            || next.first().is_some_and(|x| x.starts_with("pass"));
        if says_pass && says_test {
            return Some(n);
        }
    }
    None
}

fn clip(s: &str) -> String {
    crate::support::chars::clip(s, 160, "...")
}

/// Whether a run's programs (`evidence::program`, past `env`, `timeout`, `sh -c`, …) include
/// one `accepts`: a claim needs a run of the program it names, not a command whose text
/// mentions it (`echo clippy`).
fn ran(run: &FreshRun, accepts: impl Fn(&Invocation) -> bool) -> bool {
    program::invocations(&run.command, &|_| None)
        .iter()
        .any(accepts)
}

/// A test runner, or a project's test target (`npm test`, `make test`, `just test`).
fn is_test_run(inv: &Invocation) -> bool {
    program::runner_of(inv).is_some()
        || program::script_name(inv).is_some_and(|s| s.starts_with("test"))
}

/// The linters a claim may name, each with how its run is recognised.
fn is_lint_run(inv: &Invocation, tool: Option<&str>) -> bool {
    let name = inv.name();
    let module = python_module(inv);
    let is = |t: &str| match t {
        "clippy" => name == "cargo clippy" || inv.program == "cargo-clippy",
        t => inv.program == t || module.as_deref() == Some(t),
    };
    match tool {
        Some(t) => is(t),
        None => {
            LINT_TOOLS.iter().any(|t| is(t))
                || program::script_name(inv).is_some_and(|s| s.contains("lint"))
        }
    }
}

/// `python -m NAME`'s NAME.
fn python_module(inv: &Invocation) -> Option<String> {
    if !inv.program.starts_with("python") {
        return None;
    }
    let at = inv.args.iter().position(|a| a == "-m")?;
    inv.args.get(at + 1).cloned()
}

fn is_build_run(inv: &Invocation) -> bool {
    BUILD_COMMANDS.contains(&inv.name().as_str())
        || BUILD_PROGRAMS.contains(&inv.program.as_str())
        || program::script_name(inv).is_some_and(|s| s.contains("build") || s.contains("compile"))
}

fn is_type_check_run(inv: &Invocation) -> bool {
    TYPE_CHECK_COMMANDS.contains(&inv.name().as_str())
        || TYPE_CHECK_PROGRAMS.contains(&inv.program.as_str())
        || python_module(inv).is_some_and(|m| TYPE_CHECK_PROGRAMS.contains(&m.as_str()))
        || program::script_name(inv)
            .is_some_and(|s| s.contains("typecheck") || s.contains("type-check") || s == "tsc")
}

/// What evidence is missing for `claim`, or `None` when a fresh run supports it.
pub(crate) fn missing_for(claim: &Claim, runs: &[FreshRun], verify_hint: &str) -> Option<String> {
    let any_run = |accepts: &dyn Fn(&Invocation) -> bool| runs.iter().any(|r| ran(r, accepts));
    match &claim.kind {
        Kind::Tests => {
            let ok = runs.iter().any(|r| match r.tests {
                Some((p, f)) => p > 0 && f == 0,
                None => ran(r, is_test_run),
            });
            (!ok).then(|| format!("no passing test run is recorded at the current code: `{verify_hint}` with the test command"))
        }
        Kind::TestCount { n } => {
            let counts: Vec<String> = runs
                .iter()
                .filter_map(|r| r.tests.map(|(p, f)| (r, p, f)))
                .map(|(r, p, f)| format!("{}: {p} passed, {f} failed", r.slot))
                .collect();
            let ok = runs
                .iter()
                .any(|r| r.tests.is_some_and(|(p, f)| p == *n && f == 0));
            (!ok).then(|| {
                format!(
                    "no run at the current code reported {n} passed tests ({}): `{verify_hint}` with the test command",
                    if counts.is_empty() { "no fresh run named tests".to_string() } else { counts.join("; ") }
                )
            })
        }
        Kind::Lint { tool } => {
            let name = tool.as_deref().unwrap_or("a linter");
            (!any_run(&|i| is_lint_run(i, tool.as_deref()))).then(|| format!("no passing {name} run is recorded at the current code: `{verify_hint}` with the {name} command"))
        }
        Kind::Build => (!any_run(&is_build_run)).then(|| format!("no passing build is recorded at the current code: `{verify_hint}` with the build command")),
        Kind::TypeCheck => (!any_run(&is_type_check_run)).then(|| format!("no passing type check is recorded at the current code: `{verify_hint}` with the type-check command")),
    }
}

/// Programs and subcommands whose passing run shows the code builds.
const BUILD_COMMANDS: &[&str] = &[
    "cargo build",
    "cargo check",
    "cargo test",
    "cargo clippy",
    "cargo nextest",
    "go build",
    "go test",
    "go vet",
    "dotnet build",
    "dotnet test",
];
const BUILD_PROGRAMS: &[&str] = &[
    "make", "tsc", "ninja", "cmake", "gradle", "mvn", "javac", "gcc", "cc", "clang", "rustc",
];
/// Programs and subcommands whose passing run shows the code type-checks.
const TYPE_CHECK_COMMANDS: &[&str] = &[
    "cargo check",
    "cargo build",
    "cargo test",
    "cargo clippy",
    "cargo nextest",
    "go build",
    "go vet",
    "go test",
];
const TYPE_CHECK_PROGRAMS: &[&str] = &["tsc", "mypy", "pyright", "vue-tsc"];

/// Every claim of `message` without support, each once.
pub(crate) fn unsupported(message: &str, runs: &[FreshRun], verify_hint: &str) -> Vec<Unsupported> {
    let mut out: Vec<Unsupported> = Vec::new();
    for c in extract(message) {
        if let Some(missing) = missing_for(&c, runs, verify_hint) {
            if !out
                .iter()
                .any(|u| u.quote == c.quote && u.missing == missing)
            {
                out.push(Unsupported {
                    quote: c.quote,
                    missing,
                });
            }
        }
    }
    out
}

/// The lines a refusal lists for unsupported claims.
pub(crate) fn describe(items: &[Unsupported]) -> Vec<String> {
    items
        .iter()
        .map(|u| {
            format!(
                "claim \"{}\" has no evidence at the current code: {}",
                u.quote, u.missing
            )
        })
        .collect()
}

/// One entry of the state's `unverifiedClaims`: what an executor still claimed unsupported
/// after its one re-prompt, kept for the coordinator (completion waits while it is open).
/// A task claim (`TASK_COMPLETE <id>`) names its task; claims in prose list them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UnverifiedClaim<'a> {
    pub task_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claims: Option<&'a [Unsupported]>,
    pub missing: &'a [String],
    pub at: String,
    pub agent_id: Option<&'a str>,
}

/// The patch that adds `entry` to the state's `unverifiedClaims` (the ones there stay).
pub(crate) fn record_unverified(state: &State, entry: &UnverifiedClaim<'_>) -> Patch {
    let mut kept = state.unverified_claims.clone().unwrap_or_default();
    kept.push(crate::hooks::decision::record(entry));
    Patch::new().unverified_claims(&kept)
}

/// SubagentStop of an executor whose message claims things no fresh run supports (and
/// claims no task): re-prompt once, then let it end and keep the claims for the coordinator.
pub(crate) fn decide(
    spec: &str,
    items: &[Unsupported],
    input: &SubagentInput<'_>,
    state: &State,
    now: DateTime<Utc>,
) -> Outcome {
    let lines = describe(items);
    let (decision, rule, patch) = if input.stop_hook_active {
        let entry = UnverifiedClaim {
            task_id: None,
            claims: Some(items),
            missing: &lines,
            at: crate::model::state::time::format_secs(now),
            agent_id: input.agent_id,
        };
        let m = format!(
            "specrun: the executor's final message makes {} claim(s) no recorded evidence supports; recorded in unverifiedClaims for the coordinator.",
            items.len()
        );
        (
            Decision::Allow(Some(m)),
            "claim-unverified",
            record_unverified(state, &entry).to_value(),
        )
    } else {
        let r = crate::hooks::decision::refusal(
            "Your final message claims what no verify run at the current code shows:".into(),
            lines.iter().map(String::as_str),
            "Record the evidence with `specrun verify run`, or correct the message, then end again.",
        );
        (
            Decision::Block(r),
            "claim-refused",
            crate::hooks::decision::no_patch(),
        )
    };
    let event = crate::hooks::decision::record(&Record {
        spec,
        decision: decision.name(),
        rule,
        agent_id: input.agent_id,
        unsupported_claims: items,
        stop_hook_active: input.stop_hook_active,
    });
    Outcome::new(decision, rule, patch, event)
}

/// An unsupported-claims SubagentStop's fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    spec: &'a str,
    decision: &'static str,
    rule: &'a str,
    agent_id: Option<&'a str>,
    unsupported_claims: &'a [Unsupported],
    stop_hook_active: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(m: &str) -> Vec<Kind> {
        extract(m).into_iter().map(|c| c.kind).collect()
    }

    #[test]
    fn claims_are_found_in_prose_not_in_code_or_negations() {
        assert_eq!(kinds("All tests pass."), [Kind::Tests]);
        assert_eq!(
            kinds("38 tests passed, clippy clean"),
            [
                Kind::TestCount { n: 38 },
                Kind::Lint {
                    tool: Some("clippy".into())
                }
            ]
        );
        assert_eq!(
            kinds("ruff: All checks passed!"),
            [Kind::Lint {
                tool: Some("ruff".into())
            }]
        );
        assert_eq!(
            kinds("The crate builds and type-checks cleanly"),
            [Kind::Build, Kind::TypeCheck]
        );
        assert_eq!(kinds("12/12 tests passing"), [Kind::TestCount { n: 12 }]);
        assert!(kinds("Tests do not pass yet").is_empty());
        assert!(kinds("```\nall tests pass\n```\nDone.").is_empty());
        assert!(kinds("TASK_COMPLETE 1.2").is_empty());
    }

    fn run(cmd: &str, tests: Option<(u64, u64)>) -> FreshRun {
        FreshRun {
            slot: "taskEvidence[1]".into(),
            command: cmd.into(),
            tests,
        }
    }

    #[test]
    fn each_claim_needs_its_own_evidence() {
        let runs = [run("cargo test", Some((12, 0)))];
        let msg = "All 12 tests pass. Clippy is clean. It builds.";
        let u = unsupported(msg, &runs, "specrun verify run --task 1");
        assert_eq!(u.len(), 1, "{u:?}");
        assert!(u[0].quote.contains("Clippy"));
        assert!(u[0].missing.contains("clippy"));
        let wrong_count = unsupported("40 tests passed", &runs, "x");
        assert!(
            wrong_count[0].missing.contains("12 passed"),
            "{wrong_count:?}"
        );
        assert_eq!(unsupported("all tests pass", &[], "x").len(), 1);
        // Issue 24: a claim needs a run of the program it names, not a command whose text
        // names it, nor runner-shaped lines an `echo` printed.
        let echo = [run(
            "echo 'test result: ok. 3 passed' # cargo clippy build tsc",
            None,
        )];
        let u = unsupported(
            "All tests pass and cargo clippy is clean. It builds. Type-checks clean with tsc",
            &echo,
            "x",
        );
        assert_eq!(u.len(), 4, "{u:?}");
        let real = [
            run("cargo clippy --all-targets -- -D warnings", None),
            run("timeout 600 cargo test --locked", Some((3, 0))),
            run("sh -c 'npx tsc --noEmit'", None),
        ];
        assert!(unsupported(
            "All 3 tests passed and cargo clippy is clean. It builds. Type-checks clean with tsc",
            &real,
            "x"
        )
        .is_empty());
        assert!(unsupported("all tests pass", &[run("npm test", None)], "x").is_empty());
        assert!(unsupported("eslint is clean", &[run("npm run lint", None)], "x").len() == 1);
        assert!(unsupported("lint is clean", &[run("npm run lint", None)], "x").is_empty());
        assert!(unsupported("all tests pass", &[run("cargo test", Some((3, 1)))], "x").len() == 1);
    }
}
