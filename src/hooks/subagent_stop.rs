//! The SubagentStop hook's decision on an executor's `TASK_COMPLETE <id>` claim.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};

use crate::evidence::critique::Stored;
use crate::evidence::verify::Freshness;
use crate::hooks::*;
use crate::io::project::SpecPlace;
use crate::model::state::State;
use crate::support::shell::word as shell_word;

/// The facts a `TASK_COMPLETE <id>` claim is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimFacts {
    /// The task, if tasks.md has exactly one with this id: (checked, Verify command).
    pub task: Option<(bool, Option<String>)>,
    /// `taskEvidence.<id>` against the current tree.
    pub evidence: Freshness,
    /// Why that evidence does not count by its command (another command than the Verify).
    pub evidence_mismatch: Option<String>,
    /// `startedAt` of that evidence.
    /// When the evidence run ended (`startedAt + durationMs`).
    pub evidence_ended_at: Option<String>,
    /// The two self-critique records, judged (`critique::load`).
    pub post_code: Stored,
    pub post_test: Stored,
    /// More missing items, each with its fix: claims of the final message no fresh verify
    /// run supports (`claims::describe`), and an unchecked task's unmet proof gates
    /// (uncovered criteria, unjustified integrity findings).
    pub extra: Vec<String>,
}

/// What is missing before a task claim can be accepted, each with its command.
pub(crate) fn claim_missing(spec: SpecPlace<'_>, id: &str, facts: &ClaimFacts) -> Vec<String> {
    let spec_flag = crate::support::shell::spec_flag(spec.name);
    let id_q = shell_word(id);
    let mut missing = Vec::new();
    let verify = match &facts.task {
        None => {
            missing.push(format!(
                "task {id} does not exist (once) in {}: claim the id the task brief gave.",
                spec.tasks_file()
            ));
            None
        }
        Some((checked, verify)) => {
            if !checked {
                missing.push(format!(
                    "task {id} is unchecked: once its evidence and both critique records are in, `specrun task complete {id_q} --check {spec_flag}`."
                ));
            }
            verify.clone()
        }
    };
    if facts.evidence != Freshness::Fresh {
        // Without --command, `verify run --task` runs the task's own Verify command.
        let command = match verify.as_deref().filter(|v| !v.trim().is_empty()) {
            Some(_) => String::new(),
            None => " --command '<a command that proves it>'".into(),
        };
        missing.push(format!(
            "evidence for task {id} is {}: `specrun verify run --task {id_q} {spec_flag}{command}` must pass on the current code.",
            facts.evidence.as_str(),
        ));
    } else if let Some(why) = &facts.evidence_mismatch {
        missing.push(format!("evidence for task {id} does not count: {why}."));
    }
    for (stage, stored) in [
        ("post-code", &facts.post_code),
        ("post-test", &facts.post_test),
    ] {
        let record = format!("`specrun critique record --task {id_q} --stage {stage} {spec_flag} --file <record.json>`");
        // A record that is there but does not count is named as such, with its fault: the
        // executor fixes what it wrote rather than looking for a file that exists.
        match stored {
            Stored::Usable { .. } => {}
            Stored::Missing => missing.push(format!(
                "self-critique record {stage} is missing: {record}."
            )),
            Stored::Unusable(why) => missing.push(format!(
                "self-critique record {stage} is {}: record it again with {record}.",
                unusable_text(why)
            )),
        }
    }
    // The post-test review must look at the passing run, so it must come after it; a run
    // whose end cannot be computed cannot be shown to come first.
    if let (Some(_), None, Freshness::Fresh) = (
        facts.post_test.recorded_at(),
        &facts.evidence_ended_at,
        facts.evidence,
    ) {
        missing.push(format!(
            "the passing evidence run's end is unknown (taskEvidence.{id}.startedAt plus taskEvidence.{id}.durationMs is not a time), so the post-test self-critique cannot be shown to follow it: run `specrun verify run --task {id_q} {spec_flag}` again, then record the critique."
        ));
    }
    if let (Some(test_at), Some(ev_at), Freshness::Fresh) = (
        facts.post_test.recorded_at(),
        &facts.evidence_ended_at,
        facts.evidence,
    ) {
        if !crate::evidence::critique::reviews_run(test_at, ev_at) {
            missing.push(format!(
                "the post-test self-critique ({test_at}) predates the end of the passing evidence run ({ev_at}): record it again: `specrun critique record --task {id_q} --stage post-test {spec_flag} --file <record.json>`."
            ));
        }
    }
    missing.extend(facts.extra.iter().cloned());
    missing
}

/// "invalid: <fault>" as `critique::judge` words it, or "invalid (<why>)" for the rest
/// (open issues, no `recordedAt`, unreadable).
fn unusable_text(why: &str) -> String {
    match why.strip_prefix("invalid: ") {
        Some(fault) => format!("invalid ({fault})"),
        None => format!("invalid ({why})"),
    }
}

