//! Why a text that showed a call gave none: a reason from a short fixed list, for logs, spans and metric labels,
//! and a sentence for people.

use super::MAX_TEXT_CALLS;
use std::fmt;

/// The reason a text gave no call, as a caller counts it. The names (`name()`) are stable: metric labels and
/// the `refusal_reason` of `CallsFromText` use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Reading calls from text is turned off.
    Disabled,
    /// The text is longer than is read.
    TooLong,
    /// The text holds more calls than one answer may make.
    TooManyCalls,
    /// Reading the text would cost more than its length allows.
    OverBudget,
    /// The call names a tool the model was not offered.
    NotOffered,
    /// The calls are written in another format than the one the caller named.
    OtherFormat,
    /// The call is quoted: in a code fence or inline code (a tag), a block quote or quotation marks.
    Quoted,
    /// The call is in the model's reasoning (`<think>`, harmony's analysis channel), not its answer.
    Reasoning,
    /// The text shows the call as an example, a template or a sample.
    Example,
    /// The text says not to make the call, or that it will not be made.
    Negated,
    /// The text asks about the call (whether to make it, which one) instead of making it.
    Question,
    /// The text offers calls as options to choose from.
    Options,
    /// The text reports a call made earlier.
    Past,
    /// The text makes the call depend on something (a confirmation, an if) or only supposes it.
    Hypothetical,
    /// The call is another's words: a tool's output, a web page, a document, the user.
    OtherSpeaker,
    /// The words before the call do not declare it an action taken now.
    NotAnAction,
    /// The call is named inside a sentence.
    Mention,
    /// A loose shape (a flat or keyed object) that is not the whole answer.
    NotWhole,
    /// The text cannot be read as calls with one meaning: broken, inside other code, or more than read.
    Ambiguous,
}

impl Reason {
    pub const ALL: [Reason; 19] = [
        Reason::Disabled,
        Reason::TooLong,
        Reason::TooManyCalls,
        Reason::OverBudget,
        Reason::NotOffered,
        Reason::OtherFormat,
        Reason::Quoted,
        Reason::Reasoning,
        Reason::Example,
        Reason::Negated,
        Reason::Question,
        Reason::Options,
        Reason::Past,
        Reason::Hypothetical,
        Reason::OtherSpeaker,
        Reason::NotAnAction,
        Reason::Mention,
        Reason::NotWhole,
        Reason::Ambiguous,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Reason::Disabled => "disabled",
            Reason::TooLong => "too_long",
            Reason::TooManyCalls => "too_many_calls",
            Reason::OverBudget => "over_budget",
            Reason::NotOffered => "not_offered",
            Reason::OtherFormat => "other_format",
            Reason::Quoted => "quoted",
            Reason::Reasoning => "reasoning",
            Reason::Example => "example",
            Reason::Negated => "negated",
            Reason::Question => "question",
            Reason::Options => "options",
            Reason::Past => "past",
            Reason::Hypothetical => "hypothetical",
            Reason::OtherSpeaker => "other_speaker",
            Reason::NotAnAction => "not_an_action",
            Reason::Mention => "mention",
            Reason::NotWhole => "not_whole",
            Reason::Ambiguous => "ambiguous",
        }
    }
}

/// A text's refusal: the reason, and what in the text gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRefusal {
    pub reason: Reason,
    pub detail: String,
}

/// The most bytes of a refusal's words: they go into answers, logs and span attributes.
pub const MAX_DETAIL: usize = 512;

impl TextRefusal {
    /// A refusal; its words are cut at `MAX_DETAIL` bytes, since they may quote a name or a line of any length.
    pub fn new(reason: Reason, detail: impl Into<String>) -> Self {
        let mut detail = detail.into();
        if detail.len() > MAX_DETAIL {
            detail.truncate(detail.floor_char_boundary(MAX_DETAIL));
            detail.push('…');
        }
        Self { reason, detail }
    }

    /// Refuses a text once it holds more calls than one answer may make (`MAX_TEXT_CALLS`).
    pub fn within_call_cap(calls: usize) -> Result<(), TextRefusal> {
        match calls > MAX_TEXT_CALLS {
            true => Err(Self::new(Reason::TooManyCalls, format!("the text holds more than {MAX_TEXT_CALLS} calls"))),
            false => Ok(()),
        }
    }

    /// An ambiguity: what most readers' errors are.
    pub fn ambiguous(detail: impl Into<String>) -> Self {
        Self::new(Reason::Ambiguous, detail)
    }
}

impl fmt::Display for TextRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl From<String> for TextRefusal {
    fn from(detail: String) -> Self {
        TextRefusal::ambiguous(detail)
    }
}

impl From<&str> for TextRefusal {
    fn from(detail: &str) -> Self {
        TextRefusal::ambiguous(detail)
    }
}
