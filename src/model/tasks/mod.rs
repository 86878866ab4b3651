//! The one tasks.md parser (docs/design.md#tasks). Every consumer — snapshot, tasks, the
//! guard, status, the task verbs — reads tasks through this module, so they cannot disagree.
//!
//! A task is a column-0 line `- [ ] `, `- [x] ` or `- [X] `, then an optional id (`1`,
//! `1.2`, `1.2.3`), optional markers (`[P]`, `[VERIFY]`, `[FIX 1.2]`) and the title. Its
//! block runs to the next column-0 task or heading. Indented checkboxes and anything in a
//! fenced code block are not tasks. Pure: text in, data out.

pub mod text;

use serde::Serialize;

pub const MAX_PARALLEL_GROUP: usize = 5;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Position in the file's task list (0-based).
    pub index: usize,
    pub id: Option<String>,
    pub title: String,
    pub checked: bool,
    /// Marker names without brackets: `P`, `VERIFY`, `FIX 1.2`.
    pub markers: Vec<String>,
    /// 1-based first and last line of the task's block (trailing blank lines excluded).
    pub line_start: usize,
    pub line_end: usize,
    /// Text of the nearest heading above the task (`Phase 1: Core`), if any.
    pub phase: Option<String>,
    #[serde(rename = "do")]
    pub do_: Option<String>,
    pub files: Vec<String>,
    pub done_when: Option<String>,
    pub verify: Option<String>,
    pub commit: Option<String>,
    pub depends: Vec<String>,
    /// Byte offset of the character inside `[ ]` in the original text.
    #[serde(skip)]
    pub mark_offset: usize,
    /// Headings seen before this task; tasks of one group share it.
    #[serde(skip)]
    pub section: usize,
}

impl Task {
    pub fn has_marker(&self, name: &str) -> bool {
        self.markers.iter().any(|m| m == name)
    }

    pub fn is_parallel(&self) -> bool {
        self.has_marker("P")
    }

    pub fn is_verify(&self) -> bool {
        self.has_marker("VERIFY")
    }

    /// The task a `[FIX x]` marker repairs.
    pub fn fixes(&self) -> Option<&str> {
        self.markers.iter().find_map(|m| m.strip_prefix("FIX "))
    }

    /// The id when present, else `#<index+1>`, so every task can be named.
    /// The command the task's **Verify** field names: the text inside its first backticks,
    /// else the whole field; `None` when the task has no Verify.
    pub fn verify_command(&self) -> Option<&str> {
        self.verify
            .as_deref()
            .map(verify_command)
            .filter(|c| !c.is_empty())
    }

    pub fn label(&self) -> String {
        match &self.id {
            Some(id) => id.clone(),
            None => format!("#{}", self.index + 1),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskList {
    pub tasks: Vec<Task>,
    pub bom: bool,
    pub crlf: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub total: usize,
    pub completed: usize,
    pub pending: usize,
    /// Index of the first unchecked task; `total` when every task is checked.
    pub next_index: usize,
}

/// Why a task id did not resolve to exactly one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindError {
    Unknown(String),
    /// The id appears on each of these 1-based lines.
    Duplicate(String, Vec<usize>),
}

impl std::fmt::Display for FindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FindError::Unknown(id) => write!(f, "no task with id {id}"),
            FindError::Duplicate(id, lines) => {
                let lines: Vec<String> = lines.iter().map(|l| format!("line {l}")).collect();
                write!(
                    f,
                    "task id {id} appears more than once: {}",
                    lines.join(", ")
                )
            }
        }
    }
}

impl TaskList {
    pub fn counts(&self) -> Counts {
        let completed = self.tasks.iter().filter(|t| t.checked).count();
        Counts {
            total: self.tasks.len(),
            completed,
            pending: self.tasks.len() - completed,
            next_index: self.next_index(),
        }
    }

    /// The task to run next: the first unchecked one, wherever earlier checked ones are,
    /// or while that task has an unchecked `[FIX x]` task, that fix (at any depth): a fix
    /// runs before its task is retried. `len()` when every task is checked.
    pub fn next_index(&self) -> usize {
        self.next_index_where(|t| t.checked)
    }

