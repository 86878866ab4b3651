//! `tasks lint`: what in a tasks.md the format does not read as written, each finding with
//! its line and the fix. `state init` refuses a plan with errors and `doctor` warns on
//! any; the findings are the same everywhere. Pure: the text and its parse in, findings out.

use serde::Serialize;

use super::scan::{self, Kind};
use super::{field_line, TaskList, UnreadKind, FIELDS};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The plan would run wrong: `state init` refuses it.
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// 1-based line.
    pub line: usize,
    pub severity: Severity,
    /// Stable name of the check (`missing-verify`, `unclosed-fence`, …).
    pub code: &'static str,
    pub message: String,
    pub fix: String,
}

/// Every finding, in line order.
pub fn lint(text: &str, list: &TaskList) -> Vec<Finding> {
    let mut out = Vec::new();
    structure(list, &mut out);
    fields(text, list, &mut out);
    tasks(list, &mut out);
    out.sort_by_key(|f| f.line);
    out
}

pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

fn finding(
    line: usize,
    severity: Severity,
    code: &'static str,
    message: String,
    fix: &str,
) -> Finding {
    Finding {
        line,
        severity,
        code,
        message,
        fix: fix.to_string(),
    }
}

/// Lines that look like tasks and are not, an unclosed fence, an empty plan.
fn structure(list: &TaskList, out: &mut Vec<Finding>) {
    use Severity::{Error, Warning};
    if let Some(line) = list.unclosed_fence {
        let hidden = list
            .unread
            .iter()
            .filter(|u| u.line > line && u.kind == UnreadKind::InFence)
            .count();
        out.push(finding(
            line,
            Error,
            "unclosed-fence",
            format!("this code fence is never closed: the rest of the file is code, and {hidden} checkbox line(s) after it are not read as tasks"),
            "close the fence with the same ``` or ~~~ on a line of its own",
        ));
    }
    for u in &list.unread {
        let (severity, code, message, fix) = match u.kind {
            UnreadKind::InFence => (Warning, "unread-checkbox", "checkbox inside a fenced code block: not read as a task", "if it is a task, move it out of the code block"),
            UnreadKind::InString => (Warning, "unread-checkbox", "checkbox inside a multi-line string or heredoc of a task's text: not read as a task", "if it is a task, close the string (backtick or heredoc end) before it"),
            UnreadKind::Malformed => (Error, "malformed-box", "a box the format does not read: not a task", "write the box as `- [ ] ` (one space inside, one after), or `- [x] ` when done"),
            UnreadKind::Heading => (Error, "heading-task", "a task written as a heading: tasks are checkbox items", "write it as `- [ ] 1.2 Title` with its fields as `  - **Verify**: …` lines under it"),
        };
        out.push(finding(u.line, severity, code, message.to_string(), fix));
    }
    if list.tasks.is_empty() {
        out.push(finding(
            1,
            Error,
            EMPTY_PLAN,
            EMPTY_PLAN_MESSAGE.to_string(),
            EMPTY_PLAN_FIX,
        ));
    }
}

/// The empty plan's finding (`finish` refuses an empty plan with the same words).
pub const EMPTY_PLAN: &str = "empty-plan";
pub const EMPTY_PLAN_MESSAGE: &str = "no task: the file holds no `- [ ]` checkbox item";
pub const EMPTY_PLAN_FIX: &str =
    "write the tasks as `- [ ] 1.1 Title` lines, each with a `  - **Verify**: <command>` line under it";

/// Per task: Verify, duplicate ids, ids missing among tasks that have them.
fn tasks(list: &TaskList, out: &mut Vec<Finding>) {
    for t in list.tasks.iter().filter(|t| !t.checked) {
        if t.verify_command().is_none() && t.no_verify.is_none() {
            out.push(finding(
                t.line_start,
                Severity::Error,
                "missing-verify",
                format!("task {} has no Verify: nothing can show it is done", t.label()),
                "add a line `  - **Verify**: <the command, in backticks>` under the task, or `  - **No verify**: <why>` when no command can check it",
            ));
        }
    }
    for (id, lines) in list.duplicate_ids() {
        for &line in &lines[1..] {
            out.push(finding(
                line,
                Severity::Error,
                "duplicate-id",
                format!(
                    "task id {id} is also on line {}: `task start {id}` cannot tell them apart",
                    lines[0]
                ),
                "give each task its own id",
            ));
        }
    }
    let with_ids = list.tasks.iter().filter(|t| t.id.is_some()).count();
    if with_ids * 2 > list.tasks.len() {
        for t in list.tasks.iter().filter(|t| t.id.is_none()) {
            out.push(finding(
                t.line_start,
                Severity::Warning,
                "checklist-without-ids",
                format!("\"{}\" has no id where the other tasks have ids: a checklist read as task {}?", t.title, t.label()),
                "give it an id if it is a task; a checklist that is not work goes outside tasks.md or in a code block",
            ));
        }
    }
}

/// Field lines in task blocks: misspelled, unknown, plain (not bold), `Commit: none`.
fn fields(text: &str, list: &TaskList, out: &mut Vec<Finding>) {
    let mut task = None;
    let mut tasks = list.tasks.iter().peekable();
    for (number, kind) in scan::scan(text) {
        match kind {
            Kind::Task(_) => task = tasks.next(),
            Kind::Heading(_) => task = None,
            Kind::Other { line, .. } => {
                if let Some(t) = task {
                    field(number, line, t, out);
                }
            }
            Kind::Code(..) => {}
        }
    }
}

