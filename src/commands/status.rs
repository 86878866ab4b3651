//! `specrun status`: the dashboard for a person resuming by hand. Fits 80 columns.

use serde_json::{json, Value};

use crate::cli::StatusArgs;
use crate::cost::{self, CostReport, Level};
use crate::error::Result;
use crate::ledger::Tokens;
use crate::output;
use crate::prices;
use crate::project::Project;
use crate::state::{self, View};
use crate::tasks::TaskList;

use super::snapshot::{collect, Facts, StateRead};

const WIDTH: usize = 80;
const BAR: usize = 30;

pub fn run(project: &Project, args: StatusArgs) -> Result<i32> {
    let facts = collect(project, args.spec.spec.as_deref())?;
    if args.json {
        let mut doc = facts.to_json(project);
        doc["resumeCommand"] = json!(resume(&facts));
        doc["lastEvidence"] = last_evidence(&facts).cloned().unwrap_or(Value::Null);
        doc["cost"] = match (facts.state_doc(), &facts.tasks) {
            (Some(state), Some(list)) => json!(cost_report(project, state, list)),
            _ => Value::Null,
        };
        let state = facts.state_doc();
        doc["acceptedOther"] = json!(state
            .map(accepted_other)
            .unwrap_or_default()
            .into_iter()
            .map(|(task, reason)| json!({"task": task, "reason": reason}))
            .collect::<Vec<_>>());
        let missed = match (&facts.spec, state) {
            (Some(spec), Some(s)) => {
                crate::uncounted::since(project, &spec.name, crate::uncounted::offset(s))
            }
            _ => Default::default(),
        };
        doc["uncountedStops"] = json!({"inARow": missed.count, "lastCause": missed.last_cause,
                                       "lastAt": missed.last_at});
        doc["timeCapProblem"] = json!(state.and_then(|s| {
            View(s).max_minutes()?;
            state::time_origin(View(s), chrono::Utc::now()).problem
        }));
        doc["isolation"] = group(&facts).map(|(_, d)| d).unwrap_or(Value::Null);
        output::json_pretty(&doc);
    } else {
        let costs = match (facts.state_doc(), &facts.tasks) {
            (Some(state), Some(list)) => cost_lines(&cost_report(project, state, list)),
            _ => Vec::new(),
        };
        output::raw(&render_with(project, &facts, &costs));
        if let Some((text, _)) = group(&facts) {
            output::line(&format!("group     {}", text.trim_start_matches("group ")));
        }
    }
    Ok(0)
}

/// The isolated group's standing (members merged, members remaining and their branches).
fn group(facts: &Facts) -> Option<(String, Value)> {
    let spec = facts.spec.as_ref()?;
    super::isolate::summary(&spec.name, facts.state_doc()?)
}

fn resume(facts: &Facts) -> Option<String> {
    let spec = facts.spec.as_ref()?;
    let doc = facts.state_doc()?;
    View(doc).halt()?;
    Some(state::resume_command(&spec.name, View(doc)))
}

/// The most recent evidence record: the execution block, else the newest task evidence.
fn last_evidence(facts: &Facts) -> Option<&Value> {
    let doc = facts.state_doc()?;
    let mut records: Vec<&Value> = Vec::new();
    for key in ["verificationBlocks", "taskEvidence"] {
        if let Some(map) = doc.get(key).and_then(Value::as_object) {
            records.extend(map.values().filter(|v| v.is_object()));
        }
    }
    records.into_iter().max_by_key(|r| {
        r.get("startedAt")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    })
}

