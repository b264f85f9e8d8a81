//! The configuration read from files, flags and the environment: defaults, precedence, and refusals.

use super::*;

#[test]
fn flags_win_over_the_file_and_unknown_fields_are_refused() {
    let raw: RawConfig = toml::from_str("listen = \"127.0.0.1:1\"\n[limits]\nmax_depth = 8\n").unwrap();
    let overrides = Overrides { listen: Some("127.0.0.1:2".into()), ..Overrides::default() };
    let config = Config::from_raw(raw, overrides, Path::new(".")).unwrap();
    assert_eq!(config.listen, Address::parse("127.0.0.1:2").unwrap());
    assert_eq!(config.parse_limits.max_depth, 8);
    let err = toml::from_str::<RawConfig>("lisen = \"x\"").unwrap_err().to_string();
    assert!(err.contains("unknown field `lisen`"), "{err}");
}

#[test]
fn the_compiled_validator_bound_is_set_and_must_be_positive() {
    let set = |text: &str| Config::from_raw(toml::from_str(text).unwrap(), Overrides::default(), Path::new("."));
    let config = set("[limits]\nmax_compiled_validators = 10\n").unwrap();
    assert_eq!(config.documents.validators().capacity(), 10);
    assert_eq!(Config::default().documents.validators().capacity(), DEFAULT_COMPILED_VALIDATORS);
    let err = set("[limits]\nmax_compiled_validators = 0\n").unwrap_err().to_string();
    assert!(err.contains("limits.max_compiled_validators must be greater than 0"), "{err}");
}

#[test]
fn the_schema_size_bound_is_set_and_must_be_positive() {
    let set = |text: &str| Config::from_raw(toml::from_str(text).unwrap(), Overrides::default(), Path::new("."));
    assert_eq!(set("[limits]\nmax_schema_bytes = 4096\n").unwrap().documents.max_schema_bytes(), 4096);
    assert_eq!(Config::default().documents.max_schema_bytes(), DEFAULT_MAX_SCHEMA_BYTES);
    let err = set("[limits]\nmax_schema_bytes = 0\n").unwrap_err().to_string();
    assert!(err.contains("limits.max_schema_bytes must be greater than 0"), "{err}");
}

#[test]
fn tokens_budgets_and_review_settings() {
    let raw: RawConfig = toml::from_str(
        "[auth]\nadmin_token = \"a\"\n[budgets]\nmax_calls = 5\nmax_tool_calls = 0\n[review]\nmax_wait_ms = 10\n",
    )
    .unwrap();
    let overrides = Overrides { data_token: Some("d".into()), ..Overrides::default() };
    let config = Config::from_raw(raw, overrides, Path::new(".")).unwrap();
    assert_eq!(config.tokens, Tokens { admin: Some("a".into()), data: Some("d".into()), review: None });
    let shown = "Tokens { admin: \"set\", data: \"set\", review: \"unset\" }";
    assert_eq!(format!("{:?}", config.tokens), shown, "never logged");
    assert_eq!(
        (config.policy.budgets.max_calls, config.policy.budgets.max_tool_calls),
        (Some(5), None),
        "0 is unlimited"
    );
    assert_eq!(config.review.max_wait, Duration::from_millis(10));
    let empty: RawConfig = toml::from_str("[auth]\ndata_token = \" \"\n").unwrap();
    let err = Config::from_raw(empty, Overrides::default(), Path::new(".")).unwrap_err().to_string();
    assert!(err.contains("auth.data_token is empty"), "{err}");
}

#[test]
fn the_idempotency_window_and_bound_are_set() {
    let set = |text: &str| Config::from_raw(toml::from_str(text).unwrap(), Overrides::default(), Path::new("."));
    assert_eq!(Config::default().idempotency.window, Duration::from_secs(600));
    let config = set("[idempotency]\nwindow_ms = 0\nmax_entries = 5\n").unwrap();
    assert_eq!((config.idempotency.window, config.idempotency.max_entries), (Duration::ZERO, 5));
    let err = set("[idempotency]\nmax_entries = 0\n").unwrap_err().to_string();
    assert!(err.contains("idempotency.max_entries must be greater than 0"), "{err}");
    assert_eq!(Config::default().idempotency.max_bytes, 64 << 20);
    assert_eq!(set("[idempotency]\nmax_bytes = 4096\n").unwrap().idempotency.max_bytes, 4096);
    let err = set("[idempotency]\nmax_bytes = 0\n").unwrap_err().to_string();
    assert!(err.contains("idempotency.max_bytes must be greater than 0"), "{err}");
}

#[test]
fn static_tools_parse() {
    let raw: RawConfig = toml::from_str(
        r#"
        [[tools]]
        name = "get_weather"
        input_schema = { type = "object", properties = { city = { type = "string" } } }
        backend = { http = { url = "http://127.0.0.1:8080/weather" } }
        "#,
    )
    .unwrap();
    assert_eq!(raw.tools[0].name, "get_weather");
}

