//! Table-driven tests of rules: each condition judged on a call, refused where it is defined with its position,
//! and bounded on calls large enough to make it costly.

use super::input::Bindings;
use super::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// 2026-11-28 10:00:00 UTC, a Saturday.
fn saturday() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_860_000)
}

struct Call {
    args: Value,
    text: String,
    values: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
}

impl Call {
    fn new(args: Value) -> Self {
        let values = BTreeMap::from([("plan".to_owned(), "free".to_owned())]);
        let labels = BTreeMap::from([("risk".to_owned(), "high".to_owned())]);
        Self { text: args.to_string(), args, values, labels }
    }

    fn input(&self) -> Input<'_> {
        Input {
            args: &self.args,
            args_bytes: self.text.len(),
            user_id: "alice",
            tenant: "acme",
            session_id: "s1",
            values: &self.values,
            tool: "transfer",
            labels: &self.labels,
            now: saturday(),
        }
    }
}

fn rule(when: &str) -> PolicyRule {
    PolicyRule {
        name: "r".into(),
        when: when.into(),
        action: RuleAction::Deny,
        message: String::new(),
        on_error: OnError::Deny,
        model_fixable: false,
    }
}

fn holds(when: &str, args: Value) -> Result<bool, String> {
    let compiled = Rule::compile(&rule(when)).unwrap_or_else(|e| panic!("{when}: {e}"));
    let call = Call::new(args);
    compiled.holds(&Bindings::new(&call.input()))
}

#[test]
fn conditions_read_the_call() {
    let order = json!({"amount": 5000, "currency": "EUR", "path": "/tmp/x", "roles": ["ops", "admin"],
        "items": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 12}], "order": {"customer": {"country": "FR"}},
        "ratio": 0.75, "big": 18446744073709551615u64});
    let cases: &[(&str, bool)] = &[
        // numeric
        ("args.amount > 1000", true),
        ("args.amount <= 1000", false),
        ("args.ratio > 0.5", true),
        ("args.amount * 2 == 10000", true),
        ("args.big > 0u", true),
        // string
        ("args.currency == 'EUR'", true),
        ("args.path.startsWith('/tmp/')", true),
        ("!args.path.startsWith('/etc')", true),
        ("args.path.matches('^/tmp/[a-z]+$')", true),
        ("args.currency.contains('U') && args.currency.endsWith('R')", true),
        // lists
        ("'admin' in args.roles", true),
        ("size(args.items) == 2", true),
        ("args.items.exists(i, i.qty > 10)", true),
        ("args.items.all(i, i.qty > 10)", false),
        ("args.items.map(i, i.qty).exists(q, q == 12)", true),
        ("args.items.filter(i, i.sku == 'b').size() == 1", true),
        // nested objects, and fields that may be absent
        ("args.order.customer.country == 'FR'", true),
        ("has(args.order.customer.vat)", false),
        ("has(args.coupon) && args.coupon != ''", false),
        // the context, which the model never writes
        ("context.user_id == 'alice' && context.tenant == 'acme' && context.session_id == 's1'", true),
        ("context.values['plan'] == 'free'", true),
        ("'plan' in context.values", true),
        // the tool
        ("tool.name == 'transfer' && tool.labels['risk'] == 'high'", true),
        // time
        ("now.getDayOfWeek() == 6", true),
        ("now.getHours() >= 9 && now.getHours() < 18", true),
        ("now.getHours('Europe/Paris') == 11 && now.getDayOfWeek('America/New_York') == 6", true),
        ("now > timestamp('2026-01-01T00:00:00Z')", true),
        ("now - timestamp('2026-11-28T09:00:00Z') == duration('1h')", true),
    ];
    for (when, expected) in cases {
        assert_eq!(holds(when, order.clone()), Ok(*expected), "{when}");
    }
}

#[test]
fn a_condition_that_cannot_be_told_is_an_error_not_a_verdict() {
    let cases: &[(&str, &str)] = &[
        ("args.missing > 1", "missing"),
        ("args.amount > 'many'", ""),
        ("args.amount / 0 > 1", ""),
        ("args.amount", "not a bool"),
        ("args.items[5].qty > 1", ""),
    ];
    for (when, says) in cases {
        let error = holds(when, json!({"amount": 3, "items": []})).expect_err(when);
        assert!(error.contains(says), "{when}: {error}");
    }
}

