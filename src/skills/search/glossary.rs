//! A small glossary that lets queries in Chinese, Russian, Spanish, German and French reach
//! skills written in English, and plain English reach their technical words: each line of
//! `glossary.tsv` is one technical concept, its English words first, then the same concept in
//! each language, then the everyday English a user may say it with ("a short looping clip" for
//! an animated GIF, "crashes" for a bug). A query's words found in the glossary add the
//! concept's English words to the query.
//!
//! Chinese is matched by longest entry at each position of a run of characters (it has no
//! spaces); the other languages by stem (each column stemmed in its own language, so `файлы`
//! meets `файл` and `fórmulas` meets `fórmula`), phrases of up to a few words included.

use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

use super::tokens::{Script, Stemmers, is_stop_word, words};
use super::{Map, QueryTerm, Set};

const TEXT: &str = include_str!("glossary.tsv");

/// The languages stemmed to match, in the columns' order after English and Chinese.
const STEMMED: [Algorithm; 4] = [
    Algorithm::Russian,
    Algorithm::Spanish,
    Algorithm::German,
    Algorithm::French,
];

pub(super) struct Glossary {
    /// Each concept's English terms, stemmed as the index stems them.
    english: Vec<Vec<String>>,
    /// Chinese entries and their concepts.
    chinese: Map<String, Vec<usize>>,
    /// The longest Chinese entry, in characters.
    chinese_longest: usize,
    /// Per stemmed language: stemmed phrases (stems joined by one space) and their concepts.
    phrases: Vec<(Stemmer, Map<String, Vec<usize>>)>,
    /// The longest phrase, in words.
    phrase_longest: usize,
    /// Everyday English phrasings (stems of their words other than stop words, joined by one
    /// space) and their concepts.
    plain: Map<String, Vec<usize>>,
    /// The longest everyday phrasing, in words.
    plain_longest: usize,
    /// The first stem of every everyday phrasing.
    plain_starts: Set<String>,
}

/// The glossary, parsed once.
pub(super) fn glossary() -> &'static Glossary {
    static GLOSSARY: OnceLock<Glossary> = OnceLock::new();
    GLOSSARY.get_or_init(|| Glossary::parse(TEXT, &Stemmers::new()))
}

