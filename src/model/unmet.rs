//! A precondition that does not hold, shared by the verbs, the gates and the proof checks.

use serde::Serialize;

/// One precondition that does not hold: a stable name and what to do about it (its JSON:
/// `{name, detail}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unmet {
    pub name: &'static str,
    pub detail: String,
}

impl Unmet {
    pub fn new(name: &'static str, detail: impl Into<String>) -> Self {
        Unmet {
            name,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Unmet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.detail)
    }
}
