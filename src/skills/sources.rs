//! Skills from git repositories. A `--skills` value `git+https://host/org/repo@ref[#subdir]` or
//! `git+file:///path/repo@ref[#subdir]` names a [`Source`], pinned to a ref (a tag, a branch or
//! a full commit id). Its tree at that commit is written under the data folder
//! ([`Checkout`]), and that copy is a read-only skill root. The copy is replaced only by a fetch
//! that succeeds; a failure keeps the last good copy and is recorded beside it (`source.json`),
//! so that `skills check` can say so. Reading and fetching go through gix ([`fetch`]), never a
//! `git` binary.
//!
//! Layout, below `<data dir>/skill-sources/`:
//! - `<host>/<org>/<repo>/<ref>/tree/`: the repository's files at the ref; the skill root is
//!   `tree/<subdir>`. `<ref>/source.json`: the source, the commit, when it was fetched, and the
//!   last failure.
//! - `<host>/<org>/<repo>/repo.git`: a bare mirror of an `https` repository (branches and
//!   tags), fetched into on every update and shared by its refs.
//! - `file/<folder name>-<digest of its path>/<ref>/…` for a local repository, which is read in
//!   place.

pub mod fetch;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The folder below the data folder that holds the copies.
pub const FOLDER: &str = "skill-sources";

/// What a source's value said wrong, or a source the configuration refuses.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("bad skill source `{spec}`: {problem}")]
    Invalid { spec: String, problem: String },
    #[error(
        "skill source `{spec}` is not allowed: `{location}` matches no entry of `skill_sources_allow` in the config file ({allowed}); add its host or organization there, such as `{suggestion}`"
    )]
    NotAllowed {
        spec: String,
        location: String,
        allowed: String,
        suggestion: String,
    },
}

/// How a repository is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Https,
    /// A repository on this machine, read in place.
    File,
}

/// A git repository pinned to a ref, from a `git+…` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The value as written.
    pub spec: String,
    pub transport: Transport,
    /// The repository without `git+`, ref or subdir: `https://host/org/repo`, `file:///path`.
    pub url: String,
    /// `host/org/repo` (host in lower case) for https; the repository's path for a local one.
    pub location: String,
    /// A tag, a branch or a full commit id.
    pub reference: String,
    /// The folder of the repository that holds the skills, when not its top.
    pub subdir: Option<String>,
}

/// Whether a `--skills` value names a git source rather than a folder: it starts with `git+`
/// or has a scheme (`https://…` is refused with a hint instead of read as a folder).
pub fn is_source(value: &str) -> bool {
    value.starts_with("git+") || value.contains("://")
}

impl Source {
    /// Reads `git+https://host/org/repo@ref[#subdir]` or `git+file:///path@ref[#subdir]`.
    pub fn parse(spec: &str) -> Result<Self, Error> {
        let invalid = |problem: String| Error::Invalid {
            spec: spec.to_owned(),
            problem,
        };
        let (transport, rest) = if let Some(rest) = spec.strip_prefix("git+https://") {
            (Transport::Https, rest)
        } else if let Some(rest) = spec.strip_prefix("git+file://") {
            (Transport::File, rest)
        } else {
            let scheme = spec.split_once("://").map_or(spec, |(scheme, _)| scheme);
            return Err(invalid(format!(
                "unknown scheme `{scheme}`: a git skill source starts with `git+https://` or `git+file://`"
            )));
        };
        let (repository, subdir) = match rest.split_once('#') {
            Some((repository, subdir)) => (repository, check_subdir(subdir).map_err(invalid)?),
            None => (rest, None),
        };
        let (location, reference) = match transport {
            Transport::Https => https_location(repository),
            Transport::File => file_location(repository),
        }
        .map_err(invalid)?;
        let Some(reference) = reference else {
            return Err(invalid(format!(
                "it names no ref; pin one with `@TAG`, `@BRANCH` or `@COMMIT` after the repository, such as `git+{}{}@v1.0`",
                match transport {
                    Transport::Https => "https://",
                    Transport::File => "file://",
                },
                repository
            )));
        };
        check_reference(reference).map_err(invalid)?;
        // What is fetched is what was checked: the decoded, normalised location.
        let url = match transport {
            Transport::Https => {
                let written = repository
                    .rsplit_once('@')
                    .map_or(repository, |(url, _)| url)
                    .trim_end_matches('/');
                let suffix = written.strip_suffix(".git").map_or("", |_| ".git");
                format!("https://{location}{suffix}")
            }
            Transport::File => format!("file://{location}"),
        };
        Ok(Self {
            spec: spec.to_owned(),
            transport,
            url,
            location,
            reference: reference.to_owned(),
            subdir,
        })
    }

