//! The proof gates of `task complete` (criteria covered, no unjustified integrity finding),
//! also asked by the SubagentStop hook, and the findings `task justify` records: the I/O
//! around `acceptance` and `integrity`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::evidence::criteria;
use crate::evidence::integrity::{self, FileDiff, Finding, Status};
use crate::io::git;
use crate::io::project::{Project, Spec};
use crate::model::state::State;
use crate::model::tasks::{Task, TaskList};
use crate::model::unmet::Unmet;

/// A changed file with more added+removed lines than this is not scanned.
const MAX_FILE_LINES: u64 = 20_000;
/// A file larger than this is not read.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
pub(crate) const JUSTIFICATIONS_HEADING: &str = "## Justifications";

/// The start commit of the task's running attempt.
pub(crate) fn attempt_start(state: &State, id: &str) -> Option<String> {
    let last = state.attempts_of(id).last()?;
    let running = last.status.as_deref() == Some("running");
    last.start_commit.get().filter(|_| running).cloned()
}

/// The task's change: `start` to the working tree (commits, staged, unstaged, untracked),
/// without the spec's bookkeeping.
///
/// Read so that no git setting can blind it: both sides are compared by content (the
/// start tree's blob ids against the work tree's files hashed with `--no-filters`, so
/// neither an index flag like `--skip-worktree`/`--assume-unchanged`, a stat trick nor a
/// clean filter hides a change), the old contents are read as blobs and the new ones from
/// the disk, and the lines are compared here, not by `git diff` (whose attributes,
/// `-diff`/`binary`, textconv, external drivers and prefixes the repository sets).
pub(crate) fn gather(
    root: &Path,
    project: &Project,
    spec: &Spec,
    start: &str,
) -> Result<Vec<FileDiff>> {
    let excluded = crate::io::project::bookkeeping_paths(project, spec);
    let keep = |p: &str| {
        !excluded.iter().any(|e| {
            p == e
                || p.strip_prefix(e.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
    };
    let old: BTreeMap<String, (String, String)> = tree_entries(root, start)?
        .into_iter()
        .filter(|(p, _)| keep(p))
        .collect();
    // Filtered before hashing: the bookkeeping is no part of the change, and other
    // members' verbs rewrite it right now.
    let new: BTreeMap<String, String> = worktree_entries(root, &keep)?.into_iter().collect();
    let mut changed: Vec<(String, Option<String>, Status)> = Vec::new();
    for (path, (mode, oid)) in &old {
        if mode == GITLINK {
            continue;
        }
        let old_blob = (mode != SYMLINK).then(|| oid.clone());
        match new.get(path) {
            None => changed.push((path.clone(), old_blob, Status::Deleted)),
            Some(now) if now != oid || mode == SYMLINK => {
                changed.push((path.clone(), old_blob, Status::Modified))
            }
            Some(_) => {}
        }
    }
    for path in new.keys().filter(|p| !old.contains_key(*p)) {
        changed.push((path.clone(), None, Status::Added));
    }
    let blobs: Vec<String> = changed.iter().filter_map(|(_, b, _)| b.clone()).collect();
    let mut olds = cat_files(root, &blobs)?.into_iter();
    let mut files = Vec::with_capacity(changed.len());
    for (path, blob, status) in changed {
        let before = match (&blob, status) {
            (Some(_), _) => olds.next().unwrap_or(Content::Absent),
            (None, Status::Added) => Content::Text(String::new()),
            (None, _) => Content::Binary,
        };
        let after = match status {
            Status::Deleted => Content::Text(String::new()),
            _ => read_worktree(root, &path),
        };
        files.push(file_diff(&path, status, before, after));
    }
    Ok(files)
}

const GITLINK: &str = "160000";
const SYMLINK: &str = "120000";

/// The change of one file from its two contents.
fn file_diff(path: &str, status: Status, before: Content, after: Content) -> FileDiff {
    let mut f = FileDiff::new(path, status);
    match (before, after) {
        (Content::Text(old), Content::Text(new)) => {
            (f.added, f.removed) = integrity::line_changes(&old, &new);
            if (f.added.len() + f.removed.len()) as u64 > MAX_FILE_LINES {
                f.too_large = true;
                f.added.clear();
                f.removed.clear();
            } else {
                f.old = (status != Status::Added).then_some(old);
                f.new = (status != Status::Deleted).then_some(new);
            }
        }
        (Content::TooLarge, _) | (_, Content::TooLarge) => f.too_large = true,
        _ => f.binary = true,
    }
    f
}

/// `path -> (mode, blob id)` of the start commit's tree below the project root.
fn tree_entries(root: &Path, start: &str) -> Result<Vec<(String, (String, String))>> {
    let out = git::scan_run(root, &["ls-tree", "-r", "-z", start], None)?;
    let mut entries = Vec::new();
    for rec in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let rec = String::from_utf8_lossy(rec);
        // <mode> SP <type> SP <object> TAB <path>
        let Some((meta, path)) = rec.split_once('\t') else {
            continue;
        };
        let mut parts = meta.split(' ');
        let (Some(mode), Some(_), Some(oid)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        entries.push((path.to_string(), (mode.to_string(), oid.to_string())));
    }
    Ok(entries)
}

/// `path -> blob id` of every file of the work tree below the project root that git
/// tracks or would add (ignored by the tree's own `.gitignore` files only: an exclude in
/// `.git/info/exclude` or the user's excludes file is invisible to a reviewer). Not a
/// regular file: an id that matches nothing, so it reads as changed.
/// Only paths `keep` accepts are looked at.
fn worktree_entries(root: &Path, keep: &dyn Fn(&str) -> bool) -> Result<Vec<(String, String)>> {
    let out = git::scan_run(
        root,
        &[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-per-directory=.gitignore",
        ],
        None,
    )?;
    let mut paths: Vec<String> = out
        .split(|&b| b == 0)
        .filter(|r| !r.is_empty() && !r.ends_with(b"/"))
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .filter(|p| keep(p))
        .collect();
    paths.dedup();
    let mut entries = Vec::new();
    let mut regular = Vec::new();
    for path in paths {
        match std::fs::symlink_metadata(root.join(&path)) {
            Err(_) => {}
            Ok(m) if m.file_type().is_file() && !path.contains('\n') => regular.push(path),
            Ok(_) => entries.push((path, String::new())),
        }
    }
    entries.extend(hash_regular(root, regular)?);
    Ok(entries)
}

/// The blob ids of `paths` (regular files when listed). A file gone by the time git reads
/// it (a temp file another verb renamed away, a file deleted right now) is not in the tree,
/// as one gone before the listing is not: git is asked again without it, and fails the
/// scan only when nothing went.
fn hash_regular(root: &Path, mut paths: Vec<String>) -> Result<Vec<(String, String)>> {
    loop {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let input = paths.join("\n") + "\n";
        let args = ["hash-object", "--no-filters", "--stdin-paths"];
        match git::scan_run(root, &args, Some(input.into_bytes())) {
            Ok(out) => {
                let ids = String::from_utf8_lossy(&out).into_owned();
                let ids = ids
                    .lines()
                    .map(str::to_string)
                    .chain(std::iter::repeat(String::new()));
                return Ok(paths.into_iter().zip(ids).collect());
            }
            Err(e) => {
                let before = paths.len();
                paths
                    .retain(|p| std::fs::symlink_metadata(root.join(p)).is_ok_and(|m| m.is_file()));
                if paths.len() == before {
                    return Err(e);
                }
            }
        }
    }
}

enum Content {
    Text(String),
    Binary,
    TooLarge,
    Absent,
}

/// A regular file of the work tree (symlinks, FIFOs and devices are not read).
fn read_worktree(root: &Path, rel: &str) -> Content {
    let path = root.join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return Content::Absent;
    };
    if !meta.file_type().is_file() {
        return Content::Binary;
    }
    if meta.len() > MAX_FILE_BYTES {
        return Content::TooLarge;
    }
    // Opened without following a link and without blocking: the file may have been swapped
    // for a link or a FIFO since the check above.
    match crate::io::store::read_prefix(&path, MAX_FILE_BYTES, true) {
        Ok(Some(bytes)) => text_or_binary(bytes),
        Err(Error::TooLarge { .. }) => Content::TooLarge,
        Ok(None) | Err(_) => Content::Absent,
    }
}

/// Binary only when it truly is (a NUL in the first 8 KiB, as git itself decides without
/// attributes); text in another encoding is read with its invalid bytes replaced.
fn text_or_binary(bytes: Vec<u8>) -> Content {
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Content::Binary;
    }
    Content::Text(match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// `git cat-file --batch` for many blobs (by id, so no path's attributes apply) in one
/// process.
fn cat_files(root: &Path, names: &[String]) -> Result<Vec<Content>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let input = names.join("\n") + "\n";
    let out = git::scan_run(root, &["cat-file", "--batch"], Some(input.into_bytes()))?;
    let mut rest = out.as_slice();
    let mut contents = Vec::new();
    for _ in names {
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            break;
        };
        let header = String::from_utf8_lossy(&rest[..nl]).to_string();
        rest = &rest[nl + 1..];
        let size = header
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse::<usize>().ok());
        match size.filter(|_| header.contains(" blob ")) {
            Some(n) if n <= rest.len() => {
                let body = rest[..n].to_vec();
                rest = &rest[(n + 1).min(rest.len())..];
                contents.push(if n as u64 > MAX_FILE_BYTES {
                    Content::TooLarge
                } else {
                    text_or_binary(body)
                });
            }
            _ => contents.push(Content::Absent),
        }
    }
    while contents.len() < names.len() {
        contents.push(Content::Absent);
    }
    Ok(contents)
}

