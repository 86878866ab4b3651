//! When an execution may be called complete: every gate in one pure function, so the Stop
//! hook's `ALL_TASKS_COMPLETE` check, last-mile and a shell `finish` judge the same way.
//! The edge gathers the facts (evidence freshness runs git; follow-ups are a file read).
//!
//! Beyond "every box is ticked and the full check is fresh", a completion must be earned:
//! every box ticked during this execution went through `task complete` (a box ticked with
//! `sed` has no finished attempt), no attempt is still running, and no executor claim that
//! SubagentStop recorded as unverified is left open.

use serde_json::Value;

use crate::evidence::verify::Freshness;
use crate::io::project::SpecPlace;
use crate::model::state::time::parse as parse_time;
use crate::model::state::{Attempt, EvidenceRecord, Phase, State};
use crate::model::tasks::TaskList;
use crate::protocol::Unmet;
use crate::support::shell::word as shell_word;

/// A follow-up that blocks completion (open, VERIFY, high).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blocker {
    pub id: String,
    pub title: String,
}

/// The facts a completion is judged on that cost I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gates {
    /// `verificationBlocks.execution` against the current tree.
    pub evidence: Freshness,
    /// Open VERIFY/high follow-ups, or `Err` with why followups.json could not be read.
    pub blockers: Result<Vec<Blocker>, String>,
    /// Acceptance criteria not covered, each described with its fix
    /// (`criteria::describe_uncovered`); empty when the execution does not enforce them.
    pub criteria: Vec<String>,
    /// Criteria the model proposed as manual (`ac propose`), described the same way: they
    /// wait for a person's confirmation.
    pub proposed: Vec<String>,
    /// Baseline tests the final run did not run and pass (`baseline_store::missing`).
    pub baseline: Vec<String>,
}

/// The gates only a person can satisfy: a criterion proposed as manual, a blocking
/// follow-up. When every unmet gate is one of these, the execution waits for a person.
pub(crate) const PERSON_GATES: &[&str] = &[AWAITING_CONFIRMATION, "followup"];
/// The gate of a criterion proposed as manual and not yet confirmed by a person.
pub(crate) const AWAITING_CONFIRMATION: &str = "awaiting-confirmation";

/// Whether `unmet` is non-empty and only a person can satisfy every gate in it.
pub(crate) fn waits_for_person(unmet: &[Unmet]) -> bool {
    !unmet.is_empty() && unmet.iter().all(|u| PERSON_GATES.contains(&u.name))
}

/// Every unmet completion gate of `spec`, each with a stable name and the command
/// that satisfies it. `gates: None` (not computed) counts as missing evidence.
pub(crate) fn unmet(
    spec: SpecPlace<'_>,
    state: &State,
    tasks: &TaskList,
    gates: Option<&Gates>,
) -> Vec<Unmet> {
    let name = spec.name;
    let spec_flag = crate::support::shell::spec_flag(name);
    let mut out = Vec::new();
    if state.halt().is_some() {
        out.push(Unmet::new(
            "not-halted",
            format!(
                "the execution is halted ({}): {} first.",
                state.halt_reason().unwrap_or("no reason recorded"),
                crate::claude::roles::for_person(&state.resume_command(name))
            ),
        ));
    } else if state.phase() != Some(Phase::Execution) {
        out.push(Unmet::new(
            "phase",
            format!(
                "the execution is {}, not running: `specrun state init {spec_flag}` starts it.",
                state.phase().map_or("not started", Phase::as_str)
            ),
        ));
    }
    if tasks.tasks.is_empty() {
        out.push(Unmet::new(
            "tasks",
            format!(
                "{} has no tasks: there is nothing to complete.",
                spec.tasks_file()
            ),
        ));
    }
    if let Some(u) = hidden_tasks(spec, tasks) {
        out.push(u);
    }
    out.extend(crate::model::plan::unmet(
        name,
        state.total_tasks(),
        state.frozen_plan(),
        tasks,
    ));
    let unchecked: Vec<String> = tasks
        .tasks
        .iter()
        .filter(|t| !t.checked)
        .map(|t| t.label())
        .collect();
    if !unchecked.is_empty() {
        out.push(Unmet::new(
            "unchecked",
            format!(
                "{} of {} tasks unchecked ({}): delegate each to {} (specrun:qa-engineer for [VERIFY]), which ticks it with `specrun task complete {} --check {spec_flag}` (then the next).",
                unchecked.len(),
                tasks.tasks.len(),
                unchecked.join(", "),
                crate::claude::agents::EXECUTOR_AGENT,
                shell_word(&unchecked[0])
            ),
        ));
    }
    out.extend(unearned(name, state, tasks));
    out.extend(costly(spec, state, tasks, gates));
    out
}