    /// Whether the allowlist (`skill_sources_allow`; `None` when the config has none) lets this
    /// source in: a local repository always; an https one when an entry is its host, or its host
    /// and leading folders (`github.com/org`).
    pub fn allowed(&self, allow: Option<&[String]>) -> Result<(), Error> {
        let Some(allow) = allow else { return Ok(()) };
        if self.transport == Transport::File {
            return Ok(());
        }
        let location = self.location.to_lowercase();
        let matches = |entry: &String| {
            let entry = entry.trim_matches('/').to_lowercase();
            !entry.is_empty() && (location == entry || location.starts_with(&format!("{entry}/")))
        };
        if allow.iter().any(matches) {
            return Ok(());
        }
        let allowed = if allow.is_empty() {
            "it is empty".to_owned()
        } else {
            allow.join(", ")
        };
        let mut parts = self.location.splitn(3, '/');
        let suggestion = match (parts.next(), parts.next()) {
            (Some(host), Some(org)) => format!("{host}/{org}"),
            _ => self.location.clone(),
        };
        Err(Error::NotAllowed {
            spec: self.spec.clone(),
            location: self.location.clone(),
            allowed,
            suggestion,
        })
    }

    /// The folder, relative to `skill-sources/`, of this repository's copies.
    fn key(&self) -> PathBuf {
        match self.transport {
            Transport::Https => self.location.split('/').map(escape).collect(),
            Transport::File => {
                let path = Path::new(&self.location);
                let name = path.file_name().map_or_else(
                    || "repository".to_owned(),
                    |name| name.to_string_lossy().into_owned(),
                );
                let digest = crate::folders::sha256(self.location.as_bytes());
                let short = digest
                    .trim_start_matches("sha256:")
                    .get(..12)
                    .unwrap_or_default();
                Path::new("file").join(format!("{}-{short}", escape(&name)))
            }
        }
    }
}

/// `host/org/repo[@ref]` of an https source: the location and the ref.
fn https_location(repository: &str) -> Result<(String, Option<&str>), String> {
    let Some((host, path)) = repository.split_once('/') else {
        let host = repository.split('@').next().unwrap_or_default();
        return Err(format!(
            "`{repository}` is not a repository path; write `git+https://{host}/ORG/REPO@REF`"
        ));
    };
    if host.contains('@') {
        return Err(
            "credentials in the URL are not supported; name a repository that can be read without them"
                .to_owned(),
        );
    }
    if !is_host(host) {
        return Err(format!(
            "`{}` is not a host name; write it in ASCII letters, digits, `-` and `.` (a name \
             in another script in its `xn--` form), with a port after `:` if it needs one",
            host.escape_debug()
        ));
    }
    let (path, reference) = match path.rsplit_once('@') {
        Some((path, reference)) => (path, Some(reference)),
        None => (path, None),
    };
    let path = decoded(path).map_err(|problem| {
        format!("`{path}` {problem}; write the repository path as it is, such as `git+https://{host}/ORG/REPO@REF`")
    })?;
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    if path.is_empty()
        || path
            .split('/')
            .any(|segment| segment.is_empty() || segment == "." || segment == "..")
    {
        return Err(format!(
            "`{path}` is not a repository path; write `git+https://{host}/ORG/REPO@REF`"
        ));
    }
    Ok((format!("{}/{path}", host.to_lowercase()), reference))
}

