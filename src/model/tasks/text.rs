//! Text edits of the spec's markdown files that keep every other byte: a fix block into
//! tasks.md, a line into a `.progress.md` section; where a fix block goes.

use crate::model::tasks::{Task, TaskList};

/// How deep `[FIX [FIX …]]` chains may go.
pub const MAX_FIX_DEPTH: usize = 3;
/// The `.progress.md` sections the verbs append to.
pub const COMPLETED_HEADING: &str = "## Completed tasks";
pub const LEARNINGS_HEADING: &str = "## Learnings";

/// A fix task to print or insert after its task's block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixTask {
    pub id: String,
    pub fixes: String,
    /// The block's lines, without line endings.
    pub lines: Vec<String>,
    /// Already in tasks.md but not in the state (a `task fail --insert` killed between its
    /// two writes): recorded, not inserted again.
    pub adopted: bool,
}

/// Where a new fix of `task` goes: after its block and after the fixes already below it
/// (with their own fixes), so a file reads 1.2, 1.2.1, 1.2.1.1, 1.2.2 in the order they run.
pub fn fix_anchor<'a>(list: &'a TaskList, task: &'a Task) -> &'a Task {
    let target = task.label();
    let reaches = |t: &Task| {
        let mut cur = t.fixes();
        for _ in 0..=MAX_FIX_DEPTH + 1 {
            match cur {
                Some(id) if id == target => return true,
                Some(id) => {
                    cur = list
                        .tasks
                        .iter()
                        .find(|x| x.label() == id)
                        .and_then(Task::fixes)
                }
                None => return false,
            }
        }
        false
    };
    list.tasks[task.index + 1..]
        .iter()
        .take_while(|t| reaches(t))
        .last()
        .unwrap_or(task)
}

/// Insert `lines` after task's block (`line_end`), in the file's own line-ending style.
/// Every other byte stays as it was.
pub fn insert_after_block(text: &str, task: &Task, lines: &[String], crlf: bool) -> String {
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut offset = 0;
    let mut line_no = 0;
    for raw in text.split_inclusive('\n') {
        offset += raw.len();
        line_no += 1;
        if line_no == task.line_end {
            break;
        }
    }
    let mut out = String::with_capacity(text.len() + 200);
    out.push_str(&text[..offset]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(eol);
    }
    for l in lines {
        out.push_str(l);
        out.push_str(eol);
    }
    out.push_str(&text[offset..]);
    out
}

/// Append `line` at the end of the `heading` section of a markdown text (the section is
/// created at the end when absent), keeping the file's BOM and line endings.
pub fn append_to_section(text: &str, heading: &str, line: &str) -> String {
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let bare = |l: &str| l.trim_start_matches('\u{feff}').trim_end().to_string();
    let start = lines
        .iter()
        .position(|l| bare(l).eq_ignore_ascii_case(heading));
    let mut out = String::with_capacity(text.len() + line.len() + heading.len() + 8);
    match start {
        Some(h) => {
            // The section ends at the next heading of the same or a higher level.
            let end = lines[h + 1..]
                .iter()
                .position(|l| l.starts_with("# ") || l.starts_with("## "))
                .map(|p| h + 1 + p)
                .unwrap_or(lines.len());
            // Insert after the section's last non-blank line.
            let mut at = end;
            while at > h + 1 && lines[at - 1].trim().is_empty() {
                at -= 1;
            }
            for l in &lines[..at] {
                out.push_str(l);
            }
            if !out.ends_with('\n') {
                out.push_str(eol);
            }
            out.push_str(line);
            out.push_str(eol);
            for l in lines.drain(at..) {
                out.push_str(l);
            }
        }
        None => {
            out.push_str(text);
            if !out.is_empty() && !out.ends_with('\n') {
                out.push_str(eol);
            }
            if !out.trim_start_matches('\u{feff}').trim().is_empty()
                && !out.ends_with(&format!("{eol}{eol}"))
            {
                out.push_str(eol);
            }
            out.push_str(heading);
            out.push_str(eol);
            out.push_str(eol);
            out.push_str(line);
            out.push_str(eol);
        }
    }
    out
}

/// Whether the `heading` section already holds a bullet with this text (whitespace and
/// case folded).
pub fn section_has(text: &str, heading: &str, bullet_text: &str) -> bool {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let want = norm(bullet_text);
    let mut inside = false;
    for l in text.lines() {
        let bare = l.trim_start_matches('\u{feff}').trim_end();
        if bare.starts_with("# ") || bare.starts_with("## ") {
            inside = bare.eq_ignore_ascii_case(heading);
            continue;
        }
        if inside {
            if let Some(item) = bare.trim_start().strip_prefix("- ") {
                // A learning may carry a `[task]` prefix; compare the text after it.
                let item = match item.strip_prefix('[').and_then(|r| r.split_once("] ")) {
                    Some((_, rest)) => rest,
                    None => item,
                };
                if norm(item) == want {
                    return true;
                }
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tasks::parse;

    #[test]
    fn insert_after_block_keeps_crlf_bom_and_other_bytes() {
        let text = "\u{feff}- [ ] 1 A\r\n  - **Do**: x\r\n\r\n- [ ] 2 B\r\n";
        let list = parse(text);
        let out = insert_after_block(
            text,
            &list.tasks[0],
            &["- [ ] 1.1 [FIX 1] F".into()],
            list.crlf,
        );
        assert_eq!(
            out,
            "\u{feff}- [ ] 1 A\r\n  - **Do**: x\r\n- [ ] 1.1 [FIX 1] F\r\n\r\n- [ ] 2 B\r\n"
        );
        let no_eol = "- [ ] 1 A";
        let l2 = parse(no_eol);
        assert_eq!(
            insert_after_block(no_eol, &l2.tasks[0], &["X".into()], false),
            "- [ ] 1 A\nX\n"
        );
    }

    #[test]
    fn sections_append_create_and_dedupe() {
        let text = "# Progress\r\n\r\n## Learnings\r\n- [1] one\r\n\r\n## Other\r\nx\r\n";
        let out = append_to_section(text, LEARNINGS_HEADING, "- two");
        assert_eq!(
            out,
            "# Progress\r\n\r\n## Learnings\r\n- [1] one\r\n- two\r\n\r\n## Other\r\nx\r\n"
        );
        assert!(section_has(&out, LEARNINGS_HEADING, "ONE"));
        assert!(!section_has(&out, LEARNINGS_HEADING, "x"));
        assert_eq!(
            append_to_section("", LEARNINGS_HEADING, "- a"),
            "## Learnings\n\n- a\n"
        );
        assert_eq!(
            append_to_section("notes", COMPLETED_HEADING, "- a"),
            "notes\n\n## Completed tasks\n\n- a\n"
        );
        assert_eq!(
            append_to_section("## Learnings\n", LEARNINGS_HEADING, "- a"),
            "## Learnings\n- a\n"
        );
    }

    #[test]
    fn a_new_fix_goes_below_the_fixes_already_there() {
        let list = parse("- [ ] 1 A\n- [x] 1.1 [FIX 1] F\n- [x] 1.1.1 [FIX 1.1] G\n- [ ] 2 B\n- [ ] 2.1 [FIX 9] Other\n");
        assert_eq!(fix_anchor(&list, &list.tasks[0]).label(), "1.1.1");
        assert_eq!(fix_anchor(&list, &list.tasks[1]).label(), "1.1.1");
        assert_eq!(fix_anchor(&list, &list.tasks[3]).label(), "2");
    }
}
