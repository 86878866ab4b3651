//! Evidence (docs/design.md#evidence): a verification record is bound to the working-tree
//! fingerprint it ran against. Fresh = its tree equals the current tree. Pure assessment
//! here; the fingerprint itself is computed at the edge (`current_tree`).
//!
//! Records sit in the state's `verificationBlocks.<phase>` or `taskEvidence.<id>`, one type
//! (`EvidenceRecord`); their fields are `RunRecord::fields`' and `verify::run`'s (the table
//! in the design).

use serde::Serialize;
use serde_json::Value;

use std::path::Path;

use crate::error::{Error, Result};
use crate::io::project::{Project, Spec};
use crate::model::state::{EvidenceRecord, Loose, MergedFrom, State};

pub use crate::io::project::bookkeeping_paths;

mod files;
pub(crate) use files::hash_file;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Freshness {
    /// Passed, and recorded against the current tree.
    Fresh,
    /// Passed, but the tree has changed since.
    Stale,
    /// Recorded, but the command failed or timed out.
    Failed,
    /// No record.
    Missing,
}

impl Freshness {
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Fresh => "fresh",
            Freshness::Stale => "stale",
            Freshness::Failed => "failed",
            Freshness::Missing => "missing",
        }
    }

    pub fn is_ok(self) -> bool {
        self == Freshness::Fresh
    }
}

/// Which evidence slot: a phase block or one task's evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    Phase(String),
    Task(String),
}

impl Slot {
    /// The state dot path of this slot (`verificationBlocks.execution`, `taskEvidence.1.2`
    /// is not a dot path: task ids contain dots, so use `record_in`).
    pub fn describe(&self) -> String {
        match self {
            Slot::Phase(p) => format!("verificationBlocks.{p}"),
            Slot::Task(id) => format!("taskEvidence[{id}]"),
        }
    }

    /// The `verify run` that records this slot again with `command`, for spec `spec`
    /// (`--spec` always: the hint works whichever spec is active).
    pub fn rerun(&self, spec: &str, command: &str) -> String {
        let which = match self {
            Slot::Phase(p) => format!("--phase {}", crate::support::shell::word(p)),
            Slot::Task(id) => format!("--task {}", crate::support::shell::word(id)),
        };
        format!(
            "specrun verify run {which} {} --command {}",
            crate::support::shell::spec_flag(spec),
            crate::support::shell::word(command)
        )
    }

    /// The record in the typed state, if any.
    pub fn record_of<'a>(&self, state: &'a State) -> Option<&'a EvidenceRecord> {
        match self {
            Slot::Phase(p) => state.verification_block(p),
            Slot::Task(id) => state.task_evidence(id),
        }
    }
}

impl std::fmt::Display for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Whether a record's command succeeded (exit 0, not timed out), whatever the tree.
pub fn passed(record: &EvidenceRecord) -> bool {
    record.exit_code() == Some(0) && !record.timed_out()
}

/// Whether a record counts as a task's evidence by its command: a task's evidence must come
/// from its own **Verify** command, or from another one that a person accepted with a
/// reason (`acceptedOther`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandFit {
    /// The task's own Verify command ran.
    Own,
    /// The task has no Verify command: any command is its evidence.
    NoVerify,
    /// Another command, accepted by a person with this reason.
    Accepted(String),
    /// Another command, not accepted: the record does not count for the task.
    Other { ran: String, verify: String },
}

impl CommandFit {
    pub fn counts(&self) -> bool {
        !matches!(self, CommandFit::Other { .. })
    }

    /// Why the record does not count, with the command that records one that does.
    pub fn problem(&self, spec: &str, id: &str) -> Option<String> {
        let CommandFit::Other { ran, verify } = self else {
            return None;
        };
        Some(format!(
            "it ran `{ran}`, not the task's Verify command `{verify}`: run `specrun verify run --task {} {}` (without --command it runs the Verify command)",
            crate::support::shell::word(id),
            crate::support::shell::spec_flag(spec)
        ))
    }
}

/// Judge a record's command against the task's own Verify command (`own_verify`, as
/// `Task::verify_command` gives it). Compared exactly, after trimming.
pub fn command_fit(record: &EvidenceRecord, own_verify: Option<&str>) -> CommandFit {
    let Some(verify) = own_verify.map(str::trim).filter(|v| !v.is_empty()) else {
        return CommandFit::NoVerify;
    };
    let ran = record.command().unwrap_or("").trim();
    if ran == verify {
        return CommandFit::Own;
    }
    let accepted = record
        .accepted_reason()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    match accepted {
        Some(reason) => CommandFit::Accepted(reason.to_string()),
        None => CommandFit::Other {
            ran: ran.to_string(),
            verify: verify.to_string(),
        },
    }
}

/// When a record's run ended (`startedAt + durationMs`), RFC 3339; `None` without a
/// readable `startedAt`. A review of the run must come no earlier than this.
pub fn ended_at(record: &EvidenceRecord) -> Option<String> {
    let started = crate::model::state::time::parse(record.started_at()?)?;
    let ms = record.duration_ms().unwrap_or(0);
    crate::model::state::time::plus_ms(started, ms).map(crate::model::state::time::format)
}