/// Whether a URL parser (the HTTP client's) reads `host` as this same host: letters, digits,
/// `-` and `.` (or an IPv6 address in brackets), and a port; not a control character, an
/// escape or a name outside ASCII, which the client would read otherwise than the allowlist.
fn is_host(host: &str) -> bool {
    let plain = host
        .chars()
        .all(|character| character.is_ascii_alphanumeric() || "-.:[]".contains(character));
    let Ok(parsed) = url::Url::parse(&format!("https://{host}/")) else {
        return false;
    };
    let name = match parsed.port() {
        Some(port) => format!("{}:{port}", parsed.host_str().unwrap_or_default()),
        None => parsed.host_str().unwrap_or_default().to_owned(),
    };
    plain && !host.is_empty() && name == host.to_lowercase()
}

/// Rounds of percent-decoding a repository path goes through: servers that decode twice see
/// `%252e` as `.`, so the check does too.
const DECODING_ROUNDS: usize = 3;

/// An https repository path percent-decoded (until no escape is left, as any server along the
/// way might), so that the checks and the allowlist see the segments the server will see: an
/// escaped `.` (`%2e`) is a dot, and an escaped `/` or `\\` (which would split or join segments
/// differently on each side) is refused.
fn decoded(path: &str) -> Result<String, String> {
    let mut path = path.to_owned();
    for _ in 0..DECODING_ROUNDS {
        if !path.contains('%') {
            break;
        }
        let bytes: Vec<u8> = percent_encoding::percent_decode_str(&path).collect();
        let decoded = String::from_utf8(bytes)
            .map_err(|_| "holds percent-escapes that are not UTF-8".to_owned())?;
        let before = path.split('/').count();
        if decoded.split('/').count() != before {
            return Err("holds an escaped `/`".to_owned());
        }
        path = decoded;
    }
    if path.contains('%') {
        return Err(format!(
            "is still percent-escaped after {DECODING_ROUNDS} rounds of decoding"
        ));
    }
    if path.contains(['\\', '\0']) || path.chars().any(char::is_control) {
        return Err("holds a `\\` or a control character".to_owned());
    }
    // A URL ends its path at `?` or `#`: `org/..?evil/repo` would be fetched as `/` (the `..`
    // taken back) with a query, outside the allowlisted `org/` (found by the fuzz target).
    if path.contains(char::is_whitespace) {
        // A URL parser drops a path's trailing space and encodes the others: the path fetched
        // would not be the one checked (found by the fuzz target).
        return Err("holds a space".to_owned());
    }
    if path.contains(['?', '#']) {
        return Err(
            "holds a `?` or `#` (escaped or not), which would end the path in a URL".to_owned(),
        );
    }
    Ok(path)
}

/// `/path/to/repo[@ref]` of a local source: the path and the ref.
fn file_location(repository: &str) -> Result<(String, Option<&str>), String> {
    if !repository.starts_with('/') {
        return Err(format!(
            "`git+file://` takes an absolute path, such as `git+file:///home/me/skills-repo@v1`; `{repository}` is not one"
        ));
    }
    let (path, reference) = match repository.rsplit_once('@') {
        Some((path, reference)) => (path, Some(reference)),
        None => (repository, None),
    };
    let path = if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    };
    Ok((path.to_owned(), reference))
}

