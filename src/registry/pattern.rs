//! `pattern`, bounded: a linear-time engine where it can be, backtracking only for lookaround and
//! backreferences, and then within a budget per string and per call. A check that cannot finish within its
//! budget never counts as a match or a miss: the call is refused (`within_budget`), in `not` and `if` too.

use jsonschema::paths::Location;
use jsonschema::{Keyword, ValidationError};
use serde_json::{Map, Value};
use std::cell::RefCell;

/// Backtracking steps one match may take, so a catastrophic `pattern` cannot hang the gateway.
const REGEX_BACKTRACK_LIMIT: usize = 100_000;
/// A first try's steps: most matches take far fewer, and only those that run out are tried at the full limit.
const CHEAP_BACKTRACK_LIMIT: usize = 1_000;
/// Backtracking steps one call may take over all its matches, each charged its limit: 1,000 cheap matches or
/// ten at the full limit, about 20 ms of CPU at worst. Past it the call is refused.
pub const CALL_BACKTRACK_BUDGET: usize = 1_000_000;

/// Longest string, in characters, a `pattern` that needs backtracking (lookaround, backreferences) is matched
/// against. Such a match costs up to the square of the string's length whatever the backtracking limit, so a
/// longer string is refused with a violation saying so, never accepted unchecked.
pub const MAX_BACKTRACKING_SUBJECT: usize = 1_000;

/// The budget of the call being checked on this thread: steps left, and why a check could not finish.
struct Budget {
    left: usize,
    unfinished: Option<String>,
}

thread_local! {
    static BUDGET: RefCell<Option<Budget>> = const { RefCell::new(None) };
}

/// Runs `work` (one call's checks, on this thread) within one budget of backtracking steps, and answers its
/// result and, if a pattern check could not finish, why: the caller then refuses the call whatever `work`
/// decided. Nested, the inner work shares the outer budget and the outer caller answers.
pub fn within_budget<T>(work: impl FnOnce() -> T) -> (T, Option<String>) {
    let outer = BUDGET.with_borrow(Option::is_some);
    if outer {
        return (work(), None);
    }
    BUDGET.set(Some(Budget { left: CALL_BACKTRACK_BUDGET, unfinished: None }));
    // Cleared again even if `work` panics, so the next call on this thread starts afresh.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            BUDGET.set(None);
        }
    }
    let reset = Reset;
    let out = work();
    let unfinished = BUDGET.with_borrow_mut(|b| b.as_mut().and_then(|b| b.unfinished.take()));
    drop(reset);
    (out, unfinished)
}

/// Takes `steps` from the call's budget; false once it cannot (outside a call, there is no budget to spend).
fn charge(steps: usize) -> bool {
    BUDGET.with_borrow_mut(|budget| match budget {
        Some(b) if b.left < steps => false,
        Some(b) => {
            b.left -= steps;
            true
        }
        None => true,
    })
}

/// Records why a check could not finish, the first reason only, and spends what is left: the call is refused
/// whatever else is found, so no more backtracking is worth doing.
fn unfinished(reason: &str) {
    BUDGET.with_borrow_mut(|budget| {
        if let Some(b) = budget {
            b.unfinished.get_or_insert_with(|| reason.to_owned());
            b.left = 0;
        }
    });
}

/// A `pattern`, compiled with the linear-time `regex` engine when it can be, and with backtracking
/// (`fancy_regex`, bounded per match and per call) only when it needs lookaround or backreferences.
#[derive(Debug)]
pub enum BoundedPattern {
    Linear(regex::Regex),
    /// The same pattern with a small limit, tried first, and with the full one.
    Backtracking {
        cheap: fancy_regex::Regex,
        full: fancy_regex::Regex,
    },
}

impl BoundedPattern {
    /// Translates the ECMA-262 `pattern` as jsonschema does, then compiles it.
    pub fn new(pattern: &str) -> Result<Self, String> {
        let invalid = || format!("{:?} is not a valid regular expression", bounded_quote(pattern));
        let translated = jsonschema_regex::to_rust_regex(pattern).map_err(|()| invalid())?;
        if let Ok(linear) = regex::Regex::new(&translated) {
            return Ok(Self::Linear(linear));
        }
        let build = |limit| fancy_regex::RegexBuilder::new(&translated).backtrack_limit(limit).build();
        match (build(CHEAP_BACKTRACK_LIMIT), build(REGEX_BACKTRACK_LIMIT)) {
            (Ok(cheap), Ok(full)) => Ok(Self::Backtracking { cheap, full }),
            _ => Err(invalid()),
        }
    }

    /// Whether `text` matches, or why that cannot be decided within the bounds (the value is then refused, and
    /// so is the call being checked on this thread, whatever the schema makes of the miss).
    pub fn is_match(&self, text: &str) -> Result<bool, String> {
        let outcome = match self {
            Self::Linear(regex) => return Ok(regex.is_match(text)),
            Self::Backtracking { cheap, full } => Self::backtrack(cheap, full, text),
        };
        if let Err(reason) = &outcome {
            unfinished(&format!("a string {reason}"));
        }
        outcome
    }