/// Judge a record against the current tree fingerprint (`None` when it could not be computed).
pub fn assess(record: Option<&EvidenceRecord>, current_tree: Option<&str>) -> Freshness {
    let Some(record) = record else {
        return Freshness::Missing;
    };
    if !passed(record) {
        return Freshness::Failed;
    }
    // The tree changed while the command ran: it verified no one tree.
    if record.touched() {
        return Freshness::Stale;
    }
    match (record.tree(), current_tree) {
        (Some(a), Some(b)) if a == b => Freshness::Fresh,
        _ => Freshness::Stale,
    }
}

/// How a fingerprint was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TreeMethod {
    /// A git tree id written through a temporary index (combined with the submodules'
    /// own trees when there are checked-out submodules).
    Git,
    /// A SHA-256 over the files under the project root (not a git repository).
    Files,
}

impl TreeMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            TreeMethod::Git => "git",
            TreeMethod::Files => "files",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    pub tree: String,
    pub method: TreeMethod,
}

/// The working-tree fingerprint, excluding the spec's bookkeeping: in git, the tree id of
/// all tracked and untracked-not-ignored files, written through a temporary index seeded
/// from the real one (so git's stat cache is reused and the user's index is never touched).
pub fn current_tree(project: &Project, spec: &Spec) -> Result<String> {
    fingerprint(project, spec).map(|f| f.tree)
}

/// The fingerprint and how it was computed: git when the project root is inside a work
/// tree, else a hash of the files (honouring `.gitignore`).
pub fn fingerprint(project: &Project, spec: &Spec) -> Result<Fingerprint> {
    fingerprint_excluding(project, spec, &[])
}

/// The fingerprint of a record's tree: the spec's bookkeeping and the record's own
/// `excludedPaths` (a parallel task's siblings' Files) left out, as when it was recorded.
pub fn fingerprint_for(
    project: &Project,
    spec: &Spec,
    record: Option<&EvidenceRecord>,
) -> Result<Fingerprint> {
    let dir = record_tree(project, spec, record);
    fingerprint_in(project, spec, &dir, &excluded_paths(record))
}

/// The work tree a record is judged in: its member worktree while that is on disk; once
/// it is gone (merged, rolled back, cancelled) the main checkout, where a merged member's
/// work now lives; a record made outside a worktree, the tree the command stands in.
pub fn record_tree(
    project: &Project,
    spec: &Spec,
    record: Option<&EvidenceRecord>,
) -> std::path::PathBuf {
    match recorded_worktree(project, spec, record) {
        Some(dir) if dir.join(".git").is_file() => dir,
        Some(_) => project.root.clone(),
        None => project.tree.clone(),
    }
}

/// The member worktree a record was made in (`worktree`, which must name one of this
/// spec's worktree directories, so a hand-edit cannot point elsewhere), on disk or not.
pub fn recorded_worktree(
    project: &Project,
    spec: &Spec,
    record: Option<&EvidenceRecord>,
) -> Option<std::path::PathBuf> {
    let name = record?.worktree()?;
    is_plain_segment(name).then(|| project.worktrees_dir(&spec.name).join(name))
}

/// A member's evidence record taken to the main checkout by its merge: bound to its
/// worktree's tree without the other members' Files (`others`), as a `[P]` task's evidence
/// is in the shared tree, so it is judged on the merged tree where its work now lives.
/// `None` when the record was not fresh in the worktree (it stays stale, judged there no
/// more). `mergedFrom` keeps where it was recorded.
pub fn merged_record(
    project: &Project,
    spec: &Spec,
    record: &EvidenceRecord,
    dir: &Path,
    others: &[String],
    merge_commit: Option<&str>,
) -> Result<Option<EvidenceRecord>> {
    let here = fingerprint_in(project, spec, dir, &excluded_paths(Some(record)))?;
    if assess(Some(record), Some(&here.tree)) != Freshness::Fresh {
        return Ok(None);
    }
    let mut excluded = excluded_paths(Some(record));
    excluded.extend(others.iter().cloned());
    excluded.sort();
    excluded.dedup();
    let portable = fingerprint_in(project, spec, dir, &excluded)?;
    let from = MergedFrom {
        worktree: or_null(&record.worktree),
        ..merged_from(record, None, merge_commit)
    };
    Ok(Some(moved_record(record, from, portable.tree, excluded)))
}

/// `mergedFrom` of `record` made on `commit` (`None`: in a worktree), taken over by
/// `merge_commit`: the tree it was bound to there.
pub fn merged_from(
    record: &EvidenceRecord,
    commit: Option<&str>,
    merge_commit: Option<&str>,
) -> MergedFrom {
    let text = |s: Option<&str>| s.map_or(Loose::Raw(Value::Null), |s| Loose::Typed(s.into()));
    MergedFrom {
        commit: commit.map_or(Loose::Absent, |c| Loose::Typed(c.into())),
        tree: or_null(&record.tree),
        merge_commit: text(merge_commit),
        ..MergedFrom::default()
    }
}

/// A field copied into `mergedFrom`: written as null when the record has none.
fn or_null(field: &Loose<String>) -> Loose<String> {
    match field {
        Loose::Absent => Loose::Raw(Value::Null),
        kept => kept.clone(),
    }
}

