//! The skills on the wire (SEP-2640): `skill://{name}/{path}` resources and their templates,
//! `skills/list`, `skills/get`, `resources/directory/read`, and completion of skill names and
//! file paths in the templates. Adapters only: the library in `crate::skills` does the work.

use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, ListSkillsResult, ReadResourceResult, Reference, Resource,
    ResourceContents, ResourceTemplate, Skill as WireSkill, SkillFrontmatter, SkillResource,
    SkillResources,
};

use super::errors;
use super::uri::{SKILL_SCHEME, percent_decode, skill_uri};
use crate::skills::{Library, Skill};

const SKILL_TEMPLATE: &str = "skill://{name}/SKILL.md";
const FILE_TEMPLATE: &str = "skill://{name}/{path}";
const DIRECTORY: &str = "inode/directory";
/// Skills per `skills/list` page.
const PAGE: usize = 200;

pub(super) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(SKILL_TEMPLATE, "skill")
            .with_description("A skill's instructions (SKILL.md)")
            .with_mime_type("text/markdown"),
        ResourceTemplate::new(FILE_TEMPLATE, "skill-file")
            .with_description("A file of a skill, by its path relative to the skill folder"),
    ]
}

/// One resource per skill: its SKILL.md (the other files are reached by template or listing).
pub(super) fn list(library: &Library) -> Vec<Resource> {
    library
        .skills()
        .iter()
        .map(|skill| {
            Resource::new(
                skill_uri(&skill.skill_path(), "SKILL.md"),
                skill.frontmatter_name().to_owned(),
            )
            .with_description(skill.description.clone())
            .with_mime_type("text/markdown")
            .with_size(skill.size)
        })
        .collect()
}

/// `skill://{skill path}/{path}` cut into the skill and the decoded path (`""` for the folder).
fn parse<'a>(library: &'a Library, uri: &str) -> Result<(&'a Skill, String), ErrorData> {
    let rest = uri.strip_prefix(SKILL_SCHEME).unwrap_or(uri);
    let (skill, encoded) =
        locate(library, rest).map_err(|error| errors::skill_resource_error(uri, error))?;
    let path = percent_decode(encoded).ok_or_else(|| {
        errors::resource_not_found(uri, "the path is not valid percent-encoded UTF-8")
    })?;
    Ok((skill, path))
}

/// The skill a URI's path (after `skill://`) starts with, and the rest of it. A skill served
/// under another name than its own is at `{name}/{own name}` (see [`Skill::skill_path`]).
fn locate<'a, 'u>(
    library: &'a Library,
    rest: &'u str,
) -> Result<(&'a Skill, &'u str), crate::skills::Error> {
    let (name, after) = rest.split_once('/').unwrap_or((rest, ""));
    let skill = library.get(name)?;
    let Some(declared) = skill.declared_name.as_deref() else {
        return Ok((skill, after));
    };
    let (own, path) = after.split_once('/').unwrap_or((after, ""));
    if own == declared {
        Ok((skill, path))
    } else {
        Err(crate::skills::Error::UnknownFolder {
            skill: skill.name.clone(),
            path: format!("{own} (this skill is at skill://{}/)", skill.skill_path()),
        })
    }
}

pub(super) fn read(library: &Library, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let (skill, path) = parse(library, uri)?;
    let bytes = skill
        .read_file(&path)
        .map_err(|error| errors::skill_resource_error(uri, error))?;
    let contents = match String::from_utf8(bytes) {
        Ok(text) => ResourceContents::text(text, uri).with_mime_type(mime_type(&path)),
        Err(binary) => {
            let blob = base64::engine::general_purpose::STANDARD.encode(binary.into_bytes());
            ResourceContents::blob(blob, uri).with_mime_type("application/octet-stream")
        }
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

fn mime_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, extension)| extension) {
        Some("md" | "markdown") => "text/markdown",
        Some("json") => "application/json",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        _ => "text/plain",
    }
}

/// SEP-2640 `skills/list`, 200 skills a page; the cursor is the offset.
pub(super) fn list_skills(
    library: &Library,
    cursor: Option<&str>,
) -> Result<ListSkillsResult, ErrorData> {
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .map_err(|_| errors::bad_cursor(cursor))?,
    };
    let skills = library.skills();
    let page = skills.iter().skip(start).take(PAGE);
    let entries = page
        .map(|skill| wire_skill(skill))
        .collect::<Result<Vec<_>, _>>()?;
    let mut result = ListSkillsResult::with_all_items(entries);
    if start + PAGE < skills.len() {
        result.next_cursor = Some((start + PAGE).to_string());
    }
    Ok(result)
}

