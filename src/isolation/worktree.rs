//! Isolated members: each runs on its own branch `specrun/<spec>/<id>` in its own git
//! worktree `<root>/.specrun/worktrees/<spec>/<id>`, created from the group's base commit,
//! and is merged back with `--no-ff` (never rebased). The typed `isolation` record of the
//! state file and the git operations on worktrees and branches live here; `isolation.rs`
//! (for the task verbs) and `commands/group.rs` decide when to call them.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::model::state::Patch;

use crate::error::{Error, Result};
use crate::io::git;
use crate::io::project::{Project, Spec};
use crate::model::tasks::{Task, TaskList};

pub use crate::model::state::group::{
    Group, Member, CANCELLED, CONFLICT, MERGED, OUTSIDE_FILES, READY, ROLLED_BACK, RUNNING,
};

/// The `isolation` record of a state document (absent or malformed parts = none).
#[derive(Debug, Clone, Default)]
pub struct Isolation {
    pub sequential: bool,
    pub group: Option<Group>,
    pub members: std::collections::BTreeMap<String, Member>,
}

impl Isolation {
    /// The record read from the typed state.
    pub fn of(state: &crate::model::state::State) -> Isolation {
        let Some(iso) = &state.isolation else {
            return Isolation::default();
        };
        let field = |k: &str| iso.other.get(k);
        Isolation::from_parts(iso.sequential, field("group"), field("members"))
    }

    fn from_parts(
        sequential: Option<bool>,
        group: Option<&Value>,
        members: Option<&Value>,
    ) -> Self {
        Isolation {
            sequential: sequential.unwrap_or(false),
            group: group.and_then(|g| Group::deserialize(g).ok()),
            members: members
                .and_then(|m| Deserialize::deserialize(m).ok())
                .unwrap_or_default(),
        }
    }

    pub fn member(&self, id: &str) -> Option<&Member> {
        self.members.get(id)
    }

    /// The group a task belongs to when it is an open member of it.
    pub fn open_group(&self) -> Option<&Group> {
        self.group.as_ref().filter(|g| !g.is_complete())
    }
}

/// A state patch setting one member's record.
pub fn member_patch(id: &str, member: &Member) -> Patch {
    Patch::new().isolation_member(id, member)
}

pub fn group_patch(group: &Group) -> Patch {
    Patch::new().isolation_group(group)
}

pub fn branch_name(spec: &str, id: &str) -> String {
    format!("specrun/{spec}/{id}")
}

pub fn member_dir(project: &Project, spec: &Spec, id: &str) -> PathBuf {
    project.worktrees_dir(&spec.name).join(id)
}

/// The tree a task's code lives in: its open member worktree when it has one on disk, else
/// the tree the command stands in.
pub fn task_tree(project: &Project, spec: &Spec, iso: &Isolation, id: &str) -> PathBuf {
    match iso.member(id).filter(|m| m.is_open()) {
        Some(m) => {
            let dir = project.worktrees_dir(&spec.name).join(&m.worktree);
            if dir.join(".git").is_file() {
                dir
            } else {
                project.tree.clone()
            }
        }
        None => project.tree.clone(),
    }
}

/// The members a new group for `task` holds: its `[P]` group when it is in the current
/// one, else the task alone (a fix task or an isolated sequential task).
pub fn group_members(list: &TaskList, task: &Task) -> Vec<String> {
    let group = list.parallel_group(list.next_index());
    if group.iter().any(|t| t.index == task.index) {
        group.iter().map(|t| t.label()).collect()
    } else {
        vec![task.label()]
    }
}

/// The `[VERIFY]` task right after the last of `members` in the file, if any.
pub fn verify_task_after(list: &TaskList, members: &[String]) -> Option<String> {
    let last = list
        .tasks
        .iter()
        .filter(|t| members.contains(&t.label()))
        .map(|t| t.index)
        .max()?;
    list.tasks
        .get(last + 1)
        .filter(|t| t.is_verify())
        .map(Task::label)
}

