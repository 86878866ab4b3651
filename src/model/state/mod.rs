//! The execution state document (docs/design.md#state): `State` (typed.rs) is its one
//! schema, the typed records, whose types the check derives from (check.rs); `Patch`
//! (patch.rs) the typed writing, `Timestamp` (time.rs) its times. The JSON functions here
//! are `state get`/`state merge`'s, which work on any JSON file by path, and `state init`'s
//! seeding. Unknown fields are carried through untouched.

mod caps;
mod check;
pub mod group;
pub mod ledger;
#[cfg(test)]
mod legacy_check;
mod patch;
pub mod time;
mod typed;

pub use crate::support::json::merge_into;
use crate::support::json::Split;
pub use caps::{TimeOrigin, CLOCK_SKEW_MINUTES, DEFAULT_FORECAST_HALT, DEFAULT_FORECAST_WARN};
pub use patch::Patch;
pub use time::Timestamp;
#[cfg(test)]
pub(crate) use typed::record_for_test;
pub use typed::{
    typecheck, AcceptedOther, Attempt, Budget, Driver, EvidenceRecord, FixEntry, GuardRecord, Halt,
    Isolation, Loose, MergedFrom, Nullable, Phase, State, TestsSummary, Usage,
};

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use time::parse as parse_time;

use crate::error::{Error, Result};

pub const STATE_VERSION: u64 = 1;
pub const DEFAULT_MAX_TASK_ITERATIONS: u64 = 5;
pub const DEFAULT_MAX_GLOBAL_ITERATIONS: u64 = 30;
pub const DEFAULT_MAX_STALL_STOPS: u64 = 5;
pub const PHASES: &[&str] = &["planning", "execution", "completed", "cancelled"];
pub const DRIVERS: &[&str] = &["native-goal", "stop-hook", "manual"];

/// Every field the typed records know (whose types the check derives from), as dot paths
/// with `*` for each task id or list index (`attempts.*.*.endCommit`): what the
/// whole-process battery mutates (tests/battery.rs), so a field added to a record is
/// mutated too.
pub fn known_fields() -> Vec<String> {
    let mut out = Vec::new();
    <State as check::Check>::paths("", &mut out);
    out
}

/// Look up a dot path (`budget.maxMinutes`). Keys may themselves hold dots (task ids such
/// as `1.2` under `taskEvidence`): each segment is matched first alone, then joined with the
/// following ones, so `taskEvidence.1.2.exitCode` finds `{"taskEvidence":{"1.2":{…}}}`.
pub fn get_path<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return Some(doc);
    }
    lookup(doc, path)
}

/// `get_path` on the slices of `path` itself: no allocation (`check_times` runs it on
/// every patch).
fn lookup<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    match doc {
        Value::Object(map) => {
            // Each prefix that ends at a dot, or the whole path, may be a key.
            let ends = path.match_indices('.').map(|(i, _)| i);
            ends.chain(std::iter::once(path.len()))
                .find_map(|end| map.get(&path[..end]).and_then(|v| below(v, path, end)))
        }
        Value::Array(items) => {
            let end = path.find('.').unwrap_or(path.len());
            let item = path[..end].parse::<usize>().ok().and_then(|i| items.get(i));
            item.and_then(|v| below(v, path, end))
        }
        _ => None,
    }
}

/// What the rest of `path` after the key ending at `end` names inside `v`.
fn below<'a>(v: &'a Value, path: &str, end: usize) -> Option<&'a Value> {
    match path.get(end + 1..) {
        None => Some(v),
        Some(rest) => lookup(v, rest),
    }
}

/// The one state field the model may set with `state merge` inside Claude Code (the
/// implement skill's driver choice). Everything else is the binary's record of what was
/// earned — phase, halts, attempts, evidence, claims, counters, budgets — and a model that
/// patches it could forge a completion or lift a cap.
pub const MODEL_MERGEABLE: [&str; 1] = ["executionDriver"];

/// The top-level fields of `patch` the model may not set (see `MODEL_MERGEABLE`).
pub fn guarded_fields(patch: &Value) -> Vec<String> {
    patch
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .filter(|k| !MODEL_MERGEABLE.contains(&k.as_str()))
        .cloned()
        .collect()
}

/// Delete a dot path; missing paths are ignored. Dotted keys resolve as in `get_path`.
pub fn unset_path(doc: &mut Value, path: &str) {
    let segments: Vec<&str> = path.split('.').collect();
    remove(doc, &segments);
}