    /// `next_index` once the task at `done` is checked too (what `task complete` moves to).
    pub fn next_index_after(&self, done: usize) -> usize {
        self.next_index_where(|t| t.checked || t.index == done)
    }

    fn next_index_where(&self, checked: impl Fn(&Task) -> bool) -> usize {
        let pending: Vec<Pending<'_>> = self
            .tasks
            .iter()
            .filter(|t| !checked(t))
            .map(|t| Pending {
                index: t.index,
                id: t.id.as_deref(),
                fixes: t.fixes(),
            })
            .collect();
        next_pending(&pending).unwrap_or(self.tasks.len())
    }

    /// Whether an unchecked `[FIX x]` task names this task.
    fn has_pending_fix(&self, task: &Task) -> bool {
        task.id.as_deref().is_some_and(|id| {
            self.tasks
                .iter()
                .any(|t| !t.checked && t.index != task.index && t.fixes() == Some(id))
        })
    }

    pub fn next(&self) -> Option<&Task> {
        self.tasks.get(self.next_index())
    }

    pub fn all_checked(&self) -> bool {
        self.tasks.iter().all(|t| t.checked)
    }

    /// The tasks to run together starting at `start`: a run of adjacent unchecked `[P]`
    /// tasks in one section, at most 5, ended by `[VERIFY]`, a heading, a non-`[P]` task or
    /// a task whose `[FIX]` task is pending (that fix runs first, on its own).
    /// A task that is not `[P]` is a group of one. Empty when `start` is out of range or
    /// already checked.
    pub fn parallel_group(&self, start: usize) -> Vec<&Task> {
        let Some(first) = self.tasks.get(start) else {
            return Vec::new();
        };
        if first.checked {
            return Vec::new();
        }
        if !first.is_parallel() || first.is_verify() {
            return vec![first];
        }
        self.tasks[start..]
            .iter()
            .take_while(|t| {
                !t.checked
                    && t.is_parallel()
                    && !t.is_verify()
                    && t.section == first.section
                    && (t.index == first.index || !self.has_pending_fix(t))
            })
            .take(MAX_PARALLEL_GROUP)
            .collect()
    }

    /// Find the one task with this id (or `#N` label).
    pub fn find(&self, id: &str) -> Result<&Task, FindError> {
        let mut found = self.tasks.iter().filter(|t| t.label() == id);
        let Some(first) = found.next() else {
            return Err(FindError::Unknown(id.to_string()));
        };
        let rest: Vec<&Task> = found.collect();
        if rest.is_empty() {
            Ok(first)
        } else {
            let mut lines = vec![first.line_start];
            lines.extend(rest.iter().map(|t| t.line_start));
            Err(FindError::Duplicate(id.to_string(), lines))
        }
    }

    /// Ids that appear on more than one task, with their lines.
    pub fn duplicate_ids(&self) -> Vec<(String, Vec<usize>)> {
        let mut seen: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
        for t in &self.tasks {
            if let Some(id) = &t.id {
                seen.entry(id).or_default().push(t.line_start);
            }
        }
        seen.into_iter()
            .filter(|(_, lines)| lines.len() > 1)
            .map(|(id, lines)| (id.to_string(), lines))
            .collect()
    }
}

/// An unchecked task as the choice of the next task sees it.
struct Pending<'a> {
    index: usize,
    id: Option<&'a str>,
    fixes: Option<&'a str>,
}

/// The index of the task to run next among the unchecked tasks (in file order): the first,
/// then down its chain of unchecked fix tasks. Bounded, so hand-written `[FIX]` cycles end.
fn next_pending(pending: &[Pending<'_>]) -> Option<usize> {
    let mut cur = pending.first()?;
    for _ in 0..pending.len() {
        let fix = pending
            .iter()
            .find(|p| p.index != cur.index && p.fixes.is_some() && p.fixes == cur.id);
        match fix {
            Some(f) => cur = f,
            None => break,
        }
    }
    Some(cur.index)
}

/// Split `text` into lines, yielding (byte offset of line start, line without `\n`/`\r\n`).
/// As `split_inclusive('\n')`, with memchr: half of `tasks count` was the line search.
fn lines_with_offsets(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = 0;
    let mut ends = memchr::memchr_iter(b'\n', text.as_bytes());
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let end = ends.next().map_or(text.len(), |i| i + 1);
        let raw = &text[start..end];
        let line_start = std::mem::replace(&mut start, end);
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        Some((line_start, line.strip_suffix('\r').unwrap_or(line)))
    })
}

