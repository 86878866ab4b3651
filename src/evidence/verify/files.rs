//! The fingerprint outside git: a SHA-256 over every file's path, kind and content under
//! the project root, in a fixed order, skipping `.git`, the spec's bookkeeping and what
//! the `.gitignore` files exclude. The `.gitignore` support is a documented subset
//! (DESIGN-NOTES "Evidence"): per-directory files; `#` comments; `!` negation; `\`
//! escapes; a leading or inner `/` anchors to the file's directory; a trailing `/`
//! matches directories only; `*`, `?`, `[...]` and `**` (matched by `glob::Pattern`).
//! Not supported: `.git/info/exclude`, `core.excludesFile`.

use std::fs::Metadata;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::support::glob::Pattern;
use crate::support::sha256::Sha256;

#[derive(Debug, Clone)]
pub(super) struct Rule {
    /// Directory of the `.gitignore` this rule came from, relative to the root ("" = root).
    base: String,
    pattern: Pattern,
    negate: bool,
    dir_only: bool,
    anchored: bool,
}

/// Parse one `.gitignore` file found in `base` (relative to the root).
pub(super) fn parse_rules(text: &str, base: &str) -> Vec<Rule> {
    let mut rules = Vec::new();
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        // Trailing spaces are dropped unless escaped (`\ `).
        let trimmed = line.trim_end_matches(' ');
        let line = match trimmed.strip_suffix('\\') {
            Some(kept) if trimmed.len() < line.len() => format!("{kept} "),
            _ => trimmed.to_string(),
        };
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (negate, rest) = match line.strip_prefix('!') {
            Some(rest) => (true, rest.to_string()),
            None => (false, line.clone()),
        };
        let mut pattern = match rest.strip_prefix('\\') {
            Some(r) if r.starts_with('#') || r.starts_with('!') => r.to_string(),
            _ => rest,
        };
        let dir_only = pattern.ends_with('/') && pattern.len() > 1;
        if dir_only {
            pattern.pop();
        }
        // A separator at the start or in the middle anchors the pattern to `base`.
        let anchored = pattern.contains('/');
        let pattern = pattern.trim_start_matches('/').to_string();
        // A pattern that does not compile (an unclosed `[`) matches nothing, as in git.
        let Some(pattern) = Pattern::new(&pattern).filter(|_| !pattern.is_empty()) else {
            continue;
        };
        rules.push(Rule {
            base: base.to_string(),
            pattern,
            negate,
            dir_only,
            anchored,
        });
    }
    rules
}

/// Whether `rel` (relative to the root) is ignored: the last matching rule decides, and
/// rules of deeper `.gitignore` files come later, so they win as in git.
pub(super) fn is_ignored(rules: &[Rule], rel: &str, is_dir: bool) -> bool {
    let mut ignored = false;
    for rule in rules {
        if rule.dir_only && !is_dir {
            continue;
        }
        let inside = if rule.base.is_empty() {
            Some(rel)
        } else {
            rel.strip_prefix(rule.base.as_str())
                .and_then(|r| r.strip_prefix('/'))
        };
        let Some(inside) = inside else { continue };
        let subject = if rule.anchored {
            inside
        } else {
            inside.rsplit('/').next().unwrap_or(inside)
        };
        if rule.pattern.is_match(subject) {
            ignored = !rule.negate;
        }
    }
    ignored
}

/// The fingerprint of the files under `root`, leaving out `excluded` (root-relative paths
/// of files or directories).
pub(super) fn tree(root: &Path, excluded: &[String]) -> Result<String> {
    let mut overall = Sha256::default();
    overall.update(b"specrun-files-v1\0");
    walk(
        root,
        "",
        excluded,
        &mut Vec::new(),
        &mut |rel, path, meta| add_entry(&mut overall, rel, path, meta),
    )?;
    Ok(overall.finish_hex())
}

/// One entry's line of the fingerprint: its path, kind (file, exec, link) and the digest of
/// its content or link target. Sockets, FIFOs and devices have no content to verify.
fn add_entry(overall: &mut Sha256, rel: &str, path: &Path, meta: &Metadata) -> Result<()> {
    let (kind, digest) = if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).map_err(|e| Error::io(path, "read", e))?;
        (
            "link",
            crate::support::sha256::hex(target.as_os_str().as_bytes()),
        )
    } else if meta.is_file() {
        let exec = meta.permissions().mode() & 0o111 != 0;
        (if exec { "exec" } else { "file" }, hash_file(path)?)
    } else {
        return Ok(());
    };
    overall.update(rel.len().to_string().as_bytes());
    overall.update(b":");
    overall.update(rel.as_bytes());
    overall.update(b"\0");
    overall.update(kind.as_bytes());
    overall.update(b"\0");
    overall.update(digest.as_bytes());
    overall.update(b"\n");
    Ok(())
}