/// The findings of the execution's change while `id` has a running attempt, read from
/// each point a test could have existed at: the commit `state init` started from (so a
/// test deleted before `task start` is still seen) and the start of every attempt of the
/// task (so one deleted in a failed attempt is, and one an earlier task of the execution
/// added). Findings of several points count once (their ids are stable). Empty without
/// git or a running attempt.
pub(crate) fn findings(
    project: &Project,
    spec: &Spec,
    state: &State,
    id: &str,
    tree: &Path,
) -> Result<Vec<Finding>> {
    let Some(current) = attempt_start(state, id) else {
        return Ok(Vec::new());
    };
    if !git::is_repo(&project.root) {
        return Ok(Vec::new());
    }
    let mut starts: Vec<String> = state
        .base_commit()
        .map(str::to_string)
        .into_iter()
        .collect();
    let attempts = state
        .attempts_of(id)
        .iter()
        .filter_map(|a| a.start_commit.get().cloned());
    for start in attempts.chain([current]) {
        if !starts.contains(&start) {
            starts.push(start);
        }
    }
    let mut found: Vec<Finding> = Vec::new();
    for start in &starts {
        let files = gather(tree, project, spec, start).map_err(|e| match e {
            Error::Git { args, message } => Error::Git {
                args,
                message: format!(
                    "{message} (the start commit {} is not readable here: rebased away or pruned?)",
                    git::short_commit(start)
                ),
            },
            e => e,
        })?;
        for f in integrity::scan(&files) {
            if !found.iter().any(|g| g.id == f.id) {
                found.push(f);
            }
        }
    }
    if let Some(before) = &state.ignored_files {
        // A member's fresh worktree holds none of the main checkout's ignored files: only
        // what appeared or changed there counts.
        let in_main = tree == project.root;
        let now = crate::evidence::ignored_files::snapshot(tree)?;
        found.extend(integrity::ignored::changes(before, &now, in_main));
    }
    Ok(found)
}