/// A ref must be usable as a git ref name and as a folder name.
fn check_reference(reference: &str) -> Result<(), String> {
    let bad = reference.is_empty()
        || reference.starts_with(['-', '/', '.'])
        || reference.ends_with(['/', '.'])
        // Git's own rule for ref names, which is case-sensitive.
        || reference.as_bytes().ends_with(b".lock")
        || reference.contains("..")
        || reference.contains("//")
        || reference.contains("@{")
        || reference.chars().any(|character| {
            character.is_whitespace() || character.is_control() || "~^:?*[\\".contains(character)
        });
    if bad {
        return Err(format!(
            "`{reference}` is not a ref name; give a tag, a branch or a full commit id after `@`"
        ));
    }
    Ok(())
}

/// The subdir after `#`: a relative path inside the repository, without `..`.
fn check_subdir(subdir: &str) -> Result<Option<String>, String> {
    let trimmed = subdir.trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok(None);
    }
    let bad = trimmed.starts_with('/')
        || trimmed.contains('\\')
        || trimmed
            .split('/')
            .any(|segment| segment.is_empty() || segment == "." || segment == "..");
    if bad {
        return Err(format!(
            "subdir `{subdir}` must be a folder inside the repository, written relative to its top without `.` or `..`, such as `#skills`"
        ));
    }
    Ok(Some(trimmed.to_owned()))
}

/// A name safe as one folder: characters other than ASCII letters, digits, `.`, `_` and `-`
/// become `%XX`, and so does a name of dots only.
fn escape(name: &str) -> String {
    use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
    const DOTS: &AsciiSet = &NON_ALPHANUMERIC.remove(b'_').remove(b'-');
    const NAME: &AsciiSet = &DOTS.remove(b'.');
    let dots_only = name.chars().all(|character| character == '.');
    utf8_percent_encode(name, if dots_only { DOTS } else { NAME }).to_string()
}

/// A source and where its copy is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    pub source: Source,
    /// `<data dir>/skill-sources/<repository>/<ref>`.
    pub folder: PathBuf,
}

/// What `source.json` records about a copy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub source: String,
    /// The commit the copy holds, when there is one.
    pub commit: Option<String>,
    /// When that copy was last fetched or confirmed (RFC 3339).
    pub fetched: Option<String>,
    /// The last update that failed, when the latest one did.
    pub failure: Option<Failure>,
}

/// An update that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub at: String,
    pub message: String,
}

/// What an update did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The first copy.
    Fetched {
        commit: String,
    },
    Unchanged {
        commit: String,
    },
    Updated {
        old: String,
        new: String,
    },
    /// Nothing changed on disk; `kept` is the commit still served, if any.
    Failed {
        message: String,
        kept: Option<String>,
    },
}

impl fmt::Display for Outcome {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fetched { commit } => write!(formatter, "fetched {commit}"),
            Self::Unchanged { commit } => write!(formatter, "unchanged at {commit}"),
            Self::Updated { old, new } => write!(formatter, "{old} → {new}"),
            Self::Failed {
                message,
                kept: Some(commit),
            } => write!(
                formatter,
                "failed: {message}; keeping the last good copy, {commit}"
            ),
            Self::Failed {
                message,
                kept: None,
            } => write!(formatter, "failed: {message}; there is no copy yet"),
        }
    }
}

impl Checkout {
    pub fn new(source: Source, data_folder: &Path) -> Self {
        let folder = data_folder
            .join(FOLDER)
            .join(source.key())
            .join(escape(&source.reference));
        Self { source, folder }
    }

    /// The repository's files at the ref.
    pub fn tree(&self) -> PathBuf {
        self.folder.join("tree")
    }

    /// The skill root: the tree, or its subdir.
    pub fn root(&self) -> PathBuf {
        match &self.source.subdir {
            Some(subdir) => self.tree().join(subdir),
            None => self.tree(),
        }
    }

    /// Whether a copy is on disk.
    pub fn present(&self) -> bool {
        self.tree().is_dir()
    }

    fn state_file(&self) -> PathBuf {
        self.folder.join("source.json")
    }

