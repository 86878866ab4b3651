//! The execution as the guard's record binds it to a session (issue 23, "the guard
//! switched off"): the hooks find the execution through the session's binding and the
//! execution's record, then compare the files the model can touch (`.current-spec`, the
//! spec directory, the state) against it. Only stats and small reads; the state read here
//! is the one the hook goes on with.

use std::path::PathBuf;

use crate::io::project::{Project, Spec, STATE_FILE};
use crate::io::record::Read;
use crate::model::record::{self, Binding, Found, Record};
use crate::model::state::State;
use crate::next::facts::{read_typed, StateRead};

/// An execution the record binds to this session, its files matching the record.
pub(crate) struct Bound {
    pub binding: Binding,
    pub record: Record,
    pub spec: Spec,
    pub state: State,
}

/// What the record says about this session.
pub(crate) enum Lookup {
    /// No execution is bound to it (or the record has moved on to another session).
    None,
    /// Bound, but the files no longer match: the execution is halted for `reason`.
    Halted {
        spec: String,
        record: Option<Box<Record>>,
        reason: String,
    },
    Bound(Box<Bound>),
}

/// The execution bound to `session` in `project`, checked against its files.
pub(crate) fn lookup(project: &Project, session: Option<&str>) -> Lookup {
    let Some(sid) = session.filter(|s| !s.is_empty()) else {
        return Lookup::None;
    };
    let Some(binding) = record::binding(&project.root, sid) else {
        return Lookup::None;
    };
    let Some(name) = binding.spec.clone() else {
        return Lookup::None;
    };
    let halted = |record: Option<Record>, reason: String| Lookup::Halted {
        spec: name.clone(),
        record: record.map(Box::new),
        reason,
    };
    let rec = match record::execution(&project.root, &name) {
        Read::Absent => {
            return halted(None, format!("the guard's record of spec '{name}' is gone"));
        }
        Read::Invalid(e) => {
            let reason = format!("the guard's record of spec '{name}' cannot be read ({e})");
            return halted(None, reason);
        }
        Read::Valid(rec) => rec,
    };
    if !rec.open() || rec.session_id.as_deref() != Some(sid) {
        return Lookup::None;
    }
    if let Some(reason) = rec.record_halt() {
        let reason = reason.to_string();
        return halted(Some(rec), reason);
    }
    match check(project, &rec) {
        Err(reason) => halted(Some(rec), reason),
        Ok((spec, state)) => Lookup::Bound(Box::new(Bound {
            binding,
            record: rec,
            spec,
            state,
        })),
    }
}

/// The spec and state where the record says they are, or why they are not.
fn check(project: &Project, rec: &Record) -> Result<(Spec, State), String> {
    let named = project.spec(None).ok().flatten().map(|s| s.name);
    if named.as_deref() != Some(rec.spec.as_str()) {
        let found = Found::CurrentSpec(named.as_deref());
        return Err(record::mismatch(rec, found).unwrap_or_default());
    }
    let dir = PathBuf::from(&rec.spec_dir);
    if !dir.is_dir() {
        return Err(record::mismatch(rec, Found::SpecDirGone).unwrap_or_default());
    }
    let found = read_typed(&dir.join(STATE_FILE));
    let state = match found {
        StateRead::Absent => {
            return Err(record::mismatch(rec, Found::StateGone).unwrap_or_default())
        }
        StateRead::Invalid(e) => {
            return Err(record::mismatch(rec, Found::StateGarbled(&e)).unwrap_or_default())
        }
        StateRead::Valid(s) => *s,
    };
    if let Some(reason) = record::mismatch(rec, Found::State(&state)) {
        return Err(reason);
    }
    let spec = Spec::at(&project.root, rec.spec.clone(), dir);
    Ok((spec, state))
}

/// Write the record back when `after` (the state as the hook left it) moved it on.
pub(crate) fn mirror(project: &Project, bound: &Bound, after: &State, estimated: u64) {
    let mut rec = bound.record.clone();
    rec.mirror(after);
    rec.estimated_output_tokens = rec.estimated_output_tokens.saturating_add(estimated);
    if rec != bound.record {
        // A verb may have added to the record since this hook read it (an earned box, a
        // baseline digest a final run wrote): what it added stays.
        if let Read::Valid(now) = record::execution(&project.root, &rec.spec) {
            union(&mut rec.earned, now.earned);
            union(&mut rec.baseline_digests, now.baseline_digests);
        }
        let _ = record::save(&project.root, &rec);
    }
}

/// Add to `kept` what `more` holds that it does not, in order.
fn union(kept: &mut Vec<String>, more: Vec<String>) {
    for item in more {
        if !kept.contains(&item) {
            kept.push(item);
        }
    }
}

/// Halt the record for `reason` (a hook found the files no longer match it).
pub(crate) fn halt(project: &Project, rec: Option<&Record>, reason: &str, at: &str) {
    if let Some(rec) = rec.filter(|r| r.record_halt().is_none()) {
        let mut rec = rec.clone();
        rec.halt_for(reason, at);
        let _ = record::save(&project.root, &rec);
    }
}
