//! Finding the skills for a task (`SkillSearch`): the library's ranking, a model's reordering
//! of the best candidates when asked (the client's model, through [`Model`], so that nothing
//! here knows MCP), the best section of each long skill, and the answer as the model reads it.

use std::fmt::Write as _;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::rerank::{self, Candidate};
use super::served::escape;
use super::shelf::Shelf;
use super::{Hit, Skill};

/// What to find.
pub struct Request<'a> {
    /// What the task is about, in a few words.
    pub query: String,
    /// How many skills to answer at most (clamped to 1–50; 5 when not given).
    pub max_results: Option<usize>,
    /// Only skills carrying every one of these tags.
    pub tags: Vec<String>,
    /// Whether a model is to reorder the top candidates.
    pub rerank: bool,
    /// The model that can be asked, when there is one.
    pub model: Option<&'a dyn Model>,
    /// The most characters of instructions served whole: a longer skill names its best section.
    pub body_limit: usize,
}

/// A model asked to reorder the candidates (the client's, by MCP sampling).
pub trait Model: Send + Sync {
    /// The model's answer to `system` and `message`, or why there is none.
    fn ask<'a>(
        &'a self,
        system: &'a str,
        message: String,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<Answer, String>>;
}

/// What the model answered, and which model it was, as the client names it.
pub struct Answer {
    pub text: String,
    pub model: String,
}

/// Ranks the skills once the first scan is done (waiting for it without blocking), lets the
/// model reorder the best when asked to, and names the best section of each long skill.
pub async fn find(shelf: &Shelf, request: Request<'_>) -> Found {
    let limit = request.max_results.unwrap_or(5).clamp(1, 50);
    let library = shelf.loaded().await;
    let wanted = if request.rerank {
        limit.max(RERANK_CANDIDATES)
    } else {
        limit
    };
    let mut hits = library.search(&request.query, &request.tags, wanted);
    // An empty library has no bodies to index: its search is whole at once.
    let metadata_only = !library.bodies_indexed() && !library.skills().is_empty();
    let report = if request.rerank {
        Some(rerank_hits(&request.query, &mut hits, request.model).await)
    } else {
        None
    };
    hits.truncate(limit);
    let skills = hits.iter().map(|hit| Arc::clone(&hit.skill)).collect();
    let sections = best_sections(skills, request.query, request.body_limit).await;
    let matched_skills = hits
        .into_iter()
        .zip(sections)
        .map(|(hit, section)| MatchedSkill {
            name: hit.skill.name.clone(),
            description: hit.skill.description.clone(),
            score: (f64::from(hit.score) * 1000.0).round() / 1000.0,
            section,
        })
        .collect();
    Found {
        matched_skills,
        metadata_only,
        rerank: report,
        loading: library.loading().to_vec(),
    }
}

/// For each skill served in sections, the id of the section that matches the query best;
/// worked out on the blocking pool, since a long body may have to be read from disk first.
async fn best_sections(
    skills: Vec<Arc<Skill>>,
    query: String,
    body_limit: usize,
) -> Vec<Option<String>> {
    let count = skills.len();
    let naming = tokio::task::spawn_blocking(move || {
        skills
            .iter()
            .map(|skill| best_section(skill, &query, body_limit))
            .collect()
    });
    naming.await.unwrap_or_else(|error| {
        tracing::error!(%error, "naming the best sections failed; the hits name none");
        vec![None; count]
    })
}

fn best_section(skill: &Skill, query: &str, body_limit: usize) -> Option<String> {
    // The file has at least as many bytes as the body has characters: most skills stop here.
    if skill.size <= u64::try_from(body_limit).unwrap_or(u64::MAX) {
        return None;
    }
    let (body, outline) = (skill.body().ok()?, skill.outline().ok()?);
    if outline.characters <= body_limit || !outline.divided() {
        return None;
    }
    outline
        .best_match(&body, query)
        .map(|section| section.id.clone())
}

