//! `task complete`: the running attempt is done, once its evidence, both critique records
//! and the box hold.

use super::{
    decide, execution_gates, n_of, short_commit, stamp, status_of, unchanged, Transition, Unmet,
};
use crate::evidence::critique::Stored;
use crate::evidence::verify::Freshness;
use crate::model::state::{Attempt, Nullable, Patch, State};
use crate::model::tasks::{Task, TaskList};

/// Freshness of one evidence slot and, when recorded, its `startedAt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EvidenceFact {
    pub freshness: Freshness,
    /// When the run ended (`startedAt + durationMs`).
    pub ended_at: Option<String>,
    /// Why the record does not count for the task by its command (`CommandFit::problem`).
    pub mismatch: Option<String>,
}

impl EvidenceFact {
    /// Fresh, passing and from a command that counts for the task.
    pub(crate) fn counts(&self) -> bool {
        self.freshness.is_ok() && self.mismatch.is_none()
    }

    fn describe(&self) -> String {
        match &self.mismatch {
            Some(why) if self.freshness.is_ok() => format!("not the task's ({why})"),
            _ => self.freshness.as_str().to_string(),
        }
    }
}

pub(crate) struct CompleteInput<'a> {
    pub state: &'a State,
    pub list: &'a TaskList,
    pub task: &'a Task,
    /// `--check`: tick the box as part of completing.
    pub check: bool,
    pub task_evidence: EvidenceFact,
    pub phase_evidence: EvidenceFact,
    /// The post-code and post-test critique records, judged (`critique::load`).
    pub post_code: Stored,
    pub post_test: Stored,
    /// Summaries of open blocking follow-ups (warned about, not refused).
    pub blocking_followups: Vec<String>,
    pub head: Option<&'a str>,
    pub now: &'a str,
}

impl CompleteInput<'_> {
    /// The evidence that vouches for the task: its own slot first, then the phase's (a
    /// full run). A record counts only when it ran the task's own Verify command (or a
    /// person accepted another one), whichever slot it sits in.
    fn evidence(&self) -> Option<&EvidenceFact> {
        [&self.task_evidence, &self.phase_evidence]
            .into_iter()
            .find(|e| e.counts())
    }
}

pub(crate) fn complete(input: &CompleteInput<'_>) -> Result<Transition, Vec<Unmet>> {
    let history = input.state.attempts_of(&input.task.label());
    if let Some(done) = repeat(input.task, history) {
        return Ok(done);
    }
    decide(unmet(input, history), || apply(input, history.to_vec()))
}

/// A task already complete: nothing to write, but the progress line goes with it (a run
/// killed before writing it left it out).
fn repeat(task: &Task, history: &[Attempt]) -> Option<Transition> {
    let done = history
        .last()
        .filter(|a| task.checked && status_of(a) == "done")?;
    let commit = done.end_commit.get().map(String::as_str);
    Some(Transition {
        progress_line: Some(progress_line(task, commit)),
        ..unchanged(format!("task {} is already complete", task.label()))
    })
}

fn unmet(input: &CompleteInput<'_>, history: &[Attempt]) -> Vec<Unmet> {
    let id = input.task.label();
    let id_q = crate::support::shell::word(&id);
    let mut unmet = Vec::new();
    execution_gates(input.state, &mut unmet);
    let name = input.state.name().unwrap_or_default();
    unmet.extend(crate::model::plan::unmet(
        name,
        input.state.total_tasks(),
        input.state.frozen_plan(),
        input.list,
    ));
    unmet.extend(attempt_running(&id, history.last()));
    if input.evidence().is_none() {
        unmet.push(Unmet::new(
            "evidence",
            format!(
                "no fresh passing evidence from the task's Verify command: taskEvidence[{id}] is {} and verificationBlocks.execution is {}; run `specrun verify run --task {id_q}`",
                input.task_evidence.describe(),
                input.phase_evidence.describe()
            ),
        ));
    }
    critiques(input, &id, &mut unmet);
    if !input.task.checked && !input.check {
        unmet.push(Unmet::new(
            "checked",
            format!(
                "task {id} is not checked in tasks.md: run `specrun task complete {id_q} --check`"
            ),
        ));
    }
    unmet
}

