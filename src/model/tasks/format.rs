//! Specs written by other tools (issue 28): spec-kit (`specs/NNN-feature/tasks.md`), Kiro
//! and cc-sdd (`.kiro/specs/<name>/`), OpenSpec (`openspec/changes/<change>/tasks.md`).
//! The tasks are read by the one parser (`super::parse`); this file says which format a
//! file is and fills in, from the format's own conventions, what specrun's format writes as
//! fields (Files, Depends, Done when, Do), noting each thing it read and each it assumed.
//! Pure: the path, the text, its parse and the files beside it in, tasks and notes out.

use serde::Serialize;

use super::{Task, TaskList};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Specrun,
    SpecKit,
    Kiro,
    #[serde(rename = "openspec")]
    OpenSpec,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Specrun => "specrun",
            Format::SpecKit => "spec-kit",
            Format::Kiro => "kiro",
            Format::OpenSpec => "openspec",
        }
    }

    /// The byte a done box holds in this format's own files (spec-kit's implement rule
    /// writes `[X]`).
    pub fn done_mark(self) -> u8 {
        match self {
            Format::SpecKit => b'X',
            _ => b'x',
        }
    }

    pub fn is_foreign(self) -> bool {
        self != Format::Specrun
    }
}

/// The format a tasks file's place says, before its text is read: `.kiro/specs/<name>/` is
/// Kiro's (and cc-sdd's), `openspec/changes/<change>/` OpenSpec's (its `archive/` too).
/// `None`: a `specs/<name>/` folder, specrun's or spec-kit's (`detect` tells them apart).
pub fn by_path(path: &str) -> Option<Format> {
    let parts: Vec<&str> = path.split(['/', '\\']).filter(|p| !p.is_empty()).collect();
    let has = |a: &str, b: &str| parts.windows(2).any(|w| w[0] == a && w[1] == b);
    if has(".kiro", "specs") {
        Some(Format::Kiro)
    } else if has("openspec", "changes") {
        Some(Format::OpenSpec)
    } else {
        None
    }
}

/// The format of a tasks file: by its place, else spec-kit when at least half its tasks
/// have a `T001`-style id, none has another id and none carries a specrun field (Do,
/// Files, Done when, Verify, …; a spec-kit checklist after the tasks has no ids), else
/// specrun's own.
pub fn detect(path: &str, list: &TaskList) -> Format {
    detect_in(path, list.tasks.iter())
}

/// `detect` over tasks one at a time (`tasks list` streams them): a specrun file ends the
/// walk at its first task with a field or an id that is not spec-kit's.
pub fn detect_in<T: std::borrow::Borrow<Task>>(
    path: &str,
    tasks: impl IntoIterator<Item = T>,
) -> Format {
    if let Some(f) = by_path(path) {
        return f;
    }
    // `T001`, and the template's `TXXX`.
    let speckit_id = |id: &str| {
        id.len() > 1
            && id.starts_with('T')
            && id[1..].bytes().all(|b| b.is_ascii_digit() || b == b'X')
    };
    let has_fields = |t: &Task| {
        t.do_.is_some()
            || t.verify.is_some()
            || t.done_when.is_some()
            || t.commit.is_some()
            || t.no_verify.is_some()
            || !t.files.is_empty()
            || !t.depends.is_empty()
    };
    let (mut total, mut with_id) = (0, 0);
    for t in tasks {
        let t = t.borrow();
        if !t.id.as_deref().is_none_or(speckit_id) || has_fields(t) {
            return Format::Specrun;
        }
        total += 1;
        with_id += usize::from(t.id.is_some());
    }
    if with_id > 0 && with_id * 2 >= total {
        Format::SpecKit
    } else {
        Format::Specrun
    }
}

/// Whether the fast scan's counts and next task (`tasks::count`, `tasks::headline`) can
/// differ from the file read in its format: only Kiro's, which nests `1.1` under `1.` at
/// one indent and takes `(P)` out of a title. spec-kit's and OpenSpec's reading adds
/// fields (Files, Depends, Verify) and moves no box, depth or title, so the per-turn
/// readers keep the fast scan for them and for specrun's own format.
pub fn reshapes(path: &str) -> bool {
    by_path(path) == Some(Format::Kiro)
}

