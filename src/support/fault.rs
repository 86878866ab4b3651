//! Crash points for the kill-at-every-step tests: with `SPECRUN_FAULT=<name>` in the
//! environment, the process aborts (no destructor, no flush, like a kill -9) when it
//! reaches `point(name)`. Compiled only into debug builds: a release binary has none.

/// Abort here when `SPECRUN_FAULT` names this point (debug builds only).
#[cfg(debug_assertions)]
pub fn point(name: &str) {
    if std::env::var_os("SPECRUN_FAULT").is_some_and(|v| v == name) {
        std::process::abort();
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn point(_name: &str) {}
