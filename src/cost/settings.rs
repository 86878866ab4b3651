//! The budget settings in force for an execution (issue 23 class 5): the price table that
//! `--max-usd` caps and the `notify` command. They are a person's, taken once at `state
//! init` and kept in the state (`settings`), so a model that zeroes the prices or rewrites
//! `notify` in `.specrun/config.json` during the run changes nothing; the change is
//! reported (status, and a `settings-ignored` event when it would have mattered).
//!
//! Where each comes from at `state init`, the first that has it:
//! 1. the environment (`SPECRUN_NOTIFY`; prices have no variable);
//! 2. the user's config, `$XDG_CONFIG_HOME/specrun/config.json` (else
//!    `~/.config/specrun/config.json`), which the project's files cannot reach;
//! 3. the project's `.specrun/config.json`: at a shell as it stands; inside Claude Code only
//!    as committed in the commit the session started from (`.specrun/` is git-ignored, so a
//!    person commits it with `git add -f`), since the model may have written the working
//!    copy, or committed one, since; with no start commit known, none.
//!
//! A state from before (no `settings`) reads the files as it always did.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::io::events::{self, By, Event};
use crate::io::project::{self, Project};
use crate::io::store;
use crate::model::state::State;

/// The `settings` field: what was in force at `state init`, and where it came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Settings {
    /// The `prices` object as read (parsed by `prices::parse` when used).
    #[serde(default)]
    pub prices: Option<Value>,
    #[serde(default)]
    pub notify: Option<String>,
    /// Where the prices came from (`user config <path>`, …); `None` when there were none.
    #[serde(default)]
    pub prices_from: Option<String>,
    #[serde(default)]
    pub notify_from: Option<String>,
}

/// The user's config file: `$XDG_CONFIG_HOME/specrun/config.json`, else under `~/.config`.
pub(crate) fn user_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("specrun").join(project::CONFIG_FILE))
}

/// One config document: `(prices, notify)`, each `None` when absent. Unreadable: nothing.
fn fields(doc: Option<Value>) -> (Option<Value>, Option<String>) {
    let Some(doc) = doc else {
        return (None, None);
    };
    let prices = doc.get("prices").filter(|p| !p.is_null()).cloned();
    let notify = doc
        .get("notify")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .map(str::to_string);
    (prices, notify)
}

fn read_file(path: &Path) -> Option<Value> {
    let bytes = store::read_prefix(path, project::MAX_CONFIG_BYTES, true).ok()??;
    store::parse_json(path, &bytes).ok()
}

/// `.specrun/config.json` as committed in `commit` (none when it was not committed there).
fn committed(root: &Path, commit: &str) -> Option<Value> {
    let path = format!("{}/{}", project::EVENTS_DIR, project::CONFIG_FILE);
    let bytes = crate::io::git::blob_at(root, commit, &path)?;
    let text = String::from_utf8(bytes).ok()?;
    serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()
}

/// Whose view of the project's config counts: a person's at a shell (the working copy), or
/// the model's inside Claude Code (only as committed in the commit its session started
/// from: the model may have written, or committed, a config since).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Asker<'a> {
    Person,
    /// Inside Claude Code; the session's start commit, when a hook saw it start.
    Model(Option<&'a str>),
}

/// The sources in their order, each `(name, document)`.
fn sources(root: &Path, asker: Asker<'_>) -> Vec<(String, Option<Value>)> {
    let user = user_config_path().map(|p| (format!("user config {}", p.display()), read_file(&p)));
    let shown = format!("{}/{}", project::EVENTS_DIR, project::CONFIG_FILE);
    let project = match asker {
        Asker::Person => (shown, read_file(&project::config_path(root))),
        Asker::Model(Some(commit)) => (
            format!(
                "{shown} as committed in the session's start commit {}",
                crate::io::git::short_commit(commit)
            ),
            committed(root, commit),
        ),
        Asker::Model(None) => (format!("{shown} (no start commit known)"), None),
    };
    user.into_iter().chain([project]).collect()
}

/// What is in force if an execution started now, as `asker` sees the project.
pub(crate) fn snapshot(root: &Path, asker: Asker<'_>) -> Settings {
    let mut out = Settings::default();
    if let Some(cmd) = std::env::var(crate::io::notify::ENV)
        .ok()
        .filter(|c| !c.trim().is_empty())
    {
        out.notify = Some(cmd);
        out.notify_from = Some(crate::io::notify::ENV.to_string());
    }
    for (name, doc) in sources(root, asker) {
        let (prices, notify) = fields(doc);
        if out.prices.is_none() && prices.is_some() {
            (out.prices, out.prices_from) = (prices, Some(name.clone()));
        }
        if out.notify.is_none() && notify.is_some() {
            (out.notify, out.notify_from) = (notify, Some(name));
        }
    }
    out
}

/// The settings the state keeps; `None` for a state from before they were kept.
pub(crate) fn kept(state: &State) -> Option<Settings> {
    let v = state.other.get("settings")?;
    Some(serde_json::from_value(v.clone()).unwrap_or_default())
}

