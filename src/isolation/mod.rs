//! The task verbs' isolation steps: `task start --worktree` creates (or takes up again) a
//! member's worktree, `task complete` checks its scope and commits it on its branch,
//! `task rollback` saves its branch's work and removes it; `status`, `resume`, `cancel`
//! and `doctor` read the group's standing and its worktrees here.

pub(crate) mod saved_work;
pub mod worktree;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Result;
use crate::io::project::{Project, Spec};
use crate::model::state::{Patch, State};
use crate::model::tasks::{Task, TaskList};
use crate::model::unmet::Unmet;
use worktree::{Group, Isolation, Member, Unavailable};

/// A task that is not in the open isolated group waits until that group is merged and
/// verified (`group merge`); fix tasks of its members may run.
pub(crate) fn group_gate(iso: &Isolation, task: &Task) -> Option<Unmet> {
    let group = iso.open_group()?;
    let id = task.label();
    let member_of = |t: &str| group.members.iter().any(|m| m == t);
    if member_of(&id) || task.fixes().is_some_and(member_of) {
        return None;
    }
    Some(Unmet::new(
        "group-merged",
        format!(
            "the isolated group {} is not merged and verified yet: run `specrun group merge` once its members are complete",
            group.members.join(", ")
        ),
    ))
}

/// What `task start --worktree` settled on.
pub(crate) enum Start {
    /// Isolation is unavailable here (not a git repository): the task runs in the shared
    /// tree, as without `--worktree`.
    Shared(String),
    Refused(Unmet),
    Isolated {
        path: PathBuf,
        head: Option<String>,
        patch: Patch,
        notes: Vec<String>,
    },
}

fn refused(detail: String) -> Start {
    Start::Refused(Unmet::new("isolation", detail))
}

/// Check the main checkout, settle the group and base, and create or reuse the worktree.
pub(crate) fn start(
    project: &Project,
    spec: &Spec,
    iso: &Isolation,
    list: &TaskList,
    task: &Task,
) -> Result<Start> {
    let id = task.label();
    if project.in_worktree() {
        return Ok(refused(format!(
            "run `task start {id} --worktree` from the main checkout {}, not from inside a worktree",
            project.root.display()
        )));
    }
    if !task.is_parallel() && !iso.sequential && iso.open_group().is_none() {
        return Ok(refused(format!(
            "task {id} is not a [P] member: sequential tasks run isolated only after `specrun state init --isolate`"
        )));
    }
    let (branch, head) = match worktree::main_base(project, spec) {
        Ok(found) => found,
        Err(Unavailable::NotGit) => {
            return Ok(Start::Shared(format!(
                "isolation unavailable: {} is not a git repository; task {id} runs in the shared tree as before",
                project.root.display()
            )))
        }
        Err(Unavailable::Refused(why)) => return Ok(refused(why)),
    };
    let existing = iso
        .open_group()
        .filter(|g| g.members.contains(&id))
        .cloned();
    let group = match existing {
        Some(g) if g.base_branch != branch => {
            return Ok(refused(format!(
            "the main checkout is on {branch}, but the group merges into {}: `git switch {}` first",
            g.base_branch, g.base_branch
        )))
        }
        Some(g) => g,
        None => {
            let members = worktree::group_members(list, task);
            Group {
                verify_task: worktree::verify_task_after(list, &members),
                members,
                base_branch: branch,
                base: head.clone(),
                status: "running".into(),
                verified_tree: None,
            }
        }
    };
    // Before any member merged, every member starts from the group's base; a retry starts
    // from the merged base (the base branch now).
    let any_merged = group
        .members
        .iter()
        .any(|m| iso.member(m).is_some_and(|r| r.status == worktree::MERGED));
    let base = if any_merged { head } else { group.base.clone() };
    let ours = iso
        .member(&id)
        .is_some_and(|m| m.branch == worktree::branch_name(&spec.name, &id));
    let ensured = worktree::ensure(project, spec, &id, &base, ours)?;
    let member = Member {
        branch: ensured.branch.clone(),
        worktree: id.clone(),
        base,
        status: worktree::RUNNING.into(),
        ..Default::default()
    };
    let patch = worktree::group_patch(&group).merge(worktree::member_patch(&id, &member));
    Ok(Start::Isolated {
        head: worktree::rev(&ensured.path, "HEAD"),
        path: ensured.path,
        patch,
        notes: ensured.notes,
    })
}

/// The member record of `id`, when `wanted` accepts it and its worktree is on disk.
fn member_on_disk(
    project: &Project,
    spec: &Spec,
    iso: &Isolation,
    id: &str,
    wanted: impl Fn(&Member) -> bool,
) -> Option<(Member, PathBuf)> {
    let member = iso.member(id).filter(|m| wanted(m))?.clone();
    let dir = project.worktrees_dir(&spec.name).join(&member.worktree);
    dir.join(".git").is_file().then_some((member, dir))
}

