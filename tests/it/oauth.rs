//! OAuth 2.1 resource-server mode of `serve --http`, against the real binary: JWT access tokens
//! signed with keys the test makes (ES256 with `ring`, RS256 with a key `openssl genpkey`
//! makes), whose JWKS a real local HTTP server serves; the protected-resource metadata and the
//! `WWW-Authenticate` challenges that point to it. For tokens-file tokens and JWTs alike:
//! another principal's workspace is 403 for every tool, prompt and resource its own workspace
//! lists and for every method of its route, and every route is 401 without a valid token. Also
//! the percent-decoding of `/mcp/{workspace}` and session owners leaving with their sessions.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use pretty_assertions::assert_eq;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _, RsaKeyPair};
use serde_json::{Value, json};

use crate::common::{
    Elicitation, TestClient, Transcript, assert_golden_text, call, group_is_on, is_error, text,
};
use crate::http::{HttpServer, http_client, initialize};

const ISSUER: &str = "https://auth.synapse.test";
const AUDIENCE: &str = "https://mcp.synapse.test/mcp";

fn base64url(bytes: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Signs a JWT's signing input.
type Sign = Box<dyn Fn(&[u8]) -> Vec<u8> + Send + Sync>;

/// A signing key of the test's authorization server.
struct Signer {
    kid: String,
    alg: &'static str,
    jwk: Value,
    sign: Sign,
}

impl Signer {
    /// A new P-256 key.
    fn es256(kid: &str) -> Self {
        let random = SystemRandom::new();
        let algorithm = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(algorithm, &random).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(algorithm, pkcs8.as_ref(), &random).unwrap();
        let point = pair.public_key().as_ref().to_vec();
        Self {
            kid: kid.to_owned(),
            alg: "ES256",
            jwk: json!({"kty": "EC", "crv": "P-256", "use": "sig", "kid": kid,
                        "x": base64url(&point[1..33]), "y": base64url(&point[33..])}),
            sign: Box::new(move |message| {
                pair.sign(&SystemRandom::new(), message)
                    .unwrap()
                    .as_ref()
                    .to_vec()
            }),
        }
    }

    /// A new 2048-bit RSA key, made by `openssl` (ring cannot make RSA keys).
    fn rs256(kid: &str) -> Self {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("key.der");
        let output = Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
            ])
            .args(["-outform", "DER", "-out"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        // PKCS#8 or PKCS#1, as the openssl version writes it.
        let der = std::fs::read(&path).unwrap();
        let pair = RsaKeyPair::from_pkcs8(&der)
            .or_else(|_| RsaKeyPair::from_der(&der))
            .unwrap();
        let public: signature::RsaPublicKeyComponents<Vec<u8>> = pair.public().into();
        Self {
            kid: kid.to_owned(),
            alg: "RS256",
            jwk: json!({"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
                        "n": base64url(&public.n), "e": base64url(&public.e)}),
            sign: Box::new(move |message| {
                let mut signed = vec![0; pair.public().modulus_len()];
                pair.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &SystemRandom::new(),
                    message,
                    &mut signed,
                )
                .unwrap();
                signed
            }),
        }
    }

    fn token(&self, claims: &Value) -> String {
        self.token_with_header(
            &json!({"alg": self.alg, "typ": "at+jwt", "kid": self.kid}),
            claims,
        )
    }

    fn token_with_header(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            base64url(header.to_string()),
            base64url(claims.to_string())
        );
        format!("{input}.{}", base64url((self.sign)(input.as_bytes())))
    }
}

/// Claims of a valid access token.
fn claims(principal: &str, workspaces: &[&str], scope: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": principal, "workspaces": workspaces,
           "scope": scope, "iat": now(), "nbf": now() - 10, "exp": now() + 600})
}

/// A JWKS served over HTTP by the test, counting its fetches; while `hanging` is set, a fetch
/// gets no answer for a minute.
struct Jwks {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    hanging: Arc<AtomicBool>,
}

