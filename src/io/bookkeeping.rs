//! specrun's own bookkeeping as the verbs that reset, clean or remove files see it: the
//! whole `specs/` directory (every spec, `.current-spec`, `.gitignore`), the active spec's
//! directory wherever it lies, and `.specrun/`. Tracked or not, none of it is ever reset,
//! cleaned, removed or reported as a task's change. Two layers: every git command that
//! rewrites the work tree gets [`excludes`] (top-level directories, because `git clean -d`
//! removes an untracked directory whole even when a path inside it is excluded), and
//! [`Guard`] puts back any bookkeeping file git removed or overwrote anyway (a merge
//! overwrites ignored files, an abort deletes them).

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::io::project::{Project, Spec, EVENTS_DIR, SPECS_DIR, WORKTREES_DIR};
use crate::io::store;

/// The most a [`Guard`] keeps in memory; past it, the rest relies on the excludes alone.
const GUARD_MAX: u64 = 64 << 20;

/// The protected paths, relative to the root, `/`-separated, no trailing slash.
pub(crate) fn roots(project: &Project, spec: Option<&Spec>) -> Vec<String> {
    let mut roots = vec![SPECS_DIR.to_string(), EVENTS_DIR.to_string()];
    if let Some(rel) = spec.and_then(|s| s.dir.strip_prefix(&project.root).ok()) {
        let rel = rel.to_string_lossy().replace('\\', "/");
        if !rel.is_empty() && !is_under_any(&rel, &roots) {
            roots.push(rel);
        }
    }
    roots
}

/// `:(top,exclude)` pathspecs for [`roots`], to append after `-- .` on every reset,
/// checkout and clean (`top`: they hold wherever in the tree git runs).
pub(crate) fn excludes(project: &Project, spec: Option<&Spec>) -> Vec<String> {
    roots(project, spec)
        .iter()
        .map(|r| format!(":(top,exclude,literal){r}"))
        .collect()
}

/// Whether the root-relative `path` is bookkeeping (never a task's change).
pub(crate) fn is_bookkeeping(project: &Project, spec: Option<&Spec>, path: &str) -> bool {
    is_under_any(path, &roots(project, spec))
}

fn is_under_any(path: &str, roots: &[String]) -> bool {
    let path = path.trim_end_matches('/');
    roots.iter().any(|r| {
        path == r
            || path
                .strip_prefix(r.as_str())
                .is_some_and(|t| t.starts_with('/'))
    })
}

