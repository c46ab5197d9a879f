//! Object stores behind [`crate::io`]: a process-wide registry of configured stores keyed by
//! `scheme://authority` (as Hadoop's `FileSystem` cache), filled from the catalog's or table's
//! options when a catalog or table is opened, and from the standard environment variables and
//! credential chains for a store nobody configured.
//!
//! Paths stay `Path`/`PathBuf`: a table at `s3://bucket/wh/db.db/t` is the `PathBuf` of that
//! string, and `join`, `parent`, `file_name` keep the `//` after the scheme intact (only
//! `components()` would collapse it, and nothing rebuilds a path from its components). A path
//! without `://` (or with `file://`) is a local file.
//!
//! The client is `object_store` (arrow-rs's own: Parquet's async reader is built on it, and
//! 0.14 is the version parquet 60 depends on). Its async calls run on one small tokio runtime
//! owned by this module; [`block_on`] is called from the engine's (rayon and Python) threads,
//! never from the runtime's own.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use object_store::path::Path as ObjPath;
use object_store::ObjectStore;

use crate::error::{Error, Result};

/// Where a remote path lives: its store and the key in it.
#[derive(Debug, Clone)]
pub struct Remote {
    pub store: Arc<dyn ObjectStore>,
    pub key: ObjPath,
    /// `scheme://authority`, the registry key.
    pub root: String,
    /// Whether the store can create a file only if it does not exist (snapshot commits).
    pub create_only: bool,
}

/// A URI split into scheme, authority and key; None for a local path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uri<'a> {
    pub scheme: &'a str,
    pub authority: &'a str,
    pub key: &'a str,
}

/// `scheme://authority/key` of `path`, or None if `path` is local (no `://`, or `file://`).
pub fn parse_uri(path: &str) -> Option<Uri<'_>> {
    let (scheme, rest) = path.split_once("://")?;
    if scheme.eq_ignore_ascii_case("file")
        || scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
    {
        return None;
    }
    let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
    Some(Uri {
        scheme,
        authority,
        key: key.trim_matches('/'),
    })
}

/// A local path with any `file://` (or `file:`) prefix removed.
pub fn local_path(path: &str) -> &str {
    path.strip_prefix("file://")
        .or_else(|| path.strip_prefix("file:"))
        .unwrap_or(path)
}

// ---- request counters (docs/object-stores.md: requests per commit and per read) ----

static GETS: AtomicU64 = AtomicU64::new(0);
static PUTS: AtomicU64 = AtomicU64::new(0);
static LISTS: AtomicU64 = AtomicU64::new(0);
static HEADS: AtomicU64 = AtomicU64::new(0);
static DELETES: AtomicU64 = AtomicU64::new(0);
/// Of the GETs, those of data files sent ahead of their opens (`remote::fetch_ahead`).
static GETS_AHEAD: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone, Copy)]
pub(crate) enum Req {
    Get,
    Put,
    List,
    Head,
    Delete,
    /// A GET sent ahead of a file's open (counted as a GET too).
    GetAhead,
}

pub(crate) fn count(r: Req) {
    if matches!(r, Req::GetAhead) {
        GETS_AHEAD.fetch_add(1, Ordering::Relaxed);
    }
    let c = match r {
        Req::GetAhead => &GETS,
        Req::Get => &GETS,
        Req::Put => &PUTS,
        Req::List => &LISTS,
        Req::Head => &HEADS,
        Req::Delete => &DELETES,
    };
    c.fetch_add(1, Ordering::Relaxed);
    #[cfg(test)]
    if matches!(r, Req::Get | Req::GetAhead) {
        THREAD_GETS.with(|c| c.set(c.get() + 1));
    }
}

#[cfg(test)]
thread_local! {
    static THREAD_GETS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// GETs sent from this thread (a read's, in a test: the process-wide counts are shared by the
/// tests running beside it).
#[cfg(test)]
pub(crate) fn gets_on_this_thread() -> u64 {
    THREAD_GETS.with(|c| c.get())
}

/// Requests this process sent to object stores since it started (or the last reset):
/// `(name, count)` for GET, PUT (a multipart part counts as one), LIST, HEAD, DELETE, and
/// GET_AHEAD: of the GETs, the whole-object GETs of data files sent ahead of their opens (a
/// read's next round of splits).
pub fn request_counts(reset: bool) -> Vec<(&'static str, u64)> {
    let take = |c: &AtomicU64| {
        if reset {
            c.swap(0, Ordering::Relaxed)
        } else {
            c.load(Ordering::Relaxed)
        }
    };
    vec![
        ("GET", take(&GETS)),
        ("PUT", take(&PUTS)),
        ("LIST", take(&LISTS)),
        ("HEAD", take(&HEADS)),
        ("DELETE", take(&DELETES)),
        ("GET_AHEAD", take(&GETS_AHEAD)),
    ]
}

// ---- runtime ----

/// The runtime of this process, with the id of the process that built it. A process forked
/// after using a store (`multiprocessing`'s default child, Spark's forked Python workers)
/// inherits the runtime's state but not its worker threads, which drive the sockets and timers:
/// its first request would wait forever. So the runtime is per process id, as the engine's
/// rayon pool (`paimon-rs-py`'s `pool.rs`), and so are the stores' clients (their connection
/// pools belong to the parent's runtime; see [`remote`]).
static RT: RwLock<Option<(u32, &'static tokio::runtime::Runtime)>> = RwLock::new(None);

fn runtime() -> &'static tokio::runtime::Runtime {
    let pid = std::process::id();
    if let Some((p, rt)) = *RT.read().unwrap_or_else(|e| e.into_inner()) {
        if p == pid {
            return rt;
        }
    }
    let mut g = RT.write().unwrap_or_else(|e| e.into_inner());
    if let Some((p, rt)) = *g {
        if p == pid {
            return rt;
        }
    }
    // A runtime of the parent process (if any) is left as it is, never dropped: dropping it
    // would signal and wait for threads that do not exist here (one leaked per fork).
    let rt: &'static tokio::runtime::Runtime = Box::leak(Box::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("paimon-rs-io")
            .enable_all()
            .build()
            .expect("the object store runtime starts (threads and a timer)"),
    ));
    *g = Some((pid, rt));
    rt
}

