//! `specrun headless run`: a spec run unattended through `claude -p` (issue 29). The
//! client's version is checked against the supported range, the plugin loaded with
//! `--plugin-dir`, permissions set on the command line (never a prompt), the stream-json
//! read line by line under a wall-clock and a no-progress bound; a hang, a crash or a
//! transient API error is resumed once (`--resume <session>`). Each attempt's `result`
//! (subtype, cost, turns, permission denials) goes to events.jsonl; the exit code is 0
//! only when the spec's state says completed. The report (`specrun report`) is written
//! beside the stream logs, and into `$GITHUB_STEP_SUMMARY` when that is set.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::claude::goal::{parse_version, ClaudeProbe};
use crate::claude::headless::{self, Ending, Line, Next, Outcome, Verdict};
use crate::claude::releases::{self, Support};
use crate::cli::HeadlessRunArgs;
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::io::events::Event;
use crate::io::output;
use crate::io::process::Group;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::model::state::Phase;
use crate::next::facts::{read_typed, StateRead};

/// After the `result` event, how long the client gets to exit before it is stopped (a
/// client that hangs after its result is a known field report); never past the
/// no-progress bound.
const AFTER_RESULT: Duration = Duration::from_secs(20);
/// How often the supervisor looks at the process between stream lines.
const TICK: Duration = Duration::from_millis(500);

pub(crate) fn run(project: &Project, args: HeadlessRunArgs) -> Result<ExitStatus> {
    run_spec(project, &args)
}

/// One attempt as the summary shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Attempt {
    resumed: bool,
    #[serde(skip)]
    how: Ending,
    ending: &'static str,
    detail: String,
    result: Option<Outcome>,
    stream_log: PathBuf,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary<'a> {
    spec: &'a str,
    session_id: &'a str,
    client_version: &'a str,
    completed: bool,
    verdict: String,
    cost_usd: f64,
    attempts: &'a [Attempt],
    report_md: Option<PathBuf>,
    report_html: Option<PathBuf>,
}

fn run_spec(project: &Project, args: &HeadlessRunArgs) -> Result<ExitStatus> {
    let ex = Exec::existing(project, args.spec.spec.as_deref())?;
    let spec = &ex.spec;
    if let Some(id) = &args.task {
        ex.require_task(id)?;
    }
    let version = check_client(&args.claude)?;
    let plugin = plugin_dir(project, args.plugin_dir.as_deref())?;
    let session = match &args.session_id {
        Some(id) => id.clone(),
        None => new_session_id(&spec.name),
    };
    let out = out_dir(project, spec);
    store::ensure_dir(&out)?;
    let wall = Duration::from_secs(args.timeout);
    let deadline = Instant::now() + wall;
    let idle = Duration::from_secs(args.idle_timeout.max(1));
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut resumes = 0;
    loop {
        let resumed = !attempts.is_empty();
        let log = out.join(format!("attempt-{}.jsonl", attempts.len() + 1));
        let cmd = claude_command(args, project, &plugin, &spec.name, &session, resumed);
        let ending = supervise(cmd, (idle, wall), deadline, &log)?;
        let attempt = record_attempt(&ex, &session, attempts.len() + 1, resumed, ending, log);
        output::note(&format!(
            "headless: attempt {} {}",
            attempts.len() + 1,
            attempt.detail
        ));
        let next = headless::next(&attempt.how, resumes);
        attempts.push(attempt);
        match next {
            Next::Resume if Instant::now() < deadline => resumes += 1,
            _ => break,
        }
    }
    finish(&ex, &session, &version, &attempts, &out, args)
}

fn record_attempt(
    ex: &Exec<'_>,
    session: &str,
    n: usize,
    resumed: bool,
    ending: Ending,
    stream_log: PathBuf,
) -> Attempt {
    let detail = ending.describe();
    let result = ending.outcome().cloned();
    let value = result.as_ref().and_then(|o| serde_json::to_value(o).ok());
    ex.record_event(&Event::Headless {
        attempt: n,
        session_id: session,
        resumed,
        ending: ending.tag(),
        detail: &detail,
        result: value.as_ref(),
    });
    Attempt {
        resumed,
        how: ending.clone(),
        ending: ending.tag(),
        detail,
        result,
        stream_log,
    }
}

