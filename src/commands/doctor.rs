//! `specrun doctor`: check the installation, Claude Code and the project, each check with
//! a fix hint. Human table (at most 80 columns) or `--json`; exit 1 if any check fails.
//!
//! A stale lock, for flock-based sidecar locks: the kernel drops a flock when its process
//! dies, so a leftover `.lock` file is never stale by itself and must not be deleted.
//! What can go wrong is a live process holding the lock far longer than specrun ever does
//! (milliseconds); doctor reports a lock it still cannot take after a grace period.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::claude::probe::probe_readiness;
use crate::cli::DoctorArgs;
use crate::error::{ExitStatus, Result};
use crate::io::output;
use crate::io::project::{self, Project};
use crate::io::store;
use crate::model::state::Phase;
use crate::next::facts::{read_typed, StateRead};

/// How long a lock may stay held before doctor calls it stuck.
const LOCK_GRACE: Duration = Duration::from_secs(3);
/// Overrides `LOCK_GRACE` in milliseconds (tests).
pub(crate) const LOCK_GRACE_ENV: &str = "SPECRUN_DOCTOR_LOCK_GRACE_MS";

const WIDTH: usize = 80;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Pass,
    Warn,
    Fail,
}

#[derive(Debug, Serialize)]
struct Check {
    id: &'static str,
    status: Status,
    detail: String,
    /// What to do when it does not pass.
    fix: Option<String>,
}

impl Check {
    fn pass(id: &'static str, detail: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Pass,
            detail: detail.into(),
            fix: None,
        }
    }
    fn not(
        id: &'static str,
        status: Status,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            id,
            status,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

pub(crate) fn run(project: &Project, args: DoctorArgs) -> Result<ExitStatus> {
    let readiness = probe_readiness(project);
    let checks = vec![
        binary_version(),
        launcher_choice(),
        git_present(),
        claude_code(&readiness),
        hooks(&readiness),
        state_valid(project, args.spec.spec.as_deref()),
        plan_lint(project, args.spec.spec.as_deref()),
        locks(project),
        guard_counting(project, args.spec.spec.as_deref()),
        spec_names(project),
        worktrees(project, args.spec.spec.as_deref()),
    ];
    let ok = checks.iter().all(|c| c.status != Status::Fail);
    if args.json {
        output::json_pretty(&Answer {
            ok,
            checks: &checks,
        });
    } else {
        output::raw(&table(&checks));
    }
    Ok(ExitStatus::yes_no(ok))
}

/// The plugin root: `CLAUDE_PLUGIN_ROOT`, else the nearest ancestor of the binary holding
/// `.claude-plugin/plugin.json`, or a checkout's `plugin/` beside its `target/`.
fn plugin_root() -> Option<PathBuf> {
    if let Some(root) = std::env::var_os("CLAUDE_PLUGIN_ROOT").filter(|r| !r.is_empty()) {
        return Some(PathBuf::from(root));
    }
    let exe = std::env::current_exe().ok()?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    exe.ancestors().skip(1).find_map(|dir| {
        [dir.to_path_buf(), dir.join("plugin")]
            .into_iter()
            .find(|root| root.join(".claude-plugin/plugin.json").is_file())
    })
}

/// Which binary the plugin's launcher ran, and why: it says so in SPECRUN_LAUNCHER_CHOICE.
/// Informational: the version check above judges the binary itself.
fn launcher_choice() -> Check {
    const ID: &str = "launcher";
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "this binary".into());
    match std::env::var("SPECRUN_LAUNCHER_CHOICE") {
        Ok(choice) if !choice.is_empty() => Check::pass(ID, format!("bin/specrun chose {choice}")),
        _ => Check::pass(
            ID,
            format!("{exe}, run directly (not through the plugin's bin/specrun)"),
        ),
    }
}

