//! OAuth 2.1 resource-server mode (`docs/http.md`): JWT access tokens from one authorization
//! server, checked against its signing keys (a JWKS file or URL), its issuer and our audiences,
//! and turned into a [`Grant`]: a principal, the workspaces it may use, read-only or not — what
//! an entry of the tokens file gives.
//!
//! A signature is checked with the algorithm its key allows (RS256/384/512 and PS256/384/512
//! for RSA keys, ES256 for P-256, ES384 for P-384, `EdDSA` for Ed25519), never the one the token
//! asks for: `alg: none` does not parse, and an HMAC token signed with a public key as its
//! secret is refused because an RSA or EC key allows no HMAC. Symmetric keys in the JWKS are
//! skipped.
//!
//! The keys: a file is read again when it changes; a URL is fetched when first needed, again
//! after [`CACHE_FOR`] (in the background, the cached keys served meanwhile; a failed fetch is
//! tried again [`RETRY_EVERY`] after it ended), and again when a token names a key id it does
//! not have (a key rotation), at most once per [`REFETCH_EVERY`]. No lock is held while a fetch
//! runs, so a token with a made-up key id waits for its fetch alone.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime};

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::Grant;

/// Seconds of clock difference allowed on `exp` and `nbf`.
pub const LEEWAY_SECONDS: u64 = 60;

/// How long keys fetched from a URL are used before they are fetched again.
pub const CACHE_FOR: std::time::Duration = std::time::Duration::from_mins(10);

/// The least time between two fetches caused by an unknown key id.
pub const REFETCH_EVERY: std::time::Duration = std::time::Duration::from_mins(1);

/// The least time between two attempts to fetch keys that are missing or out of date, so that an
/// authorization server that does not answer is not asked again at every request.
pub const RETRY_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The scope a read-only grant needs.
pub const READ_SCOPE: &str = "synapse:read";
/// The scope a read-write grant needs.
pub const WRITE_SCOPE: &str = "synapse:write";
/// The prefix of a scope that grants one workspace: `synapse:workspace:research`.
pub const WORKSPACE_SCOPE_PREFIX: &str = "synapse:workspace:";
/// The scope that lets a writing token change the skills every workspace shares.
pub const SKILLS_SCOPE: &str = "synapse:skills";
/// The prefix of a scope that turns a switchable built-in tool group on in the token's
/// workspace at its first session unless the workspace has a switch of its own (as
/// `token add --groups` does): `synapse:group:snapshots`. Other names turn nothing on.
pub const GROUP_SCOPE_PREFIX: &str = "synapse:group:";

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// Not a valid token for this server: 401 `invalid_token`.
    #[error("{0}")]
    Invalid(String),
    /// A valid token without the scope a request needs: 403 `insufficient_scope`.
    #[error("{message}")]
    InsufficientScope { scope: String, message: String },
}

/// Why the verifier could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the JWKS file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the JWKS {source_name} is not valid: {message}")]
    Parse {
        source_name: String,
        message: String,
    },
    #[error("{0}")]
    Invalid(String),
}

/// What the verifier checks besides the signature.
#[derive(Debug, Clone)]
pub struct Expectations {
    pub issuer: String,
    /// A token's `aud` must name one of these, or a path below one (`…/mcp/research` for
    /// `…/mcp`).
    pub audiences: Vec<String>,
    pub principal_claim: String,
    pub workspaces_claim: String,
}

/// Checks JWT access tokens.
pub struct Verifier {
    expectations: Expectations,
    keys: Keys,
}

impl Verifier {
    /// A verifier over the JWKS at `jwks` (a file path, or an `http(s)://` URL). A file must
    /// be readable now; a URL is fetched now, and a failure only logged (the authorization
    /// server may come up later).
    pub async fn open(jwks: &str, expectations: Expectations) -> Result<Self, Error> {
        if expectations.issuer.trim().is_empty() {
            return Err(Error::Invalid(
                "the OAuth issuer is empty; give the authorization server's URL".to_owned(),
            ));
        }
        if expectations.audiences.is_empty() {
            return Err(Error::Invalid(
                "OAuth needs an audience: give --oauth-audience (or `audiences` in [http.oauth]) \
                 with this server's URL, such as https://mcp.example.org/mcp"
                    .to_owned(),
            ));
        }
        let keys = Keys::open(jwks)?;
        if let Err(error) = keys.refresh().await {
            tracing::warn!("{error}; fetching again at the first token");
        }
        Ok(Self { expectations, keys })
    }