fn remove(doc: &mut Value, segments: &[&str]) -> bool {
    let Value::Object(map) = doc else {
        return false;
    };
    for n in 1..=segments.len() {
        let key = segments[..n].join(".");
        if n == segments.len() {
            if map.shift_remove(&key).is_some() {
                return true;
            }
        } else if let Some(child) = map.get_mut(&key) {
            if remove(child, &segments[n..]) {
                return true;
            }
        }
    }
    false
}

/// Apply a patch (`{..., "$unset": ["a.b"]}`) to a state document, type-checking the
/// result. `base` is `None` for a file that does not exist yet.
pub fn apply_patch(base: Option<Value>, patch: &Value, file_name: &str) -> Result<Value> {
    let Value::Object(patch_map) = patch else {
        return Err(Error::bad_input("patch", "the patch must be a JSON object"));
    };
    let mut patch_map = patch_map.clone();
    let unset = match patch_map.shift_remove("$unset") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::bad_input("patch", "`$unset` must be an array of strings"))?,
        Some(_) => {
            return Err(Error::bad_input(
                "patch",
                "`$unset` must be an array of strings",
            ));
        }
    };
    let patch = Value::Object(patch_map);
    typecheck(&patch, "patch")?;
    check_times(&patch, Utc::now())?;
    let mut doc = base.unwrap_or_else(|| Value::Object(Map::new()));
    if !doc.is_object() {
        return Err(Error::FieldType {
            source_name: file_name.to_string(),
            field: "(top level)".into(),
            expected: "an object",
        });
    }
    merge_into(&mut doc, &patch);
    for path in &unset {
        unset_path(&mut doc, path);
    }
    typecheck(&doc, file_name)?;
    Ok(doc)
}

/// What `state init` was asked for.
#[derive(Debug, Clone, Default)]
pub struct InitParams {
    pub name: String,
    pub max_task_iterations: Option<u64>,
    pub max_global_iterations: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub max_minutes: Option<u64>,
    pub max_stall_stops: Option<u64>,
    pub max_task_tokens: Option<u64>,
    pub max_task_minutes: Option<u64>,
    pub max_usd: Option<f64>,
    pub forecast_warn: Option<u64>,
    pub forecast_halt: Option<u64>,
    pub session_id: Option<String>,
    pub quick: bool,
    pub recovery_mode: bool,
    pub driver: Option<&'static str>,
    /// `isolation.sequential`: whether sequential tasks may run in worktrees too.
    pub isolate: bool,
    /// HEAD at init (`baseCommit`), `None` outside git or before the first commit.
    pub base_commit: Option<String>,
    /// `redGreen: false`: criteria are not shown red at each attempt's start commit (a
    /// person's `--no-red-green`; on by default).
    pub no_red_green: bool,
}

/// Write the execution fields onto `existing`, keeping every other field.
pub fn init_execution(
    existing: Option<Value>,
    params: &InitParams,
    task_index: usize,
    total_tasks: usize,
    now: &str,
) -> Value {
    let mut doc = match existing {
        Some(Value::Object(map)) => Value::Object(map),
        _ => Value::Object(Map::new()),
    };
    let old_budget = doc.get("budget").cloned();
    let old_usage = doc.get("usage").cloned();
    let fields = json!({
        "version": STATE_VERSION,
        "name": params.name,
        "phase": "execution",
        "sessionId": params.session_id,
        "taskIndex": task_index,
        "totalTasks": total_tasks,
        "taskIteration": 0,
        "maxTaskIterations": params.max_task_iterations.unwrap_or(DEFAULT_MAX_TASK_ITERATIONS),
        "globalIteration": 0,
        "maxGlobalIterations": params.max_global_iterations.unwrap_or(DEFAULT_MAX_GLOBAL_ITERATIONS),
        "startedAt": now,
        "executionDriver": params.driver.unwrap_or("manual"),
        "quickMode": params.quick,
        "recoveryMode": params.recovery_mode,
        "awaitingApproval": false,
        "halt": null,
        "completed": false,
        "completedAt": null,
        "guard": {},
        // Criteria gates apply to executions started by this version (DESIGN-NOTES "When
        // criteria are enforced").
        "acceptanceGate": true,
        "redGreen": !params.no_red_green,
        "baseCommit": params.base_commit,
    });
    merge_into(&mut doc, &fields);
    // budget and usage are replaced as wholes so no stale cap or offset survives a re-init;
    // other keys the user put in them are kept.
    let mut budget = old_budget
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    merge_into(
        &mut budget,
        &json!({
            "maxOutputTokens": params.max_output_tokens,
            "maxMinutes": params.max_minutes,
            "maxStallStops": params.max_stall_stops.unwrap_or(DEFAULT_MAX_STALL_STOPS),
            "maxTaskTokens": params.max_task_tokens,
            "maxTaskMinutes": params.max_task_minutes,
            "maxUsd": params.max_usd,
            "forecastWarn": params.forecast_warn.unwrap_or(DEFAULT_FORECAST_WARN),
            "forecastHalt": params.forecast_halt.unwrap_or(DEFAULT_FORECAST_HALT),
        }),
    );
    doc["budget"] = budget;
    // The ledger is this execution's, like the usage counters.
    doc["ledger"] = json!({});
    let mut usage = old_usage
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    merge_into(&mut usage, &json!({"outputTokens": 0, "inputTokens": 0}));
    unset_path(&mut usage, "transcriptOffset");
    unset_path(&mut usage, "transcriptPath");
    unset_path(&mut usage, "agents");
    doc["usage"] = usage;
    // The guard's bookkeeping (stall count, fingerprints, blocks) belongs to one execution;
    // merging `{}` would keep it all, so a re-init could halt on the old stall count.
    doc["guard"] = json!({});
    set_isolate(&mut doc, params.isolate);
    doc
}

