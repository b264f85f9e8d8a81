//! Whether the words leading to a call declare it an action taken now: the allowlist of intent, in English.
//!
//! A lead-in passes when it is nothing, a presentation, the speaker acting, a purpose or step heading, a label,
//! or a value named in code. Anything else, another language included, does not: outside a template's tags the
//! default is no call.

/// Whether a lead-in sentence declares what follows an action taken now (English only): nothing at all, a
/// presentation (`here is`, `the following`), the speaker acting (`I'll`, `let me`, `calling`), a purpose or a
/// step heading (`To book the table:`, `First, convert the amount:`), a label (`Function call:`), or a value
/// named in code (`result = `).
pub fn declares_action(sentence: &str) -> bool {
    let trimmed = sentence.trim();
    let heading = trimmed.ends_with(':');
    if let Some(name) = trimmed.strip_suffix('=') {
        let name = name.trim_end();
        return !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    }
    let (normal, numbered) = normalize(trimmed);
    let (plain, stepped) = without_fillers(&normal);
    let stepped = stepped || numbered;
    if acts(&plain, heading, stepped) {
        return true;
    }
    // `Based on the question, here is the call:`: what follows an opening clause.
    let clause = CLAUSES.iter().any(|c| plain.starts_with(c));
    clause && plain.split_once(", ").is_some_and(|(_, rest)| acts(&without_fillers(rest).0, heading, stepped))
}

const CLAUSES: [&str; 8] =
    ["based on", "according to", "given", "using", "with the", "in order to", "to answer", "to address"];

/// Words that present what follows.
const PRESENT: [&str; 9] =
    ["here is", "here are", "here's", "heres", "here goes", "below is", "below are", "the following", "these are"];
/// The speaker acting now.
const ACTING: [&str; 17] = [
    "i'll",
    "i will",
    "i am going to",
    "i'm going to",
    "let me",
    "let's",
    "let us",
    "we'll",
    "we will",
    "i shall",
    "i need to call",
    "we need to call",
    "i'm calling",
    "i am calling",
    "i'm now",
    "i am now",
    "now i'll",
];
/// A label a call stands under, `Function call:`.
const LABELS: [&str; 20] = [
    "tool call",
    "tool calls",
    "tools call",
    "tools calls",
    "function call",
    "function calls",
    "call",
    "calls",
    "answer",
    "solution",
    "response",
    "action",
    "actions",
    "code",
    "python",
    "python code",
    "json",
    "function calls in python",
    "tool_call",
    "functions",
];

fn acts(s: &str, heading: bool, stepped: bool) -> bool {
    if s.is_empty() {
        return true;
    }
    let starts = |list: &[&str]| list.iter().any(|p| s == *p || s.starts_with(&format!("{p} ")));
    if starts(&PRESENT) || starts(&ACTING) || LABELS.contains(&s) {
        return true;
    }
    let first = s.split(' ').next().unwrap_or_default();
    const NOT_VERBS: [&str; 9] =
        ["warning", "nothing", "something", "anything", "everything", "thing", "string", "morning", "evening"];
    if first.len() > 4 && first.ends_with("ing") && !NOT_VERBS.contains(&first) {
        return true; // `Calling get_weather for Oslo.`, `Checking both cities:`
    }
    if heading && (first == "to" || first == "for" || (stepped && TASK_VERBS.contains(&first))) {
        return true; // a purpose heading, `To book the table:`, or a step, `1. Convert the amount:`
    }
    // `The function call is:`, `The final answer is:`, `The appropriate function calls are:`
    let named = [" call", " answer", " solution", " code"].iter().any(|w| s.contains(w));
    let is = [" is", " are", " call", " calls"].iter().any(|end| s.ends_with(end));
    s.starts_with("the ") && named && is
}

/// Verbs a numbered or ordered step of a plan starts with (`2. Convert 15 km to miles:`).
const TASK_VERBS: [&str; 32] = [
    "call",
    "run",
    "use",
    "invoke",
    "execute",
    "get",
    "find",
    "search",
    "look",
    "fetch",
    "retrieve",
    "check",
    "calculate",
    "compute",
    "convert",
    "create",
    "book",
    "send",
    "set",
    "add",
    "update",
    "determine",
    "estimate",
    "predict",
    "generate",
    "analyze",
    "analyse",
    "combine",
    "query",
    "list",
    "sort",
    "translate",
];

/// The sentence in lower case, without list markers, emphasis, heading marks and its closing punctuation, and
/// whether it was numbered (`2. Convert…`).
fn normalize(sentence: &str) -> (String, bool) {
    let s = sentence.trim().to_lowercase().replace(['*', '#', '`'], "").replace('\u{2019}', "'");
    let s = s.trim_start_matches(|c: char| c == '-' || c == '•' || c.is_whitespace());
    let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let numbered = digits > 0 && s[digits..].starts_with(['.', ')']);
    let s = if numbered { &s[digits + 1..] } else { s };
    let s = s.trim().trim_end_matches([':', '.', '!', ' ']);
    (s.split_whitespace().collect::<Vec<_>>().join(" "), numbered)
}

/// The sentence without the words a model opens with before it says what it does (`Sure,`, `Therefore,`), and
/// whether one of them ordered it as a step (`First,`, `1.`).
fn without_fillers(s: &str) -> (String, bool) {
    const FILLERS: [&str; 20] = [
        "sure",
        "okay",
        "ok",
        "certainly",
        "of course",
        "alright",
        "all right",
        "great",
        "absolutely",
        "yes",
        "got it",
        "understood",
        "i can help with that",
        "i can help you with that",
        "happy to help",
        "so",
        "therefore",
        "thus",
        "hence",
        "and",
    ];
    const STEPS: [&str; 8] = ["first", "second", "third", "next", "then", "finally", "now", "lastly"];
    let mut s = s.to_owned();
    let mut stepped = false;
    loop {
        let before = s.len();
        for (filler, step) in FILLERS.iter().map(|f| (f, false)).chain(STEPS.iter().map(|f| (f, true))) {
            if let Some(rest) = s.strip_prefix(filler).filter(|r| r.is_empty() || r.starts_with([',', '!', '.', ' '])) {
                s = rest.trim_start_matches([',', '!', '.', ' ']).to_owned();
                stepped |= step;
            }
        }
        if s.len() == before {
            return (s, stepped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lead_ins_that_declare_an_action_now() {
        for lead in [
            "",
            "Here are the function calls to answer the question:",
            "Sure, here is the function call:",
            "Based on the question, here are the function calls:",
            "I'll check the weather in Oslo.",
            "Let me look that up.",
            "Calling get_weather for Oslo.",
            "1. To book a hotel room in Paris:",
            "For the Italian restaurant in New York:",
            "tools call:",
            "**Function call:**",
            "Therefore, the function call is:",
            "First, convert 5000 Japanese Yen to US Dollars using the 'currency_conversion' function:",
            "2. Retrieve the details of the case:",
            "Using the 'calculate_fitness' function, the function call is:",
            "result =",
            "The function call is:",
            "The appropriate function calls are:",
        ] {
            assert!(declares_action(lead), "{lead:?}");
        }
    }

    #[test]
    fn lead_ins_that_do_not() {
        for lead in [
            "I found two repositories named prod:",
            "Bad:",
            "Test 1 input:",
            "Beispiel:",
            "Por ejemplo:",
            "The request body looks like this:",
            "Warning: running this deletes everything:",
            "The user wrote:",
            "To delete a repository",
            "The function that would do it is:",
            "Convert the amount:",
            "1. Beispiel:",
        ] {
            assert!(!declares_action(lead), "{lead:?}");
        }
    }
}