/// The gates that need only the state and tasks.md (`earned` and an unmerged group), in
/// the order the Stop hook names them: what stands between ticked boxes and a completion
/// the protocol earned.
pub(crate) fn unearned(name: &str, state: &State, tasks: &TaskList) -> Vec<Unmet> {
    let mut out = earned(name, state, tasks);
    out.extend(unmerged(name, state));
    out
}

/// The gate an isolated group not yet merged and verified fails.
pub(crate) const GROUP_UNMERGED: &str = "group-unmerged";

/// An isolated group whose members are ticked but not all merged and verified: their work
/// is on `specrun/<spec>/<id>` branches, not in the base branch the evidence covers.
fn unmerged(name: &str, state: &State) -> Option<Unmet> {
    let spec_flag = crate::support::shell::spec_flag(name);
    let iso = crate::isolation::worktree::Isolation::of(state);
    let open: Vec<String> = iso
        .members
        .iter()
        .filter(|(_, m)| m.is_open())
        .map(|(id, m)| format!("{id} {}", m.status))
        .collect();
    let group = iso.open_group();
    if group.is_none() && open.is_empty() {
        return None;
    }
    let status = group.map_or("done", |g| g.status.as_str());
    let members = if open.is_empty() {
        "every member merged, the merged tree not yet verified".to_string()
    } else {
        format!("not merged: {}", open.join(", "))
    };
    Some(Unmet::new(
        GROUP_UNMERGED,
        format!(
            "the isolated group is {status} ({members}): `specrun group merge {spec_flag}` merges the members and verifies the merged tree; it prints the next step."
        ),
    ))
}

/// The gates that need no I/O beyond the state and tasks.md: boxes ticked without
/// `task complete`, attempts still running, open unverified claims. Last-mile reports
/// these as verification gaps.
pub(crate) fn earned(name: &str, state: &State, tasks: &TaskList) -> Vec<Unmet> {
    earned_by_task(name, state, tasks)
        .into_iter()
        .map(|(_, u)| u)
        .collect()
}

