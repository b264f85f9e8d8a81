//! The examples of `docs/policy.md` stay true: each `[[policy]]` block compiles as the config would load it, and
//! each rule decides a call it is written for (and lets pass one it is not).

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use toolgate::policy::rules::{Bindings, GatewayRules, Input, Verdict, judge};

/// 2026-11-28 10:00 UTC, a Saturday.
fn saturday() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_860_000)
}

/// 2026-11-25 11:00 UTC, a Wednesday.
fn wednesday() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_604_400)
}

fn rules() -> GatewayRules {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/policy.md")).unwrap();
    let blocks: Vec<&str> = doc.split("```toml\n").skip(1).map(|rest| rest.split("```").next().unwrap()).collect();
    assert_eq!(blocks.len(), 10, "ten examples");
    let config = blocks.concat();
    let raw: toolgate::config::RawConfig = toml::from_str(&config).expect("the examples are one valid config");
    let config = toolgate::Config::from_raw(raw, Default::default(), std::path::Path::new(".")).expect("they compile");
    assert_eq!(config.rules.len(), 10);
    Arc::try_unwrap(config.rules).unwrap()
}

struct Case {
    tool: &'static str,
    labels: &'static [(&'static str, &'static str)],
    tenant: &'static str,
    values: &'static [(&'static str, &'static str)],
    args: Value,
    now: SystemTime,
    expected: &'static str,
}

fn case(tool: &'static str, args: Value, expected: &'static str) -> Case {
    Case { tool, labels: &[], tenant: "", values: &[], args, now: wednesday(), expected }
}

fn decide(rules: &GatewayRules, c: &Case) -> String {
    let labels: BTreeMap<String, String> = c.labels.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
    let values: BTreeMap<String, String> = c.values.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
    let text = c.args.to_string();
    let input = Input {
        args: &c.args,
        args_bytes: text.len(),
        user_id: "u1",
        tenant: c.tenant,
        session_id: "s1",
        values: &values,
        tool: c.tool,
        labels: &labels,
        now: c.now,
    };
    match judge(&rules.for_tool(c.tool, &labels, &[]), &Bindings::new(&input)) {
        Verdict::Pass => "pass".into(),
        Verdict::Deny { rule, .. } => format!("deny {}", rule.name),
        Verdict::Review { rule, .. } => format!("review {}", rule.name),
    }
}

#[test]
fn the_ten_examples_compile_and_decide_the_calls_they_are_written_for() {
    let rules = rules();
    let outside: Vec<String> = (0..6).map(|i| format!("p{i}@other.example")).collect();
    let cases = [
        case("transfer", json!({"amount": 5000}), "review large-transfer"),
        case("transfer", json!({"amount": 3}), "pass"),
        Case { tenant: "acme", ..case("delete_file", json!({"path": "/etc/passwd"}), "deny acme-delete-tmp-only") },
        Case { tenant: "acme", ..case("files__delete_file", json!({"path": "/tmp/x"}), "pass") },
        Case { tenant: "other", ..case("delete_file", json!({"path": "/etc/passwd"}), "pass") },
        Case { values: &[("role", "intern")], now: saturday(), ..case("anything", json!({}), "review intern-weekend") },
        Case { values: &[("role", "intern")], ..case("anything", json!({}), "pass") },
        Case {
            labels: &[("billing", "metered")],
            values: &[("plan", "free")],
            ..case("charge", json!({"amount": 500}), "deny free-plan-limit")
        },
        Case {
            labels: &[("billing", "metered")],
            values: &[("plan", "pro")],
            ..case("charge", json!({"amount": 500}), "pass")
        },
        case("send_email", json!({"to": outside}), "review external-mass-mail"),
        case("send_email", json!({"to": ["a@acme.example", "b@other.example"]}), "pass"),
        Case {
            labels: &[("kind", "sql")],
            ..case("run_sql", json!({"query": "DROP TABLE users"}), "deny no-destructive-sql")
        },
        Case {
            labels: &[("kind", "sql")],
            ..case("run_sql", json!({"query": "delete from users;"}), "deny no-destructive-sql")
        },
        Case {
            labels: &[("kind", "sql")],
            ..case("run_sql", json!({"query": "delete from users where id = 4"}), "pass")
        },
        Case {
            now: saturday(),
            ..case("deploy", json!({"environment": "production"}), "review after-hours-production")
        },
        case("deploy", json!({"environment": "production"}), "pass"),
        case("bulk_close", json!({"ids": vec![1; 150]}), "deny batch-size"),
        Case {
            labels: &[("kind", "shell")],
            ..case("sh", json!({"command": "ls; sudo reboot"}), "deny shell-escalation")
        },
        Case { labels: &[("kind", "shell")], ..case("sh", json!({"command": "ls -la /srv"}), "pass") },
        case("export_records", json!({"fields": ["name", "iban"], "requested_by": "u1"}), "review pii-export"),
        case("export_records", json!({"fields": ["name", "iban"], "requested_by": "dpo"}), "pass"),
    ];
    for c in &cases {
        assert_eq!(decide(&rules, c), c.expected, "{} {}", c.tool, c.args);
    }
}