    /// What `source.json` says, if it can be read.
    pub fn state(&self) -> Option<State> {
        let text = std::fs::read_to_string(self.state_file()).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Resolves the ref again (fetching first for https) and replaces the copy when the commit
    /// changed or there is none. A failure changes nothing but the record of it.
    pub fn update(&self) -> Outcome {
        let previous = self.state().filter(|_| self.present());
        let old = previous.as_ref().and_then(|state| state.commit.clone());
        match fetch::copy(&self.source, &self.folder, old.as_deref()) {
            Ok(commit) => {
                let state = State {
                    source: self.source.spec.clone(),
                    commit: Some(commit.clone()),
                    fetched: Some(now()),
                    failure: None,
                };
                let recorded = self.record(&state);
                match (old, recorded) {
                    (_, Err(message)) => Outcome::Failed {
                        message,
                        kept: Some(commit),
                    },
                    (None, Ok(())) => Outcome::Fetched { commit },
                    (Some(old), Ok(())) if old == commit => Outcome::Unchanged { commit },
                    (Some(old), Ok(())) => Outcome::Updated { old, new: commit },
                }
            }
            Err(error) => {
                let message = error.to_string();
                let mut state = previous.unwrap_or_else(|| State {
                    source: self.source.spec.clone(),
                    ..State::default()
                });
                state.failure = Some(Failure {
                    at: now(),
                    message: message.clone(),
                });
                if let Err(error) = self.record(&state) {
                    tracing::warn!("{error}");
                }
                Outcome::Failed {
                    message,
                    kept: state.commit,
                }
            }
        }
    }

    /// Writes `source.json` beside the copy (through a temporary file and a rename).
    fn record(&self, state: &State) -> Result<(), String> {
        let path = self.state_file();
        let temporary = self.folder.join("source.json.new");
        let text = serde_json::to_string_pretty(state).map_err(|error| error.to_string())?;
        std::fs::create_dir_all(&self.folder)
            .and_then(|()| std::fs::write(&temporary, text))
            .and_then(|()| std::fs::rename(&temporary, &path))
            .map_err(|error| format!("cannot write {}: {error}", path.display()))
    }
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn problem(spec: &str) -> String {
        Source::parse(spec).unwrap_err().to_string()
    }

    #[test]
    fn https_and_file_sources_are_read_with_ref_and_subdir() {
        let source = Source::parse("git+https://GitHub.com/org/repo.git@v1.2#skills/").unwrap();
        assert_eq!(
            source,
            Source {
                spec: "git+https://GitHub.com/org/repo.git@v1.2#skills/".to_owned(),
                transport: Transport::Https,
                url: "https://github.com/org/repo.git".to_owned(),
                location: "github.com/org/repo".to_owned(),
                reference: "v1.2".to_owned(),
                subdir: Some("skills".to_owned()),
            }
        );
        let local = Source::parse("git+file:///srv/repos/skills@release/2").unwrap();
        assert_eq!(local.url, "file:///srv/repos/skills");
        assert_eq!(local.location, "/srv/repos/skills");
        assert_eq!(local.reference, "release/2");
        assert_eq!(local.subdir, None);
    }

    #[test]
    fn bad_values_are_named_with_the_fix() {
        let missing = problem("git+https://github.com/org/repo");
        assert!(missing.contains("names no ref"), "{missing}");
        assert!(
            missing.contains("git+https://github.com/org/repo@v1.0"),
            "{missing}"
        );
        let scheme = problem("git+ssh://host/org/repo@v1");
        assert!(scheme.contains("unknown scheme `git+ssh`"), "{scheme}");
        assert!(problem("https://host/org/repo@v1").contains("unknown scheme `https`"));
        let subdir = problem("git+file:///srv/repo@v1#../etc");
        assert!(subdir.contains("subdir `../etc`"), "{subdir}");
        assert!(problem("git+file://relative/repo@v1").contains("absolute path"));
        assert!(problem("git+https://github.com/org/repo@v..1").contains("not a ref name"));
        assert!(problem("git+https://user@host/org/repo@v1").contains("credentials"));
        assert!(problem("git+https://host@v1").contains("not a repository path"));
    }

    /// Found by the `skill_sources` fuzz target: a host holding control characters was
    /// accepted, and the URL fetched was not the location the allowlist checked.
    #[test]
    fn a_host_a_url_parser_reads_otherwise_is_refused() {
        let refusals: Vec<String> = [
            "git+https://github.c\u{16}\0\0/r(po@v2",
            "git+https://gith%75b.com/org/repo@v1",
            "git+https://bücher.example/org/repo@v1",
            "git+https://Gi[Hub.com/Org/Repo.git@main#skills/sub",
            "git+https://host:99999/org/repo@v1",
        ]
        .iter()
        .map(|spec| problem(spec))
        .collect();
        assert_eq!(
            refusals,
            [
                "bad skill source `git+https://github.c\u{16}\0\0/r(po@v2`: `github.c\\u{16}\\0\\0` is not a host name; write it in ASCII letters, digits, `-` and `.` (a name in another script in its `xn--` form), with a port after `:` if it needs one",
                "bad skill source `git+https://gith%75b.com/org/repo@v1`: `gith%75b.com` is not a host name; write it in ASCII letters, digits, `-` and `.` (a name in another script in its `xn--` form), with a port after `:` if it needs one",
                "bad skill source `git+https://bücher.example/org/repo@v1`: `bücher.example` is not a host name; write it in ASCII letters, digits, `-` and `.` (a name in another script in its `xn--` form), with a port after `:` if it needs one",
                "bad skill source `git+https://Gi[Hub.com/Org/Repo.git@main#skills/sub`: `Gi[Hub.com` is not a host name; write it in ASCII letters, digits, `-` and `.` (a name in another script in its `xn--` form), with a port after `:` if it needs one",
                "bad skill source `git+https://host:99999/org/repo@v1`: `host:99999` is not a host name; write it in ASCII letters, digits, `-` and `.` (a name in another script in its `xn--` form), with a port after `:` if it needs one",
            ]
        );
        assert!(Source::parse("git+https://[::1]:8443/org/repo@v1").is_ok());
        assert!(Source::parse("git+https://GitHub.com:8443/org/repo@v1").is_ok());
        let spaced = problem("git+https://github.com/org/repo.git @v1");
        assert!(spaced.contains("holds a space"), "{spaced}");
        for path in ["org/..%3fevil/repo", "org/..?evil/repo", "org/%253F/repo"] {
            let refused = problem(&format!("git+https://github.com/{path}@v1"));
            assert!(refused.contains("holds a `?` or `#`"), "{path}: {refused}");
        }
    }

    #[test]
    fn the_allowlist_matches_hosts_and_leading_folders() {
        let source = Source::parse("git+https://github.com/org/repo@v1").unwrap();
        let allow = |entries: &[&str]| {
            let entries: Vec<String> = entries.iter().map(|entry| (*entry).to_owned()).collect();
            source.allowed(Some(&entries)).is_ok()
        };
        assert!(source.allowed(None).is_ok());
        assert!(allow(&["github.com"]));
        assert!(allow(&["GitHub.com/org/"]));
        assert!(allow(&["github.com/org/repo"]));
        assert!(!allow(&["github.com/organization"]));
        assert!(!allow(&["gitlab.com", "github.com/other"]));
        let refused = source.allowed(Some(&[])).unwrap_err().to_string();
        assert!(refused.contains("skill_sources_allow"), "{refused}");
        assert!(refused.contains("`github.com/org`"), "{refused}");
        let local = Source::parse("git+file:///srv/repo@v1").unwrap();
        assert!(local.allowed(Some(&[])).is_ok());
    }

    /// Second round, finding 5: `host/org/%2e%2e/evil/repo` passed an allowlist of `host/org`
    /// (the check compared `..` literally) and the HTTP client fetched `/evil/repo`. Every
    /// escape of `.` and `/` (either case, doubly escaped, overlong) is now decoded before the
    /// checks, or refused.
    #[test]
    fn escaped_dots_and_slashes_cannot_leave_an_allowed_prefix() {
        let allow = vec!["host/org".to_owned()];
        for path in [
            "org/%2e%2e/evil/repo",
            "org/%2E%2E/evil/repo",
            "org/.%2E/evil/repo",
            "org/%2e./evil/repo",
            "org/%252e%252e/evil/repo",
            "org/%25252e%25252e/evil/repo",
            "org/..%2fevil/repo",
            "org/..%2Fevil%2Frepo",
            "org%2f..%2fevil/repo",
            "org/%2e%2e%2fevil/repo",
            "org/%2e%2e%5cevil/repo",
            "org/..%5Cevil/repo",
            "org/%c0%ae%c0%ae/evil/repo",
            "org/%2e/../evil/repo",
            "org/repo/%2e%2e/%2e%2e/evil/repo",
            "org/x%00/../evil",
        ] {
            let spec = format!("git+https://host/{path}@v1");
            let accepted = Source::parse(&spec)
                .and_then(|source| source.allowed(Some(&allow)).map(|()| source));
            assert!(accepted.is_err(), "{spec} was accepted: {accepted:?}");
        }
        // An escape of an ordinary character is decoded, and what is fetched is what was checked.
        let escaped = Source::parse("git+https://host/org/re%70o.git@v1").unwrap();
        assert_eq!(
            (escaped.location.as_str(), escaped.url.as_str()),
            ("host/org/repo", "https://host/org/repo.git")
        );
        assert!(escaped.allowed(Some(&allow)).is_ok());
    }

    proptest::proptest! {
        /// Whatever escapes a path holds, an accepted source under `host/org` has a location
        /// under it with no `.` or `..` segment, and fetches exactly that location.
        #[test]
        fn an_accepted_source_stays_under_its_allowed_prefix(
            segments in proptest::collection::vec(
                "(\\.|%2e|%2E|%25|%2f|%2F|%5c|2|e|E|/|a|%c0|%ae)*", 1..5),
        ) {
            let spec = format!("git+https://host/org/{}@v1", segments.join("/"));
            let allow = vec!["host/org".to_owned()];
            if let Ok(source) = Source::parse(&spec)
                && source.allowed(Some(&allow)).is_ok()
            {
                proptest::prop_assert!(
                    source.location == "host/org" || source.location.starts_with("host/org/"),
                    "{:?}", source
                );
                proptest::prop_assert!(
                    source.location.split('/').all(|segment| segment != "." && segment != ".."),
                    "{:?}", source
                );
                proptest::prop_assert!(
                    source.url.strip_prefix("https://").is_some_and(|rest| rest
                        .strip_suffix(".git")
                        .unwrap_or(rest)
                        == source.location),
                    "{:?}", source
                );
            }
        }
    }

    #[test]
    fn copies_live_under_the_data_folder_by_repository_and_ref() {
        let data = Path::new("/data");
        let https = Checkout::new(
            Source::parse("git+https://github.com/org/repo.git@feature/x#skills").unwrap(),
            data,
        );
        assert_eq!(
            https.folder,
            Path::new("/data/skill-sources/github.com/org/repo/feature%2Fx")
        );
        assert_eq!(
            https.root(),
            Path::new("/data/skill-sources/github.com/org/repo/feature%2Fx/tree/skills")
        );
        let local = Checkout::new(Source::parse("git+file:///srv/my repo@v1").unwrap(), data);
        let relative = local
            .folder
            .strip_prefix("/data/skill-sources/file")
            .unwrap();
        let name = relative
            .iter()
            .next()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with("my%20repo-"), "{name}");
        assert_eq!(escape(".."), "%2E%2E");
    }
}