/// The last attempt must be running.
fn attempt_running(id: &str, last: Option<&Attempt>) -> Option<Unmet> {
    let id_q = crate::support::shell::word(id);
    let detail = match last {
        None => format!("task {id} was never started: run `specrun task start {id_q}` first"),
        Some(a) if status_of(a) != "running" => format!(
            "attempt {} of task {id} is {}, not running: run `specrun task start {id_q}`",
            n_of(a),
            status_of(a)
        ),
        Some(_) => return None,
    };
    Some(Unmet::new("attempt-running", detail))
}

/// Both critique records usable, the post-test one newer than the evidence it reviews.
fn critiques(input: &CompleteInput<'_>, id: &str, unmet: &mut Vec<Unmet>) {
    let id_q = crate::support::shell::word(id);
    for (stage, name, stored) in [
        ("post-code", "critique-post-code", &input.post_code),
        ("post-test", "critique-post-test", &input.post_test),
    ] {
        let record = format!("`specrun critique record --task {id_q} --stage {stage}`");
        match stored {
            Stored::Usable { .. } => {}
            Stored::Missing => unmet.push(Unmet::new(
                name,
                format!("no {stage} critique record: run {record}"),
            )),
            Stored::Unusable(why) => unmet.push(Unmet::new(
                name,
                format!("the {stage} critique record does not count ({why}): run {record}"),
            )),
        }
    }
    let (Some(recorded), Some(ev)) = (input.post_test.recorded_at(), input.evidence()) else {
        return;
    };
    let in_order = ev
        .ended_at
        .as_deref()
        .is_some_and(|ended| crate::evidence::critique::reviews_run(recorded, ended));
    if !in_order {
        unmet.push(Unmet::new(
            "critique-post-test-newer",
            format!(
                "the post-test critique ({recorded}) is not newer than the evidence it reviews (ended {}): record it again after the verification run",
                ev.ended_at.as_deref().map_or_else(
                    || format!("at an unknown time: taskEvidence.{id}.startedAt plus taskEvidence.{id}.durationMs is not a time; run `specrun verify run --task {id}` again"),
                    str::to_string
                )
            ),
        ));
    }
}

/// The `.progress.md` line of a completed task.
fn progress_line(task: &Task, commit: Option<&str>) -> String {
    let commit = commit.map(short_commit).unwrap_or("no commit");
    format!("- [x] {} {} — {commit}", task.label(), task.title)
}

