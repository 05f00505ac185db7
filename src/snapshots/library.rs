//! Arranging the function library (`docs/snapshots.md`): moving a function between the global
//! library and a character's, putting a library in a new running order, and turning functions
//! on or off in bulk. Functions are named by id or, when unambiguous, by name. Every operation
//! checks all it was given before it writes, and writes in one transaction: a bad id changes
//! nothing.

use super::functions::{self, Scope, VarFunction};
use super::{Error, Snapshots, describe_scope, invalid};

/// The function `key` names in `functions`: the one with that id, else the only one with that
/// name.
fn resolve<'a>(
    functions: &'a [VarFunction],
    key: &str,
    scope: &Scope,
) -> Result<&'a VarFunction, Error> {
    if let Some(function) = functions.iter().find(|function| function.id == key) {
        return Ok(function);
    }
    let named: Vec<&VarFunction> = functions
        .iter()
        .filter(|function| function.name == key)
        .collect();
    match named.as_slice() {
        [function] => Ok(function),
        [] => {
            let available: Vec<&str> = functions
                .iter()
                .map(|function| function.name.as_str())
                .collect();
            let listed = if available.is_empty() {
                "it has none".to_owned()
            } else {
                format!("it has {}", available.join(", "))
            };
            invalid(
                key,
                format!(
                    "no function `{key}` (by id or name) in the {} library; {listed}",
                    describe_scope(scope)
                ),
            )
        }
        several => {
            let ids: Vec<&str> = several
                .iter()
                .map(|function| function.id.as_str())
                .collect();
            invalid(
                key,
                format!(
                    "{} functions in the {} library are named `{key}`; name one by its id: {}",
                    several.len(),
                    describe_scope(scope),
                    ids.join(", ")
                ),
            )
        }
    }
}

fn definition(function: &VarFunction) -> Result<serde_json::Value, Error> {
    serde_json::to_value(function)
        .map_err(|error| Error::invalid(&function.name, error.to_string()))
}

/// Each of `keys` resolved, refusing a function named twice.
fn resolve_all(
    functions: &[VarFunction],
    keys: &[String],
    scope: &Scope,
) -> Result<Vec<VarFunction>, Error> {
    let mut chosen: Vec<VarFunction> = Vec::with_capacity(keys.len());
    for key in keys {
        let function = resolve(functions, key, scope)?;
        if chosen.iter().any(|already| already.id == function.id) {
            return invalid(
                key,
                format!(
                    "`{key}` names `{}` ({}), which is already in the list; name each function once",
                    function.name, function.id
                ),
            );
        }
        chosen.push(function.clone());
    }
    Ok(chosen)
}

impl Snapshots {
    /// Moves a function (by id or name) from one library to another; returns it as stored
    /// in its new library. The built-ins stay in the global library.
    pub fn move_function(&self, key: &str, from: &Scope, to: &Scope) -> Result<VarFunction, Error> {
        if from == to {
            return invalid(
                "toCharacterId",
                format!(
                    "the function is already in the {} library: give `toCharacterId` (a character) or leave it out (the global library) so that the two differ",
                    describe_scope(to)
                ),
            );
        }
        let library = self.functions(from)?;
        let function = resolve(&library, key, from)?.clone();
        if functions::is_builtin_id(&function.id) {
            return invalid(
                &function.name,
                format!(
                    "`{}` is a built-in and stays in the global library; to give a character its own variant, FunctionUpsert a function without an id into that character's library",
                    function.name
                ),
            );
        }
        let moved = self.store.move_function(
            &self.workspace,
            &from.key(),
            &to.key(),
            &function.id,
            &definition(&function)?,
        )?;
        if !moved {
            return invalid(
                &function.name,
                format!(
                    "`{}` left the {} library while it was being moved; FunctionList shows where it is now",
                    function.name,
                    describe_scope(from)
                ),
            );
        }
        Ok(function)
    }

