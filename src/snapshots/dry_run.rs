//! `FunctionTest`: a dry run of the library over a text. It shows which calls matched (the
//! function, where, the arguments as parsed), the state after each step and what failed, and
//! stores nothing: the state is a copy, and no snapshot, function or template is written. A
//! draft function (a pattern or an executor being written) can take part without being saved.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::engine::{self, CallError, MessageContext, Step};
use super::functions::{self, Active, VarFunction};
use super::{Error, Snapshots, Start, invalid, within_limit};

/// What a dry run starts from.
#[derive(Debug, Clone, PartialEq)]
pub enum TestBase {
    /// A stored snapshot, by id.
    Snapshot(String),
    /// A state given with the call.
    State(Value),
    /// The character's template, or `{}`.
    Template,
}

impl From<Option<Value>> for TestBase {
    /// A call's `snapshot`: a stored snapshot's id, a state, or, left out, the template.
    fn from(snapshot: Option<Value>) -> Self {
        match snapshot {
            None => Self::Template,
            Some(Value::String(id)) => Self::Snapshot(id),
            Some(state) => Self::State(state),
        }
    }
}

/// What a dry run found and did.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tested {
    /// Every step in running order: passive functions, each call found in the text (and each
    /// call that named no function), with the state after it.
    pub steps: Vec<Step>,
    /// What failed or did nothing, as `SnapshotProcess` would report it.
    pub errors: Vec<CallError>,
    /// The state after the whole text.
    #[schemars(extend("type" = "object"))]
    pub snapshot: Value,
    /// Whether the text changed the state.
    pub changed: bool,
}

impl Snapshots {
    /// Runs the library (with `draft` in it, when given) over `text`, storing nothing.
    pub fn test(
        &self,
        text: &str,
        base: TestBase,
        character_id: Option<&str>,
        draft: Option<VarFunction>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Tested, Error> {
        let start = match base {
            TestBase::Snapshot(id) => self.snapshot(&id)?.value,
            TestBase::State(state) => {
                if !state.is_object() {
                    return invalid(
                        "snapshot",
                        "`snapshot` must be a stored snapshot's id or a state (a JSON object such as {\"金币\": 5})",
                    );
                }
                within_limit("`snapshot`", &state)?;
                state
            }
            TestBase::Template => {
                let start = Start {
                    character_id,
                    ..Start::default()
                };
                self.base_state(&start)?.0
            }
        };
        let mut library = self.library(character_id)?;
        if let Some(draft) = draft {
            let draft = self.checked_draft(draft)?;
            match library.iter_mut().find(|function| function.id == draft.id) {
                Some(existing) => *existing = draft,
                None => library.push(draft),
            }
        }
        let active = Active::from(library);
        let context = MessageContext {
            character_id: character_id.map(str::to_owned),
            ..MessageContext::default()
        };
        let mut state = start.clone();
        let mut steps = Vec::new();
        let outcome = engine::apply_traced(
            &self.engine,
            &active,
            &mut state,
            text,
            (&context, cancelled),
            Some(&mut steps),
        );
        Ok(Tested {
            steps,
            errors: outcome.errors,
            changed: state != start,
            snapshot: state,
        })
    }

    /// A draft as it takes part in a dry run: enabled, and checked like `FunctionUpsert` checks it.
    fn checked_draft(&self, mut draft: VarFunction) -> Result<VarFunction, Error> {
        if draft.id.is_empty() {
            "draft".clone_into(&mut draft.id);
        }
        draft.enabled = true;
        functions::validate(&draft).map_err(|message| {
            Error::invalid("function", format!("the `function` to test: {message}"))
        })?;
        if draft.builtin.is_none() {
            self.check_javascript(&draft)?;
        }
        Ok(draft)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::snapshots::engine::StepKind;
    use crate::snapshots::javascript::Limits;
    use crate::store::{SnapshotStore, SqliteStore};

    #[test]
    fn a_dry_run_shows_each_step_and_stores_nothing() {
        let store = SqliteStore::open_in_memory().unwrap();
        let service = Snapshots::new(store.clone(), "w", Limits::default());
        let draft: VarFunction = serde_json::from_value(json!({
            "name": "GIVE", "type": "active",
            "pattern": "@\\.GIVE\\(\"([^\"]+)\"\\);?",
            "executor": "snapshot.bag = (snapshot.bag || []).concat([args[0]]); return snapshot;"
        }))
        .unwrap();
        let tested = service
            .test(
                r#"@.ADD("gold", 5); @.GIVE("剑"); @.ADDD("gold", 1);"#,
                TestBase::State(json!({"gold": 1})),
                None,
                Some(draft),
                &|| false,
            )
            .unwrap();
        let kinds: Vec<(&str, StepKind, Option<usize>)> = tested
            .steps
            .iter()
            .map(|step| (step.function.as_str(), step.kind, step.position))
            .collect();
        assert_eq!(
            kinds,
            [
                ("ADD", StepKind::Call, Some(0)),
                ("GIVE", StepKind::Call, Some(18)),
                ("ADDD", StepKind::Unknown, Some(31)),
            ]
        );
        assert_eq!(
            tested.steps[0].arguments,
            Some(vec![json!("gold"), json!(5)])
        );
        assert_eq!(tested.steps[0].snapshot, json!({"gold": 6}));
        assert_eq!(tested.steps[1].snapshot, json!({"gold": 6, "bag": ["剑"]}));
        assert_eq!(tested.errors.len(), 1);
        assert_eq!(tested.errors[0].suggestion.as_deref(), Some("ADD"));
        assert_eq!(tested.snapshot, json!({"gold": 6, "bag": ["剑"]}));
        assert!(tested.changed);
        assert!(store.all_snapshots("w").unwrap().is_empty());
        assert!(store.functions("w", "global").unwrap().is_empty());
    }
}
