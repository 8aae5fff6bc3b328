//! The one rule that turns a model_type into the name of its Rust module (and
//! folder) in the generated crate.
//!
//! A spec keeps transformers' exact `model_type` (`xlm-roberta`, `kosmos-2.5`):
//! the spec file, the fixture folder, `ModelDecl.model_type` and result records
//! use it as it is. Only generated Rust names it differently:
//!
//! 1. replace every `-` and `.` with `_`;
//! 2. if the result is a Rust keyword (strict, reserved or weak, as of edition
//!    2024: `type`, `box`, `async`, `gen`, `union`...), append `_`.
//!
//! So `xlm-roberta` → `xlm_roberta`, `kosmos-2.5` → `kosmos_2_5`, `type` →
//! `type_`. Two specs whose model_types give the same module name are a spec
//! error (see [`crate::spec::load`]).

/// Keywords that syn still accepts as identifiers: the weak keywords, which
/// cannot name a module without confusion (`union`, `macro_rules`, `raw`,
/// `safe`), and `gen`, reserved since edition 2024. syn rejects every strict
/// and other reserved keyword itself.
const KEYWORDS_SYN_ACCEPTS: [&str; 5] = ["gen", "macro_rules", "raw", "safe", "union"];

/// The Rust module (and folder) name of a model_type; an error when the
/// model_type itself is not allowed ([`check_model_type`]).
pub fn module_name(model_type: &str) -> Result<String, String> {
    check_model_type(model_type)?;
    let name = model_type.replace(['-', '.'], "_");
    let name = if is_keyword(&name) {
        format!("{name}_")
    } else {
        name
    };
    // The rule always yields an identifier; syn has the last word before any code names it.
    syn::parse_str::<syn::Ident>(&name).map_err(|e| format!("model_type `{model_type}` gives the module name `{name}`, which is not a Rust identifier ({e})"))?;
    Ok(name)
}

fn is_keyword(name: &str) -> bool {
    KEYWORDS_SYN_ACCEPTS.contains(&name) || syn::parse_str::<syn::Ident>(name).is_err()
}

/// A model_type is transformers' own, kept as it is in the spec's file name,
/// the fixture folder and every record: ASCII lowercase letters, digits, `_`,
/// `-` and `.`, starting with a letter, so it can never escape the output or
/// fixture folder. Generated Rust names its module by
/// [`crate::module_name::module_name`].
pub fn check_model_type(model_type: &str) -> Result<(), String> {
    if model_type.contains(['/', '\\']) || model_type.contains("..") {
        return Err(format!(
            "model_type `{model_type}` could escape the output folder"
        ));
    }
    let allowed = model_type
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase())
        && model_type
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'));
    if !allowed {
        return Err(format!(
            "model_type `{model_type}` is not allowed: it must start with a lowercase letter and have only lowercase letters, digits, `_`, `-` and `.`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::module_name;

    #[test]
    fn identifiers_stay_as_they_are() {
        for name in ["bert", "llava_next", "t5", "wav2vec2"] {
            assert_eq!(module_name(name).unwrap(), name);
        }
    }

    #[test]
    fn dashes_and_dots_become_underscores() {
        assert_eq!(module_name("xlm-roberta").unwrap(), "xlm_roberta");
        assert_eq!(module_name("deberta-v2").unwrap(), "deberta_v2");
        assert_eq!(module_name("data2vec-text").unwrap(), "data2vec_text");
        assert_eq!(module_name("kosmos-2.5").unwrap(), "kosmos_2_5");
    }

    #[test]
    fn keywords_get_a_trailing_underscore() {
        // strict, reserved, reserved since 2024, weak
        for keyword in [
            "type",
            "mod",
            "async",
            "box",
            "yield",
            "try",
            "gen",
            "union",
            "raw",
            "safe",
            "macro_rules",
        ] {
            assert_eq!(
                module_name(keyword).unwrap(),
                format!("{keyword}_"),
                "{keyword}"
            );
        }
        assert_eq!(module_name("type-2").unwrap(), "type_2");
        assert_eq!(module_name("types").unwrap(), "types");
    }

    #[test]
    fn disallowed_model_types_are_errors() {
        for bad in [
            "",
            "Bert",
            "2bert",
            "-bert",
            "a/b",
            "../evil",
            "a..b",
            "bert roberta",
            "bért",
        ] {
            assert!(module_name(bad).is_err(), "{bad:?}");
        }
    }
}
