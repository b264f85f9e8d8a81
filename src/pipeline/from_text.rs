//! `calls_from_text`: the calls an assistant wrote in its text, as calls the rest of the pipeline checks.

use super::message::{Repair, ToolCall};
use super::repair::{RepairRule, RepairSettings};
use super::resolve::resolves;
use super::text_calls::{self, Format, FromText, Reason, TextRefusal};
use crate::registry::Catalog;
use serde_json::{Value, json};

/// What an assistant's text gave: what was found, and each call ready for `check_call` with the repair that
/// says where it came from (rule `calls_from_text`, `before` naming the envelope, `after` the call as read).
#[derive(Debug)]
pub struct TextExtraction {
    pub found: FromText,
    pub calls: Vec<(ToolCall, Repair)>,
}

/// Finds the calls in `text`, written in `format`, to the tools a caller of `tenant` sees, and of those only the
/// ones named in `tools` when it names any (the tools the model was bound to). A name counts as offered when
/// resolution would find its tool (exactly, behind a namespace, or spelled with other separators); never by a
/// typo, and without the suggestions a miss would search the catalog for.
pub fn calls_from_text(
    catalog: &Catalog,
    tenant: &str,
    text: &str,
    format: Format,
    settings: RepairSettings,
    tools: &[String],
) -> TextExtraction {
    if !settings.allows(RepairRule::CallsFromText) {
        let why = "reading calls from text is turned off (repair rule calls_from_text)";
        let refusal = Some(TextRefusal::new(Reason::Disabled, why));
        return TextExtraction {
            found: FromText { rest: text.to_owned(), refusal, ..FromText::default() },
            calls: vec![],
        };
    }
    let offered = |name: &str| {
        resolves(catalog, tenant, name, settings)
            .is_some_and(|tool| tools.is_empty() || tools.iter().any(|t| *t == tool.spec.name))
    };
    let found = text_calls::calls_in_text(text, format, &offered);
    let envelope = found.envelope.map_or("", |e| e.name());
    let how = match found.wrappers.as_slice() {
        [] => envelope.to_owned(),
        wrappers => format!("{envelope} in {}", wrappers.join(", ")),
    };
    let calls = found
        .calls
        .iter()
        .map(|c| {
            let arguments = super::json_text(&c.arguments);
            let repair = Repair {
                rule: RepairRule::CallsFromText.name().to_owned(),
                path: String::new(),
                before: Value::String(how.clone()).to_string(),
                after: json!({"name": c.name, "arguments": c.arguments}).to_string(),
            };
            (ToolCall { id: String::new(), name: c.name.clone(), arguments }, repair)
        })
        .collect();
    TextExtraction { found, calls }
}