/// The verdict from the spec's state, the report, the job summary, the exit code.
fn finish(
    ex: &Exec<'_>,
    session: &str,
    version: &str,
    attempts: &[Attempt],
    out: &Path,
    args: &HeadlessRunArgs,
) -> Result<ExitStatus> {
    let spec = &ex.spec;
    let verdict = judge(spec, args.task.as_deref());
    let done = matches!(verdict, Verdict::Completed | Verdict::TaskDone { .. });
    let last = attempts
        .last()
        .map_or(Ending::Exited { code: 1 }, |a| a.how.clone());
    let mut sentence = verdict.sentence(&spec.name, &last, attempts.len());
    // A resumed run that ended well after a hang still names the hang it survived.
    if let Some(a) = attempts.iter().rev().skip(1).find(|a| a.ending != "result") {
        if !done {
            sentence.push_str(&format!("; the attempt before it {}", a.detail));
        }
    }
    let (md, html) = if spec.state_path().exists() {
        write_reports(ex, out)
    } else {
        (None, None)
    };
    let cost_usd = attempts
        .iter()
        .filter_map(|a| a.result.as_ref())
        .fold(0.0, |sum, o| sum + o.total_cost_usd);
    let summary = Summary {
        spec: &spec.name,
        session_id: session,
        client_version: version,
        completed: done,
        verdict: sentence,
        cost_usd,
        attempts,
        report_md: md.clone(),
        report_html: html,
    };
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let report = md.and_then(|p| store::read_text(&p, "report").ok());
        if let Err(e) = store::append_line(Path::new(&path), &job_summary(&summary, report)) {
            output::warn(&format!("could not write the job summary: {e}"));
        }
    }
    if args.json {
        output::json_pretty(&summary);
    } else {
        output::line(&summary.verdict);
        for p in [&summary.report_md, &summary.report_html]
            .into_iter()
            .flatten()
        {
            output::line(&format!("report: {}", p.display()));
        }
    }
    Ok(ExitStatus::yes_no(summary.completed))
}

fn judge(spec: &Spec, task: Option<&str>) -> Verdict {
    let state = match read_typed(&spec.state_path()) {
        StateRead::Valid(s) => s,
        StateRead::Absent => {
            return match task {
                Some(id) => Verdict::TaskNotDone { task: id.into() },
                None => Verdict::Unfinished {
                    phase: "none: no execution was started".into(),
                },
            }
        }
        StateRead::Invalid(e) => {
            return Verdict::Unfinished {
                phase: format!("unknown: {e}"),
            }
        }
    };
    match (state.phase(), state.halt_kind()) {
        (Some(Phase::Completed), _) if task.is_none() => Verdict::Completed,
        (Some(Phase::Cancelled), _) => Verdict::Cancelled,
        (_, Some(kind)) => Verdict::Halted {
            kind: kind.to_string(),
            reason: state
                .halt_reason()
                .unwrap_or("no reason recorded")
                .to_string(),
        },
        (phase, None) => match task {
            Some(id) => member_verdict(spec, &state, id),
            None => Verdict::Unfinished {
                phase: phase.map_or("none", Phase::as_str).to_string(),
            },
        },
    }
}

/// A member's run: its task ticked in tasks.md with passing evidence.
fn member_verdict(spec: &Spec, state: &crate::model::state::State, id: &str) -> Verdict {
    let ticked = crate::model::tasks_file::load(&spec.tasks_path())
        .is_ok_and(|t| t.list.find(id).is_ok_and(|t| t.checked));
    let passed = state
        .task_evidence(id)
        .is_some_and(crate::evidence::verify::passed);
    let task = id.to_string();
    if ticked && passed {
        Verdict::TaskDone { task }
    } else {
        Verdict::TaskNotDone { task }
    }
}

/// The job summary: the verdict, one row per attempt, then the report.
fn job_summary(s: &Summary<'_>, report: Option<String>) -> String {
    let mut md = format!(
        "## specrun headless: {}\n\n**{}**\n\nClaude Code {}, session `{}`, cost ${:.4}\n\n| attempt | ending | subtype | turns | cost (USD) | permission denials |\n|---|---|---|---|---|---|\n",
        s.spec, s.verdict, s.client_version, s.session_id, s.cost_usd
    );
    for (i, a) in s.attempts.iter().enumerate() {
        let o = a.result.clone().unwrap_or_default();
        md.push_str(&format!(
            "| {}{} | {} | {} | {} | {:.4} | {} |\n",
            i + 1,
            if a.resumed { " (resumed)" } else { "" },
            a.ending,
            o.subtype,
            o.num_turns,
            o.total_cost_usd,
            o.permission_denials.join(", ")
        ));
    }
    if let Some(report) = report {
        md.push('\n');
        md.push_str(&report);
    }
    md
}

/// `.specrun/headless/<spec>/`: the stream logs and the reports, beside events.jsonl.
fn out_dir(project: &Project, spec: &Spec) -> PathBuf {
    let specrun_dir = project
        .events_path()
        .parent()
        .map_or_else(|| project.root.join(".specrun"), Path::to_path_buf);
    specrun_dir.join("headless").join(&spec.name)
}