/// Decide an executor's SubagentStop that claims task `id`.
pub(crate) fn decide_subagent_stop(
    spec: SpecPlace<'_>,
    id: &str,
    facts: &ClaimFacts,
    input: &SubagentInput<'_>,
    state: &State,
    now: DateTime<Utc>,
) -> Outcome {
    let missing = claim_missing(spec, id, facts);
    let (decision, rule, patch) = judge_task_claim(id, &missing, input, state, now);
    let event = decision::record(&ClaimRecord {
        spec: spec.name,
        decision: decision.name(),
        rule,
        reason: decision.text(),
        task_id: id,
        agent_id: input.agent_id,
        missing: &missing,
        stop_hook_active: input.stop_hook_active,
    });
    Outcome::new(decision, rule, patch, event)
}

/// A task claim's fields (the SubagentStop of an executor naming its task).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClaimRecord<'a> {
    spec: &'a str,
    decision: &'static str,
    rule: &'a str,
    reason: Option<&'a str>,
    task_id: &'a str,
    agent_id: Option<&'a str>,
    missing: &'a [String],
    stop_hook_active: bool,
}

/// Accepted when nothing is `missing`; else refused once, then (re-prompted already)
/// allowed and kept in `unverifiedClaims` for the coordinator.
fn judge_task_claim(
    id: &str,
    missing: &[String],
    input: &SubagentInput<'_>,
    state: &State,
    now: DateTime<Utc>,
) -> (Decision, &'static str, Value) {
    if missing.is_empty() {
        return (
            Decision::Allow(None),
            "claim-accepted",
            decision::no_patch(),
        );
    }
    if !input.stop_hook_active {
        let r = refusal(
            format!("{TASK_COMPLETE_TOKEN} {id} not accepted. Missing:"),
            missing.iter().map(String::as_str),
            &format!("Do these, then end with {TASK_COMPLETE_TOKEN} {id} again."),
        );
        return (Decision::Block(r), "claim-refused", decision::no_patch());
    }
    let entry = crate::hooks::claims::UnverifiedClaim {
        task_id: Some(id),
        claims: None,
        missing,
        at: rfc3339(now),
        agent_id: input.agent_id,
    };
    let m = format!(
        "specrun: executor's TASK_COMPLETE {id} is unverified ({} item(s) missing); recorded in unverifiedClaims for the coordinator.",
        missing.len()
    );
    let patch = crate::hooks::claims::record_unverified(state, &entry).to_value();
    (Decision::Allow(Some(m)), "claim-unverified", patch)
}

/// Where a subagent's transcript is read from: its stored offset (0 for a new agent: the
/// whole file is this execution's work) and the last message id counted.
pub(crate) fn agent_transcript_start<'a>(
    state: &'a State,
    agent_key: &str,
) -> (u64, Option<&'a str>) {
    let entry = state.agent_usage(agent_key);
    let offset = entry.and_then(|e| e.offset.get().copied());
    let last = entry.and_then(|e| e.last_message_id.get());
    (offset.unwrap_or(0), last.map(String::as_str))
}