/// SEP-2640 `skills/get`: `-32602` unless the URI is the SKILL.md of a served skill.
pub(super) fn get_skill(library: &Library, uri: &str) -> Result<WireSkill, ErrorData> {
    let rest = uri
        .strip_prefix(SKILL_SCHEME)
        .filter(|rest| rest.ends_with("/SKILL.md"))
        .ok_or_else(|| errors::unknown_skill_uri(uri, "a skill URI is skill://{name}/SKILL.md"))?;
    let Ok((skill, crate::skills::SKILL_MD)) = locate(library, rest) else {
        return Err(errors::unknown_skill_uri(
            uri,
            "skills/list shows the skills served",
        ));
    };
    wire_skill(skill)
}

/// The frontmatter verbatim, except that `description` is the catalog's, and so is `name`
/// when the author's name broke the naming rule and the folder's name is used. A skill
/// served under another name than its own keeps its own `name` here: its URI ends in it.
fn wire_skill(skill: &Skill) -> Result<WireSkill, ErrorData> {
    let mut frontmatter = SkillFrontmatter::new(
        skill.frontmatter_name().to_owned(),
        skill.description.clone(),
    );
    for (key, value) in skill.frontmatter() {
        if key != "name" && key != "description" {
            frontmatter = frontmatter.with_field(key, value);
        }
    }
    let skill_path = skill.skill_path();
    let manifest = skill
        .manifest()
        .map_err(|error| errors::skill_resource_error(&skill_uri(&skill_path, ""), error))?;
    let files = manifest
        .iter()
        .map(|file| {
            SkillResource::new(
                skill_uri(&skill_path, &file.path),
                file.digest.clone(),
                file.size,
            )
        })
        .collect();
    Ok(WireSkill::new(
        skill_uri(&skill_path, crate::skills::SKILL_MD),
        frontmatter,
        SkillResources::Files(files),
    ))
}

/// `resources/directory/read`: the direct children of `skill://{name}` or of a sub-folder.
pub(super) fn read_directory(library: &Library, uri: &str) -> Result<Vec<Resource>, ErrorData> {
    let (skill, path) = parse(library, uri).map_err(|_| {
        errors::unknown_skill_uri(uri, "not a skill folder; skills/list shows them")
    })?;
    let children = skill
        .children(&path)
        .map_err(|_| errors::unknown_skill_uri(uri, "not a folder of the skill"))?;
    let folder = path.trim_matches('/');
    let skill_path = skill.skill_path();
    Ok(children
        .into_iter()
        .map(|child| {
            let relative = if folder.is_empty() {
                child.name.clone()
            } else {
                format!("{folder}/{}", child.name)
            };
            let resource = Resource::new(skill_uri(&skill_path, &relative), child.name);
            if child.directory {
                resource.with_mime_type(DIRECTORY)
            } else {
                resource
                    .with_mime_type(mime_type(&relative))
                    .with_size(child.size)
            }
        })
        .collect())
}

/// Completion values for the skill templates: names for `name`, file paths for `path`, all of
/// them (the caller cuts the page and says how many there were).
pub(super) fn complete(library: &Library, request: &CompleteRequestParams) -> Vec<String> {
    let Reference::Resource(reference) = &request.r#ref else {
        return Vec::new();
    };
    if reference.uri != SKILL_TEMPLATE && reference.uri != FILE_TEMPLATE {
        return Vec::new();
    }
    let typed = request.argument.value.as_str();
    match request.argument.name.as_str() {
        // The skill path, so that the URI the template makes names the skill.
        "name" => library
            .skills()
            .iter()
            .map(|skill| skill.skill_path())
            .filter(|name| name.starts_with(typed))
            .collect(),
        "path" => {
            let chosen = request
                .context
                .as_ref()
                .and_then(|context| context.arguments.as_ref())
                .and_then(|arguments| arguments.get("name"))
                .and_then(|name| locate(library, name).ok())
                .map(|(skill, _)| skill);
            chosen.map_or_else(Vec::new, |skill| {
                skill
                    .files()
                    .into_iter()
                    .filter(|path| path.starts_with(typed))
                    .collect()
            })
        }
        _ => Vec::new(),
    }
}