/// `record` rebound to `tree` (made without `excluded`), `mergedFrom` saying where it was made.
fn moved_record(
    record: &EvidenceRecord,
    from: MergedFrom,
    tree: String,
    excluded: Vec<String>,
) -> EvidenceRecord {
    let mut moved = record.clone();
    moved.merged_from = Loose::Typed(from);
    moved.tree = Loose::Typed(tree);
    moved.excluded_paths = Loose::Typed(excluded.into_iter().map(Value::String).collect());
    // Null, not removed: the state patch merges into the record that is there.
    moved.worktree = Loose::Raw(Value::Null);
    moved
}

/// `merged_record` for a CI member's record, made in another checkout on `commit`: judged
/// on the commit's tree there; taken to the merged tree without the other members' Files.
/// `None` when it was not fresh on its commit. `mergedFrom.commit` names the commit, so a
/// re-run of the merge job knows the record was taken over.
pub fn merged_commit_record(
    project: &Project,
    spec: &Spec,
    record: &EvidenceRecord,
    commit: &str,
    others: &[String],
    merge_commit: Option<&str>,
) -> Result<Option<EvidenceRecord>> {
    let own = excluded_paths(Some(record));
    let there = commit_fingerprint(project, spec, commit, &own)?;
    if assess(Some(record), Some(&there)) != Freshness::Fresh {
        return Ok(None);
    }
    let mut excluded = own;
    excluded.extend(others.iter().cloned());
    excluded.sort();
    excluded.dedup();
    let portable = commit_fingerprint(project, spec, commit, &excluded)?;
    let from = merged_from(record, Some(commit), merge_commit);
    Ok(Some(moved_record(record, from, portable, excluded)))
}

/// Where a record taken to the merged tree by `merged_record` was made, for a reason.
pub fn merged_note(record: Option<&EvidenceRecord>) -> Option<String> {
    let from = record?.merged_from.get()?;
    let worktree = match from.commit.get() {
        Some(c) => format!(
            "commit {} (another checkout)",
            crate::io::git::short_commit(c)
        ),
        None => from.worktree.get().map_or("?", String::as_str).to_string(),
    };
    let commit = from.merge_commit.get().map_or("?", String::as_str);
    Some(format!(
        "recorded in worktree {worktree}, merged at {}: judged on the main checkout without the other members' Files",
        crate::io::git::short_commit(commit)
    ))
}

/// The worktree name of a record whose worktree is gone, so it is judged in the main
/// checkout instead (see [`record_tree`]).
pub fn worktree_gone(
    project: &Project,
    spec: &Spec,
    record: Option<&EvidenceRecord>,
) -> Option<String> {
    let dir = recorded_worktree(project, spec, record)?;
    (!dir.join(".git").is_file()).then(|| dir.file_name()?.to_str().map(str::to_string))?
}

/// The `worktree` value a record made in `project.tree` carries: the member worktree's
/// directory name, `None` in the main checkout.
pub fn worktree_name(project: &Project, spec: &Spec) -> Option<String> {
    let rel = project
        .tree
        .strip_prefix(project.worktrees_dir(&spec.name))
        .ok()?;
    rel.to_str()
        .filter(|n| is_plain_segment(n))
        .map(str::to_string)
}

fn is_plain_segment(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/')
}

/// `excludedPaths` of a record (empty for records without it).
pub fn excluded_paths(record: Option<&EvidenceRecord>) -> Vec<String> {
    let items = record
        .into_iter()
        .flat_map(EvidenceRecord::excluded_strings);
    items
        .filter(|p| is_plain_relative(p))
        .map(str::to_string)
        .collect()
}

/// A root-relative path with no `..`, no leading `/` and no pathspec magic, so a
/// hand-edited record cannot widen what git is asked to leave out.
fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.starts_with(':')
        && !path.split('/').any(|part| part == "..")
}

/// Paths a parallel task's evidence leaves out: the Files of the other members of its
/// parallel group (declared independent), minus the task's own Files. Empty when the task
/// is not in the current group or the group has one member.
pub fn sibling_files(list: &crate::model::tasks::TaskList, task_id: &str) -> Vec<String> {
    others_files(&list.parallel_group(list.next_index()), task_id)
}

