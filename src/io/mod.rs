//! The I/O edges: the one bounded reader and atomic writer (`store`), the project layout,
//! git, child processes, the events log, stdout/stderr, notifications.

pub(crate) mod bookkeeping;
pub(crate) mod events;
pub(crate) mod git;
pub(crate) mod notify;
pub(crate) mod output;
pub(crate) mod process;
pub mod project;
pub(crate) mod record;
pub mod store;
pub(crate) mod watch;
