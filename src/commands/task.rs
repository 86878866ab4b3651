//! `specrun task start|complete|fail|rollback`: gather the facts under the state lock,
//! let `protocol` decide, then apply. Lock order everywhere: the state file's lock first,
//! then tasks.md's or .progress.md's own lock (so two verbs never deadlock).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::{TaskCommand, TaskVerbArgs};
use crate::commands::exec::{refuse, report, Exec, Extra};
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::acceptance::Justification;
use crate::evidence::criteria;
use crate::evidence::critique;
use crate::evidence::proof;
use crate::evidence::red_green_run;
use crate::evidence::verify::{self, Slot};
use crate::io::bookkeeping;
use crate::io::events::now_rfc3339;
use crate::io::events::{Event, Refusal, Rollback};
use crate::io::git;
use crate::io::notify::{self, About};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::isolation;
use crate::isolation::saved_work;
use crate::isolation::worktree::Isolation;
use crate::model::state::{EvidenceRecord, Patch, State};
use crate::model::tasks::Task;
use crate::model::tasks_file::{self, LoadedTasks};
use crate::next::gates;
use crate::protocol::{self, CompleteInput, EvidenceFact, FailInput, Transition, Unmet};

pub(crate) fn run(project: &Project, cmd: TaskCommand) -> Result<ExitStatus> {
    match cmd {
        TaskCommand::Start { verb, worktree } => start(project, &verb, worktree),
        TaskCommand::Complete { verb, check } => complete(project, &verb, check),
        TaskCommand::Fail {
            verb,
            reason,
            insert,
        } => fail(project, &verb, &reason, insert),
        TaskCommand::Rollback { verb, force } => rollback(project, &verb, force),
        TaskCommand::Justify {
            verb,
            finding,
            reason,
        } => justify(project, &verb, &finding, &reason),
    }
}

/// A task verb's refusal: recorded as a `task-<verb>` event, printed, exit 1.
fn refused(ex: &Exec, verb: &str, id: &str, unmet: &[Unmet], json_out: bool) -> ExitStatus {
    let names: Vec<&str> = unmet.iter().map(|u| u.name).collect();
    ex.record_event(&Event::Refused {
        event: &format!("task-{verb}"),
        task: Some(id),
        refused: Refusal::Unmet(names),
    });
    refuse(&format!("task {verb}"), id, unmet, json_out)
}

/// `task justify --json`.
#[derive(Serialize)]
struct Justified<'a> {
    ok: bool,
    task: &'a str,
    finding: &'a crate::evidence::integrity::Finding,
    reason: &'a str,
}

/// A verb that halted the execution starts the user's notify command (detached).
fn notify_halt(project: &Project, spec: &Spec, id: &str, out: &Transition) {
    if out.halted {
        let text = out
            .notes
            .iter()
            .find(|n| n.starts_with("halted"))
            .unwrap_or(&out.message);
        let event = notify::event("halt", &spec.name, text, About::Task { task: id });
        crate::cost::settings::notify(project, spec, &event);
    }
}

struct Held<'a> {
    ex: Exec<'a>,
    _lock: store::Lock,
    state: State,
    tasks: LoadedTasks,
}

impl Held<'_> {
    fn write(&self, patch: &Patch) -> Result<State> {
        self.ex.write_state(&self.state, patch)
    }
}

fn hold<'a>(project: &'a Project, args: &TaskVerbArgs) -> Result<Held<'a>> {
    let ex = Exec::new(project, args.spec.spec.as_deref())?;
    let (lock, state) = ex.lock_state()?;
    let tasks = ex.tasks()?;
    Ok(Held {
        ex,
        _lock: lock,
        state,
        tasks,
    })
}

