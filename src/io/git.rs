//! git, at the edge: repository facts for snapshot/status, a fast HEAD read for the guard,
//! and the working-tree fingerprint that binds evidence to the code it verified.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

use crate::error::{Error, Result};

/// Run git in `dir`, returning stdout. `env` adds variables (e.g. GIT_INDEX_FILE).
pub(crate) fn run(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Result<String> {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().map_err(|e| Error::Git {
        args: args.join(" "),
        message: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(Error::Git {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    String::from_utf8(out.stdout).map_err(|_| Error::Git {
        args: args.join(" "),
        message: "output is not UTF-8".into(),
    })
}

/// The bytes of `path` (relative to the repository root) as committed in `commit`, read
/// with one `git cat-file blob` through `scan_run`, so that replace refs and the caller's
/// `GIT_*` variables cannot make another blob answer for it; `None` when the commit or the
/// file is not there.
pub(crate) fn blob_at(root: &Path, commit: &str, path: &str) -> Option<Vec<u8>> {
    let object = format!("{commit}:{path}");
    scan_run(root, &["cat-file", "blob", &object], None).ok()
}

/// `-c` overrides for the integrity scan: settings that would run a program of the
/// repository's choosing or let a cache answer for the work tree.
const SCAN_CONFIG: &[&str] = &[
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "core.quotePath=false",
];

/// Run a plumbing command for the integrity scan, `input` on stdin, and return stdout's
/// bytes. What the model can set is neutralised: every `GIT_*` variable of the caller
/// (`GIT_DIR`, `GIT_INDEX_FILE`, `GIT_CONFIG_PARAMETERS`, …) is dropped, the system config
/// is not read, replace refs are not followed (a `git replace` would otherwise make the old
/// blob read as the new one), and `SCAN_CONFIG` overrides the repository's config.
pub(crate) fn scan_run(dir: &Path, args: &[&str], input: Option<Vec<u8>>) -> Result<Vec<u8>> {
    let mut cmd = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(k);
        }
    }
    cmd.current_dir(dir)
        .args(SCAN_CONFIG)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("LC_ALL", "C")
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let fail = |message: String| Error::Git {
        args: args.join(" "),
        message,
    };
    let mut child = cmd.spawn().map_err(|e| fail(e.to_string()))?;
    // Written from a thread: git answers while it reads, and both pipes would fill.
    let writer = input.map(|bytes| {
        let mut stdin = child.stdin.take().expect("piped stdin");
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&bytes);
        })
    });
    let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
    if let Some(w) = writer {
        let _ = w.join();
    }
    if !out.status.success() {
        return Err(fail(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(out.stdout)
}

/// Which of `paths` (relative to `dir`) git ignores (`git check-ignore`; a tracked file is
/// never ignored). Exit 1 is git's "none of them".
pub(crate) fn ignored(dir: &Path, paths: &[String]) -> Result<std::collections::BTreeSet<String>> {
    let mut input = Vec::new();
    for p in paths {
        input.extend_from_slice(p.as_bytes());
        input.push(0);
    }
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(["check-ignore", "--stdin", "-z"])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let fail = |message: String| Error::Git {
        args: "check-ignore --stdin -z".into(),
        message,
    };
    let mut child = cmd.spawn().map_err(|e| fail(e.to_string()))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
    let _ = writer.join();
    match out.status.code() {
        Some(0) | Some(1) => Ok(out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()),
        _ => Err(fail(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        )),
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GitInfo {
    pub available: bool,
    pub branch: Option<String>,
    pub head: Option<String>,
    pub dirty: bool,
    pub changed_files: Vec<String>,
}

/// Branch, HEAD, dirtiness and changed paths in one `git status` call.
pub(crate) fn info(root: &Path) -> GitInfo {
    let Ok(out) = run(
        root,
        &[
            "status",
            "--porcelain=v2",
            "--branch",
            "-z",
            "--untracked-files=normal",
        ],
        &[],
    ) else {
        return GitInfo::default();
    };
    parse_status_v2(&out)
}

/// Parse `git status --porcelain=v2 --branch -z`.
pub(crate) fn parse_status_v2(out: &str) -> GitInfo {
    let mut info = GitInfo {
        available: true,
        ..Default::default()
    };
    let mut records = out.split('\0');
    while let Some(rec) = records.next() {
        if let Some(oid) = rec.strip_prefix("# branch.oid ") {
            info.head = (oid != "(initial)").then(|| oid.to_string());
        } else if let Some(head) = rec.strip_prefix("# branch.head ") {
            info.branch = (head != "(detached)").then(|| head.to_string());
        } else if let Some(rest) = rec.strip_prefix("1 ") {
            // 1 XY sub mH mI mW hH hI path
            if let Some(path) = rest.splitn(8, ' ').nth(7) {
                info.changed_files.push(path.to_string());
            }
        } else if let Some(rest) = rec.strip_prefix("2 ") {
            // 2 XY sub mH mI mW hH hI Xscore path \0 origPath
            if let Some(path) = rest.splitn(9, ' ').nth(8) {
                info.changed_files.push(path.to_string());
            }
            records.next();
        } else if let Some(rest) = rec.strip_prefix("u ") {
            if let Some(path) = rest.splitn(10, ' ').nth(9) {
                info.changed_files.push(path.to_string());
            }
        } else if let Some(path) = rec.strip_prefix("? ") {
            info.changed_files.push(path.to_string());
        }
    }
    info.dirty = !info.changed_files.is_empty();
    info
}

/// The git directory of `root` (follows a `.git` file of a worktree or submodule).
pub(crate) fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    let text = crate::io::store::read_user_text(&dot_git, "git file").ok()?;
    let target = text.strip_prefix("gitdir:")?.trim();
    let path = Path::new(target);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    })
}

/// HEAD's commit id read straight from the files (no process start), for the guard's
/// progress fingerprint. `None` outside git or before the first commit; falls back to
/// `git rev-parse` for layouts it does not read itself.
pub(crate) fn head_fast(root: &Path) -> Option<String> {
    let dir = git_dir(root)?;
    let head = crate::io::store::read_user_text(&dir.join("HEAD"), "HEAD").ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else {
        return Some(head.to_string());
    };
    // A worktree keeps its refs in the common dir.
    let common = crate::io::store::read_user_text(&dir.join("commondir"), "commondir")
        .ok()
        .map(|c| dir.join(c.trim()))
        .unwrap_or_else(|| dir.clone());
    for base in [&dir, &common] {
        if let Ok(id) = crate::io::store::read_user_text(&base.join(reference), "ref") {
            return Some(id.trim().to_string());
        }
    }
    if let Ok(packed) = crate::io::store::read_user_text(&common.join("packed-refs"), "packed-refs")
    {
        for line in packed.lines() {
            if let Some((id, name)) = line.split_once(' ') {
                if name == reference {
                    return Some(id.to_string());
                }
            }
        }
        return None;
    }
    // No loose ref and no packed-refs: an unborn branch, or a ref backend we do not read.
    self::head(root)
}

/// HEAD's commit as git resolves it (also from a directory below the top of the work
/// tree), `None` before the first commit or outside git.
pub(crate) fn head(root: &Path) -> Option<String> {
    run(root, &["rev-parse", "--verify", "-q", "HEAD"], &[])
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

pub(crate) fn is_repo(root: &Path) -> bool {
    git_dir(root).is_some()
}

/// A commit id cut to the ten characters messages show.
pub(crate) fn short_commit(c: &str) -> &str {
    crate::support::chars::prefix(c, 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 21): a commit id from the state holding a multi-byte character
    /// (`attempts.<id>[].endCommit`, `isolation.group.base`) was cut inside it and panicked.
    #[test]
    fn a_short_commit_never_cuts_a_character() {
        assert_eq!(short_commit("aaaaaaaaaé"), "aaaaaaaaaé");
        assert_eq!(short_commit("aaaaaaaaaéééé"), "aaaaaaaaaé");
        assert_eq!(short_commit("0123456789abcdef"), "0123456789");
        assert_eq!(short_commit("😀😀"), "😀😀");
    }

    #[test]
    fn parses_porcelain_v2() {
        let out = "# branch.oid abc\0# branch.head main\x001 .M N... 100644 100644 100644 aa bb src/a.rs\0\
2 R. N... 100644 100644 100644 aa bb R100 new name.rs\0old.rs\0? untracked.txt\0";
        let info = parse_status_v2(out);
        assert_eq!(info.head.as_deref(), Some("abc"));
        assert_eq!(info.branch.as_deref(), Some("main"));
        assert_eq!(
            info.changed_files,
            ["src/a.rs", "new name.rs", "untracked.txt"]
        );
        assert!(info.dirty);
        let info = parse_status_v2("# branch.oid (initial)\0# branch.head (detached)\0");
        assert_eq!((info.head, info.branch, info.dirty), (None, None, false));
    }
}