    /// What `token` grants, if it is valid.
    pub async fn verify(&self, token: &str) -> Result<Grant, Rejection> {
        let invalid = |message: String| Rejection::Invalid(message);
        let header = jsonwebtoken::decode_header(token)
            .map_err(|error| invalid(format!("the bearer token is not a valid JWT: {error}")))?;
        let key = self
            .keys
            .find(header.kid.as_deref())
            .await
            .map_err(invalid)?;
        let mut validation = Validation::new(key.algorithms[0]);
        validation.algorithms.clone_from(&key.algorithms);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.validate_aud = false;
        validation.set_issuer(&[&self.expectations.issuer]);
        validation.required_spec_claims = ["exp", "iss", "aud"].map(str::to_owned).into();
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &validation)
            .map_err(|error| invalid(describe(&error, &self.expectations.issuer)))?
            .claims;
        if !audience_matches(claims.get("aud"), &self.expectations.audiences) {
            return Err(invalid(format!(
                "the token's audience {} is not this server's: expected {}",
                claims.get("aud").map_or_else(String::new, Value::to_string),
                self.expectations.audiences.join(" or ")
            )));
        }
        self.grant(&claims)
    }

    /// The grant of validated claims.
    fn grant(&self, claims: &Map<String, Value>) -> Result<Grant, Rejection> {
        let principal_claim = &self.expectations.principal_claim;
        let principal = match claims.get(principal_claim) {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            _ => {
                return Err(Rejection::Invalid(format!(
                    "the token has no `{principal_claim}` claim naming its principal"
                )));
            }
        };
        let scopes = scopes(claims);
        let read_only = if scopes.contains(&WRITE_SCOPE) {
            false
        } else if scopes.contains(&READ_SCOPE) {
            true
        } else {
            return Err(Rejection::InsufficientScope {
                scope: READ_SCOPE.to_owned(),
                message: format!(
                    "the token of `{principal}` grants neither `{READ_SCOPE}` nor \
                     `{WRITE_SCOPE}`; ask the authorization server for one of them"
                ),
            });
        };
        let mut workspaces: Vec<String> = match claims.get(&self.expectations.workspaces_claim) {
            Some(Value::String(name)) => vec![name.clone()],
            Some(Value::Array(names)) => names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        for scope in &scopes {
            if let Some(name) = scope.strip_prefix(WORKSPACE_SCOPE_PREFIX)
                && !workspaces.iter().any(|known| known == name)
            {
                workspaces.push(name.to_owned());
            }
        }
        workspaces.retain(|name| !name.is_empty());
        if workspaces.is_empty() {
            return Err(Rejection::InsufficientScope {
                scope: format!("{WORKSPACE_SCOPE_PREFIX}*"),
                message: format!(
                    "the token of `{principal}` names no workspace: give it a `{}` claim or a \
                     `{WORKSPACE_SCOPE_PREFIX}NAME` scope",
                    self.expectations.workspaces_claim
                ),
            });
        }
        Ok(Grant {
            principal,
            workspaces,
            read_only,
            write_skills: !read_only && scopes.contains(&SKILLS_SCOPE),
            groups: (scopes.iter())
                .filter_map(|scope| scope.strip_prefix(GROUP_SCOPE_PREFIX))
                .filter(|name| crate::groups::switchable().any(|group| group.name == *name))
                .map(str::to_owned)
                .collect(),
        })
    }
}