/// Start `f` on the object store runtime (a request sent ahead of the caller's need).
pub(crate) fn spawn<F>(f: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    runtime().spawn(f)
}

/// Run `f` to completion on the object store runtime. Called from threads outside it only.
pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

// ---- options ----

/// Option keys (or key prefixes ending in `.`) that configure a store, by back-end.
const S3_KEYS: &[&str] = &[
    "s3.endpoint",
    "s3.access-key",
    "s3.secret-key",
    "s3.session-token",
    "s3.session.token",
    "s3.region",
    "s3.path.style.access",
    "s3.allow-http",
    "s3.conditional-put",
    "s3.access.key",
    "s3.secret.key",
    "s3.path-style-access",
    "s3.security-token",
    "fs.s3.endpoint",
    "fs.s3.accessKeyId",
    "fs.s3.accessKeySecret",
    "fs.s3.securityToken",
    "fs.s3.region",
    "fs.s3a.endpoint",
    "fs.s3a.access.key",
    "fs.s3a.secret.key",
    "fs.s3a.session.token",
    "fs.s3a.endpoint.region",
    "fs.s3a.path.style.access",
];
const OSS_KEYS: &[&str] = &[
    "fs.oss.endpoint",
    "fs.oss.accessKeyId",
    "fs.oss.accessKeySecret",
    "fs.oss.securityToken",
    "fs.oss.region",
    "fs.oss.conditional-put",
];
const GCS_KEYS: &[&str] = &[
    "gs.service-account-path",
    "gs.service-account-key",
    "gs.application-credentials",
    "gs.endpoint",
    "gs.conditional-put",
    // Java Paimon's (Hadoop's GCS connector's) names
    "fs.gs.storage.root.url",
    "fs.gs.auth.type",
    "fs.gs.auth.service.account.json.keyfile",
    "fs.gs.project.id",
    // pypaimon's names
    "gcs.access-token",
    "gcs.access-token.expiration",
    "gcs.project-id",
];
const AZURE_KEYS: &[&str] = &[
    "azure.account-name",
    "azure.account-key",
    "azure.sas-token",
    "azure.endpoint",
    "azure.use-emulator",
];

/// Java Paimon's (Hadoop ABFS's) account key option: `fs.azure.account.key.<account>.<host>`
/// with `<host>` `dfs.core.windows.net` or `blob.core.windows.net`; the account it names.
fn azure_hadoop_account_key(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("fs.azure.account.key.")?;
    let (account, host) = rest.split_once('.')?;
    (!account.is_empty() && (host == "dfs.core.windows.net" || host == "blob.core.windows.net"))
        .then_some(account)
}

/// Prefixes that mark an option as a file system option (a key under one of them that is not
/// known is refused, never dropped).
const PREFIXES: &[&str] = &[
    "s3.",
    "fs.s3.",
    "fs.s3a.",
    "fs.oss.",
    "gs.",
    "fs.gs.",
    "gcs.",
    "azure.",
    "fs.azure.",
];

/// Whether `key` configures an object store (and is not a table option).
pub fn is_store_option(key: &str) -> bool {
    PREFIXES.iter().any(|p| key.starts_with(p))
}

/// The store options among `options`.
pub fn store_options(options: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    options
        .iter()
        .filter(|(k, _)| is_store_option(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn check_known(options: &BTreeMap<String, String>) -> Result<()> {
    for k in options.keys().filter(|k| is_store_option(k)) {
        let known = [S3_KEYS, OSS_KEYS, GCS_KEYS, AZURE_KEYS]
            .iter()
            .any(|ks| ks.contains(&k.as_str()))
            || azure_hadoop_account_key(k).is_some();
        if !known {
            return Err(Error::invalid(format!(
                "file system option '{k}' is not known to paimon_rs (docs/object-stores.md \
                 lists the options of s3://, oss://, gs:// and az:// warehouses)"
            )));
        }
    }
    Ok(())
}

fn opt<'a>(o: &'a BTreeMap<String, String>, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| o.get(*k).map(String::as_str))
}

fn parse_bool(o: &BTreeMap<String, String>, keys: &[&str]) -> Result<Option<bool>> {
    match keys.iter().find_map(|k| o.get(*k).map(|v| (k, v))) {
        None => Ok(None),
        Some((k, v)) => match v.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            _ => Err(Error::invalid(format!(
                "option '{k}': '{v}' is not true or false"
            ))),
        },
    }
}

