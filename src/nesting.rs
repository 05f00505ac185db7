//! How deep a JSON value may nest: one limit for every value and dot path that enters the
//! workspace (tool arguments, function calls in chat replies, writes to the state document,
//! snapshot states), so that nothing accepted can fail to be read back.
//!
//! `serde_json` refuses to parse documents nested deeper than 128 levels, and recursive encoders
//! overflow the stack long before a value built by a loop runs out of memory. The limit here sits
//! well below both: a value whose depth, counted together with the dot path it is written at, is
//! within [`MAX_DEPTH`] can always be stored, read, exported and imported again.
//!
//! Depth counts containers: a scalar has depth 0, `[]` and `{}` depth 1, `{"a": [1]}` depth 2.

use serde_json::Value;

/// The deepest nesting accepted for a stored value, dot-path segments included.
pub const MAX_DEPTH: usize = 64;

/// A value or path nesting deeper than [`MAX_DEPTH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("nests {depth} levels deep, deeper than the limit of {MAX_DEPTH}; store it flatter")]
pub struct TooDeep {
    /// How deep it nests (at least; counting stops just past the limit).
    pub depth: usize,
}

/// The depth of `value`, counted without recursion (so any value, however deep, is safe to
/// measure). Counting stops at `MAX_DEPTH + 1`: callers only need to know it is too deep.
pub fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut pending: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((value, above)) = pending.pop() {
        let here = above + 1;
        match value {
            Value::Array(items) => pending.extend(items.iter().map(|item| (item, here))),
            Value::Object(fields) => pending.extend(fields.values().map(|field| (field, here))),
            _ => continue,
        }
        deepest = deepest.max(here);
        if here > MAX_DEPTH {
            return deepest;
        }
    }
    deepest
}

/// Checks that `value`, written `segments` levels below the root, stays within [`MAX_DEPTH`].
pub fn check(value: &Value, segments: usize) -> Result<(), TooDeep> {
    let total = segments.saturating_add(depth(value));
    if total > MAX_DEPTH {
        Err(TooDeep { depth: total })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nested(levels: usize) -> Value {
        let mut value = json!(1);
        for _ in 0..levels {
            value = json!({ "a": value });
        }
        value
    }

    #[test]
    fn depth_counts_containers() {
        assert_eq!(depth(&json!(1)), 0);
        assert_eq!(depth(&json!([])), 1);
        assert_eq!(depth(&json!({"a": [1], "b": 2})), 2);
    }

    #[test]
    fn values_at_the_limit_pass_and_one_deeper_fails() {
        assert_eq!(check(&nested(MAX_DEPTH), 0), Ok(()));
        assert_eq!(
            check(&nested(MAX_DEPTH - 3), 4),
            Err(TooDeep {
                depth: MAX_DEPTH + 1
            })
        );
    }

    #[test]
    fn very_deep_values_are_measured_without_recursion() {
        let mut value = json!(null);
        for _ in 0..100_000 {
            value = Value::Array(vec![value]);
        }
        assert_eq!(depth(&value), MAX_DEPTH + 1);
        // Dropping a value this deep recurses in serde_json; leak it in the test instead.
        std::mem::forget(value);
    }
}
