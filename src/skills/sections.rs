//! Sections of a markdown document (a SKILL.md body, a reference file), so that a long one can
//! be served as its opening and a table of contents, and then one part at a time.
//!
//! Headings are read by the rules of `CommonMark` (`pulldown-cmark`): ATX (`## Usage`) and setext (a line underlined
//! with `===` or `---`) headings count, `#` lines inside code fences and indented code do not,
//! and neither do headings nested in lists or block quotes (a section cut there would split
//! the list). A leading YAML frontmatter block is metadata, never a heading.
//!
//! A section runs from its heading to the next heading of the same or a higher level, so it
//! holds its subsections. Its id is the heading's slug as GitHub writes anchors (lower case,
//! punctuation dropped, spaces as `-`), a repeated slug getting `-1`, `-2`, … in document order:
//! the same headings give the same ids on every read, and an in-document link such as
//! `[forms](#filling-forms)` names the section it points to.

use std::collections::HashSet;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::search;

/// Characters of a body served whole when the configuration does not say: about the 5,000
/// tokens the Agent Skills specification advises as a SKILL.md's most.
pub const DEFAULT_BODY_LIMIT: usize = 20_000;

/// One section: its heading and where its text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The stable slug of the heading, unique in the document.
    pub id: String,
    /// The heading's text, without its markup.
    pub heading: String,
    /// 1 for `#`, 6 for `######`.
    pub level: u8,
    /// Byte range of the section in the document, subsections included; it starts at the
    /// beginning of the heading's line.
    pub start: usize,
    pub end: usize,
    /// Where the section's own text ends: at its first subsection, or at its end.
    pub own_end: usize,
    /// Length of the section in characters, subsections included.
    pub characters: usize,
}

/// The sections of one document, in document order, and where its opening ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    pub sections: Vec<Section>,
    /// The opening is the text before the first section, or, when the document starts with a
    /// heading (its title), that heading and the text under it up to the next heading.
    pub opening_end: usize,
    /// Length of the document in characters.
    pub characters: usize,
}

/// What of a document to serve for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// The document is within the budget (or cannot be divided): all of it.
    Whole,
    /// The document is over the budget: its opening (`cut` when the opening itself had to be
    /// shortened) and the table of contents.
    Overview { opening: &'a str, cut: bool },
    /// The section asked for.
    Section(&'a Section),
}

/// A section id the document does not have; `known` holds every id it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSection {
    pub section: String,
    pub known: Vec<String>,
}

impl Outline {
    /// The top-level headings of `text` and the sections they begin.
    pub fn parse(text: &str) -> Self {
        let headings = headings(text);
        let mut taken = HashSet::new();
        let mut sections: Vec<Section> = Vec::with_capacity(headings.len());
        for (position, heading) in headings.iter().enumerate() {
            let following = &headings[position + 1..];
            let end = following
                .iter()
                .find(|next| next.level <= heading.level)
                .map_or(text.len(), |next| next.start);
            let own_end = following.first().map_or(end, |next| next.start.min(end));
            sections.push(Section {
                id: unique_id(&slug(&heading.text), &mut taken),
                heading: heading.text.clone(),
                level: heading.level,
                start: heading.start,
                end,
                own_end,
                characters: text[heading.start..end].chars().count(),
            });
        }
        let opening_end = match sections.as_slice() {
            [] => text.len(),
            [first, rest @ ..] if text[..first.start].trim().is_empty() => {
                rest.first().map_or(text.len(), |second| second.start)
            }
            [first, ..] => first.start,
        };
        Self {
            sections,
            opening_end,
            characters: text.chars().count(),
        }
    }

    pub fn find(&self, id: &str) -> Option<&Section> {
        self.sections.iter().find(|section| section.id == id)
    }

    /// The section with this id, or an error listing the ids there are.
    pub fn section(&self, id: &str) -> Result<&Section, UnknownSection> {
        self.find(id).ok_or_else(|| UnknownSection {
            section: id.to_owned(),
            known: self.sections.iter().map(|known| known.id.clone()).collect(),
        })
    }

    /// Whether a table of contents lets a reader take less than the whole: it has more than
    /// one section (a lone heading over everything would only repeat the document).
    pub fn divided(&self) -> bool {
        self.sections.len() > 1
    }

