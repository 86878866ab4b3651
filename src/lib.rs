//! specrun: the deterministic half of a spec-driven Claude Code plugin.
//!
//! `run` parses the command line and hands off to one module per subcommand under
//! `commands/`; a command builds its context (`exec::Exec`: the project, the spec, the
//! state lock) and never uses another command. Pure core modules (`tasks`, `state`, …)
//! take data and return data; `store`, `project`, `git`, `events` and `output` are the
//! I/O edges, and `facts`, `gates`, `tasks_file` gather what commands share from disk.

pub mod acceptance;
pub mod chars;
pub mod claims;
pub mod claude_code;
pub mod cli;
pub mod commands;
pub mod completion;
pub mod cost;
pub mod criteria;
pub mod critique;
pub mod error;
pub mod events;
pub mod exec;
pub mod facts;
pub mod fault;
pub mod followups;
pub mod gates;
pub mod git;
pub mod glob;
pub mod goal;
pub mod hook;
pub mod hook_cost;
pub mod integrity;
pub mod isolation;
pub mod last_mile;
pub mod ledger;
pub mod next;
pub mod notify;
pub mod output;
pub mod prices;
pub mod probe;
pub mod process;
pub mod project;
pub mod proof;
pub mod protocol;
pub mod report;
pub mod saved_work;
pub mod state;
pub mod store;
pub mod tasks;
pub mod tasks_file;
pub mod testlog;
pub mod transcript;
pub mod uncounted;
pub mod verify;
pub mod worktree;

use clap::Parser;

pub use error::{Error, Result};

/// Exit codes: 0 ok, 1 a well-formed negative answer, 2 usage or runtime error.
pub const EXIT_OK: i32 = 0;
pub const EXIT_NO: i32 = 1;
pub const EXIT_ERROR: i32 = 2;

pub fn run() -> i32 {
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
                EXIT_ERROR
            } else {
                EXIT_OK
            };
            let _ = err.print();
            return code;
        }
    };
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            output::error(&err.to_string());
            EXIT_ERROR
        }
    }
}
