//! Running a verification command and recording its evidence (docs/design.md#evidence), for
//! `verify run` and `group merge`: the command runs in its own process group with its output
//! streamed to our stderr, and the record is bound to the working-tree fingerprint it
//! started from.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::evidence::criteria;
use crate::evidence::verify::{self, OutputTail, RunRecord, Slot, TreeMethod};
use crate::io::output;
use crate::io::process::{self, Group, KILL_GRACE};
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::model::state::{self, Reading, State};
use crate::model::tasks_file;

/// Exit code of a command stopped by `--timeout` (as coreutils `timeout`).
pub const TIMEOUT_EXIT: i32 = 124;

/// What `verify run` runs, and how it relates to the task's own Verify command.
pub struct RunPlan {
    command: String,
    /// The task's Verify command (task slots only).
    own_verify: Option<String>,
    /// A person's reason for counting another command as the task's evidence.
    accepted_other: Option<String>,
}

/// Set by Claude Code in the environment of every command it runs.
const CLAUDE_CODE_ENV: &str = "CLAUDECODE";

/// Choose the command: `--command`, else (for a task) its Verify command. Another command
/// than the task's Verify is run and recorded, but counts only with `--accept-other`, which
/// a person gives from their own shell.
pub fn plan_run(
    spec: &Spec,
    slot: &Slot,
    command: Option<String>,
    accept_other: Option<String>,
) -> Result<RunPlan> {
    let own_verify = match slot {
        Slot::Task(id) => {
            let loaded = tasks_file::load(&spec.tasks_path())?;
            loaded.find(id)?.verify_command().map(str::to_string)
        }
        Slot::Phase(_) => None,
    };
    let command = match (command, &own_verify, slot) {
        (Some(c), _, _) => c,
        (None, Some(v), _) => v.clone(),
        (None, None, Slot::Task(id)) => {
            return Err(Error::Usage(format!(
                "task {id} has no **Verify** command in {}: give the command with --command C",
                spec.tasks_path().display()
            )))
        }
        (None, None, Slot::Phase(_)) => {
            return Err(Error::Usage(
                "--command is required for a phase: give the full check to run, e.g. --command 'cargo test'".into(),
            ))
        }
    };
    let is_own = own_verify.as_deref().is_none_or(|v| v == command.trim());
    let accepted_other = match accept_other.map(|r| r.trim().to_string()) {
        None => None,
        Some(r) if r.is_empty() => {
            return Err(Error::Usage(
                "--accept-other needs a reason: say why another command proves the task".into(),
            ))
        }
        Some(_) if is_own => {
            return Err(Error::Usage(
                "--accept-other is for a command other than the task's Verify; this is its Verify command".into(),
            ))
        }
        Some(_) if std::env::var_os(CLAUDE_CODE_ENV).is_some() => {
            return Err(Error::Refused {
                message: "--accept-other is a person's decision: run it from your own shell, not inside Claude Code (CLAUDECODE is set)".into(),
            })
        }
        Some(r) => Some(r),
    };
    Ok(RunPlan {
        command,
        own_verify,
        accepted_other,
    })
}

/// The state document, which must already exist: evidence is part of an execution that
/// `state init` starts, and creating a state here would hide a wrong `--spec`.
fn read_existing_state(spec: &Spec) -> Result<State> {
    let path = spec.state_path();
    state::read(&path, Reading::Checked)?.ok_or_else(|| Error::Refused {
        message: format!(
            "no state file at {}: run `specrun state init {}` first",
            path.display(),
            crate::support::shell::spec_flag(&spec.name)
        ),
    })
}

/// Run the planned command in the tree the project stands in and record the evidence in
/// `slot`; returns the run and the record as stored. The command's output streams to stderr.
pub fn record_run(
    project: &Project,
    spec: &Spec,
    slot: &Slot,
    plan: &RunPlan,
    timeout: Option<u64>,
) -> Result<(RunRecord, Value)> {
    let command = plan.command.as_str();
    if command.trim().is_empty() {
        return Err(Error::Usage(
            "--command is empty: give the command to run".into(),
        ));
    }
    let timeout = match timeout {
        Some(0) => {
            return Err(Error::Usage(
                "--timeout must be at least 1 second".to_string(),
            ))
        }
        other => other.map(Duration::from_secs),
    };
    // Refuse before running: a long test run must not end in "nowhere to record".
    read_existing_state(spec)?;
    // A member of a parallel group is bound to the tree minus its siblings' Files: they are
    // declared independent and edit the tree at the same time.
    // A member in its own worktree sees no sibling's edits: nothing is left out.
    let excluded_paths = match slot {
        Slot::Task(_) if project.in_worktree() => Vec::new(),
        Slot::Task(id) => verify::sibling_files(&tasks_file::load(&spec.tasks_path())?.list, id),
        Slot::Phase(_) => Vec::new(),
    };
    let before = verify::fingerprint_excluding(project, spec, &excluded_paths)?;
    if before.method == TreeMethod::Files {
        output::note(&format!(
            "{} is not a git work tree: the evidence is bound to a hash of its files (honouring .gitignore)",
            project.tree.display()
        ));
    }
    let started_at = crate::io::events::now_rfc3339();
    let outcome = execute(&project.tree, command, timeout)?;
    let after = verify::fingerprint_excluding(project, spec, &excluded_paths)?;
    let record = RunRecord {
        command: command.to_string(),
        exit_code: outcome.exit_code,
        started_at,
        duration_ms: outcome.duration.as_millis() as u64,
        timed_out: outcome.timed_out,
        output_tail: outcome.tail,
        task_id: match slot {
            Slot::Task(id) => Some(id.clone()),
            Slot::Phase(_) => None,
        },
        before,
        after,
        excluded_paths,
    };
    let mut stored = record.to_json();
    // The tests the output named go beside the state (a run can name thousands); the
    // record keeps the counts and where they are.
    stored["tests"] = criteria::write_results(spec, slot, &record.started_at, &outcome.tests);
    let own = own_verify_fields(&mut stored, slot, plan, &record.started_at);
    if let Some(name) = verify::worktree_name(project, spec) {
        stored["worktree"] = Value::String(name);
    }
    let path = spec.state_path();
    state::update(&path, store::DEFAULT_LOCK_WAIT, |current| {
        let Some(mut doc) = current else {
            return Err(Error::Refused {
                message: format!(
                    "{} disappeared while the command ran; the evidence was not recorded",
                    path.display()
                ),
            });
        };
        verify::put_record(&mut doc, slot, stored.clone());
        Ok((Some(doc), ()))
    })?;
    let event = json!({
        "event": "verify",
        "spec": spec.name,
        "slot": slot.describe(),
        "exitCode": record.exit_code,
        "timedOut": record.timed_out,
        "tree": record.before.tree,
        "ownVerify": own,
        "acceptedOther": plan.accepted_other,
    });
    if let Err(e) = crate::io::events::append(project, event) {
        output::warn(&format!(
            "evidence recorded, but the event log was not: {e}"
        ));
    }
    criteria::note_results(&outcome.tests);
    Ok((record, stored))
}