#[test]
fn mcp_servers_parse_with_their_overlays_and_are_checked() {
    let text = r#"
        [[mcp_servers]]
        name = "files"
        command = "npx"
        args = ["-y", "server"]
        env = { LOG_LEVEL = "warn" }

        [mcp_servers.overlays.read_file]
        inject = [{ param = "user", from = "user_id" }]
        limits = { rate = "10/s", timeout_ms = 5000 }
        "#;
    let config = Config::from_raw(toml::from_str(text).unwrap(), Overrides::default(), Path::new(".")).unwrap();
    let overlay = &config.mcp_servers[0].overlays["read_file"];
    assert_eq!((overlay.inject[0].param.as_str(), overlay.limits.timeout_ms), ("user", 5000));
    let twice = format!("{text}\n[[mcp_servers]]\nname = \"files\"\nurl = \"http://127.0.0.1:1/mcp\"\n");
    let err = Config::from_raw(toml::from_str(&twice).unwrap(), Overrides::default(), Path::new("."));
    assert!(err.unwrap_err().to_string().contains("\"files\" is declared twice"));
    let bad: RawConfig = toml::from_str("[[mcp_servers]]\nname = \"x\"\n").unwrap();
    let err = Config::from_raw(bad, Overrides::default(), Path::new(".")).unwrap_err().to_string();
    assert!(err.contains("mcp_servers[0] (x): needs a transport"), "{err}");
}

#[test]
fn the_example_config_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/toolgate.toml");
    let config = Config::load(Some(&path), Overrides::default()).unwrap();
    assert_eq!((config.listen.to_string(), config.tools.len()), ("127.0.0.1:50051".to_owned(), 1));
}

#[test]
fn the_otlp_certificate_variables_give_the_collector_its_own_tls_files() {
    let from = |overrides: Overrides| Config::from_raw(RawConfig::default(), overrides, Path::new("."));
    assert_eq!(from(Overrides::default()).unwrap().tls.collector, None, "none set: [tls.client] is used");
    let overrides = Overrides {
        otlp_certificate: Some("ca.pem".into()),
        otlp_client_certificate: Some("client.pem".into()),
        otlp_client_key: Some("client-key.pem".into()),
        ..Overrides::default()
    };
    let files = from(overrides).unwrap().tls.collector.unwrap();
    assert_eq!((files.ca.unwrap(), files.key.unwrap()), ("ca.pem".into(), "client-key.pem".into()));
    let half = Overrides { otlp_client_certificate: Some("client.pem".into()), ..Overrides::default() };
    assert!(from(half).unwrap_err().to_string().contains("OTEL_EXPORTER_OTLP_CLIENT_KEY"));
}

#[test]
fn an_empty_file_is_every_subsystems_defaults() {
    use crate::pipeline::{ParseLimits, RepairSettings};
    use crate::telemetry::TelemetrySettings;
    let config = Config::default();
    assert_eq!(config.policy, PolicySettings::default());
    assert_eq!(config.review, ReviewSettings::default());
    assert_eq!(config.idempotency, IdempotencySettings::default());
    assert_eq!(config.telemetry, TelemetrySettings::default());
    assert_eq!(config.parse_limits, ParseLimits::default());
    assert_eq!(config.repair, RepairSettings::default());
    assert_eq!(config.mcp_front, McpFrontSettings::default());
    assert_eq!(config.console, ConsoleSettings::default());
    assert_eq!(config.tls, TlsSettings::default());
    assert_eq!(config.cluster, None);
    let limits = (config.max_request_bytes, config.max_result_bytes, config.max_batch_calls, config.batch_concurrency);
    assert_eq!(
        limits,
        (DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_RESULT_BYTES, DEFAULT_MAX_BATCH_CALLS, DEFAULT_BATCH_CONCURRENCY)
    );
    assert_eq!((config.default_timeout, config.connect_timeout), (DEFAULT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT));
    assert_eq!(config.max_calls_in_flight, DEFAULT_CALLS_IN_FLIGHT);
}

#[test]
fn a_table_sets_only_what_it_names() {
    let text = "[budgets]\nmax_sessions = 7\n[review]\nmax_pending = 3\n[idempotency]\nwindow_ms = 0\n";
    let config = Config::from_raw(toml::from_str(text).unwrap(), Overrides::default(), Path::new(".")).unwrap();
    assert_eq!(config.policy, PolicySettings { max_sessions: 7, ..PolicySettings::default() });
    assert_eq!(config.review, ReviewSettings { max_pending: 3, ..ReviewSettings::default() });
    assert_eq!(config.idempotency, IdempotencySettings { window: Duration::ZERO, ..IdempotencySettings::default() });
}

#[test]
fn the_token_variables_are_read_from_the_environment_given() {
    let text =
        "[mcp_front]\nlisten = \"0.0.0.0:8808\"\n[[mcp_front.tokens]]\ntoken_env = \"AGENT_TOKEN\"\nuser_id = \"a\"\n";
    let load = |env: &dyn Fn(&str) -> Option<String>| {
        Config::from_raw_in(toml::from_str(text).unwrap(), Overrides::default(), Path::new("."), env)
    };
    let config = load(&|name| (name == "AGENT_TOKEN").then(|| "t0ken".to_owned())).unwrap();
    assert_eq!(config.mcp_front.tokens[0].0, "t0ken");
    let err = load(&|_| None).unwrap_err().to_string();
    assert!(err.contains("\"AGENT_TOKEN\" is not set"), "{err}");
}
