//! `specrun statusline`: one short line for Claude Code's `statusLine` setting. Reads the
//! status JSON Claude Code sends on stdin (`workspace.current_dir`, `cwd`), then only the
//! active spec's small files: no git, no lock, no transcript. Prints nothing without an
//! execution; never fails (a status line must not show an error box).

use crate::error::ExitStatus;
use std::path::Path;

use chrono::Utc;
use serde_json::Value;

use crate::io::output;
use crate::io::project::Project;
use crate::io::store;
use crate::model::state::{Phase, State, Timestamp};
use crate::model::tasks;
use crate::next::minutes_since;

/// At most this many characters: it shares the line with Claude Code's own status.
const MAX: usize = 72;

pub(crate) fn run(cwd: Option<&Path>) -> ExitStatus {
    // Bounded like a hook's: a status line must never hang Claude Code's prompt.
    let stdin = store::read_stdin_within(1 << 20, std::time::Duration::from_secs(2));
    if let Some(text) = line_for(&stdin, cwd) {
        output::line(&text);
    }
    ExitStatus::Success
}

fn project_of(stdin: &[u8], cwd: Option<&Path>) -> Option<Project> {
    let doc: Value = serde_json::from_slice(stdin).unwrap_or(Value::Null);
    let dir = doc
        .pointer("/workspace/current_dir")
        .or_else(|| doc.get("cwd"))
        .and_then(Value::as_str);
    match dir {
        Some(d) => Project::discover(Some(Path::new(d))).ok(),
        None => Project::discover(cwd).ok(),
    }
}

fn line_for(stdin: &[u8], cwd: Option<&Path>) -> Option<String> {
    let project = project_of(stdin, cwd)?;
    let spec = project.spec(None).ok()??;
    // Read leniently: a mistyped field reads as absent, the line still shows the rest.
    let state = crate::model::state::read_lenient(&spec.state_path()).ok()??;
    let path = spec.tasks_path();
    let text = store::read_text(&path, "tasks file").ok()?;
    // Counts and the next task only (a full parse was most of the line's cost), in the
    // file's format.
    let (counts, next) = crate::model::tasks_file::headline(&path, &text);
    Some(compose(&spec.name, &state, counts, next, Utc::now()))
}

/// The line: spec, i/n, then the halt, the completion, or the current task and the
/// headroom left under each cap.
pub(crate) fn compose(
    name: &str,
    state: &State,
    c: tasks::Counts,
    next: Option<(String, String)>,
    now: chrono::DateTime<Utc>,
) -> String {
    let v = state;
    let head = format!("specrun {name} {}/{}", c.completed, c.total);
    let text = if let Some(kind) = v.halt_kind() {
        format!("{head} HALTED ({kind}): {}", v.resume_command(name))
    } else if v.phase() == Some(Phase::Completed) {
        format!("{head} complete")
    } else if v.phase() != Some(Phase::Execution) {
        let phase = v.phase().map_or("not started", Phase::as_str);
        format!("{head} {phase}")
    } else {
        let mut parts = vec![head];
        if let Some((label, title)) = next {
            parts.push(format!("{label} {title}"));
        }
        parts.push(headroom(v, now));
        let tail = parts.split_off(1);
        let fixed = parts[0].chars().count() + tail.last().map_or(0, |h| h.chars().count()) + 6;
        let mut out = parts.remove(0);
        if tail.len() == 2 {
            let room = MAX.saturating_sub(fixed).max(8);
            out.push_str(" · ");
            out.push_str(&clip(&tail[0], room));
        }
        out.push_str(" · ");
        out.push_str(tail.last().map(String::as_str).unwrap_or(""));
        out
    };
    clip(&text, MAX + 20)
}

/// The caps' headroom: task attempts, stops, and tokens and minutes when capped.
fn headroom(v: &State, now: chrono::DateTime<Utc>) -> String {
    let mut parts = vec![
        format!(
            "try {}/{}",
            v.task_iteration().saturating_add(1),
            v.max_task_iterations()
        ),
        format!(
            "stops {}/{}",
            v.global_iteration(),
            v.max_global_iterations()
        ),
    ];
    if let Some(max) = v.max_output_tokens() {
        parts.push(format!(
            "tok {}%",
            (v.output_tokens() * 100).checked_div(max).unwrap_or(0)
        ));
    }
    let start = v.started_at().and_then(Timestamp::text);
    if let (Some(max), Some(start)) = (v.max_minutes(), start) {
        if let Some(used) = minutes_since(start, now) {
            parts.push(format!("{}m left", max.saturating_sub(used)));
        }
    }
    parts.join(" ")
}

fn clip(text: &str, max: usize) -> String {
    crate::support::chars::clip(text, max, "…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_running_execution_shows_task_and_headroom_in_one_short_line() {
        let (counts, next) = tasks::headline(&format!(
            "- [x] 1.1 A\n- [ ] 1.2 {}\n",
            "Long title ".repeat(20)
        ));
        let state = json!({"phase": "execution", "taskIteration": 1, "maxTaskIterations": 5,
            "globalIteration": 7, "maxGlobalIterations": 30,
            "usage": {"outputTokens": 500}, "budget": {"maxOutputTokens": 1000, "maxMinutes": 60},
            "startedAt": "2026-01-01T00:00:00Z"});
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:10:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let line = compose("demo", &State::lenient(&state), counts, next, now);
        assert!(
            line.starts_with("specrun demo 1/2 · 1.2 Long title"),
            "{line}"
        );
        assert!(
            line.ends_with("try 2/5 stops 7/30 tok 50% 50m left"),
            "{line}"
        );
        assert!(line.chars().count() <= MAX + 20, "{line}");
    }

    /// The state is not type-checked here: any JSON object makes a line, never a panic.
    #[test]
    fn a_mistyped_state_still_makes_a_line() {
        let (counts, next) = tasks::headline("- [ ] 1 A\n");
        for state in [
            json!({"halt": "x", "phase": 7, "budget": [1], "usage": "u", "startedAt": 5}),
            json!({"phase": "execution", "halt": {"kind": 3}, "maxTaskIterations": "9"}),
            json!({"phase": "execution", "budget": {"maxOutputTokens": -1, "maxMinutes": "x"},
                   "usage": {"outputTokens": "many"}, "startedAt": "yesterday"}),
        ] {
            let line = compose(
                "demo",
                &State::lenient(&state),
                counts,
                next.clone(),
                Utc::now(),
            );
            assert!(line.starts_with("specrun demo 0/1"), "{line}");
        }
    }

    #[test]
    fn a_halt_names_the_way_out() {
        let (counts, next) = tasks::headline("- [ ] 1 A\n");
        let state = json!({"phase": "execution", "halt": {"kind": "task-cap"},
            "taskIteration": 5, "maxTaskIterations": 5});
        assert_eq!(
            compose("demo", &State::lenient(&state), counts, next, Utc::now()),
            "specrun demo 0/1 HALTED (task-cap): specrun resume --spec demo --raise-task 10"
        );
    }
}
