//! What the run cost and where it is heading (issue 15), as pure functions over the state,
//! the tasks and the optional prices: the per-task table `status` and `report` show, the
//! per-task caps, the dollar cap and the forecast the Stop hook enforces. `priced_report`
//! is the one reader: it adds the project's price table, so `status` and `report` agree.
//!
//! Forecast: once two tasks are complete (checked, with a `done` attempt), the total of
//! each capped measure is projected as spent + median per completed task × tasks left,
//! with the spread (smallest and largest completed task instead of the median). A
//! projection at or past `forecastWarn` % of the budget warns; one past the budget by more
//! than `forecastHalt` % halts (`forecast-cap`), before the budget is spent.

pub(crate) mod prices;
pub(crate) mod settings;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::io::project::Project;
use crate::model::state::ledger::{self, Ledger, Tokens};
use crate::model::state::{Budget, Nullable, State};
use crate::model::tasks::TaskList;
use prices::Prices;

/// The forecast cap defaults live with the state's caps (the state seeds them).
pub(crate) use crate::model::state::{DEFAULT_FORECAST_HALT, DEFAULT_FORECAST_WARN};
/// Completed tasks needed before a forecast is made.
pub(crate) const FORECAST_MIN_COMPLETED: usize = 2;

/// One row of the cost table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskCost {
    pub id: String,
    pub title: String,
    pub checked: bool,
    pub attempts: usize,
    pub tokens: Tokens,
    pub total_tokens: u64,
    /// Tokens of the latest attempt (what `maxTaskTokens` caps).
    pub attempt_tokens: u64,
    pub minutes: f64,
    pub usd: Option<f64>,
}

/// A measure the forecast projects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Measure {
    OutputTokens,
    Minutes,
    Usd,
}

