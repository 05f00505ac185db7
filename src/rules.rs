//! Skill rules: documentation that tool groups declare, stored as pinned `RULE`
//! variables `Rule/{group}/{rule}`, and the tool-rules text that tells the model how to use the
//! enabled tools — base rules, each enabled group's rule prompt, and the rule index (rules marked
//! `always_load` inlined, the others listed in an "On-Demand Documentation" table).
//!
//! The text follows the tools that are on: a rule that needs a tool which is off is left out
//! (its variable withdrawn), and a block of a rule prompt or rule marked
//! `<!-- needs: ToolA ToolB -->` … `<!-- end -->` is kept only while every tool it names is on.
//!
//! The text itself is data under `skills/synapse-workspace/`, never string literals here.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The base rules at the top of the tool-rules text.
pub const BASE_RULES: &str = include_str!("../skills/synapse-workspace/instructions.md");

/// The essentials at the top of the server `instructions`, which hosts may cut at about 2,000
/// characters: the rest stays in the `tool-rules` prompt and the rule variables.
pub const ESSENTIALS: &str = include_str!("../skills/synapse-workspace/essentials.md");

/// The most characters of the server `instructions`.
pub const INSTRUCTIONS_LIMIT: usize = 2_000;

/// The group that owns the built-in rules.
pub const AGENT_GROUP: &str = "Agent";

/// One declared rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRule {
    pub name: String,
    /// One sentence shown in the rule index.
    pub desc: String,
    /// The full rule (markdown), stored as the variable's value.
    pub prompt: String,
    /// When the model should read it.
    pub when: Option<String>,
    /// Inline the rule in the tool-rules text instead of listing it.
    pub always_load: bool,
    /// Tools the rule teaches: it is left out while any of them is off.
    pub needs: Vec<String>,
}

impl SkillRule {
    pub fn new(name: &str, desc: &str, prompt: &str) -> Self {
        Self {
            name: name.to_owned(),
            desc: desc.to_owned(),
            prompt: prompt.to_owned(),
            when: None,
            always_load: false,
            needs: Vec::new(),
        }
    }

    #[must_use]
    pub fn needs(mut self, tools: &[&str]) -> Self {
        self.needs = tools.iter().map(|tool| (*tool).to_owned()).collect();
        self
    }

    /// The rule as it is while only the tools `on` says are on: `None` when it needs one that
    /// is off, else with its prompt's blocks for tools that are off left out.
    pub fn for_tools(&self, on: &dyn Fn(&str) -> bool) -> Option<Self> {
        if !self.needs.iter().all(|tool| on(tool)) {
            return None;
        }
        let mut rule = self.clone();
        if let Cow::Owned(prompt) = for_tools(&self.prompt, on) {
            rule.prompt = prompt;
        }
        Some(rule)
    }

    #[must_use]
    pub fn when(mut self, when: &str) -> Self {
        self.when = Some(when.to_owned());
        self
    }
}

impl From<crate::config::DeclaredRule> for SkillRule {
    /// A declared rule whose text was read ([`crate::config::DeclaredRule::read`]).
    fn from(declared: crate::config::DeclaredRule) -> Self {
        Self {
            name: declared.name,
            desc: declared.description,
            prompt: declared.prompt.unwrap_or_default(),
            when: declared.when,
            always_load: declared.always_load,
            needs: declared.needs,
        }
    }
}

/// The opening of a marker line: `<!-- needs: ToolA ToolB -->` starts a block kept only while
/// every tool named is on; `<!-- end -->` ends it (as does the next `needs` line).
const NEEDS_MARKER: &str = "<!-- needs:";
const END_MARKER: &str = "<!-- end -->";

