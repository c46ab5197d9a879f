//! glibc malloc thresholds set once when the module loads (issue 27: the raw / deletion-vector
//! read).
//!
//! glibc hands large freed chunks back to the OS: a chunk above the mmap threshold (dynamic,
//! 128 KiB growing to at most 32 MiB) is its own mapping, and the heap top above the trim
//! threshold (2 x the mmap threshold) is trimmed at `free`. A read decodes 128K-row batches and
//! the previous read's tables were just freed, so every read faulted its buffers in afresh
//! (`clear_page_erms`, 13-18% of a DV read's samples). With the mmap threshold fixed at
//! [`MMAP_THRESHOLD`] and the trim threshold at [`TRIM_THRESHOLD`] the freed pages are reused:
//! the DV read's CPU -12%, minor faults -75% (benches/RESULTS.md, alloc27); the price is up to
//! [`TRIM_THRESHOLD`] of freed memory kept resident per arena top until reused.
//!
//! Process-wide (Python, pyarrow and every other library share glibc's malloc), so:
//! - `PAIMON_RS_MALLOC_TUNING=0` (or `off` / `false` / `no`) leaves malloc alone;
//! - a user's own malloc settings win: with a `glibc.malloc.*` entry in `GLIBC_TUNABLES` or any
//!   `MALLOC_*_` environment variable glibc reads, nothing is set;
//! - other C libraries (musl) and other systems: nothing is set.
//!
//! Both thresholds are set together: `M_TRIM_THRESHOLD` alone also turns the dynamic mmap
//! threshold off, leaving it at 128 KiB, and made the DV read 2x slower (dvread26).

use std::sync::OnceLock;

/// Allocations at or above this size get their own mapping (returned to the OS at `free`).
pub const MMAP_THRESHOLD: usize = 32 << 20;
/// Free memory at the top of a heap above this size is returned to the OS at `free`.
pub const TRIM_THRESHOLD: usize = 64 << 20;

/// The environment variable that turns the setting off.
pub const ENV_SWITCH: &str = "PAIMON_RS_MALLOC_TUNING";

/// glibc's own malloc environment variables (glibc 2.36 `dl-tunables.list` env aliases).
const GLIBC_MALLOC_ENV: [&str; 8] = [
    "MALLOC_CHECK_",
    "MALLOC_TOP_PAD_",
    "MALLOC_PERTURB_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_MMAP_MAX_",
    "MALLOC_ARENA_MAX",
    "MALLOC_ARENA_TEST",
];

/// What module init did: `applied`, and why not when it did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Applied,
    Skipped(String),
}

static OUTCOME: OnceLock<Outcome> = OnceLock::new();

/// Whether to set the thresholds, from the environment (`var` reads one variable).
pub fn decide(var: impl Fn(&str) -> Option<String>) -> Outcome {
    if let Some(v) = var(ENV_SWITCH) {
        match switch(&v) {
            Some(false) => return Outcome::Skipped(format!("{ENV_SWITCH}={v}")),
            Some(true) => {}
            None => return Outcome::Skipped(invalid_switch(&v)),
        }
    }
    if let Some(t) = var("GLIBC_TUNABLES") {
        if t.contains("glibc.malloc.") {
            return Outcome::Skipped("GLIBC_TUNABLES sets glibc.malloc.* (the user's own)".into());
        }
    }
    if let Some(name) = GLIBC_MALLOC_ENV.iter().find(|n| var(n).is_some()) {
        return Outcome::Skipped(format!("{name} is set (the user's own malloc setting)"));
    }
    Outcome::Applied
}

/// The switch's value: on, off, or not a value it takes (None).
fn switch(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "0" | "off" | "false" | "no" => Some(false),
        "" | "1" | "on" | "true" | "yes" => Some(true),
        _ => None,
    }
}

fn invalid_switch(v: &str) -> String {
    format!("{ENV_SWITCH}={v} is not one of 0/off/false/no or 1/on/true/yes: malloc left alone")
}

/// A misspelt switch is not ignored silently: a warning through the `paimon_rs` logger (call
/// after the log bridge is up).
pub fn warn_if_invalid() {
    if let Ok(v) = std::env::var(ENV_SWITCH) {
        if switch(&v).is_none() {
            log::warn!(target: "paimon_rs", "{}", invalid_switch(&v));
        }
    }
}

/// Set the thresholds unless [`decide`] says no; once per process.
pub fn init() {
    OUTCOME.get_or_init(|| {
        let outcome = decide(|k| std::env::var(k).ok());
        if outcome == Outcome::Applied {
            apply()
        } else {
            outcome
        }
    });
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn apply() -> Outcome {
    // SAFETY: mallopt only changes malloc's parameters under its own lock; both values fit c_int.
    let mmap = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) };
    // SAFETY: as above.
    let trim = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) };
    if mmap == 1 && trim == 1 {
        Outcome::Applied
    } else {
        Outcome::Skipped(format!(
            "mallopt refused (M_MMAP_THRESHOLD -> {mmap}, M_TRIM_THRESHOLD -> {trim})"
        ))
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn apply() -> Outcome {
    Outcome::Skipped("not glibc".into())
}

/// `_core.malloc_tuning()`: what module init did to malloc, for users and tests:
/// `{"applied": bool, "reason": str, "mmap_threshold": int, "trim_threshold": int}` (the two
/// sizes are 0 when not applied).
#[pyo3::pyfunction]
pub fn malloc_tuning(py: pyo3::Python<'_>) -> pyo3::PyResult<pyo3::Bound<'_, pyo3::types::PyDict>> {
    use pyo3::types::PyDictMethods;
    let outcome = OUTCOME
        .get()
        .cloned()
        .unwrap_or_else(|| Outcome::Skipped("module init has not run".into()));
    let (applied, reason, mmap, trim) = match outcome {
        Outcome::Applied => (true, String::new(), MMAP_THRESHOLD, TRIM_THRESHOLD),
        Outcome::Skipped(r) => (false, r, 0, 0),
    };
    let d = pyo3::types::PyDict::new(py);
    d.set_item("applied", applied)?;
    d.set_item("reason", reason)?;
    d.set_item("mmap_threshold", mmap)?;
    d.set_item("trim_threshold", trim)?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn applied_by_default_and_off_by_switch_or_the_users_settings() {
        assert_eq!(decide(env(&[])), Outcome::Applied);
        assert_eq!(decide(env(&[(ENV_SWITCH, "1")])), Outcome::Applied);
        for off in ["0", "off", "FALSE", "no"] {
            assert!(matches!(
                decide(env(&[(ENV_SWITCH, off)])),
                Outcome::Skipped(_)
            ));
        }
        assert!(matches!(
            decide(env(&[(ENV_SWITCH, "maybe")])),
            Outcome::Skipped(r) if r.contains("not one of")
        ));
        assert!(matches!(
            decide(env(&[("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")])),
            Outcome::Skipped(r) if r.contains("GLIBC_TUNABLES")
        ));
        assert_eq!(
            decide(env(&[("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2")])),
            Outcome::Applied
        );
        assert!(matches!(
            decide(env(&[("MALLOC_ARENA_MAX", "2")])),
            Outcome::Skipped(r) if r.contains("MALLOC_ARENA_MAX")
        ));
    }
}
