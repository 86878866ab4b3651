//! What a supervised `claude -p --output-format stream-json` run says, and what to do
//! next (issue 29): one stream line read into the facts the supervisor needs, the `result`
//! event's fields (subtype, cost, turns, permission denials), how an attempt ended, and
//! whether to resume the session once. Pure: lines and endings in, decisions out.

use serde::Serialize;
use serde_json::Value;

/// The facts of one stream-json line the supervisor acts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Line {
    /// `{"type":"system","subtype":"init",…}`: the session started (its id, the client's
    /// version when the line carries it).
    Init {
        session_id: Option<String>,
        version: Option<String>,
    },
    /// `{"type":"result",…}`: the run's last word.
    Result(Outcome),
    /// Any other event: progress, nothing more.
    Other,
    /// Not a JSON object (a client's stray print): progress too, never a failure.
    Unparsed,
}

/// The `result` event, as the ledger records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Outcome {
    /// `success`, `error_max_turns`, `error_during_execution`, `error_max_budget_usd`, …
    pub subtype: String,
    pub is_error: bool,
    pub num_turns: u64,
    pub total_cost_usd: f64,
    /// What Claude Code denied, in order: `permission_denials[].tool_name` and what it was
    /// asked (`Bash: <command>`, cut), as a person reading the summary needs it.
    pub permission_denials: Vec<String>,
    pub session_id: Option<String>,
    /// `api_error_status` of an API error (`API Error: 529 …`).
    pub api_error_status: Option<u64>,
    /// The result text, cut to a line a person reads.
    pub result: String,
}

/// Reads one line of the stream.
pub(crate) fn read_line(line: &str) -> Line {
    let Ok(Value::Object(event)) = serde_json::from_str::<Value>(line.trim()) else {
        return Line::Unparsed;
    };
    let text = |key: &str| event.get(key).and_then(Value::as_str).map(str::to_string);
    match (text("type").as_deref(), text("subtype").as_deref()) {
        (Some("system"), Some("init")) => Line::Init {
            session_id: text("session_id"),
            version: text("claude_code_version"),
        },
        (Some("result"), _) => Line::Result(Outcome {
            subtype: text("subtype").unwrap_or_default(),
            is_error: event.get("is_error").and_then(Value::as_bool) == Some(true),
            num_turns: event.get("num_turns").and_then(Value::as_u64).unwrap_or(0),
            total_cost_usd: event
                .get("total_cost_usd")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            permission_denials: denials(event.get("permission_denials")),
            session_id: text("session_id"),
            api_error_status: event.get("api_error_status").and_then(Value::as_u64),
            result: crate::support::chars::clip(&text("result").unwrap_or_default(), 300, "…"),
        }),
        _ => Line::Other,
    }
}

fn denials(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|d| {
            let tool = d
                .get("tool_name")
                .and_then(Value::as_str)
                .unwrap_or("a tool");
            let input = &d["tool_input"];
            let what = ["command", "file_path", "subagent_type"]
                .iter()
                .find_map(|k| input.get(*k).and_then(Value::as_str));
            match what {
                Some(w) => format!("{tool}: {}", crate::support::chars::clip(w, 120, "…")),
                None => tool.to_string(),
            }
        })
        .collect()
}

/// How one attempt (one `claude -p` process) ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ending {
    /// The `result` event arrived (the process may have needed stopping after it).
    Result(Outcome),
    /// No stream line for the no-progress bound: stopped.
    Silent { secs: u64 },
    /// The run's wall-clock bound passed: stopped.
    OutOfTime { secs: u64 },
    /// The process exited without a `result` event.
    Exited { code: i32 },
}

impl Ending {
    /// One line a person reads: what happened to the attempt.
    pub(crate) fn describe(&self) -> String {
        match self {
            Ending::Result(o) if o.is_error => format!(
                "ended with result {} (error) after {} turns: {}",
                o.subtype, o.num_turns, o.result
            ),
            Ending::Result(o) => format!(
                "ended with result {} after {} turns",
                o.subtype, o.num_turns
            ),
            Ending::Silent { secs } => {
                format!("hung: no stream line for {secs} s (the no-progress bound), stopped")
            }
            Ending::OutOfTime { secs } => {
                format!("ran past the wall-clock bound of {secs} s, stopped")
            }
            Ending::Exited { code } => format!("exited {code} without a result event"),
        }
    }

    /// The tag events.jsonl records.
    pub(crate) fn tag(&self) -> &'static str {
        match self {
            Ending::Result(_) => "result",
            Ending::Silent { .. } => "hung",
            Ending::OutOfTime { .. } => "out-of-time",
            Ending::Exited { .. } => "exited",
        }
    }

    pub(crate) fn outcome(&self) -> Option<&Outcome> {
        match self {
            Ending::Result(o) => Some(o),
            _ => None,
        }
    }
}

/// API statuses worth one more try: rate limits, overload, a server's or a gateway's trouble.
const TRANSIENT_STATUS: [u64; 6] = [408, 429, 500, 502, 503, 529];