    fn backtrack(cheap: &fancy_regex::Regex, full: &fancy_regex::Regex, text: &str) -> Result<bool, String> {
        let pattern = || bounded_quote(full.as_str());
        // A byte count at most the limit is at most that many characters: skip counting them.
        if text.len() > MAX_BACKTRACKING_SUBJECT && text.chars().count() > MAX_BACKTRACKING_SUBJECT {
            return Err(format!(
                "is longer than {MAX_BACKTRACKING_SUBJECT} characters, the most checked against the pattern {:?}, which needs backtracking",
                pattern()
            ));
        }
        let spent = || {
            format!(
                "could not be checked against the pattern {:?}: the call's budget of {CALL_BACKTRACK_BUDGET} backtracking steps is spent",
                pattern()
            )
        };
        if !charge(CHEAP_BACKTRACK_LIMIT) {
            return Err(spent());
        }
        if let Ok(matched) = cheap.is_match(text) {
            return Ok(matched);
        }
        if !charge(REGEX_BACKTRACK_LIMIT) {
            return Err(spent());
        }
        full.is_match(text).map_err(|_| {
            format!("could not be checked against the pattern {:?} within its backtracking limit", pattern())
        })
    }
}

/// Whether `schema` has a `pattern` that needs backtracking, anywhere.
pub fn backtracks(schema: &Value) -> bool {
    let needs = |pattern: &str| {
        jsonschema_regex::to_rust_regex(pattern).is_ok_and(|translated| regex::Regex::new(&translated).is_err())
    };
    match schema {
        Value::Object(map) => map.iter().any(|(key, value)| match value {
            Value::String(pattern) if key == "pattern" => needs(pattern),
            other => backtracks(other),
        }),
        Value::Array(items) => items.iter().any(backtracks),
        _ => false,
    }
}

/// `text` cut to a bound, for quoting schema or model text in a message.
pub fn bounded_quote(text: &str) -> String {
    const MAX: usize = 120;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The `pattern` keyword, matched through `BoundedPattern`.
struct PatternKeyword {
    pattern: BoundedPattern,
    source: String,
}

pub fn pattern_keyword<'a>(
    _: &'a Map<String, Value>,
    value: &'a Value,
    _: Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    let Value::String(source) = value else { return Err(ValidationError::schema("`pattern` must be a string")) };
    let pattern = BoundedPattern::new(source).map_err(ValidationError::schema)?;
    Ok(Box::new(PatternKeyword { pattern, source: source.clone() }))
}

impl<'i> Keyword<'i> for PatternKeyword {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        let Value::String(text) = instance else { return Ok(()) };
        match self.pattern.is_match(text) {
            Ok(true) => Ok(()),
            // The value is not quoted: a message may describe an injected value, which nobody may see.
            Ok(false) => Err(ValidationError::custom(format!(
                "the string does not match the pattern {:?}",
                bounded_quote(&self.source)
            ))),
            Err(reason) => Err(ValidationError::custom(format!("the string {reason}"))),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        instance.as_str().is_none_or(|text| self.pattern.is_match(text) == Ok(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catastrophic_pattern_spends_the_calls_budget_and_says_so() {
        let pattern = BoundedPattern::new(r"^(a|a)+\1$").unwrap();
        let subject = format!("{}b", "a".repeat(24));
        let (outcomes, unfinished) = within_budget(|| (0..500).map(|_| pattern.is_match(&subject)).collect::<Vec<_>>());
        let refused = outcomes.iter().filter(|o| o.is_err()).count();
        assert_eq!(refused, 500, "the first that cannot finish spends the budget");
        assert!(unfinished.is_some_and(|r| r.contains("backtracking")));
    }

    #[test]
    fn matches_that_each_finish_spend_the_budget_at_their_limits() {
        let pattern = BoundedPattern::new(r"^(a|a)+\1$").unwrap();
        let BoundedPattern::Backtracking { cheap, full } = &pattern else { panic!("a backreference backtracks") };
        // A subject the cheap try cannot decide and the full limit can.
        let subject = (4..20)
            .map(|n| format!("{}b", "a".repeat(n)))
            .find(|s| cheap.is_match(s).is_err() && full.is_match(s).is_ok())
            .expect("a subject between the two limits");
        let (outcomes, unfinished) = within_budget(|| (0..30).map(|_| pattern.is_match(&subject)).collect::<Vec<_>>());
        let finished = outcomes.iter().take_while(|o| **o == Ok(false)).count();
        let most = CALL_BACKTRACK_BUDGET / (CHEAP_BACKTRACK_LIMIT + REGEX_BACKTRACK_LIMIT);
        assert_eq!(finished, most, "each is charged both limits");
        assert!(unfinished.is_some_and(|r| r.contains("budget")));
    }

    #[test]
    fn a_schema_backtracks_when_one_of_its_patterns_does() {
        let linear = serde_json::json!({"properties": {"a": {"pattern": "^[a-z]+$"}, "pattern": {"type": "string"}}});
        let lookahead = serde_json::json!({"anyOf": [{"items": {"pattern": "^(?!x)"}}]});
        assert!(!backtracks(&linear) && backtracks(&lookahead));
    }

    #[test]
    fn cheap_matches_fit_the_budget_and_outside_a_call_nothing_is_recorded() {
        let pattern = BoundedPattern::new(r"^(?!admin)\w+$").unwrap();
        let (all, unfinished) = within_budget(|| (0..900).all(|i| pattern.is_match(&format!("user{i}")) == Ok(true)));
        assert!(all && unfinished.is_none());
        assert_eq!(pattern.is_match("admin"), Ok(false));
    }
}