fn binary_version() -> Check {
    const ID: &str = "binary-version";
    let ours = env!("CARGO_PKG_VERSION");
    let Some(root) = plugin_root() else {
        return Check::not(
            ID,
            Status::Warn,
            format!("specrun {ours}; plugin root unknown (no CLAUDE_PLUGIN_ROOT, no .claude-plugin/plugin.json above the binary)"),
            "run doctor from Claude Code (it sets CLAUDE_PLUGIN_ROOT) or set CLAUDE_PLUGIN_ROOT to the plugin directory",
        );
    };
    let manifest = root.join(".claude-plugin/plugin.json");
    let rebuild = format!("cargo install --locked --path {}", root.display());
    let version = match store::read_json(&manifest) {
        Ok(Some(doc)) => doc.get("version").and_then(Value::as_str).map(str::to_string),
        Ok(None) => {
            return Check::not(
                ID,
                Status::Warn,
                format!("specrun {ours}; plugin root {} has no .claude-plugin/plugin.json, so its version is unknown", root.display()),
                "point CLAUDE_PLUGIN_ROOT at the plugin directory",
            )
        }
        Err(e) => {
            return Check::not(ID, Status::Fail, e.to_string(), format!("repair {}", manifest.display()))
        }
    };
    match version {
        Some(v) if v == ours => {
            Check::pass(ID, format!("specrun {ours} matches {}", manifest.display()))
        }
        Some(v) => Check::not(
            ID,
            Status::Fail,
            format!("specrun is {ours} but {} says {v}", manifest.display()),
            format!("rebuild the binary from the plugin: {rebuild}"),
        ),
        None => Check::not(
            ID,
            Status::Fail,
            format!("{} has no string `version`", manifest.display()),
            format!("add \"version\": \"{ours}\" to {}", manifest.display()),
        ),
    }
}

fn git_present() -> Check {
    const ID: &str = "git";
    let out = std::process::Command::new("git")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            Check::pass(ID, String::from_utf8_lossy(&o.stdout).trim().to_string())
        }
        Ok(o) => Check::not(
            ID,
            Status::Fail,
            format!("git --version exited with {}", o.status),
            "repair the git installation",
        ),
        Err(e) => Check::not(
            ID,
            Status::Fail,
            format!("git cannot run: {e}"),
            "install git and put it on PATH: evidence, scope and release checks need it",
        ),
    }
}

/// Claude Code against the supported range (`claude_code`): not installed, too old for
/// `/goal`, older than supported, tested, in range, or newer than tested. Each says what to
/// do; none changes the driver choice, which `specrun goal` makes from the same probe.
fn claude_code(r: &crate::claude::goal::Readiness) -> Check {
    use crate::claude::releases::{self as cc, Support};
    const ID: &str = "claude-code";
    let range = cc::supported_range();
    let install = cc::install_command();
    let Some(v) = &r.claude_code_version else {
        let why = r
            .reasons
            .first()
            .cloned()
            .unwrap_or_else(|| "Claude Code version unknown".into());
        return Check::not(
            ID,
            Status::Warn,
            format!("Claude Code not found or not answering ({why}); specrun supports {range}"),
            format!("install Claude Code (`{install}`) or put `claude` on PATH"),
        );
    };
    if r.meets_minimum == Some(false) {
        return Check::not(
            ID,
            Status::Fail,
            format!(
                "Claude Code {v} is too old: no /goal (first in {}) and older than {}, the oldest release specrun supports ({range})",
                r.minimum,
                cc::OLDEST_SUPPORTED
            ),
            format!("update Claude Code (`claude update`, or `{install}`); until then `specrun goal` picks the stop-hook driver"),
        );
    }
    match cc::support(v) {
        Some(Support::Tested) => Check::pass(
            ID,
            format!("Claude Code {v}: tested (supported {range}); /goal available"),
        ),
        Some(Support::InRange) => Check::pass(
            ID,
            format!("Claude Code {v}: in the supported range {range} (this release untested); /goal available"),
        ),
        Some(Support::TooOld) => Check::not(
            ID,
            Status::Warn,
            format!(
                "Claude Code {v} is untested: older than {}, the oldest release specrun supports ({range}); /goal available",
                cc::OLDEST_SUPPORTED
            ),
            format!("update Claude Code (`claude update`, or `{install}`)"),
        ),
        Some(Support::NewerThanTested) | None => Check::not(
            ID,
            Status::Warn,
            format!(
                "Claude Code {v} is untested: newer than {}, the newest release specrun was tested on ({range}); it should work",
                cc::NEWEST_TESTED
            ),
            format!("if the guard misbehaves, install the tested release (`{install}`) and report the difference"),
        ),
    }
}

fn hooks(r: &crate::claude::goal::Readiness) -> Check {
    const ID: &str = "hooks";
    match r.hooks_restricted {
        Some(false) => Check::pass(ID, "no settings file disables hooks"),
        Some(true) => Check::not(
            ID,
            Status::Fail,
            r.reasons.iter().find(|m| m.starts_with("hooks are restricted")).cloned().unwrap_or_default(),
            "remove disableAllHooks / allowManagedHooksOnly (or ask your administrator): specrun's guard and /goal need hooks",
        ),
        None => Check::not(
            ID,
            Status::Fail,
            r.warnings.join("; "),
            "repair the settings file named (it must be a JSON object)",
        ),
    }
}