    /// The part to serve: the section asked for, else the whole document when it has at most
    /// `budget` characters or no sections to offer, else its opening (at most a quarter of the
    /// budget, cut at a line) for the table of contents to follow.
    pub fn part<'a>(
        &'a self,
        text: &'a str,
        section: Option<&str>,
        budget: usize,
    ) -> Result<Part<'a>, UnknownSection> {
        if let Some(id) = section {
            return self.section(id).map(Part::Section);
        }
        if self.characters <= budget || !self.divided() {
            return Ok(Part::Whole);
        }
        let opening = text[..self.opening_end].trim_end();
        let most = (budget / 4).max(1);
        if opening.chars().count() <= most {
            return Ok(Part::Overview {
                opening,
                cut: false,
            });
        }
        let shortened = crate::text::take_chars(opening, most);
        let at_line = shortened
            .rfind('\n')
            .filter(|&line| line >= shortened.len() / 2)
            .map_or(shortened, |line| &shortened[..line]);
        Ok(Part::Overview {
            opening: at_line.trim_end(),
            cut: true,
        })
    }

    /// The section whose own text (its heading and the text before its first subsection)
    /// matches `query` best, ranked by the same BM25F, stemming and typo tolerance as skill
    /// search; `None` when no section matches.
    pub fn best_match(&self, text: &str, query: &str) -> Option<&Section> {
        let documents = self.sections.iter().map(|section| search::Document {
            headings: section.heading.clone(),
            body: text[section.start..section.own_end].to_owned(),
            ..search::Document::default()
        });
        let index = search::Index::build(documents);
        let best = index.search(query, |_| true, 1);
        best.first().map(|&(position, _)| &self.sections[position])
    }
}

/// A heading at the top level of the document.
struct Heading {
    level: u8,
    text: String,
    /// The beginning of its line.
    start: usize,
}

fn headings(text: &str) -> Vec<Heading> {
    let options = Options::ENABLE_YAML_STYLE_METADATA_BLOCKS;
    let mut found: Vec<Heading> = Vec::new();
    // Tags open around the current event: a heading is at the top level when none is.
    let mut open = 0_usize;
    let mut current: Option<Heading> = None;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) if open == 0 => {
                let start = text[..range.start].rfind('\n').map_or(0, |line| line + 1);
                current = Some(Heading {
                    level: level as u8,
                    text: String::new(),
                    start,
                });
                open += 1;
            }
            Event::Start(_) => open += 1,
            Event::End(TagEnd::Heading(_)) if open == 1 && current.is_some() => {
                open -= 1;
                if let Some(heading) = current.take() {
                    let text = heading.text.trim().to_owned();
                    found.push(Heading { text, ..heading });
                }
            }
            Event::End(_) => open = open.saturating_sub(1),
            Event::Text(words) | Event::Code(words) => {
                if let Some(heading) = current.as_mut() {
                    heading.text.push_str(&words);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(heading) = current.as_mut() {
                    heading.text.push(' ');
                }
            }
            _ => {}
        }
    }
    found
}

/// A heading's anchor as GitHub writes it: lower case; letters, digits, `-` and `_` kept;
/// spaces as `-`; everything else dropped. `section` when nothing is left.
pub fn slug(heading: &str) -> String {
    let mut slug = String::with_capacity(heading.len());
    for character in heading.trim().to_lowercase().chars() {
        if character.is_alphanumeric() || character == '-' || character == '_' {
            slug.push(character);
        } else if character.is_whitespace() {
            slug.push('-');
        }
    }
    if slug.is_empty() {
        "section".to_owned()
    } else {
        slug
    }
}

/// `slug`, or `slug-1`, `slug-2`, … when taken, as GitHub numbers repeated anchors.
fn unique_id(slug: &str, taken: &mut HashSet<String>) -> String {
    let mut id = slug.to_owned();
    let mut number = 0;
    while !taken.insert(id.clone()) {
        number += 1;
        id = format!("{slug}-{number}");
    }
    id
}

