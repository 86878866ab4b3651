//! The Stop hook's decision: count the stop, then the rules in order (`STOP_RULES`).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::hooks::*;
use crate::io::project::SpecPlace;
use crate::model::state::{self, Driver, Halt, Nullable, Patch, Phase, State, Timestamp};
use crate::model::tasks::{Task, TaskList};

pub(crate) use crate::next::completion::Gates as CompletionGates;

/// The facts a Stop is decided on, gathered under the state lock.
pub(crate) struct StopFacts<'a> {
    /// The spec's name and folder, as the messages name them.
    pub spec: SpecPlace<'a>,
    pub tasks: &'a TaskList,
    pub head: Option<&'a str>,
    pub usage: UsageRead,
    /// Computed only when the message claims completion (it costs git processes).
    pub completion: Option<CompletionGates>,
    pub now: DateTime<Utc>,
    /// Stops that could not be counted since the last counted one (`uncounted::since`):
    /// they are counted now.
    pub missed: crate::hooks::uncounted::Missed,
}

/// The Stop hook's stdin fields the decision uses.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StopInput<'a> {
    pub stop_hook_active: bool,
    pub last_assistant_message: Option<&'a str>,
    /// Agents still working in the background (`running_agents` of `background_tasks`).
    pub running_agents: &'a [String],
}

/// The agents a Stop input's `background_tasks` lists as running: subagents and workflows
/// (Claude Code runs subagents in the background by default since 2.1.198), each as
/// `description (agent type)`. Background shell commands are not agents: a dev server left
/// running must not hold the execution up.
pub(crate) fn running_agents(background_tasks: Option<&Value>) -> Vec<String> {
    let Some(list) = background_tasks.and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter(|t| t.get("status").and_then(Value::as_str) == Some("running"))
        .filter(|t| {
            let kind = t.get("type").and_then(Value::as_str).unwrap_or_default();
            kind == "workflow" || kind.contains("agent") || t.get("agent_type").is_some()
        })
        .map(|t| {
            let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
            let who = [text("agent_type"), text("name"), text("type")]
                .into_iter()
                .find(|w| !w.is_empty())
                .unwrap_or("agent");
            format!("{} ({who})", text("description"))
        })
        .collect()
}

/// What the coordinator is told while agents work in the background.
fn waiting_text(name: &str, state: &State, agents: &[String]) -> String {
    let spec_flag = crate::support::shell::spec_flag(name);
    // `running_attempts`, read from the typed state.
    let tasks: Vec<&str> = (state.attempts.iter().flatten())
        .filter(|(_, list)| list.last().and_then(|a| a.status.as_deref()) == Some("running"))
        .map(|(id, _)| id.as_str())
        .collect();
    let tasks = if tasks.is_empty() {
        String::new()
    } else {
        format!("; running attempt(s): {}", tasks.join(", "))
    };
    format!(
        "specrun: {} agent(s) of spec '{name}' still working in the background ({}{tasks}). Do not delegate those tasks again and do not claim {COMPLETION_TOKEN}: end your turn and wait. Each result arrives as a task-notification turn; confirm it then (`specrun tasks show <id> --json {spec_flag}`, `specrun verify status --task <id> {spec_flag}`).",
        agents.len(),
        agents.join(", ")
    )
}

/// Progress fingerprint: checked-task count, taskIndex, HEAD.
pub(crate) fn fingerprint(tasks: &TaskList, state: &State, head: Option<&str>) -> String {
    format!(
        "{}/{}:{}:{}",
        tasks.counts().completed,
        tasks.tasks.len(),
        state.task_index(),
        head.unwrap_or("-")
    )
}

/// Decide a Stop of the owning session of an executing spec (the fast path and ownership
/// are the edge's, before the lock; docs/design.md#what-specrun-does): count the stop, then
/// let `STOP_RULES` decide, then write down the bookkeeping and the event.
pub(crate) fn decide_stop(input: &StopInput<'_>, state: &State, facts: &StopFacts<'_>) -> Outcome {
    let fp = fingerprint(facts.tasks, state, facts.head);
    let counted = count(input, state, facts, &fp);
    let mut effects = Effects {
        patch: usage_patch(
            state,
            &facts.usage,
            Patch::new().global_iteration(counted.global),
            counted.output_tokens,
        ),
        unmet: Vec::new(),
    };
    let minutes = minutes_used(state, facts.now);
    let stop = CountedStop {
        input,
        state,
        facts,
        counted,
        fp: &fp,
        minutes: minutes.as_ref(),
    };
    let (decision, rule) = decide_after_count(&stop, &mut effects);
    // A halt ends the run; the stall count starts afresh after `specrun resume`.
    let stall = match decision {
        Decision::Halt(_) => 0,
        _ => counted.stall,
    };
    let patch = guard_patch(&stop, &decision, stall, effects.patch);
    let mut event = stop_event(&stop, &decision, &rule, stall);
    if !effects.unmet.is_empty() {
        event["unmet"] = Value::from(effects.unmet.clone());
    }
    let notice = notices(&stop, &mut event);
    Outcome {
        decision,
        rule,
        patch: patch.to_value(),
        event,
        notice,
    }
}

