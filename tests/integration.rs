//! Every integration test, as one binary (`[[test]] integration`, `autotests = false`):
//! one link after a change to the library instead of one per file. Each file beside this one
//! is a module; a file not named here is never compiled (`docs_contract` checks that every
//! `tests/**/*.rs` is reached).
//!
//! The tests share one process: none may change what is process-wide (environment, current
//! directory, umask, signal dispositions); a test gives its child processes their own
//! environment and working directory instead.
//!
//! End-to-end tests (the real Claude Code) are the tests whose name starts with `e2e_`, and
//! no other test's full name contains `e2e_`: `scripts/test` runs `-- --skip e2e_` once and
//! `--test integration -- e2e_` once per pinned client.
// Tests and benchmarks set up and inspect files directly; the binary goes through the store.
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

// Shared helpers.
mod common;
mod docs_walk;
mod e2e;
mod formats;
mod hook_common;
mod shell_common;
mod task_helpers;

// The tests, one module per area.
mod acceptance_cli;
mod battery;
mod budget_settings;
mod core_acceptance;
mod core_bad_input;
mod core_concurrency;
mod cost_ledger;
mod crash_steps;
mod critique_record;
mod docs_ci;
mod docs_contract;
mod docs_reference;
mod doctor_cli;
mod end_to_end;
mod end_to_end_dishonest;
mod end_to_end_formats;
mod end_to_end_genuine;
mod end_to_end_headless;
mod end_to_end_isolation;
mod end_to_end_strict;
mod followup_verbs;
mod format_messages;
mod fuzz;
mod genuine_runs;
mod goal_cli;
mod group_isolation;
mod group_next_step;
mod guard_hardening;
mod guard_record;
mod headless_cli;
mod headless_merge;
mod hook_bad_input;
mod hook_launcher;
mod hook_session;
mod hook_stop;
mod hook_subagent_stop;
mod integrity_execution;
mod integrity_forms;
mod integrity_ignored;
mod integrity_scan;
mod io_inputs;
mod io_paths;
mod io_reads;
mod last_mile_cli;
mod layers;
mod learn_verb;
mod next_step_agreement;
mod panics;
mod plan_frozen;
mod printed_commands;
mod readme_flow;
mod red_green;
mod resume_cancel;
mod roles;
mod shell_bad_input;
mod shell_flow;
mod shell_surfaces;
mod task_fail;
mod task_rollback;
mod task_start_complete;
mod tasks_corpus;
mod terminal_text;
mod testlog_runners;
mod tool_guard;
mod verify_run;
mod verify_status;
mod verify_trees;
