//! The type names src/ defines, for the checks that no name means two things and that settings are named alike.

use super::rust_text;
use std::collections::{BTreeMap, BTreeSet};

/// Each type name (a `pub` struct, enum, trait or type alias, at any `pub` visibility) with the files defining it.
fn defined(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let mut defined: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in files {
        for line in rust_text::code_only(text).lines() {
            let Some(rest) = line.trim_start().strip_prefix("pub") else { continue };
            let rest = rest.strip_prefix("(crate)").or_else(|| rest.strip_prefix("(super)")).unwrap_or(rest);
            let mut words = rest.split_whitespace();
            if let (Some("struct" | "enum" | "trait" | "type"), Some(name)) = (words.next(), words.next()) {
                let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                defined.entry(name).or_default().insert(file.clone());
            }
        }
    }
    defined
}

/// Names defined in more than one file, each with its files: two things of one name make every reader ask which
/// one is meant.
pub fn twice_named(files: &[(String, String)]) -> Vec<String> {
    let twice = defined(files).into_iter().filter(|(_, files)| files.len() > 1);
    twice.map(|(name, files)| format!("{name}: {}", files.into_iter().collect::<Vec<_>>().join(", "))).collect()
}

/// Names off the vocabulary: a subsystem's checked configuration is its `*Settings`, a table as written is
/// `Raw*`, and only the whole file is a `Config` (`Config`, `RawConfig`); nothing is an `*Options`.
pub fn off_vocabulary(files: &[(String, String)]) -> Vec<String> {
    let off =
        |name: &str| name.ends_with("Options") || (name.ends_with("Config") && !matches!(name, "Config" | "RawConfig"));
    let named = defined(files).into_iter().filter(|(name, _)| off(name));
    named.flat_map(|(name, files)| files.into_iter().map(move |file| format!("{name} ({file})"))).collect()
}