/// Count the stop and this turn's tokens, and the stall against the fingerprint.
fn count(input: &StopInput<'_>, v: &State, facts: &StopFacts<'_>, fp: &str) -> Counted {
    // Saturating: a hand-edited counter near u64::MAX must halt on its cap, not wrap to 0.
    let global = v
        .global_iteration()
        .saturating_add(1)
        .saturating_add(facts.missed.count);
    let output_tokens = v.output_tokens().saturating_add(facts.usage.output_tokens);
    let stalls = v.guard().stall_stops.get().copied().unwrap_or(0);
    let stall = match v.guard().last_fingerprint.get() {
        // Waiting on the user is not a stall: those turns answer questions, not tasks.
        _ if v.awaiting_approval() => 0,
        // Neither is waiting for background executors: their work is not in the
        // fingerprint until they finish.
        Some(prev) if prev == fp && !input.running_agents.is_empty() => stalls,
        Some(prev) if prev == fp => stalls.saturating_add(1),
        _ => 0,
    };
    Counted {
        global,
        output_tokens,
        stall,
    }
}

/// The `usage` patch: the totals with this turn's tokens, and where the transcript was read to.
fn usage_patch(v: &State, usage: &UsageRead, patch: Patch, output_tokens: u64) -> Patch {
    let input_tokens = v.input_tokens().saturating_add(usage.input_tokens);
    let patch = patch
        .input_tokens(input_tokens)
        .output_tokens(output_tokens);
    match usage.next_offset {
        Some(offset) => patch
            .transcript_offset(Some(offset))
            .transcript_path(usage.transcript_path.as_deref()),
        None => patch,
    }
}

/// The `guard` bookkeeping this stop leaves: fingerprints, clock, catch-up, blocks, stalls.
fn guard_patch(stop: &CountedStop<'_>, decision: &Decision, stall: u64, patch: Patch) -> Patch {
    let record = stop.state.guard();
    let mut patch = patch;
    // A waiting stop leaves the baseline alone: the progress its agents make is measured
    // at the next stop that is not a wait, against the stop before the wait.
    if stop.input.running_agents.is_empty() {
        patch = patch.last_fingerprint(stop.fp);
    }
    // The time cap's fallback origin, should startedAt ever be missing or garbled.
    if record.clock_started_at.is_absent() {
        patch = patch.clock_started_at(&Timestamp::from_time(stop.facts.now));
    }
    let missed = &stop.facts.missed;
    if missed.count > 0 {
        let before = record.uncounted_stops.get().copied().unwrap_or(0);
        patch = patch
            .uncounted_stops(before.saturating_add(missed.count))
            .uncounted_offset(missed.end);
    }
    if let Some(id) = &stop.facts.usage.last_message_id {
        patch = patch.last_message_id(id);
    }
    if let Decision::Block(_) = decision {
        let blocks = record.blocks.get().copied().unwrap_or(0).saturating_add(1);
        patch = patch.blocks(blocks).last_block_fingerprint(stop.fp);
    }
    patch.stall_stops(stall)
}

/// The events.jsonl record of a counted stop.
fn stop_event(stop: &CountedStop<'_>, decision: &Decision, rule: &str, stall: u64) -> Value {
    let input = stop.input;
    // `at`, `session` and the `event` tag are the writer's (`io::events::Event::Stop`).
    decision::record(&StopRecord {
        spec: stop.facts.spec.name,
        decision: decision.name(),
        rule,
        reason: decision.text(),
        global_iteration: stop.counted.global,
        max_global_iterations: stop.state.max_global_iterations(),
        stall_stops: stall,
        output_tokens: stop.counted.output_tokens,
        fingerprint: stop.fp,
        stop_hook_active: input.stop_hook_active,
        running_agents: input.running_agents.len(),
    })
}

/// A counted stop's fields (docs/design.md#events).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StopRecord<'a> {
    spec: &'a str,
    decision: &'static str,
    rule: &'a str,
    reason: Option<&'a str>,
    global_iteration: u64,
    max_global_iterations: u64,
    stall_stops: u64,
    output_tokens: u64,
    fingerprint: &'a str,
    stop_hook_active: bool,
    running_agents: usize,
}

/// What the user must hear whatever the decision (stops caught up, a broken time cap),
/// also recorded in the event.
fn notices(stop: &CountedStop<'_>, event: &mut Value) -> Option<String> {
    let name = stop.facts.spec.name;
    let missed = &stop.facts.missed;
    let mut notices: Vec<String> = Vec::new();
    if missed.count > 0 {
        event["uncountedCaughtUp"] = Value::from(missed.count);
        notices.push(format!(
            "specrun guard: {} earlier stop(s) of spec '{name}' could not be counted ({}); they are counted now (globalIteration {}).",
            missed.count,
            missed.last_cause.as_deref().unwrap_or("cause unknown"),
            stop.counted.global
        ));
    }
    if let Some(n) = time_cap_notice(stop.facts.spec, stop.minutes) {
        event["timeCapProblem"] = Value::from(n.as_str());
        notices.push(n);
    }
    (!notices.is_empty()).then(|| notices.join("\n"))
}

