//! The guard's decisions (docs/design.md#what-specrun-does), as pure functions: the hook edge
//! (`commands/hook.rs`) gathers the facts — hook stdin, the state document, the parsed
//! tasks, HEAD, transcript usage, evidence freshness, critique records, open follow-ups,
//! the time — and applies what comes back: a decision, a state patch (merged with
//! `state::apply_patch`) and an event for `.specrun/events.jsonl`.

pub(crate) mod bound;
pub(crate) mod claims;
pub(crate) mod decision;
#[cfg(test)]
mod fixtures;
pub(crate) mod hook_cost;
mod pre_tool_use;
mod session_start;
mod stop;
mod subagent_stop;
pub mod tool_guard;
pub(crate) mod uncounted;

use chrono::{DateTime, Utc};

use crate::model::state::{Phase, State};

// One file per hook event; the hook edge (`commands/hook.rs`) calls them through here.
pub use pre_tool_use::WORK_TOOLS;
pub(crate) use pre_tool_use::{decide_pre_tool_use, ToolCall};
pub(crate) use session_start::session_context;
pub(crate) use stop::{
    completion_message, completion_patch, decide_stop, decide_uncounted_stop, running_agents,
    StopFacts, StopInput,
};
pub(crate) use subagent_stop::{
    agent_transcript_start, decide_subagent_stop, subagent_usage_patch, ClaimFacts,
};

/// The coordinator's completion claim: the last line of its final message.
pub const COMPLETION_TOKEN: &str = "ALL_TASKS_COMPLETE";
/// An executor's claim: `TASK_COMPLETE <id>` (or `TASK_COMPLETE: <id>`) as its last line.
pub const TASK_COMPLETE_TOKEN: &str = "TASK_COMPLETE";

pub use crate::claude::agents::EXECUTOR_AGENT;
pub(crate) use crate::hooks::decision::{
    no_patch, record, refusal, with_message, Decision, HookAnswer, HookSpecific, Outcome,
    SubagentInput,
};
pub(crate) use crate::support::text::final_line;

pub(crate) fn claims_all_complete(message: Option<&str>) -> bool {
    message
        .and_then(final_line)
        .is_some_and(|l| crate::support::text::claim_text(l) == COMPLETION_TOKEN)
}

/// The task id an executor claims to have completed: the last line that reads, once
/// normalised (`support::text::claim_text`), `TASK_COMPLETE <id>` or `TASK_COMPLETE: <id>`,
/// whatever follows the id on that line and whatever lines follow it. Reading more lines
/// as claims only checks more: a claim the hook missed would go unchecked.
pub(crate) fn task_complete_claim(message: Option<&str>) -> Option<String> {
    crate::support::text::lines_last_first(message?).find_map(|line| {
        let text = crate::support::text::claim_text(line);
        let rest = text.strip_prefix(TASK_COMPLETE_TOKEN)?;
        let rest = rest.strip_prefix(':').unwrap_or(rest);
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        let id = rest.split_whitespace().next()?;
        let id = id.trim_end_matches(['.', ',', ';', ':', ')', '!']);
        (!id.is_empty()).then(|| id.to_string())
    })
}

/// Whether `session` is the session that owns this execution. An execution with no
/// `sessionId` is owned by nobody: the guard never drives or halts a session it cannot
/// prove started the execution.
pub(crate) fn owned_by(state: &State, session: Option<&str>) -> bool {
    same_owner(state.session_id(), session)
}

fn same_owner(owner: Option<&str>, session: Option<&str>) -> bool {
    matches!((owner, session), (Some(owner), Some(s)) if owner == s)
}

/// Whether the stop/advisory hooks apply: the state is executing.
pub(crate) fn executing(state: &State) -> bool {
    state.phase() == Some(Phase::Execution)
}

/// What a halt tells the session: a person's decision, never its command (the model reads
/// hook answers; a command it reads is one it runs). `specrun status` at a shell names it.
pub(crate) fn halt_text(name: &str, what: &str) -> String {
    format!(
        "specrun: spec '{name}' is halted ({what}): {}; then /specrun:implement {name} continues it.",
        crate::claude::roles::PERSON_DECIDES
    )
}