#[test]
fn a_bad_rule_is_refused_with_its_position() {
    let cases: &[(&str, usize, usize, &str)] = &[
        ("args.amount >", 1, 14, ""),
        ("args.amount > 1 &&\n  user.id == 'x'", 2, 3, "unknown variable `user`"),
        ("context.user == 'x'", 1, 8, "`context` has no field `user`"),
        ("tool.owner == 'x'", 1, 5, "`tool` has no field `owner`"),
        ("args.amount > 1 || exec('rm')", 1, 24, "unknown function `exec`"),
        ("args.a.exists(x, args.a.exists(y, args.a.exists(z, args.a.exists(w, true))))", 1, 65, "nest at most 3 deep"),
    ];
    for (when, line, column, says) in cases {
        match Rule::compile(&rule(when)) {
            Err(RuleError::Condition { line: l, column: c, reason, .. }) => {
                assert_eq!((l, c), (*line, *column), "{when}: {reason}");
                assert!(reason.contains(says), "{when}: {reason}");
            }
            other => panic!("{when}: {other:?}"),
        }
    }
    // A pattern written in the rule is compiled with it: a bad one is refused where it is defined.
    match Rule::compile(&rule("args.s.matches('(')")) {
        Err(RuleError::Condition { line: 1, reason, .. }) => {
            assert!(reason.contains("the pattern \"(\" of `matches` is not a regular expression"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert!(Rule::compile(&rule("args.s.matches('^[a-z]+$') && matches(args.s, 'a')")).is_ok());
    for (bad, says) in [("", "name"), ("has space", "name"), (&"x".repeat(65), "name")] {
        let error = Rule::compile(&PolicyRule { name: bad.to_owned(), ..rule("true") }).unwrap_err();
        assert!(error.to_string().contains(says), "{error}");
    }
    let long = PolicyRule { when: format!("args.s == '{}'", "x".repeat(MAX_CONDITION_BYTES)), ..rule("true") };
    assert!(Rule::compile(&long).unwrap_err().to_string().contains("over 4096 bytes"));
    // Nesting: brackets the parser recurses through (its own limit is 96), and nodes the evaluation recurses through.
    let parens = format!("{}1{} == 1", "(".repeat(90), ")".repeat(90));
    assert!(Rule::compile(&rule(&parens)).is_ok(), "parentheses add no node: the parser, on its own stack, copes");
    let too_many = format!("{}1{} == 1", "(".repeat(200), ")".repeat(200));
    assert!(Rule::compile(&rule(&too_many)).is_err(), "past the parser's limit: refused, not a crash");
    let lists = format!("{}{} == []", "[".repeat(40), "]".repeat(40));
    let deep = Rule::compile(&rule(&lists)).unwrap_err().to_string();
    assert!(deep.contains("nests deeper than 32"), "{deep}");
    let chain = format!("{} > 0", vec!["args.n"; 40].join(" + "));
    assert!(Rule::compile(&rule(&chain)).unwrap_err().to_string().contains("nests deeper"));
    let twice = compile_all(&[rule("true"), rule("false")]).unwrap_err();
    assert!(twice.to_string().contains("same name"), "{twice}");
}

#[test]
fn every_function_a_rule_may_call_exists() {
    for (when, args) in [
        ("size('ab') == 2 && int('3') == 3 && uint(3) == 3u && double(1) == 1.0", json!({})),
        ("string(1) == '1' && bool('true') && now.getDate() > 0 && now.getDayOfMonth() >= 0", json!({})),
        ("now.getDayOfYear() >= 0 && now.getFullYear() == 2026 && now.getMonth() == 10", json!({})),
        ("now.getMinutes() == 0 && now.getSeconds() == 0 && now.getMilliseconds() == 0", json!({})),
        ("-args.n == -1 && args.n - 1 == 0 && args.n % 1 == 0 && args.n != 2", json!({"n": 1})),
        ("args.n < 2 && args.n <= 1 && args.n >= 1 && (args.n > 0 ? true : false)", json!({"n": 1})),
    ] {
        assert_eq!(holds(when, args), Ok(true), "{when}");
    }
}

fn named(name: &str, when: &str, action: RuleAction, on_error: OnError) -> Arc<Rule> {
    let rule = PolicyRule {
        name: name.into(),
        when: when.into(),
        action,
        message: format!("{name} says no"),
        on_error,
        model_fixable: false,
    };
    Arc::new(Rule::compile(&rule).unwrap())
}

fn verdict(rules: &[Arc<Rule>], args: Value) -> (String, Option<String>) {
    let call = Call::new(args);
    match judge(rules, &Bindings::new(&call.input())) {
        Verdict::Pass => ("pass".into(), None),
        Verdict::Deny { rule, error } => (format!("deny {}", rule.name), error),
        Verdict::Review { rule, error } => (format!("review {}", rule.name), error),
    }
}

#[test]
fn rules_are_judged_in_order_and_a_denial_wins() {
    use OnError::{Allow, Deny as OnDeny, Review as OnReview};
    use RuleAction::{Deny, Review};
    let big = named("big", "args.amount > 1000", Review, OnDeny);
    let huge = named("huge", "args.amount > 100000", Deny, OnDeny);
    let weekend = named("weekend", "now.getDayOfWeek() == 6", Review, OnDeny);
    let broken_allow = named("lenient", "args.nothing > 1", Deny, Allow);
    let broken_review = named("careful", "args.nothing > 1", Deny, OnReview);
    let broken_deny = named("strict", "args.nothing > 1", Review, OnDeny);
    let cases: &[(&[&Arc<Rule>], i64, &str)] = &[
        (&[&big, &huge], 3, "pass"),
        (&[&big, &huge], 5000, "review big"),
        (&[&big, &huge], 500_000, "deny huge"),
        (&[&weekend, &big], 5000, "review weekend"),
        (&[&broken_allow], 3, "pass"),
        (&[&broken_review, &big], 3, "review careful"),
        (&[&big, &broken_deny], 3, "deny strict"),
    ];
    for (rules, amount, expected) in cases {
        let rules: Vec<Arc<Rule>> = rules.iter().map(|r| Arc::clone(r)).collect();
        let (got, error) = verdict(&rules, json!({"amount": amount}));
        assert_eq!(got, *expected, "{amount}");
        let from_error = ["careful", "strict"].iter().any(|name| expected.ends_with(name));
        assert_eq!(error.is_some(), from_error, "{expected}: {error:?}");
    }
}

#[test]
fn a_costly_rule_is_not_run_on_a_call_large_enough_to_make_it_costly() {
    // A list built in a loop over the arguments, each element a copy of a string from them: quadratic.
    let costly = Rule::compile(&rule("args.xs.map(x, args.s + args.s).size() > 0")).unwrap();
    let small = Call::new(json!({"xs": [1, 2, 3], "s": "ab"}));
    assert_eq!(costly.holds(&Bindings::new(&small.input())), Ok(true));
    let large = Call::new(json!({"xs": vec![1; 20_000], "s": "x".repeat(20_000)}));
    let error = costly.holds(&Bindings::new(&large.input())).unwrap_err();
    assert!(error.contains("over its budget"), "{error}");
    // A linear rule runs on the largest arguments the gateway takes.
    let linear = Rule::compile(&rule("args.xs.exists(x, x == 2) || args.s.contains('y')")).unwrap();
    let largest = Call::new(json!({"xs": vec![1; 400_000], "s": "x".repeat(200_000)}));
    assert!(linear.work_bound(u64::try_from(largest.text.len()).unwrap(), 400_000) < MAX_WORK);
    assert_eq!(linear.holds(&Bindings::new(&largest.input())), Ok(false));
    // A string doubled by nesting is bounded by the expression, not by a loop: linear.
    let doubled = Rule::compile(&rule("size(args.s + args.s + args.s + args.s) > 3")).unwrap();
    assert_eq!(doubled.holds(&Bindings::new(&largest.input())), Ok(true));
}

#[test]
fn a_bound_grows_as_the_rule_does() {
    // (condition, how the bound grows when the call doubles in bytes and in elements)
    let cases: &[(&str, u64)] = &[
        ("args.amount > 1000", 2),
        ("args.xs.exists(x, x == 2) || args.s.contains('y')", 2),
        ("args.to.filter(r, !r.endsWith('@acme.com')).size() > 50", 4),
        ("args.a.exists(x, args.a.exists(y, x == y))", 4),
        ("args.a.exists(x, args.a.exists(y, args.a.exists(z, x == y && y == z)))", 8),
    ];
    for (when, factor) in cases {
        let cost = Rule::compile(&rule(when)).unwrap().cost;
        let (small, doubled) = (cost.work(100_000, 5_000), cost.work(200_000, 10_000));
        let growth = doubled as f64 / small as f64;
        assert!(growth <= *factor as f64 * 1.05 && growth > *factor as f64 * 0.45, "{when}: x{growth:.2}");
    }
}
