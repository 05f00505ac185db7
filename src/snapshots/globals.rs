//! Global snapshots: a state saved under a label and a description, outside any chat — a chat
//! floor worth keeping, a template variant, a state typed in by hand. A chat can start from one
//! (`baseId`) instead of its character's template, and `SnapshotDiff` compares against one.

use serde_json::Value;

use super::floors::TEMPLATE_PREFIX;
use super::{Error, Snapshots, invalid, within_limit};
use crate::store::{GlobalSnapshot, GlobalSummary};

/// Where a new global snapshot's state comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin<'a> {
    /// Any reference [`Snapshots::resolve`] takes.
    Reference(&'a str),
    /// A state given with the call.
    State(Value),
}

impl<'a> Origin<'a> {
    /// The same state without MVU's metadata (a reference is read first).
    pub fn without_mvu_metadata(self, snapshots: &Snapshots) -> Result<Self, Error> {
        let value = match self {
            Self::Reference(reference) => snapshots.resolve(reference)?.0,
            Self::State(state) => state,
        };
        Ok(Self::State(super::builtins::without_mvu_metadata(
            value, true,
        )))
    }

    /// Where a call says the state comes from: exactly one of a reference (`from`) and a state
    /// (`snapshot`).
    pub fn of(from: Option<&'a str>, snapshot: Option<Value>) -> Result<Self, Error> {
        match (from, snapshot) {
            (Some(reference), None) => Ok(Self::Reference(reference)),
            (None, Some(state)) => Ok(Self::State(state)),
            _ => invalid(
                "from",
                "give exactly one of `from` (a snapshot id, a global label or template:<characterId>) and `snapshot` (a state)",
            ),
        }
    }
}

/// The summary of a global snapshot (a deleted one, say).
impl From<GlobalSnapshot> for GlobalSummary {
    fn from(global: GlobalSnapshot) -> Self {
        Self {
            id: global.id,
            label: global.label,
            description: global.description,
            created_at: global.created_at,
        }
    }
}

/// The longest label accepted, in characters.
const LABEL_CHARACTERS: usize = 200;

impl Snapshots {
    /// Saves a state under `label`. A label in use is refused unless `replace`, which keeps
    /// that snapshot's id.
    pub fn save_global(
        &self,
        label: &str,
        description: &str,
        origin: Origin<'_>,
        replace: bool,
    ) -> Result<GlobalSnapshot, Error> {
        check_label(label)?;
        let value = match origin {
            Origin::Reference(reference) => self.resolve(reference)?.0,
            Origin::State(state) => {
                if !state.is_object() {
                    return invalid(
                        "snapshot",
                        "`snapshot` must be a JSON object, such as {\"角色\": {\"金币\": 0}}",
                    );
                }
                within_limit("the snapshot", &state)?;
                state
            }
        };
        let existing = self
            .store
            .global(&self.workspace, label)?
            .filter(|global| global.label == label);
        let id = match existing {
            Some(existing) if replace => existing.id,
            Some(existing) => {
                return invalid(
                    label,
                    format!(
                        "a global snapshot is labelled `{label}` already (id {}); pass \"replace\": true \
                     to overwrite it, or choose another label",
                        existing.id
                    ),
                );
            }
            None => uuid::Uuid::new_v4().to_string(),
        };
        let snapshot = GlobalSnapshot {
            id,
            label: label.to_owned(),
            description: description.to_owned(),
            created_at: now_micros(),
            value,
        };
        self.store.put_global(&self.workspace, &snapshot)?;
        Ok(snapshot)
    }

    /// A global snapshot by id or label.
    pub fn global(&self, id_or_label: &str) -> Result<GlobalSnapshot, Error> {
        self.store
            .global(&self.workspace, id_or_label)?
            .ok_or_else(|| {
                Error::invalid(id_or_label, format!(
                    "no global snapshot with the id or label `{id_or_label}`; SnapshotGlobalList shows them"
                ))
            })
    }

    pub fn globals(&self) -> Result<Vec<GlobalSummary>, Error> {
        Ok(self.store.globals(&self.workspace)?)
    }

    /// Whether `replace` would overwrite a global snapshot: a save with it on a label in use.
    pub fn replaces_global(&self, label: &str, replace: bool) -> Result<bool, Error> {
        Ok(replace && (self.globals()?.iter()).any(|global| global.label == label))
    }

    /// Deletes a global snapshot by id or label; returns it.
    pub fn delete_global(&self, id_or_label: &str) -> Result<GlobalSnapshot, Error> {
        let global = self.global(id_or_label)?;
        self.store.delete_global(&self.workspace, &global.id)?;
        Ok(global)
    }
}

fn check_label(label: &str) -> Result<(), Error> {
    if label.trim().is_empty() {
        return invalid(
            "label",
            "`label` is empty; name the snapshot, such as \"第5层 买药之后\"",
        );
    }
    if label.chars().count() > LABEL_CHARACTERS {
        return invalid(
            label,
            format!(
                "`label` has {} characters; keep it to {LABEL_CHARACTERS} and put the rest in `description`",
                label.chars().count()
            ),
        );
    }
    if label.starts_with(TEMPLATE_PREFIX) {
        return invalid(
            label,
            format!(
                "`label` `{label}` starts with `{TEMPLATE_PREFIX}`, which names a character's template in references; choose another label"
            ),
        );
    }
    Ok(())
}

/// Wall-clock microseconds since 1970.
fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn a_refused_label_is_carried_with_the_error() {
        let Err(Error::Invalid { value, message }) = check_label("template:alice") else {
            panic!("a label naming a template must be refused");
        };
        assert_eq!(value, "template:alice");
        assert!(
            message.starts_with("`label` `template:alice` starts with"),
            "{message}"
        );
    }
}
