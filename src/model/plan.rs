//! The plan frozen at `state init`: each task's id, title, Verify,
//! Done when, Files and markers, kept in the state with a digest, so a tasks.md rewritten
//! during the run (a Verify turned into `true`, a Done when deleted, an unfinished task
//! removed) is seen against what was agreed. Only a person changes the agreement (`specrun
//! plan accept` at a shell); the fix tasks the binary inserts join it as they are inserted.
//! Pure: the task list in, the plan and its differences out (docs/design.md#state).

use serde::{Deserialize, Serialize};

use super::tasks::{self, FinalCheck, Task, TaskList};
use super::unmet::Unmet;

/// The gate a changed plan fails (task complete, completion).
pub(crate) const GATE: &str = "plan-changed";

/// One task as frozen: what it must do and how it is shown done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanTask {
    pub id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_when: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// `VERIFY` (routes to the qa engineer), `P` (a parallel group), `FIX x`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub markers: Vec<String>,
}

impl PlanTask {
    pub fn of(task: &Task) -> PlanTask {
        PlanTask {
            id: task.label(),
            title: task.title.clone(),
            verify: task.verify.clone(),
            done_when: task.done_when.clone(),
            files: task.files.clone(),
            markers: task.markers.clone(),
        }
    }

    /// The command the frozen Verify names (`Task::verify_command`'s reading).
    pub fn verify_command(&self) -> Option<&str> {
        let field = self.verify.as_deref()?;
        Some(tasks::verify_command(field)).filter(|c| !c.is_empty())
    }
}

/// The `plan` field of the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// `digest(tasks)`: a hand edit of the stored tasks that leaves it shows.
    pub digest: String,
    pub tasks: Vec<PlanTask>,
    /// The one command whose fresh passing run completes the spec (`TaskList::final_check`);
    /// absent in a plan frozen before final checks were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_check: Option<FinalCheck>,
}

/// sha256 of the tasks' JSON (field order fixed by `PlanTask`), then of the final check's
/// when there is one (so a plan frozen before final checks keeps its digest).
pub(crate) fn digest(tasks: &[PlanTask], final_check: Option<&FinalCheck>) -> String {
    let mut bytes = serde_json::to_vec(tasks).unwrap_or_default();
    if let Some(check) = final_check {
        bytes.extend_from_slice(b"\nfinal-check\n");
        bytes.extend(serde_json::to_vec(check).unwrap_or_default());
    }
    crate::support::sha256::hex(&bytes)
}

impl Plan {
    /// The plan of `list` as it stands.
    pub fn freeze(list: &TaskList) -> Plan {
        let tasks = list.tasks.iter().map(PlanTask::of).collect();
        Plan::of_tasks(tasks, list.final_check())
    }

    fn of_tasks(tasks: Vec<PlanTask>, final_check: Option<FinalCheck>) -> Plan {
        Plan {
            digest: digest(&tasks, final_check.as_ref()),
            tasks,
            final_check,
        }
    }

    /// The frozen final check's command.
    pub fn final_command(&self) -> Option<&str> {
        self.final_check.as_ref().map(|c| c.command.as_str())
    }

    pub fn task(&self, id: &str) -> Option<&PlanTask> {
        self.tasks.iter().find(|t| t.id == id)
    }

    /// Whether the stored tasks still hash to the stored digest.
    pub fn intact(&self) -> bool {
        digest(&self.tasks, self.final_check.as_ref()) == self.digest
    }

    /// The plan with `fix` (a fix task the binary inserts) placed after the task it fixes
    /// and its sub-tasks' entries, or at the end when that task is not in the plan.
    pub fn with_fix(&self, fix: &Task, after: &str) -> Plan {
        let mut tasks = self.tasks.clone();
        tasks.retain(|t| t.id != fix.label());
        let at = tasks
            .iter()
            .rposition(|t| t.id == after || t.id.starts_with(&format!("{after}.")))
            .map_or(tasks.len(), |i| i + 1);
        tasks.insert(at, PlanTask::of(fix));
        Plan::of_tasks(tasks, self.final_check.clone())
    }

    /// Every way `list` differs from this plan, in the file's order, then the deletions.
    pub fn changes(&self, list: &TaskList) -> Vec<Change> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for task in &list.tasks {
            let id = task.label();
            if seen.contains(&id) {
                continue;
            }
            let now = PlanTask::of(task);
            match self.task(&id) {
                None => out.push(Change::Added {
                    id: id.clone(),
                    fixes: task.fixes().map(str::to_string),
                }),
                Some(was) => out.extend(field_changes(was, &now)),
            }
            seen.push(id);
        }
        for was in &self.tasks {
            if !seen.contains(&was.id) {
                out.push(Change::Deleted {
                    id: was.id.clone(),
                    title: was.title.clone(),
                });
            }
        }
        // A plan frozen before final checks has none to compare.
        if let Some(was) = &self.final_check {
            let now = list.final_check();
            if now.as_ref().map(|c| c.command.as_str()) != Some(was.command.as_str()) {
                out.push(Change::FinalCheck {
                    from: was.command.clone(),
                    to: now.map(|c| c.command),
                });
            }
        }
        out
    }
}