/// What `task complete` must also see before it completes `task`: its criteria covered
/// (when the execution enforces them) and every integrity finding justified.
pub(crate) fn complete_unmet(
    project: &Project,
    spec: &Spec,
    state: &State,
    list: &TaskList,
    task: &Task,
    tree: &Path,
) -> Vec<Unmet> {
    let id = task.label();
    let id_q = crate::support::shell::word(&id);
    let last = state.attempts_of(&id).last();
    if last.and_then(|a| a.status.as_deref()) != Some("running") {
        return Vec::new();
    }
    let mut unmet = Vec::new();
    if state.acceptance_gate() && task.done_when.is_some() {
        match criteria::matrix_with(project, spec, list, Some(state)) {
            Ok(m) => {
                for line in criteria::describe_uncovered(
                    m.for_task(&id).filter(|r| !r.status.settled_for_task()),
                ) {
                    unmet.push(Unmet {
                        name: "acceptance-criteria",
                        detail: line,
                    });
                }
            }
            Err(e) => unmet.push(Unmet {
                name: "acceptance-criteria",
                detail: format!("criteria cannot be read: {e}"),
            }),
        }
    }
    // The scan reads the whole execution's change, so a finding a person justified for an
    // earlier task stays justified for the tasks after it.
    let justified = criteria::load_store(spec).map(|s| {
        s.justifications
            .values()
            .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
            .collect::<BTreeMap<_, _>>()
    });
    match (findings(project, spec, state, &id, tree), justified) {
        (Ok(found), Ok(justified)) => {
            for f in found.iter().filter(|f| !justified.contains_key(&f.id)) {
                unmet.push(Unmet {
                    name: "test-integrity",
                    detail: format!(
                        "{f}. Undo it; if the change is right, waiving the finding ({}) is a person's decision: {}",
                        f.id,
                        crate::claude::roles::for_person(&format!(
                            "specrun task justify {id_q} --finding {} --reason \"<why>\" {}",
                            crate::support::shell::word(&f.id),
                            crate::support::shell::spec_flag(&spec.name)
                        ))
                    ),
                });
            }
        }
        (Err(e), _) | (_, Err(e)) => unmet.push(Unmet {
            name: "test-integrity",
            detail: format!("the change could not be scanned: {e}"),
        }),
    }
    unmet
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // the test sets up files directly
mod tests {
    use super::*;

    #[test]
    fn a_file_gone_before_git_reads_it_is_left_out_and_the_rest_are_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(root)
            .status()
            .unwrap();
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        std::fs::write(root.join("c.txt"), "c\n").unwrap();
        let listed = vec!["a.txt".to_string(), "gone.txt".into(), "c.txt".into()];
        let ids = hash_regular(root, listed).unwrap();
        let paths: Vec<&str> = ids.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["a.txt", "c.txt"]);
        assert!(ids.iter().all(|(_, id)| id.len() == 40), "{ids:?}");
        assert_ne!(ids[0].1, ids[1].1);
    }
}