/// `text` with its blocks for tools that are off left out, and no marker lines. Text without
/// markers is returned as it is.
pub fn for_tools<'t>(text: &'t str, on: &dyn Fn(&str) -> bool) -> Cow<'t, str> {
    if !text.contains("<!-- ") {
        return Cow::Borrowed(text);
    }
    let mut kept = String::with_capacity(text.len());
    let mut keeping = true;
    for line in text.split_inclusive('\n') {
        let marker = line.trim();
        if let Some(tools) = marker.strip_prefix(NEEDS_MARKER) {
            let tools = tools.trim_end_matches("-->");
            keeping = tools.split_whitespace().all(on);
        } else if marker == END_MARKER {
            keeping = true;
        } else if keeping {
            kept.push_str(line);
        }
    }
    Cow::Owned(kept)
}

/// `Rule/{group}/{rule}`.
pub fn variable_name(group: &str, rule: &str) -> String {
    format!("Rule/{group}/{rule}")
}

/// The description of a rule's variable.
pub fn variable_description(group: &str, rule: &SkillRule) -> String {
    format!("Skill rule for {group}: {}", rule.desc)
}

/// The built-in `Agent` rules: `VarRef` and `TODO`.
pub fn agent_rules() -> Vec<SkillRule> {
    vec![
        SkillRule::new(
            "VarRef",
            "Full $VAR_REF syntax: whole values, slices, escapes, errors and typical uses",
            include_str!("../skills/synapse-workspace/rules/VarRef.md"),
        )
        .when("Before passing a stored value, or part of one, into a tool's arguments"),
        SkillRule::new(
            "TODO",
            "Keep a TODO list in variables TODO_{index}_{brief} and track each item's status",
            include_str!("../skills/synapse-workspace/rules/TODO.md"),
        )
        .when("When a task has several steps to plan and track")
        .needs(&["WriteVar"]),
        SkillRule::new(
            "Plans",
            "The state document, † references, _outputPath with || and &&, RunPlan and reusable plans",
            include_str!("../skills/synapse-workspace/rules/Plans.md"),
        )
        .when("Before chaining calls whose outputs feed each other, or storing results in state")
        .needs(&["RunPlan"]),
    ]
}

/// One section of the tool-rules text: a group's rule prompt and its rules, as they are for the
/// tools that are on.
pub struct Section<'a> {
    pub group: &'a str,
    pub prompt: Option<String>,
    pub rules: Vec<SkillRule>,
}