/// The Files of the tasks in `group` other than `task_id`, minus its own Files (empty when
/// it is not in `group`).
pub fn others_files(group: &[&crate::model::tasks::Task], task_id: &str) -> Vec<String> {
    let Some(own) = group.iter().find(|t| t.label() == task_id) else {
        return Vec::new();
    };
    let mut paths: Vec<String> = group
        .iter()
        .filter(|t| t.label() != task_id)
        .flat_map(|t| t.files.iter())
        .filter(|f| is_plain_relative(f) && !own.files.contains(f))
        .cloned()
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The fingerprint with `extra` root-relative paths left out besides the bookkeeping.
pub fn fingerprint_excluding(
    project: &Project,
    spec: &Spec,
    extra: &[String],
) -> Result<Fingerprint> {
    fingerprint_in(project, spec, &project.tree, extra)
}

/// The fingerprint of the work tree `dir` (the main checkout or a member worktree; the
/// bookkeeping paths are the same relative paths in both).
pub fn fingerprint_in(
    project: &Project,
    spec: &Spec,
    dir: &Path,
    extra: &[String],
) -> Result<Fingerprint> {
    let mut excluded = bookkeeping_paths(project, spec);
    excluded.extend(extra.iter().filter(|p| is_plain_relative(p)).cloned());
    match locate_git(dir) {
        Some(repo) => Ok(Fingerprint {
            tree: git_tree(dir, &repo, &excluded)?,
            method: TreeMethod::Git,
        }),
        None => Ok(Fingerprint {
            tree: files::tree(dir, &excluded)?,
            method: TreeMethod::Files,
        }),
    }
}

/// The tree of the temporary index in `env` once `excluded` and the store's temp files of
/// the excluded files (`io::project::is_bookkeeping_temp`) are taken out of it.
fn write_without(
    dir: &Path,
    repo: &GitLocation,
    env: &[(&str, &std::ffi::OsStr)],
    excluded: &[String],
) -> Result<String> {
    let temps = bookkeeping_temp_globs(excluded);
    // `-f`: a bookkeeping or sibling file rewritten since the add (an events line, a state
    // write) leaves a staged copy that differs from both HEAD and the file, which plain
    // `rm --cached` refuses to drop; this index is ours and thrown away.
    let mut rm_args = vec!["rm", "--cached", "-f", "-r", "-q", "--ignore-unmatch", "--"];
    rm_args.extend(excluded.iter().map(String::as_str));
    rm_args.extend(temps.iter().map(String::as_str));
    // A submodule's own tree has nothing to leave out (git refuses an empty pathspec).
    if !excluded.is_empty() {
        crate::io::git::run(dir, &rm_args, env)?;
    }
    let prefix_arg = format!("--prefix={}", repo.prefix);
    let mut write_args = vec!["write-tree"];
    if !repo.prefix.is_empty() {
        write_args.push(&prefix_arg);
    }
    Ok(crate::io::git::run(dir, &write_args, env)?
        .trim()
        .to_string())
}

/// The fingerprint a clean checkout of `commit` has in the project (what `fingerprint_in`
/// gives its work tree with nothing uncommitted): the commit's tree without the
/// bookkeeping and `extra`. A CI member's evidence, made in another checkout, is checked
/// against the commit it travelled with so. Submodules' own trees are not combined in.
pub fn commit_fingerprint(
    project: &Project,
    spec: &Spec,
    commit: &str,
    extra: &[String],
) -> Result<String> {
    let dir = &project.root;
    let repo = locate_git(dir).ok_or_else(|| Error::Refused {
        message: format!("{} is not a git repository", dir.display()),
    })?;
    let temp_index = tempfile::Builder::new()
        .prefix("specrun-index-")
        .tempfile_in(&repo.git_dir)
        .map_err(|e| Error::io(&repo.git_dir, "create a temporary index in", e))?;
    // git refuses an existing empty index file: it writes its own.
    let _ = std::fs::remove_file(temp_index.path());
    let env = [("GIT_INDEX_FILE", temp_index.path().as_os_str())];
    crate::io::git::run(dir, &["read-tree", commit], &env)?;
    let mut excluded = bookkeeping_paths(project, spec);
    excluded.extend(extra.iter().filter(|p| is_plain_relative(p)).cloned());
    write_without(dir, &repo, &env, &excluded)
}

/// A pathspec for the store's temp files of each excluded path, beside it: what
/// `io::project::is_bookkeeping_temp` tells, as git reads it. A path holding a glob
/// character gets none.
fn bookkeeping_temp_globs(excluded: &[String]) -> Vec<String> {
    use crate::io::store::temp_prefix_of;
    excluded
        .iter()
        .filter(|p| !p.contains(['*', '?', '[', '\\']))
        .map(|p| match p.rsplit_once('/') {
            Some((dir, name)) => format!(":(glob){dir}/{}*", temp_prefix_of(name)),
            None => format!(":(glob){}*", temp_prefix_of(p)),
        })
        .collect()
}

/// Where a directory's repository keeps its index, and the directory's path inside the
/// work tree (`""` at the top level, `sub/dir/` below it).
struct GitLocation {
    git_dir: std::path::PathBuf,
    prefix: String,
}

fn locate_git(dir: &Path) -> Option<GitLocation> {
    // The common case costs no process: the root holds `.git` itself.
    if let Some(git_dir) = crate::io::git::git_dir(dir) {
        if git_dir.is_dir() {
            return Some(GitLocation {
                git_dir,
                prefix: String::new(),
            });
        }
    }
    // The project root may sit below the top of a work tree (specs/ in a subdirectory).
    let out = crate::io::git::run(
        dir,
        &["rev-parse", "--absolute-git-dir", "--show-prefix"],
        &[],
    )
    .ok()?;
    let mut lines = out.lines();
    let git_dir = std::path::PathBuf::from(lines.next()?.trim());
    let prefix = lines.next().unwrap_or("").trim().to_string();
    Some(GitLocation { git_dir, prefix })
}

/// The tree id of `dir` (tracked + untracked-not-ignored, minus `excluded`) through a
/// temporary index, then combined with the trees of checked-out submodules, whose own
/// working changes a gitlink alone would not show.
fn git_tree(dir: &Path, repo: &GitLocation, excluded: &[String]) -> Result<String> {
    let temp_index = tempfile::Builder::new()
        .prefix("specrun-index-")
        .tempfile_in(&repo.git_dir)
        .map_err(|e| Error::io(&repo.git_dir, "create a temporary index in", e))?;
    if crate::io::store::copy_into(&repo.git_dir.join("index"), temp_index.as_file())? {
        // Keep the real index's mtime: git treats entries modified at or after it as
        // racily clean and re-hashes them; a fresh mtime would hide a same-size edit made
        // in the same timestamp tick as the last index write.
        if let Ok(mtime) = std::fs::metadata(repo.git_dir.join("index")).and_then(|m| m.modified())
        {
            let _ = temp_index.as_file().set_modified(mtime);
        }
    } else {
        // No index yet (no commit, nothing staged): git starts from an empty one, but it
        // refuses an existing empty file, so remove ours and let git create it.
        let _ = std::fs::remove_file(temp_index.path());
    }
    let env = [("GIT_INDEX_FILE", temp_index.path().as_os_str())];
    // Add everything, then take the excluded paths out again. An `:(exclude)` pathspec
    // cannot be used: git fails the add when it names a gitignored path (`.specrun/` is
    // commonly ignored). The store's temp files (a state write in flight, which an
    // executor's `git add -A` may even have committed) are never evidence.
    add_all(dir, &env, excluded)?;
    let tree = write_without(dir, repo, &env, excluded)?;
    // Only a repository that declares submodules pays for listing gitlinks.
    let top = dir.ancestors().nth(repo.prefix.matches('/').count());
    if !top.is_some_and(|t| t.join(".gitmodules").is_file()) {
        return Ok(tree);
    }
    let staged = crate::io::git::run(dir, &["ls-files", "-s", "-z", "--", "."], &env)?;
    let mut combined = crate::support::sha256::Sha256::default();
    combined.update(format!("specrun-tree-v1\0{tree}\0").as_bytes());
    let mut any = false;
    for entry in staged.split('\0') {
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        if !meta.starts_with("160000 ") {
            continue;
        }
        let sub_dir = dir.join(path);
        let Some(sub_repo) = locate_git(&sub_dir).filter(|_| sub_dir.join(".git").exists()) else {
            continue; // Not checked out: the gitlink's commit in `tree` is all there is.
        };
        let sub_tree = git_tree(&sub_dir, &sub_repo, &[])?;
        combined.update(format!("{path}\0{sub_tree}\0").as_bytes());
        any = true;
    }
    Ok(if any { combined.finish_hex() } else { tree })
}

/// `git add -A` into the temporary index. A file truncated and rewritten while git reads it
/// (a sibling executor's `echo … > file`) fails the add with a short read. When every file
/// git could not index is one the fingerprint drops anyway, the add did its work
/// (`--ignore-errors` added the rest); otherwise the tree is in flux, so try again a moment
/// later, twice at most.
fn add_all(dir: &Path, env: &[(&str, &std::ffi::OsStr)], excluded: &[String]) -> Result<()> {
    let mut tries = 0;
    loop {
        match crate::io::git::run(dir, &["add", "-A", "--ignore-errors", "--", "."], env) {
            Ok(_) => return Ok(()),
            Err(Error::Git { message, .. }) if only_excluded_failed(&message, excluded) => {
                return Ok(())
            }
            Err(_) if tries < 2 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(25 * tries));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether git's add failed only on files the fingerprint excludes (named in its
/// `unable to index file '<path>'` lines), or on the store's temporary files.
fn only_excluded_failed(message: &str, excluded: &[String]) -> bool {
    let failed: Vec<&str> = message
        .lines()
        .filter_map(|l| {
            l.strip_prefix("error: unable to index file '")?
                .strip_suffix('\'')
        })
        .collect();
    let dropped = |path: &str| {
        crate::io::project::is_bookkeeping_temp(path, excluded)
            || excluded.iter().any(|e| {
                path == e
                    || path
                        .strip_prefix(e.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            })
    };
    !failed.is_empty() && failed.iter().all(|p| dropped(p))
}

/// How much of a verification command's output a record keeps.
pub const OUTPUT_TAIL_BYTES: usize = 4096;

/// The last `limit` bytes of a stream, in bounded memory however long the stream.
#[derive(Debug, Clone)]
pub struct OutputTail {
    buf: std::collections::VecDeque<u8>,
    limit: usize,
}

impl OutputTail {
    pub fn new(limit: usize) -> Self {
        OutputTail {
            buf: std::collections::VecDeque::with_capacity(limit),
            limit,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        let chunk = &chunk[chunk.len().saturating_sub(self.limit)..];
        let overflow = (self.buf.len() + chunk.len()).saturating_sub(self.limit);
        self.buf.drain(..overflow);
        self.buf.extend(chunk);
    }

    /// The kept bytes as text; a character cut in half at the start is dropped, invalid
    /// UTF-8 elsewhere becomes U+FFFD.
    pub fn text(&self) -> String {
        let bytes: Vec<u8> = self.buf.iter().copied().collect();
        let start = if self.buf.len() == self.limit {
            bytes
                .iter()
                .take(3)
                .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
                .count()
        } else {
            0
        };
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }
}

/// A phase name is a key under `verificationBlocks`: letters, digits, `-` and `_`.
pub fn validate_phase(phase: &str) -> Result<()> {
    if phase.is_empty() {
        return Err(Error::bad_input("--phase", "the phase is empty"));
    }
    if let Some(c) = phase
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(Error::bad_input(
            "--phase",
            format!("phase {phase:?} contains {c:?}; use letters, digits, `-` and `_`"),
        ));
    }
    Ok(())
}

/// The evidence record `verify run` stores.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub command: String,
    pub exit_code: i32,
    pub started_at: String,
    pub duration_ms: u64,
    pub timed_out: bool,
    pub output_tail: String,
    pub task_id: Option<String>,
    /// The fingerprint the command started from.
    pub before: Fingerprint,
    /// The fingerprint when it ended.
    pub after: Fingerprint,
    /// Paths both fingerprints leave out besides the bookkeeping (parallel siblings' Files).
    pub excluded_paths: Vec<String>,
    /// Files of the tree that changed while the command ran (the watch), even if put back.
    pub touched: Vec<String>,
}

impl RunRecord {
    /// The record as stored: bound to the tree the command started from. When the command
    /// itself changed the tree, `treeAfter` says to what, and the evidence is stale at once.
    pub fn fields(&self) -> RecordFields<'_> {
        let changed = self.before != self.after || !self.touched.is_empty();
        RecordFields {
            command: &self.command,
            exit_code: self.exit_code,
            started_at: &self.started_at,
            duration_ms: self.duration_ms,
            tree: &self.before.tree,
            tree_method: self.before.method.as_str(),
            output_tail: &self.output_tail,
            timed_out: self.timed_out,
            task_id: self.task_id.as_deref(),
            excluded_paths: &self.excluded_paths,
            tree_changed: changed,
            tree_after: changed.then_some(self.after.tree.as_str()),
            touched_during_run: &self.touched,
        }
    }

    /// `fields` as the stored record.
    pub fn to_record(&self) -> EvidenceRecord {
        let doc = serde_json::to_value(self.fields()).expect("an evidence record serializes");
        EvidenceRecord::from_value(doc).expect("an evidence record is an object")
    }
}

/// An evidence record's own fields, in the order they are stored (docs/design.md).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordFields<'a> {
    pub command: &'a str,
    pub exit_code: i32,
    pub started_at: &'a str,
    pub duration_ms: u64,
    pub tree: &'a str,
    pub tree_method: &'static str,
    pub output_tail: &'a str,
    pub timed_out: bool,
    pub task_id: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub excluded_paths: &'a [String],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tree_changed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree_after: Option<&'a str>,
    /// Files changed while the command ran: the record is stale whatever the tree is now.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub touched_during_run: &'a [String],
}

/// Store `record` in `slot` of the state, replacing the one there.
pub fn put_record(state: &mut State, slot: &Slot, record: EvidenceRecord) {
    match slot {
        Slot::Phase(p) => state.put_verification_block(p, record),
        Slot::Task(id) => state.put_task_evidence(id, record),
    }
}

/// Assess a slot's record (`Slot::record_of`) against the current tree.
pub fn check_record(project: &Project, spec: &Spec, record: Option<&EvidenceRecord>) -> Freshness {
    // Only a passing record needs the current tree (a git process or a walk of the files).
    let tree = record
        .filter(|r| passed(r))
        .and_then(|r| fingerprint_for(project, spec, Some(r)).ok())
        .map(|f| f.tree);
    assess(record, tree.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::state::record_for_test as rec;

    /// Regression (issue 21): a `durationMs` the store accepts (any u64) past the calendar's
    /// end panicked in `DateTime + TimeDelta` (`task complete`, `critique status`,
    /// SubagentStop); the end of such a run is unknown.
    #[test]
    fn an_end_past_the_calendar_is_unknown_not_a_panic() {
        for ms in [9_000_000_000_000_000u64, i64::MAX as u64, u64::MAX] {
            let run = rec(json!({"startedAt": "2026-01-01T00:00:00Z", "durationMs": ms}));
            assert_eq!(ended_at(&run), None, "{ms}");
        }
        let late = rec(json!({"startedAt": "+262143-12-31T23:59:59Z", "durationMs": 1000}));
        assert_eq!(ended_at(&late), None);
    }

    use serde_json::json;

    #[test]
    fn a_task_record_counts_only_for_its_own_verify_command_or_an_accepted_one() {
        let own = rec(json!({"command": " grep -q A a.txt "}));
        assert_eq!(command_fit(&own, Some("grep -q A a.txt")), CommandFit::Own);
        assert_eq!(command_fit(&own, None), CommandFit::NoVerify);
        let other = command_fit(&rec(json!({"command": "true"})), Some("grep -q A a.txt"));
        assert!(!other.counts());
        let why = other.problem("demo", "1.1").unwrap();
        assert!(
            why.contains("ran `true`, not the task's Verify command `grep -q A a.txt`"),
            "{why}"
        );
        assert!(
            why.contains("`specrun verify run --task 1.1 --spec demo`"),
            "{why}"
        );
        let accepted = rec(json!({"command": "true", "acceptedOther": {"reason": "flaky CI box"}}));
        assert_eq!(
            command_fit(&accepted, Some("make test")),
            CommandFit::Accepted("flaky CI box".into())
        );
        let blank = rec(json!({"command": "true", "acceptedOther": {"reason": "  "}}));
        assert!(!command_fit(&blank, Some("make test")).counts());
    }

    #[test]
    fn assess_covers_every_outcome() {
        let ok = rec(json!({"exitCode": 0, "tree": "t1", "timedOut": false}));
        assert_eq!(assess(None, Some("t1")), Freshness::Missing);
        assert_eq!(assess(Some(&ok), Some("t1")), Freshness::Fresh);
        assert_eq!(assess(Some(&ok), Some("t2")), Freshness::Stale);
        assert_eq!(assess(Some(&ok), None), Freshness::Stale);
        assert_eq!(
            assess(Some(&rec(json!({"exitCode": 1, "tree": "t1"}))), Some("t1")),
            Freshness::Failed
        );
        assert_eq!(
            assess(
                Some(&rec(json!({"exitCode": 0, "tree": "t1", "timedOut": true}))),
                Some("t1")
            ),
            Freshness::Failed
        );
    }

    #[test]
    fn output_tail_keeps_the_last_bytes_only() {
        let mut tail = OutputTail::new(8);
        tail.push(b"abc");
        assert_eq!(tail.text(), "abc");
        tail.push(b"defghij");
        assert_eq!(tail.text(), "cdefghij");
        tail.push(&[b'x'; 100]);
        assert_eq!(tail.text(), "xxxxxxxx");
        // A multi-byte character cut at the front is dropped, not shown as garbage.
        let mut tail = OutputTail::new(4);
        tail.push("aé€".as_bytes()); // 1 + 2 + 3 bytes: keeps the last byte of é and €
        assert_eq!(tail.text(), "€");
    }

    #[test]
    fn phases_are_plain_keys() {
        validate_phase("execution").unwrap();
        validate_phase("post-merge_2").unwrap();
        assert!(validate_phase("").is_err());
        assert!(validate_phase("a.b")
            .unwrap_err()
            .to_string()
            .contains("'.'"));
    }

    #[test]
    fn a_record_is_bound_to_the_tree_it_started_from() {
        let fp = |t: &str| Fingerprint {
            tree: t.into(),
            method: TreeMethod::Git,
        };
        let mut run = RunRecord {
            command: "true".into(),
            exit_code: 0,
            started_at: "2026-01-01T00:00:00Z".into(),
            duration_ms: 5,
            timed_out: false,
            output_tail: String::new(),
            task_id: Some("1.2".into()),
            before: fp("t1"),
            after: fp("t1"),
            excluded_paths: Vec::new(),
            touched: Vec::new(),
        };
        let json = run.to_record().to_value();
        assert_eq!(json["tree"], "t1");
        assert!(json.get("treeChanged").is_none());
        assert!(json.get("excludedPaths").is_none());
        run.after = fp("t2");
        let json = run.to_record().to_value();
        assert_eq!(
            (json["tree"].as_str(), json["treeAfter"].as_str()),
            (Some("t1"), Some("t2"))
        );
        assert_eq!(
            assess(Some(&rec(json.clone())), Some("t2")),
            Freshness::Stale
        );
        let mut state = State::lenient(&serde_json::json!({"name": "x", "taskEvidence": 3}));
        put_record(&mut state, &Slot::Task("1.2".into()), rec(json.clone()));
        put_record(&mut state, &Slot::Phase("execution".into()), rec(json));
        assert!(Slot::Task("1.2".into()).record_of(&state).is_some());
        assert!(Slot::Phase("execution".into()).record_of(&state).is_some());
    }

    #[test]
    fn sibling_files_are_the_other_members_files_only() {
        let list = crate::model::tasks::parse(
            "- [ ] 1 [P] A\n  - **Files**: a.rs, shared.rs\n- [ ] 2 [P] B\n  - **Files**: b.rs, shared.rs, ../x\n- [ ] 3 C\n  - **Files**: c.rs\n",
        );
        assert_eq!(sibling_files(&list, "1"), ["b.rs"]);
        assert_eq!(sibling_files(&list, "2"), ["a.rs"]);
        assert!(
            sibling_files(&list, "3").is_empty(),
            "3 is not in the group"
        );
        let record = rec(json!({"excludedPaths": ["b.rs", "../etc", "/abs", ":(glob)*", "", 7]}));
        assert_eq!(excluded_paths(Some(&record)), ["b.rs"]);
    }

    #[test]
    fn slots_find_their_records() {
        let doc = json!({"verificationBlocks": {"execution": {"exitCode": 0}}, "taskEvidence": {"1.2": {"exitCode": 1}}});
        let state = State::from_value(&doc).unwrap();
        assert!(Slot::Phase("execution".into()).record_of(&state).is_some());
        assert!(Slot::Task("1.2".into()).record_of(&state).is_some());
        assert!(Slot::Task("1.3".into()).record_of(&state).is_none());
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests set up and inspect files directly
mod tree_tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn tree_changes_with_code_not_with_bookkeeping_and_leaves_index_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir_all(root.join("specs/demo")).unwrap();
        std::fs::write(root.join("specs/demo/tasks.md"), "- [ ] 1 A\n").unwrap();
        std::fs::write(root.join("a.rs"), "fn a() {}\n").unwrap();
        let project = Project::discover(Some(root)).unwrap();
        let spec = project.spec(Some("demo")).unwrap().unwrap();
        // Works before the first commit.
        let t0 = current_tree(&project, &spec).unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "init"]);
        let index_before = std::fs::read(root.join(".git/index")).unwrap();
        let t1 = current_tree(&project, &spec).unwrap();
        assert_eq!(t0, t1);
        std::fs::write(root.join("specs/demo/tasks.md"), "- [x] 1 A\n").unwrap();
        std::fs::write(root.join("specs/demo/.progress.md"), "done\n").unwrap();
        // Regression: the lock sidecar `task complete` creates for .progress.md staled evidence.
        for lock in [
            ".progress.md.lock",
            "tasks.md.lock",
            ".specrun-state.json.lock",
        ] {
            std::fs::write(root.join("specs/demo").join(lock), "").unwrap();
        }
        // Regression: a sibling's state write in flight (the store's temp file) staled it.
        std::fs::write(
            root.join("specs/demo/..specrun-state.json.specrun-tmp-a1"),
            "{",
        )
        .unwrap();
        std::fs::write(root.join("specs/..current-spec.specrun-tmp-b2"), "x").unwrap();
        assert_eq!(
            current_tree(&project, &spec).unwrap(),
            t1,
            "bookkeeping staled the tree"
        );
        std::fs::write(root.join("a.rs"), "fn a() { 1; }\n").unwrap();
        let t2 = current_tree(&project, &spec).unwrap();
        assert_ne!(t2, t1, "a code edit did not change the tree");
        std::fs::write(root.join("new.rs"), "x").unwrap();
        assert_ne!(
            current_tree(&project, &spec).unwrap(),
            t2,
            "an untracked file was missed"
        );
        std::fs::remove_file(root.join("new.rs")).unwrap();
        // A temp-shaped name beside no bookkeeping file is code like any other.
        std::fs::write(root.join(".a.rs.specrun-tmp-c3"), "x").unwrap();
        assert_ne!(
            current_tree(&project, &spec).unwrap(),
            t2,
            "a temp-shaped file was missed"
        );
        std::fs::remove_file(root.join(".a.rs.specrun-tmp-c3")).unwrap();
        std::fs::write(root.join("a.rs"), "fn a() {}\n").unwrap();
        assert_eq!(
            current_tree(&project, &spec).unwrap(),
            t1,
            "reverting did not restore"
        );
        assert_eq!(
            std::fs::read(root.join(".git/index")).unwrap(),
            index_before
        );
        // Committing tasks.md (the executor's commit) must not stale evidence either.
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "tick"]);
        assert_eq!(current_tree(&project, &spec).unwrap(), t1);
    }

    #[test]
    fn an_add_that_failed_only_on_dropped_files_did_its_work() {
        let ex = vec![
            "b.txt".to_string(),
            ".specrun".to_string(),
            "specs/x/s.json".to_string(),
        ];
        let msg = |p: &str| {
            format!("error: short read while indexing {p}\nerror: {p}: failed to insert into database\nerror: unable to index file '{p}'")
        };
        assert!(only_excluded_failed(&msg("b.txt"), &ex));
        assert!(only_excluded_failed(&msg(".specrun/events.jsonl"), &ex));
        assert!(only_excluded_failed(
            &msg("specs/x/.s.json.specrun-tmp-1"),
            &ex
        ));
        assert!(!only_excluded_failed(&msg("b.txt.bak"), &ex));
        assert!(!only_excluded_failed(&msg("lib/.a.js.specrun-tmp-1"), &ex));
        assert!(!only_excluded_failed(&msg(".specrunx/a"), &ex));
        let both = format!("{}\n{}", msg("b.txt"), msg("src/a.rs"));
        assert!(!only_excluded_failed(&both, &ex));
        assert!(!only_excluded_failed("fatal: not a git repository", &ex));
    }

    /// A sibling rewriting its own (excluded) file while a member's fingerprint is taken:
    /// between the temporary index's `add` and `rm --cached` the staged copy can differ from
    /// both HEAD and the file, which plain `git rm --cached` refuses. Seen in the e2e
    /// background group of three on Claude Code 2.1.332.
    #[test]
    fn an_excluded_file_rewritten_meanwhile_never_fails_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        git(&root, &["init", "-q"]);
        std::fs::create_dir_all(root.join("specs/demo")).unwrap();
        std::fs::write(root.join("specs/demo/tasks.md"), "- [ ] 1 A\n").unwrap();
        std::fs::write(root.join("b.txt"), "committed\n").unwrap();
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", "init"]);
        let project = Project::discover(Some(&root)).unwrap();
        let spec = project.spec(Some("demo")).unwrap().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (stop, path) = (stop.clone(), root.join("b.txt"));
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    std::fs::write(&path, "x".repeat((n % 50) as usize + 1)).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            })
        };
        let excluded = vec!["b.txt".to_string()];
        let results: Vec<_> = (0..300)
            .map(|_| fingerprint_excluding(&project, &spec, &excluded).map(|f| f.tree))
            .collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
        let trees: Vec<String> = results.into_iter().map(Result::unwrap).collect();
        assert!(trees.windows(2).all(|w| w[0] == w[1]), "{trees:?}");
    }
}
