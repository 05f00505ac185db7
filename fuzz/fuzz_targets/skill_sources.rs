//! `--skills git+…` values into the source that is fetched. Whatever `Source::parse` accepts is
//! fetched from exactly the repository the allowlist checked: its URL, read by a URL parser
//! (which resolves `.` and `..` segments and decodes what an HTTP client would), names the same
//! host and path as its location read the same way, and a source the allowlist lets in is
//! fetched from under the allowed prefix (compared without case, as the allowlist is). Never a panic on any value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use synapse_mcp::skills::sources::{Source, Transport};

/// The allowlist entry the target checks against.
const ALLOWED: &str = "github.com/org";

fuzz_target!(|spec: &str| {
    let Ok(source) = Source::parse(spec) else {
        return;
    };
    if source.transport != Transport::Https {
        return;
    }
    let fetched = url::Url::parse(&source.url).expect("an accepted source's URL parses");
    let checked = url::Url::parse(&format!("https://{}", source.location))
        .expect("an accepted source's location reads as a URL");
    let path = fetched.path().strip_suffix(".git").unwrap_or(fetched.path());
    assert_eq!(
        (fetched.host_str(), path),
        (checked.host_str(), checked.path()),
        "{spec}: fetched from {fetched}, checked {}",
        source.location
    );
    if source.allowed(Some(&[ALLOWED.to_owned()])).is_ok() {
        assert!(
            // Host and organization compare as GitHub does: without case.
            fetched.host_str() == Some("github.com") && {
                let path = fetched.path().to_lowercase();
                // The entry itself, or a folder under it.
                path == "/org" || path.starts_with("/org/")
            },
            "{spec}: allowed, but fetched from {fetched}"
        );
    }
});
