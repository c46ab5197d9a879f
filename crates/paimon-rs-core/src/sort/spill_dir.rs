//! Spill directories that say who owns them, and the sweep of those whose owner was killed.
//!
//! A writer's spill directory is `paimon-rs-spill-<pid>-<random>` in the spill base directory
//! (`write-buffer-spill.dir`, `$PAIMON_RS_TMP_DIR` or the system temp dir). It is removed when
//! the writer finishes, fails or is dropped; a killed writer (SIGKILL, OOM killer, power loss)
//! leaves it behind. So when a writer creates its spill directory it sweeps the siblings whose
//! owner is gone.
//!
//! Liveness is proven by a lock, not by the pid: the owner holds an exclusive `flock(2)` on
//! `<dir>/.lock` for the directory's whole life, and the kernel releases it when the owner's
//! process dies, however it dies. A sweeper that gets the lock (non-blocking) knows the owner is
//! gone, removes the directory while holding the lock, and never races a live owner: a pid can
//! be reused by an unrelated process, a lock cannot outlive its holder. To close the window
//! between creating the directory and locking it, the owner builds it under a name the sweep
//! does not take (`.paimon-rs-spill-<pid>-<random>.creating`), locks it, then renames it to its
//! final name. A `.creating` directory is only removed once its pid no longer exists (no
//! process has that pid, so its creator is dead); with the pid reused, it stays (a few bytes).
//! Directories without a pid in their name (older versions) or without a lock file and with a
//! live pid are left alone: never remove what is not proven dead.
//!
//! A lock is held per open file description, so it is also seen across threads of one process;
//! the sweep still skips its own process's directories. A forked child that keeps the lock fd
//! keeps the directory alive too. Not on Unix: directories are named the same, nothing is swept.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub const SPILL_DIR_PREFIX: &str = "paimon-rs-spill-";
const LOCK_FILE: &str = ".lock";
const CREATING_SUFFIX: &str = ".creating";

/// A writer's spill directory, locked while it exists; removed (then unlocked) when dropped.
#[derive(Debug)]
pub struct SpillDir {
    path: PathBuf,
    /// Holds the flock; closed (unlocked) only after the directory is gone.
    _lock: Option<File>,
}

impl SpillDir {
    /// Create a new spill directory in `base`, then sweep the spill directories of dead writers
    /// there (best effort: a sibling that cannot be removed is left, and never fails the write).
    pub fn create(base: &Path) -> Result<SpillDir> {
        crate::io::mkdirs(base)?;
        let pid = std::process::id();
        let staging = tempfile::Builder::new()
            .prefix(&format!(".{SPILL_DIR_PREFIX}{pid}-"))
            .suffix(CREATING_SUFFIX)
            .tempdir_in(base)
            .map_err(|e| Error::io(base, e))?;
        let lock = lock_new(&staging.path().join(LOCK_FILE))?;
        let staged = staging.path().to_path_buf();
        let final_name = staged
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix('.'))
            .and_then(|n| n.strip_suffix(CREATING_SUFFIX))
            .ok_or_else(|| Error::Internal(format!("spill dir name {}", staged.display())))?
            .to_string();
        let path = base.join(final_name);
        // keep the staging directory's auto-removal until the rename has succeeded
        fs::rename(&staged, &path).map_err(|e| Error::io(&path, e))?;
        let _ = staging.keep();
        let dir = SpillDir { path, _lock: lock };
        sweep_dead_spill_dirs(base);
        Ok(dir)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        // the lock (a field) is released after this, once the directory is gone
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Remove the spill directories in `base` whose owner is dead; returns those removed.
pub fn sweep_dead_spill_dirs(base: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(base) else {
        return vec![];
    };
    let own = std::process::id();
    let mut removed = vec![];
    for entry in rd.flatten() {
        let Ok(ft) = entry.file_type() else { continue };
        if !ft.is_dir() {
            continue; // symbolic links included: never followed
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if let Some(rest) = name.strip_prefix(SPILL_DIR_PREFIX) {
            let Some(pid) = pid_of(rest) else { continue };
            if pid == own {
                continue;
            }
            if let Some(_lock) = dead_owner_lock(&path, pid) {
                if fs::remove_dir_all(&path).is_ok() {
                    removed.push(path);
                }
            }
        } else if let Some(rest) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_prefix(SPILL_DIR_PREFIX))
            .and_then(|n| n.strip_suffix(CREATING_SUFFIX))
        {
            let Some(pid) = pid_of(rest) else { continue };
            if pid != own && !pid_exists(pid) && fs::remove_dir_all(&path).is_ok() {
                removed.push(path);
            }
        }
    }
    removed
}

/// The pid of `<pid>-<random>`.
fn pid_of(rest: &str) -> Option<u32> {
    let (pid, random) = rest.split_once('-')?;
    if random.is_empty() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok().filter(|&p| p > 0)
}

#[cfg(unix)]
mod sys {
    use std::fs::File;
    use std::os::fd::AsRawFd;

    /// Try to take an exclusive flock without waiting; false if another open file holds it.
    pub fn try_lock(f: &File) -> std::io::Result<bool> {
        // SAFETY: flock only reads the descriptor number; `f` owns it and is alive for the call.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(false)
        } else {
            Err(err)
        }
    }