fn start(project: &Project, args: &TaskVerbArgs, isolated: bool) -> Result<ExitStatus> {
    let held = hold(project, args)?;
    let task = held.tasks.find(&args.id)?;
    let id = task.label();
    let iso = Isolation::of(&held.state);
    let refuse_start = |unmet: &[Unmet]| refused(&held.ex, "start", &id, unmet, args.json);
    if let Some(unmet) = isolation::group_gate(&iso, task) {
        return Ok(refuse_start(&[unmet]));
    }
    let mut head = git::head(&project.tree);
    let now = now_rfc3339();
    let decide =
        |head: Option<&str>| protocol::start(&held.state, &held.tasks.list, task, head, &now);
    let mut out = match decide(head.as_deref()) {
        Err(unmet) => return Ok(refuse_start(&unmet)),
        Ok(out) => out,
    };
    let mut path: Option<PathBuf> = None;
    let mut iso_patch = None;
    if isolated {
        match isolation::start(project, &held.ex.spec, &iso, &held.tasks.list, task)? {
            isolation::Start::Shared(note) => {
                output::warn(&note);
                path = Some(project.tree.clone());
            }
            isolation::Start::Refused(unmet) => return Ok(refuse_start(&[unmet])),
            isolation::Start::Isolated {
                path: dir,
                head: member_head,
                patch,
                notes,
            } => {
                // The attempt starts from the member's own HEAD: that is what a rollback returns to.
                head = member_head;
                out = decide(head.as_deref()).map_err(|u| Error::Refused {
                    message: u
                        .iter()
                        .map(|u| u.to_string())
                        .collect::<Vec<_>>()
                        .join("; "),
                })?;
                out.notes.extend(notes);
                path = Some(dir);
                iso_patch = Some(patch);
            }
        }
    }
    let patch = out.patch.clone().unwrap_or_default();
    if out.patch.is_some() || iso_patch.is_some() {
        held.write(&patch.merge(iso_patch.clone().unwrap_or_default()))?;
    }
    let branch = iso_patch
        .as_ref()
        .map(|_| crate::isolation::worktree::branch_name(&held.ex.spec.name, &id));
    held.ex.record_event(&Event::TaskStart {
        task: &id,
        changed: out.changed,
        start_commit: head.as_deref(),
        worktree: path.as_deref().filter(|_| branch.is_some()),
        branch: branch.as_deref(),
    });
    report(
        "task start",
        &id,
        &out,
        args.json,
        Extra::Started {
            worktree: path.as_deref(),
            branch: branch.as_deref(),
        },
    );
    if let (Some(p), false) = (&path, args.json) {
        // Last line: the directory to work in.
        output::line(&p.display().to_string());
    }
    Ok(ExitStatus::Success)
}

/// What the evidence facts of a task are judged from: its Verify command and the two
/// records. Facts computed from one key hold for any state with the same key.
type EvidenceKey = (
    Option<String>,
    Option<EvidenceRecord>,
    Option<EvidenceRecord>,
);

fn evidence_key(state: &State, task: &Task) -> EvidenceKey {
    let record = |slot: Slot| slot.record_of(state).cloned();
    (
        task.verify_command().map(str::to_string),
        record(Slot::Task(task.label())),
        record(Slot::Phase("execution".into())),
    )
}

/// The task's evidence fact, and the phase's when the task's own does not count. Each costs
/// a fingerprint of the tree (git).
fn evidence_facts(
    project: &Project,
    spec: &Spec,
    state: &State,
    task: &Task,
) -> (EvidenceFact, EvidenceFact) {
    let id = task.label();
    let own = (id.as_str(), task.verify_command());
    let task_evidence = gates::evidence_fact(project, spec, state, Slot::Task(id.clone()), own);
    let phase_evidence = if task_evidence.counts() {
        EvidenceFact {
            freshness: verify::Freshness::Missing,
            ended_at: None,
            mismatch: None,
        }
    } else {
        let slot = Slot::Phase("execution".into());
        gates::evidence_fact(project, spec, state, slot, own)
    };
    (task_evidence, phase_evidence)
}

/// What `task complete` judges from an unlocked read, each with the key it was judged
/// from: the evidence facts (the fingerprints run git) and the red-before refusals (the
/// task's tests run at its start commit), neither of which may hold the state lock (every
/// hook waits on it).
struct BeforeLock {
    evidence: (EvidenceKey, (EvidenceFact, EvidenceFact)),
    /// The key, the tree the tests were read from, the refusals.
    red: (Option<red_green_run::Key>, PathBuf, Vec<Unmet>),
}

