//! The one tasks.md parser (docs/design.md#tasks). Every consumer — snapshot, tasks, the
//! guard, status, the task verbs — reads tasks through this module, so they cannot disagree.
//!
//! A task is a GFM task list item (`- [ ] `, `* [x] `, `+ [X] `, `1. [ ] `; Kiro's `[-]` is
//! in progress, not done; `[ ]*` is optional) at any depth, then an optional id (`1`,
//! `1.2`, `V4`, `T001`), optional markers (`[P]`, `[VERIFY]`, `[FIX 1.2]`) and the title.
//! Its block runs to the next task item or heading. Which lines are items, code (fences,
//! a multi-line string in a task's text) or text is `scan`'s one reading. A nested item
//! is a task of its own that runs before its parent (`next_index`). Pure: text in, data out.

mod blocks;
pub mod format;
mod json;
pub mod lint;
mod scan;
pub mod text;

use scan::{Code, Kind};
use serde::Serialize;
use std::sync::Arc;

pub const MAX_PARALLEL_GROUP: usize = 5;

/// The fields the format reads (lowercase), `No verify` included.
const FIELDS: &[&str] = &[
    "do",
    "files",
    "done when",
    "verify",
    "commit",
    "depends",
    "no verify",
];

fn is_zero(n: &usize) -> bool {
    *n == 0
}

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
    /// Text of the nearest heading above the task (`Phase 1: Core`), if any: shared by the
    /// phase's tasks (a copy per task was a twentieth of `tasks list`).
    pub phase: Option<Arc<str>>,
    #[serde(rename = "do")]
    pub do_: Option<String>,
    pub files: Vec<String>,
    pub done_when: Option<String>,
    pub verify: Option<String>,
    pub commit: Option<String>,
    pub depends: Vec<String>,
    /// Why the task has no Verify (`**No verify**: reason`): a task without either is a
    /// lint error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_verify: Option<String>,
    /// Nesting under earlier task items (0 at the top): a nested item is a sub-task.
    #[serde(skip_serializing_if = "is_zero")]
    pub depth: usize,
    /// Kiro's `[ ]*`: marked optional in the plan (still a task: see DESIGN-NOTES).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
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
    /// Lines that look like tasks but were not read as tasks.
    pub unread: Vec<Unread>,
    /// The 1-based line of a fence that is never closed (it runs to the end of the file).
    pub unclosed_fence: Option<usize>,
    /// A parent's box closes with its required sub-tasks (Kiro: `format::adapt` sets it).
    pub parents_close: bool,
    /// The spec-level `**Final check**: `CMD`` line before the first task, as written.
    pub final_check_line: Option<String>,
    /// The person's default Verify (`state init --default-verify`), which a foreign
    /// format's plan takes as its final check when it declares none (`format::adapt`).
    pub default_check: Option<String>,
}

/// Where the spec's final check (the one command that shows the whole spec done) comes
/// from: the spec-level line, the closing `[VERIFY]` task, or a person's default Verify.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", tag = "from")]
pub enum FinalSource {
    Line,
    Task { id: String },
    Default,
}

/// The spec's final check: its command and where the plan declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinalCheck {
    pub command: String,
    #[serde(flatten)]
    pub source: FinalSource,
}

impl std::fmt::Display for FinalSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FinalSource::Line => f.write_str("the **Final check** line"),
            FinalSource::Task { id } => write!(f, "the Verify of the closing [VERIFY] task {id}"),
            FinalSource::Default => f.write_str("the spec's default Verify"),
        }
    }
}

/// The line a plan without a final check is told to add.
pub const FINAL_CHECK_LINE: &str =
    "**Final check**: `<the command that runs every test of the project>`";

impl TaskList {
    /// The spec's final check: the `**Final check**` line, else the Verify of the last
    /// task marked `[VERIFY]`, else the person's default Verify; `None` when the plan
    /// declares none.
    pub fn final_check(&self) -> Option<FinalCheck> {
        // The template's `<…>` placeholder is no command.
        let placeholder = |c: &&str| c.starts_with('<') && c.ends_with('>');
        let line = self.final_check_line.as_deref().map(verify_command);
        if let Some(command) = line.filter(|c| !c.is_empty() && !placeholder(c)) {
            let source = FinalSource::Line;
            return Some(FinalCheck {
                command: command.to_string(),
                source,
            });
        }
        let closing = self.tasks.iter().rev().find(|t| t.is_verify());
        if let Some((task, command)) = closing.and_then(|t| Some((t, t.verify_command()?))) {
            let source = FinalSource::Task { id: task.label() };
            return Some(FinalCheck {
                command: command.to_string(),
                source,
            });
        }
        let default = self.default_check.as_deref().map(str::trim);
        default.filter(|c| !c.is_empty()).map(|c| FinalCheck {
            command: c.to_string(),
            source: FinalSource::Default,
        })
    }
}