/// The scopes of a token: `scope` (space-separated, RFC 9068) and `scp` (an array or a
/// space-separated string, as some servers write it).
fn scopes(claims: &Map<String, Value>) -> Vec<&str> {
    ["scope", "scp"]
        .iter()
        .filter_map(|name| claims.get(*name))
        .flat_map(|value| match value {
            Value::String(text) => text.split_whitespace().collect::<Vec<_>>(),
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// Whether `aud` (a string or an array) names one of `audiences`, or a path below one: more
/// path segments after it, none of them empty, `.` or `..` (percent-encoded or not), and no
/// query or fragment, so that `…/mcp/../admin` is not below `…/mcp`.
fn audience_matches(aud: Option<&Value>, audiences: &[String]) -> bool {
    let below = |rest: &str| {
        rest.strip_prefix('/').is_some_and(|segments| {
            !segments.contains(['?', '#'])
                && segments.split('/').all(|segment| {
                    let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
                    !matches!(&*decoded, "" | "." | "..")
                })
        })
    };
    let matches = |given: &str| {
        audiences.iter().any(|expected| {
            let expected = expected.trim_end_matches('/');
            given == expected || given.strip_prefix(expected).is_some_and(below)
        })
    };
    match aud {
        Some(Value::String(given)) => matches(given),
        Some(Value::Array(given)) => given.iter().filter_map(Value::as_str).any(matches),
        _ => false,
    }
}

/// A refusal a client's user can act on.
fn describe(error: &jsonwebtoken::errors::Error, issuer: &str) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::ExpiredSignature => "the token has expired (`exp`)".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (`nbf`)".to_owned(),
        ErrorKind::InvalidIssuer => format!("the token's issuer is not {issuer}"),
        ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
        ErrorKind::InvalidAlgorithm => {
            "the token's algorithm (`alg`) is not the one its key allows".to_owned()
        }
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        _ => format!("the bearer token is not a valid JWT: {error}"),
    }
}

/// One verification key of the JWKS.
#[derive(Clone)]
struct Key {
    id: Option<String>,
    decoding: DecodingKey,
    /// The algorithms it verifies; never empty.
    algorithms: Vec<Algorithm>,
}

/// The keys of a JWKS document; keys it cannot use are skipped with a warning.
fn parse(text: &str, source_name: &str) -> Result<Vec<Key>, Error> {
    let failed = |message: String| Error::Parse {
        source_name: source_name.to_owned(),
        message,
    };
    let document: Value = serde_json::from_str(text).map_err(|error| failed(error.to_string()))?;
    let Some(listed) = document.get("keys").and_then(Value::as_array) else {
        return Err(failed("it has no `keys` array".to_owned()));
    };
    let mut keys = Vec::new();
    for (index, value) in listed.iter().enumerate() {
        match key(value) {
            Ok(key) => keys.push(key),
            Err(reason) => tracing::warn!("JWKS {source_name}: skipping key {index}: {reason}"),
        }
    }
    if keys.is_empty() {
        return Err(failed("it has no usable signing key".to_owned()));
    }
    Ok(keys)
}

fn key(value: &Value) -> Result<Key, String> {
    let jwk: Jwk = serde_json::from_value(value.clone()).map_err(|error| error.to_string())?;
    let family: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(parameters) => match parameters.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return Err("only P-256 and P-384 curves are supported".to_owned()),
        },
        AlgorithmParameters::OctetKeyPair(_) => vec![Algorithm::EdDSA],
        AlgorithmParameters::OctetKey(_) => {
            return Err("a symmetric key cannot verify a public signature".to_owned());
        }
    };
    // A key that names its algorithm verifies that one only.
    let algorithms = match &jwk.common.key_algorithm {
        None => family,
        Some(named) => {
            let named = algorithm(*named).filter(|named| family.contains(named));
            vec![named.ok_or_else(|| format!("its `alg` does not fit its key type: {value}"))?]
        }
    };
    let decoding = DecodingKey::from_jwk(&jwk).map_err(|error| error.to_string())?;
    Ok(Key {
        id: jwk.common.key_id.clone(),
        decoding,
        algorithms,
    })
}

fn algorithm(named: KeyAlgorithm) -> Option<Algorithm> {
    named.to_string().parse().ok()
}

/// Where the keys come from.
enum Source {
    File(PathBuf),
    Url(String),
}

/// A fetch of the keys in flight, which any number of requests may wait for.
type Fetch = Shared<BoxFuture<'static, Result<(), String>>>;

