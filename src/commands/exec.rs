//! One execution context for the verbs (issue 12): the project and the spec a command acts
//! on, resolved once from `--spec` (else `.current-spec`), with what every verb does around
//! the core — take the state lock, read and write the state, load tasks.md, append an event
//! or a progress line — and the shape of its answer (a report, a refusal).
//!
//! A command parses its arguments, builds an `Exec`, calls the core and prints; it never
//! reaches into another command. Lock order everywhere: the state file's lock first, then
//! tasks.md's or .progress.md's own lock (so two verbs never deadlock).

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, ExitStatus, Result};
use crate::io::events;
use crate::io::events::{By, Event};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::model::state::{self, Patch, State};
use crate::model::tasks_file::{self, LoadedTasks};
use crate::protocol::{self, Transition, Unmet};

/// The project and the spec a verb acts on.
pub(crate) struct Exec<'a> {
    pub project: &'a Project,
    pub spec: Spec,
}

impl<'a> Exec<'a> {
    /// The spec `--spec` names, else the one `.current-spec` names.
    pub(crate) fn new(project: &'a Project, spec: Option<&str>) -> Result<Exec<'a>> {
        let spec = project.require_spec(spec)?;
        Ok(Exec { project, spec })
    }

    /// As `new`, for verbs that need the spec's directory: a missing one is named as such.
    pub(crate) fn existing(project: &'a Project, spec: Option<&str>) -> Result<Exec<'a>> {
        let exec = Exec::new(project, spec)?;
        if !exec.spec.dir.is_dir() {
            return Err(Error::missing("spec directory", &exec.spec.dir));
        }
        Ok(exec)
    }

    /// Lock and read the spec's state. A missing state is named before the lock is taken,
    /// so a refused command leaves no lock file behind.
    pub(crate) fn lock_state(&self) -> Result<(store::Lock, State)> {
        if !self.spec.state_path().exists() {
            return Err(no_state(&self.spec));
        }
        let lock = store::lock(&self.spec.state_path(), store::DEFAULT_LOCK_WAIT)?;
        let state = self.read_state()?;
        Ok((lock, state))
    }

    /// The state read under its (already held) lock; a missing file says how to create one.
    fn read_state(&self) -> Result<State> {
        let path = self.spec.state_path();
        state::read(&path, state::Reading::Checked)?.ok_or_else(|| no_state(&self.spec))
    }

    /// Apply a verb's patch to the state read under the lock and write it atomically. The
    /// file is rewritten from the typed state: known fields in `State`'s order, then the
    /// unknown ones in theirs (docs/design.md#writing-the-state).
    pub(crate) fn write_state(&self, current: &State, patch: &Patch) -> Result<State> {
        let path = self.spec.state_path();
        let name = path.display().to_string();
        let next = state::apply_patch(Some(current.to_value()), &patch.to_value(), &name)?;
        store::write_atomic(&path, &store::to_pretty_bytes(&next))?;
        State::from_checked(next, &name)
    }

    /// The state of an execution a read-only verb reports on, unlocked: refused with `absent`
    /// when there is none, with the checked read's error when it does not read.
    pub(crate) fn execution(&self, absent: &str) -> Result<State> {
        match crate::next::facts::read_typed(&self.spec.state_path()) {
            crate::next::facts::StateRead::Valid(s) => Ok(*s),
            crate::next::facts::StateRead::Absent => Err(Error::Refused {
                message: format!("spec {} {absent}", self.spec.name),
            }),
            crate::next::facts::StateRead::Invalid(e) => Err(Error::Refused { message: e }),
        }
    }

    /// The spec's tasks.md, read and parsed.
    pub(crate) fn tasks(&self) -> Result<LoadedTasks> {
        tasks_file::load(&self.spec.tasks_path())
    }

    /// A task id must name exactly one task of the spec's tasks.md.
    pub(crate) fn require_task(&self, id: &str) -> Result<()> {
        self.tasks()?.find(id).map(|_| ())
    }

    /// An events.jsonl line with the spec's name; a failed write is warned about, never
    /// fails the verb (its change is already made).
    pub(crate) fn record_event(&self, event: &Event<'_>) {
        if let Err(e) = events::append(self.project, By::Spec(&self.spec.name), event) {
            output::warn(&format!("could not record the event: {e}"));
        }
    }

    /// Under .progress.md's own lock, append `line` to a markdown section (file created if
    /// absent); with `dedupe`, not when the section already holds that text.
    pub(crate) fn append_progress(
        &self,
        heading: &str,
        line: &str,
        dedupe: Option<&str>,
    ) -> Result<bool> {
        let path = self.spec.progress_path();
        let _lock = store::lock(&path, store::DEFAULT_LOCK_WAIT)?;
        let text = match store::read_optional(&path)? {
            None => String::new(),
            Some(bytes) => {
                String::from_utf8(bytes).map_err(|_| Error::NotUtf8 { path: path.clone() })?
            }
        };
        if let Some(text_key) = dedupe {
            if protocol::section_has(&text, heading, text_key) {
                return Ok(false);
            }
        }
        let next = protocol::append_to_section(&text, heading, line);
        store::write_atomic(&path, next.as_bytes())?;
        Ok(true)
    }
}

/// No state file: the step that creates one, or the one before it when there are no tasks.
fn no_state(spec: &Spec) -> Error {
    let name = &spec.name;
    let flag = crate::support::shell::spec_flag(name);
    let message = if spec.tasks_path().exists() {
        format!(
            "no execution state at {}: run `specrun state init {flag}` first",
            spec.state_path().display()
        )
    } else {
        format!(
            "spec {name} has no tasks ({} does not exist): write them there (one `- [ ] 1.1 Title` line each, the format is in plugin/templates/tasks.md), then run `specrun state init {flag}`",
            spec.tasks_path().display()
        )
    };
    Error::Refused { message }
}

/// A verb's `--json` answer: what every verb says, then what this one adds.
#[derive(Serialize)]
struct VerbAnswer<'a> {
    ok: bool,
    verb: &'a str,
    subject: &'a str,
    changed: bool,
    halted: bool,
    message: &'a str,
    notes: &'a [String],
    #[serde(flatten)]
    extra: &'a Extra<'a>,
}

/// What a verb's `--json` answer adds after the common fields.
#[derive(Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub(crate) enum Extra<'a> {
    /// `task start`: the member's worktree and branch when isolated.
    Started {
        worktree: Option<&'a Path>,
        branch: Option<&'a str>,
    },
    /// `task complete`: the member's branch when isolated.
    Branch { branch: Option<&'a str> },
    /// `task fail`: the fix task it inserted.
    Failed { fix_task: Option<&'a str> },
    /// `task rollback`: where the work was saved (and the member's branch, when isolated).
    Saved {
        saved_ref: &'a str,
        saved_commit: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        branch: Option<&'a str>,
    },
    /// `cancel`: the refs members' work was saved to.
    SavedRefs { saved_refs: &'a [String] },
    /// `resume`: the group's standing after a crash mid-group.
    Isolation {
        isolation: Option<&'a crate::isolation::GroupDoc>,
    },
}

/// Print a verb's result: one line (or one JSON object); warnings to stderr.
pub(crate) fn report(
    verb: &str,
    subject: &str,
    out: &Transition,
    json_out: bool,
    extra: Extra<'_>,
) {
    if json_out {
        output::json_line(&VerbAnswer {
            ok: true,
            verb,
            subject,
            changed: out.changed,
            halted: out.halted,
            message: &out.message,
            notes: &out.notes,
            extra: &extra,
        });
        return;
    }
    output::line(&out.message);
    for note in &out.notes {
        match note.strip_prefix("warning: ") {
            Some(w) => output::warn(w),
            None => output::line(note),
        }
    }
}

/// A verb's `--json` refusal.
#[derive(Serialize)]
struct Refused<'a> {
    ok: bool,
    verb: &'a str,
    subject: &'a str,
    unmet: &'a [Unmet],
}

/// Print the unmet preconditions and return exit 1.
pub(crate) fn refuse(verb: &str, subject: &str, unmet: &[Unmet], json_out: bool) -> ExitStatus {
    if json_out {
        output::json_line(&Refused {
            ok: false,
            verb,
            subject,
            unmet,
        });
    } else {
        output::line(&format!("{verb} {subject} refused:"));
        for u in unmet {
            output::line(&format!("  - {u}"));
        }
    }
    ExitStatus::No
}