/// The answer as the model reads it, each hit once: an `<available-skills>` block (name, the
/// section to load when one is named, description), what to do next, and a line for a
/// search made on metadata only or a rerank asked for. The structured content carries the
/// same hits as JSON (with their scores) for clients; the model is not sent them twice.
pub fn text_for_model(value: &Value) -> String {
    let matched = value["matched_skills"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let loading = loading_note(value);
    let mut text = if matched.is_empty() {
        match &loading {
            Some(note) => format!("No skill matches yet: {note}; search again in a moment."),
            None => "No skill matches this query. Try other words, or go ahead without a skill."
                .to_owned(),
        }
    } else {
        let mut text = String::new();
        if let Some(note) = &loading {
            writeln!(text, "Note: {note}; its skills are not searched yet.").ok();
        }
        text.push_str("<available-skills>\n");
        for skill in matched {
            let name = escape(skill["name"].as_str().unwrap_or_default());
            let description = escape(skill["description"].as_str().unwrap_or_default());
            let section = skill["section"]
                .as_str()
                .map(|section| format!(" section=\"{}\"", escape(section)))
                .unwrap_or_default();
            writeln!(
                text,
                "  <skill name=\"{name}\"{section}>{description}</skill>"
            )
            .ok();
        }
        text.push_str(
            "</available-skills>\nLoad the skill that fits with SkillLoad {\"name\": \"…\"}, adding its \"section\" when one is named.",
        );
        text
    };
    if value["metadata_only"] == Value::Bool(true) {
        text.push_str(
            "\nThe skills' bodies are still being indexed: only names, descriptions and tags were searched; search again shortly.",
        );
    }
    if let Some(rerank) = value.get("rerank") {
        let applied = if rerank["applied"] == Value::Bool(true) {
            "applied"
        } else {
            "not applied"
        };
        let reason = rerank["reason"].as_str().unwrap_or_default();
        write!(text, "\nRerank {applied}: {reason}.").ok();
    }
    text
}

/// "1 skill source is still loading (git+…)" when the answer lists sources being fetched.
fn loading_note(value: &Value) -> Option<String> {
    let sources: Vec<&str> = value["loading"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    still_loading(&sources)
}

/// "1 skill source is still loading (git+…)", or `None` when `sources` is empty.
pub fn still_loading<Source: AsRef<str>>(sources: &[Source]) -> Option<String> {
    let sources: Vec<&str> = sources.iter().map(AsRef::as_ref).collect();
    match sources.len() {
        0 => None,
        1 => Some(format!("1 skill source is still loading ({})", sources[0])),
        count => Some(format!(
            "{count} skill sources are still loading ({})",
            sources.join(", ")
        )),
    }
}

/// How many of the best local hits the client's model is asked to reorder.
const RERANK_CANDIDATES: usize = 15;

/// Reorders the first [`RERANK_CANDIDATES`] hits by the client model's answer; on any failure
/// the hits keep their local order and the report says why.
async fn rerank_hits(query: &str, hits: &mut [Hit], model: Option<&dyn Model>) -> RerankReport {
    let not_applied = |reason: String| RerankReport {
        applied: false,
        reason,
        model: None,
    };
    let Some(model) = model else {
        return not_applied(
            "the client did not declare sampling, so the local ranking stands".to_owned(),
        );
    };
    let count = hits.len().min(RERANK_CANDIDATES);
    if count < 2 {
        return not_applied(format!(
            "{count} candidate(s) matched; there is nothing to reorder"
        ));
    }
    let candidates: Vec<Candidate<'_>> = hits[..count]
        .iter()
        .map(|hit| Candidate {
            name: &hit.skill.name,
            description: &hit.skill.description,
        })
        .collect();
    let message = rerank::message(query, &candidates);
    let answer = match model
        .ask(rerank::SYSTEM_PROMPT, message, RERANK_MAX_TOKENS)
        .await
    {
        Ok(answer) => answer,
        Err(error) => {
            tracing::warn!(%error, "rerank: sampling failed; the local ranking stands");
            return not_applied(format!("{error}; the local ranking stands"));
        }
    };
    let names: Vec<&str> = candidates.iter().map(|candidate| candidate.name).collect();
    let reordered = match rerank::reorder(&answer.text, &names) {
        Ok(reordered) => reordered,
        Err(problem) => {
            tracing::warn!(answer = %answer.text, "rerank: unusable answer; the local ranking stands");
            return RerankReport {
                model: Some(answer.model),
                ..not_applied(format!(
                    "the client's model answered, but {problem}; the local ranking stands"
                ))
            };
        }
    };
    let reordered_hits: Vec<Hit> = reordered
        .order
        .iter()
        .map(|&position| hits[position].clone())
        .collect();
    hits[..count].clone_from_slice(&reordered_hits);
    let mut reason = format!(
        "the client's model reordered the top {count} candidates ({} ranked",
        reordered.ranked
    );
    if reordered.unknown > 0 {
        write!(reason, ", {} unknown name(s) ignored", reordered.unknown).ok();
    }
    reason.push(')');
    RerankReport {
        applied: true,
        reason,
        model: Some(answer.model),
    }
}

/// Room for about 20 names in the model's answer.
const RERANK_MAX_TOKENS: u32 = 400;

/// What was found: the `SkillSearch` answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Found {
    /// Best match first.
    pub matched_skills: Vec<MatchedSkill>,
    /// Present (and `true`) while a large library's bodies are still being indexed after start:
    /// the results then come from names, descriptions and tags only; search again shortly.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub metadata_only: bool,
    /// Present when `rerank` was asked for: whether the client's model reordered the results,
    /// and why not when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankReport>,
    /// Present while git skill sources are still being fetched for the first time (as
    /// configured): their skills are not searched yet; search again in a moment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub loading: Vec<String>,
}

/// What became of a `rerank` request.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RerankReport {
    /// Whether the order of `matched_skills` is the client model's.
    pub applied: bool,
    /// Why the local ranking stands, or what the model did.
    pub reason: String,
    /// The model that answered, as the client names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MatchedSkill {
    pub name: String,
    pub description: String,
    /// Relevance (BM25F); only the order between results is meaningful.
    pub score: f64,
    /// For a skill whose instructions are served in sections: the id of the section that
    /// matches best, to load alone with `SkillLoad {name, section}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
}