/// `claude --version` within the supported range (a newer one is warned about, as doctor does).
fn check_client(claude: &Path) -> Result<String> {
    let bin = if claude.components().count() == 1 {
        crate::claude::probe::find_on_path(&claude.to_string_lossy()).ok_or_else(|| {
            Error::Refused {
                message: format!(
                    "{} is not on PATH: install Claude Code ({}) or pass --claude PATH",
                    claude.display(),
                    releases::install_command()
                ),
            }
        })?
    } else {
        claude.to_path_buf()
    };
    let printed = match crate::claude::probe::probe_claude_at(&bin, Duration::from_secs(30)) {
        ClaudeProbe::Output(text) => text,
        ClaudeProbe::TimedOut { seconds } => {
            return Err(refused(format!(
                "`{} --version` did not answer within {seconds} s",
                bin.display()
            )))
        }
        ClaudeProbe::Failed(why) => {
            return Err(refused(format!("`{} --version` {why}", bin.display())))
        }
        ClaudeProbe::NotOnPath => return Err(refused(format!("{} not found", bin.display()))),
    };
    let version = printed
        .split_whitespace()
        .find(|w| parse_version(w).is_some())
        .unwrap_or("")
        .to_string();
    match releases::support(&version) {
        None => Err(refused(format!(
            "`{} --version` printed no version ({:?})",
            bin.display(),
            printed.trim()
        ))),
        Some(Support::TooOld) => Err(refused(format!(
            "Claude Code {version} at {} is older than the supported range {}: {}",
            bin.display(),
            releases::supported_range(),
            releases::install_command()
        ))),
        Some(Support::NewerThanTested) => {
            output::warn(&format!(
                "Claude Code {version} is newer than the newest tested ({}); running it anyway",
                releases::NEWEST_TESTED
            ));
            Ok(version)
        }
        Some(_) => Ok(version),
    }
}

fn refused(message: String) -> Error {
    Error::Refused { message }
}

/// `--plugin-dir`, else the project's `plugin/`, else the checkout this binary was built in.
fn plugin_dir(project: &Project, given: Option<&Path>) -> Result<PathBuf> {
    let is_plugin = |d: &Path| d.join(".claude-plugin/plugin.json").is_file();
    if let Some(dir) = given {
        let dir = project.cwd.join(dir);
        return if is_plugin(&dir) {
            Ok(dir)
        } else {
            Err(Error::missing("plugin (.claude-plugin/plugin.json)", &dir))
        };
    }
    let beside_binary = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.join("plugin")));
    [Some(project.root.join("plugin")), beside_binary]
        .into_iter()
        .flatten()
        .find(|d| is_plugin(d))
        .ok_or_else(|| {
            refused(
                "no plugin found (the project's plugin/ or the checkout beside this binary): pass --plugin-dir DIR".into(),
            )
        })
}

/// A version-4-shaped UUID from the clock, the pid and the spec: unique enough for one
/// machine's runs, and no random source is needed.
fn new_session_id(spec: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{nanos}:{}:{spec}", std::process::id());
    let h = crate::support::sha256::hex(seed.as_bytes());
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn claude_command(
    args: &HeadlessRunArgs,
    project: &Project,
    plugin: &Path,
    spec: &str,
    session: &str,
    resume: bool,
) -> Command {
    let mut cmd = Command::new(&args.claude);
    cmd.current_dir(&project.root)
        .env_remove("CLAUDECODE")
        .arg("--plugin-dir")
        .arg(plugin);
    match &args.allowed_tools {
        Some(list) => cmd.args(["--allowedTools", list]),
        None => cmd.arg("--dangerously-skip-permissions"),
    };
    if resume {
        cmd.args(["--resume", session]);
    } else {
        cmd.args(["--session-id", session]);
    }
    if let Some(n) = args.max_turns {
        cmd.args(["--max-turns", &n.to_string()]);
    }
    if let Some(usd) = args.max_budget_usd {
        cmd.args(["--max-budget-usd", &usd.to_string()]);
    }
    // A member's job does its one task: the manual driver, so no hook re-prompts to the next.
    let prompt = match &args.task {
        Some(id) => format!("/specrun:implement {spec} --manual --task {id}"),
        None => format!("/specrun:implement {spec}"),
    };
    cmd.args(["-p", &prompt])
        .args(["--output-format", "stream-json", "--verbose"])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    cmd
}

/// Lines of the child's stdout, read on a thread (a torn or non-UTF-8 line still counts
/// as progress); the channel closes at end of file.
fn read_lines(reader: std::io::PipeReader) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(reader);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    rx
}