/// Call `visit` with the root-relative path, path and metadata of every entry under `dir`
/// that is not a directory, not ignored and not excluded, in sorted order (depth first).
fn walk(
    dir: &Path,
    rel: &str,
    excluded: &[String],
    rules: &mut Vec<Rule>,
    visit: &mut dyn FnMut(&str, &Path, &Metadata) -> Result<()>,
) -> Result<()> {
    let rules_before = rules.len();
    if let Ok(text) = crate::io::store::read_user_text(&dir.join(".gitignore"), ".gitignore") {
        rules.extend(parse_rules(&text, rel));
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, "list", e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(dir, "list", e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let name_str = String::from_utf8_lossy(name.as_bytes());
        let child_rel = if rel.is_empty() {
            name_str.into_owned()
        } else {
            format!("{rel}/{name_str}")
        };
        if excluded
            .iter()
            .any(|x| child_rel == *x || child_rel.starts_with(&format!("{x}/")))
            || crate::io::project::is_bookkeeping_temp(&child_rel, excluded)
        {
            continue;
        }
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).map_err(|e| Error::io(&path, "stat", e))?;
        let is_dir = meta.is_dir();
        if is_ignored(rules, &child_rel, is_dir) {
            continue;
        }
        if is_dir {
            walk(&path, &child_rel, excluded, rules, visit)?;
        } else {
            visit(&child_rel, &path, &meta)?;
        }
    }
    rules.truncate(rules_before);
    Ok(())
}

