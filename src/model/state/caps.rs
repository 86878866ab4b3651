//! The caps' arithmetic on the typed state: where the time cap counts from, and the
//! `specrun resume` command that lifts a halt.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::time::{self, Timestamp};
use super::typed::State;
use super::{HALT_FORECAST, HALT_GLOBAL, HALT_MINUTES, HALT_TASK, HALT_TOKENS, HALT_USD};

/// The forecast cap defaults `state init` seeds (`cost` judges with them).
pub const DEFAULT_FORECAST_WARN: u64 = 80;
pub const DEFAULT_FORECAST_HALT: u64 = 50;

/// How far in the future `startedAt` may lie before it is an error (a clock stepped back).
pub const CLOCK_SKEW_MINUTES: i64 = 5;

/// Where the time cap counts from, and what was wrong with `startedAt` if it could not be
/// used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeOrigin {
    pub at: DateTime<Utc>,
    /// `startedAt` or the fallback's name, for messages.
    pub source: &'static str,
    pub problem: Option<String>,
}

/// The time cap's origin. It fails closed: a missing, unreadable or future `startedAt`
/// (`started`, its text) does not turn the cap off; it counts from the earliest sound time
/// the execution recorded (`guard.clockStartedAt`, which the Stop hook stamps, or an
/// attempt's `startedAt`), else from `now`, and `problem` says what was wrong.
pub(super) fn origin<'a>(
    started: Option<&str>,
    clock: Option<&str>,
    attempt_starts: impl Iterator<Item = &'a str>,
    now: DateTime<Utc>,
) -> TimeOrigin {
    let sound = |t: DateTime<Utc>| time::not_after(t, now, CLOCK_SKEW_MINUTES);
    let problem = match started {
        Some(text) => match time::parse(text) {
            Some(t) if sound(t) => {
                return TimeOrigin {
                    at: t,
                    source: "startedAt",
                    problem: None,
                }
            }
            Some(_) => format!("startedAt {text} lies in the future"),
            None => format!("startedAt {text:?} is not an RFC 3339 time"),
        },
        None => "startedAt is missing".to_string(),
    };
    let clock = clock
        .and_then(time::parse)
        .map(|t| (t, "guard.clockStartedAt"));
    let attempts = attempt_starts
        .filter_map(time::parse)
        .map(|t| (t, "the first attempt's startedAt"));
    let (at, source) = clock
        .into_iter()
        .chain(attempts)
        .filter(|(t, _)| sound(*t))
        .min_by_key(|(t, _)| *t)
        .unwrap_or((now, "this stop"));
    TimeOrigin {
        at,
        source,
        problem: Some(format!(
            "{problem}; the time cap counts from {source} ({}) instead",
            time::format_secs(at)
        )),
    }
}

/// Whole minutes from `origin` to `now`, and the origin.
pub(super) fn minutes_from(origin: TimeOrigin, now: DateTime<Utc>) -> (u64, TimeOrigin) {
    (time::minutes_between(origin.at, now), origin)
}

impl State {
    /// See `origin`: the time cap's origin for this state.
    pub fn time_origin(&self, now: DateTime<Utc>) -> TimeOrigin {
        let attempts = self.attempts.iter().flat_map(|m| m.values()).flatten();
        let starts = attempts.filter_map(|a| a.started_at.get().and_then(Timestamp::text));
        let clock = self
            .guard()
            .clock_started_at
            .get()
            .and_then(Timestamp::text);
        origin(
            self.started_at().and_then(Timestamp::text),
            clock,
            starts,
            now,
        )
    }

    /// Whole minutes from the time cap's origin to `now`, and the origin.
    pub fn minutes_since(&self, now: DateTime<Utc>) -> (u64, TimeOrigin) {
        minutes_from(self.time_origin(now), now)
    }

    /// Whole minutes from the time cap's origin to `halt.at` (0 when it is unreadable).
    fn minutes_until_halt(&self) -> u64 {
        let at = self.halt().and_then(|h| h.at.get()).and_then(Timestamp::at);
        at.map_or(0, |halt| self.minutes_since(halt).0)
    }

    /// A detail the halt record carries for its kind (`spentUsd`, `raiseFlag`, `raiseTo`).
    fn halt_detail(&self, key: &str) -> Option<&Value> {
        self.halt()?.other.get(key)
    }

    /// The exact shell command that clears this state's halt, with a raised cap where the
    /// halt kind needs one. `resume` refuses a raise that does not lift the cap above what
    /// is already used, so the new limit is twice the old one and always above the usage;
    /// tokens and minutes overshoot (one long turn, an idle night), so they get a whole
    /// limit more than was used. Minutes are counted up to `halt.at`, which keeps this pure.
    pub fn resume_command(&self, spec_name: &str) -> String {
        let flag = match self.halt_kind() {
            Some(HALT_GLOBAL) => format!(
                " --raise-global {}",
                above(self.max_global_iterations(), self.global_iteration())
            ),
            Some(HALT_TASK) => format!(
                " --raise-task {}",
                above(self.max_task_iterations(), self.task_iteration())
            ),
            Some(HALT_TOKENS) => {
                let used = self.output_tokens();
                let limit = self.max_output_tokens().unwrap_or(used);
                format!(" --raise-tokens {}", plus_limit(limit, used))
            }
            Some(HALT_MINUTES) => format!(
                " --raise-minutes {}",
                plus_limit(self.max_minutes().unwrap_or(60), self.minutes_until_halt())
            ),
            Some(HALT_USD) => {
                let max = self.max_usd().unwrap_or(0.0);
                let spent = self.halt_detail("spentUsd").and_then(Value::as_f64);
                let spent = spent.unwrap_or(max);
                let raise = (max * 2.0).max(spent + max).max(spent + 0.01);
                format!(" --raise-usd {raise:.2}")
            }
            // The guard wrote the raise its forecast needs into the halt record.
            Some(HALT_FORECAST) => {
                let flag = self.halt_detail("raiseFlag").and_then(Value::as_str);
                match (flag, self.halt_detail("raiseTo")) {
                    (Some(flag), Some(to)) => format!(
                        " {} {}",
                        crate::support::shell::word(flag),
                        crate::support::shell::word(&to.to_string())
                    ),
                    _ => String::new(),
                }
            }
            _ => String::new(),
        };
        format!(
            "specrun resume {}{flag}",
            crate::support::shell::spec_flag(spec_name)
        )
    }
}

fn doubled(limit: u64) -> u64 {
    limit.saturating_mul(2).max(limit.saturating_add(1))
}

fn above(limit: u64, used: u64) -> u64 {
    doubled(limit).max(used.saturating_add(1))
}

fn plus_limit(limit: u64, used: u64) -> u64 {
    doubled(limit).max(used.saturating_add(limit))
}
