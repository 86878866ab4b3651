//! `specrun headless merge`: the serialized merge job of a CI workflow (issue 29). Each
//! wave member ran in its own checkout and exported a bundle (`headless export --task`)
//! naming its task and the commit its work is on. Here, in one checkout of the branch the
//! wave started from: every bundle's digest is checked and its evidence's tree compared
//! with its commit's tree; then each commit is merged `--no-ff`, in task order, with the
//! group merge's engine (`worktree::Merger`), landed one by one, and its task's records
//! (the tick, the evidence rebound as a group member's is, attempts, ledger, events)
//! taken over; last, the plan's final check runs on the merged tree and its evidence is
//! recorded there. A re-run after a crash finds merged commits in HEAD: each is merged
//! once, its records taken over once. A conflict stops the job with the checkout as it
//! was before that member.

use serde::Serialize;
use serde_json::Value;

use crate::cli::HeadlessMergeArgs;
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::bundle::{self, Bundle, STATE_FILE};
use crate::evidence::verify::{self, Slot};
use crate::io::bookkeeping;
use crate::io::events::{self, Event};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::isolation::worktree::{self, Merger, Step, Unavailable};
use crate::model::state::{Loose, Patch, State};
use crate::model::tasks_file;

/// One member's bundle, read and checked.
struct Member {
    task: String,
    title: String,
    index: usize,
    commit: String,
    path: std::path::PathBuf,
    bundle: Bundle,
}

/// What happened to one member in this run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Merged {
    task: String,
    commit: String,
    merge_commit: Option<String>,
    /// Found in HEAD already: merged by an earlier run (or by hand after a conflict).
    already: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Check {
    command: String,
    exit_code: i32,
    tree: String,
    passed: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    ok: bool,
    spec: &'a str,
    branch: &'a str,
    merged: &'a [Merged],
    conflict: Option<Conflict<'a>>,
    final_check: Option<&'a Check>,
    next: String,
}

#[derive(Debug, Serialize)]
struct Conflict<'a> {
    task: &'a str,
    commit: &'a str,
    files: &'a [String],
}

pub(crate) fn run(project: &Project, args: HeadlessMergeArgs) -> Result<ExitStatus> {
    if project.in_worktree() {
        return Err(Error::Usage(format!(
            "run `specrun headless merge` in the main checkout {}, not in a member's worktree",
            project.root.display()
        )));
    }
    let ex = Exec::existing(project, args.spec.spec.as_deref())?;
    let members = load_members(&ex, &args.bundle)?;
    let branch = preflight(project, &ex.spec)?;
    for m in &members {
        check_commit(project, &ex.spec, m)?;
    }
    ensure_base_state(&ex, &members[0])?;
    let mut merger = Merger::new(&project.root)?;
    let mut merged: Vec<Merged> = Vec::new();
    for (i, m) in members.iter().enumerate() {
        let message = format!(
            "specrun: merge task {} {} (spec {})",
            m.task, m.title, ex.spec.name
        );
        let step = bookkeeping::guarded(project, Some(&ex.spec), || {
            merger.step_commit(&m.commit, &message)
        })?;
        let merge_commit = match step {
            Step::AlreadyMerged => None,
            Step::Pending(c) | Step::Landed(c) => {
                bookkeeping::guarded(project, Some(&ex.spec), || merger.land())?;
                // A crash here: the merge is in HEAD, its records not yet taken over.
                crate::support::fault::point("headless-merge:landed");
                Some(c)
            }
            Step::Conflict(files) => {
                return stopped(&ex, &branch, &merged, m, &files, args.json);
            }
        };
        take_over(&ex, &members, i, merge_commit.as_deref())?;
        merged.push(Merged {
            task: m.task.clone(),
            commit: m.commit.clone(),
            already: merge_commit.is_none(),
            merge_commit,
        });
    }
    let check = final_check(&ex, args.timeout)?;
    finish(&ex, &branch, &merged, &check, args.json)
}