/// Whether an attempt that ended so is worth resuming: a hang, a crash without a result, or
/// a transient API error. A run out of time, a cap (turns, budget) or a finished run is not.
pub(crate) fn resumable(ending: &Ending) -> bool {
    match ending {
        Ending::Silent { .. } | Ending::Exited { .. } => true,
        Ending::OutOfTime { .. } => false,
        Ending::Result(o) => {
            o.is_error
                && (o
                    .api_error_status
                    .is_some_and(|s| TRANSIENT_STATUS.contains(&s))
                    || o.result.to_ascii_lowercase().contains("overloaded"))
        }
    }
}

/// What the supervisor does after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// `claude --resume <session_id>` once more.
    Resume,
    /// No more attempts: judge the spec's state.
    Judge,
}

/// One resume per run, and only for an ending worth it.
pub(crate) fn next(ending: &Ending, resumes_used: u32) -> Next {
    if resumes_used == 0 && resumable(ending) {
        Next::Resume
    } else {
        Next::Judge
    }
}

/// Where the spec stands after the run, as the exit code says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Completed,
    Halted {
        kind: String,
        reason: String,
    },
    Cancelled,
    /// Still executing (or never started) when the runs ended.
    Unfinished {
        phase: String,
    },
    /// A wave member's run (`--task`): its one task ticked with passing evidence.
    TaskDone {
        task: String,
    },
    /// A wave member's run whose task is not ticked with passing evidence.
    TaskNotDone {
        task: String,
    },
}

impl Verdict {
    /// The one sentence the run ends with.
    pub(crate) fn sentence(&self, spec: &str, last: &Ending, attempts: usize) -> String {
        let runs = if attempts == 1 {
            "1 attempt".to_string()
        } else {
            format!("{attempts} attempts, resumed once")
        };
        match self {
            Verdict::Completed => format!("spec {spec} completed ({runs})"),
            Verdict::Halted { kind, reason } => {
                format!(
                    "spec {spec} halted: {kind}: {reason} ({runs}; the last {})",
                    last.describe()
                )
            }
            Verdict::Cancelled => format!("spec {spec} was cancelled ({runs})"),
            Verdict::Unfinished { phase } => format!(
                "spec {spec} not completed (phase {phase}): the last attempt {} ({runs})",
                last.describe()
            ),
            Verdict::TaskDone { task } => {
                format!("task {task} of spec {spec} done ({runs})")
            }
            Verdict::TaskNotDone { task } => format!(
                "task {task} of spec {spec} not done (not ticked with passing evidence): the last attempt {} ({runs})",
                last.describe()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_init_and_result_lines_are_read() {
        let init = r#"{"type":"system","subtype":"init","session_id":"s1","claude_code_version":"2.1.332"}"#;
        assert_eq!(
            read_line(init),
            Line::Init {
                session_id: Some("s1".into()),
                version: Some("2.1.332".into())
            }
        );
        let result = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":7,"total_cost_usd":0.25,"permission_denials":[{"tool_name":"Write","tool_input":{}},{"tool_name":"Bash","tool_input":{"command":"rm -rf x"}}],"session_id":"s1","result":"x"}"#;
        let Line::Result(o) = read_line(result) else {
            panic!("not a result")
        };
        assert_eq!(o.subtype, "error_max_turns");
        assert!(o.is_error);
        assert_eq!((o.num_turns, o.total_cost_usd), (7, 0.25));
        assert_eq!(o.permission_denials, ["Write", "Bash: rm -rf x"]);
        assert_eq!(read_line("{\"type\":\"assistant\"}"), Line::Other);
        assert_eq!(read_line("Error: boom"), Line::Unparsed);
        assert_eq!(read_line("[1]"), Line::Unparsed);
    }

    #[test]
    fn a_hang_a_crash_and_a_transient_error_are_resumed_once() {
        let err = |status: Option<u64>, text: &str| {
            Ending::Result(Outcome {
                subtype: "success".into(),
                is_error: true,
                api_error_status: status,
                result: text.into(),
                ..Outcome::default()
            })
        };
        for ending in [
            Ending::Silent { secs: 5 },
            Ending::Exited { code: 1 },
            err(Some(529), "API Error: 529 overloaded"),
            err(None, "Overloaded"),
        ] {
            assert_eq!(next(&ending, 0), Next::Resume, "{ending:?}");
            assert_eq!(next(&ending, 1), Next::Judge, "{ending:?} twice");
        }
        for ending in [
            Ending::OutOfTime { secs: 9 },
            err(Some(400), "API Error: 400 bad"),
            Ending::Result(Outcome::default()),
        ] {
            assert_eq!(next(&ending, 0), Next::Judge, "{ending:?}");
        }
    }

    #[test]
    fn the_sentence_names_the_halt_and_the_ending() {
        let halted = Verdict::Halted {
            kind: "global-cap".into(),
            reason: "30 stops".into(),
        };
        let s = halted.sentence("demo", &Ending::Result(Outcome::default()), 1);
        assert!(s.contains("halted: global-cap: 30 stops"), "{s}");
        let s = Verdict::Unfinished {
            phase: "execution".into(),
        }
        .sentence("demo", &Ending::Silent { secs: 5 }, 2);
        assert!(
            s.contains("no stream line for 5 s") && s.contains("resumed once"),
            "{s}"
        );
    }
}
