//! Work saved before a verb discards it (`task rollback`, `cancel`): one commit holding
//! the whole working tree (and the index as a second parent), pointed at by a fresh ref
//! that never overwrites an earlier one. Nothing here touches the user's index.

use std::path::Path;

use crate::error::{Error, Result};
use crate::io::git;

/// Commit the whole working tree (and, as a second parent, the index) on top of HEAD
/// without touching the user's index: the discarded work, reachable from one commit.
pub(crate) fn save_work(root: &Path, head: &str, message: &str) -> Result<String> {
    let ident = crate::isolation::worktree::identity_env(root);
    let env: Vec<(&str, &std::ffi::OsStr)> =
        ident.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let mut parents = vec![head.to_string()];
    // The staged state as its own commit, so staged-but-since-edited content survives too.
    // An index with conflicts cannot be written as a tree; the working tree still is.
    if let Ok(index_tree) = git::run(root, &["write-tree"], &[]) {
        let index_commit = git::run(
            root,
            &[
                "commit-tree",
                index_tree.trim(),
                "-p",
                head,
                "-m",
                &format!("{message} (index)"),
            ],
            &env,
        )?;
        parents.push(index_commit.trim().to_string());
    }
    let git_dir = git::git_dir(root).ok_or_else(|| Error::Git {
        args: "rev-parse".into(),
        message: format!("{} is not inside a git repository", root.display()),
    })?;
    let temp_index = tempfile::Builder::new()
        .prefix("specrun-rollback-index-")
        .tempfile_in(&git_dir)
        .map_err(|e| Error::io(&git_dir, "create a temporary index in", e))?;
    if !crate::io::store::copy_into(&git_dir.join("index"), temp_index.as_file())? {
        let _ = std::fs::remove_file(temp_index.path());
    }
    let mut index_env = env.clone();
    index_env.push(("GIT_INDEX_FILE", temp_index.path().as_os_str()));
    git::run(root, &["add", "-A", "--", "."], &index_env)?;
    let tree = git::run(root, &["write-tree"], &index_env)?;
    let mut args = vec!["commit-tree", tree.trim()];
    for p in &parents {
        args.push("-p");
        args.push(p);
    }
    args.push("-m");
    args.push(message);
    Ok(git::run(root, &args, &env)?.trim().to_string())
}

/// The newest of `base`, `base.2`, `base.3`… that exists, with its commit.
pub(crate) fn latest_ref(root: &Path, base: &str) -> Option<(String, String)> {
    let listed = git::run(
        root,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            base,
            &format!("{base}.*"),
        ],
        &[],
    )
    .ok()?;
    listed
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(name, commit)| {
            let k = match name.strip_prefix(base)? {
                "" => 1,
                rest => rest.strip_prefix('.')?.parse::<u32>().ok()?,
            };
            Some((k, name.to_string(), commit.to_string()))
        })
        .max_by_key(|(k, _, _)| *k)
        .map(|(_, name, commit)| (name, commit))
}

/// Point a new ref (never an existing one) at `commit`; returns its full name.
pub(crate) fn create_ref(root: &Path, base: &str, commit: &str) -> Result<String> {
    for k in 1..1000 {
        let name = if k == 1 {
            base.to_string()
        } else {
            format!("{base}.{k}")
        };
        // An empty old value makes update-ref refuse to overwrite an existing ref.
        match git::run(root, &["update-ref", &name, commit, ""], &[]) {
            Ok(_) => return Ok(name),
            // Only a taken name is worth another try; anything else fails the same way.
            Err(e) if git::run(root, &["rev-parse", "--verify", "-q", &name], &[]).is_err() => {
                return Err(e)
            }
            Err(_) => {}
        }
    }
    Err(Error::Git {
        args: format!("update-ref {base}"),
        message: "no free ref name".into(),
    })
}