/// Whether a note is what the file said or what specrun supplied in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoteKind {
    Read,
    Assumed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    pub kind: NoteKind,
    pub message: String,
}

fn read(message: String) -> Note {
    Note {
        kind: NoteKind::Read,
        message,
    }
}

fn assumed(message: String) -> Note {
    Note {
        kind: NoteKind::Assumed,
        message,
    }
}

/// The files beside the tasks file that a format's reading uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct Beside<'a> {
    /// Kiro's requirements.md (numbered EARS criteria).
    pub requirements: Option<&'a str>,
    /// The Verify a person set for this spec's tasks that have none (`state init
    /// --default-verify`).
    pub default_verify: Option<&'a str>,
    /// OpenSpec's delta specs in the change (`specs/<capability>/spec.md`, one after the
    /// other): requirements and their scenarios.
    pub deltas: Option<&'a str>,
}

/// Fill in `list` from the format's conventions; the notes say what was read and assumed.
/// Specrun's own format is left as it is (no notes).
pub fn adapt(format: Format, text: &str, list: &mut TaskList, beside: Beside<'_>) -> Vec<Note> {
    let mut notes = Vec::new();
    match format {
        Format::Specrun => return notes,
        Format::SpecKit => speckit(list, &mut notes),
        Format::Kiro => kiro(text, list, beside.requirements, &mut notes),
        Format::OpenSpec => openspec(list, beside.deltas, &mut notes),
    }
    list.parents_close = format == Format::Kiro;
    // A person's default Verify serves as the final check of a plan that declares none.
    list.default_check = beside.default_verify.map(str::to_string);
    verify_default(list, beside.default_verify, &mut notes);
    notes
}

/// OpenSpec: nested numbered checkboxes as read. Its scenarios (`#### Scenario:` under a
/// `### Requirement:` of the change's delta specs) are the change's criteria, but no task
/// links to one (the format has no `_Requirements:_`): none is taken as a task's
/// criterion, and the note says so rather than guess from words.
fn openspec(list: &TaskList, deltas: Option<&str>, notes: &mut Vec<Note>) {
    notes.push(read(format!(
        "{} numbered checkbox item(s); a nested item runs before the item it is under",
        list.tasks.len()
    )));
    let found = deltas.map(scenarios).unwrap_or_default();
    if found.is_empty() {
        notes.push(assumed(
            "no scenarios in the change's specs/: a task's criteria are its text".to_string(),
        ));
        return;
    }
    let mut requirements: Vec<&str> = found.iter().map(|(r, _)| r.as_str()).collect();
    requirements.dedup();
    notes.push(read(format!(
        "{} scenario(s) under {} requirement(s) in the change's specs/",
        found.len(),
        requirements.len()
    )));
    notes.push(assumed(
        "OpenSpec links no task to a requirement: no scenario is taken as a task's criterion (a task's criteria are its text; check the scenarios in the execution's final check)"
            .to_string(),
    ));
}

/// The trimmed lines of a requirements or spec file outside its fenced code.
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut in_fence = false;
    text.lines().map(str::trim).filter(move |t| {
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            return false;
        }
        !in_fence
    })
}

/// OpenSpec's delta specs: each `#### Scenario: Name` with the `### Requirement: Name` it
/// is under, in order (fenced code skipped).
pub fn scenarios(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut req: Option<String> = None;
    for t in prose_lines(text) {
        if let Some(name) = t.strip_prefix("### Requirement:") {
            req = Some(name.trim().to_string());
        } else if let Some(name) = t.strip_prefix("#### Scenario:") {
            if let Some(r) = &req {
                out.push((r.clone(), name.trim().to_string()));
            }
        } else if t.starts_with("## ") || t.starts_with("### ") {
            req = None;
        }
    }
    out
}

