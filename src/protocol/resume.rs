//! `resume`: clear a halt (a cap halt only with the raise that lifts it), undo a cancel,
//! or update the caps and session of a running execution.

use serde::Deserialize;

use super::{decide, resume_command, Transition, Unmet};
use crate::model::state::{self, Patch, Phase, State};

/// `resume`'s cap raises: the type its events line records, so the two cannot drift.
pub use crate::io::events::Raises;

fn any(raises: &Raises) -> bool {
    raises.global.is_some()
        || raises.usd.is_some()
        || raises.task.is_some()
        || raises.tokens.is_some()
        || raises.minutes.is_some()
}

/// `usd_spent`: the priced spend a `--raise-usd` must exceed (0 without prices).
pub fn resume(
    state: &State,
    raises: Raises,
    usd_spent: f64,
    session_id: Option<&str>,
    now: &str,
) -> Result<Transition, Vec<Unmet>> {
    decide(unmet(state, &raises, usd_spent, session_id, now), || {
        apply(state, &raises, session_id)
    })
}

fn unmet(
    state: &State,
    raises: &Raises,
    usd_spent: f64,
    session_id: Option<&str>,
    now: &str,
) -> Vec<Unmet> {
    let spec = state.name().unwrap_or("<spec>");
    let mut unmet = Vec::new();
    if state.phase() == Some(Phase::Completed) || state.completed() {
        unmet.push(Unmet::new(
            "not-completed",
            "the execution is completed; there is nothing to resume",
        ));
    }
    unmet.extend(raises_too_low(state, raises, usd_spent, now));
    if let Some((false, flag)) = needed_raise(state, raises) {
        unmet.push(Unmet::new(
            "raise",
            format!(
                "the execution halted on a cap ({}); clearing it needs {flag}: `{}`",
                state.halt_kind().unwrap_or(""),
                resume_command(state, None)
            ),
        ));
    }
    let asked = any(raises) || session_id.is_some();
    if state.halt().is_none() && !asked && unmet.is_empty() {
        unmet.push(Unmet::new(
            "halted",
            format!("{spec} is not halted; nothing to resume"),
        ));
    }
    unmet
}

/// Each raise must lift its cap above what is already used, or the guard halts at once.
fn raises_too_low(view: &State, raises: &Raises, usd_spent: f64, now: &str) -> Vec<Unmet> {
    // Counted as the guard counts: a missing or bad startedAt does not make it 0.
    let minutes_used = state::time::parse(now)
        .map(|n| view.minutes_since(n).0)
        .unwrap_or(0);
    let checks: [(Option<u64>, u64, &str, &str); 4] = [
        (
            raises.global,
            view.global_iteration(),
            "--raise-global",
            "global iterations used",
        ),
        (
            raises.task,
            view.task_iteration(),
            "--raise-task",
            "iterations of the current task used",
        ),
        (
            raises.tokens,
            view.output_tokens(),
            "--raise-tokens",
            "output tokens used",
        ),
        (
            raises.minutes,
            minutes_used,
            "--raise-minutes",
            "minutes elapsed",
        ),
    ];
    let mut unmet: Vec<Unmet> = checks
        .into_iter()
        .filter_map(|(value, used, flag, what)| {
            let v = value.filter(|v| *v <= used)?;
            Some(Unmet::new(
                "raise",
                format!("{flag} {v} does not lift the cap: {used} {what}; give more than {used}"),
            ))
        })
        .collect();
    if let Some(v) = raises.usd.filter(|v| *v <= usd_spent) {
        unmet.push(Unmet::new(
            "raise",
            format!(
                "--raise-usd {v} does not lift the cap: ${usd_spent:.2} spent; give more than that"
            ),
        ));
    }
    unmet
}

/// The raise a cap halt needs: (given, its flag). A forecast halt names its flag.
fn needed_raise(view: &State, raises: &Raises) -> Option<(bool, &'static str)> {
    let flag = match view.halt_kind()? {
        state::HALT_GLOBAL => "--raise-global",
        state::HALT_TASK => "--raise-task",
        state::HALT_TOKENS => "--raise-tokens",
        state::HALT_MINUTES => "--raise-minutes",
        state::HALT_USD => "--raise-usd",
        state::HALT_FORECAST => match view.halt()?.other.get("raiseFlag")?.as_str()? {
            "--raise-tokens" => "--raise-tokens",
            "--raise-minutes" => "--raise-minutes",
            "--raise-usd" => "--raise-usd",
            _ => return None,
        },
        _ => return None,
    };
    let given = match flag {
        "--raise-global" => raises.global.is_some(),
        "--raise-task" => raises.task.is_some(),
        "--raise-tokens" => raises.tokens.is_some(),
        "--raise-minutes" => raises.minutes.is_some(),
        _ => raises.usd.is_some(),
    };
    Some((given, flag))
}