    /// Whether a process with this pid exists (possibly an unrelated one that reused it).
    pub fn pid_exists(pid: u32) -> bool {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true; // not a pid we can ask about: assume alive
        };
        // SAFETY: kill with signal 0 sends nothing and touches no memory; it only checks that
        // the process exists (pid > 0, so never a process group).
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
}

#[cfg(unix)]
fn lock_new(path: &Path) -> Result<Option<File>> {
    let f = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    match sys::try_lock(&f) {
        Ok(true) => Ok(Some(f)),
        Ok(false) => Err(Error::Internal(format!(
            "new spill lock {} is held by another process",
            path.display()
        ))),
        Err(e) => Err(Error::io(path, e)),
    }
}

#[cfg(not(unix))]
fn lock_new(_path: &Path) -> Result<Option<File>> {
    Ok(None)
}

/// If the owner of a final-named spill directory is dead, the lock to hold while removing it
/// (`Some(None)` without a lock file). Dead: its lock can be taken; without a lock file: no
/// process has its pid.
#[cfg(unix)]
fn dead_owner_lock(dir: &Path, pid: u32) -> Option<Option<File>> {
    match File::open(dir.join(LOCK_FILE)) {
        Ok(f) => matches!(sys::try_lock(&f), Ok(true)).then_some(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            (!sys::pid_exists(pid)).then_some(None)
        }
        Err(_) => None,
    }
}

#[cfg(not(unix))]
fn dead_owner_lock(_dir: &Path, _pid: u32) -> Option<Option<File>> {
    None
}

#[cfg(unix)]
fn pid_exists(pid: u32) -> bool {
    sys::pid_exists(pid)
}

#[cfg(not(unix))]
fn pid_exists(_pid: u32) -> bool {
    true
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A pid that no process has: a child that has exited and been reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn named_after_the_owner_locked_and_removed_on_drop() {
        let base = tempfile::tempdir().unwrap();
        let d = SpillDir::create(base.path()).unwrap();
        let name = d.path().file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(&format!("{SPILL_DIR_PREFIX}{}-", std::process::id())));
        // another open file description cannot take the lock: the directory is live
        let other = File::open(d.path().join(LOCK_FILE)).unwrap();
        assert!(!sys::try_lock(&other).unwrap());
        assert!(dead_owner_lock(d.path(), std::process::id()).is_none());
        let p = d.path().to_path_buf();
        drop(d);
        assert!(!p.exists());
        assert_eq!(fs::read_dir(base.path()).unwrap().count(), 0);
    }

    #[test]
    fn sweeps_dead_owners_only() {
        let base = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        // a killed writer: final name, lock file nobody holds
        let killed = base.path().join(format!("{SPILL_DIR_PREFIX}{dead}-abc"));
        fs::create_dir(&killed).unwrap();
        File::create(killed.join(LOCK_FILE)).unwrap();
        fs::write(killed.join("run-1.arrow"), b"x").unwrap();
        // a live writer of another process whose pid we pretend is dead: it holds its lock
        let live = base.path().join(format!("{SPILL_DIR_PREFIX}{dead}-live"));
        fs::create_dir(&live).unwrap();
        let held = lock_new(&live.join(LOCK_FILE)).unwrap();
        // a writer killed while creating its directory, and one still creating (live pid 1)
        let staging_dead = base
            .path()
            .join(format!(".{SPILL_DIR_PREFIX}{dead}-x.creating"));
        let staging_live = base.path().join(format!(".{SPILL_DIR_PREFIX}1-x.creating"));
        // a directory of an older version (no pid), one without lock of a live pid, a symlink
        let old = base.path().join(format!("{SPILL_DIR_PREFIX}Ab3dEf"));
        let no_lock_live = base.path().join(format!("{SPILL_DIR_PREFIX}1-y"));
        let no_lock_dead = base.path().join(format!("{SPILL_DIR_PREFIX}{dead}-y"));
        for d in [
            &staging_dead,
            &staging_live,
            &old,
            &no_lock_live,
            &no_lock_dead,
        ] {
            fs::create_dir(d).unwrap();
        }
        let target = tempfile::tempdir().unwrap();
        let link = base.path().join(format!("{SPILL_DIR_PREFIX}{dead}-link"));
        std::os::unix::fs::symlink(target.path(), &link).unwrap();

        let d = SpillDir::create(base.path()).unwrap();
        for gone in [&killed, &staging_dead, &no_lock_dead] {
            assert!(!gone.exists(), "{}", gone.display());
        }
        for kept in [&live, &staging_live, &old, &no_lock_live, &link] {
            assert!(kept.exists(), "{}", kept.display());
        }
        assert!(target.path().exists());
        assert!(d.path().exists());
        drop(held);
        // once its owner is gone, the next sweep takes it
        assert_eq!(sweep_dead_spill_dirs(base.path()), vec![live.clone()]);
        assert!(d.path().exists(), "never the caller's own directory");
    }

    #[test]
    fn pid_parsing() {
        assert_eq!(pid_of("123-abc"), Some(123));
        assert_eq!(pid_of("123-"), None);
        assert_eq!(pid_of("abc-1"), None);
        assert_eq!(pid_of("0-x"), None);
        assert_eq!(pid_of("AbCdEf"), None);
    }
}
