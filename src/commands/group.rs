//! `specrun group merge`: merge an isolated group's completed members into the base branch
//! one at a time (`--no-ff`, task-id order), then verify the merged tree. Safe to re-run
//! after a crash: a member whose branch tip is already in the base branch is recorded as
//! merged, never merged twice; a merge a crash left half-done is aborted first.

use serde::Serialize;

use crate::cli::{GroupCommand, GroupMergeArgs};
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::followups::{NewItem, Store};
use crate::evidence::verify::{self, Slot};
use crate::io::bookkeeping;
use crate::io::events::now_rfc3339;
use crate::io::events::{Event, GroupMerge};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::isolation::worktree::{self, Group, Isolation, Member, Step, Unavailable};
use crate::model::state::{EvidenceRecord, Nullable, State, Timestamp};
use crate::model::tasks::TaskList;
use crate::model::tasks_file;

pub(crate) fn run(project: &Project, cmd: GroupCommand) -> Result<ExitStatus> {
    match cmd {
        GroupCommand::Merge(args) => merge(project, &args),
    }
}

/// What happened to each member in this run.
#[derive(Debug, Default)]
struct Tally {
    merged: Vec<String>,
    conflicts: Vec<(String, Vec<String>)>,
    outside: Vec<(String, Vec<String>)>,
    /// Members still to finish or retry, with their status.
    remaining: Vec<(String, String)>,
    merged_total: usize,
}

fn merge(project: &Project, args: &GroupMergeArgs) -> Result<ExitStatus> {
    if project.in_worktree() {
        return Err(Error::Usage(format!(
            "run `specrun group merge` from the main checkout {}, not from a member's worktree",
            project.root.display()
        )));
    }
    let ex = Exec::new(project, args.spec.spec.as_deref())?;
    let spec = &ex.spec;
    let (group, tally) = merge_members(&ex)?;
    let still_running = tally.remaining.iter().any(|(_, s)| s == worktree::RUNNING);
    if group.is_complete() && tally.merged.is_empty() {
        return finish(spec, &group, &tally, None, args.json);
    }
    if tally.merged_total == 0 || still_running {
        return finish(spec, &group, &tally, None, args.json);
    }
    let verification = verify_merged(project, spec, &group, args)?;
    let group = mark_group(&ex, &tally, &verification)?;
    finish(spec, &group, &tally, Some(&verification), args.json)
}

/// Phase 1, under the state lock: merge every ready member in task-id order.
fn merge_members(ex: &Exec) -> Result<(Group, Tally)> {
    let (project, spec) = (ex.project, &ex.spec);
    let (_lock, mut state) = ex.lock_state()?;
    let iso = Isolation::of(&state);
    let group = iso.group.clone().ok_or_else(|| Error::Refused {
        message: format!(
            "{} has no isolated group: start members with `specrun task start ID --worktree`",
            spec.name
        ),
    })?;
    recover_interrupted_merge(project, &iso)?;
    preflight(project, spec, &group)?;
    let tasks = ex.tasks()?;
    let mut tally = Tally::default();
    let ctx = Ctx {
        ex,
        list: &tasks.list,
    };
    let mut merger = worktree::Merger::new(&project.root)?;
    let mut pending: Vec<(String, Member, String)> = Vec::new();
    for id in merge_order(&tasks.list, &group.members) {
        let member = Isolation::of(&state).member(&id).cloned();
        match member {
            None => {
                let checked = tasks.list.find(&id).is_ok_and(|t| t.checked);
                if checked {
                    tally.merged_total += 1; // done in the shared tree
                } else {
                    tally.remaining.push((id, "not started".into()));
                }
            }
            Some(m) if m.status == worktree::MERGED => tally.merged_total += 1,
            Some(m) if m.status == worktree::READY => {
                state = ctx.merge_one(state, &mut merger, &id, &m, &mut tally, &mut pending)?;
            }

            Some(m) => tally.remaining.push((id, m.status.clone())),
        }
    }
    // The merge commits reach the base branch together; a crash before the records below
    // leaves branches whose tips are in HEAD, which the re-run records as merged.
    bookkeeping::guarded(project, Some(spec), || merger.land())?;
    for (id, m, commit) in pending {
        state = ctx.merged(state, &id, &m, Some(commit), &mut tally)?;
    }
    Ok((group, tally))
}