/// A running member: `task complete` and `task fail` work on its worktree.
pub(crate) fn open_member(
    project: &Project,
    spec: &Spec,
    iso: &Isolation,
    id: &str,
) -> Option<(Member, PathBuf)> {
    member_on_disk(project, spec, iso, id, |m| m.status == worktree::RUNNING)
}

/// The tree task `id` works in: its running member's worktree, else the project root.
pub(crate) fn task_tree(project: &Project, spec: &Spec, iso: &Isolation, id: &str) -> PathBuf {
    open_member(project, spec, iso, id).map_or_else(|| project.root.clone(), |(_, dir)| dir)
}

/// A member `task rollback` acts on: open, not yet committed as complete.
pub(crate) fn rollback_target(
    project: &Project,
    spec: &Spec,
    iso: &Isolation,
    id: &str,
) -> Option<(Member, PathBuf)> {
    member_on_disk(project, spec, iso, id, |m| {
        m.is_open() && m.status != worktree::READY
    })
}

/// `task complete` of a member: every changed path must lie in the task's Files.
pub(crate) fn scope_unmet(
    project: &Project,
    spec: &Spec,
    task: &Task,
    member: &Member,
    dir: &Path,
) -> Result<Option<Unmet>> {
    let changed = worktree::changed_since(project, spec, dir, &member.base)?;
    let outside = worktree::outside_files(task, &changed);
    if outside.is_empty() {
        return Ok(None);
    }
    Ok(Some(Unmet::new(
        "within-files",
        format!(
            "task {} changed files outside its Files ({}): {}; revert them in {} (or list them under the task's Files) and complete again",
            task.label(),
            task.files.join(", "),
            worktree::list_some(&outside),
            dir.display()
        ),
    )))
}

/// Commit a completed member on its branch; returns the state patch marking it ready and
/// a note for the coordinator.
pub(crate) fn commit_ready(
    project: &Project,
    spec: &Spec,
    task: &Task,
    member: &Member,
    dir: &Path,
) -> Result<(Patch, String)> {
    let id = task.label();
    let message = format!("specrun: task {id} {} (spec {})", task.title, spec.name);
    let tip = worktree::commit_member(project, spec, dir, &message)?;
    let ready = Member {
        status: worktree::READY.into(),
        ..member.clone()
    };
    let note = format!(
        "committed on {} at {}; once every member is complete: `specrun group merge`",
        member.branch,
        crate::io::git::short_commit(&tip)
    );
    Ok((worktree::member_patch(&id, &ready), note))
}

/// `task rollback` of a member: save its worktree (commits and uncommitted work) to a
/// ref, then remove the worktree and branch, so nothing is left behind and nothing lost.
pub(crate) fn rollback_member(
    project: &Project,
    spec: &Spec,
    id: &str,
    n: u64,
    member: &Member,
    dir: &Path,
) -> Result<(String, String, Patch)> {
    let head = worktree::rev(dir, "HEAD").unwrap_or_else(|| member.base.clone());
    let message = format!(
        "specrun rollback of task {id} attempt {n} (spec {}): work of {} saved",
        spec.name, member.branch
    );
    let saved = saved_work::save_work(dir, &head, &message)?;
    let ref_name = saved_work::create_ref(
        &project.root,
        &format!("refs/heads/specrun/rollback/{}/{id}-{n}", spec.name),
        &saved,
    )?;
    crate::io::bookkeeping::guarded(project, Some(spec), || {
        worktree::remove_worktree(&project.root, dir)
    })?;
    worktree::delete_branch(&project.root, &member.branch);
    let gone = Member {
        status: worktree::ROLLED_BACK.into(),
        saved_ref: Some(ref_name.clone()),
        ..member.clone()
    };
    Ok((saved, ref_name, worktree::member_patch(id, &gone)))
}

/// Why a record made in the worktree `name` is judged in the main checkout: the member
/// that owned it is merged (at its merge commit) or gone otherwise.
pub(crate) fn gone_note(iso: &Isolation, name: &str) -> String {
    let owner = iso.members.iter().find(|(_, m)| m.worktree == name);
    let what = match owner {
        Some((id, m)) => match (&m.merge_commit, m.status.as_str()) {
            (Some(c), worktree::MERGED) => {
                format!("task {id} merged at {}", crate::protocol::short_commit(c))
            }
            (_, status) => format!("task {id} {status}"),
        },
        None => "no member owns it now".into(),
    };
    format!("recorded in worktree {name}, which is gone ({what}): judged on the main checkout")
}

/// The isolated group's standing: a head (members, base branch, group status), one part
/// per member (merged, or its status and where its work is kept) and the same as JSON.
#[derive(Debug, Clone)]
pub(crate) struct Standing {
    pub head: String,
    pub parts: Vec<String>,
    pub doc: GroupDoc,
}

/// The group's standing as `status --json` and `resume --json` show it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GroupDoc {
    spec: String,
    members: Vec<String>,
    base_branch: String,
    status: String,
    merged: Vec<String>,
    remaining: Vec<Remaining>,
    verified_tree: Option<String>,
}