/// Executor claims the guard let through unverified (after one re-prompt), newest last.
fn unverified_claims(facts: &Facts) -> Vec<String> {
    let Some(items) = facts
        .state_doc()
        .and_then(|d| d.get("unverifiedClaims"))
        .and_then(Value::as_array)
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

/// Task evidence from another command than the task's Verify that a person accepted:
/// `(task id, reason)`.
pub fn accepted_other(doc: &Value) -> Vec<(String, String)> {
    doc.get("taskEvidence")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(id, r)| {
            let reason = r.get("acceptedOther")?.get("reason")?.as_str()?;
            Some((id.clone(), reason.to_string()))
        })
        .collect()
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

fn bar(done: usize, total: usize) -> String {
    let filled = (done * BAR).checked_div(total).unwrap_or(0);
    format!("[{}{}]", "#".repeat(filled), "-".repeat(BAR - filled))
}

/// The execution's cost table, priced with the project's price table when it has one.
pub fn cost_report(project: &Project, state: &Value, tasks: &TaskList) -> CostReport {
    let loaded = prices::load(&project.root);
    let table = match &loaded {
        Ok(p) => Ok(p.as_ref()),
        Err(e) => Err(e.as_str()),
    };
    cost::report(state, tasks, table, chrono::Utc::now())
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

/// The cost lines of `status` (label column first, as the other lines).
pub fn cost_lines(r: &CostReport) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(e) = &r.ledger_error {
        lines.push(format!("cost      ledger unusable: {e}"));
        return lines;
    }
    lines.push(format!("cost      {}{}", tok(&r.total), usd(r.usd)));
    for t in &r.tasks {
        lines.push(format!(
            "  {:<8} {} tok  out {}  {:.1} min  {} attempt(s){}",
            t.id,
            t.total_tokens,
            t.tokens.output,
            t.minutes,
            t.attempts,
            usd(t.usd)
        ));
    }
    lines.push(format!(
        "  {:<8} {} tok (no task)",
        "overhead",
        r.overhead.total()
    ));
    if let Some(e) = &r.prices_error {
        lines.push(format!("prices    {e} (tokens still counted)"));
    }
    if !r.unpriced_models.is_empty() {
        lines.push(format!(
            "prices    no price for {}",
            r.unpriced_models.join(", ")
        ));
    }
    for f in &r.forecasts {
        let tag = match f.level {
            Level::Ok => "",
            Level::Warn => "WARN ",
            Level::Halt => "OVER ",
        };
        lines.push(format!("forecast  {tag}{}", f.describe()));
    }
    lines
}

pub fn render(project: &Project, facts: &Facts) -> String {
    render_with(project, facts, &[])
}

/// `render` with extra lines (the cost table) before the gates.
pub fn render_with(project: &Project, facts: &Facts, extra: &[String]) -> String {
    let mut lines: Vec<String> = Vec::new();
    // (index in `lines` to print before, text) for lines that must not be wrapped.
    let mut verbatim: Vec<(usize, String)> = Vec::new();
    let (gates, action) = facts.gates_and_action();
    match &facts.spec {
        None => lines.push("specrun: no active spec".into()),
        Some(spec) => {
            let phase = match &facts.state {
                StateRead::Valid(doc) => View(doc).phase().unwrap_or("unknown").to_string(),
                StateRead::Invalid(_) => "state unreadable".into(),
                StateRead::Absent => "not started".into(),
            };
            lines.push(format!("spec      {}   phase {phase}", spec.name));
            if let Some(list) = &facts.tasks {
                let c = list.counts();
                let pct = (c.completed * 100).checked_div(c.total).unwrap_or(0);
                lines.push(format!(
                    "progress  {} {}/{} ({pct}%)",
                    bar(c.completed, c.total),
                    c.completed,
                    c.total
                ));
                if let Some(t) = list.next() {
                    lines.push(format!("current   {} {}", t.label(), t.title));
                }
            }
            if let StateRead::Invalid(e) = &facts.state {
                lines.push(format!("state     {e}"));
            }
            if let Some(doc) = facts.state_doc() {
                let v = View(doc);
                lines.push(format!(
                    "iters     task {}/{}   global {}/{}",
                    v.task_iteration(),
                    v.max_task_iterations(),
                    v.global_iteration(),
                    v.max_global_iterations()
                ));
                let tokens = match v.max_output_tokens() {
                    Some(max) => format!("{}/{max}", v.output_tokens()),
                    None => format!("{} (no cap)", v.output_tokens()),
                };
                let minutes = v
                    .max_minutes()
                    .map(|m| format!("   minutes cap {m}"))
                    .unwrap_or_default();
                lines.push(format!(
                    "tokens    out {tokens}{minutes}   driver {}",
                    v.driver()
                ));
                if let Some(problem) = v
                    .max_minutes()
                    .and(state::time_origin(v, chrono::Utc::now()).problem)
                {
                    lines.push(format!("time cap  {problem}"));
                }
                let missed =
                    crate::uncounted::since(project, &spec.name, crate::uncounted::offset(doc));
                if let Some(text) = crate::uncounted::summary(&missed) {
                    lines.push(format!("guard     {text}"));
                }
                for (id, reason) in accepted_other(doc) {
                    lines.push(format!(
                        "accepted  task {id}: another command than its Verify, by a person: {reason}"
                    ));
                }
                if v.halt().is_some() {
                    lines.push(format!(
                        "HALTED    {}",
                        v.halt_reason().unwrap_or("(no reason recorded)")
                    ));
                    // The command is printed whole on a line of its own (never wrapped), so
                    // it can be copied as is.
                    lines.push("resume    run this command:".into());
                    verbatim.push((lines.len(), state::resume_command(&spec.name, v)));
                }
            }
            if let Some(ev) = last_evidence(facts) {
                let code = ev
                    .get("exitCode")
                    .and_then(Value::as_i64)
                    .map(|c| c.to_string())
                    .unwrap_or("?".into());
                let cmd = ev.get("command").and_then(Value::as_str).unwrap_or("?");
                let at = ev.get("startedAt").and_then(Value::as_str).unwrap_or("?");
                lines.push(format!("evidence  exit {code} at {at}: {cmd}"));
            }
            lines.extend(unverified_claims(facts));
        }
    }
    lines.extend(extra.iter().cloned());
    if !gates.is_empty() {
        lines.push(format!("gates     {}", gates.join(", ")));
    }
    lines.push(format!("next      {action}"));
    let mut out = String::new();
    for (i, l) in lines.into_iter().enumerate() {
        for (_, text) in verbatim.iter().filter(|(at, _)| *at == i) {
            out.push_str("  ");
            out.push_str(text);
            out.push('\n');
        }
        // Continuation lines are indented under the label column.
        let mut first = true;
        let mut rest = l.as_str();
        while !rest.is_empty() {
            let width = if first { WIDTH } else { WIDTH - 10 };
            let take: String = rest.chars().take(width).collect();
            let cut = if take.chars().count() < width {
                take.len()
            } else {
                take.rfind(' ').filter(|&i| i > 20).unwrap_or(take.len())
            };
            let (head, tail) = rest.split_at(cut);
            if first {
                out.push_str(head);
            } else {
                out.push_str("          ");
                out.push_str(&clip(head.trim_start(), width));
            }
            out.push('\n');
            rest = tail.trim_start();
            first = false;
        }
    }
    out
}