/// Tasks without Verify take the person's default; without one, the note says so (and
/// `tasks lint` reports each such task).
fn verify_default(list: &mut TaskList, default: Option<&str>, notes: &mut Vec<Note>) {
    let bare: Vec<usize> = list
        .tasks
        .iter()
        .filter(|t| t.verify.is_none() && t.no_verify.is_none())
        .map(|t| t.index)
        .collect();
    if bare.is_empty() {
        return;
    }
    match default.map(str::trim).filter(|d| !d.is_empty()) {
        Some(cmd) => {
            for &i in &bare {
                list.tasks[i].verify = Some(cmd.to_string());
            }
            notes.push(assumed(format!(
                "the format has no Verify per task: {} task(s) take the spec's default Verify `{cmd}` (a person's choice, set at `state init`)",
                bare.len()
            )));
        }
        None => notes.push(assumed(format!(
            "the format has no Verify per task and this spec has no default: {} task(s) have no Verify (the spec's default Verify is a person's choice; or a `**Verify**:` line under a task)",
            bare.len()
        ))),
    }
}

/// spec-kit: `[X]` done, `[P]` parallel (already read), a phase's tasks depend on the
/// tasks of the phase before, file paths in a task's text are its Files.
fn speckit(list: &mut TaskList, notes: &mut Vec<Note>) {
    let mut phases: Vec<(String, Vec<String>)> = Vec::new();
    for t in &list.tasks {
        let phase = t.phase.as_deref().unwrap_or_default().to_string();
        match phases.last_mut() {
            Some((p, ids)) if *p == phase => ids.push(t.label()),
            _ => phases.push((phase, vec![t.label()])),
        }
    }
    let (mut with_files, mut with_depends) = (0, 0);
    let mut phase_at = 0;
    for t in list.tasks.iter_mut() {
        let phase = t.phase.as_deref().unwrap_or_default().to_string();
        while phases.get(phase_at).is_some_and(|(p, _)| *p != phase) {
            phase_at += 1;
        }
        if t.files.is_empty() {
            t.files = paths_in(&t.title);
            with_files += usize::from(!t.files.is_empty());
        }
        if t.depends.is_empty() && phase_at > 0 {
            t.depends = phases[phase_at - 1].1.clone();
            with_depends += 1;
        }
    }
    let parallel = list.tasks.iter().filter(|t| t.is_parallel()).count();
    notes.push(read(format!(
        "{} task(s) in {} phase(s); `[X]`/`[x]` done, {parallel} marked `[P]`",
        list.tasks.len(),
        phases.len()
    )));
    notes.push(read(format!(
        "{with_files} task(s) name file paths in their text: those are their Files"
    )));
    if with_depends > 0 {
        notes.push(assumed(format!(
            "phases block each other: {with_depends} task(s) depend on every task of the phase before"
        )));
    }
    notes.push(assumed(
        "no Done when in the format: a task's criteria are its text".to_string(),
    ));
}

/// Tokens of `text` that look like file paths: `src/models/user.py`, `` `tests/x.rs` ``,
/// `README.md` (a dot and a short alphabetic extension, or a slash); no URLs.
pub fn paths_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in text.split_whitespace() {
        let token = raw
            .trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')' | '[' | ']'))
            .trim_end_matches([',', '.', ';', ':']);
        if token.is_empty() || token.contains("://") || token.starts_with('-') {
            continue;
        }
        let name = token.rsplit('/').next().unwrap_or(token);
        let ext = name.rsplit_once('.');
        let has_ext = ext.is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.bytes().all(|b| b.is_ascii_alphanumeric())
                && ext.bytes().any(|b| b.is_ascii_alphabetic())
        });
        let pathy = (token.contains('/') && token.len() > 1 && !token.ends_with("/"))
            || token.ends_with('/') && token.len() > 1;
        if (has_ext || pathy)
            && token.bytes().all(|b| b.is_ascii_graphic())
            && !out.iter().any(|o| o == token)
        {
            out.push(token.to_string());
        }
    }
    out
}

/// A Kiro meta line under a task: `- _Requirements: 1.1, 1.2_` → ("requirements", "1.1, 1.2").
fn meta_line(line: &str) -> Option<(String, &str)> {
    let t = line.trim();
    let t = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .unwrap_or(t)
        .trim();
    let t = t.strip_prefix('_')?.strip_suffix('_')?;
    let (key, value) = t.split_once(':')?;
    Some((key.trim().to_ascii_lowercase(), value.trim()))
}