// ---- git facts ------------------------------------------------------------------------

/// Why isolation cannot be used in the main checkout, or `None`.
pub enum Unavailable {
    /// Not a git repository: the group runs in the shared tree as before.
    NotGit,
    /// A refusal with its reason (detached HEAD, no commit, dirty tree).
    Refused(String),
}

/// The main checkout's branch and HEAD, checked for a group start: a git repository, on a
/// branch, with a commit, and clean apart from the spec's bookkeeping.
pub fn main_base(
    project: &Project,
    spec: &Spec,
) -> std::result::Result<(String, String), Unavailable> {
    let root = &project.root;
    if !git::is_repo(root) {
        return Err(Unavailable::NotGit);
    }
    let info = git::info(root);
    if !info.available {
        return Err(Unavailable::NotGit);
    }
    let Some(head) = info.head.clone() else {
        return Err(Unavailable::Refused(
            "the repository has no commit yet: commit once so members have a base to branch from"
                .into(),
        ));
    };
    let Some(branch) = info.branch.clone() else {
        return Err(Unavailable::Refused(format!(
            "{} is on a detached HEAD ({}): members merge back into a branch, so check one out first (`git switch <branch>`)",
            root.display(),
            crate::io::git::short_commit(&head)
        )));
    };
    let dirty = dirty_files(project, spec, &info.changed_files);
    if !dirty.is_empty() {
        return Err(Unavailable::Refused(format!(
            "the main checkout has uncommitted changes outside the spec's bookkeeping: {}; commit or stash them first, so every member starts from the same base and the merge cannot touch them",
            list_some(&dirty)
        )));
    }
    Ok((branch, head))
}

/// Changed paths that are not specrun's bookkeeping (`bookkeeping::roots`).
pub fn dirty_files(project: &Project, spec: &Spec, changed: &[String]) -> Vec<String> {
    changed
        .iter()
        .filter(|p| !crate::io::bookkeeping::is_bookkeeping(project, Some(spec), p))
        .cloned()
        .collect()
}

/// At most ten paths, then a count.
pub fn list_some(paths: &[String]) -> String {
    let shown: Vec<&str> = paths.iter().take(10).map(String::as_str).collect();
    match paths.len() {
        n if n > 10 => format!("{} and {} more", shown.join(", "), n - 10),
        _ => shown.join(", "),
    }
}

fn branch_exists(root: &Path, branch: &str) -> bool {
    git::run(
        root,
        &[
            "rev-parse",
            "-q",
            "--verify",
            &format!("refs/heads/{branch}^{{commit}}"),
        ],
        &[],
    )
    .is_ok()
}

pub fn rev(root: &Path, name: &str) -> Option<String> {
    git::run(
        root,
        &["rev-parse", "-q", "--verify", &format!("{name}^{{commit}}")],
        &[],
    )
    .ok()
    .map(|s| s.trim().to_string())
}

pub fn is_ancestor(root: &Path, a: &str, b: &str) -> bool {
    git::run(root, &["merge-base", "--is-ancestor", a, b], &[]).is_ok()
}

/// Environment giving git an identity when the user has none configured (commit and
/// merge refuse to run otherwise); a configured identity is left alone.
pub fn identity_env(root: &Path) -> Vec<(&'static str, std::ffi::OsString)> {
    if git::run(root, &["var", "GIT_COMMITTER_IDENT"], &[]).is_ok()
        && git::run(root, &["var", "GIT_AUTHOR_IDENT"], &[]).is_ok()
    {
        return Vec::new();
    }
    vec![
        ("GIT_AUTHOR_NAME", "specrun".into()),
        ("GIT_AUTHOR_EMAIL", "specrun@localhost".into()),
        ("GIT_COMMITTER_NAME", "specrun".into()),
        ("GIT_COMMITTER_EMAIL", "specrun@localhost".into()),
    ]
}