/// One attempt: start it, read its stream until it ends or a bound passes, stop it.
fn supervise(
    mut cmd: Command,
    bounds: (Duration, Duration),
    deadline: Instant,
    log: &Path,
) -> Result<Ending> {
    let (reader, writer) = std::io::pipe().map_err(|e| Error::io(log, "open a pipe for", e))?;
    cmd.stdout(writer);
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut group = Group::spawn(cmd).map_err(|e| refused(format!("cannot run {program}: {e}")))?;
    let lines = read_lines(reader);
    let mut kept = String::new();
    let ending = watch(&mut group, &lines, bounds, deadline, &mut kept);
    group.stop();
    let _ = group.wait(Some(Duration::from_secs(5)));
    store::write_atomic(log, kept.as_bytes())?;
    Ok(ending)
}

/// The read loop: every line is progress; the result event starts the exit grace.
fn watch(
    group: &mut Group,
    lines: &Receiver<String>,
    (idle, wall): (Duration, Duration),
    deadline: Instant,
    kept: &mut String,
) -> Ending {
    let mut last_line = Instant::now();
    let mut result: Option<Outcome> = None;
    let mut eof = false;
    loop {
        let now = Instant::now();
        if now >= deadline {
            let secs = wall.as_secs();
            return result.map_or(Ending::OutOfTime { secs }, Ending::Result);
        }
        let quiet = now - last_line;
        let bound = if result.is_some() {
            AFTER_RESULT.min(idle)
        } else {
            idle
        };
        if quiet >= bound {
            return result.map_or(
                Ending::Silent {
                    secs: idle.as_secs(),
                },
                Ending::Result,
            );
        }
        if eof || result.is_some() {
            if let Ok(Some(status)) = group.wait(Some(TICK)) {
                let code = crate::io::process::exit_code(status);
                return result.map_or(Ending::Exited { code }, Ending::Result);
            }
        }
        if eof {
            continue;
        }
        match lines.recv_timeout(TICK.min(deadline - now)) {
            Ok(line) => {
                last_line = Instant::now();
                keep(&line, kept, &mut result);
            }
            Err(RecvTimeoutError::Disconnected) => eof = true,
            Err(RecvTimeoutError::Timeout) => {
                // Exited while something it started still holds the pipe: no end of file
                // will come, so take what is buffered and judge now.
                if let Ok(Some(status)) = group.wait(Some(Duration::ZERO)) {
                    while let Ok(line) = lines.recv_timeout(Duration::from_millis(200)) {
                        keep(&line, kept, &mut result);
                    }
                    let code = crate::io::process::exit_code(status);
                    return result.map_or(Ending::Exited { code }, Ending::Result);
                }
            }
        }
    }
}

fn keep(line: &str, kept: &mut String, result: &mut Option<Outcome>) {
    if let Line::Result(o) = headless::read_line(line) {
        *result = Some(o);
    }
    kept.push_str(line);
}

/// `specrun report` in md and html, run as this binary (the report's one gathering stays
/// in its command), written beside the stream logs; a report that fails is warned about.
fn write_reports(ex: &Exec<'_>, out: &Path) -> (Option<PathBuf>, Option<PathBuf>) {
    let one = |format: &str| -> Option<PathBuf> {
        let exe = std::env::current_exe().ok()?;
        let mut cmd = Command::new(exe);
        cmd.arg("--cwd").arg(&ex.project.root).args([
            "report",
            "--spec",
            &ex.spec.name,
            "--format",
            format,
        ]);
        match captured(cmd, Duration::from_secs(120)) {
            Ok(text) => {
                let path = out.join(format!("report.{format}"));
                match store::write_atomic(&path, text.as_bytes()) {
                    Ok(()) => Some(path),
                    Err(e) => {
                        output::warn(&format!("could not write the report: {e}"));
                        None
                    }
                }
            }
            Err(why) => {
                output::warn(&format!("no {format} report: {why}"));
                None
            }
        }
    };
    (one("md"), one("html"))
}

/// A command's stdout when it exits 0 within `limit`; else why not. A temporary file, not
/// a pipe, so a grandchild holding it open cannot hang us (as `claude::probe` does).
fn captured(mut cmd: Command, limit: Duration) -> std::result::Result<String, String> {
    use std::io::{Read, Seek};
    let mut out = tempfile::tempfile().map_err(|e| e.to_string())?;
    let writer = out.try_clone().map_err(|e| e.to_string())?;
    cmd.stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::inherit());
    let mut group = Group::spawn(cmd).map_err(|e| e.to_string())?;
    let status = match group.wait(Some(limit)) {
        Ok(Some(status)) => status,
        Ok(None) => {
            group.kill();
            return Err(format!("no answer within {} s", limit.as_secs()));
        }
        Err(e) => return Err(e.to_string()),
    };
    if !status.success() {
        return Err(format!("exited {}", crate::io::process::exit_code(status)));
    }
    let mut text = String::new();
    let _ = out.rewind();
    let _ = out.take(store::MAX_READ).read_to_string(&mut text);
    Ok(text)
}
