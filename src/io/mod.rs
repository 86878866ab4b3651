//! The I/O edges: the one bounded reader and atomic writer (`store`), the project layout,
//! git, child processes, the events log, stdout/stderr, notifications.

pub mod bookkeeping;
pub mod events;
pub mod git;
pub mod notify;
pub mod output;
pub mod process;
pub mod project;
pub mod record;
pub mod store;
pub mod watch;