/// Every bundle read (digest checked), each a member's of this spec, one per task, in
/// task order.
fn load_members(ex: &Exec, paths: &[std::path::PathBuf]) -> Result<Vec<Member>> {
    let list = ex.tasks()?.list;
    let mut members: Vec<Member> = Vec::new();
    for p in paths {
        let path = ex.project.cwd.join(p);
        let bundle = bundle::read(&path)?;
        let refuse = |message: String| Err(Error::Refused { message });
        if bundle.body.spec != ex.spec.name {
            return refuse(format!(
                "{}: a bundle of spec {}, not {}; nothing merged",
                path.display(),
                bundle.body.spec,
                ex.spec.name
            ));
        }
        let Some(info) = bundle.body.member.clone() else {
            return refuse(format!(
                "{}: not a member's bundle (no task and commit): the member job exports it with `specrun headless export --task ID`; nothing merged",
                path.display()
            ));
        };
        let task = list.find(&info.task).map_err(|e| Error::Task {
            path: ex.spec.tasks_path(),
            message: e.to_string(),
        })?;
        if members.iter().any(|m| m.task == info.task) {
            return refuse(format!(
                "two bundles are task {}'s: give one per member; nothing merged",
                info.task
            ));
        }
        members.push(Member {
            task: info.task,
            title: task.title.clone(),
            index: task.index,
            commit: info.commit,
            path,
            bundle,
        });
    }
    members.sort_by_key(|m| m.index);
    Ok(members)
}

/// The checkout must be a clean git checkout on a branch, with no merge in progress.
fn preflight(project: &Project, spec: &Spec) -> Result<String> {
    if worktree::rev(&project.root, "MERGE_HEAD").is_some() {
        return Err(Error::Refused {
            message: format!(
                "a merge is in progress in {}: finish it (`git commit`) or `git merge --abort`, then run this again",
                project.root.display()
            ),
        });
    }
    match worktree::main_base(project, spec) {
        Ok((branch, _)) => Ok(branch),
        Err(Unavailable::NotGit) => Err(Error::Refused {
            message: format!(
                "{} is not a git repository: members' commits are merged into a branch",
                project.root.display()
            ),
        }),
        Err(Unavailable::Refused(why)) => Err(Error::Refused { message: why }),
    }
}

/// The member's commit is here, and its tree is the one its bundle's evidence is bound to.
fn check_commit(project: &Project, spec: &Spec, m: &Member) -> Result<()> {
    if worktree::rev(&project.root, &m.commit).is_none() {
        return Err(Error::Refused {
            message: format!(
                "task {}'s commit {} (from {}) is not in this repository: fetch the member job's branch first; nothing merged",
                m.task,
                m.commit,
                m.path.display()
            ),
        });
    }
    let tree = verify::commit_fingerprint(project, spec, &m.commit, &[])?;
    if tree != m.bundle.body.tree {
        return Err(Error::Refused {
            message: format!(
                "{}: task {}'s evidence is bound to tree {}, but its commit {} has tree {tree}: the bundle does not travel with that commit; nothing merged",
                m.path.display(),
                m.task,
                m.bundle.body.tree,
                m.commit
            ),
        });
    }
    Ok(())
}

/// A checkout with no execution yet (the first wave's merge job) starts from the first
/// member's spec files, as that job left them.
fn ensure_base_state(ex: &Exec, first: &Member) -> Result<()> {
    if ex.spec.state_path().exists() {
        return Ok(());
    }
    let targets = bundle::targets(&first.bundle.body, &ex.spec.dir, &first.path)?;
    bundle::write_all(&targets)?;
    events::adopt(ex.project, &ex.spec.name, &first.bundle.body.events)?;
    Ok(())
}

/// Take over member `i`'s task records into this checkout's state, once: its tick (tasks.md
/// first, as `task complete` writes it), its evidence rebound to the merged tree, its
/// attempts and ledger account, its events, its other spec files.
fn take_over(ex: &Exec, members: &[Member], i: usize, merge_commit: Option<&str>) -> Result<()> {
    let m = &members[i];
    // Read as the read-only views read a state: a field that does not read is left out.
    let theirs = m
        .bundle
        .body
        .files
        .get(STATE_FILE)
        .and_then(|t| serde_json::from_str(t).ok())
        .map_or_else(State::default, State::lenient_owned);
    let (_lock, state) = ex.lock_state()?;
    if taken_over(&state, m) {
        return Ok(());
    }
    tick(ex, m)?;
    let patch = member_patch(ex, members, i, &theirs, merge_commit)?
        .task_index(ex.tasks()?.list.next_index() as u64);
    ex.write_state(&state, &patch)?;
    other_files(ex, m)?;
    events::adopt(ex.project, &ex.spec.name, &m.bundle.body.events)?;
    ex.record_event(&Event::HeadlessMerge {
        task: &m.task,
        commit: &m.commit,
        outcome: if merge_commit.is_some() {
            "merged"
        } else {
            "already-merged"
        },
        merge_commit,
        files: &[],
    });
    Ok(())
}

/// The state already holds this member's evidence, taken over from its commit.
fn taken_over(state: &State, m: &Member) -> bool {
    state
        .task_evidence(&m.task)
        .and_then(|r| r.merged_from.get()?.commit.get())
        .map(String::as_str)
        == Some(m.commit.as_str())
}

