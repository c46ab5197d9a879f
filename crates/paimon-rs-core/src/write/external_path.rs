//! `data-file.external-paths`: new data files written under other roots than the table's
//! (Java's `AbstractFileStore.createExternalPaths` and `ExternalPathProvider`s). A file goes to
//! `<root>/<partition path>/bucket-<n>/<file name>` and its manifest entry names it in
//! `_EXTERNAL_PATH`; every reader (ours, Java's, pypaimon's) finds it there.
//!
//! Strategies (`data-file.external-paths.strategy`): `none` (the default: the table's own
//! directory), `round-robin` (the roots in turn, from a random one), `specific-fs` (round robin
//! over the roots of the scheme `data-file.external-paths.specific-fs` names), `weight-robin`
//! (a root drawn at random by `data-file.external-paths.weights`; round robin with fewer than two
//! roots), `entropy-inject` (round robin, the file under three more directories made from the
//! murmur3 hash of its name, as Java spreads object store prefixes).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, Result};

const PATHS: &str = "data-file.external-paths";
const STRATEGY: &str = "data-file.external-paths.strategy";
const SPECIFIC_FS: &str = "data-file.external-paths.specific-fs";
const WEIGHTS: &str = "data-file.external-paths.weights";

#[derive(Debug, Clone, PartialEq)]
enum Pick {
    RoundRobin,
    /// Cumulative weights, one per root.
    Weighted(Vec<u64>),
    EntropyInject,
}

/// The roots new data files of a table go under, and how one is picked per file.
#[derive(Debug)]
pub struct ExternalPaths {
    /// Each root as Java writes it into `_EXTERNAL_PATH` (no trailing `/`).
    roots: Vec<String>,
    pick: Pick,
    next: AtomicUsize,
}

impl PartialEq for ExternalPaths {
    fn eq(&self, o: &Self) -> bool {
        self.roots == o.roots && self.pick == o.pick
    }
}

impl Clone for ExternalPaths {
    fn clone(&self) -> Self {
        ExternalPaths {
            roots: self.roots.clone(),
            pick: self.pick.clone(),
            next: AtomicUsize::new(self.next.load(Ordering::Relaxed)),
        }
    }
}

fn bad(key: &str, value: &str, why: &str) -> Error {
    Error::invalid(format!("option '{key}' = '{value}': {why}"))
}

/// A random number (the std hasher's per-process random keys; no dependency needed).
fn random() -> u64 {
    RandomState::new().hash_one(std::time::SystemTime::now())
}

