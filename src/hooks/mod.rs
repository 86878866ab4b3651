//! The guard's decisions (docs/design.md#what-specrun-does), as pure functions: the hook edge
//! (`commands/hook.rs`) gathers the facts — hook stdin, the state document, the parsed
//! tasks, HEAD, transcript usage, evidence freshness, critique records, open follow-ups,
//! the time — and applies what comes back: a decision, a state patch (merged with
//! `state::apply_patch`) and an event for `.specrun/events.jsonl`.

pub(crate) mod bound;
pub(crate) mod claims;
pub(crate) mod decision;
pub(crate) mod hook_cost;
pub mod tool_guard;
pub(crate) mod uncounted;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};

use crate::evidence::critique::Stored;
use crate::evidence::verify::Freshness;
use crate::io::events::Event;
use crate::model::state::{self, Driver, Halt, Nullable, Patch, Phase, State, Timestamp};
use crate::model::tasks::{Task, TaskList};
use crate::support::shell::word as shell_word;

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

pub(crate) use crate::next::completion::Gates as CompletionGates;

/// The facts a Stop is decided on, gathered under the state lock.
pub(crate) struct StopFacts<'a> {
    pub spec_name: &'a str,
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

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
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
        spec: stop.facts.spec_name,
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
    let name = stop.facts.spec_name;
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
    if let Some(n) = time_cap_notice(name, stop.minutes) {
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
fn minutes_used(v: &State, now: DateTime<Utc>) -> Option<Minutes> {
    v.max_minutes()?;
    Some(v.minutes_since(now))
}

/// With a time cap set, what is wrong with `startedAt` (the cap still holds).
fn time_cap_notice(name: &str, minutes: Option<&Minutes>) -> Option<String> {
    let problem = minutes?.1.problem.as_deref()?;
    Some(format!(
        "specrun guard: spec '{name}': {problem}. Fix it with `specrun state merge {} '{{\"startedAt\": \"<when the run began, RFC 3339>\"}}'`.",
        crate::support::shell::word(&format!("specs/{name}/.specrun-state.json"))
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
    let name = stop.facts.spec_name;
    let s = halt_text(name, v.halt_reason().unwrap_or("no reason recorded"));
    Some((Decision::Halt(s), "halted".into()))
}

fn cap(stop: &CountedStop<'_>, effects: &mut Effects) -> Option<Ruling> {
    let Counted {
        global,
        output_tokens,
        stall,
    } = stop.counted;
    let (state, name) = (stop.state, stop.facts.spec_name);
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
    let name = facts.spec_name;
    let mut unmet =
        crate::next::completion::unmet(name, state, facts.tasks, facts.completion.as_ref());
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
    let wait = waiting_text(stop.facts.spec_name, stop.state, input.running_agents);
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
    let (name, tasks) = (stop.facts.spec_name, stop.facts.tasks);
    // The one "what next": an isolated group waiting for its merge is merged before the
    // next task, whose start refuses until then.
    let standing = crate::next::standing_of(name, tasks, v);
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
fn hit_cap(
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
pub(crate) fn claim_missing(name: &str, id: &str, facts: &ClaimFacts) -> Vec<String> {
    let spec_flag = crate::support::shell::spec_flag(name);
    let id_q = shell_word(id);
    let mut missing = Vec::new();
    let verify = match &facts.task {
        None => {
            missing.push(format!("task {id} does not exist (once) in specs/{name}/tasks.md: claim the id the task brief gave."));
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
    name: &str,
    id: &str,
    facts: &ClaimFacts,
    input: &SubagentInput<'_>,
    state: &State,
    now: DateTime<Utc>,
) -> Outcome {
    let missing = claim_missing(name, id, facts);
    let (decision, rule, patch) = judge_task_claim(id, &missing, input, state, now);
    let event = decision::record(&ClaimRecord {
        spec: name,
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

/// The tools that start work beside the coordinator's own turn: `Agent` (and its old name
/// `Task`) delegates; `Workflow` starts subagents with no PreToolUse for `Agent`;
/// `SendMessage` resumes a finished agent; `ScheduleWakeup` and `CronCreate` queue future
/// turns. hooks/hooks.json's PreToolUse matcher names the same tools.
pub const WORK_TOOLS: [&str; 6] = [
    "Agent",
    "Task",
    "Workflow",
    "SendMessage",
    "ScheduleWakeup",
    "CronCreate",
];

/// PreToolUse on a work-starting tool (`WORK_TOOLS`): once the owned execution is halted,
/// cancelled or has spent a budget, new work is denied, so a coordinator that never ends
/// its turn still stops at the caps and a halted one starts nothing new.
/// `Some((rule, reason))` denies.
pub(crate) fn deny_delegation(
    name: &str,
    state: &State,
    tool_name: Option<&str>,
    session: Option<&str>,
    now: DateTime<Utc>,
) -> Option<(String, String)> {
    let tool = tool_name.filter(|t| WORK_TOOLS.contains(t))?;
    if !owned_by(state, session) {
        return None;
    }
    let v = state;
    if v.phase() == Some(Phase::Cancelled) {
        return Some((
            "cancelled".into(),
            format!(
                "specrun: do not start new work ({tool} starts work): spec '{name}' was cancelled. End your turn now; {}.",
                crate::claude::roles::PERSON_DECIDES
            ),
        ));
    }
    if !executing(state) {
        return None;
    }
    let (rule, why) = match v.halt() {
        Some(_) => (
            "halted".to_string(),
            format!(
                "the execution is halted ({})",
                v.halt_reason().unwrap_or("no reason recorded")
            ),
        ),
        None => {
            let minutes = minutes_used(v, now);
            let (kind, what) = hit_cap(
                v,
                v.global_iteration(),
                v.output_tokens(),
                0,
                minutes.as_ref(),
            )?;
            (format!("cap:{kind}"), what)
        }
    };
    Some((
        rule,
        format!(
            "specrun: do not delegate more work ({tool} starts work): {why}. End your turn now: the Stop hook halts the execution, and {}.",
            crate::claude::roles::PERSON_DECIDES
        ),
    ))
}

/// A PreToolUse decision past the fast path: `deny` is the reason when denied, `rule` the
/// rule that decided, `tool` the tool asked about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolDecision {
    pub deny: Option<String>,
    pub rule: String,
    pub tool: Option<String>,
}

impl ToolDecision {
    /// Its events.jsonl line, for spec `spec`.
    pub(crate) fn event<'a>(&'a self, spec: &'a str) -> Event<'a> {
        Event::PreToolUse {
            spec,
            tool: self.tool.as_deref(),
            decision: if self.deny.is_some() { "deny" } else { "allow" },
            rule: &self.rule,
            reason: self.deny.as_deref(),
        }
    }
}

/// The tool call a PreToolUse hook is asked about: its name and, for `Agent`/`Task`, the
/// `isolation` it asks for (`worktree`, `remote`; Claude Code 2.1.332).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ToolCall<'a> {
    pub name: Option<&'a str>,
    pub isolation: Option<&'a str>,
    /// For Bash, Write, Edit, MultiEdit, NotebookEdit: what the call does
    /// (`tool_guard::bash`, `tool_guard::file`).
    pub guarded: Option<&'a tool_guard::Call>,
}

/// PreToolUse: an executing spec's delegation that asks Claude Code for its own
/// `isolation`. specrun makes a member's worktree itself (DESIGN-NOTES,
/// "Isolation"): in Claude Code's worktree the executor's verbs find no spec, and a remote
/// agent's hooks never run here.
fn deny_native_isolation(
    name: &str,
    state: &State,
    tool: ToolCall,
    session: Option<&str>,
) -> Option<String> {
    let spec_flag = crate::support::shell::spec_flag(name);
    let isolation = tool.isolation.filter(|i| !i.is_empty())?;
    let applies =
        matches!(tool.name, Some("Agent" | "Task")) && executing(state) && owned_by(state, session);
    applies.then(|| format!(
        "specrun: delegate without `isolation` (\"{isolation}\" asked for): specrun makes the worktree itself. Run `specrun task start <id> --worktree {spec_flag}`, put the path it prints in the brief, and delegate again without `isolation` (references/isolated-groups.md)."
    ))
}

/// Decide a PreToolUse: quick mode's question denial, then the work denial, then a
/// delegation asking for Claude Code's own isolation. `None` when the guard has nothing to
/// do with this session's call (another session's or an unowned execution, and no
/// denial): nothing is answered or written.
pub(crate) fn decide_pre_tool_use(
    name: &str,
    state: &State,
    tool: ToolCall,
    session: Option<&str>,
    now: DateTime<Utc>,
) -> Option<ToolDecision> {
    let tool_name = tool.name;
    if let Some(call) = tool.guarded {
        return guard_tool(state, call, session).map(|(rule, reason)| ToolDecision {
            deny: Some(reason),
            rule,
            tool: tool_name.map(str::to_string),
        });
    }
    let (rule, deny) = match deny_question(state, tool_name, session) {
        Some(reason) => ("quick-mode-question".to_string(), Some(reason)),
        None => match deny_delegation(name, state, tool_name, session, now) {
            Some((rule, reason)) => (rule, Some(reason)),
            None => match deny_native_isolation(name, state, tool, session) {
                Some(reason) => ("native-isolation".to_string(), Some(reason)),
                None if owned_by(state, session) => ("allow".to_string(), None),
                None => return None,
            },
        },
    };
    Some(ToolDecision {
        deny,
        rule,
        tool: tool_name.map(str::to_string),
    })
}

/// The guard on Bash, Write, Edit, MultiEdit and NotebookEdit of the owning session: a
/// forbidden call while the execution runs, halted or cancelled; after a halt or a cancel
/// also any call that may change the code (read-only ones never reach here). `None`
/// allows, unrecorded (a line per Bash call would flood the events).
fn guard_tool(
    state: &State,
    call: &tool_guard::Call,
    session: Option<&str>,
) -> Option<(String, String)> {
    if !owned_by(state, session) {
        return None;
    }
    let stopped = state.halt().is_some() || state.phase() == Some(Phase::Cancelled);
    let steps = "What you may do: fail the task (`specrun task fail <id> --reason \"…\"`), record a follow-up (`specrun followup add …`), or end your turn";
    match call {
        tool_guard::Call::Forbidden(rule, why) => Some((
            (*rule).to_string(),
            format!(
                "specrun guard: denied during an execution: {why}. {steps}; {}.",
                crate::claude::roles::PERSON_DECIDES
            ),
        )),
        tool_guard::Call::Changes if stopped => Some((
            "stopped-no-changes".to_string(),
            format!(
                "specrun guard: the execution is {} ({}): tools that may change the code are denied until a person lifts it; read-only commands stay allowed. End your turn; {}.",
                if state.phase() == Some(Phase::Cancelled) { "cancelled" } else { "halted" },
                state.halt_reason().unwrap_or("no reason recorded"),
                crate::claude::roles::PERSON_DECIDES
            ),
        )),
        _ => None,
    }
}

/// SessionStart context: 1–3 lines for the session that owns (or could own) the execution.
pub(crate) fn session_context(
    name: &str,
    v: &state::State,
    tasks: Option<&TaskList>,
    session: Option<&str>,
) -> Option<String> {
    let spec_flag = crate::support::shell::spec_flag(name);
    if v.phase() != Some(state::Phase::Execution) {
        return None;
    }
    // Unowned, or owned by this session (`owned_by`, on the typed state).
    if v.session_id().is_some_and(|owner| Some(owner) != session) {
        return None;
    }
    let mut lines = Vec::new();
    let progress = match tasks {
        Some(list) => {
            let c = list.counts();
            let next = list
                .next()
                .map(|t| format!(", next {} {}", t.label(), t.title))
                .unwrap_or_default();
            format!("{}/{} tasks checked{next}", c.completed, c.total)
        }
        None => "tasks.md unreadable".into(),
    };
    lines.push(format!(
        "specrun: spec '{name}' is executing: {progress}; stop {} of {}.",
        v.global_iteration(),
        v.max_global_iterations()
    ));
    // The halt is the engine's finding (`next::halt`), as snapshot and status see it.
    match crate::next::halt(name, v) {
        Some(h) => lines.push(format!(
            "Halted: {}; {}.",
            h.reason,
            crate::claude::roles::PERSON_DECIDES
        )),
        None => {
            // The merge comes before the next task (the engine's step, as snapshot says).
            let merge = tasks.and_then(|l| crate::next::standing_of(name, l, v).merge_step());
            if let Some(merge) = merge {
                lines.push(format!("Next: {merge}"));
            }
            lines.push(format!("Continue with /specrun:implement {name} (`specrun status {spec_flag}` shows the details)."));
        }
    }
    Some(lines.join("\n"))
}

/// PreToolUse: in quick mode, AskUserQuestion is denied with this reason.
pub(crate) fn deny_question(
    state: &State,
    tool_name: Option<&str>,
    session: Option<&str>,
) -> Option<String> {
    let applies = tool_name == Some("AskUserQuestion")
        && executing(state)
        && state.quick_mode()
        && (state.session_id().is_none() || owned_by(state, session));
    applies.then(|| {
        "specrun quick mode: do not ask the user. Decide yourself from the spec (requirements, design, tasks.md), pick the most reasonable option, note the assumption in .progress.md, and continue.".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tasks;
    use crate::next::completion::Blocker;

    const TASKS: &str = "## Phase 1\n- [x] 1.1 First\n- [ ] 1.2 Second\n  - **Do**: write it\n  - **Files**: src/a.rs\n  - **Verify**: `cargo test a`\n";
    const DONE: &str = "## Phase 1\n- [x] 1.1 First\n- [x] 1.2 Second\n";

    /// The typed state the decisions take, from a test's JSON document.
    fn typed(doc: &Value) -> State {
        State::from_value(doc).expect("a well-typed test state")
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T01:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn state() -> Value {
        json!({
            "version": 1, "name": "demo", "phase": "execution", "sessionId": "s1",
            "taskIndex": 1, "totalTasks": 2, "taskIteration": 0, "maxTaskIterations": 5,
            "globalIteration": 0, "maxGlobalIterations": 30,
            "budget": {"maxOutputTokens": null, "maxMinutes": null, "maxStallStops": 5},
            "usage": {"outputTokens": 0, "inputTokens": 0},
            "startedAt": "2026-01-01T00:00:00Z", "executionDriver": "manual",
            "halt": null, "guard": {}, "checkedAtInit": ["1.1", "1.2"]
        })
    }

    fn decide(
        state: &Value,
        tasks_md: &str,
        msg: Option<&str>,
        active: bool,
        gates: Option<CompletionGates>,
    ) -> Outcome {
        decide_with(state, tasks_md, msg, active, gates, &[])
    }

    fn decide_with(
        state: &Value,
        tasks_md: &str,
        msg: Option<&str>,
        active: bool,
        gates: Option<CompletionGates>,
        running_agents: &[String],
    ) -> Outcome {
        let list = tasks::parse(tasks_md);
        let facts = StopFacts {
            spec_name: "demo",
            tasks: &list,
            head: Some("abc"),
            usage: UsageRead::default(),
            completion: gates,
            now: now(),
            missed: Default::default(),
        };
        let input = StopInput {
            stop_hook_active: active,
            last_assistant_message: msg,
            running_agents,
        };
        decide_stop(&input, &typed(state), &facts)
    }

    fn good_gates() -> Option<CompletionGates> {
        Some(CompletionGates {
            evidence: Freshness::Fresh,
            blockers: Ok(vec![]),
            criteria: vec![],
            proposed: vec![],
            baseline: vec![],
        })
    }

    fn halt_text(o: &Outcome) -> &str {
        match &o.decision {
            Decision::Halt(s) => s,
            d => panic!("expected a halt, got {d:?}"),
        }
    }

    fn block_text(o: &Outcome) -> &str {
        match &o.decision {
            Decision::Block(r) => r,
            d => panic!("expected a block, got {d:?}"),
        }
    }

    /// Agent a1 of session s1 claims task 1.2.
    fn decide_claim(facts: &ClaimFacts, stop_hook_active: bool) -> Outcome {
        let input = SubagentInput {
            agent_id: Some("a1"),
            stop_hook_active,
        };
        decide_subagent_stop("demo", "1.2", facts, &input, &typed(&state()), now())
    }

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
            spec_name: "demo",
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
        let text = halt_text(&o);
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
        assert!(halt_text(&o).contains("task iterations 5 >= maxTaskIterations 5"));
        assert!(!halt_text(&o).contains("--raise-task"));
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
        assert!(halt_text(&o).contains("output tokens 100 >= budget.maxOutputTokens 100"));
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
        assert!(halt_text(&o).contains("60 minutes since startedAt >= budget.maxMinutes 60"));
        assert_eq!(o.patch["halt"]["kind"], "time-cap");
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
                halt_text(&o)
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

    #[test]
    fn delegation_is_denied_only_when_halted_cancelled_or_a_budget_is_spent() {
        let mut s = state();
        let deny = |s: &Value, tool: &str, session: &str| {
            deny_delegation("demo", &typed(s), Some(tool), Some(session), now()).map(|(_, r)| r)
        };
        assert_eq!(deny(&s, "Agent", "s1"), None);
        s["budget"]["maxOutputTokens"] = json!(1000);
        s["usage"] = json!({"outputTokens": 1000});
        let m = deny(&s, "Agent", "s1").expect("token budget spent");
        assert!(
            m.contains("output tokens 1000 >= budget.maxOutputTokens 1000"),
            "{m}"
        );
        for tool in WORK_TOOLS {
            let m = deny(&s, tool, "s1").unwrap_or_else(|| panic!("{tool} allowed"));
            assert!(m.contains(&format!("({tool} starts work)")), "{m}");
        }
        for tool in ["Bash", "TaskStop", "ListAgents", "Monitor"] {
            assert_eq!(deny(&s, tool, "s1"), None, "{tool}");
        }
        assert_eq!(deny(&s, "Agent", "other-session"), None);
        s["usage"] = json!({"outputTokens": 1});
        s["halt"] = json!({"kind": "stall", "reason": "5 stops without progress"});
        let m = deny(&s, "Agent", "s1").expect("halted");
        assert!(m.contains("halted (5 stops without progress)"), "{m}");
        // Cancelled: the phase is no longer execution, and new work is still denied.
        s["phase"] = json!("cancelled");
        s["halt"] = json!({"kind": "cancelled", "reason": "cancelled by `specrun cancel`"});
        let (rule, m) =
            deny_delegation("demo", &typed(&s), Some("Agent"), Some("s1"), now()).unwrap();
        assert_eq!(rule, "cancelled");
        assert!(
            m.contains("a person decides at a shell") && !m.contains("resume"),
            "{m}"
        );
        s["phase"] = json!("completed");
        assert_eq!(deny(&s, "Agent", "s1"), None);
    }

    #[test]
    fn every_pre_tool_use_decision_of_the_owner_is_an_event() {
        let s = state();
        let d = decide_pre_tool_use("demo", &typed(&s), agent(None), Some("s1"), now()).unwrap();
        assert_eq!(d.deny, None);
        assert_eq!(
            (d.rule.as_str(), d.tool.as_deref()),
            ("allow", Some("Agent"))
        );
        assert_eq!(
            decide_pre_tool_use("demo", &typed(&s), agent(None), Some("s2"), now()),
            None
        );
        let mut quick = state();
        quick["quickMode"] = json!(true);
        quick["sessionId"] = Value::Null;
        let d = decide_pre_tool_use(
            "demo",
            &typed(&quick),
            ToolCall {
                name: Some("AskUserQuestion"),
                isolation: None,
                guarded: None,
            },
            Some("s2"),
            now(),
        )
        .unwrap();
        assert!(d.deny.is_some());
        assert_eq!(d.rule, "quick-mode-question");
    }

    fn agent(isolation: Option<&str>) -> ToolCall<'_> {
        ToolCall {
            name: Some("Agent"),
            isolation,
            guarded: None,
        }
    }

    #[test]
    fn a_delegation_asking_for_claude_codes_own_isolation_is_denied_with_the_way() {
        let s = state();
        let d = decide_pre_tool_use(
            "demo",
            &typed(&s),
            agent(Some("worktree")),
            Some("s1"),
            now(),
        )
        .unwrap();
        assert_eq!(d.rule, "native-isolation");
        let reason = d.deny.expect("denied");
        assert!(
            reason.contains("`specrun task start <id> --worktree --spec demo`"),
            "{reason}"
        );
        assert!(
            decide_pre_tool_use("demo", &typed(&s), agent(Some("remote")), Some("s1"), now())
                .unwrap()
                .deny
                .is_some()
        );
        // Without isolation, from another session, or with nothing executing: allowed.
        assert_eq!(
            decide_pre_tool_use("demo", &typed(&s), agent(None), Some("s1"), now())
                .unwrap()
                .deny,
            None
        );
        assert_eq!(
            decide_pre_tool_use(
                "demo",
                &typed(&s),
                agent(Some("worktree")),
                Some("s2"),
                now()
            ),
            None
        );
        let mut done = state();
        done["phase"] = json!("completed");
        assert!(decide_pre_tool_use(
            "demo",
            &typed(&done),
            agent(Some("worktree")),
            Some("s1"),
            now()
        )
        .is_none_or(|d| d.deny.is_none()));
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
        assert!(halt_text(&o).contains("5 stops in a row without progress"));
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
        assert!(halt_text(&o).contains("is halted (5 stops)"));
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
        let missing = claim_missing("demo", "1.2", &f);
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(
            missing[0].contains("does not count: it ran `true`"),
            "{missing:?}"
        );
        let none = claim(Some((false, None)), Freshness::Missing, true, true);
        let missing = claim_missing("demo", "1.2", &none);
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
        let missing = claim_missing("demo", "1", &f);
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
        let missing = claim_missing("demo", "1", &f);
        assert_eq!(missing.len(), 1);
        assert!(missing[0].contains("predates"), "{missing:?}");
        let unknown = claim_missing("demo", "9", &claim(None, Freshness::Fresh, true, true));
        assert!(unknown[0].contains("task 9 does not exist"), "{unknown:?}");
    }

    #[test]
    fn session_context_for_owner_or_unowned_only() {
        let list = tasks::parse(TASKS);
        let typed = |v: &Value| state::State::from_value(v).unwrap();
        let c = session_context("demo", &typed(&state()), Some(&list), Some("s1")).unwrap();
        assert_eq!(c.lines().count(), 2);
        assert!(c.contains("1/2 tasks checked, next 1.2 Second"), "{c}");
        assert!(session_context("demo", &typed(&state()), Some(&list), Some("s2")).is_none());
        let mut unowned = state();
        unowned["sessionId"] = Value::Null;
        assert!(session_context("demo", &typed(&unowned), Some(&list), Some("s2")).is_some());
        let mut halted = state();
        halted["halt"] = json!({"kind": "stall", "reason": "stuck"});
        let c = session_context("demo", &typed(&halted), None, Some("s1")).unwrap();
        assert!(
            c.contains("Halted: stuck; a person decides at a shell"),
            "{c}"
        );
        let mut done = state();
        done["phase"] = json!("completed");
        assert!(session_context("demo", &typed(&done), None, Some("s1")).is_none());
    }

    #[test]
    fn questions_denied_only_in_quick_mode() {
        let mut s = state();
        assert!(deny_question(&typed(&s), Some("AskUserQuestion"), Some("s1")).is_none());
        s["quickMode"] = json!(true);
        assert!(deny_question(&typed(&s), Some("AskUserQuestion"), Some("s1")).is_some());
        assert!(deny_question(&typed(&s), Some("Bash"), Some("s1")).is_none());
        assert!(deny_question(&typed(&s), Some("AskUserQuestion"), Some("s2")).is_none());
    }

    #[test]
    fn transcript_start_resets_for_another_file() {
        let s = json!({"usage": {"transcriptOffset": 10, "transcriptPath": "/a"}, "guard": {"lastMessageId": "m"}});
        assert_eq!(transcript_start(&typed(&s), "/a"), (Some(10), Some("m")));
        assert_eq!(transcript_start(&typed(&s), "/b"), (None, None));
    }
}
