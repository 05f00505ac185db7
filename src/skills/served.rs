//! The text `SkillLoad` and `SkillReadFile` serve: a skill's instructions in `<skill_content>`
//! (whole, as their opening and table of sections, or one section), and a window of a file, a
//! markdown file's opening and table of sections or one of its sections. The cutting is
//! [`super::sections`]'; here it is only written out for the model.

use std::fmt::Write as _;

use super::sections::{self, Outline, Part};
use super::{Error, SKILL_MD, Skill};
use crate::text::Framed;

/// The activation text clients follow best, around the whole body.
pub fn skill_content(skill: &Skill, body: &str) -> String {
    wrap(skill, None, body, "").shown()
}

/// What `SkillLoad` answers: the whole body, its opening and table of sections, or one section
/// — as data, the body, the opening or the section; the envelope and notes are its frame.
pub fn instructions(
    skill: &Skill,
    section: Option<&str>,
    body_limit: usize,
) -> Result<Framed, Error> {
    let body = skill.body()?;
    // A body of no more bytes than the limit has no more characters: served whole, unparsed.
    if section.is_none() && body.len() <= body_limit {
        return Ok(wrap(skill, None, &body, ""));
    }
    let outline = skill.outline()?;
    let part = outline
        .part(&body, section, body_limit)
        .map_err(|unknown| skill.unknown_section(SKILL_MD, unknown))?;
    let name = &skill.name;
    Ok(match part {
        Part::Whole => wrap(skill, None, &body, ""),
        Part::Overview { opening, cut } => {
            let mut after = after_opening(cut);
            write!(
                after,
                "These instructions have {} characters, more than the {body_limit} served whole: above is their opening, below their sections. Load the one your task needs with SkillLoad {{\"name\": \"{name}\", \"section\": \"<id>\"}}; a section comes with its subsections.\n{}",
                outline.characters,
                table_of_contents(&outline)
            )
            .ok();
            wrap(skill, None, opening, &after)
        }
        Part::Section(found) => {
            let after = format!(
                "\n\n[Section `{}` of the instructions, {} of their {} characters; SkillLoad {{\"name\": \"{name}\"}} gives their opening and table of sections.]",
                found.id, found.characters, outline.characters
            );
            let section = body[found.start..found.end].trim_end();
            wrap(skill, Some(&found.id), section, &after)
        }
    })
}

/// `SkillReadFile` with `section`: a window (`start`, `length`, in characters) of one
/// section of a markdown file.
fn file_section(
    skill: &Skill,
    path: &str,
    section: &str,
    start: usize,
    length: usize,
) -> Result<Framed, Error> {
    if !sections::is_markdown(path) {
        return Err(skill.not_markdown(path));
    }
    let text = skill.read_text(path)?;
    let outline = Outline::parse(&text);
    let found = outline
        .section(section)
        .map_err(|unknown| skill.unknown_section(path, unknown))?;
    let window = crate::text::window(&text[found.start..found.end], start, Some(length));
    let (name, id) = (&skill.name, &found.id);
    let (start, end, total) = (window.start, window.end, window.total);
    let header = if window.has_more {
        format!(
            "[Section `{id}` of file `{path}` of skill `{name}`: characters {start}–{end} of {total}; more remains: SkillReadFile {{\"name\": \"{name}\", \"path\": \"{path}\", \"section\": \"{id}\", \"start\": {end}}}]"
        )
    } else {
        format!(
            "[Section `{id}` of file `{path}` of skill `{name}`: characters {start}–{end} of {total}; nothing more remains]"
        )
    };
    Ok(Framed::new(header, window.text))
}

/// `SkillReadFile` with no window: for a markdown file of more than `body_limit` characters
/// with sections, its opening and table of sections; `None` for any other file, which is read
/// in windows as before. A file too large to count is left to windows too.
fn file_overview(skill: &Skill, path: &str, body_limit: usize) -> Result<Option<Framed>, Error> {
    if !sections::is_markdown(path) {
        return Ok(None);
    }
    let counted = skill.read_window(path, 0, 0)?.total;
    if counted.is_none_or(|total| total <= body_limit) {
        return Ok(None);
    }
    let text = skill.read_text(path)?;
    let outline = Outline::parse(&text);
    let Ok(Part::Overview { opening, cut }) = outline.part(&text, None, body_limit) else {
        return Ok(None);
    };
    let name = &skill.name;
    let header = format!(
        "[File `{path}` of skill `{name}`: {} characters, more than the {body_limit} read whole, so its opening and its sections follow. Read a section with SkillReadFile {{\"name\": \"{name}\", \"path\": \"{path}\", \"section\": \"<id>\"}}, or page through the whole file with `start`.]",
        outline.characters
    );
    let mut overview = Framed::new(header, opening.trim_start_matches(['\n', ' ']).to_owned());
    overview.footer = after_opening(cut) + &table_of_contents(&outline);
    Ok(Some(overview))
}