/// A fence opener/closer: up to 3 spaces, then ``` or ~~~ (3 or more).
fn fence_of(line: &str) -> Option<(u8, usize)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let bytes = trimmed.as_bytes();
    let ch = *bytes.first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let run = bytes.iter().take_while(|&&b| b == ch).count();
    (run >= 3).then_some((ch, run))
}

/// An ATX heading at column 0: 1–6 `#` then a space, a tab or the end of the line
/// (`#hashtag` and `#5` are prose, as in CommonMark).
fn is_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes) && matches!(line.as_bytes().get(hashes), None | Some(b' ' | b'\t'))
}

/// If `line` is a column-0 task line, return (checked, offset of the mark, rest after "] ").
fn task_line(line: &str) -> Option<(bool, usize, &str)> {
    let b = line.as_bytes();
    if b.len() < 5 || b[0] != b'-' || b[1] != b' ' || b[2] != b'[' || b[4] != b']' {
        return None;
    }
    let checked = match b[3] {
        b' ' => false,
        b'x' | b'X' => true,
        _ => return None,
    };
    match b.get(5) {
        Some(b' ') => Some((checked, 3, &line[6..])),
        None => Some((checked, 3, "")),
        _ => None,
    }
}

/// Planned ids have 1–3 levels (`1`, `1.2`, `1.2.3`); fix tasks append one level per fix
/// (`1.2.3.1`), up to three fixes deep, so ids of up to 6 levels are read.
pub const MAX_ID_PARTS: usize = 6;

/// `1`, `1.2`, `1.2.3` … (an optional trailing `.` or `:` is dropped).
fn split_id(rest: &str) -> (Option<String>, &str) {
    let (id, rest) = split_id_str(rest);
    (id.map(str::to_string), rest)
}

/// `split_id` without allocating.
fn split_id_str(rest: &str) -> (Option<&str>, &str) {
    let token_end = memchr::memchr(b' ', rest.as_bytes()).unwrap_or(rest.len());
    let token = &rest[..token_end];
    let bare = token.trim_end_matches(['.', ':']);
    if is_id(bare) {
        (Some(bare), rest[token_end..].trim_start())
    } else {
        (None, rest)
    }
}

fn split_markers(rest: &str) -> (Vec<String>, &str) {
    let (markers, rest) = split_marker_strs(rest);
    (markers.into_iter().map(str::to_string).collect(), rest)
}

/// Digits in 1 to `MAX_ID_PARTS` dot-separated parts, none empty.
fn is_id(text: &str) -> bool {
    let (mut parts, mut part_len) = (1, 0);
    for b in text.bytes() {
        match b {
            b'0'..=b'9' => part_len += 1,
            b'.' if part_len > 0 => (parts, part_len) = (parts + 1, 0),
            _ => return false,
        }
    }
    part_len > 0 && parts <= MAX_ID_PARTS
}

/// `split_markers` borrowing the names (no allocation for a line without markers).
fn split_marker_strs(mut rest: &str) -> (Vec<&str>, &str) {
    let mut markers = Vec::new();
    loop {
        let candidate = rest.trim_start();
        let Some(inner) = candidate.strip_prefix('[') else {
            break;
        };
        let Some(close) = inner.find(']') else { break };
        let name = &inner[..close];
        let known = name == "P"
            || name == "VERIFY"
            || name
                .strip_prefix("FIX ")
                .is_some_and(|id| split_id_str(id).0 == Some(id));
        if !known {
            break;
        }
        markers.push(name);
        rest = &inner[close + 1..];
    }
    (markers, rest.trim())
}