/// `isolation.sequential` from `--isolate`; the rest of the isolation record (members of a
/// group under way) is kept.
fn set_isolate(doc: &mut Value, isolate: bool) {
    let mut iso = doc
        .get("isolation")
        .filter(|v| v.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    iso["sequential"] = Value::Bool(isolate);
    doc["isolation"] = iso;
}

/// Whether `state init` continues `doc` rather than starting over: an execution that is
/// running, halted or cancelled. Re-initialising it would reset the counters and put back
/// caps that `specrun resume` raised.
pub fn is_resumable(state: &State) -> bool {
    // A cancel is recorded as a halt, which `resume` lifts; a cancelled phase without
    // one (edited by hand) has nothing to resume and starts over.
    let resumable = match state.phase() {
        Some(Phase::Execution) => true,
        Some(Phase::Cancelled) => state.halt().is_some(),
        _ => false,
    };
    resumable && !state.completed()
}

/// `state init` on a resumable execution: bind the session and apply the flags that were
/// given; counters, usage, the cost ledger, attempts, evidence and any halt are kept (a halt is lifted by
/// `specrun resume` only). The stall count restarts, as on resume.
pub fn continue_execution(
    mut doc: Value,
    params: &InitParams,
    task_index: usize,
    total_tasks: usize,
) -> Value {
    let mut patch = json!({
        "taskIndex": task_index,
        "totalTasks": total_tasks,
        "guard": {"stallStops": 0},
    });
    let fields = [
        ("sessionId", params.session_id.clone().map(Value::from)),
        ("executionDriver", params.driver.map(Value::from)),
        ("quickMode", params.quick.then_some(Value::Bool(true))),
        (
            "recoveryMode",
            params.recovery_mode.then_some(Value::Bool(true)),
        ),
        // A continued execution keeps its own; a person's --no-red-green turns it off.
        (
            "redGreen",
            params.no_red_green.then_some(Value::Bool(false)),
        ),
        (
            "maxTaskIterations",
            params.max_task_iterations.map(Value::from),
        ),
        (
            "maxGlobalIterations",
            params.max_global_iterations.map(Value::from),
        ),
    ];
    for (key, value) in fields {
        if let Some(v) = value {
            patch[key] = v;
        }
    }
    let budget = [
        ("maxOutputTokens", params.max_output_tokens),
        ("maxMinutes", params.max_minutes),
        ("maxStallStops", params.max_stall_stops),
        ("maxTaskTokens", params.max_task_tokens),
        ("maxTaskMinutes", params.max_task_minutes),
        ("forecastWarn", params.forecast_warn),
        ("forecastHalt", params.forecast_halt),
    ];
    for (key, value) in budget {
        if let Some(v) = value {
            patch["budget"][key] = Value::from(v);
        }
    }
    if let Some(v) = params.max_usd {
        patch["budget"]["maxUsd"] = Value::from(v);
    }
    merge_into(&mut doc, &patch);
    set_isolate(&mut doc, params.isolate);
    doc
}

/// Halt kinds the guard and the task verbs record, and the `resume` flag that lifts each cap.
pub const HALT_GLOBAL: &str = "global-cap";
pub const HALT_TASK: &str = "task-cap";
pub const HALT_TOKENS: &str = "token-cap";
pub const HALT_MINUTES: &str = "time-cap";
pub const HALT_STALL: &str = "stall";
/// The projected total passes a budget by more than `forecastHalt` %.
pub const HALT_FORECAST: &str = "forecast-cap";
/// The priced spend reached `budget.maxUsd`.
pub const HALT_USD: &str = "usd-cap";
/// Why the guard failed a task (not halts: the task takes the normal failure path).
pub const FAIL_TASK_TOKENS: &str = "task-token-cap";
pub const FAIL_TASK_TIME: &str = "task-time-cap";
pub const HALT_CANCELLED: &str = "cancelled";

/// Timestamp fields a patch may only set to a readable RFC 3339 time (or null).
const TIME_FIELDS: &[&str] = &[
    "startedAt",
    "completedAt",
    "halt.at",
    "guard.clockStartedAt",
];

/// Refuse a patch that writes an unreadable time into a known timestamp field, or a
/// `startedAt` in the future: either would leave the time cap without an origin.
pub fn check_times(patch: &Value, now: DateTime<Utc>) -> Result<()> {
    for field in TIME_FIELDS {
        let Some(value) = get_path(patch, field).filter(|v| !v.is_null()) else {
            continue;
        };
        let parsed = value.as_str().and_then(parse_time);
        let problem = match parsed {
            None => "an RFC 3339 time such as 2026-01-01T00:00:00Z (or null)",
            Some(t) if *field == "startedAt" && !time::not_after(t, now, CLOCK_SKEW_MINUTES) => {
                "a time that is not in the future"
            }
            Some(_) => continue,
        };
        return Err(Error::FieldType {
            source_name: "patch".into(),
            field: (*field).to_string(),
            expected: problem,
        });
    }
    Ok(())
}

/// How the one reader takes a mistyped known field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// An error naming the field: what the verbs and the hooks act on.
    Checked,
    /// The field reads as absent, the rest as it is: for read-only views that must show
    /// what is readable (the status line, the acceptance matrix, doctor, evidence lookups).
    /// A document that is not an object reads as no state.
    Lenient,
}