/// What follows an opening: a mark when it was cut short, and a blank line.
fn after_opening(cut: bool) -> String {
    if cut {
        "\n[… the opening is cut here]\n\n".to_owned()
    } else {
        "\n\n".to_owned()
    }
}

/// One line a section, indented by level: `- id: Heading (n characters)`.
fn table_of_contents(outline: &Outline) -> String {
    let top = outline
        .sections
        .iter()
        .map(|section| section.level)
        .min()
        .unwrap_or(1);
    let mut text = String::from("<sections>\n");
    for section in &outline.sections {
        let indent = 2 * usize::from(section.level - top);
        writeln!(
            text,
            "{:indent$}- {}: {} ({} characters)",
            "", section.id, section.heading, section.characters
        )
        .ok();
    }
    text.push_str("</sections>\n");
    text
}

/// `<skill_content>` around `value` and what is said `after` it, with the skill's folder and
/// the list of its other files: the value is the data, the rest its frame.
fn wrap(skill: &Skill, section: Option<&str>, value: &str, after: &str) -> Framed {
    let value = value.trim_start_matches(['\n', ' ']);
    let (value, after) = if after.trim_end().is_empty() {
        (value.trim_end(), "")
    } else {
        (value, after.trim_end())
    };
    let section = section
        .map(|id| format!(" section=\"{}\"", escape(id)))
        .unwrap_or_default();
    let header = format!("<skill_content name=\"{}\"{section}>", skill.name);
    let mut text = after.to_owned();
    write!(
        text,
        "\n\nSkill folder: {}\nRelative paths in this skill are relative to that folder; read them with SkillReadFile {{\"name\": \"{}\", \"path\": \"…\"}}.\n",
        skill.location.display(),
        skill.name
    )
    .ok();
    let resources = skill.resources();
    if !resources.is_empty() {
        text.push_str("<skill_resources>\n");
        for path in resources.iter() {
            writeln!(text, "  <file>{}</file>", escape(path)).ok();
        }
        text.push_str("</skill_resources>\n");
    }
    text.push_str("</skill_content>");
    let mut framed = Framed::new(header, value.to_owned());
    framed.footer = text;
    framed
}

/// What of a skill's file to read: a window (`start`, `length`, in characters) of the file or
/// of one of its sections.
pub struct FileRequest<'a> {
    pub path: &'a str,
    pub section: Option<&'a str>,
    pub start: Option<usize>,
    pub length: Option<usize>,
}

/// A window of the file, of one of its sections, or, for a long markdown file read with no
/// window, its opening and table of sections. `limits`: the output limit (the default window)
/// and the body limit (the most characters of a markdown file read whole).
pub fn file_text(
    skill: &Skill,
    request: &FileRequest<'_>,
    (output_limit, body_limit): (Option<usize>, usize),
) -> Result<Framed, Error> {
    let path = request.path;
    let start = request.start.unwrap_or(0);
    let length = request.length.or(output_limit).unwrap_or(usize::MAX);
    if let Some(section) = request.section {
        return file_section(skill, path, section, start, length);
    }
    if request.start.is_none()
        && request.length.is_none()
        && let Some(overview) = file_overview(skill, path, body_limit)?
    {
        return Ok(overview);
    }
    let window = skill.read_window(path, start, length)?;
    let name = &skill.name;
    let (start, end) = (window.start, window.end);
    let total = window
        .total
        .map_or_else(|| "a large file".to_owned(), |total| total.to_string());
    let header = if window.more {
        format!(
            "[File `{path}` of skill `{name}`: characters {start}–{end} of {total}; more remains: SkillReadFile {{\"name\": \"{name}\", \"path\": \"{path}\", \"start\": {end}}}]"
        )
    } else {
        format!(
            "[File `{path}` of skill `{name}`: characters {start}–{end} of {total}; nothing more remains]"
        )
    };
    Ok(Framed::new(header, window.text))
}

/// Text made safe inside an XML-like element or attribute.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
