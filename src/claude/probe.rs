//! What this machine and the project's Claude Code configuration offer, probed at the
//! edge: `claude --version` (bounded, never hangs), the four settings files and programs on
//! PATH. `goal` and `doctor` judge readiness from it (`goal::judge_readiness`), last-mile
//! its optional helpers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::claude::goal::{self, ClaudeProbe, Readiness, SettingsContent, SettingsFile};
use crate::io::process::Group;
use crate::io::project::Project;

/// `claude --version` gets this long before it is killed.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Overrides the managed settings path (tests; unusual installs).
pub(crate) const MANAGED_SETTINGS_ENV: &str = "SPECRUN_MANAGED_SETTINGS";

/// Readiness of this machine and project for `/goal` (shared with `doctor`).
pub(crate) fn probe_readiness(project: &Project) -> Readiness {
    let probe = probe_claude(PROBE_TIMEOUT);
    let settings = read_settings(project);
    goal::judge_readiness(&probe, &settings)
}

/// The settings files Claude Code reads, in its order of precedence (lowest first).
pub(crate) fn settings_paths(project: &Project) -> Vec<(&'static str, PathBuf)> {
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

pub(crate) fn read_settings(project: &Project) -> Vec<SettingsFile> {
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
    let bytes = match crate::io::store::read_user_file(path, "settings file") {
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
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
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
pub(crate) fn probe_claude(timeout: Duration) -> ClaudeProbe {
    let Some(bin) = find_on_path("claude") else {
        return ClaudeProbe::NotOnPath;
    };
    probe_claude_at(&bin, timeout)
}

/// `probe_claude` of the Claude Code at `bin` (`headless run --claude PATH`).
pub(crate) fn probe_claude_at(bin: &Path, timeout: Duration) -> ClaudeProbe {
    let (Ok(mut out), Ok(mut err)) = (tempfile::tempfile(), tempfile::tempfile()) else {
        return ClaudeProbe::Failed("cannot create a temporary file".into());
    };
    let (Ok(out_w), Ok(err_w)) = (out.try_clone(), err.try_clone()) else {
        return ClaudeProbe::Failed("cannot create a temporary file".into());
    };
    let mut cmd = Command::new(bin);
    cmd.arg("--version")
        .stdin(Stdio::null())
        .stdout(out_w)
        .stderr(err_w);
    let mut group = match Group::spawn(cmd) {
        Ok(g) => g,
        Err(e) => return ClaudeProbe::Failed(format!("cannot run {}: {e}", bin.display())),
    };
    let status = match group.wait(Some(timeout)) {
        Ok(Some(status)) => status,
        Ok(None) => {
            group.kill();
            let _ = group.wait(None);
            return ClaudeProbe::TimedOut {
                seconds: timeout.as_secs(),
            };
        }
        Err(e) => return ClaudeProbe::Failed(e.to_string()),
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