fn run_ident(dir: &Path, args: &[&str]) -> Result<String> {
    let ident = identity_env(dir);
    let env: Vec<(&str, &std::ffi::OsStr)> =
        ident.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    git::run(dir, args, &env)
}

/// What `ensure` did for a member's worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ensured {
    pub path: PathBuf,
    pub branch: String,
    /// Human notes: an earlier attempt reused, the base merged in, a conflict to resolve.
    pub notes: Vec<String>,
}

/// Create (or take up again) the member worktree of `id` on its branch from `base`. An
/// earlier attempt's branch or worktree (`ours`: the state records this execution made
/// it) is reused and the base merged into it (never a rebase); a conflict of that merge is
/// left in the worktree for the executor to resolve. One this execution did not make is
/// refused: it could carry changes no attempt's scan or review ever saw.
pub fn ensure(project: &Project, spec: &Spec, id: &str, base: &str, ours: bool) -> Result<Ensured> {
    let root = &project.root;
    let branch = branch_name(&spec.name, id);
    let path = member_dir(project, spec, id);
    // A link on the way (`.specrun` or `.specrun/worktrees` pointing elsewhere) would put
    // the member's checkout, and later its removal, outside the project.
    crate::io::store::check_dir(&path)?;
    let mut notes = Vec::new();
    let registered = path.join(".git").is_file();
    if !registered && path.exists() {
        return Err(Error::Refused {
            message: format!(
                "{} exists but is not a git worktree: move it aside (nothing was changed)",
                path.display()
            ),
        });
    }
    if !ours && (registered || branch_exists(root, &branch)) {
        let what = if registered {
            format!("worktree {}", path.display())
        } else {
            format!("branch {branch}")
        };
        return Err(Error::Refused {
            message: format!(
                "{what} exists but this execution did not create it (no attempt of task {id} recorded it), so it may carry changes from outside the run: remove it or rename it (`git branch -m {branch} {branch}-old`, `git worktree remove`), then start the task again (nothing was changed)"
            ),
        });
    }
    if !registered {
        if let Some(parent) = path.parent() {
            crate::io::store::ensure_dir(parent)?;
        }
        let p = path.to_string_lossy().into_owned();
        if branch_exists(root, &branch) {
            git::run(root, &["worktree", "add", "-q", &p, &branch], &[])?;
            notes.push(format!(
                "branch {branch} exists from an earlier attempt: reused"
            ));
        } else {
            git::run(
                root,
                &["worktree", "add", "-q", "-b", &branch, &p, base],
                &[],
            )?;
        }
    } else {
        notes.push(format!(
            "worktree {} exists from an earlier attempt: reused",
            path.display()
        ));
    }
    let head = rev(&path, "HEAD");
    if head
        .as_deref()
        .is_some_and(|h| !is_ancestor(&path, base, h))
    {
        let short = crate::io::git::short_commit(base);
        match run_ident(&path, &["merge", "--no-ff", "--no-edit", "-q", base]) {
            Ok(_) => notes.push(format!("merged the base {short} into {branch} (no rebase)")),
            Err(_) => {
                let files = conflicted(&path);
                notes.push(format!(
                    "merging the base {short} into {branch} conflicts in {}: resolve the conflict markers in the worktree, then verify and complete (the completion commits the merge)",
                    list_some(&files)
                ));
            }
        }
    }
    Ok(Ensured {
        path,
        branch,
        notes,
    })
}

