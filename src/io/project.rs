//! Where things are: the project root, the active spec, and the paths inside it. Every
//! path the binary writes is derived here and checked to stay inside the project root.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::store;

pub const SPECS_DIR: &str = "specs";
pub const CURRENT_SPEC_FILE: &str = ".current-spec";
pub const STATE_FILE: &str = ".specrun-state.json";
/// A spec's defaults for what its format lacks (the Verify of a task without one).
pub const DEFAULTS_FILE: &str = ".specrun-defaults.json";
pub const TASKS_FILE: &str = "tasks.md";
/// Where other tools keep a spec by name: Kiro and cc-sdd, OpenSpec.
pub const FOREIGN_SPEC_DIRS: &[&str] = &[".kiro/specs", "openspec/changes"];
pub const PROGRESS_FILE: &str = ".progress.md";
pub const FOLLOWUPS_FILE: &str = "followups.json";
pub const CRITIQUE_DIR: &str = "critique";
pub const ACCEPTANCE_FILE: &str = "acceptance.json";
pub const TEST_RESULTS_DIR: &str = "test-results";
pub const EVENTS_DIR: &str = ".specrun";
pub const EVENTS_FILE: &str = "events.jsonl";
/// The per-machine configuration (notify command, prices), beside the events log.
pub const CONFIG_FILE: &str = "config.json";
/// A config larger than this is refused rather than read.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// `.specrun/config.json` of a project root.
pub fn config_path(root: &Path) -> PathBuf {
    root.join(EVENTS_DIR).join(CONFIG_FILE)
}
/// Member worktrees live at `<root>/.specrun/worktrees/<spec>/<task id>`.
pub const WORKTREES_DIR: &str = "worktrees";
/// The most of `.current-spec` read: a name is at most 255 bytes, the rest is ignored.
pub const CURRENT_SPEC_MAX: u64 = 4096;

#[derive(Debug, Clone)]
pub struct Project {
    /// Nearest ancestor of `cwd` holding `specs/` or `.git`; `cwd` itself when neither exists.
    pub root: PathBuf,
    pub cwd: PathBuf,
    /// Whether a `specs/` or `.git` marker was found.
    pub found: bool,
    /// The work tree whose code the verbs run and fingerprint: `root`, or the member
    /// worktree (`<root>/.specrun/worktrees/<spec>/<id>`) the command was started in, whose
    /// bookkeeping still lives in `root` (one state, one lock, one tasks.md, one log).
    pub tree: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub name: String,
    pub dir: PathBuf,
    /// `dir` from the project root (absolute when outside it), fixed where the spec is
    /// resolved: the folder a message names (`specs/demo`, `.kiro/specs/albums`).
    pub folder: String,
}

/// A spec as a message names it: the name `--spec` takes and its folder from the project
/// root. The pure code gets this and never rebuilds a layout from the name, which would
/// send a Kiro or OpenSpec spec's reader to a `specs/<name>` that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecPlace<'a> {
    pub name: &'a str,
    pub folder: &'a str,
}

impl SpecPlace<'_> {
    /// A file of the spec's folder, from the project root.
    pub fn file(&self, file: &str) -> String {
        match self.folder {
            "" => file.to_string(),
            f => format!("{f}/{file}"),
        }
    }

    /// The spec's tasks file, from the project root.
    pub fn tasks_file(&self) -> String {
        self.file(TASKS_FILE)
    }
}

impl Spec {
    /// The spec `name` in `dir`, its folder named from `root`.
    pub fn at(root: &Path, name: String, dir: PathBuf) -> Spec {
        let folder = match dir.strip_prefix(root) {
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => dir.display().to_string(),
        };
        Spec { name, dir, folder }
    }

    /// How messages name it.
    pub fn place(&self) -> SpecPlace<'_> {
        SpecPlace {
            name: &self.name,
            folder: &self.folder,
        }
    }

    pub fn tasks_path(&self) -> PathBuf {
        self.dir.join(TASKS_FILE)
    }
    pub fn state_path(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }
    pub fn progress_path(&self) -> PathBuf {
        self.dir.join(PROGRESS_FILE)
    }
    pub fn followups_path(&self) -> PathBuf {
        self.dir.join(FOLLOWUPS_FILE)
    }
    pub fn critique_dir(&self) -> PathBuf {
        self.dir.join(CRITIQUE_DIR)
    }
    pub fn artifact_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.md"))
    }
}

