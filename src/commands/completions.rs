//! `specrun completions bash|zsh|fish|powershell`: the completion script, from the same
//! clap definitions the binary parses with (clap_complete).

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, CompletionShell};

pub fn run(shell: CompletionShell) -> i32 {
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
        CompletionShell::Powershell => Shell::PowerShell,
    };
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "specrun", &mut std::io::stdout());
    0
}
