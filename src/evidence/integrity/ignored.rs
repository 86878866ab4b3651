//! Files git ignores that change how tests run (pure): a `conftest.py` that turns failures
//! into passes, a `.pth` or `sitecustomize.py` Python runs at start-up, a runner config, an
//! `.env` the runner loads, `.git/info/exclude` itself. None of them is in `git status`, the
//! commit or the integrity scan's change, so the execution keeps what they were when it
//! started (`ignoredFiles`, path → digest) and one that appeared, changed or went since is a
//! finding a person must waive.

use indexmap::IndexMap;

use super::{Finding, Kind, Out};

/// The path of the repository's own exclude file as the snapshot names it (in a linked
/// worktree it lives in the main repository's git directory; the key stays this).
pub const INFO_EXCLUDE: &str = ".git/info/exclude";

/// Names that configure or hook into a test runner wherever they stand in the tree.
const NAMES: &[&str] = &[
    // Python: pytest loads every conftest.py it passes; site runs these at start-up.
    "conftest.py",
    "sitecustomize.py",
    "usercustomize.py",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    ".coveragerc",
    "noxfile.py",
    // JavaScript: the package's scripts and the runner's configs and setup files.
    "package.json",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnp.cjs",
    ".pnp.loader.mjs",
    ".babelrc",
    "tsconfig.json",
    // Rust and Go: build scripts, toolchain and cargo configuration, workspaces.
    "build.rs",
    "rust-toolchain",
    "rust-toolchain.toml",
    "clippy.toml",
    ".clippy.toml",
    "go.work",
];

/// Name prefixes of runner configs and setup files (`jest.config.js`, `vitest.setup.ts`, …).
const PREFIXES: &[&str] = &[
    "jest.config.",
    "jest.setup.",
    "vitest.config.",
    "vitest.setup.",
    "vite.config.",
    "playwright.config.",
    "babel.config.",
    ".mocharc",
    ".env.",
];

/// Whether a file at `path` (relative, `/`-separated) can change how tests run.
pub fn shapes_runs(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path == INFO_EXCLUDE
        || NAMES.contains(&name)
        || name == ".env"
        || name.ends_with(".pth")
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || path.ends_with(".cargo/config")
        || path.ends_with(".cargo/config.toml")
        || path.ends_with(".config/nextest.toml")
}

/// Whether a file found inside an ignored directory counts: there only what acts from
/// where it stands (pytest's conftest.py; Python's start-up files at the top of a packages
/// directory, which an in-tree virtualenv keeps ignored).
pub fn shapes_runs_nested(path: &str) -> bool {
    let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
    if is_packages_dir(parent) {
        return name.ends_with(".pth") || name == "sitecustomize.py" || name == "usercustomize.py";
    }
    name == "conftest.py"
}

/// Whether `dir` is a packages directory Python reads start-up files from.
pub fn is_packages_dir(dir: &str) -> bool {
    let name = dir.rsplit('/').next().unwrap_or(dir);
    name == "site-packages" || name == "dist-packages"
}

/// The findings of the ignored runner files now against the execution's snapshot.
/// A file gone since counts only when `gone_counts` (the tree the snapshot was taken of).
pub fn changes(
    before: &IndexMap<String, String>,
    now: &IndexMap<String, String>,
    gone_counts: bool,
) -> Vec<Finding> {
    let mut out = Out {
        findings: Vec::new(),
    };
    for (path, digest) in now {
        let what = match before.get(path) {
            None => "appeared",
            Some(old) if old != digest => "changed",
            Some(_) => continue,
        };
        out.push(Kind::IgnoredRunnerFile, path, 1, digest, detail(path, what));
    }
    let gone = before
        .keys()
        .filter(|p| gone_counts && !now.contains_key(*p));
    for path in gone {
        out.push(
            Kind::IgnoredRunnerFile,
            path,
            1,
            "removed",
            detail(path, "went away"),
        );
    }
    out.findings
}

fn detail(path: &str, what: &str) -> String {
    let hidden = if path == INFO_EXCLUDE {
        "the repository's own exclude list (it decides what git, and so a reviewer, does not see)"
    } else {
        "a file git ignores (so neither `git status` nor the commit shows it) that can change how tests run"
    };
    format!("`{path}` {what} during the execution: {hidden}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(pairs: &[(&str, &str)]) -> IndexMap<String, String> {
        pairs
            .iter()
            .map(|(p, d)| (p.to_string(), d.to_string()))
            .collect()
    }

    #[test]
    fn runner_files_are_known_by_name_and_place() {
        for p in [
            "conftest.py",
            "tests/conftest.py",
            "pytest.ini",
            "jest.config.ts",
            ".mocharc.yml",
            ".env",
            ".env.test",
            "x.pth",
            ".cargo/config.toml",
            INFO_EXCLUDE,
        ] {
            assert!(shapes_runs(p), "{p}");
        }
        for p in [
            "src/lib.rs",
            "README.md",
            "conftest.py.bak",
            "environment.md",
            "a/.envrc",
        ] {
            assert!(!shapes_runs(p), "{p}");
        }
        assert!(shapes_runs_nested(
            ".venv/lib/python3.12/site-packages/evil.pth"
        ));
        assert!(shapes_runs_nested("build/gen/conftest.py"));
        assert!(!shapes_runs_nested(
            ".venv/lib/python3.12/site-packages/pkg/evil.pth"
        ));
        assert!(!shapes_runs_nested(
            ".venv/lib/python3.12/site-packages/conftest.py"
        ));
        assert!(!shapes_runs_nested("node_modules/x/package.json"));
        assert!(!shapes_runs_nested("docs/x.pth"));
    }

    #[test]
    fn appeared_changed_and_removed_files_are_findings_and_unchanged_ones_are_not() {
        let before = snap(&[("conftest.py", "a"), ("pytest.ini", "b"), ("old.pth", "c")]);
        let now = snap(&[
            ("conftest.py", "a"),
            ("pytest.ini", "B"),
            ("new/conftest.py", "d"),
        ]);
        let found = changes(&before, &now, true);
        let files: Vec<(&str, bool)> = found
            .iter()
            .map(|f| (f.file.as_str(), f.detail.contains("changed")))
            .collect();
        assert_eq!(
            files,
            [
                ("pytest.ini", true),
                ("new/conftest.py", false),
                ("old.pth", false)
            ]
        );
        assert!(found.iter().all(|f| f.kind == Kind::IgnoredRunnerFile));
        // Another tree (a member's worktree) lacks the snapshot's files without losing them.
        let elsewhere = changes(&before, &now, false);
        assert_eq!(elsewhere.len(), 2, "{elsewhere:?}");
        assert!(elsewhere.iter().all(|f| f.file != "old.pth"));
        assert!(changes(&before, &before, true).is_empty());
    }

    #[test]
    fn a_finding_id_names_the_contents_so_a_waiver_covers_only_what_a_person_saw() {
        let before = snap(&[]);
        let one = changes(&before, &snap(&[("conftest.py", "a")]), true);
        let again = changes(&before, &snap(&[("conftest.py", "a")]), true);
        let other = changes(&before, &snap(&[("conftest.py", "b")]), true);
        assert_eq!(one[0].id, again[0].id);
        assert_ne!(one[0].id, other[0].id);
    }
}