fn store_err(root: &str, e: object_store::Error) -> Error {
    Error::invalid(format!("object store {root}: {e}"))
}

// ---- registry ----

/// A store's client and whether it can create an object only if absent.
struct Client {
    store: Arc<dyn ObjectStore>,
    create_only: bool,
}

struct Entry {
    store: Arc<dyn ObjectStore>,
    create_only: bool,
    /// The process that built the store's client, and what it was built from (a path and the
    /// options): a forked child builds its own from them (see [`runtime`]).
    pid: u32,
    spec: (String, BTreeMap<String, String>),
}

fn registry() -> &'static RwLock<HashMap<String, Arc<Entry>>> {
    static R: OnceLock<RwLock<HashMap<String, Arc<Entry>>>> = OnceLock::new();
    R.get_or_init(Default::default)
}

/// Configure the store that serves `path` from `options` (store options only are looked at;
/// unknown ones under a store prefix are refused), replacing the one registered for its
/// `scheme://authority`. A local path needs nothing (its store options are still checked).
pub fn configure(path: &str, options: &BTreeMap<String, String>) -> Result<()> {
    check_known(options)?;
    let Some(uri) = parse_uri(path) else {
        return Ok(());
    };
    let root = format!("{}://{}", uri.scheme, uri.authority);
    let has_own = options.keys().any(|k| is_store_option(k));
    if !has_own
        && registry()
            .read()
            .map(|r| r.contains_key(&root))
            .unwrap_or(false)
    {
        // opened again without options (e.g. a table handle made by the catalog): keep the
        // configured store
        return Ok(());
    }
    let entry = build(&uri, path, options)?;
    registry()
        .write()
        .map_err(|_| Error::Internal("object store registry poisoned".into()))?
        .insert(root, Arc::new(entry));
    Ok(())
}

/// The store serving `path` and its key there; None if `path` is local. A store nobody
/// configured is built from the environment (credential chains, `AWS_*`, `GOOGLE_*`,
/// `AZURE_*`) on first use.
pub fn remote(path: &Path) -> Result<Option<Remote>> {
    let Some(s) = path.to_str() else {
        return Ok(None);
    };
    let Some(uri) = parse_uri(s) else {
        return Ok(None);
    };
    let root = format!("{}://{}", uri.scheme, uri.authority);
    let key = ObjPath::parse(uri.key)
        .map_err(|e| Error::invalid(format!("path '{s}' is not a valid object key: {e}")))?;
    let found = registry()
        .read()
        .map_err(|_| Error::Internal("object store registry poisoned".into()))?
        .get(&root)
        .cloned();
    let pid = std::process::id();
    let entry = match found {
        // memory:// stores hold their objects: a child keeps its copy of them
        Some(e) if e.pid == pid || uri.scheme.eq_ignore_ascii_case("memory") => e,
        Some(e) => {
            // a store of the parent process: its client's connections are the parent's
            let (p, o) = &e.spec;
            let uri = parse_uri(p).ok_or_else(|| Error::Internal("store path".into()))?;
            let fresh = Arc::new(build(&uri, p, o)?);
            let mut reg = registry()
                .write()
                .map_err(|_| Error::Internal("object store registry poisoned".into()))?;
            let cur = reg.entry(root.clone()).or_insert_with(|| fresh.clone());
            if cur.pid != pid {
                *cur = fresh;
            }
            cur.clone()
        }
        None => {
            let e = Arc::new(build(&uri, s, &BTreeMap::new())?);
            registry()
                .write()
                .map_err(|_| Error::Internal("object store registry poisoned".into()))?
                .entry(root.clone())
                .or_insert(e)
                .clone()
        }
    };
    Ok(Some(Remote {
        store: entry.store.clone(),
        key,
        root,
        create_only: entry.create_only,
    }))
}

fn build(uri: &Uri<'_>, full: &str, o: &BTreeMap<String, String>) -> Result<Entry> {
    let c = build_client(uri, full, o)?;
    Ok(Entry {
        store: c.store,
        create_only: c.create_only,
        pid: std::process::id(),
        spec: (full.to_string(), o.clone()),
    })
}