/// `- **Do**: text` or `- **Do:** text` (any indent, `-` or `*`) → ("Do", "text").
fn field_line(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let t = t.strip_prefix("- ").or_else(|| t.strip_prefix("* "))?;
    let t = t.trim_start().strip_prefix("**")?;
    let close = t.find("**")?;
    let name = t[..close].trim_end_matches(':').trim();
    let after = t[close + 2..].trim_start();
    let value = after.strip_prefix(':').unwrap_or(after).trim();
    Some((name, value))
}

/// The command of a Verify field: the text inside its first backticks, else the field.
pub fn verify_command(field: &str) -> &str {
    let mut parts = field.split('`');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(inner), Some(_)) if !inner.trim().is_empty() => inner.trim(),
        _ => field.trim(),
    }
}

fn strip_code(value: &str) -> String {
    let v = value.trim();
    let inner = v
        .strip_prefix('`')
        .and_then(|s| s.strip_suffix('`'))
        .filter(|s| !s.contains('`'));
    inner.unwrap_or(v).trim().to_string()
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(strip_code)
        .filter(|s| {
            !s.is_empty() && !matches!(s.to_ascii_lowercase().as_str(), "none" | "-" | "n/a")
        })
        .collect()
}

fn split_depends(value: &str) -> Vec<String> {
    value
        .split([',', ' '])
        .map(strip_code)
        .filter(|s| {
            !s.is_empty() && !matches!(s.to_ascii_lowercase().as_str(), "none" | "-" | "n/a")
        })
        .collect()
}

struct Open {
    task: Task,
    last_content_line: usize,
    field: Option<&'static str>,
}

fn apply_field(task: &mut Task, name: &str, value: &str) -> Option<&'static str> {
    match name.to_ascii_lowercase().as_str() {
        "do" => {
            task.do_ = Some(value.to_string());
            Some("do")
        }
        "files" => {
            task.files = split_list(value);
            Some("files")
        }
        "done when" => {
            task.done_when = Some(value.to_string());
            Some("done when")
        }
        "verify" => {
            task.verify = Some(strip_code(value)).filter(|v| !v.is_empty());
            Some("verify")
        }
        "commit" => {
            task.commit = Some(strip_code(value)).filter(|v| !v.is_empty());
            Some("commit")
        }
        "depends" => {
            task.depends = split_depends(value);
            Some("depends")
        }
        _ => None,
    }
}

/// Lines under a field that are not fields themselves continue Do / Done when.
fn continue_field(task: &mut Task, field: &str, line: &str) {
    let text = line.trim();
    let target = match field {
        "do" => &mut task.do_,
        "done when" => &mut task.done_when,
        _ => return,
    };
    if let Some(existing) = target {
        if existing.is_empty() {
            existing.push_str(text);
        } else {
            existing.push('\n');
            existing.push_str(text);
        }
    }
}

fn close(open: Option<Open>, tasks: &mut Vec<Task>) {
    if let Some(mut o) = open {
        o.task.line_end = o.last_content_line;
        tasks.push(o.task);
    }
}

