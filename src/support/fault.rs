//! Crash points for the kill-at-every-step tests: with `SPECRUN_FAULT=<name>` in the
//! environment, the process aborts (no destructor, no flush, like a kill -9) when it
//! reaches `point(name)`. Compiled only into debug builds: a release binary has none.

/// Abort here when `SPECRUN_FAULT` names this point, panic when it is `panic:<name>`
/// (what a hook answers after a panic is tested so). Debug builds only.
#[cfg(debug_assertions)]
pub(crate) fn point(name: &str) {
    let Some(v) = std::env::var_os("SPECRUN_FAULT") else {
        return;
    };
    if v == name {
        std::process::abort();
    }
    if v.to_str().and_then(|v| v.strip_prefix("panic:")) == Some(name) {
        panic!("SPECRUN_FAULT=panic:{name}");
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub(crate) fn point(_name: &str) {}
