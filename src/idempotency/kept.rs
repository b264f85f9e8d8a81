//! A finished call's outcome as the local record keeps it. The record holds thousands, each touched again when it
//! is evicted and freed, so a plain outcome (texts alone: no error, repairs, parts or blocks, as most successes
//! are) is kept in one buffer rather than six allocations, a buffer an evicted outcome lends where one fits
//! (`Spares`); any other is kept whole.

use crate::pipeline::{ToolMessage, ToolStatus};

pub(super) enum Kept {
    Plain(Plain),
    Whole(Box<ToolMessage>),
}

/// A plain outcome's texts end to end, and its other fields.
pub(super) struct Plain {
    /// `tool_call_id`, `name`, `content`, `structured` and `effective_arguments`, in that order.
    texts: String,
    /// Where each of the first four texts ends.
    ends: [u32; 4],
    structured: bool,
    status: ToolStatus,
    attempts: u32,
    duration_us: u64,
}

/// The text buffers of outcomes the record forgot, lent to the next outcomes it keeps: in a full record each call
/// evicts one outcome and keeps another, so keeping costs no allocation, and forgetting no free of memory long out
/// of cache.
#[derive(Default)]
pub(super) struct Spares(Vec<String>);

impl Spares {
    /// Buffers kept for lending at most.
    const MOST: usize = 32;
    /// A larger buffer is freed rather than kept for lending.
    const LARGEST: usize = 4096;

    /// Takes a forgotten outcome's buffer for lending, or frees it.
    pub(super) fn lend(&mut self, kept: Kept) {
        if let Kept::Plain(Plain { mut texts, .. }) = kept
            && texts.capacity() <= Self::LARGEST
            && self.0.len() < Self::MOST
        {
            texts.clear();
            self.0.push(texts);
        }
    }

    /// An empty buffer for `length` bytes: a lent one if it holds them and wastes at most as much again (or 256
    /// bytes), else a new one. A lent buffer that does not fit is freed.
    fn buffer(&mut self, length: usize) -> String {
        match self.0.pop() {
            Some(lent) if lent.capacity() >= length && lent.capacity() - length <= length.max(256) => lent,
            _ => String::with_capacity(length),
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

impl Kept {
    pub(super) fn of(message: &ToolMessage, spares: &mut Spares) -> Kept {
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
        let (mut joined, mut ends) = (spares.buffer(length), [0u32; 4]);
        for (i, text) in texts.iter().enumerate() {
            joined.push_str(text);
            if let Some(end) = ends.get_mut(i) {
                *end = joined.len() as u32;
            }
        }
        Kept::Plain(Plain {
            texts: joined,
            ends,
            structured: structured.is_some(),
            status: *status,
            attempts: *attempts,
            duration_us: *duration_us,
        })
    }

    /// The bytes its buffer holds beyond its texts (a lent buffer may hold more than they need), so that the
    /// record's byte bound counts them too.
    pub(super) fn slack(&self) -> usize {
        match self {
            Kept::Plain(plain) => plain.texts.capacity() - plain.texts.len(),
            Kept::Whole(_) => 0,
        }
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
            let kept = Kept::of(&message, &mut Spares::default());
            assert!(matches!(kept, Kept::Plain(_)), "{message:?}");
            assert_eq!(kept.message(), message);
        }
    }

    #[test]
    fn a_forgotten_outcomes_buffer_is_lent_when_it_fits_and_freed_when_it_does_not() {
        let mut spares = Spares::default();
        let first = Kept::of(&success(), &mut spares);
        let Kept::Plain(Plain { texts, .. }) = &first else { panic!("a plain outcome") };
        let lent = texts.as_ptr();
        spares.lend(first);
        assert_eq!(spares.len(), 1);
        let other = ToolMessage { content: "Sun — 14 °C".into(), ..success() };
        let second = Kept::of(&other, &mut spares);
        assert!(matches!(&second, Kept::Plain(Plain { texts, .. }) if texts.as_ptr() == lent), "the buffer is lent");
        assert_eq!((second.message(), spares.len()), (other, 0), "and the outcome kept as it was");
        assert_eq!(second.slack(), "Rain — 12 °C".len() - "Sun — 14 °C".len(), "what it holds beyond the texts");
        // Too small for the next outcome, or too large: freed, and a buffer of the outcome's size made.
        spares.lend(second);
        let large = ToolMessage { content: "x".repeat(600), ..success() };
        let third = Kept::of(&large, &mut spares);
        assert!(matches!(&third, Kept::Plain(Plain { texts, .. }) if texts.as_ptr() != lent));
        assert_eq!((third.message(), spares.len()), (large, 0));
        spares.lend(third);
        let small = Kept::of(&success(), &mut spares);
        assert!(matches!(&small, Kept::Plain(Plain { texts, .. }) if texts.capacity() < 100), "not the 600-byte one");
        // Only plain outcomes' buffers, up to `LARGEST` bytes and `MOST` buffers, are kept for lending.
        let huge = Kept::of(&ToolMessage { content: "x".repeat(Spares::LARGEST), ..success() }, &mut spares);
        spares.lend(huge);
        spares.lend(Kept::Whole(Box::new(success())));
        assert_eq!(spares.len(), 0);
        (0..Spares::MOST + 5).for_each(|_| spares.lend(Kept::of(&success(), &mut Spares::default())));
        assert_eq!(spares.len(), Spares::MOST);
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
            let kept = Kept::of(&message, &mut Spares::default());
            assert!(matches!(kept, Kept::Whole(_)), "{message:?}");
            assert_eq!(kept.message(), message);
        }
    }
}
