//! One execution's story (pure): per task its attempts, durations, tokens, evidence,
//! reviews, follow-ups and rollbacks; the halts and resumes; totals. Built from the state
//! document, tasks.md, follow-ups, critique times, the spec's events.jsonl lines and the
//! cost table `status` shows (`cost::priced_report`: per-task tokens, minutes and
//! dollars come from the ledger, so report and status agree), then rendered as Markdown,
//! JSON or one self-contained HTML page with an inline-SVG timeline.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::cost::CostReport;
use crate::evidence::followups::Item;
use crate::model::state::time::parse;
use crate::model::state::{Nullable, Phase, State, Timestamp};
use crate::model::tasks::TaskList;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Report {
    pub spec: String,
    pub phase: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub tasks: Vec<TaskStory>,
    pub halts: Vec<Halt>,
    pub totals: Totals,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskStory {
    pub id: String,
    pub title: String,
    pub checked: bool,
    pub attempts: Vec<Attempt>,
    /// The task's attempts, start to end (a running one up to now), as the cost table has them.
    pub minutes: f64,
    /// Tokens the ledger charged to this task (input, output and cache); `None` for a task
    /// the cost table has no row for, or with an unusable ledger.
    pub tokens: Option<u64>,
    /// Of those, output tokens.
    pub output_tokens: Option<u64>,
    /// Dollars, with a price table.
    pub usd: Option<f64>,
    pub evidence: Option<Evidence>,
    pub post_code_at: Option<String>,
    pub post_test_at: Option<String>,
    pub followups: Vec<String>,
    pub rollbacks: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Attempt {
    pub n: u64,
    pub status: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub minutes: Option<f64>,
    pub reason: Option<String>,
    pub rollback_ref: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Evidence {
    pub command: String,
    pub exit_code: Option<i64>,
    pub started_at: Option<String>,
    pub duration_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Halt {
    pub at: String,
    pub reason: String,
    /// When a `resume` cleared it, if one did.
    pub resumed_at: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Totals {
    pub tasks: usize,
    pub checked: usize,
    pub attempts: usize,
    pub failed: usize,
    pub rollbacks: usize,
    pub halts: usize,
    pub minutes: f64,
    pub output_tokens: u64,
    pub input_tokens: u64,
    pub max_output_tokens: Option<u64>,
    pub stops: u64,
    /// Every token in the ledger (tasks and overhead, input, output and cache).
    pub ledger_tokens: u64,
    /// Tokens spent on no task.
    pub overhead_tokens: u64,
    /// Dollars, with a price table.
    pub usd: Option<f64>,
    /// Why the ledger or the prices could not be used.
    pub cost_note: Option<String>,
}

/// The inputs gathered at the edge.
pub(crate) struct Inputs<'a> {
    pub spec: &'a str,
    pub state: &'a State,
    pub tasks: &'a TaskList,
    pub followups: &'a [Item],
    /// (task id, post-code recordedAt, post-test recordedAt).
    pub critiques: &'a [(String, Option<String>, Option<String>)],
    /// This spec's events.jsonl lines, in order.
    pub events: &'a [Value],
    /// The cost table, as `status` computes it.
    pub cost: &'a CostReport,
    pub now: DateTime<Utc>,
}

fn minutes_between(a: Option<&str>, b: Option<&str>) -> Option<f64> {
    let (a, b) = (parse(a?)?, parse(b?)?);
    Some(crate::model::state::time::ms_between(a, b) as f64 / 60_000.0)
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

pub(crate) fn build(input: &Inputs<'_>) -> Report {
    let v = input.state;
    let started_at = v.started_at().and_then(Timestamp::text);
    let now = crate::model::state::time::format(input.now);
    let tasks: Vec<TaskStory> = input
        .tasks
        .tasks
        .iter()
        .map(|t| story(input, t, &now))
        .collect();
    let halts = halts(input);
    let ended_at = v
        .completed_at()
        .and_then(Timestamp::text)
        .map(str::to_string)
        .or_else(|| input.events.last().and_then(|e| str_of(e, "at")));
    let totals = Totals {
        tasks: tasks.len(),
        checked: tasks.iter().filter(|t| t.checked).count(),
        attempts: tasks.iter().map(|t| t.attempts.len()).sum(),
        failed: tasks
            .iter()
            .flat_map(|t| &t.attempts)
            .filter(|a| a.status == "failed")
            .count(),
        rollbacks: tasks.iter().map(|t| t.rollbacks).sum(),
        halts: halts.len(),
        minutes: minutes_between(started_at, ended_at.as_deref()).unwrap_or(0.0),
        output_tokens: v.output_tokens(),
        input_tokens: v.input_tokens(),
        max_output_tokens: v.max_output_tokens(),
        stops: v.global_iteration(),
        ledger_tokens: input.cost.total_tokens,
        overhead_tokens: input.cost.overhead.total(),
        usd: input.cost.usd,
        cost_note: input
            .cost
            .ledger_error
            .as_ref()
            .map(|e| format!("cost ledger unusable: {e}"))
            .or_else(|| input.cost.prices_error.clone()),
    };
    Report {
        spec: input.spec.to_string(),
        phase: v.phase().map_or("not started", Phase::as_str).to_string(),
        started_at: started_at.map(str::to_string),
        ended_at,
        tasks,
        halts,
        totals,
    }
}

fn story(input: &Inputs<'_>, t: &crate::model::tasks::Task, now: &str) -> TaskStory {
    let id = t.label();
    let text = |t: &Nullable<Timestamp>| t.get().and_then(Timestamp::text).map(str::to_string);
    let attempts: Vec<Attempt> = input
        .state
        .attempts_of(&id)
        .iter()
        .map(|a| {
            let (started, ended) = (text(&a.started_at), text(&a.ended_at));
            let until = ended.as_deref().or(Some(now));
            Attempt {
                n: a.n.unwrap_or(0),
                status: a.status.clone().unwrap_or_else(|| "?".into()),
                minutes: minutes_between(started.as_deref(), until),
                started_at: started,
                ended_at: ended,
                reason: a.reason.get().cloned(),
                rollback_ref: a.rollback_ref.get().cloned(),
            }
        })
        .collect();
    let evidence = input.state.task_evidence(&id).map(|r| Evidence {
        command: r.command().unwrap_or_default().to_string(),
        exit_code: r.exit_code(),
        started_at: r.started_at().map(str::to_string),
        duration_ms: r.duration_ms(),
    });
    let ledger_ok = input.cost.ledger_error.is_none();
    let row = input.cost.tasks.iter().find(|r| r.id == id);
    let (post_code_at, post_test_at) = input
        .critiques
        .iter()
        .find(|(cid, _, _)| *cid == id)
        .map(|(_, a, b)| (a.clone(), b.clone()))
        .unwrap_or((None, None));
    TaskStory {
        minutes: row.map_or(0.0, |r| r.minutes),
        rollbacks: attempts.iter().filter(|a| a.rollback_ref.is_some()).count(),
        tokens: row.filter(|_| ledger_ok).map(|r| r.total_tokens),
        output_tokens: row.filter(|_| ledger_ok).map(|r| r.tokens.output),
        usd: row.and_then(|r| r.usd),
        followups: input
            .followups
            .iter()
            .filter(|f| f.task.as_deref() == Some(id.as_str()))
            .map(|f| {
                format!(
                    "{} {} {} ({}): {}",
                    f.id,
                    f.category,
                    f.priority,
                    f.status,
                    crate::support::visible::line(&f.title)
                )
            })
            .collect(),
        title: t.title.clone(),
        checked: t.checked,
        attempts,
        evidence,
        post_code_at,
        post_test_at,
        id,
    }
}

/// Halts from the events log (a guard cap, or a task verb that halted), each with the
/// `resume` that cleared it; a halt still in the state but not in the log is added.
fn halts(input: &Inputs<'_>) -> Vec<Halt> {
    let mut out: Vec<Halt> = Vec::new();
    for e in input.events {
        let event = e.get("event").and_then(Value::as_str).unwrap_or("");
        let at = str_of(e, "at").unwrap_or_default();
        let halted = (event == "stop"
            && e.get("decision").and_then(Value::as_str) == Some("halt")
            && e.get("rule")
                .and_then(Value::as_str)
                .is_some_and(|r| r.starts_with("cap:")))
            || e.get("halted").and_then(Value::as_bool) == Some(true);
        if halted {
            let reason = str_of(e, "reason")
                .map(|r| format!("{event}: {r}"))
                .unwrap_or_else(|| {
                    format!("{event} of task {}", str_of(e, "task").unwrap_or_default())
                });
            out.push(Halt {
                at,
                reason,
                resumed_at: None,
            });
        } else if event == "resume" && e.get("cleared").is_some_and(|c| !c.is_null()) {
            if let Some(open) = out.iter_mut().rev().find(|h| h.resumed_at.is_none()) {
                open.resumed_at = Some(at);
            }
        }
    }
    let halt = input.state.halt();
    if let Some(at) = halt.and_then(|h| h.at.get()).and_then(Timestamp::text) {
        if !out.iter().any(|h| h.resumed_at.is_none()) {
            out.push(Halt {
                at: at.to_string(),
                reason: input.state.halt_reason().unwrap_or("halted").to_string(),
                resumed_at: None,
            });
        }
    }
    out
}

fn fmt_min(m: f64) -> String {
    format!("{m:.1}")
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("-")
}

fn count_cell(n: Option<u64>) -> String {
    n.map_or("-".into(), |n| n.to_string())
}

fn usd_cell(v: Option<f64>) -> String {
    v.map_or("-".into(), |u| format!("{u:.2}"))
}

/// The totals sentence (Markdown and HTML share it; HTML escapes it).
fn totals_text(t: &Totals) -> String {
    let usd = t.usd.map(|u| format!(", ${u:.2}")).unwrap_or_default();
    let note = t
        .cost_note
        .as_ref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    format!(
        "{}/{} tasks checked, {} attempts ({} failed), {} rollbacks, {} halts, {} minutes, {} stops, output tokens {}{}, input tokens {}; ledger {} tokens ({} on no task){usd}{note}.",
        t.checked,
        t.tasks,
        t.attempts,
        t.failed,
        t.rollbacks,
        t.halts,
        fmt_min(t.minutes),
        t.stops,
        t.output_tokens,
        t.max_output_tokens.map(|m| format!(" of {m}")).unwrap_or_default(),
        t.input_tokens,
        t.ledger_tokens,
        t.overhead_tokens
    )
}

/// The report as Markdown.
pub(crate) fn markdown(r: &Report) -> String {
    let mut s = format!("# specrun report: {}\n\n", r.spec);
    s.push_str(&format!(
        "Phase **{}**, started {}, last activity {}.\n\n",
        r.phase,
        opt(&r.started_at),
        opt(&r.ended_at)
    ));
    s.push_str("| Task | Title | Done | Attempts | Minutes | Tokens | Out tokens | USD | Evidence | Reviews | Follow-ups | Rollbacks |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for t in &r.tasks {
        let attempts: Vec<String> = t
            .attempts
            .iter()
            .map(|a| format!("#{} {}", a.n, a.status))
            .collect();
        let evidence = t.evidence.as_ref().map_or("-".into(), |e| {
            format!(
                "exit {} `{}`",
                e.exit_code.map_or("?".into(), |c| c.to_string()),
                e.command.replace('|', "\\|")
            )
        });
        let reviews = match (&t.post_code_at, &t.post_test_at) {
            (Some(_), Some(_)) => "post-code, post-test",
            (Some(_), None) => "post-code",
            (None, Some(_)) => "post-test",
            (None, None) => "-",
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            t.id,
            t.title.replace('|', "\\|"),
            if t.checked { "yes" } else { "no" },
            if attempts.is_empty() {
                "-".into()
            } else {
                attempts.join(", ")
            },
            fmt_min(t.minutes),
            count_cell(t.tokens),
            count_cell(t.output_tokens),
            usd_cell(t.usd),
            evidence,
            reviews,
            if t.followups.is_empty() {
                "-".into()
            } else {
                t.followups.join("; ").replace('|', "\\|")
            },
            t.rollbacks
        ));
    }
    let failures: Vec<String> = r
        .tasks
        .iter()
        .flat_map(|t| {
            t.attempts
                .iter()
                .filter(|a| a.reason.is_some())
                .map(move |a| (t, a))
        })
        .map(|(t, a)| format!("- {} attempt {}: {}", t.id, a.n, opt(&a.reason)))
        .collect();
    if !failures.is_empty() {
        s.push_str("\n## Failed attempts\n\n");
        s.push_str(&failures.join("\n"));
        s.push('\n');
    }
    s.push_str("\n## Halts\n\n");
    if r.halts.is_empty() {
        s.push_str("None.\n");
    }
    for h in &r.halts {
        s.push_str(&format!(
            "- {}: {} (resumed {})\n",
            h.at,
            h.reason,
            opt(&h.resumed_at)
        ));
    }
    s.push_str(&format!("\n## Totals\n\n{}\n", totals_text(&r.totals)));
    s
}

/// HTML-escaped, and every control character shown as `\xNN` (`visible`): the page is
/// read in a browser but also with `cat` and `less`.
fn esc(text: &str) -> String {
    crate::support::visible::text(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The timeline: one row per task, one bar per attempt (green done, red failed, blue
/// running), a red line at each halt.
pub(crate) fn timeline_svg(r: &Report, now: DateTime<Utc>) -> String {
    let start = r
        .started_at
        .as_deref()
        .and_then(parse)
        .or_else(|| {
            r.tasks
                .iter()
                .flat_map(|t| &t.attempts)
                .filter_map(|a| a.started_at.as_deref().and_then(parse))
                .min()
        })
        .unwrap_or(now);
    let end = r
        .ended_at
        .as_deref()
        .and_then(parse)
        .unwrap_or(now)
        .max(start);
    let span = crate::model::state::time::ms_between(start, end).max(1) as f64;
    let (left, width, row) = (120.0, 760.0, 26.0);
    let height = 40.0 + row * r.tasks.len() as f64;
    let x = |at: &str| -> f64 {
        parse(at).map_or(left, |t| {
            let at = crate::model::state::time::signed_ms(start, t) as f64;
            left + width * (at / span).clamp(0.0, 1.0)
        })
    };
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" id="timeline" role="img" aria-label="timeline" width="{}" height="{height}" viewBox="0 0 {} {height}">"#,
        left + width + 20.0,
        left + width + 20.0
    );
    svg.push_str(&format!(
        r##"<rect x="{left}" y="10" width="{width}" height="{}" fill="#f6f8fa" stroke="#d0d7de"/>"##,
        height - 30.0
    ));
    let end_str = end.to_rfc3339();
    for (i, t) in r.tasks.iter().enumerate() {
        let y = 16.0 + row * i as f64;
        svg.push_str(&format!(
            r##"<text x="{}" y="{}" font-size="12" text-anchor="end" fill="#24292f">{}</text>"##,
            left - 8.0,
            y + 13.0,
            esc(&t.id)
        ));
        for a in &t.attempts {
            let Some(s) = a.started_at.as_deref() else {
                continue;
            };
            let x0 = x(s);
            let x1 = x(a.ended_at.as_deref().unwrap_or(&end_str)).max(x0 + 3.0);
            let colour = match a.status.as_str() {
                "done" => "#2da44e",
                "failed" => "#cf222e",
                _ => "#0969da",
            };
            svg.push_str(&format!(
                r#"<rect class="attempt {}" x="{x0:.1}" y="{y}" width="{:.1}" height="16" rx="3" fill="{colour}"><title>{} attempt {}: {}</title></rect>"#,
                esc(&a.status),
                x1 - x0,
                esc(&t.id),
                a.n,
                esc(&a.status)
            ));
        }
    }
    for h in &r.halts {
        let hx = x(&h.at);
        svg.push_str(&format!(
            r##"<line class="halt" x1="{hx:.1}" y1="10" x2="{hx:.1}" y2="{}" stroke="#cf222e" stroke-width="2" stroke-dasharray="4 3"><title>halt: {}</title></line>"##,
            height - 20.0,
            esc(&h.reason)
        ));
    }
    svg.push_str(&format!(
        r##"<text x="{left}" y="{}" font-size="11" fill="#57606a">{}</text><text x="{}" y="{}" font-size="11" text-anchor="end" fill="#57606a">{}</text></svg>"##,
        height - 4.0,
        esc(&start.format("%Y-%m-%d %H:%M:%S").to_string()),
        left + width,
        height - 4.0,
        esc(&end.format("%H:%M:%S").to_string())
    ));
    svg
}

/// One self-contained page: inline CSS and SVG, no scripts, no network.
pub(crate) fn html(r: &Report, now: DateTime<Utc>) -> String {
    let mut rows = String::new();
    for t in &r.tasks {
        let attempts: Vec<String> = t
            .attempts
            .iter()
            .map(|a| {
                let why = a
                    .reason
                    .as_deref()
                    .map(|w| format!(": {}", esc(w)))
                    .unwrap_or_default();
                format!("#{} {}{why}", a.n, esc(&a.status))
            })
            .collect();
        let evidence = t.evidence.as_ref().map_or("-".into(), |e| {
            format!(
                "exit {} <code>{}</code>",
                e.exit_code.map_or("?".into(), |c| c.to_string()),
                esc(&e.command)
            )
        });
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&t.id),
            esc(&t.title),
            if t.checked { "&#10003;" } else { "" },
            if attempts.is_empty() { "-".into() } else { attempts.join("<br>") },
            fmt_min(t.minutes),
            count_cell(t.tokens),
            count_cell(t.output_tokens),
            usd_cell(t.usd),
            evidence,
            esc(opt(&t.post_code_at)),
            esc(opt(&t.post_test_at)),
            if t.followups.is_empty() { "-".into() } else { esc(&t.followups.join("; ")) },
            t.rollbacks
        ));
    }
    let halts: String = if r.halts.is_empty() {
        "<li>None</li>".into()
    } else {
        r.halts
            .iter()
            .map(|h| {
                format!(
                    "<li>{}: {} (resumed {})</li>",
                    esc(&h.at),
                    esc(&h.reason),
                    esc(opt(&h.resumed_at))
                )
            })
            .collect()
    };
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>specrun report: {name}</title>
<style>
body{{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#24292f}}
table{{border-collapse:collapse;margin:12px 0}}td,th{{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}}
th{{background:#f6f8fa}}code{{font-size:12px}}.legend span{{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}}
</style></head><body>
<h1>specrun report: {name}</h1>
<p>Phase <b>{phase}</b>, started {started}, last activity {ended}.</p>
<h2>Timeline</h2>
<p class="legend"><span style="background:#2da44e"></span>done<span style="background:#cf222e"></span>failed<span style="background:#0969da"></span>running<span style="border-left:2px dashed #cf222e"></span>halt</p>
{svg}
<h2>Tasks</h2>
<table><tr><th>Task</th><th>Title</th><th>Done</th><th>Attempts</th><th>Minutes</th><th>Tokens</th><th>Out tokens</th><th>USD</th><th>Evidence</th><th>Reviews (post-code / post-test)</th><th>Follow-ups</th><th>Rollbacks</th></tr>
{rows}</table>
<h2>Halts</h2><ul>{halts}</ul>
<h2>Totals</h2>
<p>{totals}</p>
</body></html>
"#,
        name = esc(&r.spec),
        phase = esc(&r.phase),
        started = esc(opt(&r.started_at)),
        ended = esc(opt(&r.ended_at)),
        svg = timeline_svg(r, now),
        totals = esc(&totals_text(&r.totals)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Report {
        let state = json!({
            "phase": "execution", "startedAt": "2026-01-01T00:00:00Z",
            "usage": {"outputTokens": 900, "inputTokens": 50}, "budget": {"maxOutputTokens": 5000},
            "ledger": {
                "tasks": {"1.1": {"byModel": {"m": {"input": 100000, "output": 300, "cacheRead": 20000}}}},
                "run": {"byModel": {"m": {"output": 50}}}
            },
            "attempts": {
                "1.1": [{"n": 1, "status": "failed", "startedAt": "2026-01-01T00:00:00Z", "endedAt": "2026-01-01T00:10:00Z", "reason": "tests <red>"},
                        {"n": 2, "status": "done", "startedAt": "2026-01-01T00:12:00Z", "endedAt": "2026-01-01T00:20:00Z"}],
                "1.2": [{"n": 1, "status": "failed", "startedAt": "2026-01-01T00:21:00Z", "endedAt": "2026-01-01T00:25:00Z", "reason": "rolled back", "rollbackRef": "refs/specrun/x"}]
            },
            "taskEvidence": {"1.1": {"command": "cargo test a|b", "exitCode": 0, "startedAt": "2026-01-01T00:15:00Z"}}
        });
        let tasks = crate::model::tasks::parse("- [x] 1.1 One\n- [ ] 1.2 Two\n- [ ] 1.3 Three\n");
        let now = parse("2026-01-01T01:00:00Z").unwrap();
        let prices = crate::cost::prices::parse(r#"{"prices": {"m": {"input": 3, "output": 15}}}"#)
            .unwrap()
            .unwrap();
        let cost = crate::cost::report(
            &crate::model::state::State::from_value(&state).unwrap(),
            &tasks,
            Ok(Some(&prices)),
            now,
        );
        let events = vec![
            json!({"at": "2026-01-01T00:25:00Z", "event": "task-rollback", "task": "1.2", "halted": true}),
            json!({"at": "2026-01-01T00:30:00Z", "event": "resume", "cleared": "maxTaskIterations"}),
            json!({"at": "2026-01-01T00:40:00Z", "event": "stop", "decision": "halt", "rule": "cap:global", "reason": "global cap"}),
        ];
        build(&Inputs {
            spec: "demo",
            state: &State::from_value(&state).unwrap(),
            tasks: &tasks,
            followups: &[],
            critiques: &[("1.1".into(), Some("2026-01-01T00:16:00Z".into()), None)],
            events: &events,
            cost: &cost,
            now,
        })
    }

    #[test]
    fn the_story_has_attempts_durations_halts_and_totals() {
        let r = sample();
        assert_eq!(r.tasks[0].attempts.len(), 2);
        assert_eq!(r.tasks[0].minutes, 18.0);
        // Per-task figures are the cost table's: the ledger, priced.
        assert_eq!(r.tasks[0].tokens, Some(120_300));
        assert_eq!(r.tasks[0].output_tokens, Some(300));
        let usd = r.tasks[0].usd.unwrap();
        assert!((usd - 0.3105).abs() < 1e-9, "{usd}");
        // Attempts but no ledger charge: 0 tokens, as status shows; never started: none.
        assert_eq!((r.tasks[1].tokens, r.tasks[1].minutes), (Some(0), 4.0));
        assert_eq!((r.tasks[2].tokens, r.tasks[2].usd), (None, None));
        assert_eq!(
            (r.totals.ledger_tokens, r.totals.overhead_tokens),
            (120_350, 50)
        );
        assert_eq!(r.tasks[1].rollbacks, 1);
        assert_eq!(r.halts.len(), 2);
        assert_eq!(
            r.halts[0].resumed_at.as_deref(),
            Some("2026-01-01T00:30:00Z")
        );
        assert_eq!(r.halts[1].resumed_at, None);
        assert_eq!(
            (r.totals.attempts, r.totals.failed, r.totals.halts),
            (3, 2, 2)
        );
        assert_eq!(r.totals.minutes, 40.0);
        let md = markdown(&r);
        assert!(md.contains("| 1.1 | One | yes | #1 failed, #2 done | 18.0 | 120300 | 300 | 0.31 | exit 0 `cargo test a\\|b` | post-code |"), "{md}");
        assert!(
            md.contains("| 1.3 | Three | no | - | 0.0 | - | - | - |"),
            "{md}"
        );
        assert!(
            md.contains("ledger 120350 tokens (50 on no task), $0.31."),
            "{md}"
        );
        assert!(md.contains("- 1.2 attempt 1: rolled back"), "{md}");
    }

    #[test]
    fn the_page_is_self_contained_and_escaped() {
        let r = sample();
        let page = html(&r, parse("2026-01-01T01:00:00Z").unwrap());
        assert!(!page.contains("<script"), "no scripts");
        assert!(
            !page.contains("http://") || page.matches("http://").count() == 1,
            "only the SVG namespace"
        );
        assert!(page.contains("tests &lt;red&gt;"));
        assert_eq!(page.matches("class=\"attempt ").count(), 3);
        assert_eq!(page.matches("class=\"halt\"").count(), 2);
    }
}
