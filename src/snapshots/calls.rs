//! Finding the built-in calls in an AI reply: `@.NAME(args);` for the built-in functions, MVU's
//! `_.set('path', old?, new);` family, and `<JSONPatch>[…]</JSONPatch>` blocks. Arguments are
//! read by [`super::literal`], so strings may hold `);`, values may nest and span lines. User
//! functions' own regex patterns are matched by the JavaScript engine instead.

use serde_json::Value;

use super::builtins::{Builtin, PatchOperation};
use super::literal::Reader;

/// What a found call does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Builtin(Builtin, Vec<Value>),
    Patch(Vec<PatchOperation>),
    /// A call that could not be read; applying it records the message.
    Malformed(String),
}

/// A call found in the text, at a byte offset.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub position: usize,
    /// Where a call that was read ends (its `;` or `)`); a malformed call claims no text.
    pub end: usize,
    /// The function as the text names it (`SET`, `_.set`, `JSONPatch`).
    pub name: String,
    pub action: Action,
}

/// Which syntaxes to look for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Syntaxes {
    /// The enabled `@.NAME(…)` built-ins.
    pub callable: Vec<Builtin>,
    pub mvu: bool,
    pub json_patch: bool,
}

/// Every built-in call in `text`, in the order they appear.
pub fn find(text: &str, syntaxes: &Syntaxes) -> Vec<Found> {
    let mut found = Vec::new();
    if !syntaxes.callable.is_empty() {
        find_at_calls(text, &syntaxes.callable, &mut found);
    }
    if syntaxes.mvu {
        find_mvu_calls(text, &mut found);
    }
    if syntaxes.json_patch {
        find_patches(text, &mut found);
    }
    found.sort_by_key(|call| call.position);
    keep_outermost(&mut found, |call| (call.position, call.end));
    found
}

/// Drops every call that starts inside an earlier one: text inside a call
/// (`@.SET("log", "then @.ADD(\"gold\", 5);")`) is its argument, not a call. `calls` are sorted
/// by position; `span` gives a call's start and end (a malformed call claims no text).
pub fn keep_outermost<T>(calls: &mut Vec<T>, span: impl Fn(&T) -> (usize, usize)) {
    let mut claimed = 0;
    calls.retain(|call| {
        let (start, end) = span(call);
        if start < claimed {
            return false;
        }
        claimed = claimed.max(end);
        true
    });
}

/// Where a call read by `reader` ends: after its `)` and an optional `;`.
fn call_end(reader: &mut Reader<'_>) -> usize {
    let after_parenthesis = reader.position();
    if reader.eat(';') {
        reader.position()
    } else {
        after_parenthesis
    }
}

fn find_at_calls(text: &str, callable: &[Builtin], found: &mut Vec<Found>) {
    for (position, _) in text.match_indices("@.") {
        let name_start = position + 2;
        let name_length = text[name_start..]
            .find(|character: char| !(character.is_ascii_alphanumeric() || character == '_'))
            .unwrap_or(text.len() - name_start);
        let name = &text[name_start..name_start + name_length];
        let Some(builtin) = Builtin::from_name(name).filter(|builtin| callable.contains(builtin))
        else {
            continue;
        };
        let mut reader = Reader::new(text, name_start + name_length);
        if !reader.eat('(') {
            continue;
        }
        let (action, end) = match reader.arguments() {
            Ok(arguments) => (Action::Builtin(builtin, arguments), call_end(&mut reader)),
            Err(error) => (
                Action::Malformed(format!("@.{name}(…) cannot be read: {error}")),
                position,
            ),
        };
        found.push(Found {
            position,
            end,
            name: name.to_owned(),
            action,
        });
    }
}