impl ExternalPaths {
    /// The external paths the table options `get` set; None when new files stay in the table's
    /// directory (no paths, or strategy `none`). Java's rules: every root has a scheme; with
    /// `specific-fs` the roots of that scheme only, at least one.
    pub fn from_options<'a>(get: &dyn Fn(&str) -> Option<&'a str>) -> Result<Option<Self>> {
        let strategy = get(STRATEGY).unwrap_or("none");
        let paths = get(PATHS).map(str::trim).unwrap_or("");
        let pick = match strategy.to_ascii_lowercase().as_str() {
            "none" => return Ok(None),
            "round-robin" | "specific-fs" => Pick::RoundRobin,
            "weight-robin" => Pick::Weighted(vec![]),
            "entropy-inject" => Pick::EntropyInject,
            _ => {
                return Err(bad(
                    STRATEGY,
                    strategy,
                    "expected none, round-robin, specific-fs, weight-robin or entropy-inject",
                ))
            }
        };
        if paths.is_empty() {
            return Ok(None);
        }
        let specific = if strategy.eq_ignore_ascii_case("specific-fs") {
            Some(get(SPECIFIC_FS).ok_or_else(|| {
                Error::invalid(format!(
                    "option '{STRATEGY}' = 'specific-fs' needs '{SPECIFIC_FS}' (the scheme of \
                     the external paths to write to, e.g. s3)"
                ))
            })?)
        } else {
            None
        };
        let mut roots = vec![];
        for p in paths.split(',').map(str::trim) {
            let (scheme, root) = normalize_root(p).map_err(|why| bad(PATHS, paths, &why))?;
            if specific.is_some_and(|s| !s.eq_ignore_ascii_case(&scheme)) {
                continue;
            }
            roots.push(root);
        }
        if roots.is_empty() {
            return Err(bad(
                PATHS,
                paths,
                &format!(
                    "no path of the scheme '{}' ('{SPECIFIC_FS}')",
                    specific.unwrap_or_default()
                ),
            ));
        }
        let pick = match pick {
            Pick::Weighted(_) => match get(WEIGHTS) {
                Some(w) => {
                    let mut sum = 0u64;
                    let mut cumulative = vec![];
                    for x in w.split(',').map(str::trim) {
                        // Java's Integer.parseInt: at most i32::MAX each; the sum cannot overflow
                        match x.parse::<i32>() {
                            Ok(n) if n > 0 => {
                                sum += n as u64;
                                cumulative.push(sum);
                            }
                            _ => return Err(bad(WEIGHTS, w, "weights are positive integers")),
                        }
                    }
                    // Java falls back to round robin below two roots, weights unchecked
                    if roots.len() >= 2 && cumulative.len() != roots.len() {
                        return Err(bad(
                            WEIGHTS,
                            w,
                            &format!(
                                "{} weights for {} external paths (one weight per path)",
                                cumulative.len(),
                                roots.len()
                            ),
                        ));
                    }
                    if roots.len() < 2 {
                        Pick::RoundRobin
                    } else {
                        Pick::Weighted(cumulative)
                    }
                }
                None => Pick::RoundRobin,
            },
            p => p,
        };
        let next = AtomicUsize::new(random() as usize % roots.len());
        Ok(Some(ExternalPaths { roots, pick, next }))
    }

    /// The roots, as written into `_EXTERNAL_PATH`.
    pub fn roots(&self) -> &[String] {
        &self.roots
    }

    /// The roots as paths to list: a local directory (`file:` dropped) or an object store URI.
    pub fn root_paths(&self) -> Vec<PathBuf> {
        self.roots
            .iter()
            .map(|r| crate::io::external_file(r))
            .collect()
    }

    /// How many levels of hash directories a file has below its bucket directory: 4 with
    /// `entropy-inject` (see [`is_hash_dir`]), else 0.
    pub fn hash_levels(&self) -> usize {
        if self.pick == Pick::EntropyInject {
            HASH_DIR_WIDTHS.len()
        } else {
            0
        }
    }

    /// Where the new data file `name` of the bucket directory `bucket_dir` (under `table_root`)
    /// goes: the path to write it to and the `_EXTERNAL_PATH` its manifest entry carries.
    pub fn place(
        &self,
        table_root: &Path,
        bucket_dir: &Path,
        name: &str,
    ) -> Result<(PathBuf, String)> {
        let rel = bucket_dir.strip_prefix(table_root).map_err(|_| {
            Error::Internal(format!(
                "bucket directory {} is not under the table {}",
                bucket_dir.display(),
                table_root.display()
            ))
        })?;
        let rel = rel.to_string_lossy();
        let rel = rel.trim_matches('/');
        let root = match &self.pick {
            Pick::Weighted(cumulative) => {
                let total = cumulative.last().copied().unwrap_or(1).max(1);
                let r = random() % total;
                let i = cumulative.partition_point(|&c| c <= r);
                &self.roots[i.min(self.roots.len() - 1)]
            }
            _ => {
                let i = self.next.fetch_add(1, Ordering::Relaxed) % self.roots.len();
                &self.roots[i]
            }
        };
        let mut uri = format!("{root}/");
        if !rel.is_empty() {
            uri.push_str(rel);
            uri.push('/');
        }
        if self.pick == Pick::EntropyInject {
            uri.push_str(&entropy_dirs(name));
            uri.push('/');
        }
        uri.push_str(name);
        Ok((crate::io::external_file(&uri), uri))
    }
}