fn apply(state: &State, raises: &Raises, session_id: Option<&str>) -> Transition {
    let spec = state.name().unwrap_or("<spec>");
    let kind = state.halt_kind();
    let mut patch = Patch::new().stall_stops(0);
    if state.halt().is_some() {
        patch = patch.halt(None);
    }
    if kind == Some(state::HALT_CANCELLED) || state.phase() == Some(Phase::Cancelled) {
        patch = patch.phase(phase_before_cancel(state));
    }
    patch = raise_patch(raises, patch);
    if let Some(s) = session_id {
        patch = patch.session_id(Some(s));
    }
    let cont = match session_id.or(state.session_id()) {
        Some(s) => format!(
            "claude --resume {s} \"/specrun:implement\" (or /specrun:implement inside Claude Code)"
        ),
        None => "/specrun:implement inside Claude Code".to_string(),
    };
    let what = match kind {
        Some(k) => format!("{spec}: halt ({k}) cleared"),
        None => format!("{spec}: not halted; settings updated"),
    };
    Transition {
        patch: Some(patch),
        message: format!("{what}; continue with: {cont}"),
        changed: true,
        ..Default::default()
    }
}

/// The phase a cancel interrupted (`halt.phaseBefore`): a cancelled plan resumes as a
/// plan, not as an execution that skips approval. Execution when unknown.
fn phase_before_cancel(state: &State) -> Phase {
    let before = state.halt().and_then(|h| h.other.get("phaseBefore"));
    match before.and_then(|p| Phase::deserialize(p).ok()) {
        Some(Phase::Cancelled | Phase::Completed) | None => Phase::Execution,
        Some(p) => p,
    }
}

/// The new caps.
fn raise_patch(raises: &Raises, mut patch: Patch) -> Patch {
    if let Some(v) = raises.global {
        patch = patch.max_global_iterations(v);
    }
    if let Some(v) = raises.task {
        patch = patch.max_task_iterations(v);
    }
    if let Some(v) = raises.tokens {
        patch = patch.max_output_tokens(Some(v));
    }
    if let Some(v) = raises.minutes {
        patch = patch.max_minutes(Some(v));
    }
    if let Some(v) = raises.usd {
        patch = patch.max_usd(Some(v));
    }
    patch
}
#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn resume_requires_the_right_raise() {
        let mut s = exec_state();
        assert_eq!(
            names(&resume(&typed(&s), Raises::default(), 0.0, None, NOW).unwrap_err()),
            ["halted"]
        );
        s["halt"] = json!({"kind": state::HALT_TASK, "reason": "r"});
        s["taskIteration"] = json!(2);
        let err = resume(&typed(&s), Raises::default(), 0.0, None, NOW).unwrap_err();
        assert!(err[0].detail.contains("--raise-task"), "{}", err[0]);
        let err = resume(
            &typed(&s),
            Raises {
                task: Some(2),
                ..Default::default()
            },
            0.0,
            None,
            NOW,
        )
        .unwrap_err();
        assert!(err[0].detail.contains("does not lift"), "{}", err[0]);
        let out = resume(
            &typed(&s),
            Raises {
                task: Some(4),
                ..Default::default()
            },
            0.0,
            Some("sess"),
            NOW,
        )
        .unwrap();
        let s2 = after(&s, &out);
        assert!(s2["halt"].is_null());
        assert_eq!(
            (s2["maxTaskIterations"].as_u64(), s2["sessionId"].as_str()),
            (Some(4), Some("sess"))
        );
        assert_eq!(s2["guard"]["stallStops"], 0);
        assert!(out.message.contains("claude --resume sess"));
        s["halt"] = json!({"kind": state::HALT_MINUTES, "reason": "r"});
        let err = resume(
            &typed(&s),
            Raises {
                minutes: Some(5),
                ..Default::default()
            },
            0.0,
            None,
            NOW,
        )
        .unwrap_err();
        assert!(err[0].detail.contains("10 minutes elapsed"), "{}", err[0]);
        s["halt"] = json!({"kind": state::HALT_STALL, "reason": "r"});
        assert!(resume(&typed(&s), Raises::default(), 0.0, None, NOW).is_ok());
    }
}
