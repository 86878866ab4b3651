//! Running a verification command and recording its evidence (docs/design.md#evidence), for
//! `verify run` and `group merge`: the command runs in its own process group with its output
//! streamed to our stderr, and the record is bound to the working-tree fingerprint it
//! started from.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::evidence::criteria;
use crate::evidence::program;
use crate::evidence::testlog::Runner;
use crate::evidence::verify::{self, OutputTail, RunRecord, Slot, TreeMethod};
use crate::io::events::{self, By, Event};
use crate::io::output;
use crate::io::process::{self, Group, KILL_GRACE};
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::model::plan::{verify_of, Frozen};
use crate::model::state::{self, EvidenceRecord, Reading, State};
use crate::model::tasks_file;

/// Exit code of a command stopped by `--timeout` (as coreutils `timeout`).
pub(crate) const TIMEOUT_EXIT: i32 = 124;

/// What `verify run` runs, and how it relates to the task's own Verify command.
pub(crate) struct RunPlan {
    command: String,
    /// The task's Verify command (task slots only).
    own_verify: Option<String>,
    /// A person's reason for counting another command as the task's evidence.
    accepted_other: Option<String>,
}

/// Choose the command: `--command`, else (for a task) its Verify command. Another command
/// than the task's Verify is run and recorded, but counts only with `--accept-other`, which
/// a person gives from their own shell.
pub(crate) fn plan_run(
    spec: &Spec,
    slot: &Slot,
    command: Option<String>,
    accept_other: Option<String>,
) -> Result<RunPlan> {
    let (own_verify, line) = match slot {
        Slot::Task(id) => {
            let loaded = tasks_file::load(&spec.tasks_path())?;
            let task = loaded.find(id)?;
            // The frozen plan's Verify runs, not a rewritten one.
            let state = state::read_lenient(&spec.state_path()).ok().flatten();
            let frozen = state.as_ref().map_or(Frozen::None, State::frozen_plan);
            (verify_of(frozen, task).map(str::to_string), task.line_start)
        }
        Slot::Phase(_) => (None, 0),
    };
    let command = match (command, &own_verify, slot) {
        (Some(c), _, _) => c,
        (None, Some(v), _) => v.clone(),
        // Not an invitation to name any command as the task's own check: the plan lacks it.
        (None, None, Slot::Task(id)) => {
            return Err(Error::Usage(format!(
                "task {id} has no **Verify** in {} (line {line}): add a line `  - **Verify**: <the command that shows it done, in backticks>` under the task, then run `specrun verify run --task {}` again",
                spec.tasks_path().display(),
                crate::support::shell::word(id)
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
        Some(r) => {
            crate::claude::roles::person_only(crate::claude::roles::Decision::AcceptOther)?;
            Some(r)
        }
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
pub(crate) fn record_run(
    project: &Project,
    spec: &Spec,
    slot: &Slot,
    plan: &RunPlan,
    timeout: Option<u64>,
) -> Result<(RunRecord, EvidenceRecord)> {
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
    // Watched from before the first fingerprint to after the last: a change in between, by
    // anyone, is seen even when the tree is put back before the end.
    let watched = watched_dirs(&project.tree);
    let watch = watched
        .as_ref()
        .and_then(|dirs| crate::io::watch::start(&project.tree, dirs).ok());
    let before = verify::fingerprint_excluding(project, spec, &excluded_paths)?;
    if before.method == TreeMethod::Files {
        output::note(&format!(
            "{} is not a git work tree: the evidence is bound to a hash of its files (honouring .gitignore)",
            project.tree.display()
        ));
    }
    let runners = test_runners(&project.tree, command);
    let started_at = crate::io::events::now_rfc3339();
    let outcome = execute(&project.tree, command, timeout, true, &[], &runners)?;
    let after = verify::fingerprint_excluding(project, spec, &excluded_paths)?;
    let touched = match (watch, &watched) {
        (Some(w), Some(dirs)) => touched_paths(project, spec, &excluded_paths, dirs, w.finish()),
        _ => {
            if before.method == TreeMethod::Git {
                output::note("the tree could not be watched while the command ran: only the fingerprints before and after bind the record");
            }
            Vec::new()
        }
    };
    if !touched.is_empty() {
        output::warn(&format!(
            "the tree changed while the command ran ({}): the record is stale",
            touched
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
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
        touched,
    };
    // The tests the output named go beside the state (a run can name thousands); the
    // record keeps the counts and where they are.
    let tests = criteria::write_results(spec, slot, &record.started_at, &outcome.tests);
    let task = own_verify_fields(slot, plan, &record.started_at);
    let own = task.as_ref().map(|t| t.own_verify);
    let stored = serde_json::to_value(Stored {
        run: record.fields(),
        tests,
        task,
        worktree: verify::worktree_name(project, spec),
    })
    .expect("an evidence record serializes");
    let stored = EvidenceRecord::from_value(stored).expect("an evidence record is an object");
    let joined = joined_baseline(spec, slot, &record, &outcome.tests);
    if let Some(digest) = joined.as_ref().and_then(|k| k.get("digest")?.as_str()) {
        crate::model::record::allow_baseline(&project.root, &spec.name, digest)?;
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
        if let Some(kept) = joined {
            doc.test_baseline = Some(kept);
        }
        Ok((Some(doc), ()))
    })?;
    let event = Event::Verify {
        spec: &spec.name,
        slot: &slot.describe(),
        exit_code: record.exit_code,
        timed_out: record.timed_out,
        tree: &record.before.tree,
        own_verify: own,
        accepted_other: plan.accepted_other.as_deref(),
    };
    if let Err(e) = events::append(project, By::Nobody, &event) {
        output::warn(&format!(
            "evidence recorded, but the event log was not: {e}"
        ));
    }
    if runners.is_empty() {
        output::note(&format!(
            "`{command}` runs no test runner ({}): its output is not read for test results",
            crate::evidence::testlog::SUPPORTED
        ));
    } else {
        criteria::note_results(&outcome.tests);
    }
    for name in &outcome.removed {
        output::note(&format!(
            "{name} was removed from the command's environment (it changes how the runtime loads code); a Verify that needs it sets it in the command: `{name}=… <command>`"
        ));
    }
    Ok((record, stored))
}

/// A passing run of exactly the plan's final check in the execution slot: the tests it
/// passed join the baseline (`baseline_store::join`); the new `testBaseline`, if any.
fn joined_baseline(
    spec: &Spec,
    slot: &Slot,
    record: &RunRecord,
    report: &crate::evidence::testlog::Report,
) -> Option<serde_json::Map<String, Value>> {
    if *slot != Slot::Phase("execution".into()) || record.exit_code != 0 || record.timed_out {
        return None;
    }
    let state = state::read_lenient(&spec.state_path()).ok().flatten()?;
    let list = tasks_file::load(&spec.tasks_path()).ok()?.list;
    let check = crate::model::plan::final_check_of(state.frozen_plan(), &list)?;
    if check.command.trim() != record.command.trim() {
        return None;
    }
    match crate::evidence::baseline_store::join(spec, &state, report)? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// The directories holding the tree's files (tracked, and untracked but not ignored), the
/// root among them: what the watch covers. `None` outside git.
fn watched_dirs(tree: &std::path::Path) -> Option<std::collections::BTreeSet<String>> {
    let out = crate::io::git::run(
        tree,
        &[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
        &[],
    )
    .ok()?;
    let mut dirs = std::collections::BTreeSet::from([String::new()]);
    for file in out.split('\0') {
        let mut at = file.len();
        while let Some(slash) = file[..at].rfind('/') {
            if !dirs.insert(file[..slash].to_string()) {
                break;
            }
            at = slash;
        }
    }
    Some(dirs)
}

/// What the watch saw that belongs to the fingerprinted tree: not the bookkeeping (nor its
/// temp files), not the paths left out, not what git ignores, not a directory itself (its files are named).
/// An overflow of the kernel's queue is a change of unknown paths.
fn touched_paths(
    project: &Project,
    spec: &Spec,
    excluded: &[String],
    watched: &std::collections::BTreeSet<String>,
    seen: crate::io::watch::Seen,
) -> Vec<String> {
    const KEPT: usize = 20;
    let mut left_out = verify::bookkeeping_paths(project, spec);
    left_out.extend(excluded.iter().cloned());
    let under =
        |p: &str, base: &str| p == base || p.strip_prefix(base).is_some_and(|r| r.starts_with('/'));
    let candidates: Vec<String> = seen
        .paths
        .into_iter()
        .filter(|p| !left_out.iter().any(|b| under(p, b)))
        // The store's temp files of the bookkeeping (a sibling's state write in flight):
        // the fingerprint leaves them out too.
        .filter(|p| !crate::io::project::is_bookkeeping_temp(p, &left_out))
        .filter(|p| !watched.contains(p) && !project.tree.join(p).is_dir())
        .collect();
    let mut out: Vec<String> = if candidates.is_empty() {
        Vec::new()
    } else {
        match crate::io::git::ignored(&project.tree, &candidates) {
            Ok(ignored) => candidates
                .into_iter()
                .filter(|p| !ignored.contains(p))
                .collect(),
            Err(_) => candidates,
        }
    };
    out.truncate(KEPT);
    if seen.overflow {
        out.push("(more changes than the watch could name)".into());
    }
    out
}

/// The test runners `command` runs (`evidence::program`), following a package script to
/// the tree's package.json.
fn test_runners(tree: &std::path::Path, command: &str) -> std::collections::BTreeSet<Runner> {
    let scripts: Option<Value> = store::read_optional(&tree.join("package.json"))
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|mut v| v.get_mut("scripts").map(Value::take));
    let script = |name: &str| {
        scripts
            .as_ref()
            .and_then(|s| s.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    program::runners(command, &script)
}

/// Variables that change which code a runtime loads before the tests do (a preload, a
/// search path, a startup file, an agent): removed from a verify command's environment
/// unless the command sets them itself. The list and why: DESIGN-NOTES "A run is
/// genuine". Any `DYLD_…` goes too.
pub(crate) const LOADER_VARIABLES: &[&str] = &[
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONINSPECT",
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "LD_PRELOAD",
    "LD_AUDIT",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "RUBYOPT",
    "RUBYLIB",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUSTFLAGS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "GOFLAGS",
    "BASH_ENV",
    "ENV",
];

/// Whether `name` is removed from a verify command's environment.
fn is_loader_variable(name: &str) -> bool {
    LOADER_VARIABLES.contains(&name) || name.starts_with("DYLD_")
}

/// The evidence record `verify run` stores: the run's fields, then what it adds.
#[derive(Serialize)]
struct Stored<'a> {
    #[serde(flatten)]
    run: verify::RecordFields<'a>,
    tests: Value,
    #[serde(flatten)]
    task: Option<TaskFields<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<String>,
}

/// A task slot's record also names the task's Verify command, whether this run was it, and
/// a person's acceptance of another command.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskFields<'a> {
    verify_command: Option<&'a str>,
    own_verify: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    accepted_other: Option<Accepted<'a>>,
}

#[derive(Serialize)]
struct Accepted<'a> {
    reason: &'a str,
    at: &'a str,
}

/// For a task slot: the fields of `TaskFields`; warn when the record will not count
/// (`None` for a phase).
fn own_verify_fields<'a>(slot: &Slot, plan: &'a RunPlan, at: &'a str) -> Option<TaskFields<'a>> {
    let Slot::Task(id) = slot else {
        return None;
    };
    // A task without Verify has no own check: a command given for it is never "its own".
    let own = plan
        .own_verify
        .as_deref()
        .is_some_and(|v| v == plan.command.trim());
    if let Some(reason) = &plan.accepted_other {
        output::warn(&format!(
            "task {id}: `{}` is not its Verify command; counted as its evidence because you accepted it: {reason}",
            plan.command
        ));
    } else if plan.own_verify.is_none() {
        output::warn(&format!(
            "task {id} has no **Verify**: `{}` is recorded as its evidence, but it is not a Verify the plan gives; write the task's check into tasks.md as its **Verify**",
            plan.command
        ));
    } else if !own {
        output::warn(&format!(
            "task {id}: `{}` is not its Verify command `{}`; this evidence is recorded but does not count for the task (run `specrun verify run --task {}`; counting another command is a person's decision: {})",
            plan.command,
            plan.own_verify.as_deref().unwrap_or(""),
            crate::support::shell::word(id),
            crate::claude::roles::for_person(&format!(
                "specrun verify run --task {} --command <C> --accept-other \"<reason>\"",
                crate::support::shell::word(id)
            ))
        ));
    }
    Some(TaskFields {
        verify_command: plan.own_verify.as_deref(),
        own_verify: own,
        accepted_other: plan
            .accepted_other
            .as_deref()
            .map(|reason| Accepted { reason, at }),
    })
}

/// What the command did.
pub(crate) struct Outcome {
    pub(crate) exit_code: i32,
    pub(crate) timed_out: bool,
    pub(crate) duration: Duration,
    pub(crate) tail: String,
    pub(crate) tests: crate::evidence::testlog::Report,
    /// The loader variables that were set and removed from the command's environment.
    pub(crate) removed: Vec<String>,
}

/// `execute` without echoing the output, with `env` added: a run the person does not watch
/// (the tests at the start commit, `red_green_run`).
pub(crate) fn execute_in(
    root: &std::path::Path,
    command: &str,
    timeout: Option<Duration>,
    env: &[(String, std::path::PathBuf)],
) -> Result<Outcome> {
    let runners = test_runners(root, command);
    execute(root, command, timeout, false, env, &runners)
}

/// Run `sh -c command` in its own process group, stream its output to our stderr (when
/// `echo`), keep the last 4 KiB, and stop the whole group at the timeout — and whatever of
/// the group is still running once the command itself has exited.
fn execute(
    root: &std::path::Path,
    command: &str,
    timeout: Option<Duration>,
    echo: bool,
    env: &[(String, std::path::PathBuf)],
    runners: &std::collections::BTreeSet<Runner>,
) -> Result<Outcome> {
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
    let declared = program::assigned(command);
    let mut removed = Vec::new();
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        if is_loader_variable(name) && !declared.contains(name) {
            cmd.env_remove(name);
            removed.push(name.to_string());
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    // `spawn` drops `cmd`: our copies of the pipe's write end close, or the reader never
    // sees EOF.
    let mut group = Group::spawn(cmd).map_err(|e| Error::io("sh", "start", e))?;

    let tail = Arc::new(Mutex::new(OutputTail::new(verify::OUTPUT_TAIL_BYTES)));
    let parser = Arc::new(Mutex::new(crate::evidence::testlog::Parser::for_runners(
        runners.clone(),
    )));
    let (pump_done_tx, pump_done) = mpsc::channel();
    {
        let tail = Arc::clone(&tail);
        let parser = Arc::clone(&parser);
        let mut reader = reader;
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if echo {
                            crate::io::output::relay(&buf[..n]);
                        }
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
        removed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::verify::Fingerprint;

    #[test]
    fn a_task_record_is_stored_in_its_documented_key_order() {
        let fp = |tree: &str| Fingerprint {
            tree: tree.into(),
            method: TreeMethod::Git,
        };
        let record = RunRecord {
            command: "make".into(),
            exit_code: 0,
            started_at: "2026-01-01T00:00:00Z".into(),
            duration_ms: 5,
            timed_out: false,
            output_tail: "ok".into(),
            task_id: Some("1.2".into()),
            before: fp("t1"),
            after: fp("t2"),
            excluded_paths: vec!["b.rs".into()],
            touched: Vec::new(),
        };
        let plan = RunPlan {
            command: "make".into(),
            own_verify: Some("make test".into()),
            accepted_other: Some("same suite".into()),
        };
        let stored = Stored {
            run: record.fields(),
            tests: Value::Null,
            task: own_verify_fields(&Slot::Task("1.2".into()), &plan, "at"),
            worktree: Some("1.2".into()),
        };
        assert_eq!(
            serde_json::to_string(&stored).unwrap(),
            r#"{"command":"make","exitCode":0,"startedAt":"2026-01-01T00:00:00Z","durationMs":5,"tree":"t1","treeMethod":"git","outputTail":"ok","timedOut":false,"taskId":"1.2","excludedPaths":["b.rs"],"treeChanged":true,"treeAfter":"t2","tests":null,"verifyCommand":"make test","ownVerify":false,"acceptedOther":{"reason":"same suite","at":"at"},"worktree":"1.2"}"#
        );
        let phase = Stored {
            task: own_verify_fields(&Slot::Phase("execution".into()), &plan, "at"),
            worktree: None,
            ..stored
        };
        let text = serde_json::to_string(&phase).unwrap();
        assert!(text.ends_with(r#""tests":null}"#), "{text}");
    }
}