/// How the current tasks.md differs from the frozen plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum Change {
    /// A field of a task: `Verify`, `Done when`, `Files` or `markers`.
    Field {
        id: String,
        field: &'static str,
        from: Option<String>,
        to: Option<String>,
    },
    Added {
        id: String,
        /// The task a `[FIX x]` task added by hand repairs.
        #[serde(skip_serializing_if = "Option::is_none")]
        fixes: Option<String>,
    },
    Deleted {
        id: String,
        title: String,
    },
    /// The spec's final check.
    FinalCheck {
        from: String,
        to: Option<String>,
    },
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |v: &Option<String>| match v {
            Some(v) => format!("`{v}`"),
            None => "nothing".to_string(),
        };
        match self {
            Change::Field { id, field, from, to } => write!(
                f,
                "task {id}'s {field} changed from {} to {}",
                shown(from),
                shown(to)
            ),
            Change::Added { id, fixes: None } => write!(f, "task {id} was added"),
            Change::Added {
                id,
                fixes: Some(of),
            } => write!(
                f,
                "task {id} was added (a fix task joins the plan when `specrun task fail {} --reason \"<why>\" --insert` writes it)",
                crate::support::shell::word(of)
            ),
            Change::Deleted { id, title } => write!(f, "task {id} ({title}) was deleted"),
            Change::FinalCheck { from, to } => write!(
                f,
                "the final check changed from `{from}` to {}",
                to.as_ref().map_or("nothing".to_string(), |t| format!("`{t}`"))
            ),
        }
    }
}

fn field_changes(was: &PlanTask, now: &PlanTask) -> Vec<Change> {
    let list = |v: &[String]| Some(v.join(", ")).filter(|s| !s.is_empty());
    let pairs = [
        ("Verify", was.verify.clone(), now.verify.clone()),
        ("Done when", was.done_when.clone(), now.done_when.clone()),
        ("Files", list(&was.files), list(&now.files)),
        ("markers", list(&was.markers), list(&now.markers)),
    ];
    pairs
        .into_iter()
        .filter(|(_, from, to)| from != to)
        .map(|(field, from, to)| Change::Field {
            id: now.id.clone(),
            field,
            from,
            to,
        })
        .collect()
}

/// The Verify command that shows `task` done: the frozen plan's when it holds the task
/// (a Verify rewritten since does not count), else the task's own as it stands.
pub(crate) fn verify_of<'a>(frozen: Frozen<'a>, task: &'a Task) -> Option<&'a str> {
    match frozen {
        Frozen::Plan(plan) => match plan.task(&task.label()) {
            Some(t) => t.verify_command(),
            None => task.verify_command(),
        },
        _ => task.verify_command(),
    }
}

/// The spec's final check: the frozen plan's, else (a state from before plans, or a plan
/// frozen before final checks) tasks.md's as it stands.
pub(crate) fn final_check_of(frozen: Frozen<'_>, list: &TaskList) -> Option<FinalCheck> {
    match frozen {
        Frozen::Plan(Plan {
            final_check: Some(check),
            ..
        }) => Some(check.clone()),
        _ => list.final_check(),
    }
}

/// What the state holds of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frozen<'a> {
    /// A state written before plans were frozen: tasks.md is read as it stands.
    None,
    /// A `plan` field that does not read as a plan, or whose digest does not match.
    Broken,
    Plan(&'a Plan),
}

