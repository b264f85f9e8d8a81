//! A finished call's outcome as the local record keeps it. The record holds thousands, each touched again when it
//! is evicted and freed, so a plain outcome (texts alone: no error, repairs, parts or blocks, as most successes
//! are) is kept in one allocation rather than six; any other is kept whole.

use crate::pipeline::{ToolMessage, ToolStatus};

pub(super) enum Kept {
    Plain(Plain),
    Whole(Box<ToolMessage>),
}

/// A plain outcome's texts end to end, and its other fields.
pub(super) struct Plain {
    /// `tool_call_id`, `name`, `content`, `structured` and `effective_arguments`, in that order.
    texts: Box<str>,
    /// Where each of the first four texts ends.
    ends: [u32; 4],
    structured: bool,
    status: ToolStatus,
    attempts: u32,
    duration_us: u64,
}

impl Kept {
    pub(super) fn of(message: &ToolMessage) -> Kept {
        // Every field named, so that a field added to messages is kept here too, or this stops compiling.
        let ToolMessage {
            tool_call_id,
            name,
            status,
            content,
            structured,
            error,
            repairs,
            effective_arguments,
            attempts,
            duration_us,
            parts,
            blocks,
        } = message;
        let texts = [tool_call_id, name, content, structured.as_deref().unwrap_or(""), effective_arguments];
        let length: usize = texts.iter().map(|text| text.len()).sum();
        let plain = error.is_none() && repairs.is_empty() && parts.is_empty() && blocks.is_empty();
        if !plain || u32::try_from(length).is_err() {
            return Kept::Whole(Box::new(message.clone()));
        }
        let (mut joined, mut ends) = (String::with_capacity(length), [0u32; 4]);
        for (i, text) in texts.iter().enumerate() {
            joined.push_str(text);
            if let Some(end) = ends.get_mut(i) {
                *end = joined.len() as u32;
            }
        }
        Kept::Plain(Plain {
            texts: joined.into_boxed_str(),
            ends,
            structured: structured.is_some(),
            status: *status,
            attempts: *attempts,
            duration_us: *duration_us,
        })
    }

    /// The message kept, as it was.
    pub(super) fn message(&self) -> ToolMessage {
        let plain = match self {
            Kept::Whole(message) => return (**message).clone(),
            Kept::Plain(plain) => plain,
        };
        let [a, b, c, d] = plain.ends.map(|end| end as usize);
        let text = |from: usize, to: usize| plain.texts[from..to].to_owned();
        ToolMessage {
            tool_call_id: text(0, a),
            name: text(a, b),
            status: plain.status,
            content: text(b, c),
            structured: plain.structured.then(|| text(c, d)),
            error: None,
            repairs: Vec::new(),
            effective_arguments: text(d, plain.texts.len()),
            attempts: plain.attempts,
            duration_us: plain.duration_us,
            parts: Vec::new(),
            blocks: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{ErrorKind, Repair, ToolError};

    fn success() -> ToolMessage {
        ToolMessage {
            tool_call_id: "call-1".into(),
            name: "forecast".into(),
            status: ToolStatus::Success,
            content: "Rain — 12 °C".into(),
            structured: Some(r#"{"t":12}"#.into()),
            error: None,
            repairs: Vec::new(),
            effective_arguments: r#"{"city":"Lyon"}"#.into(),
            attempts: 2,
            duration_us: 1234,
            parts: Vec::new(),
            blocks: Vec::new(),
        }
    }

    #[test]
    fn a_plain_outcome_is_kept_in_one_piece_and_given_back_as_it_was() {
        for message in [
            success(),
            ToolMessage { structured: None, ..success() },
            ToolMessage { structured: Some(String::new()), content: String::new(), ..success() },
        ] {
            let kept = Kept::of(&message);
            assert!(matches!(kept, Kept::Plain(_)), "{message:?}");
            assert_eq!(kept.message(), message);
        }
    }

    #[test]
    fn an_outcome_with_more_than_texts_is_kept_whole() {
        let error = ToolError {
            kind: ErrorKind::ToolError,
            message: "no such city".into(),
            model_fixable: true,
            retryable: false,
            retry_after_ms: 0,
            violations: Vec::new(),
            suggestions: Vec::new(),
            original_arguments: String::new(),
        };
        let repair = Repair { rule: "key_renamed".into(), path: "/city".into(), before: "C".into(), after: "c".into() };
        let failed = ToolMessage { status: ToolStatus::Error, error: Some(error), ..success() };
        let repaired = ToolMessage { repairs: vec![repair], ..success() };
        for message in [failed, repaired] {
            let kept = Kept::of(&message);
            assert!(matches!(kept, Kept::Whole(_)), "{message:?}");
            assert_eq!(kept.message(), message);
        }
    }
}
