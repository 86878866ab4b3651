//! The spec's records: tasks.md (parsed, read, edited as text) and the state file (typed,
//! patched, its ledger and isolation types), and the precondition type the verbs share.

pub mod plan;
pub mod record;
pub mod state;
pub mod tasks;
pub mod tasks_file;
pub mod unmet;