fn before_lock(project: &Project, args: &TaskVerbArgs) -> Option<BeforeLock> {
    let ex = Exec::new(project, args.spec.spec.as_deref()).ok()?;
    let crate::next::facts::StateRead::Valid(state) =
        crate::next::facts::read_typed(&ex.spec.state_path())
    else {
        return None;
    };
    let tasks = ex.tasks().ok()?;
    let task = tasks.find(&args.id).ok()?;
    let facts = evidence_facts(project, &ex.spec, &state, task);
    let work = isolation::task_tree(project, &ex.spec, &Isolation::of(&state), &task.label());
    let red = red_green_run::check(project, &ex.spec, &state, &tasks.list, task, &work);
    Some(BeforeLock {
        evidence: (evidence_key(&state, task), facts),
        red: (red_green_run::key(&ex.spec, &state, task), work, red),
    })
}

fn complete(project: &Project, args: &TaskVerbArgs, check: bool) -> Result<ExitStatus> {
    let (early, early_red) = match before_lock(project, args) {
        Some(b) => (Some(b.evidence), Some(b.red)),
        None => (None, None),
    };
    let held = hold(project, args)?;
    let task = held.tasks.find(&args.id)?;
    let id = task.label();
    let spec = &held.ex.spec;
    let member = isolation::open_member(project, spec, &Isolation::of(&held.state), &id);
    let head = match &member {
        Some((_, dir)) => git::head(dir),
        None => git::head(&project.tree),
    };
    let now = now_rfc3339();
    if let Some((m, dir)) = &member {
        if let Some(unmet) = isolation::scope_unmet(project, spec, task, m, dir)? {
            return Ok(refused(&held.ex, "complete", &id, &[unmet], args.json));
        }
    }
    // Kept when nothing they were judged from changed before the lock was taken (another
    // `verify run` in between makes them be judged again, under the lock).
    let (task_evidence, phase_evidence) = match early {
        Some((key, facts)) if key == evidence_key(&held.state, task) => facts,
        _ => evidence_facts(project, spec, &held.state, task),
    };
    let input = CompleteInput {
        state: &held.state,
        list: &held.tasks.list,
        task,
        check,
        task_evidence,
        phase_evidence,
        post_code: critique::load(spec, &id, "post-code"),
        post_test: critique::load(spec, &id, "post-test"),
        blocking_followups: gates::blocking_followups(spec),
        head: head.as_deref(),
        now: &now,
    };
    // Criteria and test integrity: kept beside protocol's gates (proof.rs).
    let tree = member
        .as_ref()
        .map_or(project.root.as_path(), |(_, dir)| dir.as_path());
    let mut proof = proof::complete_unmet(project, spec, &held.state, &held.tasks.list, task, tree);
    // Red before, green after: the mapped tests run at the attempt's start commit, judged
    // before the lock was taken; again here only when what they were judged from changed.
    proof.extend(match early_red {
        Some((Some(k), work, lines))
            if work == tree && red_green_run::key(spec, &held.state, task).as_ref() == Some(&k) =>
        {
            lines
        }
        _ => red_green_run::check(project, spec, &held.state, &held.tasks.list, task, tree),
    });
    let mut out = match protocol::complete(&input) {
        Err(mut unmet) => {
            unmet.extend(proof);
            return Ok(refused(&held.ex, "complete", &id, &unmet, args.json));
        }
        Ok(_) if !proof.is_empty() => {
            return Ok(refused(&held.ex, "complete", &id, &proof, args.json));
        }
        Ok(out) => out,
    };
    // A member's work goes onto its branch before anything is ticked; `group merge` takes it
    // from there.
    let mut branch = None;
    if let Some((m, dir)) = &member {
        let (patch, note) = isolation::commit_ready(project, spec, task, m, dir)?;
        if let Some(p) = out.patch.as_mut() {
            *p = std::mem::take(p).merge(patch);
        }
        out.notes.push(note);
        branch = Some(m.branch.clone());
    }
    // Three files, each step safe to redo: ticked before the state is written (a crash in
    // between leaves a checked task with a running attempt, which a rerun completes), and
    // the progress line added once (a rerun of a completed task adds it if it is missing).
    if out.check_box {
        tasks_file::check(&held.tasks.path, &id, true)?;
        crate::support::fault::point("complete:box-checked");
    }
    if let Some(patch) = &out.patch {
        held.write(patch)?;
        crate::support::fault::point("complete:state-written");
    }
    if let Some(line) = &out.progress_line {
        // The completion is the box and the state, both written by now; the progress line
        // is its log. An error here would report a failure for a change already made.
        let dedupe = line.strip_prefix("- [x] ");
        if let Err(e) = held
            .ex
            .append_progress(protocol::COMPLETED_HEADING, line, dedupe)
        {
            out.notes.push(format!(
                "warning: task {id} is complete, but its .progress.md line was not written: {e}"
            ));
        }
        crate::support::fault::point("complete:progress-written");
    }
    if out.check_box {
        if let Err(e) = crate::model::record::earn(&project.root, &held.ex.spec.name, &id) {
            out.notes.push(format!(
                "warning: task {id} is complete, but the guard's record was not updated: {e}"
            ));
        }
    }
    held.ex.record_event(&Event::TaskComplete {
        task: &id,
        changed: out.changed,
        end_commit: head.as_deref(),
        branch: branch.as_deref(),
    });
    report(
        "task complete",
        &id,
        &out,
        args.json,
        Extra::Branch {
            branch: branch.as_deref(),
        },
    );
    Ok(ExitStatus::Success)
}

