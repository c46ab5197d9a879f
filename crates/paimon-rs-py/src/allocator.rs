//! The extension's global allocator: mimalloc, a private instance (it does not replace the
//! process's malloc, so pyarrow and Python keep theirs).
//!
//! mimalloc keeps freed pages for `purge_delay` milliseconds before handing them back to the
//! OS (mimalloc v3: 1000 ms). pyarrow's pool, Python and this allocator cannot reuse each
//! other's freed memory, so during a write (input batches in pyarrow's pool, spills and merges
//! here) a second of retained pages showed up as about 40 MB more peak RSS of a 64 mb-buffer
//! write (benches/RESULTS.md, session 3). [`PURGE_DELAY_MS`] keeps reuse within bursts (a spill,
//! a merge) and returns the rest soon after. `MIMALLOC_PURGE_DELAY` in the environment wins.

#[cfg(feature = "mimalloc")]
mod imp {
    use libmimalloc_sys as sys;

    /// Index of `mi_option_purge_delay` in mimalloc v3's `mi_option_e` (mimalloc.h); the Rust
    /// binding does not name it.
    const MI_OPTION_PURGE_DELAY: sys::mi_option_t = 15;

    /// mimalloc v3's default purge delay: the option is changed only if it still holds this,
    /// which also guards against a mimalloc whose option table is laid out differently.
    const DEFAULT_PURGE_DELAY_MS: i64 = 1000;

    /// Purge delay set at import (milliseconds).
    pub const PURGE_DELAY_MS: i64 = 100;

    #[global_allocator]
    static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

    pub fn configure() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: mi_option_get / mi_option_set read and store one entry of mimalloc's option
        // table (atomically); every index below _mi_option_last is valid, and 15 is.
        unsafe {
            if sys::mi_option_get(MI_OPTION_PURGE_DELAY) as i64 == DEFAULT_PURGE_DELAY_MS {
                sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS as _);
            }
        }
    }
}

#[cfg(not(feature = "mimalloc"))]
mod imp {
    pub fn configure() {}
}

pub use imp::*;