impl Jwks {
    async fn serve(keys: Vec<Value>) -> Self {
        let keys = Arc::new(Mutex::new(keys));
        let fetches = Arc::new(AtomicUsize::new(0));
        let hanging = Arc::new(AtomicBool::new(false));
        let (served, counted, hangs) = (
            Arc::clone(&keys),
            Arc::clone(&fetches),
            Arc::clone(&hanging),
        );
        let route = axum::routing::get(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            let document = json!({"keys": *served.lock().unwrap()}).to_string();
            let hang = hangs.load(Ordering::SeqCst);
            async move {
                if hang {
                    tokio::time::sleep(std::time::Duration::from_mins(1)).await;
                }
                ([("content-type", "application/json")], document)
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let router = axum::Router::new().route("/jwks.json", route);
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Self {
            url,
            keys,
            fetches,
            hanging,
        }
    }
}

/// The test's authorization server: an ES256 and an RS256 key, served as a JWKS.
struct Issuer {
    es256: Signer,
    rs256: Signer,
    jwks: Jwks,
}

impl Issuer {
    async fn start() -> Self {
        let es256 = Signer::es256("es-1");
        let rs256 = Signer::rs256("rs-1");
        let jwks = Jwks::serve(vec![es256.jwk.clone(), rs256.jwk.clone()]).await;
        Self { es256, rs256, jwks }
    }

    /// `serve --http` with the tokens file and this issuer's tokens.
    async fn serve(&self, args: &[&str]) -> HttpServer {
        let mut all = vec![
            "--oauth-issuer",
            ISSUER,
            "--oauth-audience",
            AUDIENCE,
            "--oauth-jwks",
            &self.jwks.url,
        ];
        all.extend_from_slice(args);
        HttpServer::start(&all).await
    }
}

fn unsupported() -> TestClient {
    TestClient::new(Elicitation::Unsupported)
}

#[tokio::test]
async fn jwts_signed_with_es256_and_rs256_work_beside_the_tokens_file_in_both_eras() {
    let issuer = Issuer::start().await;
    let server = issuer.serve(&[]).await;
    let writer = issuer
        .es256
        .token(&claims("alice", &["research"], "synapse:write"));
    let client = server.client("/mcp", &writer, unsupported()).await;
    let written = call(
        &client,
        "WriteVar",
        json!({"name": "topic", "value": "bees"}),
    )
    .await;
    assert!(!is_error(&written), "{written:?}");
    client.cancel().await.unwrap();

    // Read-only by scope, in the 2026-07-28 era, signed with the RSA key.
    let reader = issuer
        .rs256
        .token(&claims("auditor", &["research"], "synapse:read"));
    let modern = server
        .modern_client("/mcp/research", &reader, unsupported())
        .await;
    let mut answers = Transcript::default();
    let read = call(&modern, "ReadVar", json!({"name": "topic"})).await;
    answers.add("ReadVar with a read scope", &text(&read));
    let refused = call(&modern, "WriteVar", json!({"name": "x", "value": "y"})).await;
    assert!(is_error(&refused));
    answers.add("WriteVar with a read scope", &text(&refused));
    modern.cancel().await.unwrap();

    // A tokens-file token of the same server reaches the same workspace.
    let from_file = server.token("bob", &["research"], false);
    let client = server.client("/mcp", &from_file, unsupported()).await;
    let read = call(&client, "ReadVar", json!({"name": "topic"})).await;
    answers.add("ReadVar with a tokens-file token", &text(&read));
    answers.assert_golden("oauth/one-workspace-two-kinds-of-token.txt");
    client.cancel().await.unwrap();
}

fn rpc(method: &str, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// A request for every method, and for every tool, prompt, resource and resource template the
/// workspace at `path` lists to a client with `token`.
async fn everything_offered(server: &HttpServer, path: &str, token: &str) -> Vec<Value> {
    let own = server.client(path, token, unsupported()).await;
    let tools = own.list_all_tools().await.unwrap();
    let prompts = own.list_all_prompts().await.unwrap();
    let resources = own.list_all_resources().await.unwrap();
    let templates = own.list_all_resource_templates().await.unwrap();
    own.cancel().await.unwrap();
    assert!(tools.len() > 10, "{tools:?}");
    assert!(!prompts.is_empty() && !resources.is_empty());

    let mut requests = vec![
        initialize(),
        rpc("ping", &json!({})),
        rpc("tools/list", &json!({})),
        rpc("prompts/list", &json!({})),
        rpc("resources/list", &json!({})),
        rpc("resources/templates/list", &json!({})),
        rpc("logging/setLevel", &json!({"level": "info"})),
        rpc(
            "completion/complete",
            &json!({"ref": {"type": "ref/prompt", "name": prompts[0].name},
                   "argument": {"name": "x", "value": ""}}),
        ),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    requests.extend(
        tools
            .iter()
            .map(|tool| rpc("tools/call", &json!({"name": tool.name, "arguments": {}}))),
    );
    requests.extend(
        prompts
            .iter()
            .map(|prompt| rpc("prompts/get", &json!({"name": prompt.name}))),
    );
    requests.extend(
        resources
            .iter()
            .map(|resource| rpc("resources/read", &json!({"uri": resource.uri}))),
    );
    requests.extend(
        templates
            .iter()
            .map(|template| rpc("resources/read", &json!({"uri": template.uri_template}))),
    );
    requests.extend(
        resources
            .iter()
            .map(|resource| rpc("resources/subscribe", &json!({"uri": resource.uri}))),
    );
    requests
}

#[tokio::test]
async fn another_principals_workspace_is_403_for_every_tool_prompt_resource_and_method() {
    let issuer = Issuer::start().await;
    let server = issuer.serve(&[]).await;
    server.token("bob", &["bobs"], false);
    let from_file = server.token("alice", &["research"], false);
    let jwt = issuer
        .es256
        .token(&claims("alice", &["research"], "synapse:write"));

    let requests = everything_offered(&server, "/mcp/research", &from_file).await;
    let mut refusals = Transcript::default();
    for (kind, token) in [("tokens file", &from_file), ("JWT", &jwt)] {
        // Every request gets the same answer: the set of answers has one member.
        let mut answers = std::collections::BTreeSet::new();
        for body in &requests {
            let (status, challenge, text) = server
                .send(reqwest::Method::POST, "/mcp/bobs", Some(token), Some(body))
                .await;
            assert_eq!(status, 403, "{kind}: {body}: {text}");
            answers.insert(format!("{challenge}\n{text}"));
        }
        let answers: Vec<String> = answers.into_iter().collect();
        refusals.add(&format!("{kind}, every request"), &answers.join("\n--\n"));
        // Every other method of the route, whatever rmcp would make of it.
        for method in ["GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"] {
            let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
            let (status, _, text) = server
                .send(method.clone(), "/mcp/bobs", Some(token), None)
                .await;
            assert_eq!(status, 403, "{kind}: {method}: {text}");
        }
        // A session alice opened in her own workspace does not carry her into bob's.
        let session = server.open_session("/mcp/research", token).await;
        let (status, text) = server.list_in_session("/mcp/bobs", &session, token).await;
        assert_eq!(status, 403, "{kind}: {text}");
    }
    refusals.assert_golden("oauth/another-principals-workspace.txt");
}

/// Tokens that must be refused, what each is, and what the refusal says.
fn bad_tokens(issuer: &Issuer) -> Vec<(&'static str, Option<String>, &'static str)> {
    let es256 = &issuer.es256;
    let valid = claims("alice", &["research"], "synapse:write");
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = valid.clone();
        change(&mut claims);
        es256.token(&claims)
    };
    // The same key id, another key: the signature does not verify.
    let impostor = Signer::es256("es-1");
    // HMAC with the RSA key's public modulus as the secret, under that key's id.
    let hmac_key = ring::hmac::Key::new(
        ring::hmac::HMAC_SHA256,
        issuer.rs256.jwk["n"].as_str().unwrap().as_bytes(),
    );
    let header = json!({"alg": "HS256", "typ": "JWT", "kid": "rs-1"});
    let input = format!(
        "{}.{}",
        base64url(header.to_string()),
        base64url(valid.to_string())
    );
    let hmac = format!(
        "{input}.{}",
        base64url(ring::hmac::sign(&hmac_key, input.as_bytes()))
    );
    let unsigned = format!(
        "{}.{}.",
        base64url(json!({"alg": "none", "typ": "JWT"}).to_string()),
        base64url(valid.to_string())
    );
    vec![
        ("no token", None, "a bearer token is required"),
        ("not a JWT", Some("not-a-jwt".to_owned()), "not a valid JWT"),
        (
            "garbage in three parts",
            Some("a.b.c".to_owned()),
            "not a valid JWT",
        ),
        (
            "unknown tokens-file token",
            Some("syn_nope".to_owned()),
            "not known",
        ),
        (
            "bad signature",
            Some(impostor.token(&valid)),
            "signature does not verify",
        ),
        (
            "expired",
            Some(with(&|claims| claims["exp"] = json!(now() - 3600))),
            "expired",
        ),
        (
            "not yet valid",
            Some(with(&|claims| claims["nbf"] = json!(now() + 3600))),
            "not valid yet",
        ),
        (
            "wrong audience",
            Some(with(&|claims| {
                claims["aud"] = json!("https://other.example/mcp");
            })),
            "audience",
        ),
        (
            "no audience of ours in an array",
            Some(with(&|claims| claims["aud"] = json!(["a", "b"]))),
            "audience",
        ),
        (
            "wrong issuer",
            Some(with(&|claims| {
                claims["iss"] = json!("https://evil.example");
            })),
            "issuer",
        ),
        (
            "unknown key id",
            Some(es256.token_with_header(&json!({"alg": "ES256", "kid": "nobody"}), &valid)),
            "key id `nobody`",
        ),
        ("alg none", Some(unsigned), "not a valid JWT"),
        ("HMAC with the public key", Some(hmac), "algorithm"),
    ]
}

#[tokio::test]
async fn every_route_is_401_without_a_valid_token_and_the_challenge_names_the_metadata() {
    let issuer = Issuer::start().await;
    let server = issuer.serve(&[]).await;
    let cases = bad_tokens(&issuer);
    let mut refusals = Transcript::default();
    for route in ["/mcp", "/mcp/research"] {
        let metadata = format!(
            "resource_metadata=\"{}\"",
            server.url(&format!("/.well-known/oauth-protected-resource{route}"))
        );
        for (case, token, reason) in &cases {
            let mut answers = std::collections::BTreeSet::new();
            for method in [
                reqwest::Method::POST,
                reqwest::Method::GET,
                reqwest::Method::DELETE,
            ] {
                let body = (method == reqwest::Method::POST).then(initialize);
                let (status, challenge, text) = server
                    .send(method.clone(), route, token.as_deref(), body.as_ref())
                    .await;
                let what = format!("{case}, {method} {route}");
                assert_eq!(status, 401, "{what}: {text}");
                assert!(text.contains(reason), "{what}: {text}");
                assert!(challenge.starts_with("Bearer "), "{what}: {challenge}");
                assert!(challenge.contains(&metadata), "{what}: {challenge}");
                assert_eq!(
                    challenge.contains("error=\"invalid_token\""),
                    token.is_some(),
                    "{what}: {challenge}"
                );
                answers.insert(format!("{challenge}\n{text}"));
            }
            // POST, GET and DELETE are answered alike.
            let answers: Vec<String> = answers.into_iter().collect();
            refusals.add(&format!("{case}, {route}"), &answers.join("\n--\n"));
        }
    }
    refusals.assert_golden("oauth/bad-tokens.txt");
}

#[tokio::test]
async fn the_protected_resource_metadata_is_found_from_the_challenge() {
    let issuer = Issuer::start().await;
    let server = issuer.serve(&[]).await;
    let (_, challenge, _) = server
        .send(
            reqwest::Method::POST,
            "/mcp/research",
            None,
            Some(&initialize()),
        )
        .await;
    let url = challenge
        .split("resource_metadata=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    let document: Value = http_client()
        .get(url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        document,
        json!({
            "resource": format!("{AUDIENCE}/research"),
            "authorization_servers": [ISSUER],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["synapse:read", "synapse:write", "synapse:skills", "synapse:workspace:research"],
            "resource_name": "synapse-mcp",
        })
    );
    for (path, resource) in [
        (
            "/.well-known/oauth-protected-resource/mcp",
            AUDIENCE.to_owned(),
        ),
        (
            "/.well-known/oauth-protected-resource",
            "https://mcp.synapse.test".to_owned(),
        ),
    ] {
        let document: Value = http_client()
            .get(server.url(path))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(document["resource"], json!(resource), "{path}");
        assert_eq!(
            document["scopes_supported"],
            json!(["synapse:read", "synapse:write", "synapse:skills"])
        );
    }

    // Without OAuth there is no metadata, and the challenge names none.
    let plain = HttpServer::start(&[]).await;
    let response = http_client()
        .get(plain.url("/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let (status, challenge, _) = plain
        .send(reqwest::Method::POST, "/mcp", None, Some(&initialize()))
        .await;
    assert_eq!(
        (status, challenge.as_str()),
        (401, "Bearer realm=\"synapse-mcp\"")
    );
}

#[tokio::test]
async fn a_token_without_a_read_scope_or_a_workspace_is_403_insufficient_scope() {
    let issuer = Issuer::start().await;
    let server = issuer.serve(&[]).await;
    let cases = [
        (
            claims("alice", &["research"], "profile email"),
            "scope=\"synapse:read\"",
            "neither `synapse:read` nor `synapse:write`",
        ),
        (
            claims("alice", &[], "synapse:write"),
            "error=\"insufficient_scope\"",
            "names no workspace",
        ),
    ];
    let mut refusals = Transcript::default();
    for (claims, expected, reason) in &cases {
        let token = issuer.es256.token(claims);
        let (status, challenge, text) = server
            .send(
                reqwest::Method::POST,
                "/mcp",
                Some(&token),
                Some(&initialize()),
            )
            .await;
        assert_eq!(status, 403, "{text}");
        assert!(text.contains(reason), "{text}");
        assert!(challenge.contains(expected), "{challenge}");
        refusals.add(reason, &format!("{challenge}\n{text}"));
    }
    refusals.assert_golden("oauth/insufficient-scope.txt");
    // A workspace granted by scope alone, beside the claim's.
    let mut scoped = claims(
        "alice",
        &["research"],
        "synapse:write synapse:workspace:extra",
    );
    scoped["scp"] = json!(["synapse:workspace:more"]);
    let token = issuer.es256.token(&scoped);
    for path in ["/mcp/research", "/mcp/extra", "/mcp/more"] {
        let (status, _, text) = server
            .send(
                reqwest::Method::POST,
                path,
                Some(&token),
                Some(&initialize()),
            )
            .await;
        assert_eq!(status, 200, "{path}: {text}");
    }
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_unknown_key_ids_do_not_refetch_every_time() {
    let issuer = Issuer::start().await;
    let server = issuer.serve(&[]).await;
    assert_eq!(issuer.jwks.fetches.load(Ordering::SeqCst), 1, "at start");
    let rotated = Signer::es256("es-2");
    let token = rotated.token(&claims("alice", &["research"], "synapse:write"));
    issuer.jwks.keys.lock().unwrap().push(rotated.jwk.clone());
    let (status, _, text) = server
        .send(
            reqwest::Method::POST,
            "/mcp",
            Some(&token),
            Some(&initialize()),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(issuer.jwks.fetches.load(Ordering::SeqCst), 2, "the new key");
    let stranger = Signer::es256("es-3").token(&claims("alice", &["research"], "synapse:write"));
    for _ in 0..3 {
        let (status, _, _) = server
            .send(
                reqwest::Method::POST,
                "/mcp",
                Some(&stranger),
                Some(&initialize()),
            )
            .await;
        assert_eq!(status, 401);
    }
    assert_eq!(
        issuer.jwks.fetches.load(Ordering::SeqCst),
        2,
        "an unknown key id right after a fetch does not fetch again"
    );
}

#[tokio::test]
async fn a_jwks_file_from_the_config_file_is_read_again_when_it_changes() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("jwks.json");
    let first = Signer::es256("one");
    let second = Signer::rs256("two");
    std::fs::write(&path, json!({"keys": [first.jwk]}).to_string()).unwrap();
    // Configured in the file's `[http.oauth]` table this time.
    let config = folder.path().join("config.toml");
    let table = format!(
        "[http.oauth]\nissuer = \"{ISSUER}\"\naudiences = [\"{AUDIENCE}\"]\njwks = {:?}\n",
        path.to_str().unwrap()
    );
    std::fs::write(&config, table).unwrap();
    let server = HttpServer::start(&["--config", config.to_str().unwrap()]).await;
    let token = second.token(&claims("alice", &["research"], "synapse:write"));
    let opening = initialize();
    let post = || server.send(reqwest::Method::POST, "/mcp", Some(&token), Some(&opening));
    assert_eq!(post().await.0, 401);
    std::fs::write(&path, json!({"keys": [first.jwk, second.jwk]}).to_string()).unwrap();
    let (status, _, text) = post().await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn oauth_without_keys_or_audience_is_refused_at_start() {
    let refused = |args: &[&str]| {
        let output = Command::new(crate::common::binary())
            .env("HOME", crate::common::quiet_home())
            .args(["serve", "--store", "memory", "--http", "127.0.0.1:0"])
            .args(args)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?} was served");
        let stderr = String::from_utf8(output.stderr).unwrap();
        crate::common::error_part(&stderr)
    };
    let mut refusals = Transcript::default();
    let stderr = refused(&["--oauth-issuer", ISSUER, "--oauth-audience", AUDIENCE]);
    refusals.add("without --oauth-jwks", &stderr);
    let stderr = refused(&[
        "--oauth-issuer",
        ISSUER,
        "--oauth-jwks",
        "/nonexistent.json",
    ]);
    refusals.add("without --oauth-audience", &stderr);
    let stderr = refused(&[
        "--oauth-issuer",
        ISSUER,
        "--oauth-audience",
        AUDIENCE,
        "--oauth-jwks",
        "/nonexistent/jwks.json",
    ]);
    refusals.add("with a missing key file", &stderr);
    refusals.assert_golden("oauth/refused-at-start.txt");
}

#[tokio::test]
async fn a_workspace_path_is_percent_decoded_and_a_bad_encoding_is_400() {
    let server = HttpServer::start(&[]).await;
    let token = server.token("alice", &["a b", "ü"], false);
    let client = server.client("/mcp/a%20b", &token, unsupported()).await;
    let written = call(
        &client,
        "WriteVar",
        json!({"name": "where", "value": "a b"}),
    )
    .await;
    assert!(!is_error(&written), "{written:?}");
    client.cancel().await.unwrap();
    // `/mcp` is the token's first workspace, `a b`: the same one.
    let client = server.client("/mcp", &token, unsupported()).await;
    let read = call(&client, "ReadVar", json!({"name": "where"})).await;
    let mut answers = Transcript::default();
    answers.add("ReadVar in `/mcp`", &text(&read));
    client.cancel().await.unwrap();
    let client = server.client("/mcp/%C3%BC", &token, unsupported()).await;
    let read = call(&client, "ReadVar", json!({"name": "where"})).await;
    assert!(is_error(&read), "ü is another workspace: {read:?}");
    client.cancel().await.unwrap();

    let opening = initialize();
    let post =
        |path: &'static str| server.send(reqwest::Method::POST, path, Some(&token), Some(&opening));
    let (status, _, text) = post("/mcp/c%20d").await;
    assert_eq!(status, 403, "{text}");
    answers.add("/mcp/c%20d", &text);
    for (path, reason) in [
        ("/mcp/a%zz", "`%` not followed by two hex digits"),
        ("/mcp/a%2", "`%` not followed by two hex digits"),
        ("/mcp/%FF", "does not decode to UTF-8"),
    ] {
        let (status, _, text) = post(path).await;
        assert_eq!(status, 400, "{path}: {text}");
        assert!(text.contains(reason), "{path}: {text}");
        answers.add(path, &text);
    }
    answers.assert_golden("oauth/workspace-paths.txt");
}

#[tokio::test]
async fn a_session_that_idles_out_leaves_no_owner_behind() {
    let server = HttpServer::start(&["--session-idle-seconds", "1"]).await;
    let alice = server.token("alice", &["team"], false);
    let bob = server.token("bob", &["team"], false);
    let session = server.open_session("/mcp", &alice).await;
    let with_session = || server.list_in_session("/mcp", &session, &bob);
    // While the session lives, it is alice's: bob is told it is not his.
    let (status, text) = with_session().await;
    assert_eq!(status, 404);
    assert!(text.contains("for this token and workspace"), "{text}");
    // Once the server has closed it for idling, its owner is gone too: bob's request reaches
    // rmcp, which knows no such session. (Bob's refused requests do not keep it alive.)
    let mut answer = (status, text);
    for _ in 0..150 {
        if !answer.1.contains("for this token and workspace") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        answer = with_session().await;
    }
    assert_eq!(answer.0, 404, "{}", answer.1);
    assert!(
        !answer.1.contains("for this token and workspace"),
        "the owner of a closed session is still kept: {}",
        answer.1
    );
}

/// The skills every workspace shares change only with the scope `synapse:skills` beside
/// `synapse:write`: a writing JWT for another workspace is refused `SkillSave`.
#[tokio::test]
async fn a_jwt_changes_the_shared_skills_only_with_the_skills_scope() {
    let folder = tempfile::tempdir().unwrap();
    let root = folder.path().join("skills");
    std::fs::create_dir_all(&root).unwrap();
    let config = folder.path().join("config.toml");
    std::fs::write(&config, "[tools.SkillSave]\nexecution = \"auto\"\n").unwrap();
    let (root, config) = (root.display().to_string(), config.display().to_string());
    let issuer = Issuer::start().await;
    let server = issuer
        .serve(&["--skills", &root, "--config", &config])
        .await;
    let skill = json!({"name": "team-style", "description": "How the team writes. Use when writing.",
                       "body": "# Style\nInjected."});
    let writer = issuer
        .es256
        .token(&claims("mallory", &["wb"], "synapse:write"));
    let client = server.client("/mcp/wb", &writer, unsupported()).await;
    let refused = call(&client, "SkillSave", skill.clone()).await;
    assert!(is_error(&refused), "{refused:?}");
    assert_golden_text("oauth/skills-scope-refused.txt", &text(&refused));
    client.cancel().await.unwrap();
    let curator = issuer
        .es256
        .token(&claims("curator", &["wb"], "synapse:write synapse:skills"));
    let client = server.client("/mcp/wb", &curator, unsupported()).await;
    let saved = call(&client, "SkillSave", skill).await;
    assert!(!is_error(&saved), "{saved:?}");
    client.cancel().await.unwrap();
}

/// A JWT's `synapse:group:NAME` scope turns that built-in group on in its workspace at its
/// first session (a front end's tools on a default start), as `token add --groups` does; a
/// token without it leaves the default.
#[tokio::test]
async fn a_jwt_group_scope_turns_the_group_on_in_its_workspace() {
    let issuer = Issuer::start().await;
    let server = issuer.serve(&["--groups", "default"]).await;
    let front_end = issuer.es256.token(&claims(
        "tavern",
        &["chat"],
        "synapse:write synapse:group:snapshots synapse:group:nonsense",
    ));
    let client = server.client("/mcp/chat", &front_end, unsupported()).await;
    assert!(group_is_on(&client, "snapshots").await);
    client.cancel().await.unwrap();
    let plain = issuer
        .es256
        .token(&claims("alice", &["notes"], "synapse:write"));
    let client = server.client("/mcp/notes", &plain, unsupported()).await;
    assert!(!group_is_on(&client, "snapshots").await);
    client.cancel().await.unwrap();
}

/// A JWKS URL that hangs: a token with a made-up key id starts a fetch that gets no answer, and
/// tokens whose key is cached are served meanwhile, each at once (the keys are not locked while
/// the fetch runs).
#[tokio::test]
async fn a_hanging_jwks_url_stalls_no_token_whose_key_is_known() {
    let issuer = Issuer::start().await;
    let server = issuer.serve(&[]).await;
    assert_eq!(issuer.jwks.fetches.load(Ordering::SeqCst), 1, "at start");
    issuer.jwks.hanging.store(true, Ordering::SeqCst);
    let forged = Signer::es256("forged").token(&claims("mallory", &["research"], "synapse:write"));
    let url = server.url("/mcp");
    let forging = tokio::spawn(async move {
        http_client()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(forged)
            .body(initialize().to_string())
            .send()
            .await
    });
    // The forged key id's fetch has reached the JWKS server, and hangs there.
    while issuer.jwks.fetches.load(Ordering::SeqCst) < 2 {
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let valid = issuer
        .es256
        .token(&claims("alice", &["research"], "synapse:write"));
    for _ in 0..4 {
        let started = std::time::Instant::now();
        let (status, _, text) = server
            .send(
                reqwest::Method::POST,
                "/mcp",
                Some(&valid),
                Some(&initialize()),
            )
            .await;
        assert_eq!(status, 200, "{text}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "a known key waited {:?} for the hanging fetch",
            started.elapsed()
        );
    }
    assert!(
        !forging.is_finished(),
        "the forged token still waits for its fetch"
    );
    forging.abort();
}

/// The audience is matched by path segments: a path below it that climbs out (`/../`, encoded
/// or not) is not below it.
#[tokio::test]
async fn an_audience_that_climbs_out_of_the_resource_is_refused() {
    let issuer = Issuer::start().await;
    let server = issuer.serve(&[]).await;
    for (audience, expected) in [
        (format!("{AUDIENCE}/research"), 200),
        (format!("{AUDIENCE}/../admin"), 401),
        (format!("{AUDIENCE}/%2e%2e/admin"), 401),
    ] {
        let mut claims = claims("alice", &["research"], "synapse:write");
        claims["aud"] = json!(audience);
        let token = issuer.es256.token(&claims);
        let (status, _, text) = server
            .send(
                reqwest::Method::POST,
                "/mcp",
                Some(&token),
                Some(&initialize()),
            )
            .await;
        assert_eq!(status, expected, "{audience}: {text}");
    }
}
