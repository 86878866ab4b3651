//! Not built yet (see the open issues).

use crate::error::{Error, Result};
use crate::project::Project;

pub fn run(_project: &Project, _args: crate::cli::GoalArgs) -> Result<i32> {
    Err(Error::Usage("`goal` is not implemented yet".into()))
}
