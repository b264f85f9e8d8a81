//! What the words before a call say of it: a call introduced as an example, or under a condition, was not made.

use std::ops::Range;

/// Words that make what follows an example rather than a call.
const EXAMPLE: [&str; 6] = ["e.g.", "for instance", "example", "such as", "something like", "would look like"];
/// Words that make what follows depend on something not yet so.
const CONDITIONAL: [&str; 10] =
    ["if ", "could", "might", "should you", "once you", "when you", "you can ", "you may ", "unless", "in case"];

/// Refuses calls that the sentence leading to them presents as an example or a condition, saying which.
pub fn check(text: &str, spans: &[Range<usize>]) -> Result<(), String> {
    let mut from = 0;
    for span in spans {
        let lead = lead_in(&text[from..span.start]).to_lowercase();
        if let Some(word) = EXAMPLE.iter().find(|w| has_word(&lead, w)) {
            return Err(format!("the calls are shown as an example ({word:?} leads to them): none was made"));
        }
        if let Some(word) = CONDITIONAL.iter().find(|w| has_word(&lead, w)) {
            return Err(format!("the calls are conditional ({:?} leads to them): none was made", word.trim()));
        }
        from = span.end;
    }
    Ok(())
}

/// The sentence that leads to a call: the last one of the last paragraph before it.
fn lead_in(before: &str) -> &str {
    let before = before.trim_end();
    let paragraph = before.rfind("\n\n").map_or(before, |i| &before[i + 2..]);
    let cut = [". ", "! ", "? ", ".\n", "!\n", "?\n"].iter().filter_map(|t| paragraph.rfind(t).map(|i| i + 2)).max();
    cut.map_or(paragraph, |i| &paragraph[i..])
}

/// Whether `word` occurs in `text` starting a word.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| !text[..i].ends_with(|c: char| c.is_alphanumeric()))
}