fn build_client(uri: &Uri<'_>, full: &str, o: &BTreeMap<String, String>) -> Result<Client> {
    let root = format!("{}://{}", uri.scheme, uri.authority);
    if uri.authority.is_empty() {
        return Err(Error::invalid(format!(
            "path '{full}': no bucket (expected {}://<bucket>/<path>)",
            uri.scheme
        )));
    }
    match uri.scheme.to_ascii_lowercase().as_str() {
        "memory" => Ok(Client {
            store: Arc::new(object_store::memory::InMemory::new()),
            create_only: true,
        }),
        #[cfg(feature = "object-stores")]
        "s3" | "s3a" => build_s3(uri.authority, &root, o, false),
        #[cfg(feature = "object-stores")]
        "oss" => build_s3(uri.authority, &root, o, true),
        #[cfg(feature = "object-stores")]
        "gs" | "gcs" => build_gcs(uri.authority, &root, o),
        #[cfg(feature = "object-stores")]
        "az" | "azure" | "abfs" | "abfss" | "adl" => build_azure(uri.authority, &root, o),
        other => Err(Error::unsupported(format!(
            "path '{full}': scheme '{other}://' (paimon_rs serves local paths, file://, s3://, \
             s3a://, oss://, gs://, az://, abfs(s)://{})",
            if cfg!(feature = "object-stores") {
                ""
            } else {
                "; this build lacks the `object-stores` feature: local paths and memory:// only"
            }
        ))),
    }
}

/// A GCS client from Paimon's, Java Paimon's (Hadoop GCS connector's) and pypaimon's option
/// names. At most one way to authenticate may be given; without any, the standard chain
/// (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's application default credentials, then the
/// instance metadata server).
#[cfg(feature = "object-stores")]
fn build_gcs(bucket: &str, root: &str, o: &BTreeMap<String, String>) -> Result<Client> {
    use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey as K};
    let mut b = GoogleCloudStorageBuilder::from_env().with_bucket_name(bucket);
    let keyfile_keys = [
        "gs.service-account-path",
        "fs.gs.auth.service.account.json.keyfile",
    ];
    if keyfile_keys.iter().all(|k| o.contains_key(*k)) && o[keyfile_keys[0]] != o[keyfile_keys[1]] {
        return Err(Error::invalid(format!(
            "{root}: options '{}' and '{}' name different key files",
            keyfile_keys[0], keyfile_keys[1]
        )));
    }
    let keyfile = opt(o, &keyfile_keys);
    let key = opt(o, &["gs.service-account-key"]);
    let adc = opt(o, &["gs.application-credentials"]);
    let token = opt(o, &["gcs.access-token"]);
    let auth = opt(o, &["fs.gs.auth.type"]).map(|s| s.trim().to_ascii_uppercase());
    let given: Vec<&str> = [
        (keyfile.is_some(), "a service account key file"),
        (key.is_some(), "'gs.service-account-key'"),
        (adc.is_some(), "'gs.application-credentials'"),
        (token.is_some(), "'gcs.access-token'"),
    ]
    .iter()
    .filter(|(set, _)| *set)
    .map(|(_, name)| *name)
    .collect();
    if given.len() > 1 {
        return Err(Error::invalid(format!(
            "{root}: more than one GCS credential given ({}); give one",
            given.join(", ")
        )));
    }
    match auth.as_deref() {
        None => {}
        Some("SERVICE_ACCOUNT_JSON_KEYFILE") if keyfile.is_none() => {
            return Err(Error::invalid(format!(
                "{root}: 'fs.gs.auth.type' = SERVICE_ACCOUNT_JSON_KEYFILE needs \
                 'fs.gs.auth.service.account.json.keyfile'"
            )))
        }
        Some("SERVICE_ACCOUNT_JSON_KEYFILE") => {}
        Some(a @ ("APPLICATION_DEFAULT" | "UNAUTHENTICATED")) if !given.is_empty() => {
            return Err(Error::invalid(format!(
                "{root}: 'fs.gs.auth.type' = {a} conflicts with {}",
                given.join(", ")
            )))
        }
        Some("APPLICATION_DEFAULT") => {}
        Some("UNAUTHENTICATED") => {
            // object_store 0.14.2 skips the token for every request but PUT, which still asks
            // the credential provider (the metadata server, without one): give it an empty one,
            // as its own `disable_oauth` key file does
            b = b
                .with_config(K::SkipSignature, "true")
                .with_credentials(Arc::new(object_store::StaticCredentialProvider::new(
                    object_store::gcp::GcpCredential {
                        bearer: String::new(),
                    },
                )))
        }
        Some(other) => {
            return Err(Error::unsupported(format!(
                "{root}: 'fs.gs.auth.type' = {other} is not supported by paimon_rs \
                 (APPLICATION_DEFAULT, SERVICE_ACCOUNT_JSON_KEYFILE, UNAUTHENTICATED; or \
                 'gcs.access-token')"
            )))
        }
    }
    if let Some(v) = keyfile {
        b = b.with_config(K::ServiceAccount, v);
    }
    if let Some(v) = key {
        b = b.with_config(K::ServiceAccountKey, v);
    }
    if let Some(v) = adc {
        b = b.with_config(K::ApplicationCredentials, v);
    }
    match (token, opt(o, &["gcs.access-token.expiration"])) {
        (None, Some(_)) => {
            return Err(Error::invalid(format!(
                "{root}: 'gcs.access-token.expiration' without 'gcs.access-token'"
            )))
        }
        (Some(t), exp) => {
            if let Some(exp) = exp {
                check_token_expiry(root, exp)?;
            }
            b = b.with_config(K::BearerToken, t);
        }
        (None, None) => {}
    }
    if let Some(e) = opt(o, &["gs.endpoint", "fs.gs.storage.root.url"]) {
        let e = e.trim().trim_end_matches('/');
        if !(e.starts_with("http://") || e.starts_with("https://")) {
            return Err(Error::invalid(format!(
                "{root}: GCS endpoint '{e}' is not an http:// or https:// URL"
            )));
        }
        b = b.with_config(K::BaseUrl, e);
    }
    // GCS honours `x-goog-if-generation-match: 0` (object_store's PutMode::Create); a
    // GCS-compatible server that does not can say so, and its commits are refused.
    let create_only = match opt(o, &["gs.conditional-put"]).map(|s| s.trim().to_ascii_lowercase()) {
        None => true,
        Some(v) if v == "generation" || v == "true" => true,
        Some(v) if v == "disabled" || v == "false" => false,
        Some(v) => {
            return Err(Error::invalid(format!(
                "option 'gs.conditional-put': '{v}' (generation or disabled)"
            )))
        }
    };
    Ok(Client {
        store: Arc::new(b.build().map_err(|e| store_err(root, e))?),
        create_only,
    })
}