fn field(number: usize, line: &str, task: &super::Task, out: &mut Vec<Finding>) {
    if let Some((name, value)) = field_line(line) {
        let lower = name.to_ascii_lowercase();
        if lower == "commit" && super::means_none(&super::strip_code(value)) {
            out.push(finding(
                number,
                Severity::Warning,
                "commit-none",
                format!("`**Commit**: {value}` is read as no commit message"),
                "leave the Commit line out when the task commits nothing",
            ));
        }
        if FIELDS.contains(&lower.as_str()) {
            if lower == "no verify" && value.trim().is_empty() {
                out.push(finding(number, Severity::Error, "no-verify-without-reason", "`**No verify**` gives no reason".to_string(), "say why no command can check the task: `**No verify**: reviewed by hand (prose only)`"));
            }
            return;
        }
        match FIELDS.iter().find(|f| edit_distance(f, &lower) <= 2) {
            Some(near) => out.push(finding(
                number,
                Severity::Error,
                "misspelled-field",
                format!("`**{name}**` is not a field: the task's {near} is not read"),
                &format!("write `**{}**`", capitalised(near)),
            )),
            None => out.push(finding(
                number,
                Severity::Warning,
                "unknown-field",
                format!("`**{name}**` is not a field the format reads (Do, Files, Done when, Verify, Commit, Depends, No verify)"),
                "leave it if it is a note; rename it if it was meant as one of those",
            )),
        }
        return;
    }
    if let Some(name) = plain_field(line) {
        let missing = match name {
            "verify" => task.verify.is_none(),
            "do" => task.do_.is_none(),
            "files" => task.files.is_empty(),
            "done when" => task.done_when.is_none(),
            "commit" => task.commit.is_none(),
            "depends" => task.depends.is_empty(),
            _ => false,
        };
        if missing {
            out.push(finding(
                number,
                Severity::Error,
                "plain-field",
                format!(
                    "`{}:` without bold is not read: the task has no {name}",
                    capitalised(name)
                ),
                &format!("write `- **{}**: …`", capitalised(name)),
            ));
        }
    }
}

/// `- Verify: …` or `Verify: …`: a known field name, not in bold.
fn plain_field(line: &str) -> Option<&'static str> {
    let t = line.trim_start();
    let t = t.strip_prefix(['-', '*']).map_or(t, str::trim_start);
    let (name, _) = t.split_once(':')?;
    let lower = name.trim().to_ascii_lowercase();
    FIELDS
        .iter()
        .copied()
        .find(|f| *f == lower && *f != "no verify")
}

fn capitalised(name: &str) -> String {
    let mut c = name.chars();
    c.next().map_or_else(String::new, |f| {
        f.to_ascii_uppercase().to_string() + c.as_str()
    })
}

/// Levenshtein distance of two short ASCII names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<u8> = b.bytes().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut cur = vec![i + 1];
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tasks::parse;

    fn codes(text: &str) -> Vec<(usize, &'static str)> {
        lint(text, &parse(text))
            .iter()
            .map(|f| (f.line, f.code))
            .collect()
    }

    #[test]
    fn a_clean_plan_has_no_findings() {
        let text = "# Tasks\n- [ ] 1.1 A\n  - **Do**: it\n  - **Verify**: `true`\n  - **Commit**: `feat: a`\n- [ ] 1.2 Docs\n  - **No verify**: prose only, read by a person\n- [x] 1.3 Done long ago\n";
        assert_eq!(codes(text), []);
    }

    #[test]
    fn each_finding_names_its_line() {
        let text = "- [ ] 1 A\n  - **Verfiy**: `true`\n- [ ] 2 B\n  - Verify: `true`\n- [ ] 2 C\n  - **Verify**: `x`\n  - **Commit**: None\n  - **Notes**: n\n- []  3 D\n- [ ] 4 E\n  - **No verify**:\n";
        assert_eq!(
            codes(text),
            [
                (1, "missing-verify"),
                (2, "misspelled-field"),
                (3, "missing-verify"),
                (4, "plain-field"),
                (5, "duplicate-id"),
                (7, "commit-none"),
                (8, "unknown-field"),
                (9, "malformed-box"),
                (11, "no-verify-without-reason"),
            ]
        );
        let f = lint(text, &parse(text));
        assert!(has_errors(&f));
        assert_eq!(f[1].fix, "write `**Verify**`");
    }

    #[test]
    fn an_empty_plan_an_unclosed_fence_and_heading_tasks_are_errors() {
        assert_eq!(codes("# Plan\n\nNothing yet.\n"), [(1, "empty-plan")]);
        let text = "- [ ] 1 A\n  - **Verify**: `t`\n```\n- [ ] 2 B\n";
        assert_eq!(codes(text), [(3, "unclosed-fence"), (4, "unread-checkbox")]);
        let text = "### Task 1.1: A\n- **Verify**: `t`\n";
        assert_eq!(codes(text), [(1, "heading-task"), (1, "empty-plan")]);
    }

    #[test]
    fn a_commented_example_task_is_not_linted() {
        let text = "# Tasks\n<!--\n- [ ] 1.1 Example without Verify\n-->\n- [ ] 1.1 Real\n  - **Verify**: `t`\n";
        assert_eq!(codes(text), []);
    }

    #[test]
    fn a_checklist_among_tasks_with_ids_is_named() {
        let text = "- [x] T001 A\n- [x] T002 B\n## Quality checklist\n- [ ] All links resolve\n";
        let found = codes(text);
        assert!(found.contains(&(4, "checklist-without-ids")), "{found:?}");
    }
}