/// A Stop of the owner that could not be counted (`cause`), with `missed` stops missed in
/// a row counting this one (already in the ledger, or `ledger_error` says why not). The
/// caps still hold: the stops missed are added to the state's counter for the check, and
/// a halted execution halts again. Nothing is written to the state.
pub(crate) fn decide_uncounted_stop(
    name: &str,
    v: &State,
    missed: u64,
    cause: &str,
    ledger_error: Option<&str>,
    now: DateTime<Utc>,
) -> (Decision, String) {
    let trace = match ledger_error {
        None => {
            format!("recorded in .specrun/{name}.uncounted.jsonl; the next counted stop adds it")
        }
        Some(e) => format!("and could not be recorded either ({e})"),
    };
    let mut m =
        format!("specrun guard: this stop of spec '{name}' was not counted ({cause}); {trace}.");
    if missed >= crate::hooks::uncounted::ALARM_AFTER {
        m = format!(
            "specrun guard: THE GUARD CANNOT COUNT: {missed} stops in a row of spec '{name}' were not counted (now: {cause}); the caps hold only on what was counted before. Run `specrun doctor` and fix the cause. {m}"
        );
    }
    if v.halt().is_some() {
        let s = format!(
            "{} {m}",
            halt_text(name, v.halt_reason().unwrap_or("no reason recorded"))
        );
        return (Decision::Halt(s), "halted".into());
    }
    let global = v.global_iteration().saturating_add(missed);
    let minutes = minutes_used(v, now);
    if let Some((kind, what)) = hit_cap(v, global, v.output_tokens(), 0, minutes.as_ref()) {
        let s = format!(
            "specrun halted spec '{name}': {what} (counting the stops that could not be recorded). The halt could not be written: fix the cause, then continue with /specrun:implement {name}. {m}"
        );
        return (Decision::Halt(s), format!("cap:{kind}"));
    }
    (Decision::Allow(Some(m)), "uncounted".into())
}

/// The minutes the time cap counts and where it counts from, when a time cap is set.
type Minutes = (u64, state::TimeOrigin);

/// `Minutes` now, read once per decision (the caps and the notice share it).
pub(super) fn minutes_used(v: &State, now: DateTime<Utc>) -> Option<Minutes> {
    v.max_minutes()?;
    Some(v.minutes_since(now))
}

/// With a time cap set, what is wrong with `startedAt` (the cap still holds).
fn time_cap_notice(spec: SpecPlace<'_>, minutes: Option<&Minutes>) -> Option<String> {
    let problem = minutes?.1.problem.as_deref()?;
    Some(format!(
        "specrun guard: spec '{}': {problem}. Fix it with `specrun state merge {} '{{\"startedAt\": \"<when the run began, RFC 3339>\"}}'`.",
        spec.name,
        crate::support::shell::word(&spec.file(crate::io::project::STATE_FILE))
    ))
}

/// What this stop brings the counters to.
#[derive(Debug, Clone, Copy)]
struct Counted {
    global: u64,
    output_tokens: u64,
    stall: u64,
}

/// A counted stop, as the Stop rules judge it.
#[derive(Clone, Copy)]
struct CountedStop<'a> {
    input: &'a StopInput<'a>,
    state: &'a State,
    facts: &'a StopFacts<'a>,
    counted: Counted,
    /// This stop's progress fingerprint.
    fp: &'a str,
    /// The time cap's count, when one is set.
    minutes: Option<&'a Minutes>,
}

impl CountedStop<'_> {
    /// A re-prompt left out because nothing progressed since the last block.
    fn stall_note(&self, what: &str) -> String {
        format!(
            "specrun: {what}; not re-prompting: nothing progressed since the last block (stall {}/{}).",
            self.counted.stall,
            self.state.max_stall_stops()
        )
    }

    /// Whether this is a re-prompted stop at the fingerprint of the last block.
    fn no_progress_since_block(&self) -> bool {
        self.input.stop_hook_active
            && self
                .state
                .guard()
                .last_block_fingerprint
                .get()
                .map(String::as_str)
                == Some(self.fp)
    }
}

/// What a Stop rule may write beside its decision.
struct Effects {
    /// The stop's state patch (the counters are in it already).
    patch: Patch,
    /// The names of the unmet completion gates, for the event.
    unmet: Vec<&'static str>,
}

/// A decided stop: the decision and the rule the event names.
type Ruling = (Decision, String);

