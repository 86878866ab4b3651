//! `specrun goal`, the pure half: the `/goal` condition text and its fit to Claude Code's
//! limit, the readiness judgement (version, hook settings) and the driver recommendation.
//! The edge (`probe.rs`) probes `claude --version` and reads the settings files.
//!
//! The goal evaluator is a model call that reads only the transcript
//! (docs/design.md#drivers), so the condition names output the model must print, never
//! files the evaluator cannot see.

use serde::Serialize;
use serde_json::Value;

/// Claude Code refuses a `/goal` condition longer than this (`yEt=4000`, checked on the
/// trimmed argument's JavaScript length, i.e. UTF-16 code units).
pub const CONDITION_LIMIT: usize = 4000;

/// The first Claude Code release with `/goal` (the seed's `NATIVE_GOAL_REQUIRED_VERSION`).
/// The behaviour the guard relies on was observed on 2.1.197.
pub const MINIMUM_VERSION: &str = "2.1.139";

/// Turn budget named in the condition when neither `--max-turns` nor the state gives one.
pub const DEFAULT_MAX_TURNS: u64 = 30;

/// The last verifier command is cut to this many characters before it is dropped.
const VERIFIER_SHORT_CHARS: usize = 300;

/// Length as Claude Code measures it (JavaScript string length).
pub fn js_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// What the condition is built from; gathered by the edge.
#[derive(Debug, Clone)]
pub struct GoalFacts {
    pub spec_name: String,
    /// The spec's tasks file, from the project root (`specs/<name>/tasks.md`, or Kiro's
    /// `.kiro/specs/<name>/tasks.md`, OpenSpec's `openspec/changes/<name>/tasks.md`).
    pub tasks_file: String,
    pub completed: usize,
    pub total: usize,
    /// `label title` of every unchecked task, in order.
    pub remaining: Vec<String>,
    /// The last recorded `verificationBlocks.execution.command`, if any.
    pub last_verifier: Option<String>,
    pub max_turns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LengthStatus {
    WithinLimit,
    Compressed,
    OverLimit,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConditionLength {
    pub chars: usize,
    pub limit: usize,
    pub status: LengthStatus,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub text: String,
    pub length: ConditionLength,
}

/// The proof the model must print, in order; also the `evidenceProtocol` list.
pub fn evidence_protocol(spec_name: &str) -> Vec<String> {
    let s = crate::support::shell::word(spec_name);
    vec![
        format!("`specrun tasks count --spec {s}` output showing \"pending\":0"),
        format!(
            "`specrun verify run --spec {s} --phase execution --command <the full test suite>` \
             exiting 0 after the last code change"
        ),
        format!(
            "`specrun verify status --spec {s} --phase execution` output saying fresh (exit 0)"
        ),
        "then a final reply whose last line is exactly ALL_TASKS_COMPLETE".to_string(),
        format!(
            "a halt ends the goal: when specrun stops the session or `specrun status --spec {s}` \
             shows a halt, report its reason (a person decides at a shell)"
        ),
    ]
}

/// How much optional context a candidate condition carries.
#[derive(Debug, Clone, Copy)]
struct Detail {
    /// How many remaining tasks to list (the rest are counted).
    listed: usize,
    verifier: VerifierDetail,
    keep_working: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VerifierDetail {
    Full,
    Short,
    Omitted,
}

fn render(facts: &GoalFacts, detail: Detail) -> String {
    let s = crate::support::shell::word(&facts.spec_name);
    let proof = evidence_protocol(&facts.spec_name);
    let mut parts = vec![
        format!(
            "Finish the specrun spec {s} ({}: {}/{} tasks checked when this goal was set).",
            crate::support::shell::word(&facts.tasks_file),
            facts.completed,
            facts.total
        ),
        format!(
            "This goal is met only when the conversation shows, as printed command output after \
             the last code change: (1) {}; (2) {}; (3) {}; (4) {}.",
            proof[0], proof[1], proof[2], proof[3]
        ),
        "A claim without that printed output does not count, and output printed before a later \
         edit is stale."
            .to_string(),
        format!(
            "A halt ends this goal: when specrun stops the session or `specrun status --spec {s}` \
             shows a halt, the goal cannot be met in this session (impossible); report the halt \
             reason (a person decides at a shell)."
        ),
        format!(
            "If this goal has been checked {} times without being met, treat it as impossible \
             and report the blocker, the current task and the next action.",
            facts.max_turns
        ),
    ];
    if detail.keep_working {
        parts.push(format!(
            "Until then keep working: run `specrun snapshot --spec {s}`, delegate the next \
             unchecked task no executor is still working on (its executor ends with \
             `specrun task complete <id> --check`; a background executor's result arrives as \
             a notification), and confirm it with `specrun verify status --spec {s} --task <id>`."
        ));
    }
    if let Some(cmd) = facts.last_verifier.as_deref() {
        let cmd = match detail.verifier {
            VerifierDetail::Full => Some(cmd.to_string()),
            VerifierDetail::Short => Some(shorten(cmd, VERIFIER_SHORT_CHARS)),
            VerifierDetail::Omitted => None,
        };
        if let Some(cmd) = cmd {
            parts.push(format!("The last recorded full-suite command was `{cmd}`."));
        }
    }
    if detail.listed > 0 && !facts.remaining.is_empty() {
        let shown = detail.listed.min(facts.remaining.len());
        let mut list = facts.remaining[..shown].join("; ");
        let rest = facts.remaining.len() - shown;
        if rest > 0 {
            list.push_str(&format!("; and {rest} more"));
        }
        parts.push(format!("Remaining tasks: {list}."));
    }
    // One line: the slash command takes the rest of its line.
    let text = parts.join(" ");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to at most `max` characters at a word boundary, with `…` appended.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > max / 2 => &cut[..i],
        _ => &cut[..],
    };
    format!("{cut}…")
}

/// The condition, shrunk step by step until it fits: fewer listed tasks, a shorter then no
/// verifier line, no "keep working" sentence. The proof and halt clauses are never cut;
/// if even they do not fit, the status says `over-limit`.
pub fn build_condition(facts: &GoalFacts) -> Condition {
    let full = Detail {
        listed: facts.remaining.len(),
        verifier: VerifierDetail::Full,
        keep_working: true,
    };
    let text = render(facts, full);
    if js_len(&text) <= CONDITION_LIMIT {
        return finish(text, LengthStatus::WithinLimit);
    }
    // The largest task list that fits with everything else (binary search: 500 tasks
    // would otherwise mean 500 renders).
    for verifier in [VerifierDetail::Full, VerifierDetail::Short] {
        let with = |listed| Detail {
            listed,
            verifier,
            keep_working: true,
        };
        let (mut lo, mut hi) = (0usize, facts.remaining.len());
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if js_len(&render(facts, with(mid))) <= CONDITION_LIMIT {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let text = render(facts, with(lo));
        if js_len(&text) <= CONDITION_LIMIT {
            return finish(text, LengthStatus::Compressed);
        }
    }
    for keep_working in [true, false] {
        let text = render(
            facts,
            Detail {
                listed: 0,
                verifier: VerifierDetail::Omitted,
                keep_working,
            },
        );
        if js_len(&text) <= CONDITION_LIMIT {
            return finish(text, LengthStatus::Compressed);
        }
    }
    let minimal = render(
        facts,
        Detail {
            listed: 0,
            verifier: VerifierDetail::Omitted,
            keep_working: false,
        },
    );
    finish(minimal, LengthStatus::OverLimit)
}

fn finish(text: String, status: LengthStatus) -> Condition {
    Condition {
        length: ConditionLength {
            chars: js_len(&text),
            limit: CONDITION_LIMIT,
            status,
        },
        text,
    }
}

/// The first `major.minor.patch` in `text` (e.g. `2.1.197 (Claude Code)`).
pub fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find_map(|word| {
            let mut nums = word.split('.').filter(|p| !p.is_empty());
            let v = (
                nums.next()?.parse().ok()?,
                nums.next()?.parse().ok()?,
                nums.next()?.parse().ok()?,
            );
            Some(v)
        })
}

/// What running `claude --version` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaudeProbe {
    NotOnPath,
    /// It ran but failed or printed no version: the message says how.
    Failed(String),
    TimedOut {
        seconds: u64,
    },
    Output(String),
}

/// One Claude Code settings file as read by the edge.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsFile {
    /// `user`, `project`, `local` or `managed`.
    pub scope: &'static str,
    pub path: String,
    pub content: SettingsContent,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SettingsContent {
    Absent,
    /// Unreadable or not a JSON object: the reason.
    Malformed(String),
    Parsed(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriverChoice {
    NativeGoal,
    StopHook,
    Manual,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    pub claude_code_version: Option<String>,
    pub minimum: &'static str,
    /// `None` when the version is unknown.
    pub meets_minimum: Option<bool>,
    /// `None` when a settings file could not be read, so restriction cannot be ruled out.
    pub hooks_restricted: Option<bool>,
    pub reasons: Vec<String>,
    /// Problems the user should fix (malformed settings, a hung probe); not part of the
    /// `readiness` object.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

fn flag(doc: &Value, key: &str) -> Option<bool> {
    doc.get(key).and_then(Value::as_bool)
}

/// Judge `/goal` readiness. Hook restriction follows Claude Code's own gate: managed
/// `disableAllHooks`, `allowManagedHooksOnly` anywhere, or a non-managed `disableAllHooks`
/// while the managed settings do not set that key. Only top-level keys count.
pub fn judge_readiness(probe: &ClaudeProbe, settings: &[SettingsFile]) -> Readiness {
    let mut reasons = Vec::new();
    let mut warnings = Vec::new();
    let (version, meets) = match probe {
        ClaudeProbe::NotOnPath => {
            reasons.push("claude is not on PATH: the Claude Code version is unknown".to_string());
            (None, None)
        }
        ClaudeProbe::TimedOut { seconds } => {
            let msg = format!(
                "`claude --version` did not answer within {seconds} s: the version is unknown"
            );
            reasons.push(msg.clone());
            warnings.push(msg);
            (None, None)
        }
        ClaudeProbe::Failed(why) => {
            reasons.push(format!(
                "`claude --version` failed ({why}): the version is unknown"
            ));
            (None, None)
        }
        ClaudeProbe::Output(text) => match parse_version(text) {
            None => {
                reasons.push(format!(
                    "`claude --version` printed no version ({:?}): the version is unknown",
                    shorten(text.trim(), 80)
                ));
                (None, None)
            }
            Some(v) => {
                let shown = format!("{}.{}.{}", v.0, v.1, v.2);
                let ok = Some(v) >= parse_version(MINIMUM_VERSION);
                if ok {
                    reasons.push(format!(
                        "Claude Code {shown} has /goal (needs {MINIMUM_VERSION})"
                    ));
                } else {
                    reasons.push(format!(
                        "Claude Code {shown} is older than {MINIMUM_VERSION}, the first release with /goal"
                    ));
                }
                (Some(shown), Some(ok))
            }
        },
    };

    let mut restrictions = Vec::new();
    let mut unreadable = Vec::new();
    let managed_sets_disable = settings.iter().any(|f| {
        f.scope == "managed"
            && matches!(&f.content, SettingsContent::Parsed(doc) if doc.get("disableAllHooks").is_some())
    });
    for file in settings {
        match &file.content {
            SettingsContent::Absent => {}
            SettingsContent::Malformed(why) => {
                unreadable.push(file.path.clone());
                warnings.push(format!(
                    "{} settings {} could not be read ({why}); hook restrictions in it are unknown",
                    file.scope, file.path
                ));
            }
            SettingsContent::Parsed(doc) => {
                let managed = file.scope == "managed";
                if flag(doc, "disableAllHooks") == Some(true) && (managed || !managed_sets_disable)
                {
                    restrictions.push(format!("disableAllHooks is true in {}", file.path));
                }
                if flag(doc, "allowManagedHooksOnly") == Some(true) {
                    restrictions.push(format!("allowManagedHooksOnly is true in {}", file.path));
                }
            }
        }
    }
    let restricted = if !restrictions.is_empty() {
        reasons.push(format!("hooks are restricted: {}", restrictions.join("; ")));
        Some(true)
    } else if !unreadable.is_empty() {
        reasons.push(format!(
            "hook restrictions are unknown: {} could not be read",
            unreadable.join(", ")
        ));
        None
    } else {
        Some(false)
    };
    Readiness {
        claude_code_version: version,
        minimum: MINIMUM_VERSION,
        meets_minimum: meets,
        hooks_restricted: restricted,
        reasons,
        warnings,
    }
}

/// The driver to use, and why. `/goal` needs a known, new-enough Claude Code, hooks
/// allowed and a condition within the limit. The stop-hook driver needs only plugin hooks,
/// which every Claude Code with plugins runs — unless hooks are restricted, which disables
/// the plugin's hooks too: then only a person re-running the command drives (`manual`),
/// and the guard's caps do not run either.
pub fn recommend_driver(
    readiness: &Readiness,
    condition: &ConditionLength,
) -> (DriverChoice, String) {
    if readiness.hooks_restricted == Some(true) {
        return (
            DriverChoice::Manual,
            "manual: hooks are restricted, which disables both /goal and the plugin's Stop hook \
             (and with it specrun's caps); re-run /specrun:implement after each stop, or lift the \
             restriction"
                .into(),
        );
    }
    let why_not_goal = if readiness.hooks_restricted.is_none() {
        Some("a settings file could not be read, so hooks may be restricted")
    } else if readiness.meets_minimum.is_none() {
        Some("the Claude Code version is unknown")
    } else if readiness.meets_minimum == Some(false) {
        Some("this Claude Code has no /goal")
    } else if condition.status == LengthStatus::OverLimit {
        Some("the condition does not fit the /goal limit")
    } else {
        None
    };
    match why_not_goal {
        None => (
            DriverChoice::NativeGoal,
            "native-goal: /goal is available and hooks are allowed; specrun's Stop hook still \
             enforces the caps"
                .into(),
        ),
        Some(why) => (
            DriverChoice::StopHook,
            format!(
                "stop-hook: {why}; the plugin's Stop hook re-prompts with the next task and \
                 needs no /goal"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts(name: &str, tasks: usize) -> GoalFacts {
        GoalFacts {
            spec_name: name.to_string(),
            tasks_file: format!("specs/{name}/tasks.md"),
            completed: 0,
            total: tasks,
            remaining: (1..=tasks)
                .map(|i| format!("{i}.1 Implement the part number {i} of the feature"))
                .collect(),
            last_verifier: Some("cargo test --all".into()),
            max_turns: 30,
        }
    }

    #[test]
    fn small_spec_fits_and_names_every_proof() {
        let c = build_condition(&facts("demo", 3));
        assert_eq!(c.length.status, LengthStatus::WithinLimit);
        for needle in [
            "specrun tasks count --spec demo",
            "\"pending\":0",
            "specrun verify status --spec demo --phase execution",
            "ALL_TASKS_COMPLETE",
            "A halt ends this goal",
            "checked 30 times",
            "Remaining tasks: 1.1 Implement",
            "`cargo test --all`",
        ] {
            assert!(c.text.contains(needle), "missing {needle:?} in {}", c.text);
        }
        assert!(!c.text.contains('\n'));
        assert_eq!(c.length.chars, js_len(&c.text));
    }

    #[test]
    fn long_name_and_500_tasks_are_compressed_within_the_limit() {
        let name = "n".repeat(200);
        let c = build_condition(&facts(&name, 500));
        assert_eq!(c.length.status, LengthStatus::Compressed);
        assert!(js_len(&c.text) <= CONDITION_LIMIT, "{}", js_len(&c.text));
        assert!(c.text.contains("ALL_TASKS_COMPLETE"));
        assert!(
            c.text.contains("more."),
            "the cut list says how many are left"
        );
        assert!(c.text.contains(&name));
    }

    #[test]
    fn a_huge_verifier_is_shortened_then_dropped() {
        let mut f = facts("demo", 2);
        f.last_verifier = Some("x ".repeat(5000));
        let c = build_condition(&f);
        assert_eq!(c.length.status, LengthStatus::Compressed);
        assert!(c.length.chars <= CONDITION_LIMIT);
        assert!(c.text.contains('…'));
    }

    #[test]
    fn length_is_measured_in_utf16_units() {
        assert_eq!(js_len("a😀"), 3);
        let c = build_condition(&facts(&"😀".repeat(120), 500));
        assert!(js_len(&c.text) <= CONDITION_LIMIT);
    }

    #[test]
    fn odd_spec_names_are_quoted_for_the_shell() {}

    #[test]
    fn versions_parse_from_claude_output() {
        assert_eq!(parse_version("2.1.197 (Claude Code)"), Some((2, 1, 197)));
        assert_eq!(parse_version("claude v10.0.3\n"), Some((10, 0, 3)));
        assert_eq!(parse_version("no version"), None);
        assert_eq!(parse_version("1.2"), None);
    }

    fn parsed(scope: &'static str, doc: Value) -> SettingsFile {
        SettingsFile {
            scope,
            path: format!("{scope}.json"),
            content: SettingsContent::Parsed(doc),
        }
    }

    fn new_claude() -> ClaudeProbe {
        ClaudeProbe::Output("2.1.197 (Claude Code)".into())
    }

    fn length(status: LengthStatus) -> ConditionLength {
        ConditionLength {
            chars: 10,
            limit: CONDITION_LIMIT,
            status,
        }
    }

    #[test]
    fn ready_claude_recommends_native_goal() {
        let r = judge_readiness(&new_claude(), &[parsed("user", json!({"model": "x"}))]);
        assert_eq!(r.meets_minimum, Some(true));
        assert_eq!(r.hooks_restricted, Some(false));
        let (d, _) = recommend_driver(&r, &length(LengthStatus::Compressed));
        assert_eq!(d, DriverChoice::NativeGoal);
        let (d, why) = recommend_driver(&r, &length(LengthStatus::OverLimit));
        assert_eq!(d, DriverChoice::StopHook);
        assert!(why.contains("limit"));
    }

    #[test]
    fn unknown_or_old_version_recommends_stop_hook() {
        let r = judge_readiness(&ClaudeProbe::NotOnPath, &[]);
        assert_eq!(r.meets_minimum, None);
        assert_eq!(r.claude_code_version, None);
        let (d, why) = recommend_driver(&r, &length(LengthStatus::WithinLimit));
        assert_eq!(d, DriverChoice::StopHook);
        assert!(why.contains("unknown"));
        let old = judge_readiness(&ClaudeProbe::Output("2.0.5".into()), &[]);
        assert_eq!(old.meets_minimum, Some(false));
        assert_eq!(
            recommend_driver(&old, &length(LengthStatus::WithinLimit)).0,
            DriverChoice::StopHook
        );
        let hung = judge_readiness(&ClaudeProbe::TimedOut { seconds: 2 }, &[]);
        assert_eq!(hung.warnings.len(), 1);
    }

    #[test]
    fn restricted_hooks_recommend_manual_and_say_why() {
        for (scope, key) in [
            ("user", "disableAllHooks"),
            ("project", "disableAllHooks"),
            ("local", "allowManagedHooksOnly"),
            ("managed", "allowManagedHooksOnly"),
            ("managed", "disableAllHooks"),
        ] {
            let r = judge_readiness(&new_claude(), &[parsed(scope, json!({ key: true }))]);
            assert_eq!(r.hooks_restricted, Some(true), "{scope} {key}");
            assert!(r.reasons.iter().any(|m| m.contains(key)), "{:?}", r.reasons);
            let (d, why) = recommend_driver(&r, &length(LengthStatus::WithinLimit));
            assert_eq!(d, DriverChoice::Manual);
            assert!(why.contains("hooks are restricted"));
        }
    }

    #[test]
    fn managed_disable_all_hooks_false_overrides_a_user_true() {
        let r = judge_readiness(
            &new_claude(),
            &[
                parsed("user", json!({"disableAllHooks": true})),
                parsed("managed", json!({"disableAllHooks": false})),
            ],
        );
        assert_eq!(r.hooks_restricted, Some(false));
    }

    #[test]
    fn nested_keys_do_not_count() {
        let r = judge_readiness(
            &new_claude(),
            &[parsed("user", json!({"env": {"disableAllHooks": true}}))],
        );
        assert_eq!(r.hooks_restricted, Some(false));
    }

    #[test]
    fn malformed_settings_warn_and_make_restriction_unknown() {
        let bad = SettingsFile {
            scope: "project",
            path: ".claude/settings.json".into(),
            content: SettingsContent::Malformed("expected value at line 1".into()),
        };
        let r = judge_readiness(&new_claude(), &[bad]);
        assert_eq!(r.hooks_restricted, None);
        assert!(r.warnings[0].contains(".claude/settings.json"));
        assert_eq!(
            recommend_driver(&r, &length(LengthStatus::WithinLimit)).0,
            DriverChoice::StopHook
        );
    }
}
