//! The AWS shared configuration files (`~/.aws/credentials`, `~/.aws/config`): the step of
//! the standard AWS credential chain that `object_store`'s `AmazonS3Builder::from_env` lacks
//! (it reads the `AWS_*` variables, web identity, the container and instance metadata).
//! An `s3://` warehouse given no keys (options or `AWS_ACCESS_KEY_ID`) takes the profile's
//! static keys, region and `endpoint_url` from here, as the AWS SDKs (and so pypaimon's
//! pyarrow `S3FileSystem`) do. Profiles that get their keys otherwise (`role_arn`, `sso_*`,
//! `credential_process`) are refused when named explicitly (`AWS_PROFILE`), never ignored.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// What a profile gives an S3 client.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Profile {
    pub name: String,
    /// (access key id, secret access key, session token)
    pub keys: Option<(String, String, Option<String>)>,
    pub region: Option<String>,
    pub endpoint: Option<String>,
}

type Sections = BTreeMap<String, BTreeMap<String, String>>;

/// The sections of an INI file as the AWS CLI writes it (`[name]`, `key = value`, `#` / `;`
/// comments); indented continuation lines (nested `s3 =` settings) are skipped.
fn parse_ini(text: &str) -> Sections {
    let mut out = Sections::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim().to_string();
            out.entry(name.clone()).or_default();
            current = Some(name);
        } else if let (Some(sec), Some((k, v))) = (&current, line.split_once('=')) {
            if let Some(s) = out.get_mut(sec) {
                s.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
    }
    out
}

/// Keys that get credentials some other way than static keys: refused, not supported.
const OTHER_SOURCES: &[&str] = &[
    "role_arn",
    "credential_process",
    "sso_session",
    "sso_start_url",
    "web_identity_token_file",
];

/// The profile `name` of the two files' texts; `explicit`: the user named it (`AWS_PROFILE`),
/// so a missing or unusable profile is an error rather than the next step of the chain.
pub(crate) fn profile_from(
    name: &str,
    explicit: bool,
    credentials: Option<&str>,
    config: Option<&str>,
) -> Result<Option<Profile>> {
    let creds = credentials.map(parse_ini).unwrap_or_default();
    let conf = config.map(parse_ini).unwrap_or_default();
    let config_section = if name == "default" {
        conf.get("default").or_else(|| conf.get("profile default"))
    } else {
        conf.get(&format!("profile {name}"))
    };
    let empty = BTreeMap::new();
    let c = creds.get(name).unwrap_or(&empty);
    let f = config_section.unwrap_or(&empty);
    if !creds.contains_key(name) && config_section.is_none() {
        if explicit {
            return Err(Error::invalid(format!(
                "AWS profile '{name}' (AWS_PROFILE) is in neither the shared credentials nor \
                 the config file"
            )));
        }
        return Ok(None);
    }
    let get = |k: &str| c.get(k).or_else(|| f.get(k)).cloned();
    let keys = match (get("aws_access_key_id"), get("aws_secret_access_key")) {
        (Some(ak), Some(sk)) => Some((ak, sk, get("aws_session_token"))),
        (None, None) => None,
        _ => {
            return Err(Error::invalid(format!(
                "AWS profile '{name}' has only one of aws_access_key_id and \
                 aws_secret_access_key"
            )))
        }
    };
    if keys.is_none() && explicit {
        if let Some(k) = OTHER_SOURCES.iter().find(|k| get(k).is_some()) {
            return Err(Error::unsupported(format!(
                "AWS profile '{name}' gets its credentials through '{k}', which paimon_rs does \
                 not run; give static keys (s3.access-key / s3.secret-key, AWS_ACCESS_KEY_ID) \
                 or credentials from the environment"
            )));
        }
    }
    Ok(Some(Profile {
        name: name.to_string(),
        keys,
        region: get("region"),
        endpoint: get("endpoint_url"),
    }))
}

fn env(k: &str) -> Option<String> {
    std::env::var(k).ok().filter(|v| !v.is_empty())
}

fn read(path: Option<PathBuf>, what: &str) -> Result<Option<String>> {
    let Some(path) = path else { return Ok(None) };
    match std::fs::read_to_string(&path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::invalid(format!(
            "AWS {what} file {}: {e}",
            path.display()
        ))),
    }
}

/// The profile of this process's environment (`AWS_PROFILE`, else `AWS_DEFAULT_PROFILE`,
/// else `default`) from `AWS_SHARED_CREDENTIALS_FILE` / `AWS_CONFIG_FILE` (default
/// `~/.aws/credentials`, `~/.aws/config`); None if there is none.
pub(crate) fn shared_profile() -> Result<Option<Profile>> {
    let named = env("AWS_PROFILE").or_else(|| env("AWS_DEFAULT_PROFILE"));
    let home = env("HOME").map(PathBuf::from);
    let file = |var: &str, name: &str, what: &str| {
        let path = env(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)));
        read(path, what)
    };
    let creds = file(
        "AWS_SHARED_CREDENTIALS_FILE",
        "credentials",
        "shared credentials",
    )?;
    let conf = file("AWS_CONFIG_FILE", "config", "config")?;
    let name = named.clone().unwrap_or_else(|| "default".to_string());
    profile_from(&name, named.is_some(), creds.as_deref(), conf.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREDS: &str = "[default]\naws_access_key_id = AK\naws_secret_access_key=SK\n\n\
                         # a comment\n[dev]\naws_access_key_id = AK2\naws_secret_access_key = SK2\n\
                         aws_session_token = T2\n[half]\naws_access_key_id = X\n";
    const CONF: &str = "[default]\nregion = eu-west-1\ns3 =\n  addressing_style = path\n\
                        [profile dev]\nregion = us-west-2\nendpoint_url = http://localhost:9000\n\
                        [profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = dev\n";

    #[test]
    fn static_keys_region_and_endpoint_of_a_profile() {
        let p = profile_from("default", false, Some(CREDS), Some(CONF))
            .unwrap()
            .unwrap();
        assert_eq!(p.keys, Some(("AK".into(), "SK".into(), None)));
        assert_eq!(p.region.as_deref(), Some("eu-west-1"));
        let p = profile_from("dev", true, Some(CREDS), Some(CONF))
            .unwrap()
            .unwrap();
        assert_eq!(
            p.keys,
            Some(("AK2".into(), "SK2".into(), Some("T2".into())))
        );
        assert_eq!(p.endpoint.as_deref(), Some("http://localhost:9000"));
        assert_eq!(p.region.as_deref(), Some("us-west-2"));
    }

    #[test]
    fn missing_or_unusable_profiles() {
        // no files, no profile: the next step of the chain (metadata services)
        assert_eq!(profile_from("default", false, None, None).unwrap(), None);
        let e = profile_from("nope", true, Some(CREDS), Some(CONF)).unwrap_err();
        assert!(e.to_string().contains("'nope'"), "{e}");
        let e = profile_from("half", true, Some(CREDS), None).unwrap_err();
        assert!(e.to_string().contains("only one of"), "{e}");
        let e = profile_from("role", true, Some(CREDS), Some(CONF)).unwrap_err();
        assert!(e.to_string().contains("role_arn"), "{e}");
        // a default profile with a region only: region taken, keys left to the chain
        let p = profile_from("default", false, None, Some(CONF))
            .unwrap()
            .unwrap();
        assert_eq!((p.keys, p.region.as_deref()), (None, Some("eu-west-1")));
    }
}
