//! The wave plan (issue 29): the spec's unchecked tasks in order, cut into waves a CI
//! workflow runs one after the other, each wave's members side by side (one job each, a
//! GitHub Actions `matrix`). A wave is the parallel group `TaskList::parallel_group` gives
//! (adjacent `[P]` tasks of one section, at most 5), split further where a member's
//! **Depends** names another member; a task that is not `[P]` is a wave of one. Pure.

use serde::Serialize;

use crate::model::tasks::{Task, TaskList};

/// One matrix entry: a job's task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Member {
    pub task: String,
    pub title: String,
    pub wave: usize,
}

/// `strategy.matrix` as a workflow reads it (`fromJSON(...)`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Matrix {
    pub include: Vec<Member>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Wave {
    pub wave: usize,
    /// More than one member: they run side by side, and the merge job merges them.
    pub parallel: bool,
    pub matrix: Matrix,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Plan {
    pub waves: Vec<Wave>,
    /// Every wave's members in one matrix (`wave` tells them apart).
    pub matrix: Matrix,
    /// A **Depends** that names a task that comes later or does not exist: the plan still
    /// runs in file order, and a person should look.
    pub problems: Vec<String>,
}

/// The waves of `list`'s unchecked top-level tasks, in file order.
pub(crate) fn plan(list: &TaskList) -> Plan {
    let mut groups: Vec<Vec<&Task>> = Vec::new();
    let mut i = 0;
    while i < list.tasks.len() {
        let t = &list.tasks[i];
        if t.checked || t.depth > 0 {
            i += 1;
            continue;
        }
        let group = list.parallel_group(i);
        i = group.last().map_or(i + 1, |last| last.index + 1);
        groups.extend(split_on_depends(group));
    }
    let waves: Vec<Wave> = groups
        .into_iter()
        .enumerate()
        .map(|(n, members)| wave(n + 1, &members))
        .collect();
    let include = waves
        .iter()
        .flat_map(|w| w.matrix.include.clone())
        .collect();
    Plan {
        problems: problems(list),
        matrix: Matrix { include },
        waves,
    }
}

/// A group in order, cut before each member that depends on one already in its part.
fn split_on_depends(group: Vec<&Task>) -> Vec<Vec<&Task>> {
    let mut parts: Vec<Vec<&Task>> = Vec::new();
    for t in group {
        let needs_earlier = parts.last().is_some_and(|part| {
            part.iter()
                .any(|m| t.depends.iter().any(|d| *d == m.label()))
        });
        match parts.last_mut() {
            Some(part) if !needs_earlier => part.push(t),
            _ => parts.push(vec![t]),
        }
    }
    parts
}

fn wave(n: usize, members: &[&Task]) -> Wave {
    Wave {
        wave: n,
        parallel: members.len() > 1,
        matrix: Matrix {
            include: members
                .iter()
                .map(|t| Member {
                    task: t.label(),
                    title: t.title.clone(),
                    wave: n,
                })
                .collect(),
        },
    }
}

fn problems(list: &TaskList) -> Vec<String> {
    let mut out = Vec::new();
    for (pos, t) in list.tasks.iter().enumerate() {
        for d in &t.depends {
            match list.tasks.iter().position(|o| o.label() == *d) {
                None => out.push(format!(
                    "task {} depends on {d}, which no task is",
                    t.label()
                )),
                Some(at) if at > pos => out.push(format!(
                    "task {} depends on {d}, which comes after it: the waves run in file order",
                    t.label()
                )),
                Some(_) => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tasks::parse;

    fn ids(p: &Plan) -> Vec<Vec<String>> {
        p.waves
            .iter()
            .map(|w| w.matrix.include.iter().map(|m| m.task.clone()).collect())
            .collect()
    }

    #[test]
    fn p_groups_are_waves_and_the_rest_run_alone_in_order() {
        let text = "# Tasks\n\n## Phase 1\n- [x] 1.1 Done already\n- [ ] 1.2 [P] A\n- [ ] 1.3 [P] B\n- [ ] 1.4 [VERIFY] Check\n- [ ] 1.5 Alone\n## Phase 2\n- [ ] 2.1 [P] C\n- [ ] 2.2 [P] D\n";
        let p = plan(&parse(text));
        assert_eq!(
            ids(&p),
            [
                vec!["1.2", "1.3"],
                vec!["1.4"],
                vec!["1.5"],
                vec!["2.1", "2.2"]
            ]
        );
        assert!(p.waves[0].parallel && !p.waves[1].parallel);
        assert_eq!(p.matrix.include.len(), 6);
        assert_eq!(p.matrix.include[5].wave, 4);
        assert!(p.problems.is_empty());
    }

    #[test]
    fn a_member_depending_on_another_starts_the_next_wave() {
        let text = "# Tasks\n- [ ] 1.1 [P] A\n- [ ] 1.2 [P] B\n  - **Depends**: 1.1\n- [ ] 1.3 [P] C\n- [ ] 1.4 [P] D\n  - **Depends**: 9.9\n";
        let p = plan(&parse(text));
        assert_eq!(ids(&p), [vec!["1.1"], vec!["1.2", "1.3", "1.4"]]);
        assert_eq!(p.problems, ["task 1.4 depends on 9.9, which no task is"]);
    }

    #[test]
    fn a_group_past_five_members_is_two_waves_and_a_forward_depends_is_named() {
        let mut text = String::from("# Tasks\n");
        for n in 1..=7 {
            text.push_str(&format!("- [ ] 1.{n} [P] T{n}\n"));
        }
        text.push_str("  - **Depends**: 2.1\n- [ ] 2.1 Later\n");
        let p = plan(&parse(&text));
        assert_eq!(ids(&p)[0].len(), 5);
        assert_eq!(ids(&p)[1], ["1.6", "1.7"]);
        assert_eq!(p.problems.len(), 1, "{:?}", p.problems);
        assert!(p.problems[0].contains("comes after it"));
        assert!(plan(&parse("# Tasks\n- [x] 1.1 Done\n")).waves.is_empty());
    }
}
