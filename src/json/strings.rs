//! Every string of a JSON tree: object values and array elements at any depth (object keys,
//! numbers, booleans and null are not strings here), in document order. The reference
//! resolvers (`$VAR_REF`, `†`), the check for references in a call's arguments and plan
//! validation all walk arguments this way.
//!
//! The walks keep their own stack instead of recursing, so a value nested however deep (see
//! [`nesting`](super::nesting)) cannot overflow the call stack.

use serde_json::Value;

/// The strings of `value`, in document order.
pub fn iter(value: &Value) -> Iter<'_> {
    Iter {
        pending: vec![value],
    }
}

/// The iterator [`iter`] returns.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    /// Values still to visit, the next on top.
    pending: Vec<&'a Value>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        while let Some(current) = self.pending.pop() {
            match current {
                Value::String(text) => return Some(text),
                Value::Array(items) => self.pending.extend(items.iter().rev()),
                Value::Object(members) => self.pending.extend(members.values().rev()),
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
        }
        None
    }
}

/// Offers every string of `value` to `replace`, in document order, and puts what it returns in
/// the string's place (`None` keeps the string; a replacement is not walked in turn). Stops at
/// the first error, leaving the strings before it replaced and the rest as they were.
pub fn try_replace<E>(
    value: &mut Value,
    mut replace: impl FnMut(&str) -> Result<Option<Value>, E>,
) -> Result<(), E> {
    let mut pending = vec![value];
    while let Some(current) = pending.pop() {
        match current {
            Value::String(text) => {
                if let Some(replacement) = replace(text)? {
                    *current = replacement;
                }
            }
            Value::Array(items) => pending.extend(items.iter_mut().rev()),
            Value::Object(members) => pending.extend(members.values_mut().rev()),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn document() -> Value {
        json!({"a": "one", "b": [1, "two", {"c": "three", "key": null}], "d": true, "e": "four"})
    }

    #[test]
    fn strings_are_visited_in_document_order_and_keys_are_not_strings() {
        let document = document();

        assert_eq!(
            iter(&document).collect::<Vec<_>>(),
            ["one", "two", "three", "four"]
        );
        assert_eq!(iter(&json!(7)).count(), 0);
        assert_eq!(iter(&json!("alone")).collect::<Vec<_>>(), ["alone"]);
    }

    #[test]
    fn replacements_take_the_place_of_strings_and_are_not_walked() {
        let mut value = document();

        let replaced = try_replace(&mut value, |text| {
            Ok::<_, ()>(match text {
                "two" => Some(json!({"nested": "two"})),
                "four" => Some(json!(4)),
                _ => None,
            })
        });

        assert_eq!(replaced, Ok(()));
        assert_eq!(
            value,
            json!({"a": "one", "b": [1, {"nested": "two"}, {"c": "three", "key": null}], "d": true, "e": 4})
        );
    }

    #[test]
    fn the_first_error_stops_the_walk() {
        let mut value = document();
        let mut seen = Vec::new();

        let replaced = try_replace(&mut value, |text| {
            seen.push(text.to_owned());
            if text == "three" {
                return Err(text.to_owned());
            }
            Ok(Some(json!(text.len())))
        });

        assert_eq!(replaced, Err("three".to_owned()));
        assert_eq!(seen, ["one", "two", "three"]);
        assert_eq!(value["a"], json!(3));
        assert_eq!(value["e"], json!("four"));
    }

    #[test]
    fn deep_values_do_not_overflow_the_stack() {
        let mut value = json!("leaf");
        for _ in 0..100_000 {
            value = Value::Array(vec![value]);
        }

        assert_eq!(iter(&value).collect::<Vec<_>>(), ["leaf"]);
        assert_eq!(
            try_replace(&mut value, |_| Ok::<_, ()>(Some(json!(1)))),
            Ok(())
        );
        // Dropping a deep value recurses in serde_json; take it apart by hand.
        let mut current = value;
        while let Value::Array(mut items) = current {
            current = items.pop().unwrap_or(Value::Null);
        }
    }
}
