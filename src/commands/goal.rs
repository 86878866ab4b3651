//! `specrun goal`: prepare Claude Code's native `/goal` driver. Probes `claude --version`
//! (bounded, never hangs) and the four settings files, then prints the condition, its
//! length against the limit, readiness and the recommended driver. Readiness is data:
//! the exit code is 0 whatever it says.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cli::GoalArgs;
use crate::error::Result;
use crate::exec::Exec;
use crate::facts::{self, StateRead};
use crate::goal::{
    self, ClaudeProbe, GoalFacts, LengthStatus, Readiness, SettingsContent, SettingsFile,
};
use crate::output;
use crate::project::Project;
use crate::state::View;

/// `claude --version` gets this long before it is killed.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Overrides the managed settings path (tests; unusual installs).
pub const MANAGED_SETTINGS_ENV: &str = "SPECRUN_MANAGED_SETTINGS";

pub fn run(project: &Project, args: GoalArgs) -> Result<i32> {
    let ex = Exec::existing(project, args.spec.spec.as_deref())?;
    let (spec, loaded) = (&ex.spec, ex.tasks()?);
    let state = facts::read_state(&spec.state_path());
    let state_doc = match &state {
        StateRead::Valid(doc) => Some(doc),
        _ => None,
    };
    let counts = loaded.list.counts();
    let facts = GoalFacts {
        spec_name: spec.name.clone(),
        completed: counts.completed,
        total: counts.total,
        remaining: loaded
            .list
            .tasks
            .iter()
            .filter(|t| !t.checked)
            .map(|t| format!("{} {}", t.label(), t.title))
            .collect(),
        last_verifier: state_doc
            .and_then(|d| d.pointer("/verificationBlocks/execution/command"))
            .and_then(Value::as_str)
            .map(str::to_string),
        max_turns: args
            .max_turns
            .or_else(|| state_doc.map(|d| View(d).max_global_iterations()))
            .unwrap_or(goal::DEFAULT_MAX_TURNS),
    };
    let condition = goal::build_condition(&facts);
    let mut readiness = probe_readiness(project);
    let (driver, why) = goal::recommend_driver(&readiness, &condition.length);
    readiness.reasons.push(why);

    let mut warnings = std::mem::take(&mut readiness.warnings);
    match condition.length.status {
        LengthStatus::WithinLimit => {}
        LengthStatus::Compressed => warnings.push(format!(
            "the condition was shortened to fit Claude Code's {}-character /goal limit",
            goal::CONDITION_LIMIT
        )),
        LengthStatus::OverLimit => warnings.push(format!(
            "the condition is {} characters, over Claude Code's {}-character /goal limit: /goal will refuse it",
            condition.length.chars,
            goal::CONDITION_LIMIT
        )),
    }
    // The goal cannot be met while the execution cannot run; say so before it is set.
    match &state {
        StateRead::Absent => warnings.push(format!(
            "spec {} has no execution state: run `specrun state init --spec {}` before setting the goal",
            spec.name, spec.name
        )),
        StateRead::Invalid(e) => warnings.push(format!(
            "the execution state cannot be read ({e}): the guard and the task verbs will refuse it"
        )),
        StateRead::Valid(doc) => {
            let v = View(doc);
            if v.halt().is_some() {
                warnings.push(format!(
                    "spec {} is halted ({}): the goal cannot be met until a person runs `{}`",
                    spec.name,
                    v.halt_reason().unwrap_or("no reason recorded"),
                    crate::state::resume_command(&spec.name, v)
                ));
            } else if let Some(phase @ ("completed" | "cancelled")) = v.phase() {
                warnings.push(format!(
                    "spec {} is {phase}: the guard no longer drives it",
                    spec.name
                ));
            }
        }
    }
    if counts.total == 0 {
        warnings.push(format!(
            "{} has no tasks: the goal can be met only after tasks are planned",
            loaded.path.display()
        ));
    }
    output::json_pretty(&json!({
        "slashCommand": format!("/goal {}", condition.text),
        "condition": condition.text,
        "conditionLength": condition.length,
        "readiness": readiness,
        "recommendedDriver": driver,
        "evidenceProtocol": goal::evidence_protocol(&spec.name),
        "warnings": warnings,
    }));
    Ok(0)
}