fn fail(project: &Project, args: &TaskVerbArgs, reason: &str, insert: bool) -> Result<ExitStatus> {
    let held = hold(project, args)?;
    let task = held.tasks.find(&args.id)?;
    let id = task.label();
    let member = isolation::open_member(project, &held.ex.spec, &Isolation::of(&held.state), &id);
    let head = match &member {
        Some((_, dir)) => git::head(dir),
        None => git::head(&project.tree),
    };
    let branch = member.as_ref().map(|(m, _)| m.branch.clone());
    let now = now_rfc3339();
    let input = FailInput {
        state: &held.state,
        list: &held.tasks.list,
        task,
        reason,
        insert,
        head: head.as_deref(),
        now: &now,
    };
    let out = match protocol::fail(&input) {
        Err(unmet) => {
            return Ok(refused(&held.ex, "fail", &id, &unmet, args.json));
        }
        Ok(out) => out,
    };
    // tasks.md first, then the state: a crash in between leaves the fix task in the file
    // but not in the state; the rerun adopts it (protocol::plan_fix) instead of adding one.
    if let Some(fix) = out.fix.as_ref().filter(|f| insert && !f.adopted) {
        tasks_file::insert_fix(&held.tasks.path, &id, fix)?;
        crate::support::fault::point("fail:tasks-written");
    }
    if let Some(patch) = &out.patch {
        held.write(patch)?;
        crate::support::fault::point("fail:state-written");
    }
    held.ex.record_event(&Event::TaskFail {
        task: &id,
        changed: out.changed,
        reason: reason.trim(),
        halted: out.halted,
        fix_task: out.fix.as_ref().map(|f| f.id.as_str()),
        branch: branch.as_deref(),
    });
    notify_halt(project, &held.ex.spec, &id, &out);
    report(
        "task fail",
        &id,
        &out,
        args.json,
        Extra::Failed {
            fix_task: out.fix.as_ref().map(|f| f.id.as_str()),
        },
    );
    Ok(ExitStatus::Success)
}

// ---- justify --------------------------------------------------------------------------

