//! Path patterns, one matcher for every consumer: a task's **Files** entries (scope checks
//! of last-mile and rollback) and `.gitignore` rules (the fingerprint outside git). Pure.
//!
//! Matching is `globset`'s (a regex automaton: linear in the path, whatever the pattern),
//! after one rewrite that keeps the syntax specrun documents: `**` is special only as a
//! whole path segment (`**/x`, `a/**`, `a/**/z`); elsewhere it is a plain `*`, as in git.

use globset::{GlobBuilder, GlobMatcher};

/// A compiled pattern: `**/` zero or more directories, `*` anything but `/`, `?` one
/// character but `/`, `[...]` a class, `\x` a literal x.
#[derive(Debug, Clone)]
pub(crate) struct Pattern(GlobMatcher);

impl Pattern {
    /// `None` for a pattern globset cannot compile (an unclosed `[`): it matches nothing.
    pub(crate) fn new(pattern: &str) -> Option<Pattern> {
        GlobBuilder::new(&normalize(pattern))
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .ok()
            .map(|g| Pattern(g.compile_matcher()))
    }

    pub(crate) fn is_match(&self, path: &str) -> bool {
        self.0.is_match(path)
    }
}

/// `**` that is not a whole segment becomes `*`; `{` and `}` are literal (no alternation
/// in Files entries or .gitignore).
fn normalize(pattern: &str) -> String {
    let bytes = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if i + 1 < bytes.len() => {
                out.push_str(&pattern[i..i + 2 + utf8_extra(bytes[i + 1])]);
                i += 2 + utf8_extra(bytes[i + 1]);
                continue;
            }
            b'*' => {
                let run = bytes[i..].iter().take_while(|&&b| b == b'*').count();
                let starts_segment = i == 0 || bytes[i - 1] == b'/';
                let ends_segment = i + run == bytes.len() || bytes[i + run] == b'/';
                out.push_str(if run >= 2 && starts_segment && ends_segment {
                    "**"
                } else {
                    "*"
                });
                i += run;
                continue;
            }
            b'{' | b'}' => {
                out.push('\\');
                out.push(bytes[i] as char);
            }
            _ => {
                let len = 1 + utf8_extra(bytes[i]);
                out.push_str(&pattern[i..i + len]);
                i += len;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Continuation bytes of the UTF-8 character that starts with `lead`.
fn utf8_extra(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 3,
        0xE0..=0xEF => 2,
        0xC0..=0xDF => 1,
        _ => 0,
    }
}

/// A task's **Files** entries, compiled once: each covers the same path, a directory
/// holding it, or (with `*`, `?`) the paths its glob matches.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileEntries {
    plain: Vec<String>,
    globs: Vec<Pattern>,
}

impl FileEntries {
    pub(crate) fn new<S: AsRef<str>>(entries: &[S]) -> FileEntries {
        let mut out = FileEntries::default();
        for entry in entries {
            let entry = entry
                .as_ref()
                .trim()
                .trim_matches('`')
                .trim_start_matches("./");
            if entry.is_empty() {
                continue;
            }
            if entry.contains(['*', '?']) {
                out.globs.extend(Pattern::new(entry));
            } else {
                out.plain.push(entry.trim_end_matches('/').to_string());
            }
        }
        out
    }

    pub(crate) fn covers(&self, path: &str) -> bool {
        self.plain.iter().any(|dir| {
            path == dir
                || path
                    .strip_prefix(dir.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        }) || self.globs.iter().any(|g| g.is_match(path))
    }
}

/// Whether `path` (repo-relative) is covered by a task's Files entry: equal, inside a
/// listed directory, or matching a `*` / `**` pattern.
pub(crate) fn path_in_files(path: &str, files: &[String]) -> bool {
    FileEntries::new(files).covers(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(p: &str, s: &str) -> bool {
        Pattern::new(p).is_some_and(|p| p.is_match(s))
    }

    fn covers(entry: &str, path: &str) -> bool {
        FileEntries::new(&[entry]).covers(path)
    }

    #[test]
    fn glob_subset() {
        assert!(glob("*.log", "a.log"));
        assert!(!glob("*.log", "dir/a.log"));
        assert!(glob("**/x", "x"));
        assert!(glob("**/x", "a/b/x"));
        assert!(glob("a/**", "a/b/c"));
        assert!(glob("a/**/z", "a/z"));
        assert!(glob("a/**/z", "a/b/c/z"));
        assert!(glob("?.rs", "a.rs"));
        assert!(!glob("?.rs", "ab.rs"));
        assert!(glob("\\*", "*"));
        assert!(!glob("\\*", "a"));
        assert!(glob("{a}", "{a}"), "braces are literal");
        assert!(glob("é*", "éa"));
    }

    /// `**` inside a segment is a plain `*` (git's rule), never a cross-directory wildcard.
    #[test]
    fn double_star_inside_a_segment_is_a_star() {
        assert!(glob("a**b", "axxb"));
        assert!(!glob("a**b", "a/x/b"));
    }

    /// Regression: the backtracking matcher took seconds on this pattern.
    #[test]
    fn pathological_patterns_are_fast() {
        let pattern = "**a**a**a**a**a**a**a**a**a**a**a**a**b";
        let path = "a".repeat(200);
        let start = std::time::Instant::now();
        for _ in 0..100 {
            assert!(!glob(pattern, &path));
            assert!(!covers(pattern, &path));
        }
        // Generous: the old matcher needed seconds for one call.
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }

    /// Regression: `**` could swallow part of a file name, so `src/**/x.rs` matched `src/ax.rs`.
    #[test]
    fn double_star_spans_whole_directories_only() {
        assert!(covers("src/**/x.rs", "src/a/x.rs"));
        assert!(covers("src/**/x.rs", "src/x.rs"));
        assert!(!covers("src/**/x.rs", "src/ax.rs"));
    }

    #[test]
    fn files_entries_match_paths_dirs_and_globs() {
        assert!(covers("src/a.rs", "src/a.rs"));
        assert!(covers("`./src/a.rs`", "src/a.rs"));
        assert!(covers("src/", "src/x/y.rs"));
        assert!(covers("src", "src/x.rs"));
        assert!(!covers("src", "srcx/a.rs"));
        assert!(covers("src/*.rs", "src/a.rs"));
        assert!(!covers("src/*.rs", "src/x/a.rs"));
        assert!(covers("src/**/*.rs", "src/x/y/a.rs"));
        assert!(covers("src/**/*.rs", "src/a.rs"));
        assert!(covers("tests/t?.rs", "tests/t1.rs"));
        assert!(!covers("", "a"));
    }
}
