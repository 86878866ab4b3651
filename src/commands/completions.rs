//! `specrun completions bash|zsh|fish|powershell`: the completion script, from the same
//! clap definitions the binary parses with (clap_complete).

use crate::error::ExitStatus;
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, CompletionShell};
use crate::io::output;

pub(crate) fn run(shell: CompletionShell) -> ExitStatus {
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
        CompletionShell::Powershell => Shell::PowerShell,
    };
    let mut cmd = Cli::command();
    // Generated into memory: a closed pipe (`… | head`) is then not a panic.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "specrun", &mut script);
    output::raw(&String::from_utf8_lossy(&script));
    ExitStatus::Success
}