/// One root of `data-file.external-paths` as Java writes it into `_EXTERNAL_PATH`, with its
/// scheme: a local root (scheme `file`, any case; an empty or `localhost` authority) becomes
/// `file:/dir`, any other keeps its spelling; trailing `/` dropped. Why not, when `p` has no
/// scheme, is a relative local path, or names another host. Shared by the writers and by the
/// orphan clean, which compares other tables' roots with its own.
pub(crate) fn normalize_root(p: &str) -> std::result::Result<(String, String), String> {
    let Some((scheme, rest)) = p.split_once(':') else {
        return Err(format!(
            "'{p}' has no scheme (write file:///dir or s3://bucket/dir)"
        ));
    };
    // a URI scheme: a letter, then letters, digits, `+`, `-`, `.`
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return Err(format!("'{p}' has no scheme"));
    }
    if !scheme.eq_ignore_ascii_case("file") {
        return Ok((scheme.to_string(), p.trim_end_matches('/').to_string()));
    }
    // Java's Path form of a local URI: `file:/dir`
    if !rest.starts_with('/') {
        return Err(format!("'{p}' is not an absolute path (write file:///dir)"));
    }
    // `file://host/dir`: only an empty authority or `localhost` (the local disk, as our readers
    // take it) names a local directory; any other host is refused, never written under
    // `/host/dir`
    let rest = match rest.strip_prefix("//") {
        Some(r) => {
            let (host, dir) = r.split_at(r.find('/').unwrap_or(r.len()));
            if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
                return Err(format!(
                    "'{p}' names the host '{host}': a file: root is a local directory (write \
                     file:///dir)"
                ));
            }
            dir
        }
        None => rest,
    };
    let local = rest.trim_start_matches('/');
    if local.is_empty() {
        return Err(format!("'{p}' names no directory"));
    }
    Ok((
        scheme.to_string(),
        format!("file:/{}", local.trim_end_matches('/')),
    ))
}

/// The widths of entropy-inject's hash directories, outermost first.
const HASH_DIR_WIDTHS: [usize; 4] = [4, 4, 4, 8];

/// Whether `name` is an entropy-inject hash directory at `depth` (0 = just below the bucket
/// directory): as many binary digits as that level has. What listings under the roots descend
/// into, nothing else.
pub fn is_hash_dir(depth: usize, name: &str) -> bool {
    HASH_DIR_WIDTHS
        .get(depth)
        .is_some_and(|&w| name.len() == w && name.bytes().all(|b| b == b'0' || b == b'1'))
}

