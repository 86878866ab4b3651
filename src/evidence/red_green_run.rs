//! Red before, green after: the I/O around `red_green`. A temporary worktree of the
//! attempt's start commit (git's replace refs, `GIT_*` variables, the system config and
//! the repository's hooks neutralised, as the integrity scan does), the current test files
//! copied in (deleted ones removed), the mapped tests run there filtered, the worktree
//! removed — also on an error or a panic (a guard's `Drop`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::evidence::acceptance::{Run, Status, Store, TestState};
use crate::evidence::criteria::{self, Matrix};
use crate::evidence::integrity::{self, Status as Change};
use crate::evidence::red_green::{self, Probe, Ran};
use crate::evidence::verify::{Freshness, Slot};
use crate::evidence::{proof, testlog, verify_run};
use crate::io::git;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::model::state::State;
use crate::model::tasks::{Task, TaskList};
use crate::model::unmet::Unmet;

/// The longest a run at the start commit may take.
const RUN_LIMIT: Duration = Duration::from_secs(600);
/// A test file larger than this is not copied (the run then sees the start commit's).
const MAX_COPY_BYTES: u64 = 16 * 1024 * 1024;

/// The task's criteria covered by tests now, each with the Verify command that passed them.
pub(crate) fn probes(matrix: &Matrix, task: &str) -> Vec<Probe> {
    let mut out = Vec::new();
    for row in matrix
        .for_task(task)
        .filter(|r| r.status == Status::Covered)
    {
        let tests: Vec<String> = row
            .tests
            .iter()
            .filter(|t| t.state == TestState::Passed)
            .map(|t| t.name.clone())
            .collect();
        // One probe per command that passed some of its tests.
        let mut by_command: Vec<(String, Vec<String>)> = Vec::new();
        for t in tests {
            let Some(run) = passing_run(&matrix.runs, &t) else {
                continue;
            };
            match by_command.iter_mut().find(|(c, _)| *c == run.command) {
                Some((_, ts)) => ts.push(t),
                None => by_command.push((run.command.clone(), vec![t])),
            }
        }
        for (command, tests) in by_command {
            out.push(Probe {
                criterion: row.id.clone(),
                text: row.text.clone(),
                tests,
                command,
            });
        }
    }
    out
}

fn passing_run<'a>(runs: &'a [Run], test: &str) -> Option<&'a Run> {
    runs.iter().find(|r| {
        r.freshness == Freshness::Fresh
            && r.report.as_ref().is_some_and(|rep| {
                rep.results.iter().any(|x| {
                    x.outcome == testlog::Outcome::Passed && testlog::name_matches(&x.name, test)
                })
            })
    })
}

/// One line per criterion of `task` whose tests are not shown red at `start`. An error
/// (the start commit gone, the worktree not made) is one line too: never a silent pass.
pub(crate) fn unmet(
    project: &Project,
    spec: &Spec,
    matrix: &Matrix,
    task: &str,
    start: &str,
    work: &Path,
) -> Vec<String> {
    let probes = probes(matrix, task);
    if probes.is_empty() {
        return Vec::new();
    }
    let short = git::short_commit(start).to_string();
    if git::scan_run(
        &project.tree,
        &["cat-file", "-e", &format!("{start}^{{commit}}")],
        None,
    )
    .is_err()
    {
        return vec![format!(
            "the criteria {} cannot be shown red before the change: the attempt's start commit {short} no longer exists here (rebased away or pruned?), so its tests cannot be run without the change",
            ids(&probes)
        )];
    }
    match run_all(project, spec, &probes, start, &short, work) {
        Ok(lines) => lines,
        Err(e) => vec![format!(
            "the criteria {} could not be run at the start commit {short}: {e}",
            ids(&probes)
        )],
    }
}

fn ids(probes: &[Probe]) -> String {
    let mut ids: Vec<&str> = probes.iter().map(|p| p.criterion.as_str()).collect();
    ids.dedup();
    ids.join(", ")
}

fn run_all(
    project: &Project,
    spec: &Spec,
    probes: &[Probe],
    start: &str,
    short: &str,
    work: &Path,
) -> Result<Vec<String>> {
    let tests = test_changes(project, spec, start, work)?;
    let tree = StartTree::add(work, start)?;
    let prefix =
        String::from_utf8_lossy(&git::scan_run(work, &["rev-parse", "--show-prefix"], None)?)
            .trim()
            .to_string();
    let dir = tree.path.join(&prefix);
    for (path, change) in &tests {
        let to = dir.join(path);
        if *change == Change::Deleted {
            let _ = std::fs::remove_file(&to);
            continue;
        }
        let Some(bytes) = store::read_foreign(&work.join(path), MAX_COPY_BYTES)? else {
            continue;
        };
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, "create", e))?;
        }
        store::write_atomic(&to, &bytes)?;
    }
    link_dependencies(work, &dir);
    let mut out = Vec::new();
    for plan in red_green::plan(probes) {
        let outcome = verify_run::execute_in(&dir, &plan.command, Some(RUN_LIMIT), &env(project))?;
        let ran = Ran {
            exit: outcome.exit_code,
            timed_out: outcome.timed_out,
            report: outcome.tests,
        };
        out.extend(red_green::judge(&plan, &ran, short));
    }
    Ok(out)
}