/// The state patch that adds a subagent's newly read usage to the execution's totals, so
/// the token budget counts the executors' work and not only the coordinator's.
pub(crate) fn subagent_usage_patch(state: &State, agent_key: &str, usage: &UsageRead) -> Value {
    let entry = state.agent_usage(agent_key);
    let previous = entry.and_then(|e| e.output_tokens.get().copied());
    let previous = previous.unwrap_or(0);
    let mut entry = json!({"outputTokens": previous.saturating_add(usage.output_tokens)});
    if let Some(offset) = usage.next_offset {
        entry["offset"] = json!(offset);
    }
    if let Some(id) = &usage.last_message_id {
        entry["lastMessageId"] = json!(id);
    }
    json!({"usage": {
        "inputTokens": state.input_tokens().saturating_add(usage.input_tokens),
        "outputTokens": state.output_tokens().saturating_add(usage.output_tokens),
        "agents": {agent_key: entry},
    }})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::fixtures::*;

    /// Agent a1 of session s1 claims task 1.2.
    fn decide_claim(facts: &ClaimFacts, stop_hook_active: bool) -> Outcome {
        let input = SubagentInput {
            agent_id: Some("a1"),
            stop_hook_active,
        };
        decide_subagent_stop(DEMO, "1.2", facts, &input, &typed(&state()), now())
    }

    #[test]
    fn subagent_usage_adds_to_the_totals_and_remembers_the_agent_offset() {
        let mut s = state();
        s["usage"] = json!({"inputTokens": 10, "outputTokens": 100,
                            "agents": {"a1": {"offset": 50, "lastMessageId": "m1", "outputTokens": 7}}});
        assert_eq!(agent_transcript_start(&typed(&s), "a1"), (50, Some("m1")));
        assert_eq!(agent_transcript_start(&typed(&s), "new"), (0, None));
        let read = UsageRead {
            input_tokens: 3,
            output_tokens: 40,
            next_offset: Some(90),
            last_message_id: Some("m2".into()),
            transcript_path: None,
        };
        let patch = subagent_usage_patch(&typed(&s), "a1", &read);
        assert_eq!(
            patch,
            json!({"usage": {"inputTokens": 13, "outputTokens": 140,
                             "agents": {"a1": {"outputTokens": 47, "offset": 90, "lastMessageId": "m2"}}}})
        );
    }

    /// A usable record at `when`, else a missing one.
    fn at(usable: bool, when: &str) -> Stored {
        match usable {
            true => Stored::Usable {
                recorded_at: when.into(),
            },
            false => Stored::Missing,
        }
    }

    fn claim(
        task: Option<(bool, Option<String>)>,
        ev: Freshness,
        code: bool,
        test: bool,
    ) -> ClaimFacts {
        ClaimFacts {
            task,
            evidence_mismatch: None,
            evidence: ev,
            evidence_ended_at: Some("2026-01-01T00:10:00Z".into()),
            post_code: at(code, "2026-01-01T00:05:00Z"),
            post_test: at(test, "2026-01-01T00:20:00Z"),
            extra: vec![],
        }
    }

    /// Regression (issue 21): fresh evidence whose end cannot be computed (a `durationMs`
    /// past the calendar) skipped the post-test ordering check, so the claim went through.
    #[test]
    fn a_claim_whose_evidence_end_is_unknown_is_refused() {
        let mut facts = claim(Some((true, None)), Freshness::Fresh, true, true);
        facts.evidence_ended_at = None;
        let r = block_text(&decide_claim(&facts, false)).to_string();
        assert!(r.contains("taskEvidence.1.2.durationMs"), "{r}");
    }

    #[test]
    fn subagent_claim_accepted_refused_then_recorded() {
        let ok = claim(Some((true, None)), Freshness::Fresh, true, true);
        let o = decide_claim(&ok, false);
        assert_eq!(o.decision, Decision::Allow(None));

        let bad = claim(
            Some((false, Some("`cargo test a`".into()))),
            Freshness::Missing,
            false,
            true,
        );
        let o = decide_claim(&bad, false);
        let r = block_text(&o);
        assert!(r.contains("task 1.2 is unchecked"), "{r}");
        assert!(
            r.contains("`specrun verify run --task 1.2 --spec demo` must pass"),
            "{r}"
        );
        assert!(r.contains("post-code is missing"), "{r}");
        assert!(!r.contains("post-test is missing"), "{r}");

        let o = decide_claim(&bad, true);
        assert!(matches!(o.decision, Decision::Allow(Some(_))));
        let claims = o.patch["unverifiedClaims"].as_array().unwrap();
        assert_eq!(claims.len(), 1);
        assert_eq!(claims[0]["taskId"], "1.2");
        assert_eq!(claims[0]["agentId"], "a1");
        assert_eq!(claims[0]["missing"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn evidence_of_another_command_does_not_settle_a_claim() {
        let mut f = claim(
            Some((true, Some("cargo test a".into()))),
            Freshness::Fresh,
            true,
            true,
        );
        f.evidence_mismatch =
            Some("it ran `true`, not the task's Verify command `cargo test a`".into());
        let missing = claim_missing(DEMO, "1.2", &f);
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(
            missing[0].contains("does not count: it ran `true`"),
            "{missing:?}"
        );
        let none = claim(Some((false, None)), Freshness::Missing, true, true);
        let missing = claim_missing(DEMO, "1.2", &none);
        assert!(
            missing
                .iter()
                .any(|m| m.contains("--command '<a command that proves it>'")),
            "{missing:?}"
        );
    }

    #[test]
    fn an_invalid_critique_record_is_named_invalid_not_missing() {
        let mut f = claim(Some((true, None)), Freshness::Fresh, true, false);
        f.post_code = Stored::Unusable("invalid: `checklist.SC-5.5.2` is missing".into());
        let missing = claim_missing(DEMO, "1", &f);
        assert_eq!(missing.len(), 2, "{missing:?}");
        assert!(missing[0].starts_with("self-critique record post-code is invalid (`checklist.SC-5.5.2` is missing): record it again"), "{missing:?}");
        assert!(
            missing[1].starts_with("self-critique record post-test is missing"),
            "{missing:?}"
        );
    }

    #[test]
    fn post_test_critique_must_follow_the_evidence() {
        let mut f = claim(Some((true, None)), Freshness::Fresh, true, true);
        f.post_test = at(true, "2026-01-01T00:01:00Z");
        let missing = claim_missing(DEMO, "1", &f);
        assert_eq!(missing.len(), 1);
        assert!(missing[0].contains("predates"), "{missing:?}");
        let unknown = claim_missing(DEMO, "9", &claim(None, Freshness::Fresh, true, true));
        assert_eq!(
            unknown[0],
            "task 9 does not exist (once) in specs/demo/tasks.md: claim the id the task brief gave."
        );
        // A Kiro spec's executor is sent to the file it has, not to `specs/albums/`.
        let kiro = SpecPlace {
            name: "albums",
            folder: ".kiro/specs/albums",
        };
        let unknown = claim_missing(kiro, "9", &claim(None, Freshness::Fresh, true, true));
        assert!(
            unknown[0].starts_with("task 9 does not exist (once) in .kiro/specs/albums/tasks.md:"),
            "{unknown:?}"
        );
    }
}