/// Paths with unresolved conflicts in `dir`.
pub fn conflicted(dir: &Path) -> Vec<String> {
    git::run(dir, &["diff", "--name-only", "--diff-filter=U", "-z"], &[])
        .map(|out| {
            out.split('\0')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Paths the member changed since `base`: committed, staged, unstaged and untracked,
/// without specrun's bookkeeping (never a task's change, so never scope drift).
pub fn changed_since(
    project: &Project,
    spec: &Spec,
    dir: &Path,
    base: &str,
) -> Result<Vec<String>> {
    let diff = git::run(
        dir,
        &["diff", "--name-only", "--no-renames", "-z", base, "--"],
        &[],
    )?;
    let untracked = git::run(
        dir,
        &["ls-files", "--others", "--exclude-standard", "-z"],
        &[],
    )?;
    let mut paths: Vec<String> = diff
        .split('\0')
        .chain(untracked.split('\0'))
        .filter(|p| {
            !p.is_empty() && !crate::io::bookkeeping::is_bookkeeping(project, Some(spec), p)
        })
        .map(str::to_string)
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Changed paths that no Files entry of the task covers (none when it lists no Files).
pub fn outside_files(task: &Task, changed: &[String]) -> Vec<String> {
    if task.files.is_empty() {
        return Vec::new();
    }
    changed
        .iter()
        .filter(|p| !crate::support::glob::path_in_files(p, &task.files))
        .cloned()
        .collect()
}

/// Commit everything in the member worktree (bookkeeping left out) on its branch; also
/// concludes a merge of the base the executor resolved. Returns the branch tip.
pub fn commit_member(project: &Project, spec: &Spec, dir: &Path, message: &str) -> Result<String> {
    let mut args: Vec<String> = ["add", "-A", "--", "."]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for b in crate::io::project::bookkeeping_paths(project, spec) {
        args.push(format!(":(exclude){b}"));
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    git::run(dir, &refs, &[])?;
    let staged = git::run(dir, &["diff", "--cached", "--quiet"], &[]).is_err();
    let merging = rev(dir, "MERGE_HEAD").is_some();
    if staged || merging {
        run_ident(dir, &["commit", "-q", "--no-verify", "-m", message])?;
    }
    rev(dir, "HEAD").ok_or_else(|| Error::Git {
        args: "rev-parse HEAD".into(),
        message: format!("{} has no commit", dir.display()),
    })
}

/// How merging one member into the base branch went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    Merged(String),
    /// The branch's tip is already in the base branch (a re-run after a crash).
    AlreadyMerged,
    /// Aborted; the base tree is as it was. The conflicting paths.
    Conflict(Vec<String>),
}

/// Merge commit `tip` into the checked-out base branch of `root` with `--no-ff`.
fn merge_member(root: &Path, tip: &str, message: &str) -> Result<MergeOutcome> {
    if is_ancestor(root, tip, "HEAD") {
        return Ok(MergeOutcome::AlreadyMerged);
    }
    match run_ident(
        root,
        &["merge", "--no-ff", "--no-edit", "-q", "-m", message, tip],
    ) {
        Ok(_) => Ok(MergeOutcome::Merged(rev(root, "HEAD").unwrap_or_default())),
        Err(err) => {
            let files = conflicted(root);
            if rev(root, "MERGE_HEAD").is_some() {
                git::run(root, &["merge", "--abort"], &[])?;
            }
            if files.is_empty() {
                // Not a content conflict (e.g. an untracked file in the way): say what git said.
                return Err(err);
            }
            Ok(MergeOutcome::Conflict(files))
        }
    }
}

/// One step of merging members into the base branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The branch's tip is already in the base branch (a re-run after a crash).
    AlreadyMerged,
    /// A `--no-ff` merge commit made without touching the checkout; `Merger::land` puts it
    /// (and the ones before it) on the base branch.
    Pending(String),
    /// Merged on the base branch already (the fallback through `git merge`).
    Landed(String),
    /// Not merged; the paths that conflict. Nothing was changed.
    Conflict(Vec<String>),
}

/// Merges members one after another into the checked-out base branch of `root`. Each
/// merge is computed with `git merge-tree --write-tree` and committed with two parents, as
/// `git merge --no-ff` would; `land` then fast-forwards the branch and the checkout once,
/// so a 10,000-file checkout is refreshed once per run, not once per member. Git older than
/// 2.38 (no `--write-tree`) gets one `git merge --no-ff` per member instead.
pub struct Merger {
    root: PathBuf,
    head: String,
    env: Vec<(&'static str, std::ffi::OsString)>,
    plumbing: bool,
    pending: bool,
}

impl Merger {
    pub fn new(root: &Path) -> Result<Merger> {
        let head = rev(root, "HEAD").ok_or_else(|| Error::Refused {
            message: format!("{} has no commit to merge into", root.display()),
        })?;
        Ok(Merger {
            root: root.to_path_buf(),
            head,
            env: identity_env(root),
            plumbing: true,
            pending: false,
        })
    }

    pub fn step(&mut self, branch: &str, message: &str) -> Result<Step> {
        let tip =
            rev(&self.root, &format!("refs/heads/{branch}")).ok_or_else(|| Error::Refused {
                message: format!("branch {branch} does not exist"),
            })?;
        self.step_commit(&tip, message)
    }

    /// `step` for a commit named by its id (a CI member's, fetched without a branch).
    pub fn step_commit(&mut self, tip: &str, message: &str) -> Result<Step> {
        let tip = rev(&self.root, tip).ok_or_else(|| Error::Refused {
            message: format!(
                "commit {tip} is not in {}: fetch it first",
                self.root.display()
            ),
        })?;
        if is_ancestor(&self.root, &tip, &self.head) {
            return Ok(Step::AlreadyMerged);
        }
        if self.plumbing {
            match self.merge_tree(&tip)? {
                Some(Ok(tree)) => {
                    let env: Vec<(&str, &std::ffi::OsStr)> =
                        self.env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
                    let args = [
                        "commit-tree",
                        &tree,
                        "-p",
                        &self.head,
                        "-p",
                        &tip,
                        "-m",
                        message,
                    ];
                    let commit = git::run(&self.root, &args, &env)?.trim().to_string();
                    self.head = commit.clone();
                    self.pending = true;
                    return Ok(Step::Pending(commit));
                }
                Some(Err(files)) => return Ok(Step::Conflict(files)),
                None => self.plumbing = false,
            }
        }
        match merge_member(&self.root, &tip, message)? {
            MergeOutcome::Merged(c) => {
                self.head = c.clone();
                Ok(Step::Landed(c))
            }
            MergeOutcome::AlreadyMerged => Ok(Step::AlreadyMerged),
            MergeOutcome::Conflict(files) => Ok(Step::Conflict(files)),
        }
    }

    /// `Ok(tree)` for a clean merge of `tip` into the current head, `Err(paths)` for a
    /// conflict, `None` when this git cannot compute merges without a checkout.
    fn merge_tree(&self, tip: &str) -> Result<Option<std::result::Result<String, Vec<String>>>> {
        let out = std::process::Command::new("git")
            .current_dir(&self.root)
            .args([
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--no-messages",
                "-z",
                &self.head,
                tip,
            ])
            .env("LC_ALL", "C")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| Error::Git {
                args: "merge-tree".into(),
                message: e.to_string(),
            })?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut fields = text.split('\0').filter(|f| !f.is_empty());
        let tree = fields.next().unwrap_or_default().trim().to_string();
        match out.status.code() {
            Some(0) => Ok(Some(Ok(tree))),
            Some(1) => {
                let mut files: Vec<String> = fields.map(str::to_string).collect();
                files.dedup();
                Ok(Some(Err(files)))
            }
            _ => Ok(None),
        }
    }

    /// Put the pending merge commits on the base branch and the checkout (one
    /// fast-forward, which refuses rather than overwrite a local change).
    pub fn land(&mut self) -> Result<()> {
        if self.pending {
            git::run(&self.root, &["merge", "--ff-only", "-q", &self.head], &[])?;
            self.pending = false;
        }
        Ok(())
    }
}

/// Remove a member's worktree (its content is merged or saved); the directory goes too.
/// Only a directory that really lies below `<root>/.specrun/worktrees/` (no link leading
/// elsewhere, no `..` in a member's recorded name) is ever removed.
pub fn remove_worktree(root: &Path, dir: &Path) -> Result<()> {
    let home = root
        .join(crate::io::project::EVENTS_DIR)
        .join(crate::io::project::WORKTREES_DIR);
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    if dir.exists() {
        let inside = match (real(root), real(&home), real(dir)) {
            (Some(r), Some(h), Some(d)) => h.starts_with(r) && d.starts_with(&h) && d != h,
            _ => false,
        };
        if !inside {
            return Err(Error::Refused {
                message: format!(
                    "{} is not a member worktree below {}: specrun removes nothing else",
                    dir.display(),
                    home.display()
                ),
            });
        }
    }
    if dir.join(".git").is_file() {
        let d = dir.to_string_lossy().into_owned();
        git::run(root, &["worktree", "remove", "--force", &d], &[])?;
    }
    let _ = git::run(root, &["worktree", "prune"], &[]);
    Ok(())
}

pub fn delete_branch(root: &Path, branch: &str) {
    let _ = git::run(root, &["branch", "-q", "-D", branch], &[]);
}

/// Worktrees git knows under `<root>/.specrun/worktrees/`: (path, branch).
pub fn listed(root: &Path) -> Vec<(PathBuf, Option<String>)> {
    let Ok(out) = git::run(root, &["worktree", "list", "--porcelain", "-z"], &[]) else {
        return Vec::new();
    };
    let prefix = root
        .join(crate::io::project::EVENTS_DIR)
        .join(crate::io::project::WORKTREES_DIR);
    let mut found = Vec::new();
    let mut current: Option<(PathBuf, Option<String>)> = None;
    for field in out.split('\0') {
        if let Some(p) = field.strip_prefix("worktree ") {
            found.extend(current.take());
            current = Some((PathBuf::from(p), None));
        } else if let Some(b) = field.strip_prefix("branch refs/heads/") {
            if let Some(c) = current.as_mut() {
                c.1 = Some(b.to_string());
            }
        }
    }
    found.extend(current);
    found.retain(|(p, _)| p.starts_with(&prefix));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn isolation_reads_typed_members_and_group() {
        let state = json!({"isolation": {"sequential": true,
            "group": {"members": ["2.1", "2.2"], "baseBranch": "main", "base": "abc", "status": "running"},
            "members": {"2.1": {"branch": "specrun/d/2.1", "worktree": "2.1", "base": "abc", "status": "ready"}}}});
        let typed = |v: &Value| crate::model::state::State::from_value(v).unwrap();
        let iso = Isolation::of(&typed(&state));
        assert!(iso.sequential);
        assert_eq!(iso.open_group().unwrap().members, ["2.1", "2.2"]);
        assert!(iso.member("2.1").unwrap().is_open());
        assert!(Isolation::of(&typed(&json!({}))).group.is_none());
        let m = iso.member("2.1").unwrap();
        assert_eq!(
            member_patch("2.1", m).to_value(),
            json!({"isolation": {"members": {"2.1": serde_json::to_value(m).unwrap()}}})
        );
    }

    #[test]
    fn outside_files_names_only_uncovered_paths() {
        let list = crate::model::tasks::parse("- [ ] 1 [P] a\n  - **Files**: src/a.rs, docs/\n");
        let t = &list.tasks[0];
        let changed = vec![
            "src/a.rs".to_string(),
            "docs/x.md".into(),
            "src/b.rs".into(),
        ];
        assert_eq!(outside_files(t, &changed), ["src/b.rs"]);
    }

    #[test]
    fn verify_task_after_the_last_member() {
        let list = crate::model::tasks::parse(
            "- [ ] 1 [P] a\n- [ ] 2 [P] b\n- [ ] 3 [VERIFY] v\n  - **Verify**: `true`\n",
        );
        assert_eq!(
            verify_task_after(&list, &["1".into(), "2".into()]).as_deref(),
            Some("3")
        );
        assert_eq!(verify_task_after(&list, &["1".into()]), None);
        assert_eq!(group_members(&list, &list.tasks[1]), ["1", "2"]);
    }
}
