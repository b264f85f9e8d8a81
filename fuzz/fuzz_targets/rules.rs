//! Fuzzes policy rules: the first line of the input is a rule's condition, the rest a call's arguments as JSON.
//! A condition either is refused where it is defined or compiles; a compiled rule, judged on any arguments,
//! answers (holds, does not, or cannot be told) within its bound: never a panic, a hang or a runaway allocation.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use std::time::SystemTime;
use toolgate::policy::rules::{Bindings, Input, PolicyRule, Rule, RuleAction};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (when, args) = text.split_once('\n').unwrap_or((text, "{}"));
    let rule = PolicyRule {
        name: "fuzzed".into(),
        when: when.into(),
        action: RuleAction::Deny,
        message: String::new(),
        on_error: Default::default(),
        model_fixable: false,
    };
    let Ok(rule) = Rule::compile(&rule) else { return };
    // Arguments as JSON (serde_json stops at 128 levels; the gateway's own limit is 64).
    let Ok(args) = serde_json::from_str::<serde_json::Value>(args) else { return };
    let (values, labels) = (BTreeMap::from([("plan".to_owned(), "free".to_owned())]), BTreeMap::new());
    let input = Input {
        args: &args,
        args_bytes: data.len(),
        user_id: "u1",
        tenant: "acme",
        session_id: "s1",
        values: &values,
        tool: "t",
        labels: &labels,
        now: SystemTime::UNIX_EPOCH,
    };
    let _ = rule.holds(&Bindings::new(&input));
});