/// Task ids in file order (the order their tasks appear in tasks.md).
fn merge_order(list: &TaskList, members: &[String]) -> Vec<String> {
    let mut ids: Vec<(usize, String)> = members
        .iter()
        .map(|m| {
            (
                list.find(m).map(|t| t.index).unwrap_or(usize::MAX),
                m.clone(),
            )
        })
        .collect();
    ids.sort();
    ids.into_iter().map(|(_, id)| id).collect()
}

/// A merge a crash left in progress in the main checkout: aborted when it is one of this
/// group's members (the re-run merges it again), refused otherwise.
fn recover_interrupted_merge(project: &Project, iso: &Isolation) -> Result<()> {
    let root = &project.root;
    let Some(merging) = worktree::rev(root, "MERGE_HEAD") else {
        return Ok(());
    };
    let ours = iso.members.values().any(|m| {
        worktree::rev(root, &format!("refs/heads/{}", m.branch)).as_deref()
            == Some(merging.as_str())
    });
    if !ours {
        return Err(Error::Refused {
            message: format!(
                "a merge of {} that specrun did not start is in progress in {}: finish it or `git merge --abort`, then re-run",
                crate::protocol::short_commit(&merging),
                root.display()
            ),
        });
    }
    bookkeeping::guarded(project, None, || {
        crate::io::git::run(root, &["merge", "--abort"], &[])
    })?;
    output::warn("aborted a member merge an earlier run left half-done; merging it again");
    Ok(())
}

/// The main checkout must be a clean git checkout of the group's base branch.
fn preflight(project: &Project, spec: &Spec, group: &Group) -> Result<()> {
    match worktree::main_base(project, spec) {
        Ok((branch, _)) if branch == group.base_branch => Ok(()),
        Ok((branch, _)) => Err(Error::Refused {
            message: format!(
                "the main checkout is on {branch}, but the group merges into {}: `git switch {}` and re-run",
                group.base_branch, group.base_branch
            ),
        }),
        Err(Unavailable::NotGit) => Err(Error::Refused {
            message: format!(
                "{} is not a git repository: there is nothing to merge (the group ran in the shared tree)",
                project.root.display()
            ),
        }),
        Err(Unavailable::Refused(why)) => Err(Error::Refused { message: why }),
    }
}

/// Merge one ready member, writing the state right after, so a crash between two members
/// leaves every finished merge recorded or detectable.
/// What merging one member needs besides the member.
struct Ctx<'a> {
    ex: &'a Exec<'a>,
    list: &'a TaskList,
}