impl Measure {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Measure::OutputTokens => "output tokens",
            Measure::Minutes => "minutes",
            Measure::Usd => "USD",
        }
    }
    /// The `specrun resume` flag that raises this budget.
    pub(crate) fn raise_flag(self) -> &'static str {
        match self {
            Measure::OutputTokens => "--raise-tokens",
            Measure::Minutes => "--raise-minutes",
            Measure::Usd => "--raise-usd",
        }
    }
    fn show(self, v: f64) -> String {
        match self {
            Measure::Usd => format!("${v:.2}"),
            _ => format!("{}", v.round() as u64),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Level {
    Ok,
    Warn,
    Halt,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Forecast {
    pub measure: Measure,
    pub budget: f64,
    pub spent: f64,
    pub completed: usize,
    pub left: usize,
    pub median: f64,
    pub projected: f64,
    pub low: f64,
    pub high: f64,
    pub level: Level,
    /// The raise that would let the run finish at the high end of the spread.
    pub raise_to: u64,
}

impl Forecast {
    /// "output tokens: projected 5200 (4800–6100) = 1200 spent + median 1000 × 4 tasks left,
    /// budget 3000".
    pub(crate) fn describe(&self) -> String {
        let s = |v| self.measure.show(v);
        format!(
            "{}: projected {} ({}–{}) = {} spent + median {} × {} task(s) left (from {} completed), budget {}",
            self.measure.label(),
            s(self.projected),
            s(self.low),
            s(self.high),
            s(self.spent),
            s(self.median),
            self.left,
            self.completed,
            s(self.budget)
        )
    }
}

/// The whole picture: per task, overhead, totals, dollars and forecasts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CostReport {
    pub tasks: Vec<TaskCost>,
    /// Tokens spent on no task (coordinator before delegating, reviewers).
    pub overhead: Tokens,
    pub total: Tokens,
    pub total_tokens: u64,
    /// Dollars spent, when a price table covers the models.
    pub usd: Option<f64>,
    pub unpriced_models: Vec<String>,
    /// Why there are no dollars although a table was meant (a broken config).
    pub prices_error: Option<String>,
    pub forecasts: Vec<Forecast>,
    /// A ledger that could not be read (the figures are then empty).
    pub ledger_error: Option<String>,
}

/// The prices as the caller could load them: `Ok(None)` = no table.
pub(crate) type PriceTable<'a> = Result<Option<&'a Prices>, &'a str>;

/// The cost table of an execution.
pub(crate) fn report(
    state: &State,
    tasks: &TaskList,
    prices: PriceTable<'_>,
    now: DateTime<Utc>,
) -> CostReport {
    let (ledger, ledger_error) = match state.ledger() {
        Ok(l) => (l, None),
        Err(e) => (Ledger::default(), Some(e)),
    };
    let table = prices.ok().flatten();
    let mut rows = Vec::new();
    for task in &tasks.tasks {
        let id = task.label();
        let account = ledger.tasks.get(&id).cloned().unwrap_or_default();
        let attempts = state.attempts_of(&id);
        if attempts.is_empty() && account.by_model.is_empty() {
            continue;
        }
        let tokens = account.tokens();
        rows.push(TaskCost {
            id: id.clone(),
            title: task.title.clone(),
            checked: task.checked,
            attempts: attempts.len(),
            tokens,
            total_tokens: tokens.total(),
            attempt_tokens: account.attempt_tokens,
            minutes: ledger::task_ms(state, &id, now) as f64 / 60_000.0,
            usd: table.map(|p| p.usd(&account.by_model).priced),
        });
    }
    let total = ledger.total();
    let usd = table.map(|p| p.usd(&ledger.by_model()));
    CostReport {
        tasks: rows,
        overhead: ledger.run.tokens(),
        total,
        total_tokens: total.total(),
        usd: usd.as_ref().map(|u| u.priced),
        unpriced_models: usd.map(|u| u.unpriced_models).unwrap_or_default(),
        prices_error: prices.err().map(str::to_string),
        forecasts: forecasts(state, tasks, &ledger, table, now),
        ledger_error,
    }
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Tasks checked in tasks.md whose latest attempt is `done` and that this execution's
/// ledger charged (boxes ticked before it, or done before a `state init` emptied the
/// ledger, are no sample).
fn completed_ids(state: &State, tasks: &TaskList, ledger: &Ledger) -> Vec<String> {
    tasks
        .tasks
        .iter()
        .filter(|t| t.checked)
        .map(|t| t.label())
        .filter(|id| {
            let last = state.attempts_of(id).last();
            last.and_then(|a| a.status.as_deref()) == Some("done")
        })
        .filter(|id| ledger.tasks.contains_key(id))
        .collect()
}

/// Forecasts for every budget that is set, once enough tasks are complete.
pub(crate) fn forecasts(
    state: &State,
    tasks: &TaskList,
    ledger: &Ledger,
    prices: Option<&Prices>,
    now: DateTime<Utc>,
) -> Vec<Forecast> {
    let v = state;
    let done = completed_ids(state, tasks, ledger);
    if done.len() < FORECAST_MIN_COMPLETED {
        return Vec::new();
    }
    let left = tasks.tasks.iter().filter(|t| !t.checked).count();
    let account = |id: &String| ledger.tasks.get(id).cloned().unwrap_or_default();
    let mut out = Vec::new();
    let mut push = |measure: Measure, budget: Option<f64>, spent: f64, per_task: Vec<f64>| {
        if let Some(budget) = budget {
            out.push(project(state, measure, budget, spent, per_task, left));
        }
    };
    push(
        Measure::OutputTokens,
        v.max_output_tokens().map(|b| b as f64),
        v.output_tokens() as f64,
        done.iter()
            .map(|id| account(id).tokens().output as f64)
            .collect(),
    );
    push(
        Measure::Minutes,
        v.max_minutes().map(|b| b as f64),
        elapsed_minutes(v, now),
        done.iter()
            .map(|id| ledger::task_ms(state, id, now) as f64 / 60_000.0)
            .collect(),
    );
    if let Some(p) = prices {
        push(
            Measure::Usd,
            state.max_usd(),
            p.usd(&ledger.by_model()).priced,
            done.iter()
                .map(|id| p.usd(&account(id).by_model).priced)
                .collect(),
        );
    }
    out
}

fn project(
    state: &State,
    measure: Measure,
    budget: f64,
    spent: f64,
    mut per_task: Vec<f64>,
    left: usize,
) -> Forecast {
    per_task.sort_by(f64::total_cmp);
    let m = median(&per_task);
    let n = left as f64;
    let (projected, low, high) = (
        spent + m * n,
        spent + per_task[0] * n,
        spent + per_task[per_task.len() - 1] * n,
    );
    let (warn, halt) = forecast_levels(state);
    let level = if projected > budget * (1.0 + halt as f64 / 100.0) {
        Level::Halt
    } else if projected >= budget * warn as f64 / 100.0 {
        Level::Warn
    } else {
        Level::Ok
    };
    Forecast {
        measure,
        budget,
        spent,
        completed: per_task.len(),
        left,
        median: m,
        projected,
        low,
        high,
        level,
        raise_to: (high.max(projected).ceil() as u64).max((spent.ceil() as u64).saturating_add(1)),
    }
}

fn elapsed_minutes(state: &State, now: DateTime<Utc>) -> f64 {
    state
        .started_at()
        .and_then(crate::model::state::Timestamp::at)
        .map(|s| crate::model::state::time::ms_between(s, now) as f64 / 60_000.0)
        .unwrap_or(0.0)
}

/// `budget.forecastWarn` and `budget.forecastHalt`, in percent.
pub(crate) fn forecast_levels(state: &State) -> (u64, u64) {
    let budget = state.budget.as_ref();
    let get = |cap: fn(&Budget) -> &Nullable<u64>, d: u64| {
        budget.and_then(|b| cap(b).get().copied()).unwrap_or(d)
    };
    (
        get(|b| &b.forecast_warn, DEFAULT_FORECAST_WARN),
        get(|b| &b.forecast_halt, DEFAULT_FORECAST_HALT),
    )
}

/// A task past a per-task cap: it is failed through the normal failure path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CapHit {
    pub task: String,
    /// `task-token-cap` or `task-time-cap`.
    pub kind: &'static str,
    pub reason: String,
}

/// Running attempts past `budget.maxTaskTokens` or `budget.maxTaskMinutes`.
pub(crate) fn task_cap_hits(state: &State, ledger: &Ledger, now: DateTime<Utc>) -> Vec<CapHit> {
    let (max_tokens, max_minutes) = (state.max_task_tokens(), state.max_task_minutes());
    if max_tokens.is_none() && max_minutes.is_none() {
        return Vec::new();
    }
    let mut hits = Vec::new();
    for id in state.running_attempts() {
        let Some((n, minutes)) = ledger::running_attempt_minutes(state, &id, now) else {
            continue;
        };
        let spent = ledger
            .tasks
            .get(&id)
            .filter(|a| a.attempt == n)
            .map_or(0, |a| a.attempt_tokens);
        if let Some(max) = max_tokens.filter(|m| spent >= *m) {
            hits.push(CapHit {
                reason: format!(
                    "{}: attempt {n} of task {id} spent {spent} tokens >= budget.maxTaskTokens {max}",
                    crate::model::state::FAIL_TASK_TOKENS
                ),
                task: id,
                kind: crate::model::state::FAIL_TASK_TOKENS,
            });
        } else if let Some(max) = max_minutes.filter(|m| minutes >= *m) {
            hits.push(CapHit {
                reason: format!(
                    "{}: attempt {n} of task {id} ran {minutes} minutes >= budget.maxTaskMinutes {max}",
                    crate::model::state::FAIL_TASK_TIME
                ),
                task: id,
                kind: crate::model::state::FAIL_TASK_TIME,
            });
        }
    }
    hits
}

/// What the spend rules say at a Stop.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Spend {
    Ok,
    Warn(String),
    /// (halt kind, reason, the halt record's extra fields).
    Halt(&'static str, String, Value),
}

/// The dollar cap, then the forecast (halt before warn; the first halting budget wins).
pub(crate) fn spend_rule(
    state: &State,
    ledger: &Ledger,
    tasks: &TaskList,
    prices: PriceTable<'_>,
    now: DateTime<Utc>,
) -> Spend {
    let mut warnings = Vec::new();
    let table = match (prices, state.max_usd()) {
        (Ok(t), _) => t,
        (Err(e), Some(max)) => {
            warnings.push(format!(
                "budget.maxUsd {max} is not enforced: the price table is unusable ({e}); tokens are still counted and capped"
            ));
            None
        }
        (Err(_), None) => None,
    };
    if let (Some(p), Some(max)) = (table, state.max_usd()) {
        let spent = p.usd(&ledger.by_model());
        if spent.priced >= max {
            let reason = format!(
                "priced spend ${:.2} >= budget.maxUsd ${max:.2}",
                spent.priced
            );
            return Spend::Halt(
                crate::model::state::HALT_USD,
                reason,
                serde_json::json!({"spentUsd": spent.priced}),
            );
        }
        if !spent.unpriced_models.is_empty() {
            warnings.push(format!(
                "no price for model(s) {}: their tokens are not in the dollar figures",
                spent.unpriced_models.join(", ")
            ));
        }
    }
    for f in forecasts(state, tasks, ledger, table, now) {
        match f.level {
            Level::Halt => {
                let (_, halt) = forecast_levels(state);
                let reason = format!(
                    "forecast passes the budget by more than {halt} %: {}",
                    f.describe()
                );
                let extra = serde_json::json!({
                    "raiseFlag": f.measure.raise_flag(), "raiseTo": f.raise_to,
                    "projected": f.projected, "budget": f.budget, "spent": f.spent,
                });
                return Spend::Halt(crate::model::state::HALT_FORECAST, reason, extra);
            }
            Level::Warn => {
                let (warn, _) = forecast_levels(state);
                warnings.push(format!(
                    "forecast at or past {warn} % of the budget: {}",
                    f.describe()
                ));
            }
            Level::Ok => {}
        }
    }
    if warnings.is_empty() {
        Spend::Ok
    } else {
        Spend::Warn(format!("specrun: {}.", warnings.join("; ")))
    }
}

/// The execution's cost table, priced with the project's price table when it has one.
pub(crate) fn priced_report(project: &Project, state: &State, tasks: &TaskList) -> CostReport {
    let loaded = settings::prices_in_force(&project.root, state);
    let table = match &loaded {
        Ok(p) => Ok(p.as_ref()),
        Err(e) => Err(e.as_str()),
    };
    report(state, tasks, table, Utc::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tasks;
    use serde_json::json;

    fn st(doc: &Value) -> State {
        State::from_value(doc).unwrap()
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T01:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn account(output: u64) -> Value {
        json!({"byModel": {"m": {"input": 100, "output": output}}})
    }

    fn state(max_out: u64) -> Value {
        json!({
            "startedAt": "2026-01-01T00:00:00Z",
            "budget": {"maxOutputTokens": max_out},
            "usage": {"outputTokens": 3500},
            "attempts": {
                "1": [{"n": 1, "status": "done", "startedAt": "2026-01-01T00:00:00Z", "endedAt": "2026-01-01T00:10:00Z"}],
                "2": [{"n": 1, "status": "done", "startedAt": "2026-01-01T00:10:00Z", "endedAt": "2026-01-01T00:40:00Z"}],
                "3": [{"n": 1, "status": "done", "startedAt": "2026-01-01T00:40:00Z", "endedAt": "2026-01-01T00:50:00Z"}]
            },
            "ledger": {"tasks": {"1": account(1000), "2": account(500), "3": account(1500)},
                       "run": account(500)}
        })
    }

    const TASKS: &str = "- [x] 1 a\n- [x] 2 b\n- [x] 3 c\n- [ ] 4 d\n- [ ] 5 e\n";

    #[test]
    fn forecast_projects_median_times_tasks_left_with_the_spread() {
        let list = tasks::parse(TASKS);
        let r = report(&st(&state(100_000)), &list, Ok(None), now());
        assert_eq!(r.tasks.len(), 3);
        assert_eq!(r.total.output, 3500);
        assert_eq!(r.overhead.output, 500);
        let f = &r.forecasts[0];
        assert_eq!(f.measure, Measure::OutputTokens);
        assert_eq!(
            (f.spent, f.median, f.left, f.completed),
            (3500.0, 1000.0, 2, 3)
        );
        assert_eq!((f.projected, f.low, f.high), (5500.0, 4500.0, 6500.0));
        assert_eq!(f.level, Level::Ok);
        assert_eq!(f.raise_to, 6500);
        assert!(f.describe().contains("projected 5500 (4500–6500) = 3500 spent + median 1000 × 2 task(s) left (from 3 completed), budget 100000"), "{}", f.describe());
    }

    #[test]
    fn forecast_warns_then_halts_past_the_margin() {
        let list = tasks::parse(TASKS);
        let level =
            |budget: u64| report(&st(&state(budget)), &list, Ok(None), now()).forecasts[0].level;
        assert_eq!(level(6876), Level::Ok); // 5500 < 80 % of 6876
        assert_eq!(level(6875), Level::Warn); // 5500 = 80 % of 6875
        assert_eq!(level(6000), Level::Warn);
        assert_eq!(level(3667), Level::Warn); // 5500 <= 1.5 × 3667 = 5500.5
        assert_eq!(level(3666), Level::Halt); // 5500 > 5499
        let mut s = state(3666);
        s["budget"]["forecastHalt"] = json!(100);
        assert_eq!(
            report(&st(&s), &list, Ok(None), now()).forecasts[0].level,
            Level::Warn
        );
    }

    #[test]
    fn no_forecast_before_two_completed_tasks_and_minutes_and_dollars_are_projected() {
        let list = tasks::parse("- [x] 1 a\n- [ ] 2 b\n- [ ] 4 d\n");
        assert!(report(&st(&state(10)), &list, Ok(None), now())
            .forecasts
            .is_empty());
        // Tasks done before the ledger was started (a re-init) are no sample.
        let mut s = state(10);
        s["ledger"]["tasks"] = json!({"1": account(1000)});
        assert!(report(&st(&s), &tasks::parse(TASKS), Ok(None), now())
            .forecasts
            .is_empty());
        let list = tasks::parse(TASKS);
        let mut s = state(100_000);
        s["budget"]["maxMinutes"] = json!(100);
        s["budget"]["maxUsd"] = json!(1.0);
        let prices =
            crate::cost::prices::parse(r#"{"prices": {"m": {"input": 0, "output": 100}}}"#)
                .unwrap()
                .unwrap();
        let r = report(&st(&s), &list, Ok(Some(&prices)), now());
        let minutes = &r.forecasts[1];
        assert_eq!(
            (minutes.spent, minutes.median, minutes.projected),
            (60.0, 10.0, 80.0)
        );
        let usd = &r.forecasts[2];
        assert!(
            (usd.spent - 0.35).abs() < 1e-9 && (usd.projected - 0.55).abs() < 1e-9,
            "{usd:?}"
        );
        assert!((r.usd.unwrap() - 0.35).abs() < 1e-9);
    }

    #[test]
    fn task_caps_fail_only_running_attempts_past_a_cap() {
        let mut s = json!({
            "budget": {"maxTaskTokens": 100, "maxTaskMinutes": 30},
            "attempts": {
                "1": [{"n": 2, "status": "running", "startedAt": "2026-01-01T00:50:00Z"}],
                "2": [{"n": 1, "status": "running", "startedAt": "2026-01-01T00:20:00Z"}],
                "3": [{"n": 1, "status": "done", "startedAt": "2026-01-01T00:00:00Z"}]
            }
        });
        let mut ledger = Ledger::default();
        ledger.charge(
            Some("1"),
            None,
            &Tokens {
                input: 60,
                output: 40,
                ..Default::default()
            },
            2,
        );
        ledger.charge(
            Some("3"),
            None,
            &Tokens {
                output: 900,
                ..Default::default()
            },
            1,
        );
        let hits = task_cap_hits(&st(&s), &ledger, now());
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert_eq!(
            (hits[0].task.as_str(), hits[0].kind),
            ("1", "task-token-cap")
        );
        assert!(
            hits[0]
                .reason
                .contains("attempt 2 of task 1 spent 100 tokens >= budget.maxTaskTokens 100"),
            "{}",
            hits[0].reason
        );
        assert_eq!(
            (hits[1].task.as_str(), hits[1].kind),
            ("2", "task-time-cap")
        );
        assert!(hits[1]
            .reason
            .contains("ran 40 minutes >= budget.maxTaskMinutes 30"));
        // Tokens of an earlier attempt do not count against the new one.
        s["attempts"]["1"][0]["n"] = json!(3);
        s["budget"]["maxTaskMinutes"] = Value::Null;
        assert!(task_cap_hits(&st(&s), &ledger, now()).is_empty());
    }

    #[test]
    fn spend_rule_halts_on_the_forecast_with_the_raise_and_warns_on_broken_prices() {
        let list = tasks::parse(TASKS);
        let s = state(3000);
        let ledger = st(&s).ledger().unwrap();
        let Spend::Halt(kind, reason, extra) = spend_rule(&st(&s), &ledger, &list, Ok(None), now())
        else {
            panic!("no halt")
        };
        assert_eq!(kind, "forecast-cap");
        assert!(
            reason.contains("projected 5500 (4500–6500) = 3500 spent"),
            "{reason}"
        );
        assert!(reason.contains("budget 3000"), "{reason}");
        assert_eq!(extra["raiseFlag"], "--raise-tokens");
        assert_eq!(extra["raiseTo"], 6500);
        let mut s = state(100_000);
        s["budget"]["maxUsd"] = json!(5);
        let Spend::Warn(w) = spend_rule(
            &st(&s),
            &ledger,
            &list,
            Err("`prices.m.input` is missing"),
            now(),
        ) else {
            panic!("no warning")
        };
        assert!(
            w.contains("budget.maxUsd 5 is not enforced") && w.contains("prices.m.input"),
            "{w}"
        );
        let prices =
            crate::cost::prices::parse(r#"{"prices": {"m": {"input": 1000, "output": 1000}}}"#)
                .unwrap()
                .unwrap();
        s["budget"]["maxUsd"] = json!(3);
        let Spend::Halt(kind, reason, _) =
            spend_rule(&st(&s), &ledger, &list, Ok(Some(&prices)), now())
        else {
            panic!("no usd halt")
        };
        assert_eq!(kind, "usd-cap");
        assert_eq!(reason, "priced spend $3.90 >= budget.maxUsd $3.00");
    }
}
