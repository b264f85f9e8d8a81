//! The words around a call that say it is not being made now: an example, a negation, a question, options, the
//! past, a condition, or another's words. Matched in one pass (Aho-Corasick), whole words, any case.
//!
//! The lists are English, with the words for "example", "never" and "not" in Spanish, French, German, Italian,
//! Portuguese, Dutch, Russian, Chinese and Japanese. A lead-in is accepted only in English (`intent.rs`), so in
//! plain text any other language refuses by default; these lists are what refuses inside a template's tags.

use super::refusal::Reason;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use std::sync::LazyLock;

/// Where around a call a word is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Anywhere in the lead-in: the paragraph before the call, and the introductions it continues.
    Lead,
    /// Only in the sentence that leads straight to the call.
    Sentence,
    /// In the text right after the call: the rest of its paragraph and the next two.
    After,
    /// In the paragraph before the lead-in: only what refuses the action outright.
    Before,
}

/// A word that refuses, where it refuses, and whether it is a stem (`illustrat` for illustrate, illustration).
struct Cue {
    word: &'static str,
    reason: Reason,
    scope: Scope,
}

const EXAMPLE: &str = "example|examples|e.g|eg.|for instance|such as|something like|sample call|sample calls|\
    sample request|sample code|sample usage|as a sample|template|placeholder|illustrat*|demonstrat*|\
    would look like|looks like this|look like this|look like:|looks like:|the syntax|syntax like|syntax is|\
    syntax for|usage:|snippet|format of|show you|how to call|how to use|how to invoke|is the format|\
    the format is|for reference|ejemplo|por ejemplo|exemple|par exemple|beispiel*|zum beispiel|esempio|\
    per esempio|exemplo|por exemplo|voorbeeld|bijvoorbeeld|пример*|Пример*|например|Например|例如|比如|示例|例子|例えば";
const NEGATED: &str = "never|do not|don't|dont|doesn't|won't|will not|shall not|must not|mustn't|should not|shouldn't|\
    cannot|can't|refuse*|declin*|avoid*|not going to|without your|without approval|without confirmation|\
    without permission|instead of|warning|caution|careful|nunca|jamás|jamais|niemals|nicht|mai eseguire|não|\
    no ejecutes|ne pas|ne jamais|不要|禁止|しないで|никогда|нельзя";
const NEGATED_SENTENCE: &str =
    "not|nor|neither|isn't|aren't|wasn't|weren't|didn't|haven't|hasn't|wouldn't|couldn't|no longer";
const QUESTION: &str = "?|¿|？|shall i|should i|do you want|would you like|want me to|like me to|may i|can i|\
    is that ok|is this ok|is that right|is this right|let me know which|let me know if";
const OPTIONS: &str = "option a|option b|option 1|option 2|your options|two options|these options|following options|\
    alternatively|either|one of the following|one of these|which one|which of|choose one|choose between|\
    choose from|pick one|select one|or would you|or do you|or should";
const PAST: &str = "earlier|previously|already|last time|before this|i ran|i called|i executed|i tried|i invoked|\
    i made|i sent|was called|were called|was run|was executed|was sent|has been|have been|had been|looked like|\
    raw output|yesterday";
const HYPOTHETICAL: &str = "hypothetical*|suppose|supposing|imagine|in theory|theoretically|you can|you could|\
    you would|you might|you may|you'd|one can|one could|if you confirm|if you approve|once you confirm|\
    once confirmed|once approved|after you approve|after you confirm|pending|with your approval|upon approval|\
    upon confirmation|if you'd like me|if you want me|please confirm|your confirmation|approve|approval|\
    permission|consent|if |unless";
const HYPOTHETICAL_SENTENCE: &str =
    "would|could|might|should|i'd|we'd|once|when you|after you|as soon as|in case|assuming";
const OTHER_SPEAKER: &str = "says|said|wrote|writes|quote*|the user|you wrote|you sent|you said|your message|\
    your last|your previous|your earlier|the page|web page|webpage|website|search result*|result 1|result:|\
    results:|the document|the docs|documentation|the readme|the api docs|the manual|returned|output:|the output|\
    response:|the response|tool output|the email|message from|i fetched|the file|contains:|reads:";
/// A paragraph before the lead-in, only what refuses the action outright.
const BEFORE_NEGATED: &str = "i won't|i will not|i'm not going to|won't run|will not run|not run|not execute|\
    not call|don't run|do not run|don't call|do not call|don't execute|do not execute|never do this|never run|\
    never execute|never call|without your approval|without approval|without confirmation|without permission";
/// After a call, only what takes the call back, asks, offers options, reports the past or waits for a yes.
const AFTER_NEGATED: &str = "actually, no|actually no|on second thought|never mind|nevermind|scratch that|i will not|\
    i won't|i'm not going to|not run|not execute|not call|don't run|do not run|don't call|\
    do not call|don't execute|do not execute|instead|wait,|never";
const AFTER_QUESTION: &str = "shall i|should i|do you want|would you like|want me to|like me to|may i|can i";
const AFTER_OPTIONS: &str = "which one|which of|pick one|choose one|choose between|option a|option b|option 1|\
    option 2|either one|or would you";
