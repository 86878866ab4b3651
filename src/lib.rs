//! specrun: the deterministic half of a spec-driven Claude Code plugin.
//!
//! `run` parses the command line and hands off to one module per subcommand under
//! `commands/`; a command builds its context (`commands::exec::Exec`: the project, the spec,
//! the state lock) and never uses another command. The folders are layers, each importing
//! only the ones below it (ARCHITECTURE.md; `tests/layers.rs` checks): support, io, model,
//! claude, evidence, protocol, isolation, cost, next, hooks, commands.

pub mod claude;
pub mod cli;
pub mod commands;
pub mod cost;
pub mod error;
pub mod evidence;
pub mod hooks;
pub mod io;
pub mod isolation;
pub mod model;
pub mod next;
pub mod protocol;
pub mod support;

use clap::Parser;

pub use error::{Error, ExitStatus, Result};

/// The process's exit code (`ExitStatus`: 0 ok, 1 a well-formed "no", 2 an error).
pub fn run() -> i32 {
    run_status().code()
}

fn run_status() -> ExitStatus {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    match cli::fast_path(&args) {
        Some(cli::FastPath::Hook(event)) => return commands::hook::run(event, None),
        Some(cli::FastPath::Statusline) => return commands::statusline::run(None),
        None => {}
    }
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() {
                ExitStatus::Error
            } else {
                ExitStatus::Success
            };
            let _ = err.print();
            return code;
        }
    };
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err @ Error::PersonsDecision { .. }) => {
            io::output::error(&err.to_string());
            ExitStatus::No
        }
        Err(err) => {
            io::output::error(&err.to_string());
            ExitStatus::Error
        }
    }
}