/// `earned`, each gate with the task it is about.
pub(crate) fn earned_by_task(name: &str, state: &State, tasks: &TaskList) -> Vec<(String, Unmet)> {
    let spec_flag = crate::support::shell::spec_flag(name);
    let mut out = Vec::new();
    let baseline = checked_at_init(state);
    for task in &tasks.tasks {
        let id = task.label();
        let arg = shell_word(&id);
        let history = state.attempts_of(&id);
        let last = history.last();
        if let Some(n) = history
            .iter()
            .rev()
            .find(|a| status_of(a) == "running")
            .map(n_of)
        {
            let detail = if task.checked {
                format!(
                    "task {id} is checked but attempt {n} is still running (the box was not ticked by `specrun task complete`): once its evidence and critiques are in, `specrun task complete {arg} {spec_flag}`; if it failed, untick it (`specrun tasks check {arg} --undo {spec_flag}`) and `specrun task fail {arg} --reason \"<why>\" {spec_flag}`."
                )
            } else {
                format!(
                    "attempt {n} of task {id} is still running: wait for its executor's result, then confirm it (`specrun task complete {arg} --check {spec_flag}`) or record the failure (`specrun task fail {arg} --reason \"<why>\" {spec_flag}`)."
                )
            };
            out.push((id, Unmet::new("attempt-running", detail)));
            continue;
        }
        if !task.checked || baseline.contains(&id) {
            continue;
        }
        // A Kiro parent closes with its sub-tasks, each of which is judged on its own.
        if crate::model::tasks::format::closed_by_children(tasks, task.index) {
            continue;
        }
        let why = match last {
            Some(a) if status_of(a) == "done" => continue,
            Some(a) => format!("its last attempt ({}) is {}", n_of(a), status_of(a)),
            None => "it was never started".to_string(),
        };
        let detail = format!(
            "task {id} was ticked during this execution without `specrun task complete` ({why}): untick it (`specrun tasks check {arg} --undo {spec_flag}`) and delegate it again."
        );
        out.push((id, Unmet::new("checked-without-complete", detail)));
    }
    for (id, at) in open_claims(state, tasks) {
        let arg = shell_word(&id);
        let detail = format!(
            "the executor's TASK_COMPLETE {id} ({at}) was recorded as unverified and nothing has settled it since: confirm it with `specrun tasks show {arg} --json {spec_flag}` and `specrun verify status --task {arg} {spec_flag}`, then `specrun task complete {arg} {spec_flag}` once it holds, or `specrun task fail {arg} --reason \"<why>\" {spec_flag}` (untick it first if it is checked)."
        );
        out.push((id, Unmet::new("unverified-claim", detail)));
    }
    out
}

/// The gates computed from the costly facts: execution evidence and follow-ups.
/// The full check to name when none was recorded: the last [VERIFY] task's Verify line,
/// else the last task's.
fn full_check(tasks: &TaskList) -> Option<&str> {
    let with_verify = || tasks.tasks.iter().rev().filter(|t| t.verify.is_some());
    with_verify()
        .find(|t| t.is_verify())
        .or_else(|| with_verify().next())
        .and_then(|t| t.verify.as_deref())
}

/// The spec's final check (`plan::final_check_of`): only its run completes the spec.
pub(crate) fn final_command(state: &State, tasks: &TaskList) -> Option<String> {
    crate::model::plan::final_check_of(state.frozen_plan(), tasks).map(|c| c.command)
}

/// The `verify run` that records the execution evidence: the plan's final check (`verify
/// run --final` runs the frozen one); for a plan without one, the command it last ran, else
/// the plan's full check. `finish`, the Stop hook and `status`'s shell step name it alike.
pub(crate) fn execution_check(name: &str, state: &State, tasks: &TaskList) -> String {
    if final_command(state, tasks).is_some() {
        let spec_flag = crate::support::shell::spec_flag(name);
        return format!("specrun verify run --final {spec_flag}");
    }
    let command = state
        .verification_block("execution")
        .and_then(EvidenceRecord::command)
        .or_else(|| full_check(tasks))
        .unwrap_or("<full test command>");
    crate::evidence::verify::Slot::Phase("execution".into()).rerun(name, command)
}

fn costly(
    spec: SpecPlace<'_>,
    state: &State,
    tasks: &TaskList,
    gates: Option<&Gates>,
) -> Vec<Unmet> {
    let name = spec.name;
    let spec_flag = crate::support::shell::spec_flag(name);
    let mut out = Vec::new();
    out.extend(execution_evidence(name, state, tasks, gates));
    match gates.map(|g| &g.blockers) {
        Some(Ok(blockers)) => {
            for b in blockers {
                out.push(Unmet::new(
                    "followup",
                    format!(
                        "follow-up {} (VERIFY, high) is open: {}. It blocks the completion until a person resolves it: {}.",
                        b.id,
                        b.title,
                        crate::claude::roles::for_person(&format!(
                            "specrun followup resolve {} --note \"<what was done>\" {spec_flag}",
                            b.id
                        ))
                    ),
                ));
            }
        }
        Some(Err(e)) => out.push(Unmet::new(
            "followups-unreadable",
            format!(
                "follow-ups cannot be read ({e}): fix {} so open VERIFY/high items can be checked.",
                spec.file(crate::io::project::FOLLOWUPS_FILE)
            ),
        )),
        None => {}
    }
    for c in gates.map(|g| g.criteria.as_slice()).unwrap_or_default() {
        out.push(Unmet::new(
            "acceptance-criteria",
            format!("acceptance criterion {c}"),
        ));
    }
    out.extend(baseline_missing(name, gates));
    for c in gates.map(|g| g.proposed.as_slice()).unwrap_or_default() {
        out.push(Unmet::new(
            AWAITING_CONFIRMATION,
            format!("acceptance criterion {c}"),
        ));
    }
    out
}

