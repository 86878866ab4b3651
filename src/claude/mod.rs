//! What specrun knows of Claude Code: supported releases, the install probe, the `/goal`
//! condition, transcripts, the plugin's agent names.

pub(crate) mod agents;
pub mod goal;
pub(crate) mod headless;
pub(crate) mod probe;
pub mod releases;
pub mod roles;
pub(crate) mod transcript;
