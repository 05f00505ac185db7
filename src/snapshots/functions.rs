//! The function library (`docs/snapshots.md`): what a function is, the built-ins every library starts
//! with, the export format, and the prompt block that teaches a model the calls.
//!
//! Libraries have two scopes: global, and local to one character. The built-in
//! functions sit in the global scope with fixed ids; a stored function with the same id
//! overrides one (to disable it, reorder it or reword its description), and removing a
//! built-in is refused.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::builtins::Builtin;
use super::unknown::Known;

/// Active functions are called by the model in its reply; passive ones run on every message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    Active,
    Passive,
}

/// When a passive function runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    BeforeActive,
    AfterActive,
}

/// A state function, in the shareable `VarFunction` shape (plus `builtin`, `signature` and
/// `example`, which other tools ignore).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VarFunction {
    /// Left out when creating.
    #[serde(default)]
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: FunctionKind,
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    /// Smaller runs first; a new function without one (or 0) runs last.
    #[serde(default)]
    pub order: i64,
    /// What it does, for the prompt.
    #[serde(default)]
    pub description: String,
    /// Active: a JavaScript regex (`source` or `/source/flags`); capture groups become `args` (JSON
    /// decoded when valid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Passive: before or after the active calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Timing>,
    /// JavaScript body returning the snapshot (or changing it in place).
    #[serde(default)]
    pub executor: String,
    /// Set on built-ins (run natively).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtin: Option<Builtin>,
    /// How a call looks, for the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// An example call, for the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<String>,
}

fn enabled_by_default() -> bool {
    true
}

/// The export file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Export {
    pub version: String,
    pub functions: Vec<VarFunction>,
}

/// Where a function lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    Global,
    Character(String),
}

impl Scope {
    pub fn of(character_id: Option<&str>) -> Self {
        match character_id {
            Some(id) if !id.is_empty() => Self::Character(id.to_owned()),
            _ => Self::Global,
        }
    }

    /// The key the store files it under.
    pub fn key(&self) -> String {
        match self {
            Self::Global => "global".to_owned(),
            Self::Character(id) => format!("character:{id}"),
        }
    }
}

static BUILTINS: LazyLock<Vec<VarFunction>> = LazyLock::new(|| {
    let export: Result<Export, _> = serde_json::from_str(include_str!(
        "../../skills/synapse-workspace/functions/builtins.json"
    ));
    export.map(|export| export.functions).unwrap_or_default()
});

/// The built-in functions as shipped.
pub fn builtins() -> &'static [VarFunction] {
    &BUILTINS
}

pub fn is_builtin_id(id: &str) -> bool {
    BUILTINS.iter().any(|function| function.id == id)
}

/// The global scope as users see it: the built-ins (with stored overrides) and then the
/// stored functions.
pub fn global_with_builtins(stored: Vec<VarFunction>) -> Vec<VarFunction> {
    let overridden: HashSet<&str> = stored.iter().map(|function| function.id.as_str()).collect();
    let mut all: Vec<VarFunction> = BUILTINS
        .iter()
        .filter(|builtin| !overridden.contains(builtin.id.as_str()))
        .cloned()
        .collect();
    all.extend(stored);
    all
}

/// Checks a function's shape (not its JavaScript, which the engine compiles).
pub fn validate(function: &VarFunction) -> Result<(), String> {
    let name = &function.name;
    if name.trim().is_empty() {
        return Err("the function needs a `name`".to_owned());
    }
    if let Some(builtin) = BUILTINS.iter().find(|builtin| builtin.id == function.id) {
        if function.builtin != builtin.builtin
            || function.pattern != builtin.pattern
            || function.executor != builtin.executor
            || function.kind != builtin.kind
        {
            return Err(format!(
                "`{}` is a built-in function: only `enabled`, `order`, `description`, `signature` and `example` can change; create a new function (without an id) for different behaviour",
                builtin.name
            ));
        }
        return Ok(());
    }
    if function.builtin.is_some() {
        return Err(format!(
            "function `{name}`: `builtin` is reserved for the shipped built-ins; leave it out and write an `executor`"
        ));
    }
    if function.executor.trim().is_empty() {
        return Err(format!(
            "function `{name}` has no `executor`: write a JavaScript body such as `const [path, value] = args; _.set(snapshot, path, value); return snapshot;`"
        ));
    }
    match function.kind {
        FunctionKind::Active
            if function
                .pattern
                .as_deref()
                .is_none_or(|pattern| pattern.trim().is_empty()) =>
        {
            Err(format!(
                "active function `{name}` needs a `pattern`: a JavaScript regex whose capture groups are the arguments, such as `@\\.GIVE\\(\"([^\"]+)\"\\);?`"
            ))
        }
        FunctionKind::Passive if function.timing.is_none() => Err(format!(
            "passive function `{name}` needs a `timing`: `before_active` or `after_active`"
        )),
        _ => Ok(()),
    }
}

/// A pattern as the export format writes it: `source`, or `/source/flags`.
pub fn split_pattern(pattern: &str) -> (&str, &str) {
    if let Some(inner) = pattern.strip_prefix('/')
        && let Some(end) = inner.rfind('/')
        && inner[end + 1..]
            .chars()
            .all(|flag| "dgimsuvy".contains(flag))
        && end > 0
    {
        return (&inner[..end], &inner[end + 1..]);
    }
    (pattern, "")
}

