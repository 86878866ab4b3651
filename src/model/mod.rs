//! The spec's records: tasks.md (parsed, read, edited as text) and the state file (typed,
//! patched, its ledger and isolation types), and the precondition type the verbs share.

pub(crate) mod plan;
pub(crate) mod record;
pub mod state;
pub mod tasks;
pub(crate) mod tasks_file;
pub(crate) mod unmet;
pub(crate) mod waves;