/// Why a line that looks like a task is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnreadKind {
    /// A checkbox item inside a fenced code block.
    InFence,
    /// A checkbox item inside a multi-line string or heredoc of a task's text.
    InString,
    /// A box that is not `[ ]`, `[x]`, `[X]` or `[-]` (`- []`, `-[ ]`, `- [ x]`).
    Malformed,
    /// A heading written as a task (`### Task 1.2: …`): tasks are checkbox items.
    Heading,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Unread {
    /// 1-based line.
    pub line: usize,
    pub kind: UnreadKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub total: usize,
    pub completed: usize,
    pub pending: usize,
    /// Index of the task to run next (`TaskList::next_index`); `total` when all are checked.
    pub next_index: usize,
    /// Lines that look like tasks but were not read as tasks (`TaskList::unread`).
    pub unread: usize,
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
            unread: self.unread.len(),
        }
    }

    /// The task to run next: the first unchecked one, wherever earlier checked ones are;
    /// then, while it has unchecked sub-tasks (nested items), the first of those (a parent
    /// is done after its parts); then, while that task has an unchecked `[FIX x]` task,
    /// that fix (at any depth): a fix runs before its task is retried. `len()` when every
    /// task is checked.
    pub fn next_index(&self) -> usize {
        self.next_index_where(|t| t.checked)
    }

    /// `next_index` once the task at `done` is checked too (what `task complete` moves to).
    pub fn next_index_after(&self, done: usize) -> usize {
        let closed = format::parents_closed_by(self, done);
        self.next_index_where(|t| t.checked || t.index == done || closed.contains(&t.index))
    }

    fn next_index_where(&self, checked: impl Fn(&Task) -> bool) -> usize {
        let mut pick = NextPick::default();
        for t in &self.tasks {
            pick.see(t.index, t.depth, checked(t), t.id.as_deref(), t.fixes());
        }
        pick.finish().unwrap_or(self.tasks.len())
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

/// The choice of the next task, fed every task in file order: `count` streams it without
/// building tasks and `next_index` feeds it the parsed tasks, so the two cannot disagree.
#[derive(Default)]
struct NextPick<'a> {
    /// The first unchecked task, then its first unchecked sub-task, and so on.
    cur: Option<(usize, usize, Option<&'a str>)>,
    /// Still inside `cur`'s sub-tasks (the items after it, deeper than it).
    descending: bool,
    /// Every unchecked `[FIX x]` task.
    fixes: Vec<Pending<'a>>,
}

impl<'a> NextPick<'a> {
    /// Whether an unchecked task at `depth` seen now becomes the pick (its id is kept).
    fn wants(&self, depth: usize) -> bool {
        match self.cur {
            None => true,
            Some((_, cur_depth, _)) => self.descending && depth > cur_depth,
        }
    }

    fn see(
        &mut self,
        index: usize,
        depth: usize,
        checked: bool,
        id: Option<&'a str>,
        fixes: Option<&'a str>,
    ) {
        if !checked && fixes.is_some() {
            self.fixes.push(Pending { index, id, fixes });
        }
        match self.cur {
            None if !checked => {
                self.cur = Some((index, depth, id));
                self.descending = true;
            }
            Some((_, cur_depth, _)) if self.descending => {
                if depth <= cur_depth {
                    self.descending = false;
                } else if !checked {
                    self.cur = Some((index, depth, id));
                }
            }
            _ => {}
        }
    }

    /// Down the chain of unchecked fix tasks from the task chosen. Bounded, so hand-written
    /// `[FIX]` cycles end.
    fn finish(self) -> Option<usize> {
        let (mut index, _, mut id) = self.cur?;
        for _ in 0..self.fixes.len() {
            let fix = self
                .fixes
                .iter()
                .find(|p| p.index != index && p.fixes == id);
            match fix {
                Some(f) => (index, id) = (f.index, f.id),
                None => break,
            }
        }
        Some(index)
    }
}

/// Planned ids have 1–3 levels (`1`, `1.2`, `1.2.3`); fix tasks append one level per fix
/// (`1.2.3.1`), up to three fixes deep, so ids of up to 6 levels are read.
pub const MAX_ID_PARTS: usize = 6;

/// The leading id of a task's text (an optional trailing `.` or `:` is dropped).
fn split_id(rest: &str) -> (Option<String>, &str) {
    let (id, rest) = split_id_str(rest);
    (id.map(str::to_string), rest)
}

/// `split_id` without allocating. The first token is an id when it has digits (`1.2`,
/// `V4`, `VE1`, `T001`, `T003A`: see `is_id`), or when it is 1–4 capitals followed by a
/// marker (`VF [VERIFY]`): a capitalised word that starts a title (`CI checks pass`) is
/// not an id.
fn split_id_str(rest: &str) -> (Option<&str>, &str) {
    let token_end = memchr::memchr2(b' ', b'\t', rest.as_bytes()).unwrap_or(rest.len());
    let token = &rest.as_bytes()[..token_end];
    let bare_len = token.len()
        - token
            .iter()
            .rev()
            .take_while(|&&b| b == b'.' || b == b':')
            .count();
    let bare = &rest[..bare_len];
    let after = &rest[token_end..];
    let after = &after[after
        .bytes()
        .take_while(|&b| b == b' ' || b == b'\t')
        .count()..];
    let letters_only =
        (1..=4).contains(&bare.len()) && bare.bytes().all(|b| b.is_ascii_uppercase());
    if is_id(bare) || (letters_only && !split_marker_strs(after).0.is_empty()) {
        (Some(bare), after)
    } else {
        (None, rest)
    }
}

fn split_markers(rest: &str) -> (Vec<String>, &str) {
    let (markers, rest) = split_marker_strs(rest);
    (markers.into_iter().map(str::to_string).collect(), rest)
}

/// 0–4 capitals, then digits in 1 to `MAX_ID_PARTS` dot-separated parts (none empty),
/// then at most one capital: `1.2`, `V4`, `VE1.1`, `T001`, `T003A`.
fn is_id(text: &str) -> bool {
    let b = text.as_bytes();
    let prefix = b.iter().take_while(|c| c.is_ascii_uppercase()).count();
    let body = &b[prefix..];
    let body = match body.last() {
        Some(c) if c.is_ascii_uppercase() => &body[..body.len() - 1],
        _ => body,
    };
    let (mut parts, mut part_len) = (1, 0);
    for &c in body {
        match c {
            b'0'..=b'9' => part_len += 1,
            b'.' if part_len > 0 => (parts, part_len) = (parts + 1, 0),
            _ => return false,
        }
    }
    prefix <= 4 && part_len > 0 && parts <= MAX_ID_PARTS
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
    (markers, trim(rest))
}

/// `str::trim`, by bytes while the ends are ASCII: decoding chars for `char::is_whitespace`
/// was a twentieth of `tasks list`. Stops at the first non-ASCII byte and leaves the rest
/// to `str::trim`, so Unicode spaces are trimmed as before.
fn trim(s: &str) -> &str {
    // `char::is_whitespace` in ASCII: \t \n \x0b \x0c \r and space.
    let space = |b: &u8| matches!(b, b'\t'..=b'\r' | b' ');
    let b = s.as_bytes();
    let start = b.iter().take_while(|c| space(c)).count();
    let end = b.len() - b[start..].iter().rev().take_while(|c| space(c)).count();
    let inner = &s[start..end];
    match (inner.as_bytes().first(), inner.as_bytes().last()) {
        (Some(f), Some(l)) if !f.is_ascii() || !l.is_ascii() => inner.trim(),
        _ => inner,
    }
}

/// `- **Do**: text` or `- **Do:** text` (any indent, `-` or `*`) → ("Do", "text").
fn field_line(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let t = t.strip_prefix("- ").or_else(|| t.strip_prefix("* "))?;
    let t = t.trim_start().strip_prefix("**")?;
    let close = stars(t)?;
    let name = trim(t[..close].trim_end_matches(':'));
    let after = t[close + 2..].trim_start();
    let value = trim(after.strip_prefix(':').unwrap_or(after));
    Some((name, value))
}

/// Where the first `**` in `t` starts: `str::find("**")` without building a substring
/// searcher for every field line (a tenth of `tasks list`'s parse).
fn stars(t: &str) -> Option<usize> {
    t.as_bytes().windows(2).position(|w| w == b"**")
}

/// `**Final check**: value` (or `**Final check:**`, a list item too) → the value.
fn final_check_line(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let t = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .unwrap_or(t);
    let t = t.trim_start().strip_prefix("**")?;
    let close = t.find("**")?;
    let name = t[..close].trim_end_matches(':').trim();
    if !name.eq_ignore_ascii_case("final check") {
        return None;
    }
    let after = t[close + 2..].trim_start();
    Some(after.strip_prefix(':').unwrap_or(after).trim()).filter(|v| !v.is_empty())
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
    let v = trim(value);
    let inner = v
        .strip_prefix('`')
        .and_then(|s| s.strip_suffix('`'))
        .filter(|s| !s.contains('`'));
    trim(inner.unwrap_or(v)).to_string()
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

/// `None`, `n/a`, `-`, `(none, PR only)`: a field that says there is nothing.
fn means_none(value: &str) -> bool {
    let v = value.trim().trim_start_matches('(').to_ascii_lowercase();
    let first = v
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or("");
    first == "none" || v == "n/a" || v == "-"
}

struct Open {
    task: Task,
    last_content_line: usize,
    field: Option<&'static str>,
    /// The lines of a Verify written as a block under an empty (or `…:`) Verify line.
    verify_block: Option<String>,
}

impl Open {
    fn new(task: Task) -> Open {
        let line = task.line_start;
        Open {
            task,
            last_content_line: line,
            field: None,
            verify_block: None,
        }
    }

    /// A field line: the previous field's block ends, this one may open one.
    fn field(&mut self, name: &str, value: &str) {
        self.end_verify_block();
        self.field = apply_field(&mut self.task, name, value);
        let bare = value.trim_end();
        if self.field == Some("verify")
            && (bare.is_empty() || (bare.ends_with(':') && !bare.contains('`')))
        {
            self.verify_block = Some(String::new());
        }
    }

    /// A line of the block under the field (code or text): kept if it is a Verify block.
    fn block_line(&mut self, line: &str) -> bool {
        match self.verify_block.as_mut() {
            Some(block) => {
                if !block.is_empty() {
                    block.push('\n');
                }
                block.push_str(line.trim());
                true
            }
            None => false,
        }
    }

    fn end_verify_block(&mut self) {
        if let Some(block) = self.verify_block.take().filter(|b| !b.is_empty()) {
            self.task.verify = Some(block);
        }
    }
}

fn apply_field(task: &mut Task, name: &str, value: &str) -> Option<&'static str> {
    // Compared without case and without a lowercased copy of every field name.
    match *FIELDS.iter().find(|k| name.eq_ignore_ascii_case(k))? {
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
            task.commit = Some(strip_code(value)).filter(|v| !v.is_empty() && !means_none(v));
            Some("commit")
        }
        "depends" => {
            task.depends = split_depends(value);
            Some("depends")
        }
        "no verify" => {
            task.no_verify = Some(value.to_string());
            Some("no verify")
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

impl Open {
    /// The task, its block ended at its last non-blank line.
    fn close(mut self) -> Task {
        self.end_verify_block();
        self.task.line_end = self.last_content_line;
        self.task
    }
}

/// A line that looks like a task and is not one, by its kind.
#[inline]
fn unread_kind(kind: &Kind<'_>) -> Option<UnreadKind> {
    match *kind {
        Kind::Code(Code::Fenced, line) => scan::checkbox(line).map(|_| UnreadKind::InFence),
        Kind::Code(Code::String, line) => scan::checkbox(line).map(|_| UnreadKind::InString),
        Kind::Heading(line) => heading_task(line).then_some(UnreadKind::Heading),
        Kind::Other { line, bracket } => {
            (bracket && malformed_box(line)).then_some(UnreadKind::Malformed)
        }
        _ => None,
    }
}

/// `### Task 1.2: …` or `## [ ] …`: a task written as a heading.
fn heading_task(line: &str) -> bool {
    let text = line.trim_start_matches('#').trim_start();
    let after_task = text.strip_prefix("Task ").map(str::trim_start);
    after_task.is_some_and(|t| t.starts_with(|c: char| c.is_ascii_digit()))
        || text.starts_with("[ ]")
        || text.starts_with("[x]")
}

/// A list item whose box is not one the format reads: `- []`, `-[ ]`, `- [ x]`, `- [o]`.
/// The scanner tells which lines hold a `[` (`Kind::Other`), so only those are read here.
fn malformed_box(line: &str) -> bool {
    let t = &line[scan::indent_of(line)..];
    if !matches!(t.as_bytes().first(), Some(b'-' | b'*' | b'+')) {
        return false;
    }
    let after = &t[1..];
    // `trim_start` by bytes while they are ASCII (a field line, `- **Do**`, ends at its `*`).
    let blank = after
        .bytes()
        .take_while(|b| matches!(b, b'\t'..=b'\r' | b' '))
        .count();
    let inner = match after.as_bytes().get(blank) {
        Some(b'[') => &after[blank + 1..],
        Some(c) if !c.is_ascii() => match after.trim_start().strip_prefix('[') {
            Some(inner) => inner,
            None => return false,
        },
        _ => return false,
    };
    let Some(close) = inner.find(']') else {
        return false;
    };
    let mark = &inner[..close];
    let looks_like_box = mark.chars().count() <= 3
        && mark
            .chars()
            .all(|c| matches!(c, ' ' | 'x' | 'X' | '-' | '*' | '/' | '✓' | '✔' | 'o' | 'v'));
    // A real box, or a link such as `- [x](url)`: not a malformed box.
    looks_like_box && scan::checkbox(line).is_none() && !inner[close + 1..].starts_with('(')
}

/// Counts only, without building tasks: what `tasks count` needs, at a fraction of the cost
/// of `parse` on a large file. Always equal to `parse(text).counts()`.
pub fn count(text: &str) -> Counts {
    let (mut total, mut completed, mut unread) = (0, 0, 0);
    let mut pick = NextPick::default();
    // One search of the text instead of one per task when no `[FIX ` is anywhere in it.
    let any_fix = memchr::memmem::find(text.as_bytes(), b"[FIX ").is_some();
    // `for_each`, not `for`: the scanner's `fold` keeps the whole walk in this loop.
    scan::scan(text).for_each(|(_, kind)| {
        if let Kind::Task(item) = kind {
            if item.checked {
                completed += 1;
                pick.see(total, item.depth, true, None, None);
            } else if !(pick.wants(item.depth) || (any_fix && may_fix(item.rest))) {
                // Not a fix and not the pick: its id is never asked for.
                pick.see(total, item.depth, false, None, None);
            } else {
                let (id, rest) = split_id_str(item.rest);
                let fixes = split_marker_strs(rest)
                    .0
                    .into_iter()
                    .find_map(|m| m.strip_prefix("FIX "));
                pick.see(total, item.depth, false, id, fixes);
            }
            total += 1;
        } else if unread_kind(&kind).is_some() {
            unread += 1;
        }
    });
    Counts {
        total,
        completed,
        pending: total - completed,
        next_index: pick.finish().unwrap_or(total),
        unread,
    }
}

/// Whether a task's text may hold a `[FIX x]` marker: a marker's name is the text between
/// its brackets, so one that starts `FIX ` is a `[FIX ` in the text. `[P]`, the marker of
/// most tasks in a parallel plan, is not.
fn may_fix(rest: &str) -> bool {
    let b = rest.as_bytes();
    let mut at = 0;
    while let Some(i) = scan::find(b'[', &b[at..]) {
        at += i + 1;
        if b[at..].starts_with(b"FIX ") {
            return true;
        }
    }
    false
}

/// The counts and the next task's label and title, without building tasks: what the status
/// line shows on every refresh. Always equal to `parse(text)`'s `counts()` and `next()`.
pub fn headline(text: &str) -> (Counts, Option<(String, String)>) {
    let counts = count(text);
    let next = scan::scan(text)
        .filter_map(|(_, kind)| match kind {
            Kind::Task(item) => Some(item.rest),
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
    let mut iter = iter(text);
    let tasks = iter.by_ref().collect();
    TaskList {
        tasks,
        bom: text.starts_with('\u{feff}'),
        crlf: text.contains("\r\n"),
        unread: iter.unread,
        unclosed_fence: iter.scanner.unclosed.0,
        parents_close: false,
        final_check_line: iter.final_check,
        default_check: None,
    }
}

/// The tasks of `text` one at a time, as `parse` reads them: `tasks list` streams a
/// million tasks without holding them (the counts come from `count` first).
pub fn iter(text: &str) -> Tasks<'_> {
    Tasks {
        scanner: scan::scan(text),
        open: None,
        index: 0,
        section: 0,
        phase: None,
        unread: Vec::new(),
        final_check: None,
    }
}

pub struct Tasks<'a> {
    scanner: scan::Scanner<'a>,
    open: Option<Open>,
    index: usize,
    section: usize,
    phase: Option<Arc<str>>,
    /// The lines read so far that look like tasks and are not.
    pub unread: Vec<Unread>,
    /// The `**Final check**` line's value, read before the first task.
    pub final_check: Option<String>,
}

impl Iterator for Tasks<'_> {
    type Item = Task;

    fn next(&mut self) -> Option<Task> {
        for (number, kind) in self.scanner.by_ref() {
            if let Some(kind) = unread_kind(&kind) {
                self.unread.push(Unread { line: number, kind });
            }
            let line = match kind {
                // A comment is neither part of a task nor the end of one.
                Kind::Code(Code::Comment, _) => continue,
                Kind::Code(code, line) => {
                    if let Some(o) = self.open.as_mut() {
                        o.last_content_line = number;
                        if code != Code::Fence {
                            o.block_line(line);
                        }
                    }
                    continue;
                }
                Kind::Heading(line) => {
                    self.section += 1;
                    let phase = line.trim_start_matches('#').trim();
                    self.phase = (!phase.is_empty()).then(|| Arc::from(phase));
                    match self.open.take() {
                        Some(done) => return Some(done.close()),
                        None => continue,
                    }
                }
                Kind::Task(item) => {
                    let task = new_task(self.index, item, number, &self.phase, self.section);
                    self.index += 1;
                    match self.open.replace(Open::new(task)) {
                        Some(done) => return Some(done.close()),
                        None => continue,
                    }
                }
                Kind::Other { line, .. } => line,
            };
            let Some(o) = self.open.as_mut() else {
                if self.index == 0 && self.final_check.is_none() {
                    self.final_check = final_check_line(line).map(str::to_string);
                }
                continue;
            };
            if trim(line).is_empty() {
                continue;
            }
            o.last_content_line = number;
            if let Some((name, value)) = field_line(line) {
                o.field(name, value);
            } else if !o.block_line(line) {
                if let Some(field) = o.field {
                    continue_field(&mut o.task, field, line);
                }
            }
        }
        self.open.take().map(Open::close)
    }
}

fn new_task(
    index: usize,
    item: scan::Item<'_>,
    line: usize,
    phase: &Option<Arc<str>>,
    section: usize,
) -> Task {
    let (id, rest) = split_id(item.rest);
    let (markers, title) = split_markers(rest);
    Task {
        index,
        id,
        title: title.to_string(),
        checked: item.checked,
        markers,
        line_start: line,
        line_end: line,
        phase: phase.clone(),
        do_: None,
        files: Vec::new(),
        done_when: None,
        verify: None,
        commit: None,
        depends: Vec::new(),
        no_verify: None,
        depth: item.depth,
        optional: item.optional,
        mark_offset: item.mark,
        section,
    }
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
    #[test]
    fn trim_agrees_with_str_trim() {
        let ends = [
            "",
            " ",
            "\t",
            "\x0b",
            "\x0c",
            "\r\n",
            "\u{a0}",
            "\u{3000}",
            " \u{2003} ",
            "é",
            "x",
        ];
        for a in ends {
            for mid in ["", "a", "a b", "\u{a0}", "é", " "] {
                for b in ends {
                    let s = format!("{a}{mid}{b}");
                    assert_eq!(super::trim(&s), s.trim(), "{s:?}");
                }
            }
        }
    }

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
        // Line ends are found a word at a time: texts across word and 64-byte edges, with
        // bytes next to `\n` in value (`\x0b`, `\t`, `\u{8a}`'s UTF-8).
        let mut long = Vec::new();
        for len in [63, 64, 65, 127, 128, 129, 200] {
            for nl in [0, 1, 7, 8, 31, 62, 63, 64, 65, 126, 127, 128] {
                let mut t: String = (0..len).map(|i| ['a', '\x0b', '\t', 'b'][i % 4]).collect();
                if nl < len {
                    t.replace_range(nl..=nl, "\n");
                }
                t.push_str("\u{8a}\n\n\u{8a}");
                long.push(t);
            }
        }
        let short = ["", "a", "a\n", "a\nb", "\n\n", "a\r\nb\r\n", "é\nü", "x\r"];
        for text in short.into_iter().chain(long.iter().map(String::as_str)) {
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
                scan::lines_with_offsets(text).collect::<Vec<_>>(),
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
    fn checkboxes_in_an_html_comment_are_neither_tasks_nor_unread() {
        let text = "# Tasks\n<!--\n- [ ] 1.1 Example\n  - **Verify**: `false`\n-->\n- [ ] 1.1 Real\n  - **Verify**: `true`\n   <!-- one line: - [ ] 9 not a task -->\n  - **Files**: a.rs\n<!-- - [ ] 8\n- [x] 2 After\n-->\n- [ ] 3 Last\n";
        let list = parse(text);
        assert_eq!(ids(&list), ["1.1", "3"]);
        assert!(list.unread.is_empty(), "{:?}", list.unread);
        assert_eq!(list.tasks[0].verify.as_deref(), Some("true"));
        assert_eq!(list.tasks[0].files, ["a.rs"]);
        assert_eq!(count(text), list.counts());
        // An opener never closed hides nothing; one indented 4 is code text, not a comment.
        let text = "<!-- draft\n- [ ] 1 A\n    <!--\n- [ ] 2 B\n";
        assert_eq!(ids(&parse(text)), ["1", "2"]);
        assert_eq!(count(text).total, 2);
    }

    #[test]
    fn fenced_checkboxes_are_not_tasks_and_are_counted_as_unread() {
        let text = "- [ ] 1 Real\n```md\n- [ ] fenced\n```\n~~~~\n- [ ] tilde\n~~~\n- [ ] still fenced\n~~~~\n- [x] 2 Real too\n";
        let list = parse(text);
        assert_eq!(ids(&list), ["1", "2"]);
        assert_eq!(list.counts().total, 2);
        assert_eq!(list.counts().unread, 3);
        assert_eq!(
            list.unread[0],
            Unread {
                line: 3,
                kind: UnreadKind::InFence
            }
        );
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
                next_index: 0,
                unread: 0
            }
        );
        let list = parse("# Title\n\nSome prose.\n*[ ] not a list item\n");
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

    // Issue 26: each class of real task file the old reader misread silently.

    #[test]
    fn a_heredoc_or_multi_line_string_in_a_task_holds_no_tasks() {
        let text = "- [ ] 4.1 Create PR\n  - **Do**: `gh pr create --body \"$(cat <<'EOF'\n## Summary\n- [ ] CI checks pass\nEOF\n)\"`\n  - **Verify**: `gh pr view`\n- [ ] 4.2 Merge\n  - **Verify**: `gh pr checks --body \"## Plan\n- [ ] Verify it\n\\`x\\` escaped\n- [x] Done\" && echo ok`\n- [ ] 4.3 Last\n";
        let list = parse(text);
        assert_eq!(ids(&list), ["4.1", "4.2", "4.3"]);
        assert_eq!(list.tasks[0].verify.as_deref(), Some("gh pr view"));
        assert_eq!(
            list.tasks[0].phase, None,
            "the string's `## Summary` is no heading"
        );
        let kinds: Vec<_> = list.unread.iter().map(|u| (u.line, u.kind)).collect();
        assert_eq!(
            kinds,
            [
                (4, UnreadKind::InString),
                (10, UnreadKind::InString),
                (12, UnreadKind::InString)
            ]
        );
        assert_eq!(count(text), list.counts());
        // A backtick or heredoc that never closes hides nothing.
        let open =
            "- [ ] 1 A\n  - **Do**: run `this\n- [ ] 2 B\n  - **Do**: cat <<EOF\n- [ ] 3 C\n";
        assert_eq!(ids(&parse(open)), ["1", "2", "3"]);
    }

    #[test]
    fn nested_items_are_sub_tasks_run_before_their_parent() {
        let text = "- [x] 1.1 Parent\n  - [ ] 1.1.1 Unfinished\n  - [x] 1.1.2 Done\n- [ ] 2 Next\n";
        let list = parse(text);
        assert_eq!(ids(&list), ["1.1", "1.1.1", "1.1.2", "2"]);
        assert_eq!(list.tasks[1].depth, 1);
        let c = list.counts();
        assert_eq!((c.total, c.pending, c.next_index), (4, 2, 1));
        assert!(!list.all_checked());
        // An unchecked parent waits for its unchecked parts, deepest first.
        let text = "- [ ] 1 Parent\n  - [x] 1.1 A\n  - [ ] 1.2 B\n    - [ ] 1.2.1 C\n- [ ] 2 D\n";
        let list = parse(text);
        assert_eq!(list.next().unwrap().label(), "1.2.1");
        assert_eq!(list.tasks[list.next_index_after(3)].label(), "1.2");
        assert_eq!(count(text), list.counts());
        let done = parse(&text.replace("[ ] 1.2.1", "[x] 1.2.1"));
        assert_eq!(done.tasks[done.next_index_after(2)].label(), "1");
        assert_eq!(headline(text).1.unwrap().0, "1.2.1");
    }

    #[test]
    fn kiro_in_progress_and_optional_boxes_are_tasks_not_done() {
        let text =
            "- [-] 1. Started\n- [ ]* 2. Optional tests\n- [x]* 3. Optional done\n- [x] 4. Done\n";
        let list = parse(text);
        assert_eq!(ids(&list), ["1", "2", "3", "4"]);
        assert!(!list.tasks[0].checked && list.tasks[1].optional && list.tasks[2].checked);
        assert_eq!(list.tasks[1].title, "Optional tests");
        let c = list.counts();
        assert_eq!((c.total, c.completed, c.next_index), (4, 2, 0));
        // Ticking `[-]` writes one byte, as for any box.
        let out = set_checked(text, &list.tasks[0], true).unwrap();
        assert_eq!(out, text.replacen("[-]", "[x]", 1));
    }

    #[test]
    fn ids_with_letters_keep_their_markers() {
        let text = "- [ ] V4 [VERIFY] Gate\n- [ ] VE1 [VERIFY] E2E\n- [ ] VF [VERIFY] Final\n- [ ] T001 [P] Par\n- [ ] T003A [VERIFY] Check\n- [ ] CI checks pass\n- [ ] TXXX Code cleanup\n- [ ] 2FA support\n";
        let list = parse(text);
        let got: Vec<(Option<&str>, &[String])> = list
            .tasks
            .iter()
            .map(|t| (t.id.as_deref(), t.markers.as_slice()))
            .collect();
        let v = vec!["VERIFY".to_string()];
        let p = vec!["P".to_string()];
        let none: Vec<String> = Vec::new();
        assert_eq!(
            got,
            [
                (Some("V4"), v.as_slice()),
                (Some("VE1"), v.as_slice()),
                (Some("VF"), v.as_slice()),
                (Some("T001"), p.as_slice()),
                (Some("T003A"), v.as_slice()),
                (None, none.as_slice()),
                (None, none.as_slice()),
                (None, none.as_slice()),
            ]
        );
        assert_eq!(list.tasks[5].title, "CI checks pass");
        assert_eq!(count(text), list.counts());
    }

    #[test]
    fn an_unclosed_fence_is_reported_with_what_it_hides() {
        let text = "- [ ] 1 A\n\n```bash\necho\n\n- [ ] 2 B\n- [x] 3 C\n";
        let list = parse(text);
        assert_eq!(ids(&list), ["1"]);
        assert_eq!(list.unclosed_fence, Some(3));
        assert_eq!(list.counts().unread, 2);
        assert_eq!(count(text), list.counts());
        // Found by the fuzz run: a fence or string opener on a last line without `\n`.
        for text in [
            "- [ ] 1 A\n```",
            "- [ ] 1 A\n  - **Do**: `x",
            "- [ ] 1 A\n  ~~~\r",
        ] {
            assert_eq!(count(text), parse(text).counts(), "{text:?}");
        }
        // A fence inside a list item ends with the item, as in CommonMark.
        let text = "- [ ] 1 A\n  - **Do**:\n    ```\n    x\n- [ ] 2 B\n";
        let list = parse(text);
        assert_eq!(
            (ids(&list), list.unclosed_fence),
            (vec!["1".into(), "2".into()], None)
        );
    }

    #[test]
    fn gfm_task_items_and_field_forms() {
        let text =
            "* [ ] 1 Star\n+ [x] 2 Plus\n- [\t] 3 Tab\n1. [ ] 4 Ordered\n- [ ]\t5 Tab after\n";
        let list = parse(text);
        assert_eq!(ids(&list), ["1", "2", "3", "4", "5"]);
        assert_eq!(list.counts().completed, 1);
        let text = "- [ ] 1 A\n  - **Commit**: None\n- [ ] 2 B\n  - **Commit**: (none, PR only)\n";
        assert!(parse(text).tasks.iter().all(|t| t.commit.is_none()));
        let text = "- [ ] 1 Fenced\n  - **Verify**:\n    ```bash\n    cargo test\n    cargo clippy\n    ```\n  - **Commit**: `x`\n- [ ] 2 Indented\n  - **Verify**:\n      npm test\n- [ ] 3 Said then shown\n  - **Verify**: Run the suite:\n    ```\n    make check\n    ```\n";
        let list = parse(text);
        let verify: Vec<Option<&str>> = list.tasks.iter().map(|t| t.verify_command()).collect();
        assert_eq!(
            verify,
            [
                Some("cargo test\ncargo clippy"),
                Some("npm test"),
                Some("make check")
            ]
        );
        assert_eq!(list.tasks[0].commit.as_deref(), Some("x"));
    }

    #[test]
    fn malformed_boxes_and_heading_tasks_are_unread() {
        let text = "### Task 1.1: Heading task\n- []  1 Empty box\n-[ ] 2 No space\n- [ x] 3 Spaced\n- [link](url)\n- [ ] 4 Real\n";
        let list = parse(text);
        assert_eq!(ids(&list), ["4"]);
        let kinds: Vec<_> = list.unread.iter().map(|u| (u.line, u.kind)).collect();
        assert_eq!(
            kinds,
            [
                (1, UnreadKind::Heading),
                (2, UnreadKind::Malformed),
                (3, UnreadKind::Malformed),
                (4, UnreadKind::Malformed)
            ]
        );
        assert_eq!(count(text), list.counts());
    }
}