/// The functions that take part in processing, in their running order.
#[derive(Debug, Clone, Default)]
pub struct Active {
    pub before: Vec<Arc<VarFunction>>,
    pub calls: Vec<Arc<VarFunction>>,
    pub after: Vec<Arc<VarFunction>>,
    /// The call names the library knows, enabled or not, to report calls that name none.
    pub known: Known,
}

impl Active {
    /// The enabled functions of the global and a character's scope, sorted by `order`.
    pub fn from(functions: impl IntoIterator<Item = VarFunction>) -> Self {
        let (mut enabled, disabled): (Vec<VarFunction>, Vec<VarFunction>) =
            functions.into_iter().partition(|function| function.enabled);
        enabled.sort_by_key(|function| function.order);
        let mut active = Self {
            known: known(enabled.iter().chain(&disabled)),
            ..Self::default()
        };
        for function in enabled {
            let function = Arc::new(function);
            match (function.kind, function.timing) {
                (FunctionKind::Active, _) => active.calls.push(function),
                (FunctionKind::Passive, Some(Timing::BeforeActive)) => active.before.push(function),
                (FunctionKind::Passive, _) => active.after.push(function),
            }
        }
        active
    }
}

/// The call names a library knows, enabled or not (for [`super::unknown`]).
fn known<'a>(library: impl IntoIterator<Item = &'a VarFunction>) -> Known {
    let mut known = Known::default();
    for function in library {
        if function.kind != FunctionKind::Active {
            continue;
        }
        let at_syntax = match function.builtin {
            Some(Builtin::Mvu) => {
                known.mvu |= function.enabled;
                continue;
            }
            Some(Builtin::JsonPatch) => continue,
            Some(_) => true,
            None => function
                .pattern
                .as_deref()
                .is_some_and(|pattern| split_pattern(pattern).0.contains(r"@\.")),
        };
        if function.enabled {
            known.at_syntax |= at_syntax;
            known.enabled.push(function.name.clone());
        } else {
            known.disabled.push(function.name.clone());
        }
    }
    known
}

/// The `<variable_system_functions>` block, from the enabled functions.
pub fn prompt(functions: &[VarFunction]) -> String {
    let mut enabled: Vec<&VarFunction> = functions
        .iter()
        .filter(|function| function.enabled)
        .collect();
    enabled.sort_by_key(|function| function.order);
    let mut text =
        String::from("<variable_system_functions>\n你可以使用以下函数来更新游戏状态：\n");
    for function in enabled
        .iter()
        .filter(|function| function.kind == FunctionKind::Active)
    {
        let call = function
            .signature
            .clone()
            .unwrap_or_else(|| format!("@.{}(…);", function.name));
        text.push('\n');
        text.push_str(&call);
        if !function.description.is_empty() {
            text.push_str(" // ");
            text.push_str(&function.description);
        }
        text.push('\n');
        if let Some(example) = &function.example {
            text.push_str("示例：");
            text.push_str(example);
            text.push('\n');
        }
    }
    let passive: Vec<&&VarFunction> = enabled
        .iter()
        .filter(|function| function.kind == FunctionKind::Passive)
        .collect();
    if !passive.is_empty() {
        text.push_str("\n以下规则每回合自动执行，无需调用：\n");
        for function in passive {
            text.push_str("- ");
            text.push_str(&function.name);
            if !function.description.is_empty() {
                text.push('：');
                text.push_str(&function.description);
            }
            text.push('\n');
        }
    }
    text.push_str("</variable_system_functions>");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_shipped_builtins_load_and_are_valid() {
        assert_eq!(builtins().len(), 10);
        for function in builtins() {
            validate(function).unwrap();
            assert!(function.builtin.is_some(), "{}", function.name);
        }
    }

    #[test]
    fn patterns_split_literal_form() {
        assert_eq!(
            split_pattern(r"/@\.SET\((.+?)\);?/g"),
            (r"@\.SET\((.+?)\);?", "g")
        );
        assert_eq!(split_pattern(r"@\.SET"), (r"@\.SET", ""));
        assert_eq!(split_pattern("/a/b/x"), ("/a/b/x", ""));
    }

    #[test]
    fn functions_missing_what_they_need_are_refused() {
        let mut function = VarFunction {
            id: String::new(),
            name: "GIVE".to_owned(),
            kind: FunctionKind::Active,
            enabled: true,
            order: 0,
            description: String::new(),
            pattern: None,
            timing: None,
            executor: "return snapshot".to_owned(),
            builtin: None,
            signature: None,
            example: None,
        };
        assert!(
            validate(&function)
                .unwrap_err()
                .contains("needs a `pattern`")
        );
        function.kind = FunctionKind::Passive;
        assert!(validate(&function).unwrap_err().contains("`timing`"));
        let mut builtin = builtins()[0].clone();
        builtin.executor = "return {}".to_owned();
        assert!(validate(&builtin).unwrap_err().contains("built-in"));
    }
}