impl Glossary {
    fn parse(text: &str, stemmers: &Stemmers) -> Self {
        let mut glossary = Self {
            english: Vec::new(),
            chinese: Map::default(),
            chinese_longest: 0,
            phrases: STEMMED
                .iter()
                .map(|&algorithm| (Stemmer::create(algorithm), Map::default()))
                .collect(),
            phrase_longest: 1,
            plain: Map::default(),
            plain_longest: 1,
            plain_starts: Set::default(),
        };
        let lines = text
            .lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty());
        for (concept, line) in lines.enumerate() {
            let mut columns = line.split('\t');
            let english = columns.next().unwrap_or_default();
            let mut terms = Vec::new();
            super::tokens::terms(stemmers, english, |term| terms.push(term.to_owned()));
            glossary.english.push(terms);
            let known = |entry: &str| {
                english
                    .split_whitespace()
                    .any(|word| word.eq_ignore_ascii_case(entry))
            };
            for entry in entries(columns.next()).filter(|entry| !known(entry)) {
                let entry = entry.to_lowercase();
                glossary.chinese_longest = glossary.chinese_longest.max(entry.chars().count());
                let concepts = glossary.chinese.entry(entry).or_default();
                if !concepts.contains(&concept) {
                    concepts.push(concept);
                }
            }
            let mut columns = columns.enumerate();
            for (language, column) in columns.by_ref().take(STEMMED.len()) {
                let (stemmer, phrases) = &mut glossary.phrases[language];
                for entry in entries(Some(column)).filter(|entry| !known(entry)) {
                    let stems: Vec<String> = words(entry)
                        .map(|(_, word)| stemmer.stem(&word.to_lowercase()).into_owned())
                        .collect();
                    glossary.phrase_longest = glossary.phrase_longest.max(stems.len());
                    let concepts = phrases.entry(stems.join(" ")).or_default();
                    if !concepts.contains(&concept) {
                        concepts.push(concept);
                    }
                }
            }
            for entry in entries(columns.next().map(|(_, column)| column)) {
                let stems: Vec<String> = words(entry)
                    .map(|(script, word)| (script, word.to_lowercase()))
                    .filter(|(_, word)| !is_stop_word(word))
                    .map(|(script, word)| stemmers.stem(script, &word))
                    .collect();
                glossary.plain_longest = glossary.plain_longest.max(stems.len());
                if let Some(first) = stems.first() {
                    glossary.plain_starts.insert(first.clone());
                }
                let concepts = glossary.plain.entry(stems.join(" ")).or_default();
                if !concepts.contains(&concept) {
                    concepts.push(concept);
                }
            }
        }
        glossary
    }

    /// Calls `visit` with the English terms of every concept whose everyday phrasing the query
    /// uses, each with the highest weight of the query words that named it. `terms` are the
    /// query's own terms in order; its words (the fuzzy ones: not CJK pairs) are read.
    pub(super) fn paraphrase(&self, terms: &[QueryTerm], mut visit: impl FnMut(&str, f32)) {
        let stems: Vec<(&str, f32)> = terms
            .iter()
            .filter(|term| term.fuzzy)
            .map(|term| (term.text.as_str(), term.weight))
            .collect();
        let mut named: Vec<(usize, f32)> = Vec::new();
        let mut key = String::new();
        let mut start = 0;
        while start < stems.len() {
            // Most words start no phrasing: one lookup, no key built.
            if !self.plain_starts.contains(stems[start].0) {
                start += 1;
                continue;
            }
            let longest = self.plain_longest.min(stems.len() - start);
            let found = (1..=longest).rev().find_map(|length| {
                key.clear();
                for (index, (stem, _)) in stems[start..start + length].iter().enumerate() {
                    if index > 0 {
                        key.push(' ');
                    }
                    key.push_str(stem);
                }
                self.plain.get(&key).map(|concepts| (length, concepts))
            });
            let Some((length, concepts)) = found else {
                start += 1;
                continue;
            };
            let weight = stems[start..start + length]
                .iter()
                .map(|(_, weight)| *weight)
                .fold(0.0, f32::max);
            named.extend(concepts.iter().map(|&concept| (concept, weight)));
            start += length;
        }
        named.sort_unstable_by(|left, right| left.0.cmp(&right.0).then(right.1.total_cmp(&left.1)));
        named.dedup_by_key(|(concept, _)| *concept);
        for (concept, weight) in named {
            self.english[concept]
                .iter()
                .for_each(|term| visit(term, weight));
        }
    }

    /// Calls `visit` with the English terms of every concept the query's words name (each
    /// concept once). Outside Chinese, an entry counts only if one of its words is not `known`
    /// to the skills (as the index stems it): the glossary fills gaps, and an English word that
    /// is also a French or Spanish one (`present`, `table`) keeps its English meaning.
    pub(super) fn translate(
        &self,
        query: &str,
        known: impl Fn(Script, &str) -> bool,
        mut visit: impl FnMut(&str),
    ) {
        let mut concepts = Vec::new();
        let mut spaced: Vec<String> = Vec::new();
        let mut spaced_known: Vec<bool> = Vec::new();
        for (script, word) in words(query) {
            let word = word.to_lowercase();
            if script == Script::Cjk {
                let characters: Vec<usize> = word.char_indices().map(|(index, _)| index).collect();
                let slice = |start: usize, length: usize| {
                    let to = characters.get(start + length).copied();
                    &word[characters[start]..to.unwrap_or(word.len())]
                };
                longest_matches(
                    characters.len(),
                    self.chinese_longest,
                    &mut concepts,
                    |start, length| self.chinese.get(slice(start, length)),
                );
            } else {
                spaced_known.push(known(script, &word));
                spaced.push(word);
            }
        }
        // Most queries are English: when the skills know every word, no phrase can count.
        let phrases = if spaced_known.iter().all(|known| *known) {
            &[][..]
        } else {
            &self.phrases[..]
        };
        for (stemmer, phrases) in phrases {
            let stems: Vec<String> = spaced
                .iter()
                .map(|word| stemmer.stem(word).into_owned())
                .collect();
            longest_matches(
                stems.len(),
                self.phrase_longest,
                &mut concepts,
                |start, length| {
                    let words = start..start + length;
                    if spaced_known[words.clone()].iter().all(|known| *known) {
                        return None;
                    }
                    phrases.get(&stems[words].join(" "))
                },
            );
        }
        concepts.sort_unstable();
        concepts.dedup();
        for concept in concepts {
            self.english[concept].iter().for_each(|term| visit(term));
        }
    }
}

/// Walks a sequence of `count` units (characters or words), taking at each position the longest
/// run of at most `longest` units that `lookup` knows, and collects its concepts.
fn longest_matches<'a>(
    count: usize,
    longest: usize,
    concepts: &mut Vec<usize>,
    lookup: impl Fn(usize, usize) -> Option<&'a Vec<usize>>,
) {
    let mut start = 0;
    while start < count {
        let found = (1..=longest.min(count - start))
            .rev()
            .find_map(|length| lookup(start, length).map(|found| (length, found)));
        match found {
            Some((length, found)) => {
                concepts.extend_from_slice(found);
                start += length;
            }
            None => start += 1,
        }
    }
}

/// The variants of one column, separated by `;`.
fn entries(column: Option<&str>) -> impl Iterator<Item = &str> {
    column
        .unwrap_or_default()
        .split(';')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn english(query: &str) -> Vec<String> {
        let mut found = Vec::new();
        let known =
            |_: Script, word: &str| ["present", "plain", "english", "words"].contains(&word);
        glossary().translate(query, known, |term| found.push(term.to_owned()));
        found
    }

    #[test]
    fn chinese_takes_the_longest_entry_at_each_position() {
        assert_eq!(
            english("合并多个PDF文件"),
            ["file", "document", "merg", "combin"]
        );
        assert_eq!(english("分子动力学"), ["molecular", "dynam"]);
    }

    #[test]
    fn other_languages_match_by_stem_and_phrase() {
        assert_eq!(english("объединить файлы"), ["file", "merg", "combin"]);
        assert_eq!(english("hoja de cálculo"), ["spreadsheet", "excel", "xlsx"]);
        assert_eq!(english("plain english words"), Vec::<String>::new());
        assert_eq!(english("présentation"), ["present", "slide", "pptx"]);
        assert_eq!(
            english("present"),
            Vec::<String>::new(),
            "a word the skills know keeps its meaning"
        );
    }
}
