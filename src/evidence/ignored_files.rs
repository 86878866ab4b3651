//! The snapshot of ignored runner files (`integrity::ignored`): the files every exclude
//! source hides (`.gitignore`, `.git/info/exclude`, the user's excludes file) that can
//! change how tests run, each with the SHA-256 of its contents, and the exclude file
//! itself. `state init` keeps it as `ignoredFiles`; the integrity findings compare the
//! tree against it.
//!
//! Inside an ignored directory (an in-tree virtualenv, a build folder) only what acts from
//! there is looked for (`walk`), in at most `WALK_LIMIT` entries; `node_modules/` and
//! `target/` are not walked (pytest does not collect there, Python does not start there).

use std::path::Path;

use indexmap::IndexMap;

use crate::error::Result;
use crate::evidence::integrity::ignored::{self, INFO_EXCLUDE};
use crate::io::{git, output};

/// Entries of ignored directories looked at, at most.
const WALK_LIMIT: usize = 100_000;
/// Directories never walked.
const NOT_WALKED: &[&str] = &["node_modules", "target", ".git", "__pycache__"];

/// The ignored runner files of the tree at `root` now, by path.
pub(crate) fn snapshot(root: &Path) -> Result<IndexMap<String, String>> {
    let out = git::scan_run(
        root,
        &[
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ],
        None,
    )?;
    let mut found = IndexMap::new();
    let mut budget = WALK_LIMIT;
    for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let path = String::from_utf8_lossy(entry);
        match path.strip_suffix('/') {
            Some(dir) => walk(root, dir, &mut budget, &mut found),
            None if ignored::shapes_runs(&path) => {
                found.insert(path.to_string(), digest(&root.join(&*path)));
            }
            None => {}
        }
    }
    if budget == 0 {
        output::warn(&format!(
            "ignored directories hold more than {WALK_LIMIT} entries: the rest were not looked at for files that change how tests run"
        ));
    }
    if let Some(exclude) = info_exclude(root)? {
        found.insert(INFO_EXCLUDE.to_string(), digest(&exclude));
    }
    Ok(found)
}

/// The runner files below the ignored directory `dir`, depth first, in name order. Walked
/// as the runners read a tree: a virtualenv (it holds `pyvenv.cfg`; pytest does not collect
/// in one) only for its packages directories, and a packages directory only at its top
/// (Python reads start-up files there, not inside the packages).
fn walk(root: &Path, dir: &str, budget: &mut usize, found: &mut IndexMap<String, String>) {
    let entries = listing(root, dir);
    if entries
        .iter()
        .any(|(name, is_dir)| name == "pyvenv.cfg" && !is_dir)
    {
        return virtualenv(root, dir, budget, found);
    }
    let top_only = ignored::is_packages_dir(dir);
    for (name, is_dir) in entries {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let rel = format!("{dir}/{name}");
        if is_dir && !top_only && !NOT_WALKED.contains(&name.as_str()) {
            walk(root, &rel, budget, found);
        } else if !is_dir && ignored::shapes_runs_nested(&rel) {
            found.insert(rel.clone(), digest(&root.join(&rel)));
        }
    }
}

/// A virtualenv's packages directories: `lib*/<python>/site-packages` and, as Windows
/// lays one out, `Lib/site-packages`.
fn virtualenv(root: &Path, venv: &str, budget: &mut usize, found: &mut IndexMap<String, String>) {
    for (lib, is_dir) in listing(root, venv) {
        if !is_dir || !lib.to_ascii_lowercase().starts_with("lib") {
            continue;
        }
        let lib = format!("{venv}/{lib}");
        for (sub, is_dir) in listing(root, &lib) {
            let packages = match sub.as_str() {
                "site-packages" => format!("{lib}/{sub}"),
                _ => format!("{lib}/{sub}/site-packages"),
            };
            if is_dir && root.join(&packages).is_dir() {
                walk(root, &packages, budget, found);
            }
        }
    }
}

/// The entries of `dir` (relative to `root`) by name, each with whether it is a directory
/// (a link is not: it is never followed).
fn listing(root: &Path, dir: &str) -> Vec<(String, bool)> {
    let Ok(read) = std::fs::read_dir(root.join(dir)) else {
        return Vec::new();
    };
    let mut entries: Vec<(String, bool)> = read
        .flatten()
        .map(|e| {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            (e.file_name().to_string_lossy().into_owned(), is_dir)
        })
        .collect();
    entries.sort();
    entries
}

/// The repository's `info/exclude` (the main repository's, from a linked worktree).
fn info_exclude(root: &Path) -> Result<Option<std::path::PathBuf>> {
    let out = git::scan_run(root, &["rev-parse", "--git-path", "info/exclude"], None)?;
    let rel = String::from_utf8_lossy(&out).trim().to_string();
    let path = root.join(rel);
    Ok(path.is_file().then_some(path))
}

/// The SHA-256 of a regular file's contents; a symlink is its target and anything else
/// (a FIFO, a device, unreadable) its kind, so nothing here blocks or reads without end.
fn digest(path: &Path) -> String {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return "unreadable".into();
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        return format!("symlink:{}", target.display());
    }
    if !meta.file_type().is_file() {
        return "not-a-file".into();
    }
    crate::evidence::verify::hash_file(path).unwrap_or_else(|_| "unreadable".into())
}