/// The bookkeeping files as they were before a git step, to put back what the step lost.
/// Member worktrees under `.specrun/worktrees` are not bookkeeping of this checkout.
pub(crate) struct Guard {
    root: PathBuf,
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl Guard {
    pub(crate) fn take(project: &Project, spec: Option<&Spec>) -> Guard {
        let skip = project.root.join(EVENTS_DIR).join(WORKTREES_DIR);
        let mut files = Vec::new();
        let mut budget = GUARD_MAX;
        for r in roots(project, spec) {
            collect(&project.root.join(r), &skip, &mut budget, &mut files);
        }
        Guard {
            root: project.root.clone(),
            files,
        }
    }

    /// Write back each file that is gone, or was rewritten while git does not track it
    /// (git had no business writing it); returns the paths restored. A file that only grew
    /// (the events log a hook appended to meanwhile) was not git's doing and stays.
    pub(crate) fn restore(self) -> Vec<PathBuf> {
        let mut restored = Vec::new();
        for (path, bytes) in &self.files {
            let now = store::read_prefix(path, GUARD_MAX, true).ok().flatten();
            let lost = match now {
                None => true,
                Some(now) => !now.starts_with(bytes) && !self.tracked(path),
            };
            if lost && put_back(path, bytes) {
                restored.push(path.clone());
            }
        }
        if !restored.is_empty() {
            crate::io::output::warn(&format!(
                "git removed or rewrote specrun's bookkeeping; put back: {}",
                restored
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        restored
    }

    fn tracked(&self, path: &Path) -> bool {
        let Some(p) = path.to_str() else { return false };
        crate::io::git::run(&self.root, &["ls-files", "--error-unmatch", "--", p], &[]).is_ok()
    }
}

fn put_back(path: &Path, bytes: &[u8]) -> bool {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).is_ok() && store::write_atomic(path, bytes).is_ok()
}

/// Regular files under `dir` (no link followed), while the budget lasts.
fn collect(dir: &Path, skip: &Path, budget: &mut u64, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() && path != skip {
            collect(&path, skip, budget, out);
        } else if kind.is_file() {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
            if size > *budget {
                continue;
            }
            if let Ok(Some(bytes)) = store::read_prefix(&path, *budget, true) {
                *budget -= bytes.len() as u64;
                out.push((path, bytes));
            }
        }
    }
}

/// Run `step` (git commands only: a write of specrun's own in it would be undone) with
/// the bookkeeping put back afterwards, whether it succeeded or not.
pub(crate) fn guarded<T>(
    project: &Project,
    spec: Option<&Spec>,
    step: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let guard = Guard::take(project, spec);
    let out = step();
    guard.restore();
    out
}

/// Run git in `root` with `args` followed by `-- .` and the bookkeeping excludes.
pub(crate) fn git_outside(project: &Project, spec: Option<&Spec>, args: &[&str]) -> Result<String> {
    let ex = excludes(project, spec);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", "."]);
    all.extend(ex.iter().map(String::as_str));
    crate::io::git::run(&project.root, &all, &[])
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests set up and inspect files directly
mod tests {
    use super::*;

    fn project(root: &str) -> Project {
        Project {
            root: root.into(),
            cwd: root.into(),
            found: true,
            tree: root.into(),
        }
    }

    #[test]
    fn specs_specrun_and_an_outside_spec_dir_are_bookkeeping() {
        let p = project("/r");
        let spec = Spec::at("/r".as_ref(), "x".into(), "/r/docs/x".into());
        assert_eq!(roots(&p, Some(&spec)), ["specs", ".specrun", "docs/x"]);
        let inside = Spec::at("/r".as_ref(), "d".into(), "/r/specs/d".into());
        assert_eq!(roots(&p, Some(&inside)), ["specs", ".specrun"]);
        for path in [
            "specs",
            "specs/.gitignore",
            "specs/d/tasks.md",
            ".specrun/events.jsonl",
            "docs/x/",
        ] {
            assert!(is_bookkeeping(&p, Some(&spec), path), "{path}");
        }
        for path in ["specsx", "src/specs/a", "docs/xy", ".specrunx"] {
            assert!(!is_bookkeeping(&p, Some(&spec), path), "{path}");
        }
        assert_eq!(
            excludes(&p, None),
            [
                ":(top,exclude,literal)specs",
                ":(top,exclude,literal).specrun"
            ]
        );
    }

    /// What git could do to bookkeeping it should not touch (delete it, write a committed
    /// version over an ignored file) is undone; a file that only grew meanwhile is kept,
    /// and a tracked file git rewrote is git's to keep.
    #[test]
    fn the_guard_puts_back_what_git_removed_or_overwrote() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let git = |args: &[&str]| crate::io::git::run(&root, args, &[]).unwrap();
        git(&["init", "-q"]);
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("specs/d/tasks.md", "plan\n");
        write("specs/d/.specrun-state.json", "{}\n");
        write("specs/d/tracked.md", "one\n");
        write(".specrun/events.jsonl", "a\n");
        git(&["add", "specs/d/tracked.md"]);
        let p = project(root.to_str().unwrap());
        let guard = Guard::take(&p, None);
        std::fs::remove_dir_all(root.join("specs/d")).unwrap();
        write("specs/d/.specrun-state.json", "{\"x\":1}\n");
        write("specs/d/tracked.md", "two\n");
        write(".specrun/events.jsonl", "a\nb\n");
        let mut restored = guard.restore();
        restored.sort();
        let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap();
        assert_eq!(read("specs/d/tasks.md"), "plan\n");
        assert_eq!(read("specs/d/.specrun-state.json"), "{}\n");
        assert_eq!(read("specs/d/tracked.md"), "two\n");
        assert_eq!(read(".specrun/events.jsonl"), "a\nb\n");
        assert_eq!(
            restored,
            [
                root.join("specs/d/.specrun-state.json"),
                root.join("specs/d/tasks.md")
            ]
        );
    }
}
