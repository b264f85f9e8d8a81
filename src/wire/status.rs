//! What a peer's gRPC headers say, read as tonic reads them: the `grpc-timeout` of a request, and the status of an
//! answer (`grpc-status` and `grpc-message`, an HTTP status without them, a reset stream). `tests.rs` holds each
//! reading beside tonic's own.

use http::HeaderMap;
use std::time::Duration;
use tonic::{Code, Status};

/// The caller's timeout, from `grpc-timeout` (`<up to 8 digits><unit>`, unit one of H M S m u n); `None` when
/// absent or malformed.
pub fn timeout(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The status a server put in `headers`: its code and its percent-decoded message. Not `Status::from_header_map`,
/// which panics on a `grpc-status-details-bin` that is not base64: a tool server must not be able to do that.
pub(super) fn status_in(headers: &HeaderMap) -> Option<Status> {
    let code = Code::from_bytes(headers.get("grpc-status")?.as_bytes());
    let message = headers.get("grpc-message").map_or_else(String::new, |message| {
        percent_encoding::percent_decode(message.as_bytes()).decode_utf8_lossy().into_owned()
    });
    Some(Status::new(code, message))
}

/// A transport failure as the status tonic reports for it (`Status::from_h2_error`), but for the reset reasons
/// gRPC does not name: INTERNAL here, UNKNOWN in tonic (`tests.rs` pins which). A stream the server cancelled may
/// have run, so CANCELLED is not retried; a refused stream, a connection that failed, and the other protocol errors
/// are.
/// How a TLS failure's message starts, so that the caller can name the endpoint.
pub(super) const TLS_FAILURE: &str = "TLS: ";

pub(super) fn transport(err: h2::Error) -> Status {
    use h2::Reason;
    // A TLS alert that came after the handshake (a server refusing the client's certificate, under TLS 1.3).
    if let Some(tls) = err.get_io().and_then(crate::tls::tls_failure) {
        return Status::unavailable(format!("{TLS_FAILURE}{tls}"));
    }
    let code = match err.reason() {
        _ if err.is_io() => Code::Unavailable,
        Some(Reason::REFUSED_STREAM) => Code::Unavailable,
        Some(Reason::CANCEL) => Code::Cancelled,
        Some(Reason::ENHANCE_YOUR_CALM) => Code::ResourceExhausted,
        Some(Reason::INADEQUATE_SECURITY) => Code::PermissionDenied,
        Some(_) => Code::Internal,
        None => Code::Unknown,
    };
    Status::new(code, format!("transport error: {err}"))
}

/// gRPC's mapping of an HTTP status that is not 200, as a client infers it.
pub(super) fn http_code(status: http::StatusCode) -> Code {
    match status.as_u16() {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502 | 503 | 504 => Code::Unavailable,
        _ => Code::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_are_read_in_every_unit_and_nonsense_is_ignored() {
        let of = |text: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("grpc-timeout", text.parse().unwrap());
            timeout(&headers)
        };
        assert_eq!(of("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(of("3M"), Some(Duration::from_secs(180)));
        assert_eq!(of("4S"), Some(Duration::from_secs(4)));
        assert_eq!(of("250m"), Some(Duration::from_millis(250)));
        assert_eq!(of("7u"), Some(Duration::from_micros(7)));
        assert_eq!(of("99999999n"), Some(Duration::from_nanos(99_999_999)));
        for bad in ["", "S", "5", "5x", "-5S", "123456789S", "1.5S"] {
            assert_eq!(of(bad), None, "{bad:?}");
        }
        assert_eq!(timeout(&HeaderMap::new()), None);
    }
}