/// `specrun task justify ID --finding F --reason TEXT`.
fn justify(
    project: &Project,
    args: &TaskVerbArgs,
    finding: &str,
    reason: &str,
) -> Result<ExitStatus> {
    let reason = reason.trim();
    if reason.len() < 10 {
        return Err(Error::bad_input(
            "--reason",
            "say why the change is right (10 characters at least)",
        ));
    }
    let ex = Exec::new(project, args.spec.spec.as_deref())?;
    let spec = &ex.spec;
    let (_lock, state) = ex.lock_state()?;
    let list = ex.tasks()?;
    let id = list.find(&args.id)?.label();
    if proof::attempt_start(&state, &id).is_none() {
        return Err(Error::Refused {
            message: format!("task {id} has no running attempt with a start commit: there is no change to justify (`specrun task start {} {}`)", crate::support::shell::word(&id), crate::support::shell::spec_flag(&spec.name)),
        });
    }
    let member = isolation::open_member(project, spec, &Isolation::of(&state), &id);
    let tree = member
        .as_ref()
        .map_or(project.root.as_path(), |(_, dir)| dir.as_path());
    let found = proof::findings(project, spec, &state, &id, tree)?;
    let Some(f) = found.iter().find(|f| f.id == finding) else {
        let known: Vec<String> = found.iter().map(|f| f.to_string()).collect();
        return Err(Error::bad_input(
            "--finding",
            format!(
                "{finding:?} is not a finding of task {id}'s change; its findings: {}",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join("; ")
                }
            ),
        ));
    };
    let now = now_rfc3339();
    criteria::update_store(spec, |s| {
        s.justifications.entry(id.clone()).or_default().insert(
            f.id.clone(),
            Justification {
                reason: reason.to_string(),
                at: now.clone(),
                kind: f.kind.as_str().to_string(),
                file: f.file.clone(),
                line: f.line,
            },
        );
        Ok(())
    })?;
    let line = format!(
        "- task {id}: {} {} {}:{} ({}) — justified: {reason}",
        f.id,
        f.kind.as_str(),
        f.file,
        f.line,
        f.detail
    );
    // The justification is recorded in the state already; the progress line is its log.
    if let Err(e) = ex.append_progress(proof::JUSTIFICATIONS_HEADING, &line, None) {
        output::warn(&format!(
            "{} is justified, but its .progress.md line was not written: {e}",
            f.id
        ));
    }
    ex.record_event(&Event::TaskJustify {
        task: &id,
        finding: &f.id,
        kind: f.kind.as_str(),
        file: &f.file,
        line: f.line,
        reason,
    });
    if args.json {
        output::json_line(&Justified {
            ok: true,
            task: &id,
            finding: f,
            reason,
        });
    } else {
        output::line(&format!("{} justified for task {id}: {reason}", f.id));
    }
    Ok(ExitStatus::Success)
}

// ---- rollback -------------------------------------------------------------------------

