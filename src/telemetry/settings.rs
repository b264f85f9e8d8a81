//! `[telemetry]`: where traces and metrics go, and whether call payloads are recorded.

use serde::Deserialize;
use std::net::SocketAddr;
use std::time::Duration;

/// The span queue is allocated whole at start, so a typo must not ask for gigabytes.
const MAX_QUEUED_SPANS: usize = 1_000_000;

/// The service name spans and metrics carry, unless `service_name` says otherwise.
pub const DEFAULT_SERVICE_NAME: &str = "toolgate";
/// How often span batches and metrics are sent.
pub const DEFAULT_EXPORT_INTERVAL: Duration = Duration::from_secs(5);
/// How long one export may take.
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// Spans waiting for export beyond this are dropped.
pub const DEFAULT_MAX_QUEUED_SPANS: usize = 2_048;
/// A recorded argument or result is cut past this many bytes.
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 1_024;

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTelemetry {
    /// OTLP/gRPC collector, such as `http://127.0.0.1:4317` or `https://collector:4317`. Nothing is exported when
    /// unset.
    pub otlp_endpoint: Option<String>,
    pub service_name: Option<String>,
    /// How often span batches and metrics are sent.
    pub export_interval_ms: Option<u64>,
    /// How long one export may take before it is abandoned.
    pub export_timeout_ms: Option<u64>,
    /// Spans waiting for export beyond this are dropped (and counted), never waited for.
    pub max_queued_spans: Option<usize>,
    /// Serves Prometheus text at `/metrics` on this address, closed by the admin token when one is set.
    pub prometheus_listen: Option<String>,
    /// Records arguments and results on spans, truncated. Injected parameters are never recorded.
    pub record_payloads: Option<bool>,
    pub max_payload_bytes: Option<usize>,
}

/// Telemetry as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetrySettings {
    pub otlp_endpoint: Option<String>,
    pub service_name: String,
    pub export_interval: Duration,
    pub export_timeout: Duration,
    pub max_queued_spans: usize,
    pub prometheus_listen: Option<SocketAddr>,
    /// `Some(max bytes)` when payloads are recorded.
    pub record_payloads: Option<usize>,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            service_name: DEFAULT_SERVICE_NAME.into(),
            export_interval: DEFAULT_EXPORT_INTERVAL,
            export_timeout: DEFAULT_EXPORT_TIMEOUT,
            max_queued_spans: DEFAULT_MAX_QUEUED_SPANS,
            prometheus_listen: None,
            record_payloads: None,
        }
    }
}

impl TelemetrySettings {
    /// `endpoint` (a flag or `OTEL_EXPORTER_OTLP_ENDPOINT`) wins over the file.
    pub fn from_raw(raw: RawTelemetry, endpoint: Option<String>) -> Result<Self, String> {
        let otlp_endpoint = endpoint.or(raw.otlp_endpoint).filter(|e| !e.trim().is_empty());
        if let Some(endpoint) = &otlp_endpoint {
            let must = "must be http://host:port, or https://host:port for TLS";
            let parsed = url::Url::parse(endpoint).map_err(|e| format!("otlp_endpoint {endpoint:?} {must}: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                return Err(format!("otlp_endpoint {endpoint:?} {must}"));
            }
        }
        let prometheus_listen = match raw.prometheus_listen.filter(|l| !l.trim().is_empty()) {
            Some(text) => Some(text.parse().map_err(|e| format!("prometheus_listen {text:?}: {e}"))?),
            None => None,
        };
        let settings = Self {
            otlp_endpoint,
            service_name: raw.service_name.unwrap_or_else(|| DEFAULT_SERVICE_NAME.into()),
            export_interval: raw.export_interval_ms.map_or(DEFAULT_EXPORT_INTERVAL, Duration::from_millis),
            export_timeout: raw.export_timeout_ms.map_or(DEFAULT_EXPORT_TIMEOUT, Duration::from_millis),
            max_queued_spans: raw.max_queued_spans.unwrap_or(DEFAULT_MAX_QUEUED_SPANS),
            prometheus_listen,
            record_payloads: raw
                .record_payloads
                .unwrap_or(false)
                .then(|| raw.max_payload_bytes.unwrap_or(DEFAULT_MAX_PAYLOAD_BYTES)),
        };
        if settings.max_queued_spans > MAX_QUEUED_SPANS {
            // The queue's room is allocated up front.
            return Err(format!("max_queued_spans must be at most {MAX_QUEUED_SPANS}"));
        }
        let zero = [
            ("export_interval_ms", settings.export_interval.is_zero()),
            ("export_timeout_ms", settings.export_timeout.is_zero()),
            ("max_queued_spans", settings.max_queued_spans == 0),
            ("max_payload_bytes", settings.record_payloads == Some(0)),
        ];
        match zero.iter().find(|(_, is_zero)| *is_zero) {
            Some((name, _)) => Err(format!("{name} must be greater than 0")),
            None => Ok(settings),
        }
    }

    /// Whether anything leaves the process: OTLP export or a Prometheus endpoint.
    pub fn exports(&self) -> bool {
        self.otlp_endpoint.is_some() || self.prometheus_listen.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, endpoint: Option<&str>) -> Result<TelemetrySettings, String> {
        TelemetrySettings::from_raw(toml::from_str(text).unwrap(), endpoint.map(str::to_owned))
    }

    #[test]
    fn nothing_is_exported_by_default_and_the_flag_wins_over_the_file() {
        let defaults = TelemetrySettings::default();
        assert!(!defaults.exports() && defaults.record_payloads.is_none());
        let file = "otlp_endpoint = \"http://collector:4317\"\nrecord_payloads = true\n";
        let settings = parse(file, Some("http://127.0.0.1:4317")).unwrap();
        assert_eq!(settings.otlp_endpoint.as_deref(), Some("http://127.0.0.1:4317"));
        assert_eq!(settings.record_payloads, Some(1024));
        assert_eq!(parse(file, Some(" ")).unwrap().otlp_endpoint, None, "an empty value turns export off");
    }

    #[test]
    fn bad_values_are_refused_with_their_name() {
        let refused = |text: &str, expected: &str| {
            let err = parse(text, None).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        };
        refused("otlp_endpoint = \"127.0.0.1:4317\"", "must be http://host:port");
        refused("otlp_endpoint = \"grpc://collector:4317\"", "or https://host:port for TLS");
        assert!(parse("otlp_endpoint = \"https://collector:4317\"", None).is_ok(), "TLS to the collector");
        refused("prometheus_listen = \"localhost\"", "prometheus_listen");
        refused("export_interval_ms = 0", "export_interval_ms must be greater than 0");
        refused("max_queued_spans = 0", "max_queued_spans must be greater than 0");
        refused("max_queued_spans = 1000000000", "at most 1000000");
        refused("record_payloads = true\nmax_payload_bytes = 0", "max_payload_bytes");
    }
}