/// The plan gate: `None` when tasks.md is the frozen plan (or there is none); else what
/// changed and the model's way back. A person accepting the new plan is named only as a
/// person's decision, never as the model's step.
/// `total_tasks` is the state's `totalTasks`, which must count the frozen plan's tasks.
pub(crate) fn unmet(
    name: &str,
    total_tasks: u64,
    frozen: Frozen<'_>,
    list: &TaskList,
) -> Option<Unmet> {
    let spec_flag = crate::support::shell::spec_flag(name);
    let show = format!("`specrun plan show {spec_flag}`");
    let what = match frozen {
        Frozen::None => return None,
        Frozen::Broken => "the plan frozen at `state init` in the state file no longer reads or no longer matches its digest (it was edited by hand)".to_string(),
        Frozen::Plan(plan) => {
            let mut shown: Vec<String> = plan.changes(list).iter().map(|c| c.to_string()).collect();
            if total_tasks != plan.tasks.len() as u64 {
                shown.push(format!(
                    "the state's totalTasks is {total_tasks}, the frozen plan has {} tasks",
                    plan.tasks.len()
                ));
            }
            if shown.is_empty() {
                return None;
            }
            let changes = std::mem::take(&mut shown);
            let shown: Vec<String> = changes.iter().take(5).cloned().collect();
            let more = changes.len().saturating_sub(shown.len());
            let more = if more > 0 { format!("; and {more} more") } else { String::new() };
            format!(
                "tasks.md differs from the plan frozen at `state init`: {}{more}",
                shown.join("; ")
            )
        }
    };
    Some(Unmet::new(
        GATE,
        format!(
            "{what}. Put tasks.md back as frozen ({show} prints each frozen task and what differs); if the plan itself is wrong, fail the task (`specrun task fail <id> --reason \"<why>\" {spec_flag}`) or record a follow-up and end the turn: only a person accepts a new plan, at their own shell."
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tasks::parse;

    const PLAN: &str = "- [ ] 1.1 One\n  - **Files**: one.txt\n  - **Done when**: one.txt holds 1\n  - **Verify**: `grep -qx 1 one.txt`\n- [ ] 1.2 Two\n  - **Verify**: `true`\n";

    #[test]
    fn an_unchanged_plan_has_no_changes_and_a_stable_digest() {
        let plan = Plan::freeze(&parse(PLAN));
        assert!(plan.intact());
        assert_eq!(plan.digest, Plan::freeze(&parse(PLAN)).digest);
        let ticked = PLAN.replace("- [ ] 1.1", "- [x] 1.1");
        assert!(
            plan.changes(&parse(&ticked)).is_empty(),
            "a box is not the plan"
        );
        assert_eq!(unmet("s", 2, Frozen::Plan(&plan), &parse(&ticked)), None);
        assert_eq!(
            plan.task("1.1").unwrap().verify_command(),
            Some("grep -qx 1 one.txt")
        );
    }

    #[test]
    fn a_weakened_verify_a_lost_done_when_and_a_deleted_task_are_named() {
        let plan = Plan::freeze(&parse(PLAN));
        let weakened = PLAN
            .replace("`grep -qx 1 one.txt`", "`true`")
            .replace("  - **Done when**: one.txt holds 1\n", "");
        let changes = plan.changes(&parse(&weakened));
        let text: Vec<String> = changes.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            text,
            [
                "task 1.1's Verify changed from `grep -qx 1 one.txt` to `true`",
                "task 1.1's Done when changed from `one.txt holds 1` to nothing",
            ]
        );
        let deleted = parse("- [ ] 1.1 One\n  - **Files**: one.txt\n  - **Done when**: one.txt holds 1\n  - **Verify**: `grep -qx 1 one.txt`\n- [ ] 1.3 Three\n  - **Verify**: `true`\n");
        let text: Vec<String> = plan
            .changes(&deleted)
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(text, ["task 1.3 was added", "task 1.2 (Two) was deleted"]);
        let gate = unmet("s", 2, Frozen::Plan(&plan), &deleted).unwrap();
        assert_eq!(gate.name, GATE);
        assert!(
            gate.detail.contains("specrun plan show --spec s"),
            "{}",
            gate.detail
        );
        assert!(!gate.detail.contains("plan accept"), "{}", gate.detail);
    }

    #[test]
    fn a_fix_task_joins_the_plan_after_its_task() {
        let plan = Plan::freeze(&parse(PLAN));
        let fix = parse("- [ ] 1.1.1 [FIX 1.1] Fix: x\n  - **Verify**: `grep -qx 1 one.txt`\n");
        let with = plan.with_fix(&fix.tasks[0], "1.1");
        let ids: Vec<&str> = with.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["1.1", "1.1.1", "1.2"]);
        assert!(with.intact() && with.digest != plan.digest);
        let mut tampered = with.clone();
        tampered.tasks[0].verify = Some("`true`".into());
        assert!(!tampered.intact());
    }

    #[test]
    fn the_final_check_is_the_line_else_the_closing_verify_task_and_a_change_is_named() {
        let lined = format!("# Tasks\n\n**Final check**: `cargo test`\n\n{PLAN}");
        let plan = Plan::freeze(&parse(&lined));
        assert_eq!(plan.final_command(), Some("cargo test"));
        assert!(plan.intact());
        assert_ne!(plan.digest, Plan::freeze(&parse(PLAN)).digest);
        let weakened = lined.replace("`cargo test`", "`true`");
        let text: Vec<String> = plan
            .changes(&parse(&weakened))
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(
            text,
            ["the final check changed from `cargo test` to `true`"]
        );
        let closing = PLAN.replace("1.2 Two", "1.2 [VERIFY] Two");
        let list = parse(&closing);
        let check = list.final_check().unwrap();
        assert_eq!(
            (check.command.as_str(), check.source.to_string()),
            (
                "true",
                "the Verify of the closing [VERIFY] task 1.2".to_string()
            )
        );
        assert_eq!(parse(PLAN).final_check(), None, "no line, no [VERIFY] task");
        let placeholder = format!("**Final check**: `<the command>`\n{PLAN}");
        assert_eq!(parse(&placeholder).final_check(), None);
        let late = format!("{PLAN}**Final check**: `cargo test`\n");
        assert_eq!(
            parse(&late).final_check(),
            None,
            "after the first task it is no spec-level line"
        );
    }

    #[test]
    fn a_plan_frozen_before_final_checks_keeps_its_digest_and_compares_none() {
        let mut plan = Plan::freeze(&parse(PLAN));
        assert_eq!(plan.digest, digest(&plan.tasks, None));
        plan.final_check = None;
        let lined = format!("**Final check**: `cargo test`\n{PLAN}");
        assert!(plan.changes(&parse(&lined)).is_empty());
    }
}