impl Ctx<'_> {
    fn merge_one(
        &self,
        state: State,
        merger: &mut worktree::Merger,
        id: &str,
        m: &Member,
        tally: &mut Tally,
        pending: &mut Vec<(String, Member, String)>,
    ) -> Result<State> {
        let (project, spec, list) = (self.ex.project, &self.ex.spec, self.list);
        let task = list.find(id).map_err(|e| Error::Task {
            path: spec.tasks_path(),
            message: e.to_string(),
        })?;
        // Scope again on the branch itself: the commit is what gets merged.
        let changed = branch_changes(project, spec, m)?;
        let outside = worktree::outside_files(task, &changed);
        if !outside.is_empty() {
            tally.outside.push((id.to_string(), outside.clone()));
            tally
                .remaining
                .push((id.to_string(), worktree::OUTSIDE_FILES.into()));
            return self.reject(state, id, m, worktree::OUTSIDE_FILES, outside);
        }
        let message = format!(
            "specrun: merge task {id} {} (spec {})",
            task.title, spec.name
        );
        match bookkeeping::guarded(project, Some(spec), || merger.step(&m.branch, &message))? {
            Step::Pending(commit) => {
                pending.push((id.to_string(), m.clone(), commit));
                Ok(state)
            }
            Step::Landed(commit) => self.merged(state, id, m, Some(commit), tally),
            Step::AlreadyMerged => self.merged(state, id, m, None, tally),
            Step::Conflict(files) => {
                tally.conflicts.push((id.to_string(), files.clone()));
                tally
                    .remaining
                    .push((id.to_string(), worktree::CONFLICT.into()));
                self.reject(state, id, m, worktree::CONFLICT, files)
            }
        }
    }

    fn merged(
        &self,
        state: State,
        id: &str,
        m: &Member,
        commit: Option<String>,
        tally: &mut Tally,
    ) -> Result<State> {
        let (project, spec) = (self.ex.project, &self.ex.spec);
        let root = &project.root;
        let commit = commit.or_else(|| worktree::rev(root, "HEAD"));
        let done = Member {
            status: worktree::MERGED.into(),
            merge_commit: commit.clone(),
            conflicts: Vec::new(),
            ..m.clone()
        };
        let dir = project.worktrees_dir(&spec.name).join(&m.worktree);
        let mut patch = worktree::member_patch(id, &done);
        if let Some(record) = self.moved_evidence(&state, id, m, &dir, commit.as_deref()) {
            patch = patch.task_evidence(id, &record);
        }
        let next = self.ex.write_state(&state, &patch)?;
        self.ex.record_event(&Event::GroupMerge(GroupMerge::Merged {
            task: id,
            branch: &m.branch,
            merge_commit: commit.as_deref(),
        }));
        if let Err(e) = bookkeeping::guarded(project, Some(spec), || {
            worktree::remove_worktree(root, &dir)
        }) {
            output::warn(&format!("merged task {id}, but its worktree stays: {e}"));
        }
        worktree::delete_branch(root, &m.branch);
        resolve_followups(spec, id);
        tally.merged.push(id.to_string());
        tally.merged_total += 1;
        Ok(next)
    }

    /// The member's evidence record, taken from its worktree (about to go) to the merged
    /// tree (`verify::merged_record`); `None` when there is none to take, or it was stale.
    fn moved_evidence(
        &self,
        state: &State,
        id: &str,
        m: &Member,
        dir: &std::path::Path,
        commit: Option<&str>,
    ) -> Option<EvidenceRecord> {
        let record = state
            .task_evidence(id)
            .filter(|r| r.worktree() == Some(m.worktree.as_str()))?;
        let members = Isolation::of(state)
            .group
            .map(|g| g.members)
            .unwrap_or_default();
        let tasks: Vec<&crate::model::tasks::Task> = members
            .iter()
            .filter_map(|t| self.list.find(t).ok())
            .collect();
        let others = verify::others_files(&tasks, id);
        let (project, spec) = (self.ex.project, &self.ex.spec);
        match verify::merged_record(project, spec, record, dir, &others, commit) {
            Ok(moved) => moved,
            Err(e) => {
                output::warn(&format!(
                    "merged task {id}; its evidence stays bound to its worktree: {e}"
                ));
                None
            }
        }
    }

    /// A member that cannot be merged: its branch and worktree kept, its attempt failed with
    /// the files named, its box unticked, a blocking follow-up recorded.
    fn reject(
        &self,
        state: State,
        id: &str,
        m: &Member,
        status: &str,
        files: Vec<String>,
    ) -> Result<State> {
        let (spec, list) = (&self.ex.spec, self.list);
        let why = if status == worktree::CONFLICT {
            format!(
                "merge conflict with the merged base in {}",
                worktree::list_some(&files)
            )
        } else {
            format!(
                "changed files outside its Files: {}",
                worktree::list_some(&files)
            )
        };
        let now = Timestamp::now();
        let kept = Member {
            status: status.into(),
            conflicts: files.clone(),
            ..m.clone()
        };
        let mut history = state.attempts_of(id).to_vec();
        if let Some(last) = history.last_mut() {
            last.status = Some("failed".into());
            last.reason = Nullable::Set(why.clone());
            last.ended_at = Nullable::Set(now);
        }
        if list.find(id).is_ok_and(|t| t.checked) {
            tasks_file::check(&spec.tasks_path(), id, false)?;
        }
        let reread = self.ex.tasks()?;
        let patch = worktree::member_patch(id, &kept)
            .attempts(id, &history)
            .task_index(reread.list.next_index() as u64);
        let next = self.ex.write_state(&state, &patch)?;
        add_followup(spec, id, &m.branch, &why, files.clone());
        self.ex.record_event(&Event::GroupMerge(GroupMerge::Kept {
            task: id,
            branch: &m.branch,
            kept: true,
            status,
            files: &files,
        }));
        Ok(next)
    }
}

