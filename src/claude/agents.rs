//! The plugin's agent names, read by the hooks and the completion gate alike.

/// The subagent whose completion claims the SubagentStop hook checks.
pub const EXECUTOR_AGENT: &str = "specrun:spec-executor";