/// The member's box, ticked here when it was ticked in its job.
fn tick(ex: &Exec, m: &Member) -> Result<()> {
    let Some(text) = m.bundle.body.files.get("tasks.md") else {
        return Ok(());
    };
    let ticked = crate::model::tasks::parse(text)
        .find(&m.task)
        .is_ok_and(|t| t.checked);
    let here = ex.tasks()?.list.find(&m.task).is_ok_and(|t| t.checked);
    if ticked && !here {
        tasks_file::check(&ex.spec.tasks_path(), &m.task, true)?;
    }
    Ok(())
}

/// The member's evidence (rebound when it was fresh on its commit), attempts and ledger
/// account of its task, as one state patch.
fn member_patch(
    ex: &Exec,
    members: &[Member],
    i: usize,
    theirs: &State,
    merge_commit: Option<&str>,
) -> Result<Patch> {
    let m = &members[i];
    let id = m.task.as_str();
    let list = ex.tasks()?.list;
    let tasks: Vec<&crate::model::tasks::Task> = members
        .iter()
        .filter_map(|o| list.find(&o.task).ok())
        .collect();
    let others = verify::others_files(&tasks, id);
    let mut patch = Patch::new();
    if let Some(record) = theirs.task_evidence(id) {
        let moved = verify::merged_commit_record(
            ex.project,
            &ex.spec,
            record,
            &m.commit,
            &others,
            merge_commit,
        )?;
        let kept = moved.unwrap_or_else(|| {
            output::warn(&format!(
                "task {id}'s evidence was not fresh on its commit: taken over as it is (stale)"
            ));
            let mut r = record.clone();
            let from = verify::merged_from(record, Some(&m.commit), merge_commit);
            r.merged_from = Loose::Typed(from);
            r
        });
        patch = patch.task_evidence(id, &kept);
    }
    if let Some(list) = theirs.attempts.as_ref().and_then(|a| a.get(id)) {
        patch = patch.attempts(id, list);
    }
    let ledger = theirs.ledger.get().and_then(|l| l.get("tasks"));
    if let Some(account) = ledger.and_then(|t| t.get(id)) {
        patch = patch.ledger_task(id, account);
    }
    Ok(patch)
}

/// The member's other spec files (critiques, test results, criteria): written when this
/// checkout lacks them; a JSON object both have gets the keys it lacks; any other
/// difference keeps this checkout's, with a warning. tasks.md, the state and .progress.md
/// are taken over above, or stay this checkout's.
fn other_files(ex: &Exec, m: &Member) -> Result<()> {
    let targets = bundle::targets(&m.bundle.body, &ex.spec.dir, &m.path)?;
    for (target, content) in targets {
        let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let rel = target.strip_prefix(&ex.spec.dir).unwrap_or(&target);
        if rel == std::path::Path::new("tasks.md") || name == STATE_FILE || name == ".progress.md" {
            continue;
        }
        let Some(ours) = store::read_optional(&target)? else {
            bundle::write_all(&[(target.clone(), content)])?;
            continue;
        };
        let ours = String::from_utf8_lossy(&ours);
        if ours == *content {
            continue;
        }
        let parsed = (
            serde_json::from_str::<Value>(&ours),
            serde_json::from_str::<Value>(content),
        );
        match parsed {
            (Ok(mut a @ Value::Object(_)), Ok(b @ Value::Object(_))) => {
                if fill_missing(&mut a, &b) {
                    store::write_atomic(&target, &store::to_pretty_bytes(&a))?;
                }
            }
            _ => output::warn(&format!(
                "{} differs in task {}'s bundle: this checkout's is kept",
                rel.display(),
                m.task
            )),
        }
    }
    Ok(())
}

/// Add to `ours` every key of `theirs` it lacks, recursing into objects both have; true
/// when something was added.
fn fill_missing(ours: &mut Value, theirs: &Value) -> bool {
    let (Value::Object(a), Value::Object(b)) = (ours, theirs) else {
        return false;
    };
    let mut changed = false;
    for (k, v) in b {
        match a.get_mut(k) {
            Some(mine) => changed |= fill_missing(mine, v),
            None => {
                a.insert(k.clone(), v.clone());
                changed = true;
            }
        }
    }
    changed
}