/// Paths the member's branch changed since its base.
fn branch_changes(project: &Project, spec: &Spec, m: &Member) -> Result<Vec<String>> {
    let out = crate::io::git::run(
        &project.root,
        &[
            "diff",
            "--name-only",
            "--no-renames",
            "-z",
            &m.base,
            &format!("refs/heads/{}", m.branch),
            "--",
        ],
        &[],
    )?;
    let changed: Vec<String> = out
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    Ok(worktree::dirty_files(project, spec, &changed))
}

const FOLLOWUP_PREFIX: &str = "isolated member";

fn add_followup(spec: &Spec, id: &str, branch: &str, why: &str, files: Vec<String>) {
    let id_q = crate::support::shell::word(id);
    let new = NewItem {
        category: "VERIFY".into(),
        priority: "high".into(),
        title: format!(
            "{FOLLOWUP_PREFIX} {id} not merged ({why}); kept on {branch}: retry with `specrun task start {id_q} --worktree` (merges the base into the branch, never a rebase), then `specrun group merge`"
        ),
        task: Some(id.to_string()),
        files,
    };
    let now = now_rfc3339();
    let result = store::update_json(&spec.followups_path(), store::DEFAULT_LOCK_WAIT, |doc| {
        let mut s = Store::from_json(doc.as_ref(), &spec.followups_path())?;
        let changed = s.add(new, &now).is_ok();
        Ok((changed.then(|| s.to_json()), ()))
    });
    if let Err(e) = result {
        output::warn(&format!("could not record the follow-up: {e}"));
    }
}

/// A member merged at last: its not-merged follow-ups are resolved.
fn resolve_followups(spec: &Spec, id: &str) {
    let now = now_rfc3339();
    let _ = store::update_json(&spec.followups_path(), store::DEFAULT_LOCK_WAIT, |doc| {
        let Ok(mut s) = Store::from_json(doc.as_ref(), &spec.followups_path()) else {
            return Ok((None, ()));
        };
        let open: Vec<String> = s
            .open()
            .filter(|i| i.task.as_deref() == Some(id) && i.title.starts_with(FOLLOWUP_PREFIX))
            .map(|i| i.id.clone())
            .collect();
        for fid in &open {
            let _ = s.resolve(fid, "merged by `specrun group merge`", &now);
        }
        Ok(((!open.is_empty()).then(|| s.to_json()), ()))
    });
}

/// The merged tree's verification run.
struct Verification {
    slot: Slot,
    command: String,
    passed: bool,
    tree: String,
    exit_code: i32,
}