/// Java's `EntropyInjectExternalPathProvider.computeHash`: the low 20 bits of the murmur3 hash
/// of `name` in binary, as `xxxx/xxxx/xxxx/xxxxxxxx`.
fn entropy_dirs(name: &str) -> String {
    let h = crate::spec::bucket::murmur3_32(name.as_bytes(), 0) as u32;
    let bits = format!("{:032b}", h | 0x8000_0000);
    let b = &bits[12..];
    format!("{}/{}/{}/{}", &b[0..4], &b[4..8], &b[8..12], &b[12..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn of(kv: &[(&str, &str)]) -> Result<Option<ExternalPaths>> {
        let m: BTreeMap<String, String> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ExternalPaths::from_options(&|k| m.get(k).map(String::as_str))
    }

    #[test]
    fn none_unless_a_strategy_and_paths() {
        assert!(of(&[]).unwrap().is_none());
        assert!(of(&[(PATHS, "file:///a")]).unwrap().is_none());
        assert!(of(&[(STRATEGY, "round-robin")]).unwrap().is_none());
        let e = of(&[(PATHS, "file:///a/,s3://b/c/"), (STRATEGY, "round-robin")])
            .unwrap()
            .unwrap();
        assert_eq!(e.roots(), ["file:/a", "s3://b/c"]);
    }

    #[test]
    fn file_uri_authority_is_localhost_or_refused() {
        let s = (STRATEGY, "round-robin");
        let e = of(&[(PATHS, "file://localhost/tmp/x/,file:/tmp/y"), s])
            .unwrap()
            .unwrap();
        assert_eq!(e.roots(), ["file:/tmp/x", "file:/tmp/y"]);
        let err = of(&[(PATHS, "file://server/share/x"), s])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("host 'server'") && err.contains(PATHS),
            "{err}"
        );
        let err = of(&[(PATHS, "file://localhost"), s])
            .unwrap_err()
            .to_string();
        assert!(err.contains("names no directory"), "{err}");
    }

    #[test]
    fn java_refusals() {
        let s = (STRATEGY, "round-robin");
        let err = of(&[(PATHS, "/tmp/x"), s]).unwrap_err().to_string();
        assert!(err.contains("no scheme"), "{err}");
        let err = of(&[(PATHS, "file:///a"), (STRATEGY, "fastest")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("round-robin"), "{err}");
        let sf = (STRATEGY, "specific-fs");
        let err = of(&[(PATHS, "file:///a"), sf]).unwrap_err().to_string();
        assert!(err.contains(SPECIFIC_FS), "{err}");
        let err = of(&[(PATHS, "file:///a"), sf, (SPECIFIC_FS, "s3")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no path of the scheme 's3'"), "{err}");
        let w = (STRATEGY, "weight-robin");
        let err = of(&[(PATHS, "file:///a,file:///b"), w, (WEIGHTS, "1")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("1 weights for 2"), "{err}");
        let err = of(&[(PATHS, "file:///a,file:///b"), w, (WEIGHTS, "1,0")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("positive"), "{err}");
        for big in ["3000000000,1", "18446744073709551615,1"] {
            let err = of(&[(PATHS, "file:///a,file:///b"), w, (WEIGHTS, big)])
                .unwrap_err()
                .to_string();
            assert!(err.contains("positive integers"), "{err}");
        }
        // one root: round robin, the weights not compared (Java)
        let one = of(&[(PATHS, "file:///a"), w, (WEIGHTS, "1,2")])
            .unwrap()
            .unwrap();
        assert_eq!(one.pick, Pick::RoundRobin);
        let err = of(&[(PATHS, "file:rel/x"), s]).unwrap_err().to_string();
        assert!(err.contains("not an absolute path"), "{err}");
        let ok = of(&[(PATHS, "my-fs+x.y://b/x"), s]).unwrap().unwrap();
        assert_eq!(ok.roots(), ["my-fs+x.y://b/x"]);
    }

    #[test]
    fn specific_fs_keeps_its_scheme_only() {
        let e = of(&[
            (PATHS, "file:///a,s3://b/x,S3://c/y"),
            (STRATEGY, "specific-fs"),
            (SPECIFIC_FS, "s3"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(e.roots(), ["s3://b/x", "S3://c/y"]);
    }

    #[test]
    fn round_robin_takes_the_roots_in_turn() {
        let e = of(&[(PATHS, "file:///a,file:///b"), (STRATEGY, "round-robin")])
            .unwrap()
            .unwrap();
        let root = Path::new("/wh/db.db/t");
        let dir = root.join("dt=1/bucket-0");
        let placed: Vec<(PathBuf, String)> = (0..4)
            .map(|i| e.place(root, &dir, &format!("data-{i}.parquet")).unwrap())
            .collect();
        let to_a: Vec<bool> = placed
            .iter()
            .map(|(_, u)| u.starts_with("file:/a/"))
            .collect();
        assert_eq!(to_a, [to_a[0], !to_a[0], to_a[0], !to_a[0]]);
        for (i, (p, u)) in placed.iter().enumerate() {
            assert!(
                u.ends_with(&format!("/dt=1/bucket-0/data-{i}.parquet")),
                "{u}"
            );
            assert_eq!(*p, crate::io::external_file(u));
            assert!(p.starts_with("/a") || p.starts_with("/b"), "{p:?}");
        }
    }

    #[test]
    fn weights_choose_in_proportion() {
        let e = of(&[
            (PATHS, "s3://b/a,s3://b/z"),
            (STRATEGY, "weight-robin"),
            (WEIGHTS, "1,9"),
        ])
        .unwrap()
        .unwrap();
        let root = Path::new("s3://w/t");
        let dir = root.join("bucket-0");
        let to_z = (0..2000)
            .filter(|i| {
                let (_, u) = e.place(root, &dir, &format!("f{i}")).unwrap();
                u.starts_with("s3://b/z/bucket-0/")
            })
            .count();
        assert!((1600..1990).contains(&to_z), "{to_z}");
    }

    #[test]
    fn entropy_dirs_are_javas() {
        // the low 20 bits of the hash, in 4/4/4/8 directories
        let h = crate::spec::bucket::murmur3_32(b"data-1.parquet", 0) as u32;
        let d = entropy_dirs("data-1.parquet");
        let bits: String = d.chars().filter(|c| *c != '/').collect();
        assert_eq!(u32::from_str_radix(&bits, 2).unwrap(), h & 0xF_FFFF);
        assert_eq!(d.split('/').map(str::len).collect::<Vec<_>>(), [4, 4, 4, 8]);
        for (depth, part) in d.split('/').enumerate() {
            assert!(is_hash_dir(depth, part), "{depth} {part}");
        }
        assert!(!is_hash_dir(0, "0102"));
        assert!(!is_hash_dir(3, "0101"));
        assert!(!is_hash_dir(4, "0101"));
    }
}