fn apply(input: &CompleteInput<'_>, mut history: Vec<Attempt>) -> Transition {
    let task = input.task;
    let id = task.label();
    let last = history.last_mut().expect("a running attempt was found");
    let n = n_of(last);
    last.status = Some("done".into());
    last.ended_at = Nullable::Set(stamp(input.now));
    last.end_commit = input.head.map(str::to_string).into();
    let next = input.list.next_index_after(task.index);
    let patch = Patch::new()
        .attempts(&id, &history)
        .task_index(next as u64)
        .task_iteration(0)
        .total_tasks(input.list.tasks.len() as u64);
    let commit = input.head.map(short_commit).unwrap_or("no commit");
    let next_label = input
        .list
        .tasks
        .get(next)
        .map(|t| format!("next: {}", t.label()))
        .unwrap_or_else(|| "all tasks are checked".into());
    let notes = input
        .blocking_followups
        .iter()
        .map(|f| {
            format!("warning: open blocking follow-up {f} (completion of the spec waits for it)")
        })
        .collect();
    Transition {
        patch: Some(patch),
        message: format!("task {id} complete (attempt {n}, {commit}); {next_label}"),
        notes,
        changed: true,
        check_box: !task.checked,
        progress_line: Some(progress_line(task, input.head)),
        fix: None,
        halted: false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::start;
    use super::super::test_support::*;
    use super::*;
    use crate::model::tasks::parse;

    fn usable(at: &str) -> Stored {
        Stored::Usable {
            recorded_at: at.into(),
        }
    }

    fn complete_input<'a>(
        state: &'a State,
        list: &'a TaskList,
        task: &'a Task,
    ) -> CompleteInput<'a> {
        CompleteInput {
            state,
            list,
            task,
            check: false,
            task_evidence: fresh("2026-01-01T00:05:00Z"),
            phase_evidence: missing(),
            post_code: usable("2026-01-01T00:04:00Z"),
            post_test: usable("2026-01-01T00:06:00Z"),
            blocking_followups: vec![],
            head: Some("0123456789abcdef"),
            now: NOW,
        }
    }

    #[test]
    fn complete_names_every_unmet_precondition() {
        let list = parse(TASKS);
        let s = exec_state();
        let ts = typed(&s);
        let task = list.find("2").unwrap();
        let mut input = complete_input(&ts, &list, task);
        input.task_evidence = EvidenceFact {
            freshness: Freshness::Stale,
            ended_at: Some("x".into()),
            mismatch: None,
        };
        input.post_code = Stored::Missing;
        input.post_test = Stored::Unusable("1 issue(s) found but not fixed".into());
        let err = complete(&input).unwrap_err();
        assert_eq!(
            names(&err),
            [
                "attempt-running",
                "evidence",
                "critique-post-code",
                "critique-post-test",
                "checked"
            ]
        );
        assert!(err[1]
            .detail
            .contains("taskEvidence[2] is stale and verificationBlocks.execution is missing"));
        assert!(err[3]
            .detail
            .contains("does not count (1 issue(s) found but not fixed)"));
        // Fresh and passing, but another command than the task's Verify: refused.
        let mut input = complete_input(&ts, &list, task);
        input.task_evidence = fresh("2026-01-01T00:05:00Z");
        input.task_evidence.mismatch = Some("it ran `true`, not …".into());
        let err = complete(&input).unwrap_err();
        assert!(names(&err).contains(&"evidence"), "{err:?}");
        assert!(
            err.iter().any(|u| u
                .detail
                .contains("taskEvidence[2] is not the task's (it ran `true`")),
            "{err:?}"
        );
        // Post-test older than the evidence (which ended at 00:05).
        let started = after(
            &s,
            &start(&typed(&s), &list, task, Some("abc"), NOW).unwrap(),
        );
        let typed_started = typed(&started);
        let mut input = complete_input(&typed_started, &list, task);
        input.post_test = usable("2026-01-01T00:04:59Z");
        input.check = true;
        assert_eq!(
            names(&complete(&input).unwrap_err()),
            ["critique-post-test-newer"]
        );
    }

    #[test]
    fn complete_advances_and_repeats_say_so() {
        let list = parse(TASKS);
        let s = exec_state();
        let task = list.find("2").unwrap();
        let started = after(
            &s,
            &start(&typed(&s), &list, task, Some("abc"), NOW).unwrap(),
        );
        let typed_started = typed(&started);
        let mut input = complete_input(&typed_started, &list, task);
        input.check = true;
        // Phase evidence alone also vouches.
        input.task_evidence = missing();
        input.phase_evidence = fresh("2026-01-01T00:05:00Z");
        input.blocking_followups = vec!["F1 [VERIFY/high] open: x".into()];
        let out = complete(&input).unwrap();
        assert!(out.check_box && out.changed);
        assert_eq!(out.progress_line.as_deref(), Some("- [x] 2 A — 0123456789"));
        assert!(out.notes[0].contains("F1"));
        let done = after(&started, &out);
        assert_eq!(done["taskIndex"], 2);
        assert_eq!(done["attempts"]["2"][0]["status"], "done");
        assert_eq!(done["attempts"]["2"][0]["endCommit"], "0123456789abcdef");
        let ticked = parse(&TASKS.replace("- [ ] 2", "- [x] 2"));
        let again = complete(&complete_input(
            &typed(&done),
            &ticked,
            ticked.find("2").unwrap(),
        ))
        .unwrap();
        assert!(!again.changed);
        assert!(again.message.contains("already complete"));
    }
}