/// Phase 2, outside the lock: run the `[VERIFY]` task's command (else `--command`, else the
/// execution phase's recorded command) on the merged tree and record it.
fn verify_merged(
    project: &Project,
    spec: &Spec,
    group: &Group,
    args: &GroupMergeArgs,
) -> Result<Verification> {
    let list = tasks_file::load(&spec.tasks_path())?.list;
    let verify_task = group
        .verify_task
        .as_deref()
        .and_then(|id| list.find(id).ok())
        .filter(|t| t.verify_command().is_some());
    let state = crate::model::state::read_lenient(&spec.state_path())?;
    let execution = state
        .as_ref()
        .and_then(|s| s.verification_block("execution"));
    let recorded = execution
        .and_then(EvidenceRecord::command)
        .map(str::to_string);
    let (slot, command) = match (verify_task, &args.command, recorded) {
        // The [VERIFY] task's own command, so its evidence counts for it.
        (Some(t), _, _) => (Slot::Task(t.label()), None),
        (None, Some(c), _) => (Slot::Phase("execution".into()), Some(c.clone())),
        (None, None, Some(c)) => (Slot::Phase("execution".into()), Some(c)),
        (None, None, None) => members_check(spec, &list, group)?,
    };
    let plan = crate::evidence::verify_run::plan_run(spec, &slot, command, None)?;
    let (record, _) =
        crate::evidence::verify_run::record_run(project, spec, &slot, &plan, args.timeout)?;
    let command = record.command.clone();
    let unchanged = record.before.tree == record.after.tree;
    Ok(Verification {
        passed: record.exit_code == 0 && !record.timed_out && unchanged,
        tree: record.before.tree.clone(),
        exit_code: record.exit_code,
        slot,
        command,
    })
}

/// The slot of a merged tree checked with its members' own Verify commands: not the
/// execution phase's, which stands for the full check (and vouches for a task's claim).
pub(crate) const MEMBERS_SLOT: &str = "isolated-group";

/// No `[VERIFY]` task after the group and no check recorded: the members' own Verify
/// commands, each in task order, checked together on the merged tree.
fn members_check(spec: &Spec, list: &TaskList, group: &Group) -> Result<(Slot, Option<String>)> {
    let commands: Vec<String> = group
        .members
        .iter()
        .filter_map(|id| list.find(id).ok()?.verify_command())
        // A list or a pipeline keeps its own exit status: `a; b && c` would drop a's.
        .map(|c| match c.contains([';', '|', '&', '\n']) {
            true => format!("( {c} )"),
            false => c.to_string(),
        })
        .collect();
    if commands.is_empty() {
        return Err(Error::Usage(format!(
            "no [VERIFY] task follows the group, no check is recorded for the execution phase and no member has a Verify command: re-run with `specrun group merge --spec {} --command '<the command that checks the merged tree>'` (the merges are kept)",
            spec.name
        )));
    }
    Ok((
        Slot::Phase(MEMBERS_SLOT.into()),
        Some(commands.join(" && ")),
    ))
}

/// Phase 3: the group is complete only when every member merged and the merged tree's
/// verification passed on its fingerprint.
fn mark_group(ex: &Exec, tally: &Tally, v: &Verification) -> Result<Group> {
    let (_lock, state) = ex.lock_state()?;
    let mut group = Isolation::of(&state).group.unwrap_or_default();
    let all_merged = tally.remaining.is_empty();
    group.status = match (v.passed, all_merged) {
        (true, true) => "complete",
        (true, false) => "partial",
        (false, _) => "verify-failed",
    }
    .into();
    group.verified_tree = v.passed.then(|| v.tree.clone());
    ex.write_state(&state, &worktree::group_patch(&group))?;
    ex.record_event(&Event::GroupVerify {
        slot: &v.slot.describe(),
        command: &v.command,
        exit_code: v.exit_code,
        tree: &v.tree,
        passed: v.passed,
        group_status: &group.status,
    });
    Ok(group)
}

/// `group merge --json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    ok: bool,
    spec: &'a str,
    group_status: &'a str,
    members: &'a [String],
    merged: &'a [String],
    conflicts: ByTask<'a>,
    outside_files: ByTask<'a>,
    remaining: Vec<Remaining<'a>>,
    verified: Option<Verified<'a>>,
    next: &'a str,
}

