//! Not built yet (the guard issue). A hook never traps a session: allow silently.

use std::path::Path;

use crate::cli::HookEvent;

pub fn run(_event: HookEvent, _cwd: Option<&Path>) -> i32 {
    0
}
