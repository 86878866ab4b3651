//! `specrun waves`: the spec's unchecked tasks as waves (`model::waves`): which run side by
//! side and in what order, printed as a GitHub Actions matrix for a workflow's jobs.

use crate::cli::WavesArgs;
use crate::commands::exec::Exec;
use crate::error::{ExitStatus, Result};
use crate::io::output;
use crate::io::project::Project;
use crate::model::waves;

pub(crate) fn run(project: &Project, args: WavesArgs) -> Result<ExitStatus> {
    let ex = Exec::existing(project, args.spec.spec.as_deref())?;
    let plan = waves::plan(&ex.tasks()?.list);
    if let Some(n) = args.wave {
        let Some(wave) = plan.waves.iter().find(|w| w.wave == n) else {
            // A well-formed no: a workflow's loop over the waves ends here.
            output::warn(&format!(
                "spec {} has {} waves of unchecked tasks: no wave {n}",
                ex.spec.name,
                plan.waves.len()
            ));
            return Ok(ExitStatus::No);
        };
        if args.json {
            output::json_line(&wave.matrix);
        } else {
            for m in &wave.matrix.include {
                output::line(&format!("{}\t{}", m.task, m.title));
            }
        }
        return Ok(ExitStatus::Success);
    }
    if args.json {
        output::json_line(&plan);
        return Ok(ExitStatus::Success);
    }
    for w in &plan.waves {
        let ids: Vec<&str> = w.matrix.include.iter().map(|m| m.task.as_str()).collect();
        let how = if w.parallel { "side by side" } else { "alone" };
        output::line(&format!("wave {}: {} ({how})", w.wave, ids.join(", ")));
    }
    for p in &plan.problems {
        output::warn(p);
    }
    Ok(ExitStatus::Success)
}