    /// Puts a library in a new running order: the functions listed (by id or name) first, in
    /// that order, then the others in their current order; their `order` becomes 1, 2, … .
    /// Returns the library in its new order.
    pub fn reorder(&self, keys: &[String], scope: &Scope) -> Result<Vec<VarFunction>, Error> {
        if keys.is_empty() {
            return invalid(
                "ids",
                "`ids` is empty: list the functions (ids or names) in the order they should run",
            );
        }
        let mut library = self.functions(scope)?;
        library.sort_by_key(|function| function.order);
        let mut ordered = resolve_all(&library, keys, scope)?;
        ordered.extend(
            library
                .iter()
                .filter(|function| !ordered.iter().any(|listed| listed.id == function.id))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let mut changed = Vec::new();
        for (function, order) in ordered.iter_mut().zip(1..) {
            if function.order != order {
                function.order = order;
                changed.push((function.id.clone(), definition(function)?));
            }
        }
        self.store
            .put_functions(&self.workspace, &scope.key(), &changed)?;
        Ok(ordered)
    }

    /// Turns the functions listed (by id or name) on or off; returns them as stored.
    pub fn set_enabled(
        &self,
        keys: &[String],
        enabled: bool,
        scope: &Scope,
    ) -> Result<Vec<VarFunction>, Error> {
        if keys.is_empty() {
            return invalid(
                "ids",
                "`ids` is empty: list the functions (ids or names) to turn on or off",
            );
        }
        let library = self.functions(scope)?;
        let mut chosen = resolve_all(&library, keys, scope)?;
        let mut rows = Vec::with_capacity(chosen.len());
        for function in &mut chosen {
            function.enabled = enabled;
            rows.push((function.id.clone(), definition(function)?));
        }
        self.store
            .put_functions(&self.workspace, &scope.key(), &rows)?;
        Ok(chosen)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::snapshots::javascript::Limits;
    use crate::store::SqliteStore;

    fn service() -> Snapshots {
        Snapshots::new(
            SqliteStore::open_in_memory().unwrap(),
            "w",
            Limits::default(),
        )
    }

    fn heal() -> VarFunction {
        serde_json::from_value(json!({
            "name": "HEAL", "type": "active", "order": 20,
            "pattern": "@\\.HEAL\\((\\d+)\\);?",
            "executor": "snapshot.hp = (snapshot.hp || 0) + args[0]; return snapshot;"
        }))
        .unwrap()
    }

    fn names(functions: &[VarFunction]) -> Vec<&str> {
        functions
            .iter()
            .map(|function| function.name.as_str())
            .collect()
    }

    #[test]
    fn moving_changes_which_library_holds_a_function() {
        let service = service();
        let elf = Scope::Character("elf".to_owned());
        let stored = service.upsert_function(heal(), &Scope::Global).unwrap();
        let moved = service.move_function("HEAL", &Scope::Global, &elf).unwrap();
        assert_eq!(moved, stored);
        assert_eq!(names(&service.functions(&elf).unwrap()), ["HEAL"]);
        assert!(!names(&service.functions(&Scope::Global).unwrap()).contains(&"HEAL"));

        let again = service
            .move_function("HEAL", &Scope::Global, &elf)
            .unwrap_err();
        assert!(again.to_string().contains("no function `HEAL`"), "{again}");
        let same = service.move_function(&stored.id, &elf, &elf).unwrap_err();
        assert!(same.to_string().contains("already in"), "{same}");
        let builtin = service
            .move_function("SET", &Scope::Global, &elf)
            .unwrap_err();
        assert!(builtin.to_string().contains("built-in"), "{builtin}");
        assert_eq!(names(&service.functions(&elf).unwrap()), ["HEAL"]);
    }

    #[test]
    fn reordering_numbers_the_listed_first_and_keeps_the_rest_in_order() {
        let service = service();
        service.upsert_function(heal(), &Scope::Global).unwrap();
        let ordered = service
            .reorder(&["HEAL".to_owned(), "ADD".to_owned()], &Scope::Global)
            .unwrap();
        assert_eq!(
            names(&ordered),
            [
                "HEAL",
                "ADD",
                "SET",
                "SUB",
                "APPEND",
                "REMOVE",
                "ASSIGN",
                "UNSET",
                "TIME",
                "MVU",
                "JSON_PATCH"
            ]
        );
        let orders: Vec<i64> = ordered.iter().map(|function| function.order).collect();
        assert_eq!(orders, (1..=11).collect::<Vec<_>>());
        let mut listed = service.functions(&Scope::Global).unwrap();
        listed.sort_by_key(|function| function.order);
        assert_eq!(listed, ordered);

        let twice = service
            .reorder(
                &[
                    "ADD".to_owned(),
                    "00000000-0000-4000-8000-000000000002".to_owned(),
                ],
                &Scope::Global,
            )
            .unwrap_err();
        assert!(twice.to_string().contains("already in the list"), "{twice}");
    }

    #[test]
    fn enabling_in_bulk_checks_every_name_before_writing() {
        let service = service();
        let turned = service
            .set_enabled(
                &["MVU".to_owned(), "JSON_PATCH".to_owned()],
                true,
                &Scope::Global,
            )
            .unwrap();
        assert!(turned.iter().all(|function| function.enabled));
        let unknown = service
            .set_enabled(
                &["SET".to_owned(), "SETT".to_owned()],
                false,
                &Scope::Global,
            )
            .unwrap_err();
        assert!(
            unknown.to_string().contains("no function `SETT`"),
            "{unknown}"
        );
        let set = service
            .functions(&Scope::Global)
            .unwrap()
            .into_iter()
            .find(|function| function.name == "SET")
            .unwrap();
        assert!(set.enabled, "nothing was written");
    }
}