/// MVU's operations and what they map to.
fn mvu_operation(name: &str, arguments: Vec<Value>) -> Result<Action, String> {
    let action = match (name, arguments.len()) {
        // `_.set(path, new)` or `_.set(path, old, new)`: the old value is the model's note.
        ("set", 2) => Action::Builtin(Builtin::Set, arguments),
        ("set", 3) => {
            let mut arguments = arguments;
            arguments.remove(1);
            Action::Builtin(Builtin::Set, arguments)
        }
        ("add", 2) => Action::Builtin(Builtin::Add, arguments),
        ("assign" | "insert", 2 | 3) => Action::Builtin(Builtin::Assign, arguments),
        ("remove" | "unset" | "delete", 1) => Action::Builtin(Builtin::Unset, arguments),
        ("remove", 2) => Action::Builtin(Builtin::Remove, arguments),
        (operation, count) => {
            return Err(format!(
                "_.{operation}(…) with {count} arguments is not an MVU command: use _.set(path, old?, new), _.add(path, delta), _.assign(path, value), _.insert(path, key?, value), _.remove(path, item?)"
            ));
        }
    };
    Ok(action)
}

/// MVU's commands (`_.set(…)` …).
pub const MVU_OPERATIONS: [&str; 7] = [
    "set", "add", "assign", "insert", "remove", "unset", "delete",
];

/// Whether the `_.` at `position` continues a word (`my_.set`, `a._.set`): not an MVU command.
pub fn inside_word(text: &str, position: usize) -> bool {
    text[..position]
        .chars()
        .next_back()
        .is_some_and(|character| {
            character.is_alphanumeric() || character == '_' || character == '.'
        })
}

fn find_mvu_calls(text: &str, found: &mut Vec<Found>) {
    for (position, _) in text.match_indices("_.") {
        if inside_word(text, position) {
            continue;
        }
        let name_start = position + 2;
        let Some(name) = MVU_OPERATIONS.into_iter().find(|name| {
            text[name_start..].starts_with(name)
                && !text[name_start + name.len()..]
                    .starts_with(|character: char| character.is_alphanumeric() || character == '_')
        }) else {
            continue;
        };
        let mut reader = Reader::new(text, name_start + name.len());
        if !reader.eat('(') {
            continue;
        }
        let (action, end) = match reader.arguments() {
            Err(error) => (
                Action::Malformed(format!("_.{name}(…) cannot be read: {error}")),
                position,
            ),
            Ok(arguments) => match mvu_operation(name, arguments) {
                Ok(action) => (action, call_end(&mut reader)),
                Err(message) => (Action::Malformed(message), position),
            },
        };
        found.push(Found {
            position,
            end,
            name: format!("_.{name}"),
            action,
        });
    }
}

