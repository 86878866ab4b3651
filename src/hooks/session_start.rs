//! The SessionStart hook's context for the session that owns (or could own) the execution.

use crate::io::project::SpecPlace;
use crate::model::state;
use crate::model::tasks::TaskList;

/// SessionStart context: 1–3 lines for the session that owns (or could own) the execution.
pub(crate) fn session_context(
    spec: SpecPlace<'_>,
    v: &state::State,
    tasks: Option<&TaskList>,
    session: Option<&str>,
) -> Option<String> {
    let name = spec.name;
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
            let merge = tasks.and_then(|l| crate::next::standing_of(spec, l, v).merge_step());
            if let Some(merge) = merge {
                lines.push(format!("Next: {merge}"));
            }
            lines.push(format!("Continue with /specrun:implement {name} (`specrun status {spec_flag}` shows the details)."));
        }
    }
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::fixtures::*;

    #[test]
    fn session_context_for_owner_or_unowned_only() {
        let list = tasks::parse(TASKS);
        let typed = |v: &Value| state::State::from_value(v).unwrap();
        let c = session_context(DEMO, &typed(&state()), Some(&list), Some("s1")).unwrap();
        assert_eq!(c.lines().count(), 2);
        assert!(c.contains("1/2 tasks checked, next 1.2 Second"), "{c}");
        assert!(session_context(DEMO, &typed(&state()), Some(&list), Some("s2")).is_none());
        let mut unowned = state();
        unowned["sessionId"] = Value::Null;
        assert!(session_context(DEMO, &typed(&unowned), Some(&list), Some("s2")).is_some());
        let mut halted = state();
        halted["halt"] = json!({"kind": "stall", "reason": "stuck"});
        let c = session_context(DEMO, &typed(&halted), None, Some("s1")).unwrap();
        assert!(
            c.contains("Halted: stuck; a person decides at a shell"),
            "{c}"
        );
        let mut done = state();
        done["phase"] = json!("completed");
        assert!(session_context(DEMO, &typed(&done), None, Some("s1")).is_none());
    }
}