/// The state of the selected spec (`--spec` or `.current-spec`) and of every other spec
/// under specs/: a broken state anywhere breaks that spec's guard and verbs.
/// The active (or `--spec`) spec's tasks.md against the format: the findings of `tasks
/// lint`, as a warning (doctor reports; `state init` is where a plan is refused).
fn plan_lint(project: &Project, spec_arg: Option<&str>) -> Check {
    const ID: &str = "plan";
    let spec = match project.spec(spec_arg) {
        Ok(Some(spec)) => spec,
        Ok(None) => return Check::pass(ID, "no active spec"),
        Err(e) => return Check::not(ID, Status::Warn, e.to_string(), "pass --spec NAME"),
    };
    let path = spec.tasks_path();
    let text = match store::read_text(&path, "tasks file") {
        Ok(text) => text,
        Err(e) => {
            return Check::not(
                ID,
                Status::Warn,
                e.to_string(),
                format!("write {}", path.display()),
            )
        }
    };
    // In the file's format, as `tasks lint` reads it.
    let list = match crate::model::tasks_file::read(&path, text, true) {
        Ok(loaded) => loaded,
        Err(e) => {
            return Check::not(
                ID,
                Status::Warn,
                e.to_string(),
                format!("fix {}", path.display()),
            )
        }
    };
    let (text, list) = (&list.text, &list.list);
    let findings = crate::model::tasks::lint::lint(text, list);
    if findings.is_empty() {
        return Check::pass(
            ID,
            format!(
                "spec {}: {} task(s), no lint finding",
                spec.name,
                list.tasks.len()
            ),
        );
    }
    let errors = findings
        .iter()
        .filter(|f| f.severity == crate::model::tasks::lint::Severity::Error)
        .count();
    let first = &findings[0];
    Check::not(
        ID,
        Status::Warn,
        format!(
            "spec {}: {errors} error(s), {} warning(s) in tasks.md (first: line {}: {})",
            spec.name,
            findings.len() - errors,
            first.line,
            first.message
        ),
        format!(
            "run `specrun tasks lint {}` and fix each line it names",
            crate::support::shell::spec_flag(&spec.name)
        ),
    )
}

fn state_valid(project: &Project, spec_arg: Option<&str>) -> Check {
    const ID: &str = "state";
    let mut specs = Vec::new();
    match project.spec(spec_arg) {
        Ok(Some(spec)) => specs.push(spec),
        Ok(None) => {}
        Err(e) => {
            return Check::not(
                ID,
                Status::Fail,
                e.to_string(),
                "write a valid spec name to specs/.current-spec or pass --spec NAME",
            )
        }
    }
    if spec_arg.is_none() {
        let mut names: Vec<String> = std::fs::read_dir(project.specs_dir())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| project::validate_spec_name(n).is_ok())
            .collect();
        names.sort();
        for name in names {
            if specs.iter().any(|s| s.name == name) {
                continue;
            }
            if let Ok(Some(spec)) = project.spec(Some(&name)) {
                specs.push(spec);
            }
        }
    }
    if specs.is_empty() {
        return Check::pass(ID, "no spec");
    }
    let (mut failed, mut halted, mut fine) = (Vec::new(), Vec::new(), Vec::new());
    for spec in &specs {
        match read_typed(&spec.state_path()) {
            StateRead::Absent => fine.push(format!("spec {}: no state yet", spec.name)),
            StateRead::Invalid(e) => failed.push((
                e,
                format!(
                    "inspect it, then `specrun state init {} --force` (the old file is kept)",
                    crate::support::shell::spec_flag(&spec.name)
                ),
            )),
            StateRead::Valid(s) => {
                if s.halt().is_some() {
                    halted.push((
                        format!(
                            "spec {}: halted ({})",
                            spec.name,
                            s.halt_reason().unwrap_or("no reason recorded")
                        ),
                        crate::claude::roles::for_person(&s.resume_command(&spec.name)),
                    ));
                } else {
                    fine.push(format!(
                        "spec {}: valid, phase {}",
                        spec.name,
                        s.phase().map_or("unset", Phase::as_str)
                    ));
                }
            }
        }
    }
    let join = |items: &[(String, String)]| {
        let detail: Vec<&str> = items.iter().map(|(d, _)| d.as_str()).collect();
        let fix: Vec<&str> = items.iter().map(|(_, f)| f.as_str()).collect();
        (detail.join("; "), fix.join("; "))
    };
    if !failed.is_empty() {
        let (detail, fix) = join(&failed);
        return Check::not(ID, Status::Fail, detail, fix);
    }
    if !halted.is_empty() {
        let (detail, fix) = join(&halted);
        return Check::not(ID, Status::Warn, detail, fix);
    }
    Check::pass(ID, fine.join("; "))
}

