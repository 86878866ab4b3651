//! `specrun status`: the dashboard for a person following or resuming an execution. Fits
//! `$COLUMNS` (80 when unknown), colours on a terminal unless `NO_COLOR` is set, and with
//! `--watch` redraws on every change until the execution is complete, halted or cancelled.
//! `--json` carries every figure the text shows (the cost table under `cost`, an isolated
//! group under `isolation`).

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::cli::StatusArgs;
use crate::commands::exec::Exec;
use crate::cost::{self, CostReport, Level};
use crate::error::{Error, ExitStatus, Result};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::isolation;
use crate::model::state::ledger::Tokens;
use crate::model::state::{EvidenceRecord, Phase, State, Timestamp};
use crate::next::facts::{self, collect, Facts, StateRead};
use crate::next::{self, minutes_since};

const DEFAULT_WIDTH: usize = 80;
const LABEL: usize = 10;
const WATCH_POLL: Duration = Duration::from_millis(300);

pub(crate) fn run(project: &Project, args: StatusArgs) -> Result<ExitStatus> {
    let spec_arg = args.spec.spec.as_deref();
    // A `--spec` naming no spec is a typo: answered as every verb answers it (the specs
    // that exist), not as a new spec to plan. Without `--spec`, "no spec" is a state.
    if spec_arg.is_some() {
        project.require_spec(spec_arg)?;
    }
    if args.watch {
        return watch(project, spec_arg);
    }
    let facts = collect(project, spec_arg)?;
    let board = Dashboard::build(&facts, Utc::now()).with_project(project, &facts);
    if args.json {
        let missed = uncounted_of(project, &facts);
        let accepted = facts.state_doc().map(accepted_other).unwrap_or_default();
        output::json_pretty(&Answer {
            snapshot: facts.snapshot(project),
            resume_command: board.halt.as_ref().map(|h| h.resume.as_str()),
            last_evidence: last_evidence(&facts),
            dashboard: &board,
            cost: board.cost.as_ref(),
            isolation: board.group.as_ref().map(|g| &g.doc),
            accepted_other: accepted
                .iter()
                .map(|(task, reason)| AcceptedOther { task, reason })
                .collect(),
            uncounted_stops: UncountedStops {
                in_a_row: missed.count,
                last_cause: missed.last_cause.as_deref(),
                last_at: missed.last_at.as_deref(),
            },
            time_cap_problem: time_cap_problem(&facts),
            guard_record: record_of(project, &facts),
        });
    } else {
        output::styled(&render(&board, width(), colour()));
        for line in record_lines(project, &facts) {
            output::line(&line);
        }
    }
    Ok(ExitStatus::Success)
}

/// The guard's record of the spec's execution (outside the spec), when there is one.
fn record_of(project: &Project, facts: &Facts) -> Option<crate::model::record::Record> {
    let spec = facts.spec.as_ref()?;
    match crate::model::record::execution(&project.root, &spec.name) {
        crate::io::record::Read::Valid(r) => Some(r),
        _ => None,
    }
}

/// What the record adds for the person: its own halt (the files stopped matching it) and
/// tokens estimated past the read bound. The command that clears the halt is named only
/// at a shell.
fn record_lines(project: &Project, facts: &Facts) -> Vec<String> {
    let Some(rec) = record_of(project, facts) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    if let Some(reason) = rec.record_halt() {
        let mut line = format!("guard's record: halted: {reason}");
        if crate::next::Audience::detect() == crate::next::Audience::Shell {
            line.push_str(&format!(
                "; after checking the files, a person accepts them with `specrun resume --accept-record --spec {}`",
                rec.spec
            ));
        }
        lines.push(line);
    }
    if rec.estimated_output_tokens > 0 {
        lines.push(format!(
            "guard's record: {} output tokens estimated (transcript spans past the 64 MiB read bound, at 4 bytes a token)",
            rec.estimated_output_tokens
        ));
    }
    lines
}

/// `status --json`: the snapshot, then what the dashboard adds.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    #[serde(flatten)]
    snapshot: facts::Snapshot<'a>,
    resume_command: Option<&'a str>,
    last_evidence: Option<&'a EvidenceRecord>,
    dashboard: &'a Dashboard,
    cost: Option<&'a CostReport>,
    isolation: Option<&'a isolation::GroupDoc>,
    accepted_other: Vec<AcceptedOther<'a>>,
    uncounted_stops: UncountedStops<'a>,
    time_cap_problem: Option<String>,
    guard_record: Option<crate::model::record::Record>,
}