/// `1.1, 1.2 and 2.3` → ["1.1", "1.2", "2.3"]: the tokens that are numbered ids.
fn numbered_ids(value: &str) -> Vec<String> {
    value
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(|s| s.trim_matches(|c: char| matches!(c, '`' | '(' | ')' | '.')))
        .filter(|s| {
            !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && s.bytes().any(|b| b.is_ascii_digit())
        })
        .map(str::to_string)
        .collect()
}

/// Kiro's requirements.md: under `### Requirement N` (or a heading that starts `N.` / `N:`),
/// the numbered items of its acceptance criteria are `N.1`, `N.2`, …
pub fn ears_items(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut req: Option<String> = None;
    for t in prose_lines(text) {
        if t.starts_with('#') {
            let h = t.trim_start_matches('#').trim();
            let h = h
                .strip_prefix("Requirement")
                .map(str::trim_start)
                .unwrap_or(h);
            let num: String = h.chars().take_while(char::is_ascii_digit).collect();
            let after = &h[num.len()..];
            let numbered = !num.is_empty()
                && (after.is_empty() || after.starts_with([':', '.', ' ', ')', '-']));
            if numbered {
                req = Some(num);
            } else if !h.to_ascii_lowercase().contains("acceptance") {
                // A heading that is neither a requirement nor its criteria ends it.
                if t.starts_with("## ") || t.starts_with("### ") {
                    req = None;
                }
            }
            continue;
        }
        let Some(r) = &req else { continue };
        let n: String = t.chars().take_while(char::is_ascii_digit).collect();
        if n.is_empty() {
            continue;
        }
        if let Some(item) = t[n.len()..].strip_prefix(". ") {
            out.push((format!("{r}.{n}"), item.trim().to_string()));
        }
    }
    out
}

/// Kiro and cc-sdd: nested `- [ ] 3.` over `- [ ] 3.1`, `[-]` in progress, `[ ]*` optional,
/// `(P)`, `_Requirements: 1.1_` → the EARS items as the task's Done when, `_Depends:_`, the
/// description bullets → Do; a parent closes when its required children are done.
fn kiro(text: &str, list: &mut TaskList, requirements: Option<&str>, notes: &mut Vec<Note>) {
    let lines: Vec<&str> = text.lines().collect();
    let items = requirements.map(ears_items).unwrap_or_default();
    let (mut criteria, mut missing, mut unnumbered, mut parallel, mut depends) =
        (0, Vec::new(), 0, 0, 0);
    nest_by_id(list);
    for t in list.tasks.iter_mut() {
        if let Some(rest) = t.title.strip_prefix("(P)") {
            t.title = rest.trim_start().to_string();
            t.markers.push("P".to_string());
            parallel += 1;
        } else if let Some(rest) = t.title.strip_suffix("(P)") {
            t.title = rest.trim_end().to_string();
            t.markers.push("P".to_string());
            parallel += 1;
        }
        let block = lines
            .get(t.line_start..t.line_end.min(lines.len()))
            .unwrap_or(&[]);
        let mut done: Vec<String> = Vec::new();
        let mut brief: Vec<String> = Vec::new();
        for line in block {
            match meta_line(line) {
                Some((key, value)) if key.starts_with("requirement") => {
                    let ids = numbered_ids(value);
                    if ids.is_empty() {
                        unnumbered += 1;
                    }
                    for id in ids {
                        match items.iter().find(|(i, _)| *i == id) {
                            Some((_, text)) => done.push(format!("- Requirement {id}: {text}")),
                            None if requirements.is_some() => {
                                missing.push(format!("{} → {id}", t.label()))
                            }
                            None => {}
                        }
                    }
                }
                Some((key, value)) if key.starts_with("depend") && t.depends.is_empty() => {
                    t.depends = numbered_ids(value);
                    depends += usize::from(!t.depends.is_empty());
                }
                Some(_) => {}
                None if t.do_.is_none() && !line.trim().is_empty() => {
                    brief.push(line.trim().to_string());
                }
                None => {}
            }
        }
        if t.done_when.is_none() && !done.is_empty() {
            t.done_when = Some(done.join("\n"));
            criteria += 1;
        }
        if t.do_.is_none() && !brief.is_empty() {
            t.do_ = Some(brief.join("\n"));
        }
    }
    let nested = list.tasks.iter().filter(|t| t.depth > 0).count();
    let optional = list.tasks.iter().filter(|t| t.optional).count();
    notes.push(read(format!(
        "{} task(s), {nested} nested under another; a parent's box is ticked when its required (not `*` optional) sub-tasks are done; {optional} optional",
        list.tasks.len()
    )));
    if parallel > 0 || depends > 0 {
        notes.push(read(format!(
            "{parallel} task(s) marked `(P)`, {depends} with `_Depends:_`"
        )));
    }
    match requirements {
        Some(_) => notes.push(read(format!(
            "{criteria} task(s) take their criteria from requirements.md's numbered items ({} found) through `_Requirements:_`",
            items.len()
        ))),
        None => notes.push(assumed(
            "no requirements.md beside tasks.md: `_Requirements:_` give no criteria".to_string(),
        )),
    }
    if !missing.is_empty() {
        notes.push(assumed(format!(
            "requirement id(s) not found in requirements.md, no criterion taken: {}",
            missing.join(", ")
        )));
    }
    if unnumbered > 0 {
        notes.push(assumed(format!(
            "{unnumbered} `_Requirements:_` line(s) name no numbered item: no criterion taken from them"
        )));
    }
}