/// The plan's final check on the merged tree, recorded as the execution's evidence.
fn final_check(ex: &Exec, timeout: Option<u64>) -> Result<Check> {
    let state = crate::model::state::read_lenient(&ex.spec.state_path())?;
    let frozen = state
        .as_ref()
        .map_or(crate::model::plan::Frozen::None, State::frozen_plan);
    let list = ex.tasks()?.list;
    let command = crate::model::plan::final_check_of(frozen, &list)
        .map(|c| c.command)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{} declares no final check to run on the merged tree: add the line {} before the first task (the merges are kept)",
                ex.spec.tasks_path().display(),
                crate::model::tasks::FINAL_CHECK_LINE
            ))
        })?;
    let slot = Slot::Phase("execution".into());
    let plan = crate::evidence::verify_run::plan_run(&ex.spec, &slot, Some(command), None)?;
    let (record, _) =
        crate::evidence::verify_run::record_run(ex.project, &ex.spec, &slot, &plan, timeout)?;
    let check = Check {
        passed: record.exit_code == 0
            && !record.timed_out
            && record.before.tree == record.after.tree,
        command: record.command.clone(),
        exit_code: record.exit_code,
        tree: record.before.tree.clone(),
    };
    ex.record_event(&Event::HeadlessCheck {
        command: &check.command,
        exit_code: check.exit_code,
        tree: &check.tree,
        passed: check.passed,
    });
    Ok(check)
}

/// A conflict: nothing of this member merged, the checkout as the members before it left
/// it; the person merges it by hand and runs the job again.
fn stopped(
    ex: &Exec,
    branch: &str,
    merged: &[Merged],
    m: &Member,
    files: &[String],
    json_out: bool,
) -> Result<ExitStatus> {
    ex.record_event(&Event::HeadlessMerge {
        task: &m.task,
        commit: &m.commit,
        outcome: "conflict",
        merge_commit: None,
        files,
    });
    let short = crate::io::git::short_commit(&m.commit);
    let next = format!(
        "merge it by hand: `git merge --no-ff {}`, resolve the conflicts, `git commit`; then run this command again (a merged member is never merged twice; the rest follow)",
        m.commit
    );
    if json_out {
        output::json_line(&Answer {
            ok: false,
            spec: &ex.spec.name,
            branch,
            merged,
            conflict: Some(Conflict {
                task: &m.task,
                commit: &m.commit,
                files,
            }),
            final_check: None,
            next,
        });
    } else {
        print_merged(branch, merged);
        output::line(&format!(
            "conflict: task {} ({short}) conflicts with {branch} in {}; nothing of it was merged and the checkout is as the members before it left it",
            m.task,
            worktree::list_some(files)
        ));
        output::line(&format!("next: {next}"));
    }
    Ok(ExitStatus::No)
}

fn print_merged(branch: &str, merged: &[Merged]) {
    for m in merged {
        let short = crate::io::git::short_commit(&m.commit);
        match &m.merge_commit {
            Some(c) => output::line(&format!(
                "merged task {} ({short}) into {branch} as {}",
                m.task,
                crate::io::git::short_commit(c)
            )),
            None => output::line(&format!(
                "task {} ({short}) was in {branch} already: not merged again",
                m.task
            )),
        }
    }
}

fn finish(
    ex: &Exec,
    branch: &str,
    merged: &[Merged],
    check: &Check,
    json_out: bool,
) -> Result<ExitStatus> {
    let next = if check.passed {
        format!(
            "open the pull request: `specrun headless pr --spec {}`",
            crate::support::shell::word(&ex.spec.name)
        )
    } else {
        format!(
            "the merges stay on {branch}; fix the merged tree there, then `specrun verify run --final` (or run this command again: nothing is merged twice)"
        )
    };
    if json_out {
        output::json_line(&Answer {
            ok: check.passed,
            spec: &ex.spec.name,
            branch,
            merged,
            conflict: None,
            final_check: Some(check),
            next,
        });
    } else {
        print_merged(branch, merged);
        output::line(&format!(
            "final check on the merged tree {}: {} (`{}`, exit {})",
            check.tree,
            if check.passed { "passed" } else { "failed" },
            check.command,
            check.exit_code
        ));
        output::line(&format!("next: {next}"));
    }
    Ok(ExitStatus::yes_no(check.passed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fill_missing_adds_only_absent_keys() {
        let mut ours = json!({"mappings": {"1.1/AC1": ["t1"]}, "v": 1});
        let theirs = json!({"mappings": {"1.1/AC1": ["other"], "1.2/AC1": ["t2"]}, "v": 2});
        assert!(fill_missing(&mut ours, &theirs));
        assert_eq!(
            ours,
            json!({"mappings": {"1.1/AC1": ["t1"], "1.2/AC1": ["t2"]}, "v": 1})
        );
        assert!(!fill_missing(&mut ours, &theirs));
    }
}