/// One Stop rule: decides the stop, or passes it to the next rule (`None`).
type StopRule = fn(&CountedStop<'_>, &mut Effects) -> Option<Ruling>;

/// The Stop rules after the stop is counted (docs/design.md#what-specrun-does), in the
/// order they are tried: the first that decides wins. The event's `rule` begins with its name
/// (`cap:stall`, `completion-refused`, `agents-running-wait`, `next-task-no-progress`).
const STOP_RULES: &[(&str, StopRule)] = &[
    // A halted execution halts again until resumed.
    ("halted", halted),
    // The hard caps, in a fixed order (`hit_cap`): global, task, tokens, minutes, stall.
    ("cap", cap),
    // An `ALL_TASKS_COMPLETE` claim, accepted only when every completion gate holds.
    ("completion", completion_claim),
    // Agents still work in the background: wait for them.
    ("agents-running", agents_running),
    // The stop-hook driver re-prompts with the next task.
    ("next-task", next_task),
    // Otherwise the stop is allowed.
    ("allow", allow),
];

fn decide_after_count(stop: &CountedStop<'_>, effects: &mut Effects) -> Ruling {
    for (row, rule) in STOP_RULES {
        if let Some((decision, name)) = rule(stop, effects) {
            debug_assert!(name.starts_with(row), "rule {name} of row {row}");
            return (decision, name);
        }
    }
    unreachable!("the last Stop rule always decides")
}

fn halted(stop: &CountedStop<'_>, _: &mut Effects) -> Option<Ruling> {
    let v = stop.state;
    v.halt()?;
    let name = stop.facts.spec.name;
    let s = halt_text(name, v.halt_reason().unwrap_or("no reason recorded"));
    Some((Decision::Halt(s), "halted".into()))
}

fn cap(stop: &CountedStop<'_>, effects: &mut Effects) -> Option<Ruling> {
    let Counted {
        global,
        output_tokens,
        stall,
    } = stop.counted;
    let (state, name) = (stop.state, stop.facts.spec.name);
    let (kind, reason) = hit_cap(state, global, output_tokens, stall, stop.minutes)?;
    let s = halt_text(name, &reason);
    let halt = Halt {
        kind: Some(kind.to_string()),
        reason: Some(reason),
        at: Nullable::Set(Timestamp::from_time(stop.facts.now)),
        ..Default::default()
    };
    effects.patch = std::mem::take(&mut effects.patch).halt(Some(&halt));
    Some((Decision::Halt(s), format!("cap:{kind}")))
}

/// `ALL_TASKS_COMPLETE` is accepted when every completion gate holds (and no agent still
/// works), else refused with the unmet gates.
fn completion_claim(stop: &CountedStop<'_>, effects: &mut Effects) -> Option<Ruling> {
    if !claims_all_complete(stop.input.last_assistant_message) {
        return None;
    }
    let (input, state, facts) = (stop.input, stop.state, stop.facts);
    let name = facts.spec.name;
    let mut unmet =
        crate::next::completion::unmet(facts.spec, state, facts.tasks, facts.completion.as_ref());
    if !input.running_agents.is_empty() {
        let wait = waiting_text(name, state, input.running_agents);
        unmet.insert(0, crate::protocol::Unmet::new("agents-running", wait));
    }
    effects.unmet.extend(unmet.iter().map(|u| u.name));
    if unmet.is_empty() {
        let patch = std::mem::take(&mut effects.patch);
        effects.patch = patch.merge(completion_patch(stop.facts.now));
        let m = format!("specrun: {}", completion_message(name, facts.tasks));
        return Some((Decision::Allow(Some(m)), "completion-accepted".into()));
    }
    // What is left only a person can do: the run ends here, honestly not complete.
    if crate::next::completion::waits_for_person(&unmet) {
        let m = format!(
            "specrun: spec '{name}' is waiting for a person, not complete: {} Nothing is left for the model; end the turn ({}).",
            unmet.iter().map(|u| u.detail.as_str()).collect::<Vec<_>>().join(" "),
            crate::claude::roles::PERSON_DECIDES
        );
        return Some((
            Decision::Allow(Some(m)),
            "completion-waiting-for-person".into(),
        ));
    }
    if stop.no_progress_since_block() {
        let m = stop.stall_note(&format!(
            "{COMPLETION_TOKEN} not accepted ({} gate(s) unmet)",
            unmet.len()
        ));
        return Some((
            Decision::Allow(Some(m)),
            "completion-refused-no-progress".into(),
        ));
    }
    let r = refusal(
        format!("{COMPLETION_TOKEN} refused for spec '{name}'. Unmet:"),
        unmet.iter().map(|u| u.detail.as_str()),
        &format!("When every item is done, end with {COMPLETION_TOKEN} again."),
    );
    Some((Decision::Block(r), "completion-refused".into()))
}

/// Their notification wakes the coordinator; the stop-hook driver, which would re-prompt
/// a delegation, says to wait instead (once: a second stop while they run is allowed).
fn agents_running(stop: &CountedStop<'_>, _: &mut Effects) -> Option<Ruling> {
    let input = stop.input;
    if input.running_agents.is_empty() {
        return None;
    }
    let wait = waiting_text(stop.facts.spec.name, stop.state, input.running_agents);
    if stop.state.driver() == Driver::StopHook && !input.stop_hook_active {
        return Some((Decision::Block(wait), "agents-running-wait".into()));
    }
    Some((Decision::Allow(Some(wait)), "agents-running".into()))
}

fn next_task(stop: &CountedStop<'_>, _: &mut Effects) -> Option<Ruling> {
    let v = stop.state;
    if v.driver() != Driver::StopHook || v.awaiting_approval() {
        return None;
    }
    let (name, tasks) = (stop.facts.spec.name, stop.facts.tasks);
    // The one "what next": an isolated group waiting for its merge is merged before the
    // next task, whose start refuses until then.
    let standing = crate::next::standing_of(stop.facts.spec, tasks, v);
    let (open, prompt, rule) = match standing.merge_step() {
        Some(merge) => (
            "the isolated group is not merged".to_string(),
            format!("Spec '{name}': {merge}"),
            "next-task-group-merge",
        ),
        None => {
            let task = tasks.next()?;
            let open = format!("task {} is still open", task.label());
            (open, task_brief(name, tasks, task), "next-task")
        }
    };
    if stop.no_progress_since_block() {
        let m = stop.stall_note(&open);
        return Some((Decision::Allow(Some(m)), "next-task-no-progress".into()));
    }
    Some((Decision::Block(prompt), rule.into()))
}

fn allow(_: &CountedStop<'_>, _: &mut Effects) -> Option<Ruling> {
    Some((Decision::Allow(None), "allow".into()))
}

/// The first cap hit, as (halt kind, "what, value and limit").
pub(super) fn hit_cap(
    v: &State,
    global: u64,
    output_tokens: u64,
    stall: u64,
    minutes: Option<&Minutes>,
) -> Option<(&'static str, String)> {
    let max_global = v.max_global_iterations();
    if global > max_global {
        return Some((
            state::HALT_GLOBAL,
            format!("global iterations {global} > maxGlobalIterations {max_global}"),
        ));
    }
    let (task_it, max_task) = (v.task_iteration(), v.max_task_iterations());
    if task_it >= max_task {
        return Some((
            state::HALT_TASK,
            format!("task iterations {task_it} >= maxTaskIterations {max_task}"),
        ));
    }
    if let Some(max) = v.max_output_tokens() {
        if output_tokens >= max {
            return Some((
                state::HALT_TOKENS,
                format!("output tokens {output_tokens} >= budget.maxOutputTokens {max}"),
            ));
        }
    }
    // Fails closed: without a usable startedAt the cap counts from a fallback origin.
    if let (Some(max), Some((minutes, origin))) = (v.max_minutes(), minutes) {
        if *minutes >= max {
            return Some((
                state::HALT_MINUTES,
                format!(
                    "{minutes} minutes since {} >= budget.maxMinutes {max}",
                    origin.source
                ),
            ));
        }
    }
    // 0 turns the stall cap off (it would otherwise halt on every stop).
    let max_stall = v.max_stall_stops();
    if max_stall > 0 && stall >= max_stall {
        return Some((
            state::HALT_STALL,
            format!(
                "{stall} stops in a row without progress (checked tasks, taskIndex and HEAD unchanged) >= budget.maxStallStops {max_stall}"
            ),
        ));
    }
    None
}

/// The state fields that mark an execution complete (the Stop hook and `specrun finish`).
pub(crate) fn completion_patch(now: DateTime<Utc>) -> Patch {
    Patch::new()
        .phase(Phase::Completed)
        .completed(true)
        .completed_at(Some(&Timestamp::from_time(now)))
}

/// What a completed execution reports.
pub(crate) fn completion_message(name: &str, tasks: &TaskList) -> String {
    let c = tasks.counts();
    format!(
        "spec '{name}' complete: {}/{} tasks checked, execution evidence fresh, no blocking follow-up.",
        c.completed, c.total
    )
}

/// The re-prompt of the stop-hook driver: the next task only.
fn task_brief(name: &str, tasks: &TaskList, task: &Task) -> String {
    let spec_flag = crate::support::shell::spec_flag(name);
    let c = tasks.counts();
    let agent = if task.is_verify() {
        "specrun:qa-engineer"
    } else {
        EXECUTOR_AGENT
    };
    let mut r = format!(
        "Spec '{name}': {}/{} tasks done. Next task {}: {}\n",
        c.completed,
        c.total,
        task.label(),
        task.title
    );
    if let Some(d) = &task.do_ {
        r.push_str(&format!("Do: {d}\n"));
    }
    if !task.files.is_empty() {
        r.push_str(&format!("Files: {}\n", task.files.join(", ")));
    }
    if let Some(verify) = &task.verify {
        r.push_str(&format!("Verify: `{verify}`\n"));
    }
    r.push_str(&format!(
        "Delegate it to {agent} now. End with {COMPLETION_TOKEN} only when every task is checked and the plan's final check, `specrun verify run --final {spec_flag}`, passed."
    ));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::fixtures::*;

    #[test]
    fn stop_rules_are_tried_in_the_documented_order() {
        // DESIGN-NOTES ("The Stop rules are one ordered list") and ARCHITECTURE name it.
        let rows: Vec<&str> = STOP_RULES.iter().map(|(row, _)| *row).collect();
        assert_eq!(
            rows,
            [
                "halted",
                "cap",
                "completion",
                "agents-running",
                "next-task",
                "allow"
            ]
        );
    }

    #[test]
    fn row3_counts_the_stop_usage_and_stall() {
        let mut s = state();
        s["guard"] = json!({"lastFingerprint": "1/2:1:abc", "stallStops": 2});
        s["usage"] = json!({"outputTokens": 10, "inputTokens": 5, "transcriptOffset": 100});
        let list = tasks::parse(TASKS);
        let facts = StopFacts {
            spec: crate::hooks::fixtures::DEMO,
            tasks: &list,
            head: Some("abc"),
            usage: UsageRead {
                input_tokens: 1,
                output_tokens: 2,
                next_offset: Some(150),
                last_message_id: Some("m".into()),
                transcript_path: Some("/t".into()),
            },
            completion: None,
            now: now(),
            missed: Default::default(),
        };
        let o = decide_stop(
            &StopInput {
                ..Default::default()
            },
            &typed(&s),
            &facts,
        );
        assert_eq!(o.decision, Decision::Allow(None));
        assert_eq!(o.patch["globalIteration"], 1);
        assert_eq!(
            o.patch["usage"],
            json!({"inputTokens": 6, "outputTokens": 12, "transcriptOffset": 150, "transcriptPath": "/t"})
        );
        assert_eq!(o.patch["guard"]["stallStops"], 3);
        assert_eq!(o.patch["guard"]["lastMessageId"], "m");
        // Progress resets the stall count.
        let o = decide_stop(
            &StopInput::default(),
            &typed(&s),
            &StopFacts {
                head: Some("def"),
                ..facts
            },
        );
        assert_eq!(o.patch["guard"]["stallStops"], 0);
        assert_eq!(o.event["decision"], "allow");
        assert_eq!(o.event["globalIteration"], 1);
    }

    #[test]
    fn row4_global_cap_halts_past_the_limit() {
        let mut s = state();
        s["globalIteration"] = json!(29);
        assert_eq!(
            decide(&s, TASKS, None, false, None).decision,
            Decision::Allow(None)
        );
        s["globalIteration"] = json!(30);
        let o = decide(&s, TASKS, None, false, None);
        let text = halt_of(&o);
        assert!(
            text.contains("global iterations 31 > maxGlobalIterations 30"),
            "{text}"
        );
        // The model reads this: a person's decision, never its command.
        assert!(text.contains("a person decides at a shell"), "{text}");
        assert!(!text.contains("specrun resume"), "{text}");
        assert_eq!(o.patch["halt"]["kind"], "global-cap");
        assert_eq!(o.rule, "cap:global-cap");
        assert_eq!(o.decision.to_hook_json().unwrap().go_on, Some(false));
    }

    #[test]
    fn row4_task_iterations_cap() {
        let mut s = state();
        s["taskIteration"] = json!(5);
        let o = decide(&s, TASKS, None, false, None);
        assert!(halt_of(&o).contains("task iterations 5 >= maxTaskIterations 5"));
        assert!(!halt_of(&o).contains("--raise-task"));
    }

    #[test]
    fn row4_output_tokens_cap() {
        let mut s = state();
        s["budget"]["maxOutputTokens"] = json!(100);
        s["usage"]["outputTokens"] = json!(99);
        assert_eq!(
            decide(&s, TASKS, None, false, None).decision,
            Decision::Allow(None)
        );
        s["usage"]["outputTokens"] = json!(100);
        let o = decide(&s, TASKS, None, false, None);
        assert!(halt_of(&o).contains("output tokens 100 >= budget.maxOutputTokens 100"));
    }

    #[test]
    fn row4_minutes_cap() {
        let mut s = state();
        s["budget"]["maxMinutes"] = json!(61);
        assert_eq!(
            decide(&s, TASKS, None, false, None).decision,
            Decision::Allow(None)
        );
        s["budget"]["maxMinutes"] = json!(60);
        let o = decide(&s, TASKS, None, false, None);
        assert!(halt_of(&o).contains("60 minutes since startedAt >= budget.maxMinutes 60"));
        assert_eq!(o.patch["halt"]["kind"], "time-cap");
    }

    /// The fix names the spec's own state file: `state merge` on a `specs/<name>/` path
    /// that does not exist would create a stray state beside nothing.
    #[test]
    fn the_time_cap_notice_names_the_spec_s_own_state_file() {
        let origin = state::TimeOrigin {
            at: now(),
            source: "guard.clockStartedAt",
            problem: Some("startedAt is missing".into()),
        };
        let minutes = (5, origin);
        let kiro = SpecPlace {
            name: "albums",
            folder: ".kiro/specs/albums",
        };
        let n = time_cap_notice(kiro, Some(&minutes)).unwrap();
        assert!(
            n.contains("`specrun state merge .kiro/specs/albums/.specrun-state.json '"),
            "{n}"
        );
        let own = time_cap_notice(DEMO, Some(&minutes)).unwrap();
        assert_eq!(
            own,
            "specrun guard: spec 'demo': startedAt is missing. Fix it with `specrun state merge specs/demo/.specrun-state.json '{\"startedAt\": \"<when the run began, RFC 3339>\"}'`."
        );
    }

    #[test]
    fn row4_minutes_cap_holds_without_a_usable_started_at() {
        let mut s = state();
        s["budget"]["maxMinutes"] = json!(30);
        s["guard"] = json!({"clockStartedAt": "2026-01-01T00:10:00Z"});
        for bad in [
            json!(null),
            json!("not a time"),
            json!("2030-01-01T00:00:00Z"),
        ] {
            s["startedAt"] = bad;
            let o = decide(&s, TASKS, None, false, None);
            assert!(
                halt_of(&o)
                    .contains("50 minutes since guard.clockStartedAt >= budget.maxMinutes 30"),
                "{o:?}"
            );
            let json = o.to_hook_json().unwrap();
            let m = json.system_message.as_deref().unwrap();
            assert!(
                m.contains("the time cap counts from guard.clockStartedAt"),
                "{m}"
            );
            assert!(o.event["timeCapProblem"].is_string());
        }
        // Under the cap it allows, and still says what is wrong.
        s["budget"]["maxMinutes"] = json!(600);
        let o = decide(&s, TASKS, None, false, None);
        assert_eq!(o.decision, Decision::Allow(None));
        let m = o.to_hook_json().unwrap().system_message.unwrap();
        assert!(m.contains("lies in the future"), "{m}");
        // Without a time cap nothing is said; the first stop stamps the fallback origin.
        let o = decide(&state(), TASKS, None, false, None);
        assert_eq!(o.to_hook_json(), None);
        assert_eq!(
            o.patch["guard"]["clockStartedAt"],
            "2026-01-01T01:00:00.000Z"
        );
    }

    /// `decide` with an executor running in the background.
    fn decide_running(s: &Value, tasks_md: &str, msg: Option<&str>, active: bool) -> Outcome {
        let running = ["Execute task 1.2 (specrun:spec-executor)".to_string()];
        decide_with(s, tasks_md, msg, active, good_gates(), &running)
    }

    #[test]
    fn running_agents_are_subagents_and_workflows_not_shells() {
        let tasks = json!([
            {"id": "a1", "type": "subagent", "status": "running", "description": "Execute task 1.2", "agent_type": "specrun:spec-executor"},
            {"id": "w1", "type": "workflow", "status": "running", "description": "demo", "name": "wf"},
            {"id": "b1", "type": "shell", "status": "running", "description": "npm run dev"},
            {"id": "a2", "type": "subagent", "status": "completed", "description": "done"}
        ]);
        assert_eq!(
            running_agents(Some(&tasks)),
            ["Execute task 1.2 (specrun:spec-executor)", "demo (wf)"]
        );
        assert!(running_agents(Some(&json!([]))).is_empty());
        assert!(running_agents(None).is_empty());
        assert!(running_agents(Some(&json!("not a list"))).is_empty());
    }

    /// The stop-hook driver re-prompted "Next task … Delegate it now" while an isolated
    /// group waited for its merge, and that task's start refused: the merge comes first.
    #[test]
    fn the_stop_hook_driver_prompts_the_merge_of_a_finished_group() {
        let mut s = state();
        s["executionDriver"] = json!("stop-hook");
        let member = json!({"branch": "b", "worktree": "1.1", "base": "c", "status": "ready"});
        s["isolation"] = json!({"group": {"members": ["1.1"], "baseBranch": "main", "base": "c",
            "status": "running"}, "members": {"1.1": member}});
        let o = decide(&s, TASKS, Some("The member reported."), false, None);
        assert_eq!(o.rule, "next-task-group-merge");
        let r = block_text(&o);
        assert!(r.contains("run `specrun group merge --spec demo`"), "{r}");
        assert!(!r.contains("Delegate it"), "{r}");
        // Every box ticked, the group still unmerged: the merge too, not an allow.
        let o = decide(&s, DONE, Some("All done."), false, None);
        assert_eq!(o.rule, "next-task-group-merge", "{o:?}");
        // Once merged and verified, the next task.
        s["isolation"]["group"]["status"] = json!("complete");
        s["isolation"]["members"]["1.1"]["status"] = json!("merged");
        let o = decide(&s, TASKS, None, false, None);
        assert_eq!(o.rule, "next-task");
        assert!(block_text(&o).contains("Next task 1.2"));
    }

    #[test]
    fn a_stop_while_agents_run_is_no_stall_and_no_redelegation() {
        let mut s = state();
        s["executionDriver"] = json!("stop-hook");
        s["guard"] = json!({"lastFingerprint": "1/2:1:abc", "stallStops": 4});
        s["attempts"] = json!({"1.2": [{"n": 1, "status": "running"}]});
        // Stall 4 of 5: a counted stop would halt; a waiting one does not count.
        let o = decide_running(&s, TASKS, Some("Waiting for the executor."), false);
        assert_eq!(o.patch["guard"]["stallStops"], 4);
        // Nor does it move the baseline the next counted stop is compared with.
        assert!(o.patch["guard"].get("lastFingerprint").is_none(), "{o:?}");
        assert_eq!(o.rule, "agents-running-wait");
        let r = block_text(&o);
        assert!(
            r.contains("Execute task 1.2 (specrun:spec-executor)"),
            "{r}"
        );
        assert!(r.contains("running attempt(s): 1.2"), "{r}");
        assert!(r.contains("end your turn and wait"), "{r}");
        assert!(!r.contains("Delegate it"), "the task brief was sent: {r}");
        assert_eq!(o.event["runningAgents"], 1);
        // Told once: the stop after the block is allowed.
        let o = decide_running(&s, TASKS, Some("Waiting."), true);
        assert!(matches!(o.decision, Decision::Allow(Some(_))), "{o:?}");
        assert_eq!(o.rule, "agents-running");
        // Other drivers never re-prompt: allow, with the reason for the user.
        s["executionDriver"] = json!("native-goal");
        let o = decide_running(&s, TASKS, None, false);
        assert_eq!(o.rule, "agents-running");
        assert!(matches!(o.decision, Decision::Allow(Some(_))));
        // Caps still halt.
        s["globalIteration"] = json!(30);
        assert!(matches!(
            decide_running(&s, TASKS, None, false).decision,
            Decision::Halt(_)
        ));
    }

    #[test]
    fn a_completion_claim_while_agents_run_is_refused_with_that_reason() {
        let o = decide_running(&state(), DONE, Some(COMPLETION_TOKEN), false);
        let r = block_text(&o);
        assert_eq!(o.rule, "completion-refused");
        assert!(r.contains("still working in the background"), "{r}");
        assert!(o.patch.get("phase").is_none());
    }

    #[test]
    fn awaiting_approval_stops_do_not_count_as_stalls() {
        let mut s = state();
        s["awaitingApproval"] = json!(true);
        s["guard"] = json!({"lastFingerprint": "1/2:1:abc", "stallStops": 4});
        let o = decide(&s, TASKS, None, false, None);
        assert_eq!(o.patch["guard"]["stallStops"], 0);
        assert!(!matches!(o.decision, Decision::Halt(_)));
    }

    #[test]
    fn row4_stall_cap_and_zero_disables_it() {
        let mut s = state();
        s["guard"] = json!({"lastFingerprint": "1/2:1:abc", "stallStops": 4});
        let o = decide(&s, TASKS, None, false, None);
        assert!(halt_of(&o).contains("5 stops in a row without progress"));
        assert_eq!(o.patch["guard"]["stallStops"], 0);
        s["budget"]["maxStallStops"] = json!(0);
        assert_eq!(
            decide(&s, TASKS, None, false, None).decision,
            Decision::Allow(None)
        );
    }

    #[test]
    fn row4_halted_state_halts_again_without_a_new_halt_record() {
        let mut s = state();
        s["halt"] = json!({"kind": "stall", "reason": "5 stops", "at": "x"});
        let o = decide(&s, TASKS, Some(COMPLETION_TOKEN), false, good_gates());
        assert!(halt_of(&o).contains("is halted (5 stops)"));
        assert!(o.patch.get("halt").is_none());
        assert_eq!(o.patch["globalIteration"], 1);
    }

    #[test]
    fn row5_completion_accepted_when_every_gate_holds() {
        let o = decide(
            &state(),
            DONE,
            Some("All good.\nALL_TASKS_COMPLETE"),
            false,
            good_gates(),
        );
        assert!(matches!(o.decision, Decision::Allow(Some(_))));
        assert_eq!(o.patch["phase"], "completed");
        assert_eq!(o.patch["completed"], true);
        assert_eq!(o.patch["completedAt"], "2026-01-01T01:00:00.000Z");
        assert_eq!(o.rule, "completion-accepted");
    }

    #[test]
    fn row5_completion_refused_lists_every_gate_with_its_command() {
        let mut s = state();
        s["verificationBlocks"] = json!({"execution": {"command": "cargo test --all"}});
        let gates = Some(CompletionGates {
            criteria: vec!["1/AC1 (x) is unmapped: map it".into()],
            proposed: vec![],
            baseline: vec![],
            evidence: Freshness::Stale,
            blockers: Ok(vec![Blocker {
                id: "F2".into(),
                title: "check perf".into(),
            }]),
        });
        let o = decide(&s, TASKS, Some(COMPLETION_TOKEN), false, gates);
        let r = block_text(&o);
        assert!(r.contains("1 of 2 tasks unchecked (1.2)"), "{r}");
        assert!(
            r.contains("`specrun task complete 1.2 --check --spec demo` (then the next)"),
            "{r}"
        );
        assert!(r.contains("execution evidence is stale"), "{r}");
        assert!(
            r.contains(
                "`specrun verify run --phase execution --spec demo --command 'cargo test --all'`"
            ),
            "{r}"
        );
        assert!(
            r.contains("`specrun followup resolve F2 --note \"<what was done>\" --spec demo`"),
            "{r}"
        );
        assert!(
            r.contains("acceptance criterion 1/AC1 (x) is unmapped"),
            "{r}"
        );
        assert_eq!(o.patch["guard"]["lastBlockFingerprint"], "1/2:1:abc");
        assert_eq!(o.patch["guard"]["blocks"], 1);
        assert!(o.patch.get("phase").is_none());
    }

    #[test]
    fn row5_a_box_ticked_by_hand_is_not_a_completion() {
        // The executor ticked 1.2 with sed: its attempt still runs, its claim is unverified.
        let mut s = state();
        s["checkedAtInit"] = json!(["1.1"]);
        s["attempts"] =
            json!({"1.2": [{"n": 1, "status": "running", "startedAt": "2026-01-01T00:01:00Z"}]});
        s["unverifiedClaims"] =
            json!([{"taskId": "1.2", "at": "2026-01-01T00:05:00Z", "missing": []}]);
        let o = decide(&s, DONE, Some(COMPLETION_TOKEN), false, good_gates());
        let r = block_text(&o);
        assert!(
            r.contains("task 1.2 is checked but attempt 1 is still running"),
            "{r}"
        );
        assert!(r.contains("TASK_COMPLETE 1.2"), "{r}");
        assert_eq!(
            o.event["unmet"],
            json!(["attempt-running", "unverified-claim"])
        );
        assert!(o.patch.get("phase").is_none());
    }

    #[test]
    fn row5_missing_gates_count_as_missing_evidence() {
        let o = decide(&state(), DONE, Some(COMPLETION_TOKEN), false, None);
        let r = block_text(&o);
        assert!(r.contains("execution evidence is missing"), "{r}");
        assert!(r.contains("--command '<full test command>'"), "{r}");
    }

    #[test]
    fn row5_no_progress_since_block_allows_with_a_message() {
        let mut s = state();
        s["guard"] = json!({"lastBlockFingerprint": "2/2:1:abc", "lastFingerprint": "2/2:1:abc"});
        let o = decide(&s, DONE, Some(COMPLETION_TOKEN), true, None);
        let Decision::Allow(Some(m)) = &o.decision else {
            panic!("{o:?}")
        };
        assert!(m.contains("not re-prompting"), "{m}");
        // Without stop_hook_active it blocks again.
        assert!(matches!(
            decide(&s, DONE, Some(COMPLETION_TOKEN), false, None).decision,
            Decision::Block(_)
        ));
    }

    #[test]
    fn row6_stop_hook_driver_blocks_with_the_next_task_only() {
        let mut s = state();
        s["executionDriver"] = json!("stop-hook");
        let o = decide(&s, TASKS, Some("done for now"), false, None);
        let r = block_text(&o);
        assert!(r.starts_with("Spec 'demo': 1/2 tasks done. Next task 1.2: Second\nDo: write it\nFiles: src/a.rs\nVerify: `cargo test a`\n"), "{r}");
        assert!(!r.contains("1.1"), "{r}");
        // Bounded: a second stop with stop_hook_active and no progress is allowed.
        s["guard"] = json!({"lastBlockFingerprint": "1/2:1:abc"});
        assert!(matches!(
            decide(&s, TASKS, None, true, None).decision,
            Decision::Allow(Some(_))
        ));
        // Awaiting approval: no re-prompt.
        s["awaitingApproval"] = json!(true);
        assert_eq!(
            decide(&s, TASKS, None, false, None).decision,
            Decision::Allow(None)
        );
    }

    #[test]
    fn row7_otherwise_allow() {
        let o = decide(
            &state(),
            TASKS,
            Some("a claim: ALL_TASKS_COMPLETE soon"),
            false,
            None,
        );
        assert_eq!(o.decision, Decision::Allow(None));
        assert_eq!(o.decision.to_hook_json(), None);
    }
}
