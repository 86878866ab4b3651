//! The pull request's body (issue 29), pure: the evidence matrix of a spec as markdown —
//! each task with its evidence and the tree it passed on and its cost, each criterion with
//! its tests and the tree they ran on, the final check, and what a person must still
//! decide. `commands/pr.rs` gathers the rows.

/// One evidence record as the body shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Evidence {
    pub command: String,
    pub exit_code: Option<i64>,
    pub tree: Option<String>,
    /// `passed` or `failed` for a task's record (a later task's change makes it stale, as
    /// it must); for the final check its freshness on the tree as it is.
    pub verdict: String,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskRow {
    pub id: String,
    pub title: String,
    pub checked: bool,
    pub attempts: usize,
    pub evidence: Option<Evidence>,
    pub tokens: u64,
    pub usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CriterionRow {
    pub id: String,
    pub text: String,
    /// `covered`, `checked`, `manual`, `proposed`, `failed`, … (`acceptance::Status`).
    pub status: String,
    /// Each test and how it stands (`name (passed)`); a manual or checked row says how.
    pub tests: Vec<String>,
    /// The tree the evidence covering it is bound to.
    pub tree: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Body {
    pub spec: String,
    pub phase: String,
    pub final_check: Option<Evidence>,
    pub tasks: Vec<TaskRow>,
    pub criteria: Vec<CriterionRow>,
    /// What a person must still decide, one sentence each.
    pub decide: Vec<String>,
    /// What the headless runs' `result` events cost, in USD.
    pub headless_usd: f64,
}

/// Table cells hold no `|` or line break.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn short(tree: Option<&str>) -> String {
    tree.map_or("—".into(), |t| format!("`{}`", t.get(..12).unwrap_or(t)))
}

fn evidence_cell(e: Option<&Evidence>) -> String {
    match e {
        None => "none".into(),
        Some(e) => format!(
            "`{}` exit {} ({})",
            cell(&e.command),
            e.exit_code.map_or("?".into(), |c| c.to_string()),
            e.verdict
        ),
    }
}

pub(crate) fn markdown(b: &Body) -> String {
    let done = b.tasks.iter().filter(|t| t.checked).count();
    let mut md = format!(
        "## specrun: {}\n\n{done} of {} tasks done; execution phase `{}`.\n\n",
        b.spec,
        b.tasks.len(),
        b.phase
    );
    md.push_str(&match &b.final_check {
        Some(e) => format!(
            "**Final check:** {} on tree {}\n\n",
            evidence_cell(Some(e)),
            short(e.tree.as_deref())
        ),
        None => "**Final check:** not run\n\n".into(),
    });
    md.push_str("### Tasks\n\n| task | done | attempts | evidence | tree | tokens | cost (USD) |\n|---|---|---|---|---|---|---|\n");
    for t in &b.tasks {
        md.push_str(&format!(
            "| {} {} | {} | {} | {} | {} | {} | {} |\n",
            cell(&t.id),
            cell(&t.title),
            if t.checked { "yes" } else { "no" },
            t.attempts,
            evidence_cell(t.evidence.as_ref()),
            short(t.evidence.as_ref().and_then(|e| e.tree.as_deref())),
            t.tokens,
            t.usd.map_or("—".into(), |u| format!("{u:.4}"))
        ));
    }
    if !b.criteria.is_empty() {
        md.push_str("\n### Criteria\n\n| criterion | status | tests | tree |\n|---|---|---|---|\n");
        for c in &b.criteria {
            md.push_str(&format!(
                "| {} {} | {} | {} | {} |\n",
                cell(&c.id),
                cell(&c.text),
                c.status,
                if c.tests.is_empty() {
                    "—".into()
                } else {
                    cell(&c.tests.join(", "))
                },
                short(c.tree.as_deref())
            ));
        }
    }
    if b.headless_usd > 0.0 {
        md.push_str(&format!(
            "\nHeadless runs cost ${:.4} in all (their `result` events).\n",
            b.headless_usd
        ));
    }
    md.push_str("\n### What a person must still decide\n\n");
    if b.decide.is_empty() {
        md.push_str(
            "Nothing: every task is done, every criterion covered and the final check passed.\n",
        );
    }
    for d in &b.decide {
        md.push_str(&format!("- [ ] {d}\n"));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_has_a_row_per_task_and_criterion_and_the_decisions() {
        let e = Evidence {
            command: "cargo test | tail".into(),
            exit_code: Some(0),
            tree: Some("0123456789abcdef".into()),
            verdict: "fresh".into(),
        };
        let b = Body {
            spec: "demo".into(),
            phase: "execution".into(),
            final_check: Some(e.clone()),
            tasks: vec![TaskRow {
                id: "1.1".into(),
                title: "One".into(),
                checked: true,
                attempts: 1,
                evidence: Some(e),
                tokens: 1200,
                usd: Some(0.5),
            }],
            criteria: vec![CriterionRow {
                id: "1.1/AC1".into(),
                text: "it works".into(),
                status: "covered".into(),
                tests: vec!["works (passed)".into()],
                tree: Some("0123456789abcdef".into()),
            }],
            decide: vec!["criterion X is proposed".into()],
            headless_usd: 0.0,
        };
        let md = markdown(&b);
        assert!(md.contains("| 1.1 One | yes | 1 | `cargo test \\| tail` exit 0 (fresh) | `0123456789ab` | 1200 | 0.5000 |"), "{md}");
        assert!(
            md.contains("| 1.1/AC1 it works | covered | works (passed) | `0123456789ab` |"),
            "{md}"
        );
        assert!(md.contains("- [ ] criterion X is proposed"), "{md}");
    }
}