/// Characters that change how text is shown without being seen: bidirectional overrides
/// and isolates, zero-width characters, the BOM.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// The one spec name rule, checked wherever a name enters (`--spec`, `.current-spec`,
/// and through them `state init` and the rollback refs): one plain path segment that is
/// also a valid git ref component. No `/` or `\`, no `..`, no leading `.`, no whitespace,
/// control or invisible character, none of `~^:?*[` or `@{`, no trailing `.lock` or `.`,
/// not empty, at most 255 bytes.
/// What `.current-spec`'s bytes name: its first line, trimmed (a BOM dropped); `Some(None)`
/// when it is empty, `None` when it is not UTF-8.
pub fn current_spec_line(bytes: &[u8]) -> Option<Option<String>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let line = text.lines().next().unwrap_or("").trim();
    Some((!line.is_empty()).then(|| line.to_string()))
}

pub fn validate_spec_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.contains('/') || name.contains('\\') {
        Some("it contains a path separator")
    } else if name.contains("..") {
        Some("it contains `..`")
    } else if name.starts_with('.') {
        Some("it starts with `.`")
    } else if name.chars().any(char::is_control) {
        Some("it contains a control character")
    } else if name.chars().any(char::is_whitespace) {
        Some("it contains whitespace")
    } else if name.chars().any(is_invisible) {
        Some("it contains an invisible or bidirectional-control character")
    } else if name.contains(['~', '^', ':', '?', '*', '[']) || name.contains("@{") {
        Some("it contains one of ~ ^ : ? * [ @{, which git refs cannot hold")
    } else if name.ends_with(".lock") || name.ends_with('.') {
        Some("it ends with `.lock` or `.`, which git refs cannot")
    } else if name.len() > 255 {
        Some("it is longer than 255 bytes")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::SpecName {
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Resolve `.`/`..` lexically (the path need not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Follow symlinks through the longest part of `path` that exists, so a link cannot lead
/// outside the root, and a path whose tail does not exist yet still compares correctly.
fn resolve_existing_prefix(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut tail: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            out.extend(tail.iter().rev());
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// `(main checkout, worktree)` when `cwd` lies in a member worktree
/// `<main>/.specrun/worktrees/<spec>/<id>` (a linked git worktree: `.git` is a file).
/// Pure path arithmetic plus two metadata reads, so every verb can afford it.
fn member_worktree(cwd: &Path) -> Option<(PathBuf, PathBuf)> {
    cwd.ancestors().find_map(|dir| {
        let worktrees = dir.parent()?.parent()?;
        let events = worktrees.parent()?;
        let main = events.parent()?;
        let shaped = worktrees.file_name()? == WORKTREES_DIR && events.file_name()? == EVENTS_DIR;
        (shaped && dir.join(".git").is_file() && main.join(".git").exists())
            .then(|| (main.to_path_buf(), dir.to_path_buf()))
    })
}

impl Project {
    /// Find the project for `cwd` (the process's directory when `None`). A `cwd` that does
    /// not exist is an error.
    pub fn discover(cwd: Option<&Path>) -> Result<Project> {
        let base = match cwd {
            Some(dir) => dir.to_path_buf(),
            None => std::env::current_dir()
                .map_err(|e| Error::io(".", "read the current directory", e))?,
        };
        let cwd = std::fs::canonicalize(&base).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::missing("directory", &base)
            } else {
                Error::io(&base, "resolve", e)
            }
        })?;
        if !cwd.is_dir() {
            return Err(Error::missing("directory", &base));
        }
        Ok(Project::from_canonical(cwd))
    }

    fn from_canonical(cwd: PathBuf) -> Project {
        if let Some((root, tree)) = member_worktree(&cwd) {
            return Project {
                root,
                cwd,
                found: true,
                tree,
            };
        }
        let found = cwd
            .ancestors()
            .find(|dir| dir.join(SPECS_DIR).is_dir() || dir.join(".git").exists());
        match found {
            Some(root) => Project {
                root: root.to_path_buf(),
                tree: root.to_path_buf(),
                cwd,
                found: true,
            },
            None => Project {
                root: cwd.clone(),
                tree: cwd.clone(),
                cwd,
                found: false,
            },
        }
    }

    /// Whether the command runs inside a member worktree rather than the main checkout.
    pub fn in_worktree(&self) -> bool {
        self.tree != self.root
    }

    pub fn specs_dir(&self) -> PathBuf {
        self.root.join(SPECS_DIR)
    }

    pub fn events_path(&self) -> PathBuf {
        self.root.join(EVENTS_DIR).join(EVENTS_FILE)
    }

    /// Where a spec's member worktrees live.
    pub fn worktrees_dir(&self, spec: &str) -> PathBuf {
        self.root.join(EVENTS_DIR).join(WORKTREES_DIR).join(spec)
    }

    pub fn current_spec_path(&self) -> PathBuf {
        self.specs_dir().join(CURRENT_SPEC_FILE)
    }

    /// `path` (relative to the root, or absolute), normalised; an error if it leaves the root.
    pub fn inside(&self, path: &Path) -> Result<PathBuf> {
        let joined = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        let normal = normalize(&joined);
        let resolved = resolve_existing_prefix(&normal);
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(Error::OutsideProject {
                path: resolved,
                root: self.root.clone(),
            })
        }
    }

    /// The spec named by `.current-spec`, if that file exists and is not empty.
    pub fn current_spec_name(&self) -> Result<Option<String>> {
        let path = self.current_spec_path();
        // Only the first line matters: read a bounded head, never the whole file.
        let Some(bytes) = store::read_prefix(&path, CURRENT_SPEC_MAX, false)? else {
            return Ok(None);
        };
        current_spec_line(&bytes).ok_or(Error::NotUtf8 { path })
    }

    /// Resolve `--spec` (a name or a path) or, without it, `specs/.current-spec`.
    /// `Ok(None)` when neither names a spec.
    pub fn spec(&self, arg: Option<&str>) -> Result<Option<Spec>> {
        let chosen = match arg {
            Some(a) => Some((a.to_string(), true)),
            None => self.current_spec_name()?.map(|n| (n, false)),
        };
        let Some((value, from_flag)) = chosen else {
            return Ok(None);
        };
        let looks_like_path = value.contains('/') || value.contains('\\') || value == ".";
        if !looks_like_path {
            validate_spec_name(&value)?;
            // A `specs/<name>` symlink must not carry writes outside the root either; one
            // inside it is followed here, once, so bookkeeping paths hold no link.
            let dir = self.inside(&self.foreign_dir(&value))?;
            return Ok(Some(Spec::at(&self.root, value, dir)));
        }
        // A path: relative to the cwd for a flag, to the root for .current-spec; a path to
        // a spec's tasks.md names its folder.
        let base = if from_flag { &self.cwd } else { &self.root };
        let mut dir = self.inside(&base.join(&value))?;
        if dir.file_name().is_some_and(|n| n == TASKS_FILE) && dir.is_file() {
            dir.pop();
        }
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        validate_spec_name(&name)?;
        Ok(Some(Spec::at(&self.root, name, dir)))
    }

    /// The folder a spec name names: `specs/<name>` (specrun's and spec-kit's layout), else,
    /// when that does not exist, the first of Kiro's `.kiro/specs/<name>` and OpenSpec's
    /// `openspec/changes/<name>` that does.
    fn foreign_dir(&self, name: &str) -> PathBuf {
        let own = self.specs_dir().join(name);
        if own.is_dir() {
            return own;
        }
        FOREIGN_SPEC_DIRS
            .iter()
            .map(|d| self.root.join(d).join(name))
            .find(|d| d.join(TASKS_FILE).is_file())
            .unwrap_or(own)
    }

    /// Like `spec`, but a missing spec, or one whose directory does not exist, is an error
    /// naming a step that works: the specs that do exist, else `specrun new`.
    pub fn require_spec(&self, arg: Option<&str>) -> Result<Spec> {
        let Some(spec) = self.spec(arg)? else {
            return Err(Error::Usage(format!(
                "no active spec: {}",
                self.spec_choices(None)
            )));
        };
        if !spec.dir.is_dir() {
            return Err(Error::Usage(format!(
                "spec {:?} not found ({} does not exist): {}",
                spec.name,
                spec.dir.display(),
                self.spec_choices(Some(&spec.name))
            )));
        }
        Ok(spec)
    }

    /// The spec directories under specs/, sorted by name.
    pub fn spec_names(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.specs_dir()) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| validate_spec_name(n).is_ok())
            .collect();
        names.sort();
        names
    }

    /// What to do without a usable spec: pass one that exists, or create one.
    fn spec_choices(&self, wanted: Option<&str>) -> String {
        let names = self.spec_names();
        if names.is_empty() {
            let name = wanted.unwrap_or("NAME");
            return format!(
                "create one with `specrun new {}`",
                crate::support::shell::word(name)
            );
        }
        let list: Vec<String> = names
            .iter()
            .map(|n| format!("`{}`", crate::support::shell::spec_flag(n)))
            .collect();
        format!("pass one of the specs here: {}", list.join(", "))
    }
}