/// Kiro writes `- [ ] 1.` and `- [ ] 1.1` at one indent: a task whose id extends the id of
/// an earlier task at its depth (`1.1` after `1`) is nested under it.
fn nest_by_id(list: &mut TaskList) {
    let mut stack: Vec<(String, usize, usize)> = Vec::new(); // (id, original depth, depth)
    for t in list.tasks.iter_mut() {
        let original = t.depth;
        let Some(id) = t.id.clone() else {
            stack.clear();
            continue;
        };
        while let Some((pid, pdepth, _)) = stack.last() {
            let extends = id.starts_with(&format!("{pid}."));
            if extends && *pdepth <= original {
                break;
            }
            if *pdepth < original {
                break;
            }
            stack.pop();
        }
        if let Some((pid, pdepth, depth)) = stack.last() {
            if *pdepth == original && id.starts_with(&format!("{pid}.")) {
                t.depth = depth + 1;
            }
        }
        stack.push((id, original, t.depth));
    }
}

/// The parents that close once the task at `done` is done too: walking up, a parent whose
/// required (not optional) sub-tasks are all done or closed. Only where the format says
/// so (`TaskList::parents_close`, Kiro).
pub fn parents_closed_by(list: &TaskList, done: usize) -> Vec<usize> {
    if !list.parents_close {
        return Vec::new();
    }
    let mut closed = vec![false; list.tasks.len()];
    if let Some(c) = closed.get_mut(done) {
        *c = true;
    }
    let mut out = Vec::new();
    let mut child = done;
    while let Some(parent) = parent_of(list, child) {
        let p = &list.tasks[parent];
        if p.checked {
            break;
        }
        let all = children_of(list, parent).all(|c| c.optional || c.checked || closed[c.index]);
        if !all {
            break;
        }
        closed[parent] = true;
        out.push(parent);
        child = parent;
    }
    out
}

/// Whether the task at `index` is a parent that closed with its sub-tasks: the format
/// closes parents (Kiro), it has sub-tasks, and every required one is checked.
pub fn closed_by_children(list: &TaskList, index: usize) -> bool {
    list.parents_close
        && index < list.tasks.len()
        && children_of(list, index).next().is_some()
        && children_of(list, index).all(|c| c.optional || c.checked)
}

fn parent_of(list: &TaskList, index: usize) -> Option<usize> {
    let depth = list.tasks.get(index)?.depth;
    list.tasks[..index]
        .iter()
        .rev()
        .find(|t| t.depth < depth)
        .map(|t| t.index)
}

/// The direct sub-tasks of the task at `index`.
fn children_of(list: &TaskList, index: usize) -> impl Iterator<Item = &Task> {
    let depth = list.tasks[index].depth;
    let mut child_depth = None;
    list.tasks[index + 1..]
        .iter()
        .take_while(move |t| t.depth > depth)
        .filter(move |t| *child_depth.get_or_insert(t.depth) == t.depth)
}