/// Whether a file is markdown by its name, so that its `#` lines are headings (in a script
/// they are comments).
pub fn is_markdown(path: &str) -> bool {
    let extension = path
        .rsplit_once('.')
        .map(|(_, extension)| extension.to_ascii_lowercase());
    matches!(extension.as_deref(), Some("md" | "markdown" | "mdx"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn ids(outline: &Outline) -> Vec<(&str, u8, &str)> {
        outline
            .sections
            .iter()
            .map(|section| (section.id.as_str(), section.level, section.heading.as_str()))
            .collect()
    }

    const DOCUMENT: &str = "# Guide\n\nIntro text.\n\n## Install `pip`\n\nRun it:\n\n```bash\n# not a heading\npip install x\n```\n\n    # indented code, not a heading\n\nSetext title\n============\n\n## Example\n\nOne.\n\n### Example\n\nTwo.\n\n- # in a list, not a section\n\n> ## in a quote, not a section\n\n## Example\n\nThree.\n";

    #[test]
    fn headings_are_read_by_commonmark_rules() {
        let outline = Outline::parse(DOCUMENT);
        assert_eq!(
            ids(&outline),
            [
                ("guide", 1, "Guide"),
                ("install-pip", 2, "Install pip"),
                ("setext-title", 1, "Setext title"),
                ("example", 2, "Example"),
                ("example-1", 3, "Example"),
                ("example-2", 2, "Example"),
            ]
        );
        assert_eq!(Outline::parse(DOCUMENT), outline, "ids are stable");
    }

    #[test]
    fn a_section_holds_its_subsections_and_stops_at_its_level() {
        let outline = Outline::parse(DOCUMENT);
        let text = |id: &str| {
            let section = outline.find(id).unwrap();
            &DOCUMENT[section.start..section.end]
        };
        assert!(
            text("guide").starts_with("# Guide\n")
                && text("guide")
                    .ends_with("pip install x\n```\n\n    # indented code, not a heading\n\n")
        );
        assert!(text("setext-title").starts_with("Setext title\n====="));
        assert_eq!(
            text("example"),
            "## Example\n\nOne.\n\n### Example\n\nTwo.\n\n- # in a list, not a section\n\n> ## in a quote, not a section\n\n"
        );
        assert_eq!(text("example-2"), "## Example\n\nThree.\n");
        let example = outline.find("example").unwrap();
        assert_eq!(
            &DOCUMENT[example.start..example.own_end],
            "## Example\n\nOne.\n\n"
        );
        assert_eq!(example.characters, text("example").chars().count());
    }

    #[test]
    fn the_opening_is_the_title_and_its_text_or_what_precedes_the_first_heading() {
        let titled = Outline::parse(DOCUMENT);
        assert_eq!(
            &DOCUMENT[..titled.opening_end],
            "# Guide\n\nIntro text.\n\n"
        );
        let untitled = Outline::parse("Preface.\n\n## One\n\nx\n## Two\n");
        assert_eq!(untitled.opening_end, "Preface.\n\n".len());
    }

    #[test]
    fn frontmatter_is_not_a_setext_heading() {
        let outline = Outline::parse("---\nname: x\ndescription: y\n---\n\n# Title\n");
        assert_eq!(ids(&outline), [("title", 1, "Title")]);
    }

    #[test]
    fn parts_by_budget_and_by_id() {
        let outline = Outline::parse(DOCUMENT);
        assert_eq!(outline.part(DOCUMENT, None, 10_000), Ok(Part::Whole));
        assert_eq!(
            outline.part(DOCUMENT, None, 40),
            Ok(Part::Overview {
                opening: "# Guide",
                cut: true
            })
        );
        assert_eq!(
            outline.part(DOCUMENT, None, 100),
            Ok(Part::Overview {
                opening: "# Guide\n\nIntro text.",
                cut: false
            })
        );
        let example = outline.find("example-2").unwrap();
        assert_eq!(
            outline.part(DOCUMENT, Some("example-2"), 0),
            Ok(Part::Section(example))
        );
        let unknown = outline.part(DOCUMENT, Some("nope"), 0).unwrap_err();
        assert_eq!(unknown.known.len(), 6);
        let single = "# Only\n\nA long text.\n";
        assert_eq!(
            Outline::parse(single).part(single, None, 1),
            Ok(Part::Whole)
        );
    }

    #[test]
    fn slugs_follow_github_anchors() {
        assert_eq!(
            slug("Step 2: Fill the form (PDF)"),
            "step-2-fill-the-form-pdf"
        );
        assert_eq!(slug("Über `naïve` café"), "über-naïve-café");
        assert_eq!(slug("snake_case and--dashes"), "snake_case-and--dashes");
        assert_eq!(slug("!!!"), "section");
    }

    #[test]
    fn the_best_match_is_the_section_about_the_query() {
        let text = "# Tool\n\nIntro.\n\n## Merging\n\nMerge several PDF files into one.\n\n## Rotating\n\nRotate pages by 90 degrees.\n";
        let outline = Outline::parse(text);
        let best = |query: &str| {
            outline
                .best_match(text, query)
                .map(|found| found.id.as_str())
        };
        assert_eq!(best("rotate pages"), Some("rotating"));
        assert_eq!(best("merge files"), Some("merging"));
        assert_eq!(best("telescope"), None);
    }

    #[test]
    fn markdown_is_known_by_its_extension() {
        assert!(is_markdown("references/FORMS.md") && is_markdown("a.MARKDOWN"));
        assert!(!is_markdown("scripts/run.py") && !is_markdown("README"));
    }
}
