//! Inputs the fuzz targets (fuzz/) found to break the product, kept as tests so the fixes stay.
//! Each test names its target and what went wrong.

use pretty_assertions::assert_eq;
use synapse_mcp::skills::frontmatter;

use crate::common::binary;

/// `frontmatter`: start-up reads only a SKILL.md's head, and it ended lines at LF only, while
/// reading the whole file also ends them at a lone CR. A SKILL.md with classic Mac line ends
/// therefore had frontmatter when loaded but none at start-up, so the skill was skipped.
#[test]
fn a_lone_carriage_return_ends_a_frontmatter_line_at_start_up_too() {
    let found = b"---\n\r\0\0\0\x0c\r\n---\n\r\0\0\0\x0c\r";
    let text = std::str::from_utf8(found).unwrap();
    let whole = frontmatter::normalise(text);
    let head = frontmatter::read_head(std::io::Cursor::new(found)).unwrap();
    assert_eq!(
        frontmatter::split(&head).map(|split| split.yaml),
        frontmatter::split(&whole).map(|split| split.yaml)
    );

    let directory = tempfile::tempdir().unwrap();
    let skill = directory.path().join("classic-mac");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\rname: classic-mac\rdescription: Line ends of a classic Mac.\r---\rBody\r",
    )
    .unwrap();
    let output = std::process::Command::new(binary())
        .args([
            "skills",
            "check",
            directory.path().to_str().unwrap(),
            "--strict",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the skill is refused: {report}");
}