/// pypaimon's `gcs.access-token.expiration` (ISO 8601, as Python's `datetime.fromisoformat`;
/// without an offset it is UTC): a token already expired is refused, never sent.
#[cfg(feature = "object-stores")]
fn check_token_expiry(root: &str, exp: &str) -> Result<()> {
    let s = exp.trim();
    let at = chrono::DateTime::parse_from_rfc3339(s)
        .map(|d| d.with_timezone(&chrono::Utc))
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
                .or_else(|_| chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f"))
                .map(|d| d.and_utc())
        })
        .map_err(|_| {
            Error::invalid(format!(
                "{root}: 'gcs.access-token.expiration' = '{exp}' is not an ISO 8601 date-time"
            ))
        })?;
    if at <= chrono::Utc::now() {
        return Err(Error::invalid(format!(
            "{root}: 'gcs.access-token' expired at {exp} ('gcs.access-token.expiration')"
        )));
    }
    Ok(())
}

/// An Azure Blob / ADLS Gen2 client: the account and container come from the URI
/// (`abfss://container@account.dfs.core.windows.net`) or from `azure.account-name` (and the
/// environment) for `az://container`; the key from `azure.account-key` or Java Paimon's
/// `fs.azure.account.key.<account>.dfs.core.windows.net`.
#[cfg(feature = "object-stores")]
fn build_azure(authority: &str, root: &str, o: &BTreeMap<String, String>) -> Result<Client> {
    use object_store::azure::{AzureConfigKey as K, MicrosoftAzureBuilder};
    let mut b = MicrosoftAzureBuilder::from_env().with_url(root);
    // the account named by an abfs(s)://container@account.<host> URI
    let uri_account = authority
        .split_once('@')
        .and_then(|(_, host)| host.split_once('.'))
        .map(|(a, _)| a);
    let mut account = opt(o, &["azure.account-name"]);
    if let (Some(a), Some(u)) = (account, uri_account) {
        if a != u {
            return Err(Error::invalid(format!(
                "{root}: 'azure.account-name' = '{a}' but the path is on account '{u}'"
            )));
        }
    }
    let hadoop_keys: Vec<(&str, &str)> = o
        .iter()
        .filter_map(|(k, v)| azure_hadoop_account_key(k).map(|a| (a, v.as_str())))
        .collect();
    let mut key = opt(o, &["azure.account-key"]);
    if !hadoop_keys.is_empty() {
        let want = account.or(uri_account);
        let found = match want {
            Some(w) => hadoop_keys.iter().find(|(a, _)| *a == w),
            None if hadoop_keys.len() == 1 => hadoop_keys.first(),
            None => None,
        };
        let Some((a, v)) = found else {
            let named: Vec<&str> = hadoop_keys.iter().map(|(a, _)| *a).collect();
            return Err(Error::invalid(format!(
                "{root}: 'fs.azure.account.key.*' names account(s) {} but not the account \
                 of this path ({})",
                named.join(", "),
                want.unwrap_or("none: set 'azure.account-name' or use abfss://container@account.dfs.core.windows.net")
            )));
        };
        if key.is_some_and(|k| k != *v) {
            return Err(Error::invalid(format!(
                "{root}: 'azure.account-key' and 'fs.azure.account.key.{a}...' differ"
            )));
        }
        account = Some(a);
        key = Some(v);
    }
    if let Some(a) = account {
        b = b.with_config(K::AccountName, a);
    }
    if let Some(k) = key {
        b = b.with_config(K::AccessKey, k);
    }
    for (k, key) in [
        ("azure.sas-token", K::SasKey),
        ("azure.endpoint", K::Endpoint),
        ("azure.use-emulator", K::UseEmulator),
    ] {
        if let Some(v) = o.get(k) {
            b = b.with_config(key, v);
        }
    }
    Ok(Client {
        store: Arc::new(b.build().map_err(|e| store_err(root, e))?),
        create_only: true,
    })
}