/// Readiness of this machine and project for `/goal` (shared with `doctor`).
pub fn probe_readiness(project: &Project) -> Readiness {
    let probe = probe_claude(PROBE_TIMEOUT);
    let settings = read_settings(project);
    goal::judge_readiness(&probe, &settings)
}

/// The settings files Claude Code reads, in its order of precedence (lowest first).
pub fn settings_paths(project: &Project) -> Vec<(&'static str, PathBuf)> {
    let mut paths = Vec::new();
    let config_dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")));
    if let Some(dir) = config_dir {
        paths.push(("user", dir.join("settings.json")));
    }
    let dot_claude = project.root.join(".claude");
    paths.push(("project", dot_claude.join("settings.json")));
    paths.push(("local", dot_claude.join("settings.local.json")));
    paths.push(("managed", managed_settings_path()));
    paths
}

fn managed_settings_path() -> PathBuf {
    if let Some(p) = std::env::var_os(MANAGED_SETTINGS_ENV) {
        return PathBuf::from(p);
    }
    if cfg!(target_os = "macos") {
        PathBuf::from("/Library/Application Support/ClaudeCode/managed-settings.json")
    } else {
        PathBuf::from("/etc/claude-code/managed-settings.json")
    }
}

pub fn read_settings(project: &Project) -> Vec<SettingsFile> {
    settings_paths(project)
        .into_iter()
        .map(|(scope, path)| SettingsFile {
            scope,
            content: read_settings_file(&path),
            path: path.display().to_string(),
        })
        .collect()
}

fn read_settings_file(path: &Path) -> SettingsContent {
    let bytes = match crate::store::read_user_file(path, "settings file") {
        Ok(b) => b,
        Err(crate::error::Error::Missing { .. }) => return SettingsContent::Absent,
        Err(e) => return SettingsContent::Malformed(e.to_string()),
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(doc @ Value::Object(_)) => SettingsContent::Parsed(doc),
        Ok(_) => SettingsContent::Malformed("not a JSON object".into()),
        Err(e) => SettingsContent::Malformed(format!("not valid JSON: {e}")),
    }
}

/// The first executable `name` on PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Run `claude --version`, killing it (and its process group) after `timeout`. Output goes
/// to temporary files, not pipes, so a grandchild holding a pipe open cannot hang us.
pub fn probe_claude(timeout: Duration) -> ClaudeProbe {
    let Some(bin) = find_on_path("claude") else {
        return ClaudeProbe::NotOnPath;
    };
    let (Ok(mut out), Ok(mut err)) = (tempfile::tempfile(), tempfile::tempfile()) else {
        return ClaudeProbe::Failed("cannot create a temporary file".into());
    };
    let (Ok(out_w), Ok(err_w)) = (out.try_clone(), err.try_clone()) else {
        return ClaudeProbe::Failed("cannot create a temporary file".into());
    };
    let mut cmd = Command::new(&bin);
    cmd.arg("--version")
        .stdin(Stdio::null())
        .stdout(out_w)
        .stderr(err_w);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return ClaudeProbe::Failed(format!("cannot run {}: {e}", bin.display())),
    };
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= timeout => {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                return ClaudeProbe::TimedOut {
                    seconds: timeout.as_secs(),
                };
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return ClaudeProbe::Failed(e.to_string()),
        }
    };
    let read = |f: &mut std::fs::File| {
        use std::io::{Read, Seek};
        let mut s = String::new();
        let _ = f.rewind();
        let _ = f.take(64 * 1024).read_to_string(&mut s);
        s
    };
    let stdout = read(&mut out);
    let stderr = read(&mut err);
    if !status.success() {
        let detail = stderr.trim();
        return ClaudeProbe::Failed(if detail.is_empty() {
            format!("exited with {status}")
        } else {
            format!(
                "exited with {status}: {}",
                detail.lines().next().unwrap_or("")
            )
        });
    }
    ClaudeProbe::Output(format!("{stdout}\n{stderr}"))
}

/// SIGKILL the process group `pgid` (the probe's children included).
fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