/// The test files the execution changed since `start` in `work` (the tree the task works
/// in: an isolated member's worktree, else the project), by content, with how.
fn test_changes(
    project: &Project,
    spec: &Spec,
    start: &str,
    work: &Path,
) -> Result<Vec<(String, Change)>> {
    Ok(proof::gather(work, project, spec, start)?
        .into_iter()
        .filter(|f| integrity::is_test_path(&f.path))
        .map(|f| (f.path, f.status))
        .collect())
}

/// Dependencies installed in the work tree but not tracked (`node_modules`): linked in, so
/// the runner finds them at the start commit too.
fn link_dependencies(from: &Path, to: &Path) {
    let (source, target) = (from.join("node_modules"), to.join("node_modules"));
    if source.is_dir() && !target.exists() {
        let _ = std::os::unix::fs::symlink(&source, target);
    }
}

/// The run's environment: cargo builds into a target directory of its own, kept in the git
/// directory between runs (incremental, and the project's own build is never touched).
fn env(project: &Project) -> Vec<(String, PathBuf)> {
    let common = git::scan_run(&project.tree, &["rev-parse", "--git-common-dir"], None)
        .ok()
        .map(|o| String::from_utf8_lossy(&o).trim().to_string())
        .map(|d| project.tree.join(d));
    match common {
        Some(dir) => vec![(
            "CARGO_TARGET_DIR".into(),
            dir.join("specrun").join("red-green-target"),
        )],
        None => Vec::new(),
    }
}

/// A detached worktree of the start commit, removed when dropped.
struct StartTree {
    repo: PathBuf,
    path: PathBuf,
    _holder: tempfile::TempDir,
}

impl StartTree {
    fn add(repo: &Path, start: &str) -> Result<StartTree> {
        let holder = tempfile::Builder::new()
            .prefix("specrun-start-")
            .tempdir()
            .map_err(|e| Error::io(std::env::temp_dir(), "create", e))?;
        let path = holder.path().join("tree");
        let p = path.to_string_lossy().into_owned();
        // No hook of the repository runs (post-checkout), no replace ref is followed.
        git::scan_run(
            repo,
            &[
                "-c",
                "core.hooksPath=/dev/null",
                "worktree",
                "add",
                "--detach",
                "--quiet",
                &p,
                start,
            ],
            None,
        )?;
        Ok(StartTree {
            repo: repo.to_path_buf(),
            path,
            _holder: holder,
        })
    }
}

impl Drop for StartTree {
    fn drop(&mut self) {
        let p = self.path.to_string_lossy().into_owned();
        let _ = git::scan_run(&self.repo, &["worktree", "remove", "--force", &p], None);
        let _ = std::fs::remove_dir_all(&self.path);
        let _ = git::scan_run(&self.repo, &["worktree", "prune"], None);
    }
}

/// What red-before decides was judged from: the attempt's start, the task's and phase's
/// evidence records and the criteria's mappings. Lines judged from one key hold for any
/// state and store with the same key.
pub(crate) type Key = (
    String,
    Option<crate::model::state::EvidenceRecord>,
    Option<crate::model::state::EvidenceRecord>,
    Store,
);

pub(crate) fn key(spec: &Spec, state: &State, task: &Task) -> Option<Key> {
    let start = proof::attempt_start(state, &task.label())?;
    let record = |slot: Slot| slot.record_of(state).cloned();
    Some((
        start,
        record(Slot::Task(task.label())),
        record(Slot::Phase("execution".into())),
        criteria::load_store(spec).ok()?,
    ))
}

/// Whether this execution shows criteria red before the change (`redGreen`, set by
/// `state init`; an execution started before keeps the old behaviour).
pub(crate) fn enabled(state: &State) -> bool {
    state.acceptance_gate() && state.red_green()
}

/// The `red-before` refusals of `task complete`: the task's criteria covered by tests whose
/// tests are not shown to fail at the attempt's start commit. Empty while the criteria are
/// not covered yet (the criteria gate refuses that first, and the runs would be wasted),
/// when the execution does not ask for it, or without git.
pub(crate) fn check(
    project: &Project,
    spec: &Spec,
    state: &State,
    list: &TaskList,
    task: &Task,
    work: &Path,
) -> Vec<Unmet> {
    let id = task.label();
    let Some(start) = proof::attempt_start(state, &id) else {
        return Vec::new();
    };
    if !enabled(state) || task.done_when.is_none() || !git::is_repo(&project.root) {
        return Vec::new();
    }
    let Ok(matrix) = criteria::matrix_with(project, spec, list, Some(state)) else {
        return Vec::new();
    };
    if matrix.for_task(&id).any(|r| !r.status.settled_for_task()) {
        return Vec::new();
    }
    unmet(project, spec, &matrix, &id, &start, work)
        .into_iter()
        .map(|detail| Unmet {
            name: "red-before",
            detail,
        })
        .collect()
}