/// Whether the guard can count the active spec's stops: no stop missed since the last
/// counted one (`crate::hooks::uncounted`), and a state lock path that is a file.
fn guard_counting(project: &Project, spec_arg: Option<&str>) -> Check {
    const ID: &str = "guard-counting";
    let Ok(Some(spec)) = project.spec(spec_arg) else {
        return Check::pass(ID, "no active spec");
    };
    let lock = crate::io::store::lock_path(&spec.state_path());
    if std::fs::symlink_metadata(&lock).is_ok_and(|m| !m.is_file()) {
        return Check::not(
            ID,
            Status::Fail,
            format!(
                "{} is not a regular file: the guard cannot lock the state, so no stop is counted",
                lock.display()
            ),
            format!(
                "remove it (`rm -r {}`); specrun recreates it",
                lock.display()
            ),
        );
    }
    let offset = match read_typed(&spec.state_path()) {
        StateRead::Valid(s) => crate::hooks::uncounted::offset(&s),
        _ => return Check::pass(ID, format!("spec {}: no usable state", spec.name)),
    };
    let missed = crate::hooks::uncounted::since(project, &spec.name, offset);
    match crate::hooks::uncounted::summary(&missed) {
        None => Check::pass(ID, format!("spec {}: every stop counted", spec.name)),
        Some(text) => Check::not(
            ID,
            if missed.count >= crate::hooks::uncounted::ALARM_AFTER {
                Status::Fail
            } else {
                Status::Warn
            },
            format!("spec {}: {text}", spec.name),
            format!(
                "see {} for each cause (lock contention, a full or read-only disk, a directory at the lock path)",
                crate::hooks::uncounted::path(project, &spec.name).display()
            ),
        ),
    }
}

/// Every `.lock` sidecar specrun may hold: under each spec directory, `specs/` and
/// `.specrun/`.
fn lock_files(project: &Project) -> Vec<PathBuf> {
    let mut dirs = vec![project.specs_dir(), project.root.join(project::EVENTS_DIR)];
    if let Ok(entries) = std::fs::read_dir(project.specs_dir()) {
        dirs.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let mut locks: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "lock"))
        .collect();
    locks.sort();
    locks
}

fn locks(project: &Project) -> Check {
    const ID: &str = "locks";
    let grace = std::env::var(LOCK_GRACE_ENV)
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(LOCK_GRACE);
    let all = lock_files(project);
    // store::lock polls for us; every lock shares one deadline (taken locks are released
    // at once).
    let deadline = Instant::now() + grace;
    let held: Vec<&PathBuf> = all
        .iter()
        .filter(|l| {
            let wait = deadline.saturating_duration_since(Instant::now());
            store::lock(&l.with_extension(""), wait).is_err()
        })
        .collect();
    if held.is_empty() {
        return Check::pass(ID, format!("{} lock file(s), none held", all.len()));
    }
    let names: Vec<String> = held.iter().map(|p| p.display().to_string()).collect();
    Check::not(
        ID,
        Status::Fail,
        format!("held for more than {} ms: {}", grace.as_millis(), names.join(", ")),
        "a process is stuck holding it (find it with `fuser` or `lsof` on the file) and end it; never delete a .lock file",
    )
}

/// Specrun member worktrees that no open member owns (a crash, a cancelled run).
fn worktrees(project: &Project, spec_arg: Option<&str>) -> Check {
    const ID: &str = "worktrees";
    let spec = project.spec(spec_arg).ok().flatten();
    let state = spec.as_ref().and_then(|s| {
        crate::next::facts::read_lenient(&s.state_path())
            .ok()
            .flatten()
    });
    let stale = crate::isolation::stale_worktrees(project, state.as_ref(), spec.as_ref());
    if stale.is_empty() {
        return Check::pass(ID, "no stale specrun worktree");
    }
    let names: Vec<String> = stale
        .iter()
        .map(|(p, b)| match b {
            Some(b) => format!("{} ({b})", p.display()),
            None => p.display().to_string(),
        })
        .collect();
    Check::not(
        ID,
        Status::Warn,
        format!("stale specrun worktree(s): {}", names.join(", ")),
        "keep what you need from each (its branch keeps the commits), then `git worktree remove <path>`",
    )
}