const AFTER_PAST: &str = "it failed|it returned|that failed|which failed|and failed|returned an error|it worked|\
    it succeeded|the result was|the output was|earlier|already ran|already called|previously";
const AFTER_HYPOTHETICAL: &str = "if you confirm|once you confirm|if you approve|with your approval|\
    let me know if you want|if you'd like me to|if you want me to|shall i proceed|should i proceed|go ahead|\
    confirm|approve|example|e.g|hypothetical*|illustrat*|what i would|i would send|i would run|i would call";

fn cues() -> Vec<Cue> {
    let groups: [(&str, Reason, Scope); 15] = [
        (EXAMPLE, Reason::Example, Scope::Lead),
        (NEGATED, Reason::Negated, Scope::Lead),
        (NEGATED_SENTENCE, Reason::Negated, Scope::Sentence),
        (QUESTION, Reason::Question, Scope::Lead),
        (OPTIONS, Reason::Options, Scope::Lead),
        (PAST, Reason::Past, Scope::Lead),
        (HYPOTHETICAL, Reason::Hypothetical, Scope::Lead),
        (HYPOTHETICAL_SENTENCE, Reason::Hypothetical, Scope::Sentence),
        (OTHER_SPEAKER, Reason::OtherSpeaker, Scope::Lead),
        (AFTER_NEGATED, Reason::Negated, Scope::After),
        (AFTER_QUESTION, Reason::Question, Scope::After),
        (AFTER_OPTIONS, Reason::Options, Scope::After),
        (AFTER_HYPOTHETICAL, Reason::Hypothetical, Scope::After),
        (AFTER_PAST, Reason::Past, Scope::After),
        (BEFORE_NEGATED, Reason::Negated, Scope::Before),
    ];
    let mut cues = Vec::new();
    for (words, reason, scope) in groups {
        for word in words.split('|') {
            cues.push(Cue { word, reason, scope });
            if word.contains('\'') {
                cues.push(Cue { word: leak_curly(word), reason, scope });
            }
        }
    }
    cues
}

/// The word with a typographic apostrophe, as many models write it: made once, when the cues are built.
fn leak_curly(word: &str) -> &'static str {
    Box::leak(word.replace('\'', "\u{2019}").into_boxed_str())
}

struct Matcher {
    cues: Vec<Cue>,
    automaton: AhoCorasick,
}

static MATCHER: LazyLock<Matcher> = LazyLock::new(|| {
    let cues = cues();
    let words = cues.iter().map(|c| c.word.trim_end_matches('*'));
    let automaton = AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .build(words)
        .expect("the cues are a handful of words");
    Matcher { cues, automaton }
});

/// The first cue of `scopes` in `text` that stands as a whole word, and the reason it gives.
pub fn first(text: &str, scopes: &[Scope]) -> Option<(Reason, &'static str)> {
    let matcher = &*MATCHER;
    for found in matcher.automaton.find_overlapping_iter(text) {
        let cue = &matcher.cues[found.pattern().as_usize()];
        if scopes.contains(&cue.scope) && whole_word(text, found.start(), found.end(), cue.word) {
            return Some((cue.reason, cue.word.trim_end_matches('*')));
        }
    }
    None
}

/// Whether the match starts a word (and ends one, unless the cue is a stem or ends in punctuation or space).
fn whole_word(text: &str, start: usize, end: usize, word: &str) -> bool {
    let wordy = |c: char| c.is_alphanumeric() || c == '_';
    let first = word.chars().next().unwrap_or(' ');
    let last = word.trim_end_matches('*').chars().last().unwrap_or(' ');
    let cjk = first > '\u{2e80}';
    let starts = cjk || !wordy(first) || !text[..start].chars().next_back().is_some_and(wordy);
    let stem = word.ends_with('*');
    let ends = cjk || stem || !wordy(last) || !text[end..].chars().next().is_some_and(wordy);
    starts && ends
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Scope; 4] = [Scope::Lead, Scope::Sentence, Scope::After, Scope::Before];

    #[test]
    fn cues_are_whole_words_in_any_case_and_stems_take_their_endings() {
        assert_eq!(first("For EXAMPLE:", &ALL), Some((Reason::Example, "example")));
        assert_eq!(first("Here is the counterexample", &[Scope::Lead]), None);
        assert_eq!(first("This is illustrative.", &[Scope::Lead]), Some((Reason::Example, "illustrat")));
        assert_eq!(first("I don\u{2019}t run it", &[Scope::Lead]), Some((Reason::Negated, "don’t")));
        assert_eq!(first("Beispiel:", &[Scope::Lead]), Some((Reason::Example, "beispiel")));
        assert_eq!(first("例如：", &[Scope::Lead]), Some((Reason::Example, "例如")));
        assert_eq!(first("Here is the function call:", &ALL), None);
        assert_eq!(first("notice", &[Scope::Sentence]), None);
        assert_eq!(first("It is not", &[Scope::Sentence]), Some((Reason::Negated, "not")));
    }

    #[test]
    fn a_scope_reads_only_its_own_words() {
        assert_eq!(first("It would be:", &[Scope::Lead]), None);
        assert_eq!(first("It would be:", &[Scope::Sentence]), Some((Reason::Hypothetical, "would")));
        assert_eq!(first("Which one did you mean?", &[Scope::After]), Some((Reason::Options, "which one")));
    }
}
