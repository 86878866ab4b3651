//! The baseline on disk (`evidence::baseline`): `test-results/baseline.json` beside the
//! other results (thousands of names stay out of the state every hook rewrites), its
//! SHA-256 in the state's `testBaseline`, which only specrun's verbs write: a file edited,
//! replaced or removed since no longer matches and is itself a finding.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::evidence::baseline::Baseline;
use crate::evidence::criteria;
use crate::evidence::testlog::Report;
use crate::evidence::verify::Slot;
use crate::io::project::Spec;
use crate::io::{output, store};
use crate::model::state::State;

fn path(spec: &Spec) -> PathBuf {
    spec.dir
        .join(crate::io::project::TEST_RESULTS_DIR)
        .join("baseline.json")
}

/// The state's `testBaseline`: the file's digest and what it holds in brief.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Kept<'a> {
    digest: String,
    command: &'a str,
    taken_at: &'a str,
    runners: &'a [String],
    tests: usize,
}

/// Write `base` and return the `testBaseline` the state keeps for it.
pub(crate) fn write(spec: &Spec, base: &Baseline) -> Result<Value> {
    let file = path(spec);
    let bytes = serde_json::to_vec(base).expect("a baseline serializes");
    if let Some(dir) = file.parent() {
        store::ensure_dir(dir)?;
    }
    store::write_atomic(&file, &bytes)?;
    let kept = Kept {
        digest: crate::support::sha256::hex(&bytes),
        command: &base.command,
        taken_at: &base.taken_at,
        runners: &base.runners,
        tests: base.len(),
    };
    Ok(serde_json::to_value(kept).expect("a summary serializes"))
}

/// The baseline the state vouches for: `Ok(None)` for a state without one (an execution
/// from before baselines), `Err` with why when the file does not match its digest.
pub(crate) fn read(spec: &Spec, state: &State) -> std::result::Result<Option<Baseline>, String> {
    let Some(kept) = &state.test_baseline else {
        return Ok(None);
    };
    let digest = kept.get("digest").and_then(Value::as_str).unwrap_or("");
    let file = path(spec);
    let bytes = match store::read_optional(&file) {
        Ok(Some(b)) => b,
        Ok(None) => return Err(format!("{} is missing", file.display())),
        Err(e) => return Err(e.to_string()),
    };
    if crate::support::sha256::hex(&bytes) != digest {
        return Err(format!(
            "{} no longer matches the digest state init recorded (it was edited)",
            file.display()
        ));
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| format!("{} does not read ({e})", file.display()))
}

/// Record which tests one run of the final check (`report`, begun `at`) ran: the
/// baseline, taken as the execution starts. Its exit code does not matter (tests may be
/// red before the work).
pub(crate) fn take(spec: &Spec, command: &str, at: &str, report: &Report) -> Result<Value> {
    let base = Baseline::take(command, at, report);
    output::note(&base.describe());
    write(spec, &base)
}

/// After a passing run of the final check in the execution slot: the tests it passed
/// join the baseline. Returns the new `testBaseline`, or `None` when there is nothing to
/// join (no baseline, or one that does not match its digest: that stays a finding).
pub(crate) fn join(
    spec: &Spec,
    state: &State,
    report: &crate::evidence::testlog::Report,
) -> Option<Value> {
    let mut base = read(spec, state).ok()??;
    let joined = base.join(report);
    if joined > 0 {
        output::note(&format!(
            "{joined} new test(s) joined the baseline of tests that must still run"
        ));
    }
    match write(spec, &base) {
        Ok(kept) => Some(kept),
        Err(e) => {
            output::warn(&format!("the baseline was not updated: {e}"));
            None
        }
    }
}

/// The completion gate's baseline facts: each baseline test the execution slot's final
/// run did not run and pass, described; a baseline that does not read is one line.
pub(crate) fn missing(spec: &Spec, state: &State) -> Vec<String> {
    let base = match read(spec, state) {
        Ok(Some(b)) => b,
        Ok(None) => return Vec::new(),
        Err(why) => return vec![format!("the baseline of tests cannot be trusted: {why}")],
    };
    let slot = Slot::Phase("execution".into());
    let report = slot
        .record_of(state)
        .and_then(|r| criteria::read_results(spec, &slot, r));
    base.missing(report.as_ref())
        .iter()
        .map(|m| m.to_string())
        .collect()
}

/// A person accepts that `names` (baseline tests) no longer run, for `reason`.
pub(crate) fn accept(spec: &Spec, state: &State, names: &[String], reason: &str) -> Result<Value> {
    let refused = |message: String| Error::Refused { message };
    let mut base = read(spec, state).map_err(refused)?.ok_or_else(|| {
        refused("this execution has no baseline of tests (it began before baselines)".into())
    })?;
    for name in names {
        let runners = base.runners_of(name);
        if runners.is_empty() {
            return Err(refused(format!("`{name}` is not a test of the baseline")));
        }
        // A name is accepted in every runner that holds it: say which, so a person sees it.
        if runners.len() > 1 {
            output::note(&format!(
                "`{name}` is a baseline test of {}: accepted in each",
                runners.join(", ")
            ));
        }
        base.accepted.insert(name.clone(), reason.to_string());
    }
    write(spec, &base)
}