/// A `settings` field that is there but does not read as settings: never "none in force".
fn garbled(state: &State) -> bool {
    let v = state.other.get("settings");
    v.is_some_and(|v| serde_json::from_value::<Settings>(v.clone()).is_err())
}

/// How what a person at a shell would get now differs from what is in force: one line per
/// setting, naming both (empty when nothing changed).
pub(crate) fn ignored(kept: &Settings, now: &Settings) -> Vec<String> {
    prices_ignored(kept, now)
        .into_iter()
        .chain(notify_ignored(kept, now))
        .collect()
}

fn prices_ignored(kept: &Settings, now: &Settings) -> Option<String> {
    (kept.prices != now.prices).then(|| {
        format!(
            "prices changed since state init ({}): ignored, the prices in force are {}",
            now.prices_from.as_deref().unwrap_or("none now"),
            kept.prices_from.as_deref().unwrap_or("none")
        )
    })
}

fn notify_ignored(kept: &Settings, now: &Settings) -> Option<String> {
    let in_force = match &kept.notify {
        Some(c) => format!("`{c}` ({})", kept.notify_from.as_deref().unwrap_or("?")),
        None => "none".to_string(),
    };
    (kept.notify != now.notify).then(|| {
        format!(
            "notify changed since state init ({}): ignored, the command in force is {in_force}",
            now.notify_from.as_deref().unwrap_or("none now"),
        )
    })
}

/// The changes ignored for `state`'s execution (empty for a state without settings).
pub(crate) fn ignored_now(root: &Path, state: &State) -> Vec<String> {
    kept(state).map_or_else(Vec::new, |k| ignored(&k, &snapshot(root, Asker::Person)))
}

/// Record the ignored changes as one `settings-ignored` event (when there are any).
fn report(project: &Project, spec: &str, ignored: Option<String>) {
    let Some(line) = ignored else {
        return;
    };
    let event = Event::SettingsIgnored { ignored: &line };
    let _ = events::append(project, By::Spec(spec), &event);
}

/// The price table in force for `state`, a change since init reported (the Stop hook's
/// dollar cap).
pub(crate) fn prices(
    project: &Project,
    spec: &str,
    state: &State,
) -> Result<Option<super::prices::Prices>, String> {
    if let Some(k) = kept(state) {
        report(
            project,
            spec,
            prices_ignored(&k, &snapshot(&project.root, Asker::Person)),
        );
    }
    prices_in_force(&project.root, state)
}

/// The price table in force for `state`: the kept one, else (a state from before) the
/// project's file as it stands. Read-only (status, resume, reports).
pub(crate) fn prices_in_force(
    root: &Path,
    state: &State,
) -> Result<Option<super::prices::Prices>, String> {
    let Some(k) = kept(state) else {
        return super::prices::load(root);
    };
    if garbled(state) {
        return Err("the settings kept at state init do not read (edited by hand)".into());
    }
    match k.prices {
        None => Ok(None),
        Some(table) => super::prices::parse(&serde_json::json!({ "prices": table }).to_string())
            .map_err(|e| format!("the prices kept at state init: {e}")),
    }
}

/// Send `event` to the notify command in force for the spec's execution (the kept one,
/// else today's reading), reporting a changed one as ignored.
pub(crate) fn notify(
    project: &Project,
    spec: &project::Spec,
    event: &crate::io::notify::Message<'_>,
) {
    let state = crate::model::state::read_lenient(&spec.state_path())
        .ok()
        .flatten();
    let Some(k) = state.as_ref().and_then(kept) else {
        crate::io::notify::send(project, crate::io::notify::command(project), event);
        return;
    };
    report(
        project,
        &spec.name,
        notify_ignored(&k, &snapshot(&project.root, Asker::Person)),
    );
    crate::io::notify::send(project, Ok(k.notify.clone()), event);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_change_names_what_is_in_force_and_where_it_came_from() {
        let kept = Settings {
            prices: Some(json!({"m": {"input": 3, "output": 15}})),
            notify: Some("notify-send specrun".into()),
            prices_from: Some("user config /h/.config/specrun/config.json".into()),
            notify_from: Some("SPECRUN_NOTIFY".into()),
        };
        assert!(ignored(&kept, &kept).is_empty());
        let now = Settings {
            prices: Some(json!({"m": {"input": 0, "output": 0}})),
            notify: Some("env -u CLAUDECODE specrun resume --raise-global 1000".into()),
            prices_from: Some(".specrun/config.json".into()),
            notify_from: Some(".specrun/config.json".into()),
        };
        let lines = ignored(&kept, &now);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("prices changed since state init (.specrun/config.json): ignored, the prices in force are user config"), "{}", lines[0]);
        assert!(
            lines[1].contains("`notify-send specrun` (SPECRUN_NOTIFY)"),
            "{}",
            lines[1]
        );
    }
}
