//! Evidence and its judgment: verify records and freshness, test logs, acceptance
//! criteria, the proof and integrity checks, critiques, follow-ups.

pub(crate) mod acceptance;
pub mod baseline;
pub(crate) mod baseline_store;
pub(crate) mod bundle;
pub(crate) mod criteria;
pub mod critique;
pub(crate) mod followups;
pub(crate) mod ignored_files;
pub mod integrity;
pub(crate) mod program;
pub(crate) mod proof;
pub(crate) mod red_green;
pub(crate) mod red_green_run;
pub mod testlog;
pub mod verify;
pub(crate) mod verify_run;
