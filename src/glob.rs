//! Path patterns, one matcher for every consumer: a task's **Files** entries (scope checks
//! of last-mile and rollback) and `.gitignore` rules (the fingerprint outside git). Pure.

/// Glob match: `**/` zero or more directories, `**` anything, `*` anything but `/`,
/// `?` one character but `/`, `\x` a literal x.
pub fn glob(p: &[u8], s: &[u8]) -> bool {
    match p {
        [] => s.is_empty(),
        [b'*', b'*', b'/', rest @ ..] => {
            glob(rest, s)
                || s.iter()
                    .enumerate()
                    .any(|(i, &c)| c == b'/' && glob(rest, &s[i + 1..]))
        }
        [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        [b'*', rest @ ..] => {
            for i in 0..=s.len() {
                if glob(rest, &s[i..]) {
                    return true;
                }
                if s.get(i) == Some(&b'/') {
                    return false;
                }
            }
            false
        }
        [b'?', rest @ ..] => matches!(s.first(), Some(&c) if c != b'/') && glob(rest, &s[1..]),
        [b'\\', c, rest @ ..] => s.first() == Some(c) && glob(rest, &s[1..]),
        [c, rest @ ..] => s.first() == Some(c) && glob(rest, &s[1..]),
    }
}

/// Whether `path` is covered by one entry of a task's Files: the same path, a directory
/// holding it, or a glob (`*`, `?` within a segment, `**` across segments).
pub fn file_entry_covers(entry: &str, path: &str) -> bool {
    let entry = entry.trim().trim_matches('`').trim_start_matches("./");
    if entry.is_empty() {
        return false;
    }
    if entry.contains(['*', '?']) {
        return glob(entry.as_bytes(), path.as_bytes());
    }
    let dir = entry.trim_end_matches('/');
    path == dir || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_subset() {
        assert!(glob(b"*.log", b"a.log"));
        assert!(!glob(b"*.log", b"dir/a.log"));
        assert!(glob(b"**/x", b"x"));
        assert!(glob(b"**/x", b"a/b/x"));
        assert!(glob(b"a/**", b"a/b/c"));
        assert!(glob(b"a/**/z", b"a/z"));
        assert!(glob(b"a/**/z", b"a/b/c/z"));
        assert!(glob(b"?.rs", b"a.rs"));
        assert!(!glob(b"?.rs", b"ab.rs"));
        assert!(glob(b"\\*", b"*"));
        assert!(!glob(b"\\*", b"a"));
    }

    /// Regression: `**` could swallow part of a file name, so `src/**/x.rs` matched `src/ax.rs`.
    #[test]
    fn double_star_spans_whole_directories_only() {
        assert!(file_entry_covers("src/**/x.rs", "src/a/x.rs"));
        assert!(file_entry_covers("src/**/x.rs", "src/x.rs"));
        assert!(!file_entry_covers("src/**/x.rs", "src/ax.rs"));
    }

    #[test]
    fn files_entries_match_paths_dirs_and_globs() {
        assert!(file_entry_covers("src/a.rs", "src/a.rs"));
        assert!(file_entry_covers("`./src/a.rs`", "src/a.rs"));
        assert!(file_entry_covers("src/", "src/x/y.rs"));
        assert!(file_entry_covers("src", "src/x.rs"));
        assert!(!file_entry_covers("src", "srcx/a.rs"));
        assert!(file_entry_covers("src/*.rs", "src/a.rs"));
        assert!(!file_entry_covers("src/*.rs", "src/x/a.rs"));
        assert!(file_entry_covers("src/**/*.rs", "src/x/y/a.rs"));
        assert!(file_entry_covers("src/**/*.rs", "src/a.rs"));
        assert!(file_entry_covers("tests/t?.rs", "tests/t1.rs"));
    }
}
