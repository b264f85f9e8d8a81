//! Reading a text in time bounded by its length: the next place of a pattern for positions asked in order, and the
//! budget that every reader of one text spends.

use super::refusal::{Reason, TextRefusal};
use memchr::memmem::Finder;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// How many bytes reading a text for calls may go over, per byte of it (and a floor for short texts): every
/// reader charges what it scans, so a text that would be read over and over is refused instead.
const READS_PER_BYTE: usize = 3;
const MIN_READ_BUDGET: usize = 64 * 1024;
/// The most different names one text may ask the catalog about: an answer names a few tools, and each question
/// costs a lookup, so a text of thousands of `name(` is refused rather than looked up name by name.
pub const MAX_NAME_LOOKUPS: usize = 2048;

/// What reading one text may still cost, shared by its readers.
#[derive(Debug)]
pub struct ReadBudget {
    left: Cell<usize>,
    lookups: Cell<usize>,
    /// Set once a spending was refused: the text was not read whole.
    over: Cell<bool>,
}

impl ReadBudget {
    pub fn for_text(text: &str) -> Self {
        let left = text.len().saturating_mul(READS_PER_BYTE).max(MIN_READ_BUDGET);
        Self { left: Cell::new(left), lookups: Cell::new(MAX_NAME_LOOKUPS), over: Cell::new(false) }
    }

    /// Spends `bytes` of reading; past the budget, the text is refused.
    pub fn spend(&self, bytes: usize) -> Result<(), TextRefusal> {
        match self.left.get().checked_sub(bytes) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.left.set(0);
                self.over.set(true);
                Err(over_reads())
            }
        }
    }

    /// Spends one lookup of a name in the catalog.
    pub fn lookup(&self) -> Result<(), TextRefusal> {
        match self.lookups.get().checked_sub(1) {
            Some(left) => {
                self.lookups.set(left);
                Ok(())
            }
            None => {
                self.over.set(true);
                Err(self.lookups_spent())
            }
        }
    }

    fn lookups_spent(&self) -> TextRefusal {
        TextRefusal::new(
            Reason::OverBudget,
            format!("the text names more than {MAX_NAME_LOOKUPS} different calls; it is not read"),
        )
    }

    /// Why the text was not read whole, when a spending was refused.
    pub fn exhausted(&self) -> Option<TextRefusal> {
        if !self.over.get() {
            None
        } else if self.lookups.get() == 0 {
            Some(self.lookups_spent())
        } else {
            Some(over_reads())
        }
    }
}

fn over_reads() -> TextRefusal {
    let why = format!("reading the text for calls would go over {READS_PER_BYTE} readings of it; it is not read");
    TextRefusal::new(Reason::OverBudget, why)
}

/// The longest name asked about: longer ones name no tool (a registered name is at most 128 bytes, and a namespace
/// such as `functions.` or `default_api.` may come before it).
const MAX_ASKED_NAME: usize = 160;

/// Whether a name is a tool offered, asked once per name and within the budget's lookups.
pub struct Offered<'a> {
    ask: &'a dyn Fn(&str) -> bool,
    budget: &'a ReadBudget,
    asked: RefCell<HashMap<String, bool>>,
}

impl<'a> Offered<'a> {
    pub fn new(ask: &'a dyn Fn(&str) -> bool, budget: &'a ReadBudget) -> Self {
        Self { ask, budget, asked: RefCell::new(HashMap::new()) }
    }

    /// Whether `name` is offered; false for every name once the lookups are spent (`budget.exhausted()` then
    /// says the text was not read whole).
    pub fn has(&self, name: &str) -> bool {
        if name.is_empty() || name.len() > MAX_ASKED_NAME {
            return false;
        }
        if let Some(known) = self.asked.borrow().get(name) {
            return *known;
        }
        if self.budget.lookup().is_err() {
            return false;
        }
        let known = (self.ask)(name);
        self.asked.borrow_mut().insert(name.to_owned(), known);
        known
    }

    pub fn budget(&self) -> &ReadBudget {
        self.budget
    }
}

/// The next place of `pattern` at or after a position, for positions asked in increasing order: the text is
/// searched once from left to right, however many times it is asked.
pub struct Ahead<'a> {
    text: &'a str,
    pattern: Finder<'a>,
    /// The last answer: `Some(at)` found at `at`; `None` when nothing is found from `from` on.
    last: Option<Option<usize>>,
    from: usize,
}

impl<'a> Ahead<'a> {
    pub fn new(text: &'a str, pattern: &'a str) -> Self {
        Self { text, pattern: Finder::new(pattern), last: None, from: 0 }
    }

    /// The first place of the pattern at or after `pos`.
    pub fn next(&mut self, pos: usize) -> Option<usize> {
        match self.last {
            Some(Some(at)) if at >= pos => return Some(at),
            Some(None) if self.from <= pos => return None,
            _ => {}
        }
        let pos = pos.min(self.text.len());
        let found = self.text.get(pos..).and_then(|rest| self.pattern.find(rest.as_bytes())).map(|i| pos + i);
        self.last = Some(found);
        self.from = pos;
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ahead_answers_each_position_as_find_would() {
        let text = "a<x>b<x>c";
        let mut ahead = Ahead::new(text, "<x>");
        for pos in 0..=text.len() {
            assert_eq!(ahead.next(pos), text[pos..].find("<x>").map(|i| pos + i), "{pos}");
        }
    }

    #[test]
    fn the_budget_refuses_past_its_bytes_and_its_lookups() {
        let budget = ReadBudget::for_text("short");
        assert!(budget.spend(MIN_READ_BUDGET).is_ok());
        assert_eq!(budget.spend(1).unwrap_err().reason, Reason::OverBudget);
        let budget = ReadBudget::for_text("");
        for _ in 0..MAX_NAME_LOOKUPS {
            budget.lookup().unwrap();
        }
        assert!(budget.lookup().is_err());
    }
}