#[cfg(feature = "object-stores")]
fn build_s3(bucket: &str, root: &str, o: &BTreeMap<String, String>, oss: bool) -> Result<Client> {
    use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
    let mut b = AmazonS3Builder::from_env().with_bucket_name(bucket);
    let (endpoint, ak, sk, token, region, style, cond) = if oss {
        (
            opt(o, &["fs.oss.endpoint"]),
            opt(o, &["fs.oss.accessKeyId"]),
            opt(o, &["fs.oss.accessKeySecret"]),
            opt(o, &["fs.oss.securityToken"]),
            opt(o, &["fs.oss.region"]),
            None,
            opt(o, &["fs.oss.conditional-put"]),
        )
    } else {
        (
            opt(o, &["s3.endpoint", "fs.s3a.endpoint"]),
            opt(o, &["s3.access-key", "fs.s3a.access.key"]),
            opt(o, &["s3.secret-key", "fs.s3a.secret.key"]),
            opt(
                o,
                &[
                    "s3.session-token",
                    "s3.session.token",
                    "fs.s3a.session.token",
                ],
            ),
            opt(o, &["s3.region", "fs.s3a.endpoint.region"]),
            parse_bool(o, &["s3.path.style.access", "fs.s3a.path.style.access"])?,
            opt(o, &["s3.conditional-put"]),
        )
    };
    // no keys given: the AWS shared config files' profile, the chain's step object_store
    // lacks (aws_profile.rs); the environment's endpoint and region win over the profile's
    let profile = if oss || ak.is_some() || std::env::var_os("AWS_ACCESS_KEY_ID").is_some() {
        None
    } else {
        super::aws_profile::shared_profile()?
    };
    let unset = |k: &[&str]| k.iter().all(|k| std::env::var_os(k).is_none());
    let from_profile = |f: fn(&super::aws_profile::Profile) -> Option<&String>| {
        profile.as_ref().and_then(|p| f(p).map(String::as_str))
    };
    let endpoint = endpoint.or_else(|| {
        from_profile(|p| p.endpoint.as_ref())
            .filter(|_| unset(&["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]))
    });
    let region = region.or_else(|| {
        from_profile(|p| p.region.as_ref()).filter(|_| unset(&["AWS_REGION", "AWS_DEFAULT_REGION"]))
    });
    let (ak, sk, token) = match profile.as_ref().and_then(|p| p.keys.as_ref()) {
        Some((pak, psk, ptoken)) if ak.is_none() && sk.is_none() => (
            Some(pak.as_str()),
            Some(psk.as_str()),
            token.or(ptoken.as_deref()),
        ),
        _ => (ak, sk, token),
    };
    if let Some(e) = endpoint {
        // Hadoop-style endpoints may omit the scheme
        let e = if e.contains("://") {
            e.to_string()
        } else {
            format!("https://{e}")
        };
        if e.starts_with("http://") {
            b = b.with_allow_http(true);
        }
        b = b.with_endpoint(e);
    } else if oss {
        return Err(Error::invalid(format!(
            "{root}: option 'fs.oss.endpoint' is required (e.g. oss-cn-hangzhou.aliyuncs.com)"
        )));
    }
    if let Some(v) = parse_bool(o, &["s3.allow-http"])? {
        b = b.with_allow_http(v);
    }
    if let Some(v) = ak {
        b = b.with_access_key_id(v);
    }
    if let Some(v) = sk {
        b = b.with_secret_access_key(v);
    }
    if let Some(v) = token {
        b = b.with_token(v);
    }
    match region {
        Some(r) => b = b.with_region(r),
        None if std::env::var_os("AWS_REGION").is_none()
            && std::env::var_os("AWS_DEFAULT_REGION").is_none() =>
        {
            b = b.with_region("us-east-1")
        }
        None => {}
    }
    match style {
        Some(path_style) => b = b.with_virtual_hosted_style_request(!path_style),
        None if oss => b = b.with_virtual_hosted_style_request(true),
        None => {}
    }
    // S3 (since 2024), MinIO, R2 and moto honour `If-None-Match: *` on PUT; Aliyun OSS's S3
    // API is not known to, so its commits are refused unless the user says it does.
    let create_only = match cond.map(|s| s.trim().to_ascii_lowercase()) {
        None => !oss,
        Some(v) if v == "etag" || v == "true" => true,
        Some(v) if v == "disabled" || v == "false" => false,
        Some(v) => {
            return Err(Error::invalid(format!(
                "option '{}conditional-put': '{v}' (etag or disabled)",
                if oss { "fs.oss." } else { "s3." }
            )))
        }
    };
    b = b.with_conditional_put(if create_only {
        S3ConditionalPut::ETagMatch
    } else {
        S3ConditionalPut::Disabled
    });
    Ok(Client {
        store: Arc::new(b.build().map_err(|e| store_err(root, e))?),
        create_only,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn uris_split_into_scheme_authority_key() {
        let u = parse_uri("s3://bucket/wh/db.db/t/snapshot/LATEST").unwrap();
        assert_eq!(
            (u.scheme, u.authority, u.key),
            ("s3", "bucket", "wh/db.db/t/snapshot/LATEST")
        );
        let u = parse_uri("abfss://c@acct.dfs.core.windows.net/wh/").unwrap();
        assert_eq!((u.authority, u.key), ("c@acct.dfs.core.windows.net", "wh"));
        assert_eq!(parse_uri("gs://b").unwrap().key, "");
        assert!(parse_uri("/tmp/wh").is_none());
        assert!(parse_uri("file:///tmp/wh").is_none());
        assert!(parse_uri("relative/wh").is_none());
        assert_eq!(local_path("file:///tmp/wh"), "/tmp/wh");
        assert_eq!(local_path("/tmp/wh"), "/tmp/wh");
    }

    #[test]
    fn pathbuf_keeps_the_uri_through_join_parent_file_name() {
        let t = Path::new("s3://bucket/wh/db.db/t");
        let f = t.join("snapshot").join("snapshot-1");
        assert_eq!(
            f.to_str().unwrap(),
            "s3://bucket/wh/db.db/t/snapshot/snapshot-1"
        );
        assert_eq!(
            f.parent().unwrap().to_str().unwrap(),
            "s3://bucket/wh/db.db/t/snapshot"
        );
        assert_eq!(f.file_name().unwrap(), "snapshot-1");
        let abs = crate::io::resolve(t, &f);
        assert_eq!(abs, f, "a URI is kept whole, never joined under another");
        assert_eq!(
            crate::io::resolve(t, "dt=a/bucket-0"),
            t.join("dt=a/bucket-0")
        );
        let r = remote(&f).unwrap().unwrap();
        assert_eq!(r.key.as_ref(), "wh/db.db/t/snapshot/snapshot-1");
        assert_eq!(r.root, "s3://bucket");
        assert!(remote(Path::new("/tmp/x")).unwrap().is_none());
    }

    #[test]
    fn the_registry_is_keyed_by_scheme_and_authority() {
        configure("memory://reg-a/wh", &o(&[])).unwrap();
        let a1 = remote(Path::new("memory://reg-a/wh/x")).unwrap().unwrap();
        let a2 = remote(Path::new("memory://reg-a/other")).unwrap().unwrap();
        let b = remote(Path::new("memory://reg-b/wh/x")).unwrap().unwrap();
        assert!(Arc::ptr_eq(&a1.store, &a2.store));
        assert!(!Arc::ptr_eq(&a1.store, &b.store));
    }

    #[test]
    fn store_options_are_recognised_and_unknown_ones_refused() {
        assert!(is_store_option("s3.endpoint"));
        assert!(is_store_option("fs.oss.endpoint"));
        assert!(!is_store_option("bucket"));
        let e = configure("s3://b/wh", &o(&[("s3.endpiont", "http://x")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("s3.endpiont"), "{e}");
        let e = remote(Path::new("ftp://b/x")).unwrap_err().to_string();
        assert!(e.contains("ftp"), "{e}");
    }

    #[cfg(feature = "object-stores")]
    #[test]
    fn s3_options_build_a_store_and_oss_refuses_create_only_by_default() {
        let opts = o(&[
            ("s3.endpoint", "http://127.0.0.1:1"),
            ("s3.access-key", "a"),
            ("s3.secret-key", "b"),
            ("s3.path.style.access", "true"),
        ]);
        configure("s3://opt-bucket/wh", &opts).unwrap();
        let r = remote(Path::new("s3://opt-bucket/wh/t")).unwrap().unwrap();
        assert!(r.create_only);
        let e = configure("s3://b2/wh", &o(&[("s3.path.style.access", "yes")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("s3.path.style.access"), "{e}");
        configure(
            "oss://ob/wh",
            &o(&[("fs.oss.endpoint", "oss-cn-hangzhou.aliyuncs.com")]),
        )
        .unwrap();
        assert!(
            !remote(Path::new("oss://ob/wh"))
                .unwrap()
                .unwrap()
                .create_only
        );
        let e = configure("oss://ob2/wh", &o(&[])).unwrap_err().to_string();
        assert!(e.contains("fs.oss.endpoint"), "{e}");
    }

    #[cfg(feature = "object-stores")]
    #[test]
    fn gcs_options_map_paimon_hadoop_and_pypaimon_names() {
        let emu = [
            ("gs.endpoint", "http://127.0.0.1:1/"),
            ("fs.gs.auth.type", "UNAUTHENTICATED"),
        ];
        configure("gs://g-anon/wh", &o(&emu)).unwrap();
        assert!(
            remote(Path::new("gs://g-anon/wh"))
                .unwrap()
                .unwrap()
                .create_only
        );
        // the emulator's service account JSON (object_store's own escape hatch)
        let key = r#"{"disable_oauth": true, "gcs_base_url": "http://127.0.0.1:1",
                      "client_email": "", "private_key": "", "private_key_id": ""}"#;
        configure("gs://g-key/wh", &o(&[("gs.service-account-key", key)])).unwrap();
        // Hadoop's and pypaimon's names are known; project ids are accepted
        configure(
            "gs://g-tok/wh",
            &o(&[
                ("gcs.access-token", "ya29.x"),
                ("gcs.access-token.expiration", "2999-01-01T00:00:00"),
                ("gcs.project-id", "p"),
                ("fs.gs.project.id", "p"),
                ("fs.gs.storage.root.url", "http://127.0.0.1:1"),
            ]),
        )
        .unwrap();
        let err = |opts: &[(&str, &str)]| {
            configure("gs://g-bad/wh", &o(opts))
                .unwrap_err()
                .to_string()
        };
        let e = err(&[
            ("gcs.access-token", "t"),
            ("gcs.access-token.expiration", "2001-01-01T00:00:00+00:00"),
        ]);
        assert!(e.contains("expired"), "{e}");
        let e = err(&[("gcs.access-token.expiration", "2999-01-01T00:00:00")]);
        assert!(e.contains("without 'gcs.access-token'"), "{e}");
        let e = err(&[
            ("gcs.access-token", "t"),
            ("gcs.access-token.expiration", "soon"),
        ]);
        assert!(e.contains("ISO 8601"), "{e}");
        let e = err(&[("fs.gs.auth.type", "SERVICE_ACCOUNT_JSON_KEYFILE")]);
        assert!(e.contains("fs.gs.auth.service.account.json.keyfile"), "{e}");
        let e = err(&[("fs.gs.auth.type", "COMPUTE_ENGINE")]);
        assert!(e.contains("COMPUTE_ENGINE"), "{e}");
        let e = err(&[
            ("fs.gs.auth.type", "UNAUTHENTICATED"),
            ("gcs.access-token", "t"),
        ]);
        assert!(e.contains("conflicts"), "{e}");
        let e = err(&[("gs.service-account-key", key), ("gcs.access-token", "t")]);
        assert!(e.contains("more than one GCS credential"), "{e}");
        let e = err(&[("gs.endpoint", "127.0.0.1:1")]);
        assert!(e.contains("not an http"), "{e}");
        let e = err(&[("gs.conditional-put", "maybe")]);
        assert!(e.contains("gs.conditional-put"), "{e}");
        let e = err(&[(
            "fs.gs.auth.service.account.json.keyfile",
            "/nonexistent/key.json",
        )]);
        assert!(e.contains("gs://g-bad"), "{e}");
        let e = err(&[("gs.service-acount-path", "/k.json")]);
        assert!(e.contains("gs.service-acount-path"), "{e}");
        // a server known to ignore preconditions: commits are refused, not made unsafe
        let no_cond = [emu[0], emu[1], ("gs.conditional-put", "disabled")];
        configure("gs://g-nocond/wh", &o(&no_cond)).unwrap();
        assert!(
            !remote(Path::new("gs://g-nocond/wh"))
                .unwrap()
                .unwrap()
                .create_only
        );
        let e =
            crate::io::create_exclusive(Path::new("gs://g-nocond/wh/snapshot/snapshot-1"), b"{}")
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("gs.conditional-put") && e.contains("commit lock"),
            "{e}"
        );
    }

    #[cfg(feature = "object-stores")]
    #[test]
    fn azure_uris_and_options() {
        for (uri, store) in [
            ("az://cont/wh/db.db/t", "az://cont"),
            ("azure://cont/wh", "azure://cont"),
            (
                "abfss://cont@acct.dfs.core.windows.net/wh",
                "abfss://cont@acct.dfs.core.windows.net",
            ),
        ] {
            let u = parse_uri(uri).unwrap();
            assert_eq!(format!("{}://{}", u.scheme, u.authority), store);
        }
        let key = "YWJj"; // base64 "abc"
        configure(
            "az://ca/wh",
            &o(&[("azure.account-name", "acct"), ("azure.account-key", key)]),
        )
        .unwrap();
        configure(
            "azure://cb/wh",
            &o(&[
                ("azure.account-name", "acct"),
                ("azure.sas-token", "sv=1&sig=x"),
            ]),
        )
        .unwrap();
        // Java Paimon's (Hadoop ABFS's) key option names the account
        let hk = "fs.azure.account.key.acct.dfs.core.windows.net";
        configure("abfss://cc@acct.dfs.core.windows.net/wh", &o(&[(hk, key)])).unwrap();
        configure("az://cd/wh", &o(&[(hk, key)])).unwrap();
        let err = |p: &str, opts: &[(&str, &str)]| configure(p, &o(opts)).unwrap_err().to_string();
        let e = err("abfss://cc@other.dfs.core.windows.net/wh", &[(hk, key)]);
        assert!(e.contains("acct") && e.contains("other"), "{e}");
        let e = err(
            "abfss://cc@other.dfs.core.windows.net/wh",
            &[("azure.account-name", "acct")],
        );
        assert!(e.contains("other"), "{e}");
        let e = err(
            "az://ce/wh",
            &[("fs.azure.account.keyy.acct.dfs.core.windows.net", key)],
        );
        assert!(e.contains("not known"), "{e}");
        let e = err("az://ce/wh", &[("azure.acount-name", "acct")]);
        assert!(e.contains("azure.acount-name"), "{e}");
        let e = err("abfss://x.y/wh", &[("azure.account-name", "acct")]);
        assert!(e.contains("abfss://x.y"), "{e}");
    }
}