/// The keys, as last read or fetched. The lock is never held across a fetch: a fetch runs as a
/// task of its own that stores what it got when it ends, requests whose key is known are served
/// the cached keys meanwhile, and only a request that has no key to check (none fetched yet, or
/// a key id the cached keys lack) waits for it.
struct Keys {
    source: Source,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    keys: Vec<Key>,
    /// A file's modification time and length when it was read.
    stamp: Option<(SystemTime, u64)>,
    /// When a URL was last fetched with success.
    fetched: Option<Instant>,
    /// When the last failed fetch of a URL ended: the next is not tried before
    /// [`RETRY_EVERY`] after it.
    failed: Option<Instant>,
    /// When an unknown key id last caused a fetch.
    refetched: Option<Instant>,
    /// The fetch running now, if one is.
    fetching: Option<Fetch>,
}

impl Keys {
    fn open(jwks: &str) -> Result<Self, Error> {
        let source = if jwks.starts_with("https://") || jwks.starts_with("http://") {
            Source::Url(jwks.to_owned())
        } else {
            let path = PathBuf::from(jwks);
            let keys = parse(&read(&path)?, &path.display().to_string())?;
            return Ok(Self {
                state: Arc::new(Mutex::new(State {
                    keys,
                    stamp: stamp(&path),
                    ..State::default()
                })),
                source: Source::File(path),
            });
        };
        Ok(Self {
            source,
            state: Arc::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key a token's `kid` names (the only key, when it names none).
    async fn find(&self, kid: Option<&str>) -> Result<Key, String> {
        let pick = |keys: &[Key]| -> Option<Key> {
            match kid {
                Some(kid) => keys.iter().find(|key| key.id.as_deref() == Some(kid)),
                None => match keys {
                    [only] => Some(only),
                    _ => None,
                },
            }
            .cloned()
        };
        let wait = {
            let mut state = self.lock();
            let url = match &self.source {
                Source::File(path) => {
                    if stamp(path) != state.stamp
                        && let Err(error) = reload_file(path, &mut state)
                    {
                        tracing::warn!("{error}; keeping the keys read before");
                    }
                    None
                }
                Source::Url(url) => Some(url),
            };
            let picked = pick(&state.keys);
            match (url, picked) {
                (None, Some(key)) => return Ok(key),
                (None, None) => None,
                (Some(url), Some(key)) => {
                    // Out of date: fetched again in the background, the cached key served now.
                    if Self::due(&state) {
                        // Runs as a task of its own; nobody waits for it.
                        drop(self.start_fetch(url, &mut state));
                    }
                    return Ok(key);
                }
                (Some(url), None) => self.fetch_to_wait_for(url, &mut state),
            }
        };
        if let Some(fetch) = wait {
            if let Err(error) = fetch.await {
                tracing::warn!("{error}");
            }
            if let Some(key) = pick(&self.lock().keys) {
                return Ok(key);
            }
        }
        Err(match kid {
            Some(kid) => format!("the token's key id `{kid}` is not one of the issuer's keys"),
            None => "the token names no key id (`kid`) and the issuer has several keys".to_owned(),
        })
    }

    /// The fetch a request without a key waits for: the one running, else a new one when the
    /// keys are due or none were fetched yet, or, for a key id the keys lack (a rotation), at
    /// most one per [`REFETCH_EVERY`]; never sooner than [`RETRY_EVERY`] after a failed one.
    fn fetch_to_wait_for(&self, url: &str, state: &mut State) -> Option<Fetch> {
        if let Some(running) = &state.fetching {
            return Some(running.clone());
        }
        if Self::due(state) {
            return Some(self.start_fetch(url, state));
        }
        let may_refetch =
            !recently(state.failed, RETRY_EVERY) && !recently(state.refetched, REFETCH_EVERY);
        if !may_refetch {
            return None;
        }
        state.refetched = Some(Instant::now());
        Some(self.start_fetch(url, state))
    }

    /// Whether the keys of a URL are missing or out of date, no fetch is running, and the last
    /// failed one ended at least [`RETRY_EVERY`] ago.
    fn due(state: &State) -> bool {
        state.fetching.is_none()
            && !recently(state.fetched, CACHE_FOR)
            && !recently(state.failed, RETRY_EVERY)
    }

    /// Starts fetching the keys as a task of its own (it finishes even when nobody waits), and
    /// records it as the fetch running.
    fn start_fetch(&self, url: &str, state: &mut State) -> Fetch {
        let url = url.to_owned();
        let shared = Arc::clone(&self.state);
        let fetch = async move {
            let fetched = fetch(&url).await.and_then(|text| parse(&text, &url));
            let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
            state.fetching = None;
            match fetched {
                Ok(keys) => {
                    state.keys = keys;
                    state.fetched = Some(Instant::now());
                    state.failed = None;
                    Ok(())
                }
                Err(error) => {
                    state.failed = Some(Instant::now());
                    Err(error.to_string())
                }
            }
        }
        .boxed()
        .shared();
        state.fetching = Some(fetch.clone());
        tokio::spawn(fetch.clone());
        fetch
    }

    /// Reads or fetches the keys now (at start).
    async fn refresh(&self) -> Result<(), Error> {
        let fetch = {
            let mut state = self.lock();
            match &self.source {
                Source::File(path) => return reload_file(path, &mut state),
                Source::Url(url) => self.start_fetch(url, &mut state),
            }
        };
        fetch.await.map_err(Error::Invalid)
    }
}

/// Whether `moment` is less than `span` ago.
fn recently(moment: Option<Instant>, span: std::time::Duration) -> bool {
    moment.is_some_and(|moment| moment.elapsed() < span)
}

fn reload_file(path: &Path, state: &mut State) -> Result<(), Error> {
    let now = stamp(path);
    state.keys = parse(&read(path)?, &path.display().to_string())?;
    state.stamp = now;
    Ok(())
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.modified().ok()?, metadata.len()))
}

/// The JWKS at `url`.
#[cfg(feature = "jwks-url")]
async fn fetch(url: &str) -> Result<String, Error> {
    let failed = |message: String| Error::Parse {
        source_name: url.to_owned(),
        message,
    };
    // rustls needs one process-wide provider; `ring` is the one compiled in. Installing it
    // twice fails harmlessly.
    if rustls::crypto::ring::default_provider()
        .install_default()
        .is_err()
    {
        tracing::trace!("a rustls crypto provider was already installed");
    }
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|error| failed(format!("cannot make an HTTP client: {error}")))?;
    let response = client
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|error| failed(format!("cannot fetch it: {error}")))?;
    if !response.status().is_success() {
        return Err(failed(format!(
            "fetching it answered {}",
            response.status()
        )));
    }
    response
        .text()
        .await
        .map_err(|error| failed(format!("cannot read it: {error}")))
}

