//! specrun: the deterministic half of a spec-driven Claude Code plugin.
//!
//! `run` parses the command line and hands off to one module per subcommand under
//! `commands/`; a command builds its context (`commands::exec::Exec`: the project, the spec,
//! the state lock) and never uses another command. The folders are layers, each importing
//! only the ones below it (ARCHITECTURE.md; `tests/layers.rs` checks): support, io, model,
//! claude, evidence, protocol, isolation, cost, next, hooks, commands.

#![warn(unreachable_pub)]

mod claude;
mod cli;
mod commands;
mod cost;
mod error;
mod evidence;
mod hooks;
mod io;
mod isolation;
mod model;
mod next;
mod protocol;
mod support;

/// What the integration tests and benches reach inside the library. Everything else is
/// `pub(crate)`, so `unreachable_pub` and the dead-code lint see the whole crate.
#[doc(hidden)]
pub mod api {
    pub mod claude {
        pub use crate::claude::{goal, releases, roles};
    }
    pub mod cli {
        pub use crate::cli::Cli;
    }
    pub mod commands {
        pub use crate::commands::new;
    }
    pub mod evidence {
        pub use crate::evidence::{baseline, critique, integrity, testlog, verify};
    }
    pub mod hooks {
        pub use crate::hooks::{
            tool_guard, COMPLETION_TOKEN, EXECUTOR_AGENT, TASK_COMPLETE_TOKEN, WORK_TOOLS,
        };
    }
    pub mod io {
        pub use crate::io::{project, store};
    }
    pub mod isolation {
        pub use crate::isolation::worktree;
    }
    pub mod model {
        pub use crate::model::{state, tasks};
    }
    pub mod next {
        pub use crate::next::facts;
    }
    pub mod protocol {
        pub use crate::protocol::{
            cancel, fail, plan_rollback, resume, rollback_done, start, FailInput, Raises,
            COMPLETED_HEADING, LEARNINGS_HEADING,
        };
    }
}

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