/// The baseline gate: every test the final check ran before the first task must run and
/// pass in the final run. The model's way is to make it run again; only a person accepts
/// that it no longer does (never named inside Claude Code).
fn baseline_missing(name: &str, gates: Option<&Gates>) -> Option<Unmet> {
    let missing = gates.map(|g| g.baseline.as_slice()).unwrap_or_default();
    if missing.is_empty() {
        return None;
    }
    let shown = missing[..missing.len().min(10)].join(", ");
    let more = match missing.len().saturating_sub(10) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let person = crate::claude::roles::for_person(&format!(
        "specrun plan accept --missing-test <name> --reason \"<why>\" {}",
        crate::support::shell::spec_flag(name)
    ));
    Some(Unmet::new(
        crate::evidence::baseline::FINDING,
        format!(
            "{} test(s) of the baseline (what the final check ran before the first task) did not run and pass in the final check's run: {shown}{more}. A test switched off (skipped, deselected, excluded, renamed out of the runner's reach, its runner reconfigured) must run again: put back what stopped it and run the final check again; if it is gone on purpose, record a follow-up and end the turn ({person}).",
            missing.len()
        ),
    ))
}

/// The execution evidence gate: a fresh passing run of exactly the plan's final check
/// (another command's run is recorded and shown but proves nothing); a plan without one
/// takes any command's, as before final checks.
fn execution_evidence(
    name: &str,
    state: &State,
    tasks: &TaskList,
    gates: Option<&Gates>,
) -> Option<Unmet> {
    let evidence = gates.map_or(Freshness::Missing, |g| g.evidence);
    let run = execution_check(name, state, tasks);
    let ran = state
        .verification_block("execution")
        .and_then(EvidenceRecord::command)
        .map(str::trim);
    let detail = match final_command(state, tasks) {
        Some(check) if evidence != Freshness::Missing && ran != Some(check.trim()) => format!(
            "the execution evidence ran `{}`, not the plan's final check `{check}`, and only the final check's run completes the spec: run `{run}` and make it pass.",
            ran.unwrap_or("")
        ),
        _ if evidence == Freshness::Fresh => return None,
        check => {
            let why = match evidence {
                Freshness::Stale => "stale (the code changed since it ran)",
                Freshness::Failed => "failed",
                _ => "missing",
            };
            let named = check.map_or(String::new(), |c| format!(" (the plan's final check `{c}`)"));
            format!("execution evidence is {why}: run `{run}`{named} and make it pass.")
        }
    };
    Some(Unmet::new("execution-evidence", detail))
}