#[derive(Serialize)]
struct AcceptedOther<'a> {
    task: &'a str,
    reason: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UncountedStops<'a> {
    in_a_row: u64,
    last_cause: Option<&'a str>,
    last_at: Option<&'a str>,
}

/// The terminal width: `$COLUMNS`, else 80 (never under 40).
pub(crate) fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .unwrap_or(DEFAULT_WIDTH)
        .max(40)
}

/// Colour only on a terminal, and never with `NO_COLOR` set (https://no-color.org).
fn colour() -> bool {
    crate::io::output::stdout_is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Every figure the dashboard shows, typed (also `status --json`'s `dashboard`).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Dashboard {
    pub spec: Option<String>,
    pub phase: String,
    pub state_error: Option<String>,
    pub tasks_total: usize,
    pub tasks_completed: usize,
    pub current: Option<Current>,
    pub running: Option<Running>,
    pub task_iteration: u64,
    pub max_task_iterations: u64,
    pub global_iteration: u64,
    pub max_global_iterations: u64,
    pub output_tokens: u64,
    pub input_tokens: u64,
    pub max_output_tokens: Option<u64>,
    pub elapsed_minutes: Option<u64>,
    pub max_minutes: Option<u64>,
    pub remaining_minutes: Option<u64>,
    pub driver: Option<String>,
    /// Whether `task complete` shows each criterion red at the attempt's start commit
    /// (`redGreen`, chosen at `state init`); `None` without a criteria-enforcing execution.
    pub red_green: Option<bool>,
    pub halt: Option<Halt>,
    pub evidence: Option<String>,
    pub gates: Vec<String>,
    /// The next step for a person at a shell (a command that works as printed).
    pub next_shell: Option<String>,
    /// The shell step records a review, given as JSON on stdin.
    #[serde(skip)]
    pub next_shell_review: bool,
    /// How the person readies the shell step, in words (`ShellStep::first`).
    #[serde(skip)]
    pub next_shell_first: Option<String>,
    /// The next step inside Claude Code.
    pub next_claude: String,
    pub done: bool,
    /// The guard's warnings: (label, text) — time cap, uncounted stops, accepted evidence.
    #[serde(skip)]
    pub notes: Vec<(&'static str, String)>,
    /// The guard's PreToolUse denials of this execution, by tool and rule.
    pub denied: Vec<Denied>,
    /// Executor claims let through unverified, as lines.
    pub unverified: Vec<String>,
    /// The cost table (the ledger, priced when there is a price table); `status --json`
    /// has it as `cost`.
    #[serde(skip)]
    pub cost: Option<CostReport>,
    /// The isolated group's standing; `status --json` has it as `isolation`.
    #[serde(skip)]
    pub group: Option<isolation::Standing>,
}

fn uncounted_of(project: &Project, facts: &Facts) -> crate::hooks::uncounted::Missed {
    match (&facts.spec, facts.state_doc()) {
        (Some(spec), Some(s)) => {
            crate::hooks::uncounted::since(project, &spec.name, crate::hooks::uncounted::offset(s))
        }
        _ => Default::default(),
    }
}

fn time_cap_problem(facts: &Facts) -> Option<String> {
    let s = facts.state_doc()?;
    s.max_minutes()?;
    s.time_origin(Utc::now()).problem.map(|p| p.to_string())
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Current {
    pub id: String,
    pub title: String,
    pub attempts: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Running {
    pub task: String,
    pub attempt: u64,
    pub started_at: String,
    pub minutes: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Halt {
    pub kind: Option<String>,
    pub reason: String,
    pub resume: String,
}

impl Dashboard {
    /// Add what reads the project beyond the facts: the shell step (the tree), the guard's
    /// warnings (the events log) and the cost table (the price table).
    pub(crate) fn with_project(mut self, project: &Project, facts: &Facts) -> Dashboard {
        // The shell step reads the tree: the current task's evidence must be fresh.
        let shell = facts::shell_of(
            project,
            facts.spec.as_ref(),
            facts.state_doc(),
            &facts.standing(),
        );
        self.next_shell_review = shell.as_ref().is_some_and(|s| s.review);
        self.next_shell_first = shell.as_ref().and_then(|s| s.first.clone());
        self.next_shell = shell.map(|s| s.command);
        if let (Some(state), Some(list)) = (facts.state_doc(), &facts.tasks) {
            self.cost = Some(cost::priced_report(project, state, list));
        }
        if let Some(problem) = time_cap_problem(facts) {
            self.notes.push(("time cap", problem));
        }
        if let Some(text) = crate::hooks::uncounted::summary(&uncounted_of(project, facts)) {
            self.notes.push(("guard", text));
        }
        if let Some(text) = waiting_for_person(project, facts) {
            self.notes.push(("waiting", text));
        }
        if let (Some(state), Some(list)) = (facts.state_doc(), &facts.tasks) {
            self.notes
                .extend(plan_note(self.spec.as_deref(), state, list).map(|n| ("plan", n)));
            for line in cost::settings::ignored_now(&project.root, state) {
                self.notes.push(("settings", line));
            }
        }
        if let (Some(spec), Some(state)) = (&facts.spec, facts.state_doc()) {
            let log = crate::io::store::read_optional(&project.events_path());
            let text = log.ok().flatten().unwrap_or_default();
            let since = state.started_at().and_then(Timestamp::text);
            self.denied = denied_attempts(&text, &spec.name, since);
            if let Some(line) = denied_note(&self.denied) {
                self.notes.push(("denied", line));
            }
        }
        for (id, reason) in facts.state_doc().map(accepted_other).unwrap_or_default() {
            self.notes.push((
                "accepted",
                format!("task {id}: another command than its Verify, by a person: {reason}"),
            ));
        }
        self
    }

    pub(crate) fn build(facts: &Facts, now: DateTime<Utc>) -> Dashboard {
        let standing = facts.standing();
        let mut d = Dashboard {
            gates: standing.gates().iter().map(|g| g.to_string()).collect(),
            next_claude: standing.coordinator(),
            ..Default::default()
        };
        let Some(spec) = &facts.spec else {
            return d;
        };
        d.spec = Some(spec.name.clone());
        d.phase = match &facts.state {
            StateRead::Valid(s) => s.phase().map_or("unknown", Phase::as_str).to_string(),
            StateRead::Invalid(e) => {
                d.state_error = Some(e.clone());
                "state unreadable".into()
            }
            StateRead::Absent => "not started".into(),
        };
        if let Some(list) = &facts.tasks {
            let c = list.counts();
            (d.tasks_total, d.tasks_completed) = (c.total, c.completed);
            d.current = list.next().map(|t| Current {
                id: t.label(),
                title: t.title.clone(),
                attempts: facts
                    .state_doc()
                    .map_or(0, |s| next::attempt_count(s, &t.label())),
            });
        }
        if let Some(doc) = facts.state_doc() {
            d.fill_state(&spec.name, doc, now);
        }
        d.evidence = last_evidence(facts).map(describe_evidence);
        d.unverified = unverified_claims(facts);
        d.group = facts
            .state_doc()
            .and_then(|s| isolation::standing(&spec.name, s));
        d
    }

    fn fill_state(&mut self, name: &str, v: &State, now: DateTime<Utc>) {
        self.task_iteration = v.task_iteration();
        self.max_task_iterations = v.max_task_iterations();
        self.global_iteration = v.global_iteration();
        self.max_global_iterations = v.max_global_iterations();
        self.output_tokens = v.output_tokens();
        self.input_tokens = v.input_tokens();
        self.max_output_tokens = v.max_output_tokens();
        self.max_minutes = v.max_minutes();
        // A finished execution's clock stops at its end.
        let end = v
            .completed_at()
            .and_then(Timestamp::text)
            .or_else(|| v.halt().and_then(|h| h.at.get()).and_then(Timestamp::text))
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map_or(now, |t| t.with_timezone(&Utc));
        self.elapsed_minutes = v
            .started_at()
            .and_then(Timestamp::text)
            .and_then(|s| minutes_since(s, end));
        self.remaining_minutes = match (self.max_minutes, self.elapsed_minutes) {
            (Some(max), Some(used)) => Some(max.saturating_sub(used)),
            _ => None,
        };
        self.driver = Some(v.driver().as_str().to_string());
        self.red_green = v.acceptance_gate().then(|| v.red_green());
        self.running = next::running_attempt(v).map(|(task, attempt, started)| Running {
            minutes: minutes_since(&started, now),
            task,
            attempt,
            started_at: started,
        });
        self.halt = next::halt(name, v).map(|h| Halt {
            kind: v.halt_kind().map(str::to_string),
            reason: h.reason,
            resume: h.resume,
        });
        self.done = v.phase() != Some(Phase::Execution) || v.halt().is_some() || v.completed();
    }
}

/// An execution whose every box is ticked and whose only unmet gates are a person's
/// (criteria proposed as manual, blocking follow-ups): it waits for a person, not complete.
fn waiting_for_person(project: &Project, facts: &Facts) -> Option<String> {
    let (spec, state, list) = (
        facts.spec.as_ref()?,
        facts.state_doc()?,
        facts.tasks.as_ref()?,
    );
    if list.next().is_some() || state.phase() != Some(Phase::Execution) || state.completed() {
        return None;
    }
    let gates = crate::next::gates::completion_gates(project, spec, state);
    let unmet = crate::next::completion::unmet(spec.place(), state, list, Some(&gates));
    crate::next::completion::waits_for_person(&unmet).then(|| {
        let what: Vec<&str> = unmet.iter().map(|u| u.detail.as_str()).collect();
        format!("for a person, not complete: {}", what.join(" "))
    })
}

/// Tool calls the guard denied with one rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Denied {
    pub tool: String,
    pub rule: String,
    pub count: usize,
}

/// The PreToolUse denials of spec `name` since `since` (the execution's `startedAt`) in
/// the events log's bytes, by tool and rule in the order first denied.
pub(crate) fn denied_attempts(log: &[u8], name: &str, since: Option<&str>) -> Vec<Denied> {
    let at = |s: &str| DateTime::parse_from_rfc3339(s).ok();
    let from = since.and_then(at);
    let mut out: Vec<Denied> = Vec::new();
    for e in String::from_utf8_lossy(log)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        let field = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        let denied = field("event") == "pre-tool-use" && field("decision") == "deny";
        let ours = field("spec") == name && from.is_none_or(|f| at(field("at")) >= Some(f));
        if !(denied && ours) {
            continue;
        }
        let (tool, rule) = (field("tool").to_string(), field("rule").to_string());
        match out.iter_mut().find(|d| d.tool == tool && d.rule == rule) {
            Some(row) => row.count += 1,
            None => out.push(Denied {
                tool,
                rule,
                count: 1,
            }),
        }
    }
    out
}

/// The `denied` line of `status`: how many tool calls the guard denied, by tool and rule.
fn denied_note(rows: &[Denied]) -> Option<String> {
    let total: usize = rows.iter().map(|r| r.count).sum();
    (total > 0).then(|| {
        let each: Vec<String> = rows
            .iter()
            .map(|d| format!("{} {} {}", d.count, d.tool, d.rule))
            .collect();
        format!(
            "{total} tool call(s) of this execution denied by the guard: {} (.specrun/events.jsonl has each reason)",
            each.join(", ")
        )
    })
}

/// The frozen plan against tasks.md: none frozen (a state from before), or what differs;
/// at a shell, the person's command that accepts it.
fn plan_note(
    name: Option<&str>,
    state: &State,
    list: &crate::model::tasks::TaskList,
) -> Option<String> {
    use crate::model::plan::{self, Frozen};
    let name = name.unwrap_or_default();
    let text = match state.frozen_plan() {
        Frozen::None => return Some("no plan was frozen (the execution began before plans were frozen): tasks.md is read as it stands".into()),
        _ => plan::unmet(name, state.total_tasks(), state.frozen_plan(), list)?.detail,
    };
    if crate::claude::releases::inside() {
        return Some(text);
    }
    Some(format!(
        "{text} A person accepts tasks.md as the new plan with `specrun plan accept {}`.",
        crate::support::shell::spec_flag(name)
    ))
}

/// The most recent evidence record: the execution block, else the newest task evidence.
fn last_evidence(facts: &Facts) -> Option<&EvidenceRecord> {
    let s = facts.state_doc()?;
    let maps = [&s.verification_blocks, &s.task_evidence];
    let records = maps.into_iter().flatten().flat_map(|m| m.values());
    records.max_by_key(|r| r.started_at().unwrap_or(""))
}

fn describe_evidence(ev: &EvidenceRecord) -> String {
    let code = ev.exit_code().map_or("?".into(), |c| c.to_string());
    let cmd = ev.command().unwrap_or("?");
    let at = ev.started_at().unwrap_or("?");
    format!("exit {code} at {at}: {cmd}")
}

/// Task evidence from another command than the task's Verify that a person accepted:
/// `(task id, reason)`.
pub(crate) fn accepted_other(s: &State) -> Vec<(String, String)> {
    s.task_evidence
        .iter()
        .flatten()
        .filter_map(|(id, r)| {
            let reason = r.accepted_reason()?;
            Some((id.clone(), reason.to_string()))
        })
        .collect()
}

/// Executor claims the guard let through unverified (after one re-prompt), newest last.
fn unverified_claims(facts: &Facts) -> Vec<String> {
    let Some(items) = facts
        .state_doc()
        .and_then(|s| s.unverified_claims.as_ref())
        .filter(|a| !a.is_empty())
    else {
        return Vec::new();
    };
    let mut lines = vec![format!(
        "UNVERIFIED {} executor claim(s) without evidence:",
        items.len()
    )];
    for item in items.iter().rev().take(3).rev() {
        let task = item.get("taskId").and_then(Value::as_str).unwrap_or("-");
        let missing = item
            .get("missing")
            .and_then(Value::as_array)
            .map(|m| {
                m.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_default();
        lines.push(format!("  task {task}: {missing}"));
    }
    lines
}

fn tok(t: &Tokens) -> String {
    format!(
        "{} tok (in {} out {} cache read {} write {})",
        t.total(),
        t.input,
        t.output,
        t.cache_read,
        t.cache_creation
    )
}

fn usd(v: Option<f64>) -> String {
    v.map(|u| format!("  ${u:.2}")).unwrap_or_default()
}

/// The cost lines of `status`: (label, text, a warning); a task's row has no label and
/// starts with its indented id.
fn cost_rows(r: &CostReport) -> Vec<(&'static str, String, bool)> {
    let mut rows = Vec::new();
    if let Some(e) = &r.ledger_error {
        rows.push(("cost", format!("ledger unusable: {e}"), true));
        return rows;
    }
    rows.push(("cost", format!("{}{}", tok(&r.total), usd(r.usd)), false));
    for t in &r.tasks {
        let text = format!(
            "  {:<8} {} tok  out {}  {:.1} min  {} attempt(s){}",
            t.id,
            t.total_tokens,
            t.tokens.output,
            t.minutes,
            t.attempts,
            usd(t.usd)
        );
        rows.push(("", text, false));
    }
    let overhead = format!("  {:<8} {} tok (no task)", "overhead", r.overhead.total());
    rows.push(("", overhead, false));
    if let Some(e) = &r.prices_error {
        rows.push(("prices", format!("{e} (tokens still counted)"), true));
    }
    if !r.unpriced_models.is_empty() {
        let names = r.unpriced_models.join(", ");
        rows.push(("prices", format!("no price for {names}"), false));
    }
    for f in &r.forecasts {
        let tag = match f.level {
            Level::Ok => "",
            Level::Warn => "WARN ",
            Level::Halt => "OVER ",
        };
        rows.push((
            "forecast",
            format!("{tag}{}", f.describe()),
            f.level != Level::Ok,
        ));
    }
    rows
}

/// How a line is coloured.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tone {
    Plain,
    Good,
    Bad,
}

/// A dashboard line: label, text, tone; `verbatim` lines are never wrapped (commands).
struct Line {
    label: &'static str,
    text: String,
    tone: Tone,
    verbatim: bool,
}

fn line(label: &'static str, text: String) -> Line {
    Line {
        label,
        text,
        tone: Tone::Plain,
        verbatim: false,
    }
}

fn bar(done: usize, total: usize, len: usize) -> String {
    let filled = (done * len).checked_div(total).unwrap_or(0);
    format!("[{}{}]", "#".repeat(filled), "-".repeat(len - filled))
}

fn of_cap(used: u64, cap: Option<u64>, unit: &str) -> String {
    match cap {
        Some(max) => format!(
            "{used}/{max}{unit} ({}%)",
            (used * 100).checked_div(max).unwrap_or(0)
        ),
        None => format!("{used}{unit} (no cap)"),
    }
}

fn lines_of(d: &Dashboard, width: usize) -> Vec<Line> {
    let mut out = Vec::new();
    let Some(spec) = &d.spec else {
        out.push(line("", "specrun: no active spec".into()));
        push_next(d, &mut out);
        return out;
    };
    out.push(line("spec", format!("{spec}   phase {}", d.phase)));
    if d.tasks_total > 0 || d.phase != "not started" {
        let pct = (d.tasks_completed * 100)
            .checked_div(d.tasks_total)
            .unwrap_or(0);
        let len = width.saturating_sub(LABEL + 16).clamp(10, 30);
        let mut l = line(
            "progress",
            format!(
                "{} {}/{} ({pct}%)",
                bar(d.tasks_completed, d.tasks_total, len),
                d.tasks_completed,
                d.tasks_total
            ),
        );
        if d.tasks_total > 0 && d.tasks_completed == d.tasks_total {
            l.tone = Tone::Good;
        }
        out.push(l);
    }
    if let Some(c) = &d.current {
        out.push(line(
            "current",
            format!("{} {} (attempts {})", c.id, c.title, c.attempts),
        ));
    }
    if let Some(r) = &d.running {
        let mins = r.minutes.map(|m| format!(", {m} min")).unwrap_or_default();
        out.push(line(
            "running",
            format!(
                "task {} attempt {} since {}{mins}",
                r.task, r.attempt, r.started_at
            ),
        ));
    }
    if let Some(e) = &d.state_error {
        let mut l = line("state", e.clone());
        l.tone = Tone::Bad;
        out.push(l);
    }
    if d.driver.is_some() {
        out.push(line(
            "iters",
            format!(
                "task {}/{}   global {}/{}",
                d.task_iteration,
                d.max_task_iterations,
                d.global_iteration,
                d.max_global_iterations
            ),
        ));
        out.push(line(
            "tokens",
            format!(
                "out {}   in {}",
                of_cap(d.output_tokens, d.max_output_tokens, ""),
                d.input_tokens
            ),
        ));
        let elapsed = d.elapsed_minutes.map_or("?".into(), |m| m.to_string());
        let remaining = d
            .remaining_minutes
            .map(|r| format!("   remaining {r} min"))
            .unwrap_or_default();
        let cap = d
            .max_minutes
            .map_or("no cap".into(), |m| format!("cap {m}"));
        out.push(line(
            "minutes",
            format!(
                "elapsed {elapsed} ({cap}){remaining}   driver {}",
                d.driver.as_deref().unwrap_or("?")
            ),
        ));
    }
    if let Some(on) = d.red_green {
        out.push(line(
            "criteria",
            if on {
                "red before, green after: a task's mapped tests run at its start commit at task complete".into()
            } else {
                "red before, green after: off for this execution (chosen at state init)".into()
            },
        ));
    }
    for (label, text) in &d.notes {
        let mut l = line(label, text.clone());
        l.tone = Tone::Bad;
        out.push(l);
    }
    if let Some(h) = &d.halt {
        let mut l = line("HALTED", h.reason.clone());
        l.tone = Tone::Bad;
        out.push(l);
        out.push(line("resume", "a person, at a shell:".into()));
        out.push(Line {
            label: "",
            text: h.resume.clone(),
            tone: Tone::Plain,
            verbatim: true,
        });
    }
    if let Some(e) = &d.evidence {
        out.push(line("evidence", e.clone()));
    }
    for text in &d.unverified {
        let mut l = line("", text.clone());
        l.tone = Tone::Bad;
        out.push(l);
    }
    for (label, text, warn) in d.cost.as_ref().map(cost_rows).unwrap_or_default() {
        let mut l = line(label, text);
        if warn {
            l.tone = Tone::Bad;
        }
        out.push(l);
    }
    if let Some(g) = &d.group {
        // One line per member, so a member's branch is never split over two lines.
        out.push(line("group", g.head.clone()));
        for part in &g.parts {
            out.push(line("", format!("  {part}")));
        }
    }
    push_next(d, &mut out);
    out
}

fn push_next(d: &Dashboard, out: &mut Vec<Line>) {
    if !d.gates.is_empty() {
        out.push(line("gates", d.gates.join(", ")));
    }
    if let Some(cmd) = &d.next_shell {
        let what = match &d.next_shell_first {
            Some(first) => format!("next step at a shell, {first}:"),
            None if d.next_shell_review => {
                "next step at a shell (the review as JSON on stdin):".into()
            }
            None => "next step at a shell:".into(),
        };
        out.push(line("shell", what));
        out.push(Line {
            label: "",
            text: cmd.clone(),
            tone: Tone::Plain,
            verbatim: true,
        });
    }
    let mut l = line("claude", d.next_claude.clone());
    if d.gates.iter().any(|g| g == "completed") {
        l.tone = Tone::Good;
    }
    out.push(l);
}

/// The dashboard as text: every line at most `width` columns, except a command printed
/// verbatim (indented two spaces, never wrapped, so it can be copied whole).
pub(crate) fn render(d: &Dashboard, width: usize, colour: bool) -> String {
    let mut out = String::new();
    for l in lines_of(d, width) {
        // Printed with `output::styled` (the colours below): the text, which holds titles
        // and reasons from files, is made visible here.
        let text = crate::support::visible::line(&l.text);
        if l.verbatim {
            out.push_str("  ");
            // A command printed whole may span lines (a review given on stdin).
            out.push_str(&crate::support::visible::text(&l.text));
            out.push('\n');
            continue;
        }
        let body = if l.label.is_empty() {
            wrap(&text, width, 0)
        } else {
            wrap(&text, width - LABEL, LABEL)
        };
        let label = if l.label.is_empty() {
            String::new()
        } else {
            format!("{:<LABEL$}", l.label)
        };
        let (on, off) = match (colour, l.tone) {
            (false, _) | (true, Tone::Plain) => ("", ""),
            (true, Tone::Good) => ("\x1b[32m", "\x1b[0m"),
            (true, Tone::Bad) => ("\x1b[1;31m", "\x1b[0m"),
        };
        let label = if colour && !label.is_empty() && l.tone == Tone::Plain {
            format!("\x1b[2m{label}\x1b[0m")
        } else {
            label
        };
        out.push_str(&format!("{on}{label}{body}{off}\n"));
    }
    out
}

/// Word-wrap `text` to `width` columns; continuation lines are indented by `indent`.
fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut rest = text.trim_end();
    let mut first = true;
    while !rest.is_empty() {
        let take: String = rest.chars().take(width).collect();
        let cut = if take.chars().count() < width {
            take.len()
        } else {
            take.rfind(' ')
                .filter(|&i| i > width / 4)
                .unwrap_or(take.len())
        };
        let (head, tail) = rest.split_at(cut);
        if !first {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(head.trim_end());
        rest = tail.trim_start();
        first = false;
    }
    out
}

/// What `--watch` compares between polls: the spec's files (mtime, size) and the minute shown.
type Signature = (Vec<Option<(SystemTime, u64)>>, Option<u64>);

fn files_signature(spec: &Spec) -> Vec<Option<(SystemTime, u64)>> {
    let stat = |p: std::path::PathBuf| {
        std::fs::metadata(p)
            .ok()
            .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()))
    };
    vec![
        stat(spec.state_path()),
        stat(spec.tasks_path()),
        stat(spec.critique_dir()),
        stat(spec.followups_path()),
    ]
}

fn watch(project: &Project, spec_arg: Option<&str>) -> Result<ExitStatus> {
    let ex = Exec::new(project, spec_arg)?;
    let spec = &ex.spec;
    let arg = Some(spec.dir.to_string_lossy().into_owned());
    let tty = crate::io::output::stdout_is_terminal();
    let mut last: Option<Signature> = None;
    loop {
        if !spec.dir.is_dir() {
            return Err(Error::Refused {
                message: format!(
                    "spec {} was deleted while watching ({} no longer exists)",
                    spec.name,
                    spec.dir.display()
                ),
            });
        }
        let facts = collect(project, arg.as_deref())?;
        let board = Dashboard::build(&facts, Utc::now()).with_project(project, &facts);
        let now_sig = (files_signature(spec), board.elapsed_minutes);
        if last.as_ref() != Some(&now_sig) {
            if tty {
                output::styled("\x1b[H\x1b[2J");
            } else if last.is_some() {
                output::line("");
            }
            output::styled(&render(&board, width(), colour()));
            last = Some(now_sig);
        }
        if board.done {
            return Ok(ExitStatus::Success);
        }
        std::thread::sleep(WATCH_POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn denied_attempts_count_this_executions_denials_by_tool_and_rule() {
        let log = [
            r#"{"at":"2026-01-01T00:00:00.000Z","session":"s","event":"pre-tool-use","spec":"demo","tool":"Bash","decision":"deny","rule":"persons-verb"}"#,
            r#"{"at":"2026-01-02T00:00:01.000Z","session":"s","event":"pre-tool-use","spec":"demo","tool":"Bash","decision":"deny","rule":"persons-verb"}"#,
            r#"{"at":"2026-01-02T00:00:02.000Z","session":"s","event":"pre-tool-use","spec":"demo","tool":"Bash","decision":"deny","rule":"bookkeeping-write"}"#,
            r#"{"at":"2026-01-02T00:00:03.000Z","session":"s","event":"pre-tool-use","spec":"demo","tool":"Agent","decision":"allow","rule":"allow"}"#,
            r#"{"at":"2026-01-02T00:00:04.000Z","session":"s","event":"pre-tool-use","spec":"other","tool":"Bash","decision":"deny","rule":"persons-verb"}"#,
            "torn {",
            r#"{"at":"2026-01-02T00:00:05.000Z","session":"s","event":"pre-tool-use","spec":"demo","tool":"Bash","decision":"deny","rule":"persons-verb"}"#,
        ]
        .join("\n");
        let rows = denied_attempts(log.as_bytes(), "demo", Some("2026-01-02T00:00:00+00:00"));
        let want = |t: &str, r: &str, count| Denied {
            tool: t.to_string(),
            rule: r.to_string(),
            count,
        };
        assert_eq!(
            rows,
            [
                want("Bash", "persons-verb", 2),
                want("Bash", "bookkeeping-write", 1)
            ]
        );
        let note = denied_note(&rows).unwrap();
        assert!(note.starts_with("3 tool call(s)"), "{note}");
        assert!(
            note.contains("2 Bash persons-verb, 1 Bash bookkeeping-write"),
            "{note}"
        );
        // The earlier execution's denial counts with no start to bound it; none, no line.
        assert_eq!(denied_attempts(log.as_bytes(), "demo", None)[0].count, 3);
        assert_eq!(denied_note(&[]), None);
    }

    fn board() -> Dashboard {
        Dashboard {
            spec: Some("demo".into()),
            phase: "execution".into(),
            tasks_total: 3,
            tasks_completed: 1,
            current: Some(Current {
                id: "1.2".into(),
                title: "A very long title ".repeat(8),
                attempts: 2,
            }),
            running: Some(Running {
                task: "1.2".into(),
                attempt: 2,
                started_at: "2026-01-01T00:00:00Z".into(),
                minutes: Some(7),
            }),
            max_task_iterations: 5,
            max_global_iterations: 30,
            output_tokens: 250,
            max_output_tokens: Some(1000),
            elapsed_minutes: Some(12),
            max_minutes: Some(60),
            remaining_minutes: Some(48),
            driver: Some("manual".into()),
            next_shell: Some(
                "specrun verify run --task 1.2 --spec demo --command 'cargo test'".into(),
            ),
            next_claude: "Delegate task 1.2 to specrun:spec-executor.".into(),
            ..Default::default()
        }
    }

    #[test]
    fn fits_the_width_and_shows_every_figure() {
        for width in [40, 80, 120] {
            let text = render(&board(), width, false);
            for l in text.lines().filter(|l| !l.starts_with("  specrun")) {
                assert!(l.chars().count() <= width, "{width}: {l:?}");
            }
            for needle in [
                "attempt 2",
                "7 min",
                "250/1000 (25%)",
                "elapsed 12",
                "remaining 48",
            ] {
                assert!(text.contains(needle), "{needle}: {text}");
            }
        }
    }

    #[test]
    fn the_cost_table_is_on_the_dashboard_within_the_width() {
        let state = json!({
            "attempts": {"1.1": [{"n": 1, "status": "done",
                "startedAt": "2026-01-01T00:00:00Z", "endedAt": "2026-01-01T00:06:00Z"}]},
            "ledger": {
                "tasks": {"1.1": {"byModel": {"m": {"input": 10, "output": 40, "cacheRead": 900}}}},
                "run": {"byModel": {"m": {"output": 5}}}
            }
        });
        let tasks = crate::model::tasks::parse("- [x] 1.1 One\n- [ ] 1.2 Two\n");
        let mut b = board();
        b.cost = Some(cost::report(
            &State::from_value(&state).unwrap(),
            &tasks,
            Ok(None),
            Utc::now(),
        ));
        for width in [40, 80] {
            let text = render(&b, width, false);
            for l in text.lines().filter(|l| !l.starts_with("  specrun")) {
                assert!(l.chars().count() <= width, "{width}: {l:?}");
            }
        }
        let text = render(&b, 80, false);
        assert!(
            text.contains("cost      955 tok (in 10 out 45 cache read 900 write 0)"),
            "{text}"
        );
        assert!(
            text.contains("  1.1      950 tok  out 40  6.0 min  1 attempt(s)"),
            "{text}"
        );
        assert!(text.contains("  overhead 5 tok (no task)"), "{text}");
    }

    #[test]
    fn colour_marks_a_halt_and_plain_text_has_no_escapes() {
        let mut b = board();
        b.halt = Some(Halt {
            kind: Some("maxTaskIterations".into()),
            reason: "task 1.2 failed".into(),
            resume: "specrun resume --spec demo --raise-task 10".into(),
        });
        assert!(render(&b, 80, true).contains("\x1b[1;31mHALTED"));
        assert!(!render(&b, 80, false).contains('\x1b'));
    }
}
