//! Evidence and its judgment: verify records and freshness, test logs, acceptance
//! criteria, the proof and integrity checks, critiques, follow-ups.

pub mod acceptance;
pub mod criteria;
pub mod critique;
pub mod followups;
pub mod integrity;
pub mod program;
pub mod proof;
pub mod testlog;
pub mod verify;
pub mod verify_run;