/// Paths (relative to the project root) whose changes must not stale evidence: the spec's
/// bookkeeping, which a task's own completion rewrites.
pub fn bookkeeping_paths(project: &Project, spec: &Spec) -> Vec<String> {
    let spec_rel = spec
        .dir
        .strip_prefix(&project.root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{}/{}", SPECS_DIR, spec.name));
    // Each bookkeeping file comes with its `.lock` sidecar, which the first locked write
    // creates (`task complete` locks .progress.md, for one).
    let files = [
        STATE_FILE,
        PROGRESS_FILE,
        TASKS_FILE,
        FOLLOWUPS_FILE,
        ACCEPTANCE_FILE,
    ];
    let mut paths: Vec<String> = files
        .iter()
        .flat_map(|f| [format!("{spec_rel}/{f}"), format!("{spec_rel}/{f}.lock")])
        .collect();
    paths.push(format!("{spec_rel}/{}", CRITIQUE_DIR));
    paths.push(format!("{spec_rel}/{}", TEST_RESULTS_DIR));
    paths.push(EVENTS_DIR.to_string());
    paths.push(format!("{}/{}", SPECS_DIR, CURRENT_SPEC_FILE));
    paths
}

/// Whether root-relative `rel` is a temp file of one of the `bookkeeping` files: the store
/// writes `.<name>.specrun-tmp-…` beside the file it replaces (a sibling's state write in
/// flight). Only these temp-shaped names are left out of a fingerprint; one anywhere else
/// is the project's own file (a helper a test loads could be so named).
pub fn is_bookkeeping_temp(rel: &str, bookkeeping: &[String]) -> bool {
    let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    if !crate::io::store::is_temp_name(name) {
        return false;
    }
    bookkeeping.iter().any(|b| {
        let (b_dir, b_name) = b.rsplit_once('/').unwrap_or(("", b));
        dir == b_dir && name.starts_with(&crate::io::store::temp_prefix_of(b_name))
    })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests set up and inspect files directly
mod tests {
    use super::*;

    #[test]
    fn only_a_bookkeeping_files_own_temp_is_a_bookkeeping_temp() {
        let kept = [
            "specs/demo/.specrun-state.json".to_string(),
            "specs/demo/tasks.md".into(),
        ];
        let is = |rel: &str| is_bookkeeping_temp(rel, &kept);
        assert!(is("specs/demo/..specrun-state.json.specrun-tmp-1a2b"));
        assert!(is("specs/demo/.tasks.md.specrun-tmp-x"));
        // Shaped like one, but beside no bookkeeping file, or of another file.
        assert!(!is("lib/.helper.js.specrun-tmp-1"));
        assert!(!is(".tasks.md.specrun-tmp-x"));
        assert!(!is("specs/demo/.notes.md.specrun-tmp-x"));
        assert!(!is("specs/other/.tasks.md.specrun-tmp-x"));
        assert!(!is("specs/demo/tasks.md"));
    }

    #[test]
    fn spec_names_are_validated() {
        for bad in [
            "",
            "a/b",
            "..",
            "../x",
            ".hidden",
            "a\u{7}b",
            "a\\b",
            "x..y",
            "my spec",
            "tab\there",
            "a\u{a0}b",
            "evil\u{202e}txt",
            "zero\u{200b}width",
            "a:b",
            "a~1",
            "x.lock",
            "end.",
        ] {
            assert!(validate_spec_name(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["demo", "my-feature_2", "v1.2"] {
            validate_spec_name(good).unwrap();
        }
    }

    #[test]
    fn root_is_nearest_ancestor_with_specs_or_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("specs")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        let p = Project::discover(Some(&root.join("a/b"))).unwrap();
        assert_eq!(p.root, root);
        assert!(p.found);
    }

    #[test]
    fn a_member_worktree_resolves_to_the_main_checkout() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let wt = root.join(".specrun/worktrees/demo/2.1");
        std::fs::create_dir_all(wt.join("src/deep")).unwrap();
        std::fs::create_dir_all(wt.join("specs")).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: x").unwrap();
        let p = Project::discover(Some(&wt.join("src/deep"))).unwrap();
        assert_eq!((p.root.clone(), p.tree.clone()), (root.clone(), wt.clone()));
        assert!(p.in_worktree());
        // Shaped like one but not a linked worktree: an ordinary directory.
        std::fs::remove_file(wt.join(".git")).unwrap();
        let p = Project::discover(Some(&wt)).unwrap();
        assert_eq!(p.root, wt);
        assert!(!p.in_worktree());
    }

    #[test]
    fn spec_path_outside_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("specs/demo")).unwrap();
        let p = Project::discover(Some(&root)).unwrap();
        assert!(matches!(
            p.spec(Some("../../etc")),
            Err(Error::OutsideProject { .. })
        ));
        assert_eq!(p.spec(Some("specs/demo")).unwrap().unwrap().name, "demo");
        assert_eq!(
            p.spec(Some("demo")).unwrap().unwrap().dir,
            root.join("specs/demo")
        );
    }
}