fn rollback(project: &Project, args: &TaskVerbArgs, force: bool) -> Result<ExitStatus> {
    let held = hold(project, args)?;
    let task = held.tasks.find(&args.id)?;
    let id = task.label();
    if let Some((member, dir)) =
        isolation::rollback_target(project, &held.ex.spec, &Isolation::of(&held.state), &id)
    {
        return rollback_isolated(project, &held, task, force, &member, &dir, args.json);
    }
    let root = &project.root;
    if !git::is_repo(root) {
        return Ok(refuse(
            "task rollback",
            &id,
            &[Unmet {
                name: "git",
                detail: format!("{} is not a git repository", root.display()),
            }],
            args.json,
        ));
    }
    let head = git::head(root);
    let start = held.state.attempts_of(&id).last();
    let start = start.and_then(|a| a.start_commit.get().cloned());
    let changed = match (&head, &start) {
        (Some(_), Some(s)) => {
            crate::isolation::worktree::changed_since(project, &held.ex.spec, root, s)?
        }
        _ => Vec::new(),
    };
    let plan = match protocol::plan_rollback(&held.state, task, head.as_deref(), &changed, force) {
        Err(unmet) => {
            return Ok(refused(&held.ex, "rollback", &id, &unmet, args.json));
        }
        Ok(plan) => plan,
    };
    let head = head.expect("plan_rollback requires HEAD");
    // 1. Save everything first: after this, nothing below can lose work.
    let message = format!(
        "specrun rollback of task {id} attempt {} (spec {}): work discarded from {}",
        plan.n,
        held.ex.spec.name,
        protocol::short_commit(&plan.start_commit)
    );
    let base = format!(
        "refs/heads/specrun/rollback/{}/{id}-{}",
        held.ex.spec.name, plan.n
    );
    // Nothing left to save and a ref of this attempt already there: an earlier rollback
    // was killed after saving; its ref (not a new, empty one) is what the state records.
    let earlier = (changed.is_empty() && head == plan.start_commit)
        .then(|| saved_work::latest_ref(root, &base))
        .flatten();
    let (ref_name, saved) = match earlier {
        Some(found) => found,
        None => {
            let saved = saved_work::save_work(root, &head, &message)?;
            (saved_work::create_ref(root, &base, &saved)?, saved)
        }
    };
    crate::support::fault::point("rollback:work-saved");
    // 2. Return the tree, never touching the spec's bookkeeping: HEAD and index move, then
    // every other path is checked out and cleaned. No step rewrites a bookkeeping file, so
    // a kill anywhere leaves it current and a rerun saves and resets again (DESIGN-NOTES
    // "Multi-file transitions are safe to re-run").
    let spec = Some(&held.ex.spec);
    bookkeeping::guarded(project, spec, || {
        git::run(root, &["reset", "-q", "--mixed", &plan.start_commit], &[])?;
        crate::support::fault::point("rollback:head-moved");
        bookkeeping::git_outside(project, spec, &["checkout", "-q"])?;
        bookkeeping::git_outside(project, spec, &["clean", "-fdq"])
    })?;
    crate::support::fault::point("rollback:tree-reset");
    let out = protocol::rollback_done(&held.state, task, &plan, &ref_name, &now_rfc3339());
    if let Some(patch) = &out.patch {
        held.write(patch)?;
    }
    held.ex
        .record_event(&Event::TaskRollback(Rollback::InPlace {
            task: &id,
            saved_ref: &ref_name,
            saved_commit: &saved,
            from: &head,
            to: &plan.start_commit,
            halted: out.halted,
        }));
    notify_halt(project, &held.ex.spec, &id, &out);
    report(
        "task rollback",
        &id,
        &out,
        args.json,
        Extra::Saved {
            saved_ref: &ref_name,
            saved_commit: &saved,
            branch: None,
        },
    );
    Ok(ExitStatus::Success)
}

/// Rollback of an isolated member: its worktree's work (commits and uncommitted changes)
/// saved to a ref, then the worktree and branch removed; the main checkout is untouched.
fn rollback_isolated(
    project: &Project,
    held: &Held,
    task: &Task,
    force: bool,
    member: &crate::isolation::worktree::Member,
    dir: &Path,
    json_out: bool,
) -> Result<ExitStatus> {
    let id = task.label();
    let head = git::head(dir);
    let start = held.state.attempts_of(&id).last();
    let start = start.and_then(|a| a.start_commit.get().cloned());
    let changed = match &start {
        Some(s) => crate::isolation::worktree::changed_since(project, &held.ex.spec, dir, s)?,
        None => Vec::new(),
    };
    let plan = match protocol::plan_rollback(&held.state, task, head.as_deref(), &changed, force) {
        Err(unmet) => return Ok(refused(&held.ex, "rollback", &id, &unmet, json_out)),
        Ok(plan) => plan,
    };
    let (saved, ref_name, member_patch) =
        isolation::rollback_member(project, &held.ex.spec, &id, plan.n, member, dir)?;
    let out = protocol::rollback_done(&held.state, task, &plan, &ref_name, &now_rfc3339());
    let patch = out.patch.clone().unwrap_or_default();
    held.write(&patch.merge(member_patch))?;
    held.ex.record_event(&Event::TaskRollback(Rollback::Member {
        task: &id,
        saved_ref: &ref_name,
        saved_commit: &saved,
        from: head.as_deref(),
        branch: &member.branch,
        worktree_removed: dir,
        halted: out.halted,
    }));
    report(
        "task rollback",
        &id,
        &out,
        json_out,
        Extra::Saved {
            saved_ref: &ref_name,
            saved_commit: &saved,
            branch: Some(&member.branch),
        },
    );
    Ok(ExitStatus::Success)
}