/// The one reader of a state file: `None` when it does not exist. The bytes are parsed
/// once and moved into the typed state (a UTF-8 BOM is accepted).
pub fn read(path: &std::path::Path, reading: Reading) -> Result<Option<State>> {
    let Some(bytes) = crate::io::store::read_optional(path)? else {
        return Ok(None);
    };
    let split = document_text(&bytes).and_then(|t| Split::parse(t, |k| TEXT_FIELDS.contains(&k)));
    let Some(split) = split else {
        // Not UTF-8, not JSON or not an object: the whole parse names the fault.
        let doc = crate::io::store::parse_json(path, &bytes)?;
        return match reading {
            Reading::Checked => State::from_json(doc, &path.display().to_string()).map(Some),
            Reading::Lenient => Ok(doc.is_object().then(|| State::lenient_owned(doc))),
        };
    };
    let doc = Value::Object(split.doc);
    let mut state = match reading {
        Reading::Checked => State::from_json(doc, &path.display().to_string())?,
        Reading::Lenient => State::lenient_owned(doc),
    };
    for (_, text) in &split.kept {
        state.plan = typed::plan_from_text(text.get()).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })?;
    }
    Ok(Some(state))
}

/// The top-level fields read from their text rather than a JSON tree, since nothing
/// type-checks them (`Loose`) and they are the bulk of the file: the frozen plan (a
/// 1,000-task plan is most of a 200 KB state; "Performance" in DESIGN-NOTES).
const TEXT_FIELDS: [&str; 1] = ["plan"];

/// The state file's text without a UTF-8 BOM, when it is UTF-8.
fn document_text(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes).ok()?;
    Some(text.strip_prefix('\u{feff}').unwrap_or(text))
}

/// Whether `patch` sets or unsets anything of top-level field `key`.
fn touches(patch: &Value, key: &str) -> bool {
    let unset = patch.get("$unset").and_then(Value::as_array);
    let unsets = unset.into_iter().flatten().filter_map(Value::as_str);
    patch.get(key).is_some()
        || unsets
            .into_iter()
            .any(|p| p == key || p.starts_with(&format!("{key}.")))
}

/// `state merge`: `apply_patch` under the file's lock, written atomically; nothing is
/// written on any error. The fields in `TEXT_FIELDS` the patch does not touch are neither
/// parsed nor re-serialised: their text is written back as it was. Returns the merged
/// document (without those fields).
pub fn merge_file(path: &std::path::Path, patch: &Value) -> Result<Value> {
    use crate::io::store;
    let name = path.display().to_string();
    let _lock = store::lock(path, store::DEFAULT_LOCK_WAIT)?;
    let Some(bytes) = store::read_optional(path)? else {
        let next = apply_patch(None, patch, &name)?;
        store::write_atomic(path, &store::to_pretty_bytes(&next))?;
        return Ok(next);
    };
    let keep = |k: &str| TEXT_FIELDS.contains(&k) && !touches(patch, k);
    let Some(split) = document_text(&bytes).and_then(|t| Split::parse(t, keep)) else {
        let next = apply_patch(Some(store::parse_json(path, &bytes)?), patch, &name)?;
        store::write_atomic(path, &store::to_pretty_bytes(&next))?;
        return Ok(next);
    };
    let next = apply_patch(Some(Value::Object(split.doc.clone())), patch, &name)?;
    let Value::Object(map) = &next else {
        unreachable!("apply_patch of an object is an object")
    };
    store::write_atomic(path, &store::to_pretty_bytes(&split.joined(map)))?;
    Ok(next)
}