/// What one line of tasks.md is. Every reader classifies lines through `scan`, so the
/// full parse and the fast count cannot disagree about which lines are tasks.
enum LineKind<'a> {
    /// A fence line or a line inside a fenced block.
    Fenced,
    Heading(&'a str),
    /// A column-0 task line: checked, byte offset of the mark in the text, text after `] `.
    Task(bool, usize, &'a str),
    Other(&'a str),
}

/// Classify every line: (1-based line number, kind).
fn scan(text: &str) -> impl Iterator<Item = (usize, LineKind<'_>)> {
    let bom = text.starts_with('\u{feff}');
    let mut fence: Option<(u8, usize)> = None;
    lines_with_offsets(text)
        .enumerate()
        .map(move |(line_no, (mut offset, mut line))| {
            let number = line_no + 1;
            if number == 1 && bom {
                line = &line[3..];
                offset += 3;
            }
            if let Some((ch, len)) = fence {
                if let Some((c, l)) = fence_of(line) {
                    if c == ch
                        && l >= len
                        && line
                            .trim_start()
                            .trim_start_matches(ch as char)
                            .trim()
                            .is_empty()
                    {
                        fence = None;
                    }
                }
                return (number, LineKind::Fenced);
            }
            if let Some(f) = fence_of(line) {
                fence = Some(f);
                return (number, LineKind::Fenced);
            }
            if is_heading(line) {
                return (number, LineKind::Heading(line));
            }
            match task_line(line) {
                Some((checked, mark, rest)) => {
                    (number, LineKind::Task(checked, offset + mark, rest))
                }
                None => (number, LineKind::Other(line)),
            }
        })
}

/// Counts only, without building tasks: what `tasks count` needs, at a fraction of the cost
/// of `parse` on a large file. Always equal to `parse(text).counts()`.
pub fn count(text: &str) -> Counts {
    let (mut total, mut completed) = (0, 0);
    // The next task is the first unchecked one, or down its chain of unchecked fix tasks:
    // only those are kept (borrowed), so a large file costs no allocation per task.
    let mut pending: Vec<Pending<'_>> = Vec::new();
    for (_, kind) in scan(text) {
        if let LineKind::Task(checked, _, rest) = kind {
            if checked {
                completed += 1;
            } else {
                let (id, rest) = split_id_str(rest);
                let fixes = split_marker_strs(rest)
                    .0
                    .into_iter()
                    .find_map(|m| m.strip_prefix("FIX "));
                if pending.is_empty() || fixes.is_some() {
                    pending.push(Pending {
                        index: total,
                        id,
                        fixes,
                    });
                }
            }
            total += 1;
        }
    }
    Counts {
        total,
        completed,
        pending: total - completed,
        next_index: next_pending(&pending).unwrap_or(total),
    }
}

/// The counts and the next task's label and title, without building tasks: what the status
/// line shows on every refresh. Always equal to `parse(text)`'s `counts()` and `next()`.
pub fn headline(text: &str) -> (Counts, Option<(String, String)>) {
    let counts = count(text);
    let next = scan(text)
        .filter_map(|(_, kind)| match kind {
            LineKind::Task(_, _, rest) => Some(rest),
            _ => None,
        })
        .nth(counts.next_index)
        .map(|rest| {
            let (id, rest) = split_id_str(rest);
            let label = id.map_or_else(|| format!("#{}", counts.next_index + 1), str::to_string);
            (label, split_marker_strs(rest).1.to_string())
        });
    (counts, next)
}

pub fn parse(text: &str) -> TaskList {
    let bom = text.starts_with('\u{feff}');
    let crlf = text.contains("\r\n");
    let mut tasks = Vec::new();
    let mut open: Option<Open> = None;
    let mut section = 0usize;
    let mut phase: Option<String> = None;

    for (number, kind) in scan(text) {
        let line = match kind {
            LineKind::Fenced => {
                if let Some(o) = open.as_mut() {
                    o.last_content_line = number;
                }
                continue;
            }
            LineKind::Heading(line) => {
                close(open.take(), &mut tasks);
                section += 1;
                phase =
                    Some(line.trim_start_matches('#').trim().to_string()).filter(|p| !p.is_empty());
                continue;
            }
            LineKind::Task(checked, mark_offset, rest) => {
                close(open.take(), &mut tasks);
                let (id, rest) = split_id(rest);
                let (markers, title) = split_markers(rest);
                open = Some(Open {
                    task: Task {
                        index: tasks.len(),
                        id,
                        title: title.to_string(),
                        checked,
                        markers,
                        line_start: number,
                        line_end: number,
                        phase: phase.clone(),
                        do_: None,
                        files: Vec::new(),
                        done_when: None,
                        verify: None,
                        commit: None,
                        depends: Vec::new(),
                        mark_offset,
                        section,
                    },
                    last_content_line: number,
                    field: None,
                });
                continue;
            }
            LineKind::Other(line) => line,
        };
        let Some(o) = open.as_mut() else { continue };
        if line.trim().is_empty() {
            continue;
        }
        o.last_content_line = number;
        if let Some((name, value)) = field_line(line) {
            o.field = apply_field(&mut o.task, name, value);
        } else if let Some(field) = o.field {
            continue_field(&mut o.task, field, line);
        }
    }
    close(open, &mut tasks);
    TaskList { tasks, bom, crlf }
}

/// Set one task's checkbox, changing exactly one byte of `text`. Returns `None` when the
/// box already has that state.
pub fn set_checked(text: &str, task: &Task, checked: bool) -> Option<String> {
    if task.checked == checked {
        return None;
    }
    let mut bytes = text.as_bytes().to_vec();
    bytes[task.mark_offset] = if checked { b'x' } else { b' ' };
    // Replacing one ASCII byte with another keeps the text valid UTF-8.
    Some(String::from_utf8(bytes).expect("ASCII byte swap keeps UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &TaskList) -> Vec<String> {
        list.tasks.iter().map(|t| t.label()).collect()
    }

    const SAMPLE: &str = "# Tasks\n\n## Phase 1: Core\n- [x] 1.1 [P] Add the parser\n  - **Do**: write it\n    carefully\n  - **Files**: src/a.rs, `src/b.rs`\n  - **Done when**: it parses\n  - **Verify**: `cargo test parser`\n  - **Commit**: `feat(parser): add`\n  - **Depends**: 1.0\n\n- [ ] 1.2 [P] Second\n- [ ] 1.3 [VERIFY] Check\n## Phase 2: More\n- [ ] 2.1 [FIX 1.2] Repair\n";

    #[test]
    fn parses_ids_markers_fields_and_blocks() {
        let list = parse(SAMPLE);
        assert_eq!(ids(&list), ["1.1", "1.2", "1.3", "2.1"]);
        let t = &list.tasks[0];
        assert!(t.checked);
        assert_eq!(t.markers, ["P"]);
        assert_eq!(t.title, "Add the parser");
        assert_eq!(t.do_.as_deref(), Some("write it\ncarefully"));
        assert_eq!(t.files, ["src/a.rs", "src/b.rs"]);
        assert_eq!(t.done_when.as_deref(), Some("it parses"));
        assert_eq!(t.verify.as_deref(), Some("cargo test parser"));
        assert_eq!(t.commit.as_deref(), Some("feat(parser): add"));
        assert_eq!(t.depends, ["1.0"]);
        assert_eq!((t.line_start, t.line_end), (4, 11));
        assert_eq!(t.phase.as_deref(), Some("Phase 1: Core"));
        assert_eq!(list.tasks[2].markers, ["VERIFY"]);
        assert_eq!(list.tasks[3].markers, ["FIX 1.2"]);
        assert_eq!(list.tasks[3].fixes(), Some("1.2"));
    }

    #[test]
    fn block_ends_at_heading() {
        let list = parse(SAMPLE);
        assert_eq!(list.tasks[2].line_end, 14);
        assert_eq!(list.tasks[3].phase.as_deref(), Some("Phase 2: More"));
    }

    #[test]
    fn lines_split_as_split_inclusive_does() {
        for text in ["", "a", "a\n", "a\nb", "\n\n", "a\r\nb\r\n", "é\nü", "x\r"] {
            let mut offset = 0;
            let want: Vec<(usize, &str)> = text
                .split_inclusive('\n')
                .map(|raw| {
                    let start = offset;
                    offset += raw.len();
                    let line = raw.strip_suffix('\n').unwrap_or(raw);
                    (start, line.strip_suffix('\r').unwrap_or(line))
                })
                .collect();
            assert_eq!(
                lines_with_offsets(text).collect::<Vec<_>>(),
                want,
                "{text:?}"
            );
        }
    }

    #[test]
    fn crlf_and_bom_are_accepted() {
        let text = "\u{feff}- [ ] 1 First\r\n  - **Verify**: `true`\r\n- [X] 2 Second\r\n";
        let list = parse(text);
        assert!(list.bom && list.crlf);
        assert_eq!(count(text), list.counts());
        assert_eq!(ids(&list), ["1", "2"]);
        assert_eq!(list.tasks[0].title, "First");
        assert_eq!(list.tasks[0].verify.as_deref(), Some("true"));
        assert!(list.tasks[1].checked);
        let out = set_checked(text, &list.tasks[0], true).unwrap();
        assert_eq!(out, text.replacen("- [ ] 1", "- [x] 1", 1));
    }

    #[test]
    fn fenced_code_and_indented_checkboxes_are_not_tasks() {
        let text = "- [ ] 1 Real\n  - [ ] sub step\n```md\n- [ ] fenced\n```\n~~~~\n- [ ] tilde\n~~~\n- [ ] still fenced\n~~~~\n   - [ ] indented\n- [x] 2 Real too\n";
        let list = parse(text);
        assert_eq!(ids(&list), ["1", "2"]);
        assert_eq!(list.counts().total, 2);
        assert_eq!(count(text), list.counts());
    }

    #[test]
    fn only_atx_headings_end_a_block() {
        let list = parse(
            "- [ ] 1 [P] A\n#hashtag prose\n####### seven\n- [ ] 2 [P] B\n###\n- [ ] 3 [P] C\n",
        );
        assert_eq!(list.tasks[0].line_end, 3);
        assert_eq!(list.parallel_group(0).len(), 2);
        assert_eq!(list.tasks[2].phase, None);
    }

    #[test]
    fn checked_uppercase_x_and_ids_of_one_to_three_levels() {
        let list = parse(
            "- [X] 1 A\n- [x] 1.2 B\n- [ ] 1.2.3 C\n- [ ] 1.2.3.4.5.6.7 D\n- [ ] No id\n- [ ] 1.2.3.1 [FIX 1.2.3] F\n",
        );
        assert_eq!(
            list.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
            [
                Some("1".into()),
                Some("1.2".into()),
                Some("1.2.3".into()),
                None,
                None,
                Some("1.2.3.1".into())
            ]
        );
        assert_eq!(list.tasks[3].title, "1.2.3.4.5.6.7 D");
        assert_eq!(list.tasks[5].fixes(), Some("1.2.3"));
        assert_eq!(list.tasks[4].label(), "#5");
        assert_eq!(list.counts().completed, 2);
    }

    #[test]
    fn next_is_first_unchecked_even_out_of_order() {
        let list = parse("- [ ] 1 A\n- [x] 2 B\n- [x] 3 C\n- [ ] 4 D\n");
        assert_eq!(list.next_index(), 0);
        let list = parse("- [x] 1 A\n- [x] 2 B\n- [ ] 3 C\n- [x] 4 D\n- [ ] 5 E\n");
        let c = list.counts();
        assert_eq!(
            (c.total, c.completed, c.pending, c.next_index),
            (5, 3, 2, 2)
        );
    }

    #[test]
    fn a_pending_fix_task_is_next_before_its_task_at_any_depth() {
        let text = "- [x] 1 A\n- [ ] 1.1 B\n- [x] 1.1.1 [FIX 1.1] F1\n- [ ] 1.1.2 [FIX 1.1] F2\n- [ ] 1.1.2.1 [FIX 1.1.2] FF\n- [ ] 1.2 C\n";
        let list = parse(text);
        assert_eq!(list.next().unwrap().label(), "1.1.2.1");
        assert_eq!(count(text), list.counts());
        let idx = |id: &str| list.find(id).unwrap().index;
        assert_eq!(
            list.tasks[list.next_index_after(idx("1.1.2.1"))].label(),
            "1.1.2"
        );
        assert_eq!(
            list.tasks[list.next_index_after(idx("1.1.2"))].label(),
            "1.1"
        );
        // A fix checked, its task is retried; a [FIX] cycle written by hand still ends.
        let list = parse("- [ ] 1 A\n- [x] 1.1 [FIX 1] F\n- [ ] 2 B\n");
        assert_eq!(list.next().unwrap().label(), "1");
        let cycle = "- [ ] 1 [FIX 2] A\n- [ ] 2 [FIX 1] B\n- [ ] 3 [FIX 3] C\n";
        assert!(parse(cycle).next_index() < 2);
        assert_eq!(count(cycle), parse(cycle).counts());
    }

    #[test]
    fn a_member_with_a_pending_fix_ends_the_parallel_group() {
        let list = parse("- [ ] 1 [P] A\n- [ ] 2 [P] B\n- [ ] 2.1 [FIX 2] F\n- [ ] 3 [P] C\n");
        let labels = |g: Vec<&Task>| g.iter().map(|t| t.label()).collect::<Vec<_>>();
        assert_eq!(labels(list.parallel_group(list.next_index())), ["1"]);
        let list = parse("- [ ] 1 [P] A\n- [ ] 1.1 [FIX 1] F\n- [ ] 2 [P] B\n");
        assert_eq!(labels(list.parallel_group(list.next_index())), ["1.1"]);
    }

    #[test]
    fn parallel_groups_are_capped_and_broken() {
        let many: String = (1..=7).map(|i| format!("- [ ] {i} [P] T{i}\n")).collect();
        let list = parse(&many);
        assert_eq!(list.parallel_group(0).len(), 5);
        let list = parse("- [ ] 1 [P] A\n- [ ] 2 [P] B\n- [ ] 3 [VERIFY] V\n- [ ] 4 [P] C\n");
        assert_eq!(
            list.parallel_group(0)
                .iter()
                .map(|t| t.label())
                .collect::<Vec<_>>(),
            ["1", "2"]
        );
        let list = parse("- [ ] 1 [P] A\n## H\n- [ ] 2 [P] B\n");
        assert_eq!(list.parallel_group(0).len(), 1);
        let list = parse("- [ ] 1 [P] A\n- [ ] 2 B\n- [ ] 3 [P] C\n");
        assert_eq!(list.parallel_group(0).len(), 1);
        let list = parse("- [ ] 1 Plain\n- [ ] 2 [P] B\n");
        assert_eq!(list.parallel_group(0).len(), 1);
        let list = parse("- [ ] 1 [P] [VERIFY] Both\n- [ ] 2 [P] B\n");
        assert_eq!(list.parallel_group(0).len(), 1);
    }

    #[test]
    fn empty_file_and_file_without_tasks() {
        assert_eq!(
            parse("").counts(),
            Counts {
                total: 0,
                completed: 0,
                pending: 0,
                next_index: 0
            }
        );
        let list = parse("# Title\n\nSome prose.\n* [ ] star is not a task\n");
        assert_eq!(list.counts().total, 0);
        assert!(list.next().is_none());
    }

    #[test]
    fn hundred_thousand_tasks() {
        let text: String = (0..100_000)
            .map(|i| {
                format!(
                    "- [{}] {}.{} Task {i}\n  - **Verify**: `true`\n",
                    if i % 3 == 0 { "x" } else { " " },
                    i / 100 + 1,
                    i % 100 + 1
                )
            })
            .collect();
        let c = parse(&text).counts();
        assert_eq!((c.total, c.completed, c.next_index), (100_000, 33_334, 1));
        assert_eq!(count(&text), c);
    }

    #[test]
    fn set_checked_changes_exactly_one_byte() {
        let text = "- [ ] 1 A   \n- [x] 2 B\n";
        let list = parse(text);
        let out = set_checked(text, &list.tasks[0], true).unwrap();
        assert_eq!(out, "- [x] 1 A   \n- [x] 2 B\n");
        assert!(set_checked(text, &list.tasks[1], true).is_none());
        let out = set_checked(text, &list.tasks[1], false).unwrap();
        assert_eq!(out, "- [ ] 1 A   \n- [ ] 2 B\n");
    }

    #[test]
    fn find_reports_unknown_and_duplicate_ids() {
        let list = parse("- [ ] 1 A\n- [ ] 2 B\n- [ ] 2 C\n");
        assert_eq!(list.find("1").unwrap().title, "A");
        assert_eq!(list.find("9"), Err(FindError::Unknown("9".into())));
        assert_eq!(
            list.find("2"),
            Err(FindError::Duplicate("2".into(), vec![2, 3]))
        );
    }

    #[test]
    fn bold_colon_inside_and_multiline_do() {
        let list = parse("- [ ] 1 A\n  - **Do:** step one\n    - step two\n  - **Files:** a.rs\n");
        let t = &list.tasks[0];
        assert_eq!(t.do_.as_deref(), Some("step one\n- step two"));
        assert_eq!(t.files, ["a.rs"]);
    }
}