/// For a task slot: record the task's Verify command, whether this run was it, and a
/// person's acceptance of another command; warn when the record will not count. Returns
/// `ownVerify` (`None` for a phase).
fn own_verify_fields(stored: &mut Value, slot: &Slot, plan: &RunPlan, at: &str) -> Option<bool> {
    let Slot::Task(id) = slot else {
        return None;
    };
    let own = plan
        .own_verify
        .as_deref()
        .is_none_or(|v| v == plan.command.trim());
    stored["verifyCommand"] = json!(plan.own_verify);
    stored["ownVerify"] = json!(own);
    if let Some(reason) = &plan.accepted_other {
        stored["acceptedOther"] = json!({"reason": reason, "at": at});
        output::warn(&format!(
            "task {id}: `{}` is not its Verify command; counted as its evidence because you accepted it: {reason}",
            plan.command
        ));
    } else if !own {
        output::warn(&format!(
            "task {id}: `{}` is not its Verify command `{}`; this evidence is recorded but does not count for the task (run `specrun verify run --task {}`; a person may accept another command with --accept-other \"<reason>\" from their own shell)",
            plan.command,
            plan.own_verify.as_deref().unwrap_or(""),
            crate::support::shell::word(id)
        ));
    }
    Some(own)
}

/// What the command did.
struct Outcome {
    exit_code: i32,
    timed_out: bool,
    duration: Duration,
    tail: String,
    tests: crate::evidence::testlog::Report,
}

/// Run `sh -c command` in its own process group, stream its output to our stderr, keep the
/// last 4 KiB, and stop the whole group at the timeout — and whatever of the group is
/// still running once the command itself has exited.
fn execute(root: &std::path::Path, command: &str, timeout: Option<Duration>) -> Result<Outcome> {
    let (reader, writer) =
        std::io::pipe().map_err(|e| Error::io("<pipe>", "create an output pipe", e))?;
    let writer_for_stderr = writer
        .try_clone()
        .map_err(|e| Error::io("<pipe>", "duplicate an output pipe", e))?;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(root)
        // Unattended runs: a command waiting for input would hang, so it gets none.
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_for_stderr);
    let started = Instant::now();
    // `spawn` drops `cmd`: our copies of the pipe's write end close, or the reader never
    // sees EOF.
    let mut group = Group::spawn(cmd).map_err(|e| Error::io("sh", "start", e))?;

    let tail = Arc::new(Mutex::new(OutputTail::new(verify::OUTPUT_TAIL_BYTES)));
    let parser = Arc::new(Mutex::new(crate::evidence::testlog::Parser::default()));
    let (pump_done_tx, pump_done) = mpsc::channel();
    {
        let tail = Arc::clone(&tail);
        let parser = Arc::clone(&parser);
        let mut reader = reader;
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            let mut stderr = std::io::stderr();
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        // A closed stderr must not stop the draining (the command would block).
                        let _ = stderr.write_all(&buf[..n]);
                        tail.lock().expect("tail lock").push(&buf[..n]);
                        parser.lock().expect("parser lock").feed(&buf[..n]);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = pump_done_tx.send(());
        });
    }

    let mut status = group.wait(timeout);
    let timed_out = matches!(status, Ok(None));
    if timed_out {
        group.stop();
        status = group.wait(None);
    }
    let duration = started.elapsed();
    // Background processes the command left in its group would keep running against the
    // tree after the evidence is recorded (and hold the output pipe open).
    if !timed_out && group.alive() {
        group.stop();
    }
    // A process that left the group may still hold the pipe; do not wait for it forever.
    let _ = pump_done.recv_timeout(KILL_GRACE);
    let status = status.map_err(|e| Error::io("sh", "wait for", e))?;
    let exit_code = if timed_out {
        TIMEOUT_EXIT
    } else {
        status.map_or(1, process::exit_code)
    };
    let tail = tail.lock().expect("tail lock").text();
    let tests = std::mem::take(&mut *parser.lock().expect("parser lock")).finish();
    Ok(Outcome {
        exit_code,
        timed_out,
        duration,
        tail,
        tests,
    })
}