fn find_patches(text: &str, found: &mut Vec<Found>) {
    const OPEN: &str = "<JSONPatch>";
    const CLOSE: &str = "</JSONPatch>";
    for (position, _) in text.match_indices(OPEN) {
        let body_start = position + OPEN.len();
        let close = text[body_start..].find(CLOSE);
        let action = match close {
            None => {
                Action::Malformed("a <JSONPatch> block is not closed with </JSONPatch>".to_owned())
            }
            Some(length) => {
                let body = &text[body_start..body_start + length];
                let mut reader = Reader::new(body, 0);
                match reader.value(0) {
                    Err(error) => {
                        Action::Malformed(format!("the <JSONPatch> block cannot be read: {error}"))
                    }
                    Ok(value) => {
                        let operations = match value {
                            Value::Array(_) => value,
                            single @ Value::Object(_) => Value::Array(vec![single]),
                            _ => Value::Null,
                        };
                        match serde_json::from_value::<Vec<PatchOperation>>(operations) {
                            Ok(operations) => Action::Patch(operations),
                            Err(error) => Action::Malformed(format!(
                                "the <JSONPatch> block must be a list of {{\"op\", \"path\", \"value\"}} objects: {error}"
                            )),
                        }
                    }
                }
            }
        };
        let end = match (&action, close) {
            (Action::Patch(_), Some(length)) => body_start + length + CLOSE.len(),
            _ => position,
        };
        found.push(Found {
            position,
            end,
            name: "JSONPatch".to_owned(),
            action,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn all() -> Syntaxes {
        Syntaxes {
            callable: Builtin::CALLABLE.to_vec(),
            mvu: true,
            json_patch: true,
        }
    }

    fn actions(text: &str) -> Vec<Action> {
        find(text, &all())
            .into_iter()
            .map(|found| found.action)
            .collect()
    }

    #[test]
    fn finds_calls_in_text_order_with_robust_arguments() {
        let text = "她笑了。@.SET(\"角色.名字\", \"张三\");\n然后 @.ADD(\"角色.金币\", 100);\n@.SET(\"日志\", \"fn(1, 2); done\") @.SET(\"a\",\n  {\"b\": [1, (2)]}\n);";
        let found = actions(text);
        assert_eq!(
            found[0],
            Action::Builtin(Builtin::Set, vec![json!("角色.名字"), json!("张三")])
        );
        assert_eq!(
            found[1],
            Action::Builtin(Builtin::Add, vec![json!("角色.金币"), json!(100)])
        );
        assert_eq!(
            found[2],
            Action::Builtin(Builtin::Set, vec![json!("日志"), json!("fn(1, 2); done")])
        );
        assert!(
            matches!(&found[3], Action::Malformed(message) if message.contains("`(` cannot start a value"))
        );
    }

    #[test]
    fn unknown_or_disabled_names_and_prose_are_ignored() {
        let syntaxes = Syntaxes {
            callable: vec![Builtin::Set],
            ..Syntaxes::default()
        };
        let found = find(
            "@.ADD(\"a\", 1); @.SETX(1); mail@.SET is nice; @.SET(\"a\", 1)",
            &syntaxes,
        );
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].action,
            Action::Builtin(Builtin::Set, vec![json!("a"), json!(1)])
        );
    }

    #[test]
    fn mvu_commands_map_to_builtins() {
        let found = actions(
            "_.set('角色.名字', '李四', '张三');//改名\n_.add('金币', -5); my_.set('x', 1); _.remove('临时'); _.remove('背包', 0); _.frob(1)",
        );
        assert_eq!(
            found,
            vec![
                Action::Builtin(Builtin::Set, vec![json!("角色.名字"), json!("张三")]),
                Action::Builtin(Builtin::Add, vec![json!("金币"), json!(-5)]),
                Action::Builtin(Builtin::Unset, vec![json!("临时")]),
                Action::Builtin(Builtin::Remove, vec![json!("背包"), json!(0)]),
            ]
        );
    }

    proptest::proptest! {
        /// Any text: no panic, calls in order, every position on a character boundary, and a
        /// well-formed call embedded anywhere is found with its arguments.
        #[test]
        fn any_text_is_scanned_safely(
            noise in "[@._a-zA-Z(){}\\[\\]\"',;:\\\\ 0-9\n中文<>/-]{0,80}",
            value in -1000i64..1000,
        ) {
            let found = find(&noise, &all());
            proptest::prop_assert!(found.windows(2).all(|pair| pair[0].position <= pair[1].position));
            proptest::prop_assert!(found.iter().all(|call| noise.is_char_boundary(call.position)));
            let quiet: String = noise.chars().filter(|character| *character != '@' && *character != '<').collect();
            let text = format!("{quiet}\n@.SET(\"x.y\", {value});\n{noise}");
            let embedded = find(&text, &all());
            proptest::prop_assert!(embedded.iter().any(|call| call.action
                == Action::Builtin(Builtin::Set, vec![json!("x.y"), json!(value)])));
        }
    }

    #[test]
    fn calls_inside_a_call_are_its_arguments() {
        let found = actions(
            r#"@.SET("log", "then @.ADD(\"gold\", 5); and _.set('a', 1);"); @.ADD("gold", 1);"#,
        );
        assert_eq!(
            found,
            vec![
                Action::Builtin(
                    Builtin::Set,
                    vec![
                        json!("log"),
                        json!("then @.ADD(\"gold\", 5); and _.set('a', 1);")
                    ]
                ),
                Action::Builtin(Builtin::Add, vec![json!("gold"), json!(1)]),
            ]
        );
    }

    #[test]
    fn json_patch_blocks_are_read_whole() {
        let found = actions(
            "<JSONPatch>\n[{\"op\": \"replace\", \"path\": \"/a\", \"value\": 1}]\n</JSONPatch> <JSONPatch>oops</JSONPatch> <JSONPatch>[",
        );
        assert!(matches!(&found[0], Action::Patch(operations) if operations.len() == 1));
        assert!(
            matches!(&found[1], Action::Malformed(message) if message.contains("cannot be read"))
        );
        assert!(matches!(&found[2], Action::Malformed(message) if message.contains("not closed")));
    }
}