/// A member not merged yet: its status and, when it has one, its branch.
#[derive(Debug, Clone, Serialize)]
struct Remaining {
    task: String,
    status: String,
    branch: Option<String>,
}

/// The isolated group's standing for `status` and `resume`: which members merged, which
/// remain (and where their work is kept). `None` without a group.
pub(crate) fn standing(spec_name: &str, state: &State) -> Option<Standing> {
    standing_of(spec_name, &Isolation::of(state))
}

/// [`standing`] of an isolation record already read.
pub(crate) fn standing_of(spec_name: &str, iso: &Isolation) -> Option<Standing> {
    let group = iso.group.as_ref()?;
    let mut merged = Vec::new();
    let mut remaining = Vec::new();
    let mut parts = Vec::new();
    for id in &group.members {
        let m = iso.member(id);
        let status = m.map(|m| m.status.as_str()).unwrap_or("shared tree");
        if status == worktree::MERGED {
            merged.push(id.clone());
            parts.push(format!("{id} merged"));
        } else {
            let kept = m
                .filter(|m| m.is_open())
                .map(|m| format!(" on {}", m.branch))
                .or_else(|| {
                    m.and_then(|m| m.saved_ref.as_ref())
                        .map(|r| format!(", saved to {r}"))
                })
                .unwrap_or_default();
            remaining.push(Remaining {
                task: id.clone(),
                status: status.to_string(),
                branch: m.map(|m| m.branch.clone()),
            });
            parts.push(format!("{id} {status}{kept}"));
        }
    }
    let head = format!(
        "{} into {}: {}",
        group.members.join(", "),
        group.base_branch,
        group.status
    );
    let doc = GroupDoc {
        spec: spec_name.to_string(),
        members: group.members.clone(),
        base_branch: group.base_branch.clone(),
        status: group.status.clone(),
        merged,
        remaining,
        verified_tree: group.verified_tree.clone(),
    };
    Some(Standing { head, parts, doc })
}

/// [`standing`] on one line (`group <head>; <parts>`) with its JSON.
pub(crate) fn summary(spec_name: &str, iso: &Isolation) -> Option<(String, GroupDoc)> {
    let s = standing_of(spec_name, iso)?;
    Some((format!("group {}; {}", s.head, s.parts.join(", ")), s.doc))
}

/// `cancel`: every open member's worktree (commits and uncommitted work) saved to
/// `refs/heads/specrun/cancelled/<spec>/<id>`, then the worktree and branch removed.
/// Returns the state patch and the saved refs.
pub(crate) fn cancel_members(
    project: &Project,
    spec: &Spec,
    iso: &Isolation,
) -> Result<(Patch, Vec<String>)> {
    let mut patch = Patch::new();
    let mut saved = Vec::new();
    for (id, member) in iso.members.iter().filter(|(_, m)| m.is_open()) {
        let dir = project.worktrees_dir(&spec.name).join(&member.worktree);
        let root = &project.root;
        let tip = if dir.join(".git").is_file() {
            let head = worktree::rev(&dir, "HEAD").unwrap_or_else(|| member.base.clone());
            let message = format!(
                "specrun cancel of task {id} (spec {}): work of {} saved",
                spec.name, member.branch
            );
            Some(saved_work::save_work(&dir, &head, &message)?)
        } else {
            worktree::rev(root, &format!("refs/heads/{}", member.branch))
        };
        let Some(tip) = tip else { continue };
        let ref_name = saved_work::create_ref(
            root,
            &format!("refs/heads/specrun/cancelled/{}/{id}", spec.name),
            &tip,
        )?;
        crate::io::bookkeeping::guarded(project, Some(spec), || {
            worktree::remove_worktree(root, &dir)
        })?;
        worktree::delete_branch(root, &member.branch);
        let gone = Member {
            status: worktree::CANCELLED.into(),
            saved_ref: Some(ref_name.clone()),
            ..member.clone()
        };
        patch = patch.merge(worktree::member_patch(id, &gone));
        saved.push(ref_name);
    }
    Ok((patch, saved))
}

/// Specrun worktrees no open member owns (left by a crash or a hand-made copy), with
/// their branches: what `doctor` reports.
pub(crate) fn stale_worktrees(
    project: &Project,
    state: Option<&State>,
    spec: Option<&Spec>,
) -> Vec<(PathBuf, Option<String>)> {
    let iso = state.map(Isolation::of).unwrap_or_default();
    let owned: Vec<PathBuf> = match spec {
        Some(spec) => iso
            .members
            .values()
            .filter(|m| m.is_open())
            .map(|m| project.worktrees_dir(&spec.name).join(&m.worktree))
            .collect(),
        None => Vec::new(),
    };
    worktree::listed(&project.root)
        .into_iter()
        .filter(|(p, _)| !owned.iter().any(|o| o == p))
        .collect()
}
