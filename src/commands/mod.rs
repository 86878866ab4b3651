//! One module per subcommand. Each takes its parsed arguments and returns the exit code
//! (0 ok, 1 a well-formed negative answer); errors become exit 2 in `lib::run`. A command
//! builds its context (`exec::Exec`), calls the core and prints; it never uses another
//! command module (what they share lives in `exec.rs`, the context, or outside `commands/`;
//! the test below).

use crate::cli::{Cli, Command, HeadlessCommand};
use crate::error::{ExitStatus, Result};
use crate::io::project::Project;

pub(crate) mod ac;
pub(crate) mod bundle;
pub(crate) mod cancel;
pub(crate) mod completions;
pub(crate) mod critique;
pub(crate) mod doctor;
pub(crate) mod exec;
pub(crate) mod finish;
pub(crate) mod followup;
pub(crate) mod goal;
pub(crate) mod group;
pub(crate) mod headless;
pub(crate) mod hook;
pub(crate) mod last_mile;
pub(crate) mod learn;
pub(crate) mod merge_job;
pub mod new;
pub(crate) mod plan;
pub(crate) mod pr;
pub(crate) mod report;
pub(crate) mod resume;
pub(crate) mod snapshot;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod statusline;
pub(crate) mod task;
pub(crate) mod tasks;
pub(crate) mod verify;
pub(crate) mod waves;

pub(crate) fn dispatch(cli: Cli) -> Result<ExitStatus> {
    let cwd = cli.cwd.as_deref();
    if let Some(decision) = cli.command.person_decision() {
        crate::claude::roles::person_only(decision)?;
    }
    match cli.command {
        // Hooks resolve their own directory from stdin and never fail.
        Command::Hook(args) => Ok(hook::run(args.event, cwd)),
        // A status line must never show an error either.
        Command::Statusline => Ok(statusline::run(cwd)),
        Command::Completions(args) => Ok(completions::run(args.shell)),
        Command::NotifyRun(args) => Ok(crate::io::notify::run(
            &Project::discover(cwd)?,
            &args.command,
            std::time::Duration::from_millis(args.timeout_ms),
        )),
        Command::New(args) => new::run(&Project::discover(cwd)?, args),
        Command::Finish(args) => finish::run(&Project::discover(cwd)?, args),
        Command::Report(args) => report::run(&Project::discover(cwd)?, args),
        Command::Snapshot(args) => snapshot::run(&Project::discover(cwd)?, args),
        Command::Tasks(cmd) => tasks::run(&Project::discover(cwd)?, cmd),
        Command::State(cmd) => state::run(cwd, cmd),
        Command::Status(args) => status::run(&Project::discover(cwd)?, args),
        Command::Verify(cmd) => verify::run(&Project::discover(cwd)?, cmd),
        Command::Critique(cmd) => critique::run(&Project::discover(cwd)?, cmd),
        Command::Goal(args) => goal::run(&Project::discover(cwd)?, args),
        Command::LastMile(args) => last_mile::run(&Project::discover(cwd)?, args),
        Command::Doctor(args) => doctor::run(&Project::discover(cwd)?, args),
        Command::Task(cmd) => task::run(&Project::discover(cwd)?, cmd),
        Command::Ac(cmd) => ac::run(&Project::discover(cwd)?, cmd),
        Command::Followup(cmd) => followup::run(&Project::discover(cwd)?, cmd),
        Command::Learn(args) => learn::run(&Project::discover(cwd)?, args),
        Command::Resume(args) => resume::run(&Project::discover(cwd)?, args),
        Command::Cancel(args) => cancel::run(&Project::discover(cwd)?, args),
        Command::Group(cmd) => group::run(&Project::discover(cwd)?, cmd),
        Command::Plan(cmd) => plan::run(&Project::discover(cwd)?, cmd),
        Command::Headless(HeadlessCommand::Export(a)) => {
            bundle::export(&Project::discover(cwd)?, a)
        }
        Command::Headless(HeadlessCommand::Import(a)) => {
            bundle::import(&Project::discover(cwd)?, a)
        }
        Command::Headless(HeadlessCommand::Run(a)) => headless::run(&Project::discover(cwd)?, a),
        Command::Headless(HeadlessCommand::Merge(a)) => merge_job::run(&Project::discover(cwd)?, a),
        Command::Headless(HeadlessCommand::Pr(a)) => pr::run(&Project::discover(cwd)?, a),
        Command::Waves(args) => waves::run(&Project::discover(cwd)?, args),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests set up and inspect files directly
mod tests {
    /// Issue 12: a command parses its arguments, builds the context (`exec`), calls the core
    /// and prints. What two commands share lives in `exec.rs` (the context) or outside
    /// `commands/`, so no command module names another; only the dispatch above knows them
    /// all. A `use super::*;` is allowed inside a file's own test module (indented), where
    /// `super` is that file.
    #[test]
    fn no_command_module_uses_another() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
        let mut files = 0;
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            // mod.rs dispatches; exec.rs is the context every command builds, not a command.
            if path
                .file_name()
                .is_some_and(|n| n == "mod.rs" || n == "exec.rs")
            {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let own_tests =
                    code.starts_with(char::is_whitespace) && code.trim() == "use super::*;";
                let code = code.replace("commands::exec::", "");
                if code.contains("commands::") || (code.contains("super::") && !own_tests) {
                    found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                }
            }
        }
        assert!(
            files >= 20,
            "only {files} command files under {}",
            dir.display()
        );
        assert!(
            found.is_empty(),
            "command modules using another command module (move the shared piece to commands/exec.rs, next/facts.rs or a core module):\n{}",
            found.join("\n")
        );
    }
}
