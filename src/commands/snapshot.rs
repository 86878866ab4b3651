//! `specrun snapshot`: the read-only JSON fact surface of the active spec. Reads only;
//! the coordinator runs it first and acts on `gates` and `nextAction`.

use crate::cli::SnapshotArgs;
use crate::error::{ExitStatus, Result};
use crate::io::output;
use crate::io::project::Project;
use crate::next::facts;

pub(crate) fn run(project: &Project, args: SnapshotArgs) -> Result<ExitStatus> {
    let facts = facts::collect(project, args.spec.spec.as_deref())?;
    output::json_pretty(&facts.snapshot(project));
    Ok(ExitStatus::Success)
}