/// Files by member task, as one JSON object (`{"1.2": ["src/a.rs"]}`).
struct ByTask<'a>(&'a [(String, Vec<String>)]);

impl Serialize for ByTask<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(id, files)| (id, files)))
    }
}

#[derive(Serialize)]
struct Remaining<'a> {
    task: &'a str,
    status: &'a str,
}

#[derive(Serialize)]
struct Verified<'a> {
    slot: String,
    command: &'a str,
    passed: bool,
    tree: &'a str,
}

fn finish(
    spec: &Spec,
    group: &Group,
    tally: &Tally,
    v: Option<&Verification>,
    json_out: bool,
) -> Result<ExitStatus> {
    let next = next_step(spec, group, tally, v);
    if json_out {
        output::json_line(&Answer {
            ok: group.is_complete(),
            spec: &spec.name,
            group_status: &group.status,
            members: &group.members,
            merged: &tally.merged,
            conflicts: ByTask(&tally.conflicts),
            outside_files: ByTask(&tally.outside),
            remaining: tally
                .remaining
                .iter()
                .map(|(task, status)| Remaining { task, status })
                .collect(),
            verified: v.map(|v| Verified {
                slot: v.slot.describe(),
                command: &v.command,
                passed: v.passed,
                tree: &v.tree,
            }),
            next: &next,
        });
    } else {
        for id in &tally.merged {
            output::line(&format!("merged {id} into {}", group.base_branch));
        }
        for (id, files) in &tally.conflicts {
            output::line(&format!(
                "conflict: {id} not merged ({}); kept on {}",
                worktree::list_some(files),
                worktree::branch_name(&spec.name, id)
            ));
        }
        for (id, files) in &tally.outside {
            output::line(&format!(
                "refused: {id} changed files outside its Files ({}); kept on {}",
                worktree::list_some(files),
                worktree::branch_name(&spec.name, id)
            ));
        }
        if let Some(v) = v {
            output::line(&format!(
                "verification of the merged tree {}: {} ({})",
                if v.passed { "passed" } else { "failed" },
                v.command,
                v.slot.describe()
            ));
        }
        output::line(&format!(
            "group {}: {}",
            group.members.join(", "),
            group.status
        ));
        output::line(&format!("next: {next}"));
    }
    Ok(ExitStatus::yes_no(group.is_complete()))
}

/// The one next step for the coordinator.
fn next_step(spec: &Spec, group: &Group, tally: &Tally, v: Option<&Verification>) -> String {
    if let Some((id, _)) = tally
        .remaining
        .iter()
        .find(|(_, s)| s == worktree::CONFLICT || s == worktree::OUTSIDE_FILES)
        .or_else(|| tally.remaining.iter().find(|(_, s)| s != worktree::RUNNING))
    {
        let id_q = crate::support::shell::word(id);
        return format!(
            "retry {id} on the merged base: `specrun task start {id_q} --worktree` (merges {} into {}; never a rebase), resolve and verify there, `specrun task complete {id_q} --check`, then `specrun group merge` again",
            group.base_branch,
            worktree::branch_name(&spec.name, id)
        );
    }
    if let Some((id, _)) = tally.remaining.first() {
        let id_q = crate::support::shell::word(id);
        return format!("wait for {id} to complete (`specrun task complete {id_q} --check` in its worktree), then `specrun group merge` again");
    }
    match v {
        Some(v) if !v.passed => format!(
            "the merged tree fails `{}`: fix it in the main checkout, then `specrun group merge` again (it only re-verifies)",
            v.command
        ),
        _ if group.is_complete() => match &group.verify_task {
            Some(t) => {
                let t = crate::support::shell::word(t);
                format!("complete the [VERIFY] task: `specrun task start {t}` and `specrun task complete {t} --check` (its evidence is recorded on the merged tree)")
            }
            None => "continue with the next task".into(),
        },
        _ => "`specrun group merge` again".into(),
    }
}
