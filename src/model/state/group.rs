//! The isolation record's types: a group of isolated members and each member's life.
//! The git work on their worktrees and branches lives in `worktree.rs`.

use serde::{Deserialize, Serialize};

/// A member's life: `running` (worktree created), `ready` (completed and committed on its
/// branch), `merged`, `conflict` / `outside-files` (kept on its branch, to retry),
/// `rolled-back` / `cancelled` (work saved to a ref, worktree removed).
pub const RUNNING: &str = "running";
pub const READY: &str = "ready";
pub const MERGED: &str = "merged";
pub const CONFLICT: &str = "conflict";
pub const OUTSIDE_FILES: &str = "outside-files";
pub const ROLLED_BACK: &str = "rolled-back";
pub const CANCELLED: &str = "cancelled";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub branch: String,
    /// Directory name under the spec's worktrees directory.
    pub worktree: String,
    /// The commit the member's work is measured from (the merged base after a retry).
    pub base: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_commit: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_ref: Option<String>,
}

impl Member {
    /// Still holding work that is not in the base branch.
    pub fn is_open(&self) -> bool {
        [RUNNING, READY, CONFLICT, OUTSIDE_FILES].contains(&self.status.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    /// Member ids in task-id (file) order: the merge order.
    pub members: Vec<String>,
    /// The branch members merge into, and the commit they were created from.
    pub base_branch: String,
    pub base: String,
    /// `running`, `partial` (verified with members still to retry), `verify-failed`,
    /// `complete` (every member merged and the merged tree verified).
    pub status: String,
    /// The `[VERIFY]` task right after the group, whose command verifies the merged tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_task: Option<String>,
    /// The merged tree's fingerprint that passed verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_tree: Option<String>,
}

impl Group {
    pub fn is_complete(&self) -> bool {
        self.status == "complete"
    }
}