/// The SHA-256 of a regular file's contents, read through the store's walked open.
pub(crate) fn hash_file(path: &Path) -> Result<String> {
    // The store's open: a file swapped for a FIFO, a device or a link after the walk's
    // stat can neither hang the open nor feed the hash without end.
    let mut file = crate::io::store::open_walked(path)?;
    let mut hasher = Sha256::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| Error::io(path, "read", e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finish_hex())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests set up and inspect files directly
mod tests {
    use super::*;

    #[test]
    fn gitignore_rules() {
        let rules = parse_rules(
            "# comment\n\n/target\nbuild/\n*.log\n!keep.log\ndocs/*.tmp\n",
            "",
        );
        assert!(is_ignored(&rules, "target", true));
        assert!(!is_ignored(&rules, "sub/target", true), "leading / anchors");
        assert!(is_ignored(&rules, "sub/build", true));
        assert!(
            !is_ignored(&rules, "build", false),
            "trailing / is dirs only"
        );
        assert!(is_ignored(&rules, "x/y.log", false));
        assert!(!is_ignored(&rules, "keep.log", false), "negation");
        assert!(is_ignored(&rules, "docs/a.tmp", false));
        assert!(
            !is_ignored(&rules, "other/docs/a.tmp", false),
            "inner / anchors"
        );
        let nested = parse_rules("*.gen\n", "sub");
        assert!(is_ignored(&nested, "sub/a.gen", false));
        assert!(is_ignored(&nested, "sub/deep/a.gen", false));
        assert!(
            !is_ignored(&nested, "a.gen", false),
            "a nested file only covers its dir"
        );
    }

    #[test]
    fn tree_follows_content_and_ignores_what_it_should() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "*.log\nout/\n").unwrap();
        std::fs::write(root.join("a.rs"), "one").unwrap();
        std::fs::create_dir_all(root.join("specs/demo")).unwrap();
        let excluded = vec!["specs/demo/tasks.md".to_string()];
        let t1 = tree(root, &excluded).unwrap();
        assert_eq!(t1, tree(root, &excluded).unwrap(), "not stable");
        std::fs::write(root.join("x.log"), "noise").unwrap();
        std::fs::create_dir_all(root.join("out")).unwrap();
        std::fs::write(root.join("out/bin"), "noise").unwrap();
        std::fs::write(root.join("specs/demo/tasks.md"), "- [x] 1 a").unwrap();
        std::fs::write(
            root.join("specs/demo/.tasks.md.specrun-tmp-x1"),
            "in flight",
        )
        .unwrap();
        assert_eq!(
            tree(root, &excluded).unwrap(),
            t1,
            "ignored or excluded file counted"
        );
        std::fs::write(root.join("a.rs"), "two").unwrap();
        let t2 = tree(root, &excluded).unwrap();
        assert_ne!(t2, t1);
        std::fs::write(root.join("a.rs"), "one").unwrap();
        assert_eq!(tree(root, &excluded).unwrap(), t1, "revert not restored");
        std::fs::rename(root.join("a.rs"), root.join("b.rs")).unwrap();
        assert_ne!(tree(root, &excluded).unwrap(), t1, "a rename went unseen");
    }

    /// Every path the walk keeps (files and links), sorted.
    fn kept(root: &Path) -> Vec<String> {
        let mut out = Vec::new();
        walk(root, "", &[], &mut Vec::new(), &mut |rel, _, meta| {
            if meta.is_file() || meta.file_type().is_symlink() {
                out.push(rel.to_string());
            }
            Ok(())
        })
        .unwrap();
        out.sort();
        out
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const ROOT_RULES: &str = "# comment\n*.[oa]\n[Bb]in/\na/**/b\n/build\n*.log\n!keep.log\n\
        docs/*.tmp\nfoo[\n*.{x,y}\n\\#hash\n\\!bang\ntrail\\ \n";

    /// Nested .gitignore files, negation (also re-including in a deeper file), classes
    /// (`*.[oa]`, `[Bb]in/`), `a/**/b`, anchoring, directories only, escapes, literal braces
    /// and an unclosed `[` (which matches nothing): what git keeps, we keep.
    #[test]
    fn gitignore_patterns_keep_what_git_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", ROOT_RULES);
        write(
            root,
            "sub/.gitignore",
            "!important.o\n*.gen\n/anchored.txt\ndeep/\n",
        );
        write(root, "sub/deeper/.gitignore", "!*.gen\n");
        for rel in [
            "main.c",
            "main.o",
            "lib.a",
            "lib.b",
            "bin/x",
            "Bin/y",
            "binx/z",
            "src/bin/w",
            "e/bin/z",
            "f/bin",
            "bin2",
            "a/b",
            "a/x/y/b",
            "a/x/b/c",
            "xa/b",
            "build/out",
            "sub/build/out",
            "x.log",
            "keep.log",
            "d/keep.log",
            "docs/a.tmp",
            "other/docs/a.tmp",
            "sub/important.o",
            "sub/x.gen",
            "sub/anchored.txt",
            "sub/q/anchored.txt",
            "sub/deep/f",
            "sub/x/deep/f",
            "sub/deeper/y.gen",
            "foo[",
            "t.x",
            "t.y",
            "t.{x,y}",
            "#hash",
            "!bang",
            "trail ",
            "trail",
        ] {
            write(root, rel, "x");
        }
        let git_keeps = [
            ".gitignore",
            "bin2",
            "binx/z",
            "d/keep.log",
            "f/bin",
            "foo[",
            "keep.log",
            "lib.b",
            "main.c",
            "other/docs/a.tmp",
            "sub/.gitignore",
            "sub/build/out",
            "sub/deeper/.gitignore",
            "sub/deeper/y.gen",
            "sub/important.o",
            "sub/q/anchored.txt",
            "t.x",
            "t.y",
            "trail",
            "xa/b",
        ];
        assert_eq!(kept(root), git_keeps);
        // And git itself says so (`git_keeps` is its answer, written out).
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(root)
                .output()
                .unwrap()
        };
        assert!(git(&["init", "-q"]).status.success());
        let out = git(&[
            "-c",
            "core.excludesFile=/dev/null",
            "ls-files",
            "-z",
            "--others",
            "--exclude-standard",
        ]);
        let mut listed: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_string)
            .collect();
        listed.sort();
        assert_eq!(listed, git_keeps);
    }

    /// A `.gitignore` that is a FIFO, or a link to a device, is not read (an open of a
    /// FIFO would wait for a writer forever): the fingerprint is taken without it.
    #[test]
    fn a_gitignore_that_is_a_fifo_or_a_device_does_not_hang_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        write(&root, "a.rs", "one");
        write(&root, "sub/b.rs", "two");
        let fifo = std::ffi::CString::new(root.join(".gitignore").as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo(3) on a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        std::os::unix::fs::symlink("/dev/zero", root.join("sub/.gitignore")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(kept(&root));
        });
        let kept = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the walk hung on a FIFO .gitignore");
        assert_eq!(kept, ["a.rs", "sub/.gitignore", "sub/b.rs"]);
    }

    /// The fingerprint's format, computed independently (Python's hashlib over
    /// `specrun-files-v1\0` then `len:path\0kind\0sha256(content)\n` per file): evidence
    /// recorded by an earlier build stays fresh.
    #[test]
    fn the_fingerprint_format_is_stable() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "a.txt", "one\n");
        write(root, "d/b.txt", "two\n");
        // A directory's files come before a sibling whose name extends the directory's.
        write(root, "d.txt", "three\n");
        assert_eq!(
            tree(root, &[]).unwrap(),
            "7c4a78b2f1b69f3238931950c78e43b73a9b8ff59f2ea269b5552741d23be7d4"
        );
    }
}