/// The state file's parsed document, not yet read as a `State`: for `read`, and for
/// `state init`, which must see a broken file to set it aside.
pub fn read_document(path: &std::path::Path) -> Result<Option<Value>> {
    crate::io::store::read_json(path)
}

/// `read` leniently.
pub fn read_lenient(path: &std::path::Path) -> Result<Option<State>> {
    read(path, Reading::Lenient)
}

/// Under the state file's lock: read it (checked), let `change` produce the new state,
/// write it atomically. Nothing is written when `change` fails or returns `None`.
pub fn update<T>(
    path: &std::path::Path,
    wait: std::time::Duration,
    change: impl FnOnce(Option<State>) -> Result<(Option<State>, T)>,
) -> Result<T> {
    let _lock = crate::io::store::lock(path, wait)?;
    let (next, out) = change(read(path, Reading::Checked)?)?;
    if let Some(next) = next {
        crate::io::store::write_atomic(path, &crate::io::store::to_pretty_bytes(&next))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_recurses_objects_and_replaces_arrays_and_scalars() {
        let base = json!({"a": {"b": 1, "c": [1, 2]}, "keep": true});
        let out =
            apply_patch(Some(base), &json!({"a": {"c": [3], "d": 4}, "x": "y"}), "f").unwrap();
        assert_eq!(
            out,
            json!({"a": {"b": 1, "c": [3], "d": 4}, "keep": true, "x": "y"})
        );
    }

    #[test]
    fn unset_runs_after_merge() {
        let out = apply_patch(
            Some(json!({"a": {"b": 1, "c": 2}})),
            &json!({"a": {"b": 5}, "$unset": ["a.c", "missing.path"]}),
            "f",
        )
        .unwrap();
        assert_eq!(out, json!({"a": {"b": 5}}));
    }

    #[test]
    fn bad_patches_name_the_problem() {
        let err = apply_patch(None, &json!([1]), "f").unwrap_err().to_string();
        assert!(err.contains("must be a JSON object"), "{err}");
        let err = apply_patch(None, &json!({"$unset": "a"}), "f")
            .unwrap_err()
            .to_string();
        assert!(err.contains("$unset"), "{err}");
        let err = apply_patch(None, &json!({"$unset": [1]}), "f")
            .unwrap_err()
            .to_string();
        assert!(err.contains("$unset"), "{err}");
        let err = apply_patch(None, &json!({"taskIndex": "3"}), "f")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "patch: field `taskIndex` must be a non-negative integer"
        );
        let err = apply_patch(None, &json!({"budget": {"maxMinutes": -1}}), "f")
            .unwrap_err()
            .to_string();
        assert!(err.contains("budget.maxMinutes"), "{err}");
        let err = apply_patch(None, &json!({"phase": "done"}), "f")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`phase`"), "{err}");
    }

    #[test]
    fn lenient_drops_only_the_mistyped_fields() {
        let doc = json!({"phase": "execution", "quickMode": "yes", "taskIndex": -1,
                         "checkedAtInit": ["1.1"], "mine": 1});
        let s = State::lenient(&doc);
        assert_eq!(s.phase(), Some(Phase::Execution));
        assert!(!s.quick_mode());
        assert_eq!(s.task_index(), 0);
        assert_eq!(s.to_value()["checkedAtInit"], json!(["1.1"]));
        assert_eq!(s.to_value()["mine"], json!(1));
        assert_eq!(State::lenient(&json!([1])).to_value(), json!({}));
    }

    #[test]
    fn dot_paths_reach_keys_that_contain_dots() {
        let doc = json!({"taskEvidence": {"1.2": {"exitCode": 0}}, "a": {"b": [10, 20]}});
        assert_eq!(get_path(&doc, "taskEvidence.1.2.exitCode"), Some(&json!(0)));
        assert_eq!(get_path(&doc, "a.b.1"), Some(&json!(20)));
        assert_eq!(get_path(&doc, "a.c"), None);
        // A shorter key that leads nowhere does not hide a longer one that matches.
        let both = json!({"x": {"y": 1}, "x.z": {"w": 2}, "1.2": 3});
        assert_eq!(get_path(&both, "x.z.w"), Some(&json!(2)));
        assert_eq!(get_path(&both, "x.y"), Some(&json!(1)));
        assert_eq!(get_path(&both, "1.2"), Some(&json!(3)));
        assert_eq!(get_path(&both, "x."), None);
        let mut doc = doc;
        unset_path(&mut doc, "taskEvidence.1.2");
        unset_path(&mut doc, "a.b.0");
        assert_eq!(doc, json!({"taskEvidence": {}, "a": {"b": [10, 20]}}));
    }

    #[test]
    fn resume_command_raises_above_what_was_used() {
        let cmd = |doc: Value| State::from_value(&doc).unwrap().resume_command("demo");
        assert_eq!(
            cmd(
                json!({"halt": {"kind": HALT_GLOBAL}, "globalIteration": 31, "maxGlobalIterations": 30})
            ),
            "specrun resume --spec demo --raise-global 60"
        );
        assert_eq!(
            cmd(json!({"halt": {"kind": HALT_TASK}, "taskIteration": 12, "maxTaskIterations": 5})),
            "specrun resume --spec demo --raise-task 13"
        );
        assert_eq!(
            cmd(
                json!({"halt": {"kind": HALT_TOKENS}, "usage": {"outputTokens": 310}, "budget": {"maxOutputTokens": 100}})
            ),
            "specrun resume --spec demo --raise-tokens 410"
        );
        assert_eq!(
            cmd(
                json!({"halt": {"kind": HALT_MINUTES, "at": "2026-01-01T05:00:30Z"},
                       "startedAt": "2026-01-01T00:00:00Z", "budget": {"maxMinutes": 60}})
            ),
            "specrun resume --spec demo --raise-minutes 360"
        );
        assert_eq!(
            cmd(json!({"halt": {"kind": HALT_STALL}})),
            "specrun resume --spec demo"
        );
    }

    fn at(s: &str) -> DateTime<Utc> {
        parse_time(s).unwrap()
    }

    #[test]
    fn the_time_cap_origin_fails_closed() {
        let now = at("2026-01-01T02:00:00Z");
        let ok = json!({"startedAt": "2026-01-01T00:00:00Z"});
        assert_eq!(State::lenient(&ok).minutes_since(now).0, 120);
        assert_eq!(State::lenient(&ok).time_origin(now).problem, None);
        let fallback = json!({"guard": {"clockStartedAt": "2026-01-01T01:00:00Z"},
            "attempts": {"1": [{"startedAt": "2026-01-01T00:30:00Z"}, {"startedAt": "2099-01-01T00:00:00Z"}]}});
        for (bad, says) in [
            (json!(null), "startedAt is missing"),
            (
                json!("yesterday"),
                "startedAt \"yesterday\" is not an RFC 3339 time",
            ),
            (
                json!("2027-01-01T00:00:00Z"),
                "startedAt 2027-01-01T00:00:00Z lies in the future",
            ),
        ] {
            let mut doc = fallback.clone();
            doc["startedAt"] = bad;
            let (minutes, origin) = State::lenient(&doc).minutes_since(now);
            let typed = State::from_value(&doc).unwrap().minutes_since(now);
            assert_eq!(
                typed,
                (minutes, origin.clone()),
                "the lenient read reads it as the checked one does"
            );
            assert_eq!(minutes, 90, "the earliest sound recorded time counts");
            let problem = origin.problem.unwrap();
            assert!(problem.starts_with(says), "{problem}");
            assert!(
                problem.contains("the first attempt's startedAt (2026-01-01T00:30:00Z)"),
                "{problem}"
            );
        }
        // Nothing recorded at all: the cap counts from now, never not at all.
        let (minutes, origin) = State::lenient(&json!({"startedAt": 5})).minutes_since(now);
        assert_eq!((minutes, origin.source), (0, "this stop"));
        let typed = State::from_value(&json!({"startedAt": 5})).unwrap();
        assert_eq!(typed.minutes_since(now).1.source, "this stop");
        // A few minutes ahead is clock skew, not an error.
        let skew = json!({"startedAt": "2026-01-01T02:03:00Z"});
        assert_eq!(State::lenient(&skew).time_origin(now).problem, None);
    }

    #[test]
    fn patches_must_write_readable_times() {
        let now = at("2026-01-01T02:00:00Z");
        assert!(check_times(
            &json!({"startedAt": "2026-01-01T00:00:00Z", "completedAt": null}),
            now
        )
        .is_ok());
        for patch in [
            json!({"startedAt": "soon"}),
            json!({"startedAt": "2027-01-01T00:00:00Z"}),
            json!({"completedAt": 7}),
            json!({"halt": {"at": "x"}}),
            json!({"guard": {"clockStartedAt": ""}}),
        ] {
            let err = check_times(&patch, now).unwrap_err().to_string();
            assert!(err.starts_with("patch: field `"), "{err}");
        }
        let err = apply_patch(Some(json!({})), &json!({"startedAt": "garbage"}), "s")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`startedAt` must be an RFC 3339 time"),
            "{err}"
        );
        // A garbled value already in the file does not block other writes.
        assert!(apply_patch(
            Some(json!({"startedAt": "garbage"})),
            &json!({"taskIndex": 1}),
            "s"
        )
        .is_ok());
    }

    #[test]
    fn typecheck_rejects_non_objects() {
        assert!(typecheck(&json!([]), "s.json").is_err());
        assert!(typecheck(&json!({"halt": null, "budget": {"maxMinutes": null}}), "s").is_ok());
    }

    #[test]
    fn init_keeps_unknown_fields_and_resets_counters() {
        let existing = json!({
            "name": "old", "custom": {"x": 1}, "globalIteration": 12, "halt": {"kind": "k", "reason": "r"},
            "guard": {"stallStops": 4, "lastFingerprint": "f"},
            "usage": {"outputTokens": 99, "transcriptOffset": 500, "note": "mine"},
            "attempts": {"1": []}
        });
        let params = InitParams {
            name: "demo".into(),
            max_global_iterations: Some(40),
            session_id: Some("s1".into()),
            quick: true,
            driver: Some("stop-hook"),
            ..Default::default()
        };
        let doc = init_execution(Some(existing), &params, 2, 7, "2026-01-01T00:00:00Z");
        let v = State::from_value(&doc).unwrap();
        assert_eq!(doc["custom"], json!({"x": 1}));
        assert_eq!(doc["attempts"], json!({"1": []}));
        assert_eq!(v.name(), Some("demo"));
        assert_eq!(v.phase(), Some(Phase::Execution));
        assert_eq!(
            (v.task_index(), v.total_tasks(), v.global_iteration()),
            (2, 7, 0)
        );
        assert_eq!(
            (v.max_global_iterations(), v.max_task_iterations()),
            (40, 5)
        );
        assert_eq!(v.session_id(), Some("s1"));
        assert!(v.halt().is_none() && v.quick_mode() && !v.recovery_mode());
        assert_eq!(v.driver(), Driver::StopHook);
        assert_eq!(
            doc["usage"],
            json!({"outputTokens": 0, "note": "mine", "inputTokens": 0})
        );
        assert_eq!(v.max_stall_stops(), 5);
        assert_eq!(doc["guard"], json!({}));
        typecheck(&doc, "s").unwrap();
    }

    #[test]
    fn continuing_keeps_counters_caps_and_halt_and_applies_given_flags() {
        let running = json!({
            "name": "demo", "phase": "execution", "globalIteration": 31, "maxGlobalIterations": 60,
            "taskIteration": 2, "maxTaskIterations": 5, "sessionId": "old", "quickMode": true,
            "startedAt": "2026-01-01T00:00:00Z", "budget": {"maxMinutes": 90, "maxStallStops": 5},
            "usage": {"outputTokens": 99}, "guard": {"stallStops": 3, "lastFingerprint": "f"},
            "halt": {"kind": HALT_STALL}, "attempts": {"1": [{"n": 1}]}
        });
        assert!(is_resumable(&State::lenient(&running)));
        assert!(!is_resumable(&State::lenient(
            &json!({"phase": "completed"})
        )));
        assert!(!is_resumable(&State::lenient(
            &json!({"phase": "planning"})
        )));
        assert!(!is_resumable(&State::lenient(
            &json!({"phase": "cancelled", "halt": null})
        )));
        assert!(is_resumable(&State::lenient(
            &json!({"phase": "cancelled", "halt": {"kind": HALT_CANCELLED}})
        )));
        let params = InitParams {
            name: "demo".into(),
            max_minutes: Some(120),
            session_id: Some("new".into()),
            ..Default::default()
        };
        let doc = continue_execution(running.clone(), &params, 3, 9);
        let v = State::from_value(&doc).unwrap();
        assert_eq!(
            (
                v.global_iteration(),
                v.max_global_iterations(),
                v.task_iteration()
            ),
            (31, 60, 2)
        );
        assert_eq!((v.task_index(), v.total_tasks()), (3, 9));
        assert_eq!((v.session_id(), v.max_minutes()), (Some("new"), Some(120)));
        assert!(v.quick_mode() && v.halt_kind() == Some(HALT_STALL));
        assert_eq!(
            doc["guard"],
            json!({"stallStops": 0, "lastFingerprint": "f"})
        );
        for key in ["usage", "attempts", "startedAt"] {
            assert_eq!(doc[key], running[key], "{key}");
        }
        typecheck(&doc, "s").unwrap();
    }

    /// A whole-document merge of `text`: what `merge_file` wrote before it kept the plan as
    /// text.
    fn whole_merge(text: &str, patch: &Value) -> Result<Vec<u8>> {
        let doc: Value = serde_json::from_str(text).unwrap();
        apply_patch(Some(doc), patch, "s").map(|d| crate::io::store::to_pretty_bytes(&d))
    }

    fn plan_doc() -> Value {
        json!({"version": 1, "name": "demo", "phase": "execution", "globalIteration": 2,
            "plan": {"digest": "d", "tasks": [{"id": "1.1", "title": "A \"quoted\" é",
                "verify": "`true`", "markers": ["P"]}]},
            "usage": {"outputTokens": 5}, "custom": [1, {"a": null}]})
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the tests set up and inspect files directly
    fn merge_file_writes_the_file_a_whole_merge_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".specrun-state.json");
        let text = String::from_utf8(crate::io::store::to_pretty_bytes(&plan_doc())).unwrap();
        let patches = [
            json!({"globalIteration": 3, "usage": {"outputTokens": 1200}}),
            json!({"newField": {"x": 1}, "$unset": ["custom"]}),
            json!({"plan": {"digest": "e"}}),
            json!({"$unset": ["plan.tasks"]}),
            json!({"$unset": ["plan"]}),
            json!({"planned": 1, "$unset": ["plans"]}),
        ];
        for patch in &patches {
            std::fs::write(&path, &text).unwrap();
            let merged = merge_file(&path, patch).unwrap();
            let written = std::fs::read(&path).unwrap();
            assert_eq!(written, whole_merge(&text, patch).unwrap(), "{patch}");
            let mut expect: Value = serde_json::from_slice(&written).unwrap();
            if !touches(patch, "plan") {
                expect.as_object_mut().unwrap().shift_remove("plan");
            }
            assert_eq!(merged, expect, "{patch}");
        }
        // A plan written by hand on one line stays as written; the document is the same.
        let compact = serde_json::to_string(&plan_doc()).unwrap();
        std::fs::write(&path, &compact).unwrap();
        merge_file(&path, &patches[0]).unwrap();
        let written = std::fs::read_to_string(&path).unwrap();
        let plan_text = serde_json::to_string(&plan_doc()["plan"]).unwrap();
        assert!(written.contains(&plan_text), "{written}");
        let whole = whole_merge(&compact, &patches[0]).unwrap();
        let whole: Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), whole);
        // A refused patch writes nothing; a file that is not an object is refused as before.
        std::fs::write(&path, &text).unwrap();
        assert!(merge_file(&path, &json!({"globalIteration": "x"})).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        std::fs::write(&path, "[1]").unwrap();
        assert!(merge_file(&path, &patches[0]).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[1]");
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the tests set up and inspect files directly
    fn read_takes_the_plan_from_its_text_as_the_whole_parse_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".specrun-state.json");
        let pretty = |v: &Value| String::from_utf8(crate::io::store::to_pretty_bytes(v)).unwrap();
        let mut garbled = plan_doc();
        garbled["plan"] = json!({"digest": 42});
        let mut absent = plan_doc();
        absent.as_object_mut().unwrap().shift_remove("plan");
        let texts = [
            pretty(&plan_doc()),
            format!("\u{feff}{}", pretty(&plan_doc())),
            pretty(&garbled),
            pretty(&absent),
            // A repeated key: the typed read refuses it, the tree keeps the last.
            r#"{"name": "demo", "plan": {"digest": "a", "digest": "b", "tasks": []}}"#.into(),
            r#"{"name": "demo", "plan": 1, "plan": {"digest": "b", "tasks": []}}"#.into(),
            r#"{"globalIteration": "x", "plan": {"digest": "b", "tasks": []}}"#.into(),
            "[1]".into(),
            "{".into(),
        ];
        for text in &texts {
            std::fs::write(&path, text).unwrap();
            let whole = || -> Result<Option<State>> {
                let doc = crate::io::store::parse_json(&path, text.as_bytes())?;
                State::from_json(doc, &path.display().to_string()).map(Some)
            };
            let (ours, theirs) = (read(&path, Reading::Checked), whole());
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text}"),
                _ => panic!("{text}: {ours:?} against {theirs:?}"),
            }
            let doc = crate::io::store::parse_json(&path, text.as_bytes()).ok();
            let lenient = doc.filter(Value::is_object).map(State::lenient_owned);
            assert_eq!(
                read(&path, Reading::Lenient).ok().flatten(),
                lenient,
                "{text}"
            );
        }
    }
}