/// Tick (or untick) one task in this format's own terms, changing only box bytes: the
/// format's done mark, and (Kiro) the parents it closes. `None` when nothing changes.
pub fn set_checked(
    format: Format,
    text: &str,
    list: &TaskList,
    task: &Task,
    checked: bool,
) -> Option<String> {
    let mut marks = Vec::new();
    if task.checked != checked {
        marks.push(task.mark_offset);
    }
    if checked {
        marks.extend(
            parents_closed_by(list, task.index)
                .into_iter()
                .map(|i| list.tasks[i].mark_offset),
        );
    }
    if marks.is_empty() {
        return None;
    }
    let byte = if checked { format.done_mark() } else { b' ' };
    let mut bytes = text.as_bytes().to_vec();
    for at in marks {
        bytes[at] = byte;
    }
    // Replacing ASCII bytes with ASCII bytes keeps the text valid UTF-8.
    Some(String::from_utf8(bytes).expect("ASCII byte swap keeps UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tasks::parse;

    const SPECKIT: &str = "# Tasks: Users\n\n## Phase 1: Setup\n- [X] T001 Create project structure in src/\n- [ ] T002 [P] [US1] Create model in src/models/user.py\n- [ ] T003 [P] [US1] Create service in `src/services/user_service.py`\n\n## Phase 2: Story\n- [ ] T004 [US1] Wire endpoint in src/api/users.py\n";

    const KIRO_TASKS: &str = "# Implementation Plan\n\n- [ ] 1. Build the store\n  - [ ] 1.1 Write the schema\n    - Define tables\n    - _Requirements: 1.1_\n  - [ ]* 1.2 Write extra tests\n    - _Requirements: 1.2_\n- [ ] 2. (P) Wire the API\n  - _Requirements: 1.1, 1.2_\n  - _Depends: 1.1_\n";

    const KIRO_REQ: &str = "# Requirements\n\n### Requirement 1\n\n**User Story:** As a user, I want albums.\n\n#### Acceptance Criteria\n\n1. WHEN a user creates an album THEN the system SHALL store it\n2. IF the name is empty THEN the system SHALL refuse it\n";

    #[test]
    fn layouts_are_found_by_path_and_speckit_by_its_ids() {
        assert_eq!(
            by_path("/p/.kiro/specs/albums/tasks.md"),
            Some(Format::Kiro)
        );
        assert_eq!(
            by_path("openspec/changes/archive/2025-01-01-x/tasks.md"),
            Some(Format::OpenSpec)
        );
        assert_eq!(by_path("/p/specs/001-users/tasks.md"), None);
        assert_eq!(
            detect("specs/001-users/tasks.md", &parse(SPECKIT)),
            Format::SpecKit
        );
        let own = "- [ ] 1.1 Do it\n  - **Verify**: `true`\n";
        assert_eq!(detect("specs/demo/tasks.md", &parse(own)), Format::Specrun);
        // T-ids with specrun fields are specrun's own format.
        let mixed = "- [ ] T001 Do it\n  - **Verify**: `true`\n";
        assert_eq!(
            detect("specs/demo/tasks.md", &parse(mixed)),
            Format::Specrun
        );
        assert_eq!(detect("specs/demo/tasks.md", &parse("")), Format::Specrun);
        // The template's `TXXX`, and a checklist without ids after the T-tasks.
        let template = "- [ ] TXXX [P] Docs\n- [ ] T001 Setup\n- [ ] Quality checked\n";
        assert_eq!(
            detect("specs/x/tasks.md", &parse(template)),
            Format::SpecKit
        );
        let plain = "- [ ] Write it\n- [ ] T001 Then\n- [ ] And this\n";
        assert_eq!(detect("specs/x/tasks.md", &parse(plain)), Format::Specrun);
    }

    #[test]
    fn speckit_phases_become_dependencies_and_paths_files() {
        let mut list = parse(SPECKIT);
        let notes = adapt(Format::SpecKit, SPECKIT, &mut list, Beside::default());
        assert!(list.tasks[0].checked, "[X] is done");
        assert_eq!(list.tasks[0].files, ["src/"]);
        assert_eq!(list.tasks[1].files, ["src/models/user.py"]);
        assert_eq!(list.tasks[2].files, ["src/services/user_service.py"]);
        assert!(
            list.tasks[1].depends.is_empty(),
            "phase 1 depends on nothing"
        );
        assert_eq!(list.tasks[3].depends, ["T001", "T002", "T003"]);
        assert_eq!(
            list.parallel_group(1).len(),
            2,
            "the [P] pair runs together"
        );
        assert!(notes
            .iter()
            .any(|n| n.kind == NoteKind::Assumed && n.message.contains("no Verify")));
        assert!(list.tasks[1].verify.is_none(), "no Verify invented");
    }

    #[test]
    fn a_default_verify_is_given_to_tasks_without_one_and_said() {
        let mut list = parse(SPECKIT);
        let beside = Beside {
            default_verify: Some("pytest -q"),
            ..Beside::default()
        };
        let notes = adapt(Format::SpecKit, SPECKIT, &mut list, beside);
        assert!(list
            .tasks
            .iter()
            .all(|t| t.verify.as_deref() == Some("pytest -q")));
        assert!(notes
            .iter()
            .any(|n| n.message.contains("default Verify `pytest -q`")));
    }

    #[test]
    fn kiro_requirements_become_criteria_and_parents_close() {
        let mut list = parse(KIRO_TASKS);
        let beside = Beside {
            requirements: Some(KIRO_REQ),
            ..Beside::default()
        };
        let notes = adapt(Format::Kiro, KIRO_TASKS, &mut list, beside);
        let t = &list.tasks[1];
        assert_eq!(t.label(), "1.1");
        assert_eq!(
            t.done_when.as_deref(),
            Some("- Requirement 1.1: WHEN a user creates an album THEN the system SHALL store it")
        );
        assert_eq!(t.do_.as_deref(), Some("- Define tables"));
        assert!(list.tasks[2].optional);
        let api = &list.tasks[3];
        assert_eq!(api.title, "Wire the API");
        assert!(api.is_parallel());
        assert_eq!(api.depends, ["1.1"]);
        assert_eq!(api.done_when.as_deref().map(|d| d.lines().count()), Some(2));
        // 1.1 is the next task (a parent after its parts); done, it closes 1 (1.2 is optional).
        assert_eq!(list.next_index(), 1);
        assert_eq!(parents_closed_by(&list, 1), [0]);
        assert!(!closed_by_children(&list, 0), "1.1 is still open");
        assert_eq!(
            list.next_index_after(1),
            2,
            "the optional 1.2 is still offered"
        );
        let ticked = set_checked(Format::Kiro, KIRO_TASKS, &list, &list.tasks[1], true).unwrap();
        assert_eq!(
            ticked,
            KIRO_TASKS
                .replacen("- [ ] 1. Build", "- [x] 1. Build", 1)
                .replacen("- [ ] 1.1 Write", "- [x] 1.1 Write", 1)
        );
        assert!(notes.iter().any(|n| n.message.contains("2 found")));
    }

    #[test]
    fn kiro_flat_ids_nest_under_their_parent() {
        let text = "- [ ] 1. Parent\n- [ ] 1.1 Child\n- [ ] 1.2 Child\n- [ ] 2. Next\n";
        let mut list = parse(text);
        adapt(Format::Kiro, text, &mut list, Beside::default());
        let depths: Vec<usize> = list.tasks.iter().map(|t| t.depth).collect();
        assert_eq!(depths, [0, 1, 1, 0]);
        assert_eq!(list.next_index(), 1, "the child runs before its parent");
        assert!(parents_closed_by(&list, 1).is_empty(), "1.2 is still open");
    }

    #[test]
    fn speckit_ticks_are_capital_x_and_nothing_else_changes() {
        let list = parse(SPECKIT);
        let out = set_checked(Format::SpecKit, SPECKIT, &list, &list.tasks[1], true).unwrap();
        assert_eq!(out, SPECKIT.replacen("- [ ] T002", "- [X] T002", 1));
        let own = "- [ ] 1 A\n";
        let l = parse(own);
        assert_eq!(
            set_checked(Format::Specrun, own, &l, &l.tasks[0], true).as_deref(),
            Some("- [x] 1 A\n")
        );
    }

    /// The per-turn readers keep the fast scan unless `reshapes`: for every other format
    /// the file read in it has the scan's counts and next task.
    #[test]
    fn only_kiro_reshapes_what_the_fast_scan_reads() {
        let openspec = "## 1. Setup\n- [ ] 1.1 Add it\n  - [x] 1.1.1 Part\n- [ ] 1.2 (P) More\n";
        for (path, text) in [
            ("specs/001-users/tasks.md", SPECKIT),
            ("openspec/changes/add-x/tasks.md", openspec),
            ("specs/demo/tasks.md", "- [ ] 1 A\n  - **Verify**: `true`\n"),
            (".kiro/specs/albums/tasks.md", KIRO_TASKS),
        ] {
            let mut list = parse(text);
            let fmt = detect(path, &list);
            adapt(fmt, text, &mut list, Beside::default());
            let next = list.next().map(|t| (t.label(), t.title.clone()));
            assert_eq!(reshapes(path), path.starts_with(".kiro/"), "{path}");
            if !reshapes(path) {
                assert_eq!(
                    (list.counts(), next),
                    crate::model::tasks::headline(text),
                    "{path}"
                );
            }
        }
        // Kiro's flat ids move the next task: `1.1` before its parent `1.`.
        let flat = "- [ ] 1. Parent\n- [ ] 1.1 (P) Child\n";
        let mut list = parse(flat);
        adapt(Format::Kiro, flat, &mut list, Beside::default());
        assert_eq!(list.next().map(Task::label).as_deref(), Some("1.1"));
        assert_eq!(crate::model::tasks::count(flat).next_index, 0);
    }

    #[test]
    fn detect_walks_a_stream_as_it_reads_a_list() {
        for text in [
            SPECKIT,
            "- [ ] 1.1 A\n",
            "- [ ] T001 A\n  - **Verify**: `x`\n",
            "",
        ] {
            let list = parse(text);
            assert_eq!(
                detect_in("specs/x/tasks.md", crate::model::tasks::iter(text)),
                detect("specs/x/tasks.md", &list)
            );
        }
    }

    #[test]
    fn openspec_scenarios_are_read_and_said_to_be_no_tasks_criteria() {
        let deltas = "## ADDED Requirements\n### Requirement: Archive\nThe system SHALL archive.\n\n#### Scenario: Archive a change\n- **WHEN** x\n- **THEN** y\n\n#### Scenario: Refuse an open change\n- **WHEN** z\n```\n#### Scenario: not one\n```\n## MODIFIED Requirements\n### Requirement: List\n#### Scenario: List changes\n";
        let found = scenarios(deltas);
        let names: Vec<&str> = found.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(
            names,
            ["Archive a change", "Refuse an open change", "List changes"]
        );
        assert_eq!(found[2].0, "List");
        let text = "## 1. Setup\n- [ ] 1.1 Add it\n";
        let mut list = parse(text);
        let beside = Beside {
            deltas: Some(deltas),
            ..Beside::default()
        };
        let notes = adapt(Format::OpenSpec, text, &mut list, beside);
        assert!(list.tasks[0].done_when.is_none(), "no criterion guessed");
        assert!(notes
            .iter()
            .any(|n| n.kind == NoteKind::Read && n.message.starts_with("3 scenario(s) under 2")));
        assert!(notes.iter().any(|n| n.kind == NoteKind::Assumed
            && n.message
                .contains("no scenario is taken as a task's criterion")));
    }

    #[test]
    fn ears_items_are_numbered_under_their_requirement() {
        let text = "## Requirements\n### Requirement 2: Login\n#### Acceptance Criteria\n1. When a user logs in, the system shall greet them\n2. If the password is wrong, the system shall refuse\n### 3. Logout\n1. WHEN x THEN y\n";
        let items = ears_items(text);
        let ids: Vec<&str> = items.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(ids, ["2.1", "2.2", "3.1"]);
    }

    #[test]
    fn paths_in_text_skip_urls_and_words() {
        assert_eq!(
            paths_in("Add docs at https://x.io/a in README.md and tests/test_a.py, v1.2 etc."),
            ["README.md", "tests/test_a.py"]
        );
    }
}
