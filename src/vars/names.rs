//! The rules for variable names a user or the model chooses, checked by [`validate_name`] before
//! a write; every error says what is wrong with the name and how to fix it.

use super::Error;

/// The longest variable name accepted by [`validate_name`], in Unicode characters.
const MAX_NAME_CHARS: usize = 256;

/// Characters that would make `$VAR_REF{{name:start:length}}` ambiguous.
const RESERVED_NAME_CHARS: [char; 3] = ['{', '}', ':'];

/// Checks a user-chosen variable name.
///
/// A name has 1 to 256 characters, is not only whitespace, has no leading or trailing
/// whitespace, no control characters, and none of `{`, `}` and `:` (which would make
/// `$VAR_REF{{name:start:length}}` ambiguous). `/` is allowed: rule names look like
/// `Rule/Group/Name`.
pub fn validate_name(name: &str) -> Result<(), Error> {
    match name_problem(name) {
        None => Ok(()),
        Some(reason) => Err(Error::InvalidName {
            // A name too long to accept is quoted by its head.
            name: crate::text::shorten(name, MAX_NAME_CHARS),
            reason,
        }),
    }
}

/// What is wrong with a name and how to fix it, or `None` when it is valid.
fn name_problem(name: &str) -> Option<String> {
    let length = name.chars().count();
    if length == 0 {
        return Some(format!(
            "the name is empty; give the variable a name of 1 to {MAX_NAME_CHARS} characters"
        ));
    }
    if length > MAX_NAME_CHARS {
        return Some(format!(
            "the name is {length} characters long; shorten it to at most {MAX_NAME_CHARS}"
        ));
    }
    if name.chars().all(char::is_whitespace) {
        return Some("the name is only whitespace; use visible characters".to_owned());
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return Some("the name starts or ends with whitespace; trim it".to_owned());
    }
    if let Some(control) = name.chars().find(|character| character.is_control()) {
        return Some(format!(
            "the name contains the control character U+{:04X}; remove it",
            u32::from(control)
        ));
    }
    name.chars()
        .find(|character| RESERVED_NAME_CHARS.contains(character))
        .map(|reserved| {
            format!(
                "the name contains `{reserved}`, which would make `$VAR_REF{{{{name:start:length}}}}` ambiguous; use another separator such as `/` or `_`"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn validate_name_accepts_rule_paths_spaces_and_any_script() {
        for name in [
            "Rule/Agent/VarRef",
            "my var",
            "日本語",
            "x",
            &"n".repeat(256),
        ] {
            assert_eq!(validate_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn validate_name_rejects_names_that_are_empty_blank_padded_or_too_long() {
        let too_long = "n".repeat(257);
        for name in ["", "  ", " a", "a ", too_long.as_str()] {
            assert!(
                matches!(validate_name(name), Err(Error::InvalidName { name: rejected, .. })
                    if rejected == crate::text::shorten(name, MAX_NAME_CHARS)),
                "{name:?} should be rejected"
            );
        }
    }

    #[test]
    fn validate_name_rejects_reference_syntax_and_control_characters() {
        for name in ["a:b", "a{b", "x}", "a\nb", "tab\there"] {
            assert!(validate_name(name).is_err(), "{name:?} should be rejected");
        }
    }

    #[test]
    fn invalid_name_errors_say_what_is_wrong_and_how_to_fix_it() {
        let message = |name: &str| validate_name(name).map_err(|error| error.to_string());

        assert_eq!(
            message("a:b"),
            Err("invalid variable name `a:b`: the name contains `:`, which would make \
                 `$VAR_REF{{name:start:length}}` ambiguous; use another separator such as `/` or `_`"
                .to_owned())
        );
        assert_eq!(
            message("a\nb"),
            Err("invalid variable name `a\nb`: the name contains the control character U+000A; remove it"
                .to_owned())
        );
        assert_eq!(
            message(" a"),
            Err(
                "invalid variable name ` a`: the name starts or ends with whitespace; trim it"
                    .to_owned()
            )
        );
    }
}
