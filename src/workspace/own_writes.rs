//! A writer's own writes — the model's (`WriteVar`) or a person's in the workspace view
//! (`AppWriteVar`): a variable created as the writer's, or one that exists updated, never a
//! rule — decided and written in one visit to the workspace, on the state as the store holds it
//! (another instance may have written the variable since this one looked).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::Value;

use super::{Applied, Error, Workspace, names_of};
use crate::vars::{self, NewVariable, ValueKind, VarType, VariablePatch, WriteOutcome};

/// What a writer writes: a value (text, or any JSON value, stored as its JSON text), a
/// description, tags. What it leaves out of an existing variable stays as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnWrite {
    pub name: String,
    pub value: Option<Value>,
    pub desc: Option<String>,
    pub tags: Option<Vec<String>>,
    pub author: Author,
}

/// Who writes, which the variable's type then says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Author {
    /// The model: a variable it creates is `LLMAdd`; one it updates keeps its type.
    Model,
    /// A person: a variable they create or update is `USER_ADD`, since its value is theirs.
    Person,
}

impl Author {
    /// The type of a variable this author creates.
    fn created_type(self) -> VarType {
        match self {
            Self::Model => VarType::LlmAdd,
            Self::Person => VarType::UserAdd,
        }
    }

    /// The type a variable this author updates takes; `None`: it keeps its own.
    fn updated_type(self) -> Option<VarType> {
        match self {
            Self::Model => None,
            Self::Person => Some(VarType::UserAdd),
        }
    }
}

/// What a write of the model's did.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub name: String,
    pub outcome: WriteOutcome,
    /// The stored value's length in characters.
    pub length: usize,
}

/// Why the model's write changed nothing: the variable is a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("variable `{name}` is a rule (RULE) and cannot be changed; write to another name")]
pub struct RuleRefused {
    pub name: String,
}

impl Workspace {
    /// Updates the variable if it exists (never a rule), or creates it as the author's own
    /// (`LLMAdd` for the model, `USER_ADD` for a person), durably, in one visit.
    pub fn write_own(&self, write: OwnWrite) -> Result<Result<Written, RuleRefused>, Error> {
        vars::validate_name(&write.name)?;
        let name = write.name;
        let value = write.value.map(vars::encode_value);
        let written = self.commit_with(|state| {
            let existing = state.system.peek(&name);
            let outcome = match existing.map(|variable| variable.var_type) {
                Some(VarType::Rule) => {
                    let refused = RuleRefused { name: name.clone() };
                    return Ok(Applied {
                        outcome: Err(refused),
                        written: Vec::new(),
                        removed: Vec::new(),
                    });
                }
                Some(_) => {
                    if let Some((text, _)) = &value {
                        self.check_room(state.system.bytes(), existing, text.len())?;
                    }
                    let patch = VariablePatch {
                        value: value.clone(),
                        var_type: write.author.updated_type(),
                        desc: write.desc.clone(),
                        tags: write.tags.clone(),
                        ..VariablePatch::default()
                    };
                    state.system.update(&name, patch)?
                }
                None => {
                    let (text, kind) = value.clone().unwrap_or((String::new(), ValueKind::Text));
                    self.check_room(state.system.bytes(), None, text.len())?;
                    state.system.insert(NewVariable {
                        name: name.clone(),
                        value: text,
                        kind,
                        var_type: write.author.created_type(),
                        desc: write.desc.clone(),
                        tags: write.tags.clone().unwrap_or_default(),
                        keep: false,
                    })
                }
            };
            let length = (state.system.peek(&name)).map_or(0, vars::Variable::char_len);
            let removed = names_of(&outcome.evicted);
            Ok(Applied {
                outcome: Ok(Written {
                    name: name.clone(),
                    outcome,
                    length,
                }),
                written: vec![name.clone()],
                removed,
            })
        })?;
        if let Ok(written) = &written {
            self.announce_write(Arc::from(name.as_str()), &written.outcome);
        }
        Ok(written)
    }