/// Without the `jwks-url` feature, a JWKS URL is refused.
#[cfg(not(feature = "jwks-url"))]
#[expect(
    clippy::unused_async,
    reason = "the same signature as the fetching one, which awaits"
)]
async fn fetch(url: &str) -> Result<String, Error> {
    Err(Error::Invalid(format!(
        "cannot fetch the JWKS {url}: this build has no HTTP client (built without the \
         `jwks-url` feature); give a JWKS file"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_audience_matches_itself_or_a_path_below_it() {
        let expected = ["https://mcp.example.org/mcp".to_owned()];
        let matches = |aud: Value| audience_matches(Some(&aud), &expected);
        assert!(matches(json!("https://mcp.example.org/mcp")));
        assert!(matches(json!("https://mcp.example.org/mcp/research")));
        assert!(matches(json!(["other", "https://mcp.example.org/mcp"])));
        assert!(!matches(json!("https://mcp.example.org/mcpx")));
        assert!(!matches(json!("https://mcp.example.org/mcp/../admin")));
        assert!(!matches(json!("https://mcp.example.org/mcp/%2e%2E/admin")));
        assert!(!matches(json!("https://mcp.example.org/mcp/./x")));
        assert!(!matches(json!("https://mcp.example.org/mcp//x")));
        assert!(!matches(json!("https://mcp.example.org/mcp/x?y")));
        assert!(!matches(json!("https://mcp.example.org")));
        assert!(!matches(json!(["other"])));
        assert!(!audience_matches(None, &expected));
    }

    #[test]
    fn scopes_come_from_scope_and_scp() {
        let claims = json!({"scope": "a b", "scp": ["c"]});
        assert_eq!(scopes(claims.as_object().unwrap()), ["a", "b", "c"]);
    }

    #[test]
    fn a_symmetric_key_is_skipped_and_a_jwks_without_usable_keys_refused() {
        let jwks = json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}).to_string();
        let error = parse(&jwks, "test").err().unwrap();
        assert!(
            error.to_string().contains("no usable signing key"),
            "{error}"
        );
    }
}