/// The whole tool-rules text: base rules, then one section per group.
pub fn tool_rules_text(sections: &[Section<'_>]) -> String {
    let mut text = BASE_RULES.trim_end().to_owned();
    for section in sections {
        if section.prompt.is_none() && section.rules.is_empty() {
            continue;
        }
        write!(text, "\n\n## {}\n", section.group).ok();
        if let Some(prompt) = &section.prompt {
            write!(text, "\n{}\n", prompt.trim_end()).ok();
        }
        let index = rule_index(section.group, &section.rules);
        if !index.is_empty() {
            write!(text, "\n{index}").ok();
        }
    }
    text.push('\n');
    text
}

/// The server `instructions`: the essentials first, then the groups that are off (`off`: name
/// and what it offers), then where the full rules are, shorter than [`INSTRUCTIONS_LIMIT`]
/// whatever the groups declare (the rule list shrinks to names, then to a count, to fit).
pub fn instructions_text(sections: &[Section<'_>], off: &[(&str, &str)]) -> String {
    let mut text = ESSENTIALS.trim_end().to_owned();
    let groups: Vec<&str> = sections
        .iter()
        .filter(|section| section.prompt.is_some() || !section.rules.is_empty())
        .map(|section| section.group)
        .collect();
    write!(
        text,
        "\n\nEverything else (each tool group's rules: {}) is in the `tool-rules` prompt.",
        groups.join(", ")
    )
    .ok();
    if !off.is_empty() {
        text.push_str("\nOff until `ToolGroups` turns them on:");
        for (group, about) in off {
            write!(text, "\n- `{group}`: {about}").ok();
        }
    }
    let (pinned, rules): (Vec<(String, &SkillRule)>, Vec<_>) = sections
        .iter()
        .flat_map(|section| {
            section
                .rules
                .iter()
                .map(|rule| (variable_name(section.group, &rule.name), rule))
        })
        .partition(|(_, rule)| rule.always_load);
    pin(&mut text, &pinned);
    if rules.is_empty() {
        text.push('\n');
        return text;
    }
    let heading =
        "\nRead these rules with `ReadVar` when they apply (also `rule://<group>/<rule>`):";
    let mut with_when = String::new();
    for (name, rule) in &rules {
        let when = rule.when.as_deref().unwrap_or(&rule.desc);
        write!(with_when, "\n- `{name}`: {when}").ok();
    }
    let names_only = rules
        .iter()
        .map(|(name, _)| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let room = INSTRUCTIONS_LIMIT - 1 - text.len().min(INSTRUCTIONS_LIMIT - 1);
    if heading.len() + with_when.len() < room {
        write!(text, "{heading}{with_when}").ok();
    } else if heading.len() + names_only.len() + 2 <= room {
        write!(text, "{heading} {names_only}.").ok();
    } else {
        write!(
            text,
            "\n{} rules are stored as `RULE` variables: `ListVars` with type RULE lists them.",
            rules.len()
        )
        .ok();
    }
    text.push('\n');
    text
}

/// Characters of the instructions kept for the list of rules read on demand when always-load
/// rules are pinned above it.
const ON_DEMAND_ROOM: usize = 400;

/// Pins the always-load rules in the instructions: whole while they fit (leaving room for the
/// rules read on demand), else named as rules to read before anything else.
fn pin(text: &mut String, pinned: &[(String, &SkillRule)]) {
    let mut unread = Vec::new();
    for (name, rule) in pinned {
        let prompt = rule.prompt.trim();
        if text.len() + prompt.len() + 2 + ON_DEMAND_ROOM < INSTRUCTIONS_LIMIT {
            write!(text, "\n\n{prompt}").ok();
        } else {
            unread.push(format!("`{name}`"));
        }
    }
    if unread.is_empty() {
        return;
    }
    let line = format!(
        "\nRead these rules with `ReadVar` before anything else: {}.",
        unread.join(", ")
    );
    if text.len() + line.len() + ON_DEMAND_ROOM < INSTRUCTIONS_LIMIT {
        text.push_str(&line);
    } else {
        write!(
            text,
            "\n{} rules to read before anything else: `ListVars` with type RULE lists them.",
            unread.len()
        )
        .ok();
    }
}

/// The rule index: `always_load` rules inlined, the others as a table.
pub fn rule_index(group: &str, rules: &[SkillRule]) -> String {
    let mut text = String::new();
    for rule in rules.iter().filter(|rule| rule.always_load) {
        write!(text, "{}\n\n", rule.prompt.trim_end()).ok();
    }
    let on_demand: Vec<_> = rules.iter().filter(|rule| !rule.always_load).collect();
    if on_demand.is_empty() {
        return text;
    }
    text.push_str("**On-Demand Documentation (Stored as Variables):**\n");
    text.push_str("| Var | Description | When to Use |\n|-----|-------------|-------------|\n");
    for rule in on_demand {
        writeln!(
            text,
            "| `{}` | {} | {} |",
            variable_name(group, &rule.name),
            escape_cell(&rule.desc),
            escape_cell(rule.when.as_deref().unwrap_or("When needed")),
        )
        .ok();
    }
    text.push_str("\n*Access via: ReadVar({\"name\": \"<VarName>\"})*\n");
    text
}

fn escape_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn index_lists_on_demand_rules_in_a_table() {
        let rules = [SkillRule::new("Guide", "How | why", "body").when("Always")];
        assert_eq!(
            rule_index("Files", &rules),
            "**On-Demand Documentation (Stored as Variables):**\n\
             | Var | Description | When to Use |\n|-----|-------------|-------------|\n\
             | `Rule/Files/Guide` | How \\| why | Always |\n\
             \n*Access via: ReadVar({\"name\": \"<VarName>\"})*\n"
        );
    }

    #[test]
    fn instructions_start_with_the_essentials_and_fit_however_many_rules_there_are() {
        let few = [SkillRule::new("Guide", "d", "body").when("Before guiding")];
        let many: Vec<SkillRule> = (0..40)
            .map(|index| SkillRule::new(&format!("Rule{index}"), "d", "body").when(&"w".repeat(60)))
            .collect();
        let too_many: Vec<SkillRule> = (0..400)
            .map(|index| SkillRule::new(&format!("Rule{index}"), "d", "body"))
            .collect();
        let section = |rules: &[SkillRule]| Section {
            group: "G",
            prompt: Some("prompt".to_owned()),
            rules: rules.to_vec(),
        };

        let short = instructions_text(&[section(&few)], &[]);
        let names = instructions_text(&[section(&many)], &[]);
        let counted = instructions_text(&[section(&too_many)], &[]);

        assert!(short.starts_with(ESSENTIALS.trim_end()));
        assert!(short.ends_with(
            "(each tool group's rules: G) is in the `tool-rules` prompt.\n\
             Read these rules with `ReadVar` when they apply (also `rule://<group>/<rule>`):\n\
             - `Rule/G/Guide`: Before guiding\n"
        ));
        assert!(names.contains("`Rule/G/Rule0`, `Rule/G/Rule1`"), "{names}");
        assert!(counted.ends_with(
            "\n400 rules are stored as `RULE` variables: `ListVars` with type RULE lists them.\n"
        ));
        for text in [short, names, counted] {
            assert!(text.len() < INSTRUCTIONS_LIMIT, "{} bytes", text.len());
        }
    }

    #[test]
    fn blocks_for_tools_that_are_off_are_left_out_with_the_markers() {
        let text = "Always.\n<!-- needs: WriteVar -->\nWrite.\n<!-- needs: RemoveVars ListVars -->\nRemove.\n<!-- end -->\nAfter.\n";
        let on = |tool: &str| tool != "RemoveVars";
        assert_eq!(for_tools(text, &on), "Always.\nWrite.\nAfter.\n");
        assert!(matches!(for_tools("Plain.", &on), Cow::Borrowed("Plain.")));
        let rule = SkillRule::new("R", "d", text).needs(&["WriteVar"]);
        assert_eq!(
            rule.for_tools(&on).map(|rule| rule.prompt),
            Some("Always.\nWrite.\nAfter.\n".to_owned())
        );
        assert_eq!(rule.for_tools(&|tool: &str| tool != "WriteVar"), None);
    }

    #[test]
    fn always_load_rules_are_inlined_not_listed() {
        let mut rule = SkillRule::new("Inline", "d", "# Inline rule\nDo this.");
        rule.always_load = true;
        assert_eq!(rule_index("G", &[rule]), "# Inline rule\nDo this.\n\n");
    }

    #[test]
    fn tool_rules_text_has_base_rules_then_sections() {
        let rules = agent_rules();
        let text = tool_rules_text(&[
            Section {
                group: "vars",
                prompt: Some("Vars prompt.".into()),
                rules: Vec::new(),
            },
            Section {
                group: AGENT_GROUP,
                prompt: None,
                rules,
            },
            Section {
                group: "empty",
                prompt: None,
                rules: Vec::new(),
            },
        ]);
        assert!(text.starts_with("# synapse-mcp: tool rules"));
        assert!(text.contains("\n\n## vars\n\nVars prompt.\n"));
        assert!(text.contains("| `Rule/Agent/VarRef` |"));
        assert!(text.contains("| `Rule/Agent/TODO` |"));
        assert!(!text.contains("## empty"));
    }
}