    /// Refuses a write of `bytes` in place of `replaced` that would take the workspace past its
    /// byte limit (`bytes`: the variables' bytes now).
    fn check_room(
        &self,
        bytes: usize,
        replaced: Option<&vars::Variable>,
        written: usize,
    ) -> Result<(), Error> {
        if self.max_bytes.is_none() {
            return Ok(());
        }
        let replaced = replaced.map_or(0, |old| old.value.len());
        let before = bytes + self.state_bytes.load(Ordering::Relaxed);
        let after = (before + written).saturating_sub(replaced);
        self.check_bytes(before, after).map_err(Error::Full)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::{Author, OwnWrite, RuleRefused};
    use crate::vars::{ManualClock, NewVariable, ValueKind, VarType};
    use crate::workspace::Workspace;

    fn write(name: &str, value: Option<serde_json::Value>, desc: Option<&str>) -> OwnWrite {
        OwnWrite {
            name: name.to_owned(),
            value,
            desc: desc.map(str::to_owned),
            tags: None,
            author: Author::Model,
        }
    }

    #[test]
    fn creates_as_the_models_then_updates_keeping_what_is_left_out() {
        let workspace = Workspace::in_memory("test", 16, Arc::new(ManualClock::new(1)));
        let created = workspace
            .write_own(write("notes", Some(json!("héllo")), Some("mine")))
            .unwrap()
            .unwrap();
        assert_eq!((created.outcome.created, created.length), (true, 5));
        let updated = workspace
            .write_own(write("notes", Some(json!({"a": 1})), None))
            .unwrap()
            .unwrap();
        assert_eq!((updated.outcome.created, updated.length), (false, 7));
        let stored = workspace.peek("notes").unwrap();
        assert_eq!(
            (stored.var_type, stored.kind, stored.desc.as_deref()),
            (VarType::LlmAdd, ValueKind::Json, Some("mine"))
        );
    }

    #[test]
    fn a_persons_write_is_theirs_whoever_wrote_the_variable_before() {
        let workspace = Workspace::in_memory("test", 16, Arc::new(ManualClock::new(1)));
        let by_person = |name: &str, value: &str| OwnWrite {
            author: Author::Person,
            ..write(name, Some(json!(value)), None)
        };
        workspace
            .write_own(by_person("mine", "typed"))
            .unwrap()
            .unwrap();
        workspace
            .write_own(write("noted", Some(json!("model")), Some("the model's")))
            .unwrap()
            .unwrap();
        workspace
            .write_own(by_person("noted", "corrected"))
            .unwrap()
            .unwrap();
        let stored = |name: &str| {
            let variable = workspace.peek(name).unwrap();
            (
                variable.var_type,
                variable.value.to_string(),
                variable.desc.clone(),
            )
        };
        assert_eq!(
            [stored("mine"), stored("noted")],
            [
                (VarType::UserAdd, "typed".to_owned(), None),
                (
                    VarType::UserAdd,
                    "corrected".to_owned(),
                    Some("the model's".to_owned())
                ),
            ]
        );
    }

    #[test]
    fn a_rule_is_refused_and_stays_as_it_was() {
        let workspace = Workspace::in_memory("test", 16, Arc::new(ManualClock::new(1)));
        workspace
            .insert(NewVariable {
                name: "Rule/Agent/Test".to_owned(),
                value: "keep me".to_owned(),
                kind: ValueKind::Text,
                var_type: VarType::Rule,
                desc: None,
                tags: Vec::new(),
                keep: true,
            })
            .unwrap();
        let refused = workspace
            .write_own(write("Rule/Agent/Test", Some(json!("changed")), None))
            .unwrap();
        assert_eq!(
            refused,
            Err(RuleRefused {
                name: "Rule/Agent/Test".to_owned()
            })
        );
        assert_eq!(
            &*workspace.peek("Rule/Agent/Test").unwrap().value,
            "keep me"
        );
    }
}