/// The labels of the tasks that were checked when `state init` started this execution
/// (`checkedAtInit`); none when the field is absent.
pub(crate) fn checked_at_init(state: &State) -> Vec<String> {
    state
        .checked_at_init
        .as_ref()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The `checkedAtInit` to write at `state init`: the boxes checked now. Re-initialising an
/// unfinished execution keeps the earlier baseline (a box ticked by hand since then is not
/// laundered by running `state init` again); tasks finished through `task complete` count
/// either way.
pub(crate) fn baseline_at_init(existing: Option<&State>, tasks: &TaskList) -> Vec<String> {
    let checked = tasks.tasks.iter().filter(|t| t.checked).map(|t| t.label());
    match existing.filter(|s| carries_baseline(Some(s))) {
        None => checked.collect(),
        Some(old) => {
            let kept = checked_at_init(old);
            checked
                .filter(|id| {
                    kept.contains(id) || old.attempts_of(id).last().map(status_of) == Some("done")
                })
                .collect()
        }
    }
}

/// Whether `existing` is an execution whose baseline a new `state init` carries on (its
/// `checkedAtInit` and its earned boxes), rather than one that starts from the boxes now.
pub(crate) fn carries_baseline(existing: Option<&State>) -> bool {
    existing.is_some_and(|s| {
        matches!(s.phase(), Some(Phase::Execution | Phase::Cancelled))
            && !s.completed()
            && s.checked_at_init.is_some()
    })
}

/// Unverified claims about tasks of this tasks.md that no attempt has settled since: an
/// attempt of that task that ended (done or failed) at or after the claim settles it. A
/// claim whose time cannot be read stays open.
pub(crate) fn open_claims(state: &State, tasks: &TaskList) -> Vec<(String, String)> {
    let Some(claims) = &state.unverified_claims else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for claim in claims {
        let Some(id) = claim.get("taskId").and_then(Value::as_str) else {
            continue;
        };
        if tasks.find(id).is_err() || out.iter().any(|(seen, _)| seen == id) {
            continue;
        }
        let at_text = claim.get("at").and_then(Value::as_str).unwrap_or("?");
        let settled = parse_time(at_text).is_some_and(|at| {
            state.attempts_of(id).iter().any(|a| {
                a.ended_at
                    .get()
                    .and_then(|t| t.at())
                    .is_some_and(|ended| ended >= at)
            })
        });
        if !settled {
            out.push((id.to_string(), at_text.to_string()));
        }
    }
    out
}

fn status_of(attempt: &Attempt) -> &str {
    attempt.status.as_deref().unwrap_or("")
}

fn n_of(attempt: &Attempt) -> u64 {
    attempt.n.unwrap_or(0)
}

/// A tasks.md that may hold tasks it does not read (a fence never closed, a malformed
/// box, a task written as a heading) is not "all done": the gate names the line.
fn hidden_tasks(spec: SpecPlace<'_>, tasks: &TaskList) -> Option<Unmet> {
    use crate::model::tasks::UnreadKind;
    let line = tasks.unclosed_fence.or_else(|| {
        tasks
            .unread
            .iter()
            .find(|u| matches!(u.kind, UnreadKind::Malformed | UnreadKind::Heading))
            .map(|u| u.line)
    })?;
    Some(Unmet::new(
        "tasks-unread",
        format!("{} line {line} may hold a task that is not read (an unclosed fence, a malformed box or a heading task): fix what `specrun tasks lint --spec {}` names.", spec.tasks_file(), spec.name),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tasks::parse;
    use serde_json::json;

    const TWO: &str = "- [x] 1.1 First\n- [x] 1.2 Second\n";
    const DEMO: SpecPlace<'static> = SpecPlace {
        name: "demo",
        folder: "specs/demo",
    };

    /// The gates that name a file name the spec's own folder: a Kiro spec's reader is sent
    /// to `.kiro/specs/<name>/`, not to a `specs/<name>/` that does not exist.
    #[test]
    fn the_gates_name_the_spec_s_own_files() {
        let kiro = SpecPlace {
            name: "albums",
            folder: ".kiro/specs/albums",
        };
        let s = typed(&state(json!({})));
        let details = |list: &TaskList, gates: &Gates| -> Vec<String> {
            unmet(kiro, &s, list, Some(gates))
                .into_iter()
                .map(|u| u.detail)
                .collect()
        };
        let empty = details(&parse(""), &good());
        assert!(
            empty.contains(
                &".kiro/specs/albums/tasks.md has no tasks: there is nothing to complete."
                    .to_string()
            ),
            "{empty:?}"
        );
        let unread = details(&parse("- [x] 1 A\n```\n- [ ] 2 B\n"), &good());
        assert!(
            unread
                .iter()
                .any(|d| d.starts_with(".kiro/specs/albums/tasks.md line 2 may hold a task")),
            "{unread:?}"
        );
        let broken = Gates {
            blockers: Err("bad JSON".into()),
            ..good()
        };
        let followups = details(&parse(TWO), &broken);
        assert!(
            followups
                .iter()
                .any(|d| d.contains("fix .kiro/specs/albums/followups.json so")),
            "{followups:?}"
        );
        for d in empty.iter().chain(&unread).chain(&followups) {
            assert!(
                !d.contains("specs/albums/") || d.contains(".kiro/specs/albums/"),
                "{d}"
            );
        }
    }

    fn state(extra: Value) -> Value {
        let mut s = json!({"name": "demo", "phase": "execution", "halt": null});
        crate::model::state::merge_into(&mut s, &extra);
        s
    }

    fn typed(doc: &Value) -> State {
        State::from_value(doc).unwrap()
    }

    fn good() -> Gates {
        Gates {
            evidence: Freshness::Fresh,
            blockers: Ok(vec![]),
            criteria: vec![],
            proposed: vec![],
            baseline: vec![],
        }
    }

    fn names(u: &[Unmet]) -> Vec<&str> {
        u.iter().map(|u| u.name).collect()
    }

    fn done(id: &str) -> Value {
        json!({id: [{"n": 1, "status": "done", "startedAt": "2026-01-01T00:00:00Z", "endedAt": "2026-01-01T00:10:00Z"}]})
    }

    #[test]
    fn a_plan_that_hides_tasks_is_not_complete() {
        let s = state(json!({"checkedAtInit": ["1.1", "1.2"]}));
        for (text, line) in [
            (
                "- [x] 1.1 First\n- [x] 1.2 Second\n```\n- [ ] 1.3 Hidden\n",
                3,
            ),
            ("- [x] 1.1 First\n- [x] 1.2 Second\n- [] 1.3 Malformed\n", 3),
        ] {
            let u = unmet(DEMO, &typed(&s), &parse(text), Some(&good()));
            assert_eq!(names(&u), ["tasks-unread"], "{text:?}");
            assert!(u[0].detail.contains(&format!("line {line}")), "{}", u[0]);
        }
        // A nested unchecked sub-task under a checked parent keeps the gate shut.
        let nested = "- [x] 1.1 First\n  - [ ] 1.1.1 Part\n- [x] 1.2 Second\n";
        let u = unmet(DEMO, &typed(&s), &parse(nested), Some(&good()));
        assert!(names(&u).contains(&"unchecked"), "{u:?}");
        assert!(u.iter().any(|u| u.detail.contains("(1.1.1)")), "{u:?}");
    }

    #[test]
    fn boxes_ticked_before_init_or_through_task_complete_pass() {
        let s = state(json!({"checkedAtInit": ["1.1"], "attempts": done("1.2")}));
        assert!(unmet(DEMO, &typed(&s), &parse(TWO), Some(&good())).is_empty());
    }

    #[test]
    fn a_hand_ticked_box_is_named_with_a_fix_that_works() {
        let s = state(json!({"checkedAtInit": [], "attempts": done("1.2")}));
        let u = unmet(DEMO, &typed(&s), &parse(TWO), Some(&good()));
        assert_eq!(names(&u), ["checked-without-complete"]);
        assert!(u[0].detail.contains("task 1.1 was ticked"), "{}", u[0]);
        assert!(
            u[0].detail
                .contains("`specrun tasks check 1.1 --undo --spec demo`"),
            "{}",
            u[0]
        );
        // No baseline recorded: nothing is excepted.
        let s = state(json!({"attempts": done("1.2")}));
        assert_eq!(
            names(&unmet(DEMO, &typed(&s), &parse(TWO), Some(&good()))),
            ["checked-without-complete"]
        );
    }

    #[test]
    fn running_attempts_and_failed_last_attempts_block() {
        let s = state(json!({"checkedAtInit": [], "attempts": {
            "1.1": [{"n": 1, "status": "running", "startedAt": "2026-01-01T00:00:00Z"}],
            "1.2": [{"n": 1, "status": "failed"}]}}));
        let u = unmet(DEMO, &typed(&s), &parse(TWO), Some(&good()));
        assert_eq!(names(&u), ["attempt-running", "checked-without-complete"]);
        assert!(
            u[0].detail.contains("attempt 1 is still running"),
            "{}",
            u[0]
        );
        assert!(u[1].detail.contains("is failed"), "{}", u[1]);
        // A running attempt of an unchecked task blocks as well.
        let s = state(json!({"attempts": {"1.2": [{"n": 2, "status": "running"}]}}));
        let u = earned("demo", &typed(&s), &parse("- [ ] 1.2 Second\n"));
        assert_eq!(names(&u), ["attempt-running"]);
        assert!(u[0].detail.contains("attempt 2 of task 1.2"), "{}", u[0]);
    }

    #[test]
    fn an_unverified_claim_stays_open_until_an_attempt_ends_after_it() {
        let claim = json!([{"taskId": "1.2", "at": "2026-01-01T00:20:00Z", "missing": []},
                           {"taskId": "9.9", "at": "2026-01-01T00:20:00Z"}]);
        let s = state(
            json!({"checkedAtInit": ["1.1", "1.2"], "unverifiedClaims": claim,
                             "attempts": done("1.2")}),
        );
        let u = unmet(DEMO, &typed(&s), &parse(TWO), Some(&good()));
        assert_eq!(names(&u), ["unverified-claim"], "{u:?}");
        assert!(u[0].detail.contains("TASK_COMPLETE 1.2"), "{}", u[0]);
        let mut settled = s.clone();
        settled["attempts"]["1.2"][0]["endedAt"] = json!("2026-01-01T00:30:00Z");
        assert!(unmet(DEMO, &typed(&settled), &parse(TWO), Some(&good())).is_empty());
        let mut garbled = settled.clone();
        garbled["unverifiedClaims"][0]["at"] = json!("yesterday");
        assert_eq!(
            names(&unmet(DEMO, &typed(&garbled), &parse(TWO), Some(&good()))),
            ["unverified-claim"]
        );
    }

    #[test]
    fn the_costly_gates_and_the_phase() {
        let s = state(json!({"checkedAtInit": ["1.1", "1.2"]}));
        let list = parse(TWO);
        let u = unmet(DEMO, &typed(&s), &list, None);
        assert_eq!(names(&u), ["execution-evidence"]);
        let g = Gates {
            evidence: Freshness::Stale,
            blockers: Err("bad json".into()),
            criteria: vec!["1.1/AC1 (x) is unmapped: map it".into()],
            proposed: vec![],
            baseline: vec![],
        };
        assert_eq!(
            names(&unmet(DEMO, &typed(&s), &list, Some(&g))),
            [
                "execution-evidence",
                "followups-unreadable",
                "acceptance-criteria"
            ]
        );
        let mut cancelled = s.clone();
        cancelled["phase"] = json!("cancelled");
        assert_eq!(
            names(&unmet(DEMO, &typed(&cancelled), &list, Some(&good()))),
            ["phase"]
        );
        let mut halted = s;
        halted["halt"] = json!({"kind": "stall", "reason": "stuck"});
        assert_eq!(
            names(&unmet(DEMO, &typed(&halted), &list, Some(&good()))),
            ["not-halted"]
        );
        assert_eq!(
            names(&unmet(
                DEMO,
                &typed(&state(json!({}))),
                &parse(""),
                Some(&good())
            )),
            ["tasks"]
        );
    }

    #[test]
    fn reinit_keeps_the_earlier_baseline() {
        let list = parse("- [x] 1.1 First\n- [x] 1.2 Second\n- [x] 1.3 Third\n");
        assert_eq!(baseline_at_init(None, &list), ["1.1", "1.2", "1.3"]);
        let running = state(json!({"checkedAtInit": ["1.1"], "attempts": done("1.2")}));
        assert_eq!(
            baseline_at_init(Some(&typed(&running)), &list),
            ["1.1", "1.2"]
        );
        let mut finished = running.clone();
        finished["phase"] = json!("completed");
        assert_eq!(
            baseline_at_init(Some(&typed(&finished)), &list),
            ["1.1", "1.2", "1.3"]
        );
        let planning = state(json!({"phase": "planning", "checkedAtInit": []}));
        assert_eq!(baseline_at_init(Some(&typed(&planning)), &list).len(), 3);
    }

    #[test]
    fn an_isolated_group_not_merged_and_verified_blocks() {
        let member = |status: &str| json!({"branch": "specrun/demo/x", "worktree": "x", "base": "abc", "status": status});
        let group = |status: &str| json!({"members": ["1.1", "1.2"], "baseBranch": "main", "base": "abc", "status": status});
        let s = state(
            json!({"attempts": {"1.1": done("1.1")["1.1"], "1.2": done("1.2")["1.2"]},
            "isolation": {"group": group("running"),
                          "members": {"1.1": member("merged"), "1.2": member("ready")}}}),
        );
        let u = unmet(DEMO, &typed(&s), &parse(TWO), Some(&good()));
        assert_eq!(names(&u), ["group-unmerged"]);
        assert!(u[0].detail.contains("not merged: 1.2 ready"), "{}", u[0]);
        assert!(
            u[0].detail.contains("`specrun group merge --spec demo`"),
            "{}",
            u[0]
        );
        // All merged but the merged tree's verification failed: still open.
        let s = state(
            json!({"attempts": {"1.1": done("1.1")["1.1"], "1.2": done("1.2")["1.2"]},
            "isolation": {"group": group("verify-failed"),
                          "members": {"1.1": member("merged"), "1.2": member("merged")}}}),
        );
        let u = unmet(DEMO, &typed(&s), &parse(TWO), Some(&good()));
        assert_eq!(names(&u), ["group-unmerged"]);
        assert!(u[0].detail.contains("not yet verified"), "{}", u[0]);
        // Complete: nothing to say.
        let s = state(
            json!({"attempts": {"1.1": done("1.1")["1.1"], "1.2": done("1.2")["1.2"]},
            "isolation": {"group": group("complete"),
                          "members": {"1.1": member("merged"), "1.2": member("merged")}}}),
        );
        assert!(unmet(DEMO, &typed(&s), &parse(TWO), Some(&good())).is_empty());
    }

    #[test]
    fn only_a_fresh_run_of_exactly_the_final_check_meets_the_execution_gate() {
        let md = "**Final check**: `cargo test --all`\n- [x] 1.1 First\n  - **Verify**: `true`\n";
        let tasks = parse(md);
        let plan = crate::model::plan::Plan::freeze(&tasks);
        let with = |command: &str| {
            let doc = state(
                json!({"attempts": done("1.1"), "plan": plan, "totalTasks": 1,
                "verificationBlocks": {"execution": {"command": command, "exitCode": 0}}}),
            );
            unmet(DEMO, &typed(&doc), &tasks, Some(&good()))
        };
        let cheat = with("true");
        assert_eq!(names(&cheat), ["execution-evidence"]);
        assert!(
            cheat[0]
                .detail
                .contains("ran `true`, not the plan's final check `cargo test --all`")
                && cheat[0]
                    .detail
                    .contains("`specrun verify run --final --spec demo`"),
            "{}",
            cheat[0].detail
        );
        assert!(with(" cargo test --all ").is_empty(), "the honest control");
        // The frozen one counts, not a line rewritten since (that is also a plan change).
        let rewritten = parse(&md.replace("cargo test --all", "true"));
        let doc = state(
            json!({"attempts": done("1.1"), "plan": plan, "totalTasks": 1,
            "verificationBlocks": {"execution": {"command": "true", "exitCode": 0}}}),
        );
        let u = unmet(DEMO, &typed(&doc), &rewritten, Some(&good()));
        assert_eq!(names(&u), ["plan-changed", "execution-evidence"]);
    }
}
