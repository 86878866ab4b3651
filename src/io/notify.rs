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

use serde_json::{json, Value};

use crate::io::events;
use crate::io::process::Group;
use crate::io::project::{self, Project};
use crate::io::store;

/// The environment variable naming the notify command (wins over the config file).
pub const ENV: &str = "SPECRUN_NOTIFY";
/// How long a notify command may run before its process group is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of an event `notify-run` reads from its stdin.
const MAX_EVENT: u64 = 1 << 20;
/// Overrides `DEFAULT_TIMEOUT` (milliseconds).
pub const TIMEOUT_ENV: &str = "SPECRUN_NOTIFY_TIMEOUT_MS";

fn timeout() -> Duration {
    std::env::var(TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// The notify command configured for `project`, if any. A config file that cannot be
/// read (a FIFO, a device, too large, not JSON) is an error naming it, never a wait.
pub fn command(project: &Project) -> Result<Option<String>, String> {
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

/// The event a notify command receives: `{"event": "halt"|"completed", "spec", …}`.
pub fn event(kind: &str, spec: &str, message: &str, extra: Value) -> Value {
    let mut doc =
        json!({"event": kind, "spec": spec, "message": message, "at": events::now_rfc3339()});
    crate::support::json::merge_into(&mut doc, &extra);
    doc
}

/// Start the notify command for `event` and return at once; trouble starting it is
/// recorded in events.jsonl, never raised.
pub fn send(project: &Project, event: &Value) {
    let started = match command(project) {
        Ok(None) => return,
        Ok(Some(cmd)) => spawn_runner(&project.root, &cmd, event).map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    if let Err(e) = started {
        let _ = events::append(project, json!({"event": "notify", "ok": false, "error": e}));
    }
}

fn spawn_runner(root: &Path, cmd: &str, event: &Value) -> std::io::Result<()> {
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
        stdin.write_all(event.to_string().as_bytes())?;
    }
    Ok(())
}

/// `specrun notify-run`: run `cmd` with stdin's event, kill its group after `timeout`,
/// and record in events.jsonl how it ended.
pub fn run(project: &Project, cmd: &str, timeout: Duration) -> i32 {
    // The event, written by `send`: small, but read within a bound all the same.
    let input = store::read_stdin("notify event", MAX_EVENT).unwrap_or_default();
    let started = Instant::now();
    let outcome = run_bounded(&project.root, cmd, input.as_bytes(), timeout);
    let (ok, fields) = match outcome {
        Ok(Ended::Exited(code)) => (
            code == Some(0),
            json!({"exitCode": code, "timedOut": false}),
        ),
        Ok(Ended::Killed) => (false, json!({"timedOut": true})),
        Err(e) => (false, json!({"error": e.to_string()})),
    };
    let mut line = json!({"event": "notify", "ok": ok, "command": cmd,
        "durationMs": started.elapsed().as_millis() as u64});
    crate::support::json::merge_into(&mut line, &fields);
    let _ = events::append(project, line);
    i32::from(!ok)
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