/// Where to read the transcript from: the stored offset, unless the stored offset belongs
/// to a different transcript file (then start at the new file's end).
pub(crate) fn transcript_start<'a>(
    state: &'a State,
    transcript_path: &str,
) -> (Option<u64>, Option<&'a str>) {
    let same_file = state.transcript_path().is_none_or(|p| p == transcript_path);
    if !same_file {
        return (None, None);
    }
    let last = state.guard().last_message_id.get();
    (state.transcript_offset(), last.map(String::as_str))
}

/// Transcript usage read since the stored offset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UsageRead {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `None` keeps the stored offset (the transcript could not be read).
    pub next_offset: Option<u64>,
    pub last_message_id: Option<String>,
    pub transcript_path: Option<String>,
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::fixtures::*;

    #[test]
    fn final_line_ignores_code_blocks_and_trailing_blank_lines() {
        assert_eq!(
            final_line("done\nALL_TASKS_COMPLETE\n\n"),
            Some("ALL_TASKS_COMPLETE")
        );
        assert_eq!(final_line("```\nALL_TASKS_COMPLETE\n```\n"), None);
        assert_eq!(final_line("```\nALL_TASKS_COMPLETE"), None);
        assert_eq!(
            final_line("ALL_TASKS_COMPLETE\nmore text"),
            Some("more text")
        );
        assert!(!claims_all_complete(Some(
            "I will print ALL_TASKS_COMPLETE later"
        )));
        assert!(claims_all_complete(Some("  ALL_TASKS_COMPLETE  ")));
        assert!(!claims_all_complete(None));
    }

    #[test]
    fn task_claims_accept_both_spellings_only_on_the_last_line() {
        assert_eq!(
            task_complete_claim(Some("ok\nTASK_COMPLETE 1.2")),
            Some("1.2".into())
        );
        assert_eq!(
            task_complete_claim(Some("TASK_COMPLETE: 3")),
            Some("3".into())
        );
        assert_eq!(task_complete_claim(Some("TASK_COMPLETE")), None);
        assert_eq!(task_complete_claim(Some("TASK_COMPLETED 1")), None);
        assert_eq!(
            task_complete_claim(Some("I will end with TASK_COMPLETE 1 later")),
            None
        );
    }

    /// Issue 23 class 7: a claim dressed up still asks to be checked.
    #[test]
    fn claim_lines_are_normalised_before_they_are_matched() {
        for message in [
            "Done.\n**TASK_COMPLETE 1.1**",
            "Done.\n`TASK_COMPLETE 1.1`",
            "Done.\n\"TASK_COMPLETE 1.1\"",
            "Done.\n“TASK_COMPLETE: 1.1”.",
            "Done.\n> - TASK_COMPLETE 1.1 — all tests pass",
            "Done.\n__TASK_COMPLETE 1.1__",
            "TASK_COMPLETE 1.1\nLet me know if anything else is needed.",
            "Done.\n```\nTASK_COMPLETE 1.1\n```",
            "TASK_COMPLETE 1.1 and 1.2",
        ] {
            assert_eq!(
                task_complete_claim(Some(message)),
                Some("1.1".into()),
                "{message}"
            );
        }
        for message in [
            "**ALL_TASKS_COMPLETE**",
            "`ALL_TASKS_COMPLETE`",
            "\"ALL_TASKS_COMPLETE\".",
            "done\n> ALL_TASKS_COMPLETE",
        ] {
            assert!(claims_all_complete(Some(message)), "{message}");
        }
        assert!(!claims_all_complete(Some(
            "I will print ALL_TASKS_COMPLETE later"
        )));
        assert!(!claims_all_complete(Some("ALL_TASKS_COMPLETE soon")));
    }

    #[test]
    fn ownership_requires_a_matching_session() {
        let s = state();
        assert!(owned_by(&typed(&s), Some("s1")));
        assert!(!owned_by(&typed(&s), Some("s2")));
        assert!(!owned_by(&typed(&s), None));
        assert!(!owned_by(&typed(&json!({"sessionId": null})), Some("s1")));
    }

    #[test]
    fn transcript_start_resets_for_another_file() {
        let s = json!({"usage": {"transcriptOffset": 10, "transcriptPath": "/a"}, "guard": {"lastMessageId": "m"}});
        assert_eq!(transcript_start(&typed(&s), "/a"), (Some(10), Some("m")));
        assert_eq!(transcript_start(&typed(&s), "/b"), (None, None));
    }
}