fn spec_names(project: &Project) -> Check {
    const ID: &str = "spec-names";
    let dir = project.specs_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Check::pass(ID, "no specs/ directory");
    };
    let mut bad = Vec::new();
    let mut count = 0;
    for entry in entries.flatten() {
        if !entry.path().is_dir() {
            continue;
        }
        let raw = entry.file_name();
        let Some(name) = raw.to_str() else {
            bad.push(format!("{:?}: not UTF-8", raw));
            continue;
        };
        // Hidden directories can never be selected as specs; they are not specs.
        if name.starts_with('.') {
            continue;
        }
        count += 1;
        if let Err(e) = project::validate_spec_name(name) {
            bad.push(e.to_string());
        }
    }
    match project.current_spec_name() {
        Ok(Some(current)) if !current.contains('/') => {
            if let Err(e) = project::validate_spec_name(&current) {
                bad.push(format!("specs/.current-spec: {e}"));
            }
        }
        Err(e) => bad.push(e.to_string()),
        _ => {}
    }
    if bad.is_empty() {
        Check::pass(ID, format!("{count} spec(s), all names valid"))
    } else {
        bad.sort();
        Check::not(
            ID,
            Status::Fail,
            bad.join("; "),
            "rename the directory: one path segment, no `..`, no leading `.`, no control characters",
        )
    }
}

/// `text` broken into lines of at most `width` characters (long words are split).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = line.chars().count();
            let room = if used == 0 {
                width
            } else {
                width.saturating_sub(used + 1)
            };
            if word.len() <= room {
                if used > 0 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            let rest = word.split_off(width);
            lines.push(word.iter().collect());
            word = rest;
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

fn table(checks: &[Check]) -> String {
    const STATUS_W: usize = 5;
    const ID_W: usize = 15;
    let indent = STATUS_W + 1 + ID_W + 1;
    let mut out = format!("{:<STATUS_W$} {:<ID_W$} DETAIL\n", "", "CHECK");
    for c in checks {
        let status = match c.status {
            Status::Pass => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        };
        let mut body = wrap(&c.detail, WIDTH - indent);
        if let Some(fix) = &c.fix {
            body.extend(wrap(&format!("fix: {fix}"), WIDTH - indent));
        }
        for (i, line) in body.iter().enumerate() {
            if i == 0 {
                out.push_str(&format!("{status:<STATUS_W$} {:<ID_W$} {line}\n", c.id));
            } else {
                out.push_str(&format!("{:indent$}{line}\n", ""));
            }
        }
    }
    let count = |s| checks.iter().filter(|c| c.status == s).count();
    out.push_str(&format!(
        "{} checks: {} ok, {} warning(s), {} failed\n",
        checks.len(),
        count(Status::Pass),
        count(Status::Warn),
        count(Status::Fail)
    ));
    out
}

/// `doctor --json`.
#[derive(Serialize)]
struct Answer<'a> {
    ok: bool,
    checks: &'a [Check],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_lines_within_width_and_splits_long_words() {
        let text = format!("short words then {} end", "x".repeat(130));
        for line in wrap(&text, 58) {
            assert!(line.chars().count() <= 58, "{line}");
        }
        assert_eq!(wrap("", 10), vec![String::new()]);
        assert_eq!(wrap("a b c", 3), vec!["a b", "c"]);
    }

    #[test]
    fn table_is_at_most_80_columns() {
        let checks = vec![
            Check::pass("git", "git version 2.43.0"),
            Check::not(
                "hooks",
                Status::Fail,
                format!(
                    "disableAllHooks is true in /{}",
                    "very-long-dir/".repeat(12)
                ),
                "remove it",
            ),
        ];
        let t = table(&checks);
        for line in t.lines() {
            assert!(line.chars().count() <= WIDTH, "{line:?}");
        }
        assert!(t.contains("FAIL  hooks"));
        assert!(t.contains("fix: remove it"));
        assert!(t.ends_with("2 checks: 1 ok, 0 warning(s), 1 failed\n"));
    }
}
