//! Notifications: on a halt and on completion, run the user's command (`SPECRUN_NOTIFY`, else
//! `notify` in `.specrun/config.json`) with the event as JSON on stdin.
//!
//! Never in the way of the caller: `send` starts `specrun notify-run` detached (its own
//! process group, no stdout or stderr shared with a hook's pipe), hands it the event and
//! returns without waiting. `notify-run` runs the command and kills its process group
//! after the time bound, so a hanging command neither blocks a hook's answer nor lives on.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::error::ExitStatus;

use crate::io::events::{self, By, Event, Notify};
use crate::io::process::Group;
use crate::io::project::{self, Project};
use crate::io::store;

/// The environment variable naming the notify command (wins over the config file).
pub(crate) const ENV: &str = "SPECRUN_NOTIFY";
/// How long a notify command may run before its process group is killed.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of an event `notify-run` reads from its stdin.
const MAX_EVENT: u64 = 1 << 20;
/// Overrides `DEFAULT_TIMEOUT` (milliseconds).
pub(crate) const TIMEOUT_ENV: &str = "SPECRUN_NOTIFY_TIMEOUT_MS";

fn timeout() -> Duration {
    std::env::var(TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// The notify command configured for `project`, if any. A config file that cannot be
/// read (a FIFO, a device, too large, not JSON) is an error naming it, never a wait.
pub(crate) fn command(project: &Project) -> Result<Option<String>, String> {
    if let Some(cmd) = std::env::var(ENV).ok().filter(|c| !c.trim().is_empty()) {
        return Ok(Some(cmd));
    }
    let path = project::config_path(&project.root);
    let bytes = match store::read_prefix(&path, project::MAX_CONFIG_BYTES, true) {
        Ok(None) => return Ok(None),
        Ok(Some(bytes)) => bytes,
        Err(e) => return Err(e.to_string()),
    };
    let doc = store::parse_json(&path, &bytes).map_err(|e| e.to_string())?;
    Ok(doc
        .get("notify")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .map(str::to_string))
}

/// The event a notify command receives on stdin (docs/design.md#config).
#[derive(Debug, Serialize)]
pub(crate) struct Message<'a> {
    /// `halt` or `completed`.
    pub event: &'a str,
    pub spec: &'a str,
    pub message: &'a str,
    pub at: String,
    #[serde(flatten)]
    pub about: About<'a>,
}

/// What the notify event names last: the rule that decided, or the task whose verb halted.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum About<'a> {
    Rule { rule: &'a str },
    Task { task: &'a str },
}

/// The event a notify command receives: `{"event": "halt"|"completed", "spec", …}`.
pub(crate) fn event<'a>(
    kind: &'a str,
    spec: &'a str,
    message: &'a str,
    about: About<'a>,
) -> Message<'a> {
    Message {
        event: kind,
        spec,
        message,
        at: events::now_rfc3339(),
        about,
    }
}

/// Start `command` (the one in force, or why none could be read) for `event` and return
/// at once; trouble starting it is recorded in events.jsonl, never raised.
pub(crate) fn send(
    project: &Project,
    command: Result<Option<String>, String>,
    event: &Message<'_>,
) {
    let started = match command {
        Ok(None) => return,
        Ok(Some(cmd)) => spawn_runner(&project.root, &cmd, event).map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    if let Err(error) = started {
        let line = Event::Notify(Notify::NotStarted {
            ok: false,
            error: &error,
        });
        let _ = events::append(project, By::Nobody, &line);
    }
}

fn spawn_runner(root: &Path, cmd: &str, event: &Message<'_>) -> std::io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut runner = Command::new(exe);
    runner
        .arg("--cwd")
        .arg(root)
        .arg("notify-run")
        .arg("--timeout-ms")
        .arg(timeout().as_millis().to_string())
        .arg(cmd);
    let mut runner = Group::spawn(quiet(runner, root))?;
    // An event is far smaller than a pipe's buffer: this write does not wait for the runner.
    if let Some(mut stdin) = runner.stdin.take() {
        stdin.write_all(serde_json::to_string(event)?.as_bytes())?;
    }
    Ok(())
}

/// `specrun notify-run`: run `cmd` with stdin's event, kill its group after `timeout`,
/// and record in events.jsonl how it ended.
pub(crate) fn run(project: &Project, cmd: &str, timeout: Duration) -> ExitStatus {
    // The event, written by `send`: small, but read within a bound all the same.
    let input = store::read_stdin("notify event", MAX_EVENT).unwrap_or_default();
    let started = Instant::now();
    let outcome = run_bounded(&project.root, cmd, input.as_bytes(), timeout);
    let duration_ms = started.elapsed().as_millis() as u64;
    let error = outcome.as_ref().err().map(ToString::to_string);
    let line = match (&outcome, &error) {
        (Ok(Ended::Exited(code)), _) => Notify::Exited {
            ok: *code == Some(0),
            command: cmd,
            duration_ms,
            exit_code: *code,
            timed_out: false,
        },
        (Ok(Ended::Killed), _) => Notify::Killed {
            ok: false,
            command: cmd,
            duration_ms,
            timed_out: true,
        },
        (Err(_), e) => Notify::Failed {
            ok: false,
            command: cmd,
            duration_ms,
            error: e.as_deref().unwrap_or_default(),
        },
    };
    let ok = matches!(line, Notify::Exited { ok: true, .. });
    let _ = events::append(project, By::Nobody, &Event::Notify(line));
    ExitStatus::yes_no(ok)
}

/// `cmd` to run in `root` with stdin piped and output discarded (nothing may hold a hook's
/// stdout open); `Group::spawn` gives it a process group of its own.
fn quiet(mut cmd: Command, root: &Path) -> Command {
    cmd.current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

enum Ended {
    Exited(Option<i32>),
    Killed,
}

fn run_bounded(root: &Path, cmd: &str, input: &[u8], timeout: Duration) -> std::io::Result<Ended> {
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(cmd);
    let mut group = Group::spawn(quiet(sh, root))?;
    if let Some(mut stdin) = group.stdin.take() {
        // A command that never reads its stdin must not stall us: write from a thread.
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    match group.wait(Some(timeout))? {
        Some(status) => Ok(Ended::Exited(status.code())),
        None => {
            group.kill();
            let _ = group.wait(None);
            Ok(Ended::Killed)
        }
    }
}
