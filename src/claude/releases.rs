//! Which Claude Code releases specrun supports: the range `doctor` states and the two
//! releases the end-to-end suite pins (`scripts/install-claude-code` installs the same two;
//! a test keeps them equal).

use crate::claude::goal::parse_version;

/// The oldest release specrun supports: the first pinned client of the e2e suite.
pub const OLDEST_SUPPORTED: &str = "2.1.197";
/// The newest release the e2e suite runs against (the current one when it was pinned).
pub const NEWEST_TESTED: &str = "2.1.332";
/// Every release the e2e suite runs against, oldest first.
pub const PINNED: [&str; 2] = [OLDEST_SUPPORTED, NEWEST_TESTED];
/// The first release whose `Agent` tool runs a subagent in the background when the call
/// does not set `run_in_background` (CHANGELOG 2.1.198; 2.1.197 has the parameter,
/// default false). The e2e scenarios assert the client-specific path with it.
pub const BACKGROUND_AGENTS_SINCE: &str = "2.1.198";

/// The first release that loads a plugin's in-process hooks module (`modules` in
/// hooks/hooks.json, early access), which strict mode's `agent.spawn` guard needs; older
/// releases accept the key and ignore it.
pub const HOOKS_MODULES_SINCE: &str = "2.1.287";

/// Whether this process was started by Claude Code (its Bash tool sets `CLAUDECODE=1`):
/// then a person's decisions (accepting other evidence, editing the guard's record,
/// restarting a halted execution) are refused, since the model is the one asking.
pub fn inside() -> bool {
    std::env::var_os("CLAUDECODE").is_some_and(|v| !v.is_empty())
}

/// Where a Claude Code version stands against the supported range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// One of the pinned releases.
    Tested,
    /// Between the pinned releases: supported, this exact release not run by the suite.
    InRange,
    /// Older than `OLDEST_SUPPORTED`.
    TooOld,
    /// Newer than `NEWEST_TESTED`: expected to work, not tested.
    NewerThanTested,
}

/// `version` (any text holding `major.minor.patch`) against the supported range; `None`
/// when it holds no version.
pub fn support(version: &str) -> Option<Support> {
    let v = parse_version(version)?;
    let oldest = parse_version(OLDEST_SUPPORTED)?;
    let newest = parse_version(NEWEST_TESTED)?;
    Some(if v < oldest {
        Support::TooOld
    } else if v > newest {
        Support::NewerThanTested
    } else if PINNED.iter().any(|p| parse_version(p) == Some(v)) {
        Support::Tested
    } else {
        Support::InRange
    })
}

/// `2.1.197–2.1.332`, as README and doctor print the range.
pub fn supported_range() -> String {
    format!("{OLDEST_SUPPORTED}–{NEWEST_TESTED}")
}

/// The command that installs the newest tested release.
pub fn install_command() -> String {
    format!("npm install -g @anthropic-ai/claude-code@{NEWEST_TESTED}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_into_the_range() {
        assert_eq!(support("2.1.197 (Claude Code)"), Some(Support::Tested));
        assert_eq!(support("2.1.332"), Some(Support::Tested));
        assert_eq!(support("2.1.250"), Some(Support::InRange));
        assert_eq!(support("2.1.196"), Some(Support::TooOld));
        assert_eq!(support("2.0.999"), Some(Support::TooOld));
        assert_eq!(support("2.1.333"), Some(Support::NewerThanTested));
        assert_eq!(support("3.0.0"), Some(Support::NewerThanTested));
        assert_eq!(support("unknown"), None);
        assert_eq!(supported_range(), "2.1.197–2.1.332");
    }
}
