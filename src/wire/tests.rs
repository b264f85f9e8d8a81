//! Parity with tonic: each input read by this module and by tonic (its public functions where it has them, else a
//! copy of its private one, cited by file and version), with the same `Code` and message, or the difference pinned
//! and explained where it is on purpose. `tests/it/wire_parity.rs` does the same through both clients.

use super::frame::{FrameError, Gather, encode};
use super::status::{http_code, status_in, timeout, transport};
use super::unary::UnaryBody;
use crate::pb::v1::InvokeResponse;
use bytes::Bytes;
use futures::stream;
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use proptest::prelude::*;
use std::convert::Infallible;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;
use tonic::codec::{Codec, EncodeBody, Streaming};
use tonic::{Code, Status};
use tonic_prost::ProstCodec;

fn headers(fields: &[(&'static str, &[u8])]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in fields {
        map.insert(*name, HeaderValue::from_bytes(value).unwrap());
    }
    map
}

fn read(status: Option<Status>) -> Option<(Code, String)> {
    status.map(|s| (s.code(), s.message().to_owned()))
}

/// `google.rpc.Status { code: 3, message: "bad" }`, as `grpc-status-details-bin` carries it.
const DETAILS: &[u8] = b"CAMSA2JhZA==";

#[test]
fn a_status_in_headers_or_trailers_reads_as_tonic_reads_it() {
    let same: &[&[(&'static str, &[u8])]] = &[
        &[("grpc-status", b"0")],
        &[("grpc-status", b"5"), ("grpc-message", b"no such city")],
        // Percent-encoded, as the spec asks of a message that is not plain ASCII; a lone % is kept as it is.
        &[("grpc-status", b"3"), ("grpc-message", b"caf%C3%A9%20%E2%9C%93%20100%")],
        // No message.
        &[("grpc-status", b"13")],
        // Code numbers gRPC does not define, and codes that are not numbers: UNKNOWN.
        &[("grpc-status", b"17"), ("grpc-message", b"new")],
        &[("grpc-status", b"99999")],
        &[("grpc-status", b"-1")],
        &[("grpc-status", b"05")],
        &[("grpc-status", b"abc")],
        &[("grpc-status", b"")],
        // Binary details, padded or not: the code and message are read alike (the details themselves are not
        // read here: nothing downstream uses them).
        &[("grpc-status", b"3"), ("grpc-message", b"bad"), ("grpc-status-details-bin", DETAILS)],
        &[("grpc-status", b"3"), ("grpc-message", b"bad"), ("grpc-status-details-bin", b"CAMSA2JhZA")],
        // Other headers beside the status.
        &[("grpc-status", b"14"), ("content-type", b"application/grpc"), ("x-other", b"1")],
        // No status at all.
        &[("grpc-message", b"orphan")],
        &[],
    ];
    for fields in same {
        let map = headers(fields);
        assert_eq!(read(status_in(&map)), read(Status::from_header_map(&map)), "{fields:?}");
    }
}

#[test]
fn where_a_status_is_read_otherwise_than_tonic_the_difference_is_pinned() {
    // A message that is not UTF-8 once decoded: tonic replaces the status by UNKNOWN and its own message; the
    // server's code is kept here, with the message decoded lossily.
    let map = headers(&[("grpc-status", b"3"), ("grpc-message", b"bad%FF")]);
    assert_eq!(read(status_in(&map)), Some((Code::InvalidArgument, "bad\u{FFFD}".into())));
    let tonic = Status::from_header_map(&map).unwrap();
    assert_eq!(tonic.code(), Code::Unknown);
    assert!(tonic.message().starts_with("Error deserializing status message header"), "{}", tonic.message());
    // Details that are not base64: tonic panics (its `expect`), which a tool server must not be able to cause.
    let map = headers(&[("grpc-status", b"9"), ("grpc-message", b"m"), ("grpc-status-details-bin", b"%%%")]);
    assert_eq!(read(status_in(&map)), Some((Code::FailedPrecondition, "m".into())));
    assert!(catch_unwind(AssertUnwindSafe(|| Status::from_header_map(&map))).is_err(), "tonic panics");
}

/// tonic's mapping of an HTTP status without `grpc-status`, copied from the private `infer_grpc_status`
/// (tonic 0.14.5, src/status.rs, line 775), which its client applies to an answer that ends without one.
fn tonic_infer_code(status: StatusCode) -> Code {
    match status {
        StatusCode::BAD_REQUEST => Code::Internal,
        StatusCode::UNAUTHORIZED => Code::Unauthenticated,
        StatusCode::FORBIDDEN => Code::PermissionDenied,
        StatusCode::NOT_FOUND => Code::Unimplemented,
        StatusCode::TOO_MANY_REQUESTS
        | StatusCode::BAD_GATEWAY
        | StatusCode::SERVICE_UNAVAILABLE
        | StatusCode::GATEWAY_TIMEOUT => Code::Unavailable,
        _ => Code::Unknown,
    }
}

#[test]
fn every_http_status_but_200_maps_to_the_code_tonic_infers() {
    // 200 is no error to either: tonic reads on, and so does `client::answer`.
    for status in (100..=999).filter(|&n| n != 200).filter_map(|n| StatusCode::from_u16(n).ok()) {
        assert_eq!(http_code(status), tonic_infer_code(status), "HTTP {status}");
    }
}

/// tonic's server's `grpc-timeout` parser, copied from the private `try_parse_grpc_timeout` (tonic 0.14.5,
/// src/transport/service/grpc_timeout.rs, line 103); `None` where tonic's returns an error and ignores the header.
fn tonic_timeout(headers: &HeaderMap) -> Option<Duration> {
    let val = headers.get("grpc-timeout")?;
    let s = val.to_str().ok().filter(|s| !s.is_empty())?;
    let (timeout_value, timeout_unit) = s.split_at(val.len() - 1);
    if timeout_value.len() > 8 {
        return None;
    }
    let timeout_value: u64 = timeout_value.parse().ok()?;
    Some(match timeout_unit {
        "H" => Duration::from_secs(timeout_value * 60 * 60),
        "M" => Duration::from_secs(timeout_value * 60),
        "S" => Duration::from_secs(timeout_value),
        "m" => Duration::from_millis(timeout_value),
        "u" => Duration::from_micros(timeout_value),
        "n" => Duration::from_nanos(timeout_value),
        _ => return None,
    })
}

fn with_timeout(value: &[u8]) -> HeaderMap {
    headers(&[("grpc-timeout", value)])
}

#[test]
fn a_grpc_timeout_parses_as_tonic_parses_it() {
    let table: &[&[u8]] = &[
        b"2H",
        b"3M",
        b"4S",
        b"250m",
        b"7u",
        b"99999999n",
        b"99999999H",
        b"0S",
        b"00000001S",
        b"+5S",
        b"",
        b"S",
        b"5",
        b"5x",
        b"5s",
        b"1h",
        b"-5S",
        b"123456789S",
        b"1.5S",
        b" 5S",
        b"5 S",
        b"1_0S",
        b"\xff5S",
        b"5\xff",
    ];
    for value in table {
        let map = with_timeout(value);
        assert_eq!(timeout(&map), tonic_timeout(&map), "{:?}", String::from_utf8_lossy(value));
    }
    assert_eq!(timeout(&HeaderMap::new()), tonic_timeout(&HeaderMap::new()));
}

#[test]
fn the_timeout_tonics_client_writes_reads_back_as_tonics_server_reads_it() {
    let mut nanos = 1u64;
    while nanos < 400 * 3600 * 1_000_000_000 {
        let mut request = tonic::Request::new(());
        request.set_timeout(Duration::from_nanos(nanos));
        let map = request.metadata().clone().into_headers();
        assert_eq!(timeout(&map), tonic_timeout(&map), "{nanos} ns written as {:?}", map.get("grpc-timeout"));
        assert!(timeout(&map).is_some());
        nanos = nanos * 3 + 1;
    }
}

proptest! {
    #[test]
    fn any_grpc_timeout_text_parses_as_tonic_parses_it(text in "[0-9+. HMSmunx-]{0,11}") {
        let map = with_timeout(text.as_bytes());
        prop_assert_eq!(timeout(&map), tonic_timeout(&map));
    }
}

/// tonic's code for an h2 error, copied from the private `Status::code_from_h2` (tonic 0.14.5, src/status.rs,
/// line 393).
fn tonic_h2_code(err: &h2::Error) -> Code {
    use h2::Reason;
    match err.reason() {
        Some(Reason::NO_ERROR)
        | Some(Reason::PROTOCOL_ERROR)
        | Some(Reason::INTERNAL_ERROR)
        | Some(Reason::FLOW_CONTROL_ERROR)
        | Some(Reason::SETTINGS_TIMEOUT)
        | Some(Reason::COMPRESSION_ERROR)
        | Some(Reason::CONNECT_ERROR) => Code::Internal,
        Some(Reason::REFUSED_STREAM) => Code::Unavailable,
        Some(Reason::CANCEL) => Code::Cancelled,
        Some(Reason::ENHANCE_YOUR_CALM) => Code::ResourceExhausted,
        Some(Reason::INADEQUATE_SECURITY) => Code::PermissionDenied,
        _ => Code::Unknown,
    }
}

#[test]
fn a_reset_stream_maps_to_tonics_code_but_for_the_reasons_grpc_does_not_name() {
    // STREAM_CLOSED, FRAME_SIZE_ERROR, HTTP_1_1_REQUIRED and reasons h2 does not know: INTERNAL here, UNKNOWN in
    // tonic. The gRPC backend treats both alike (unavailable, retried); the message says "transport error".
    let differ = [0x5, 0x6, 0xd, 0xff];
    for reason in (0..=0xd).chain([0xff]) {
        let err = h2::Error::from(h2::Reason::from(reason));
        let ours = transport(h2::Error::from(h2::Reason::from(reason)));
        assert!(ours.message().starts_with("transport error: "), "{}", ours.message());
        if differ.contains(&reason) {
            assert_eq!((ours.code(), tonic_h2_code(&err)), (Code::Internal, Code::Unknown), "reason {reason:#x}");
        } else {
            assert_eq!(ours.code(), tonic_h2_code(&err), "reason {reason:#x}");
        }
    }
}

fn answer(text: &str) -> InvokeResponse {
    InvokeResponse { content: text.into(), structured: "{\"n\":1}".into(), ..Default::default() }
}

/// A request body of `chunks`, as hyper hands it over.
fn body(chunks: Vec<Bytes>) -> StreamBody<impl futures::Stream<Item = Result<Frame<Bytes>, Infallible>>> {
    StreamBody::new(stream::iter(chunks.into_iter().map(|c| Ok(Frame::data(c)))))
}

/// The message tonic's server would decode from `chunks`, under `limit`.
async fn tonic_decodes(chunks: Vec<Bytes>, limit: usize) -> Result<Option<InvokeResponse>, Status> {
    let decoder = ProstCodec::<InvokeResponse, InvokeResponse>::default().decoder();
    let mut streaming = Streaming::new_request(decoder, body(chunks), None, Some(limit));
    streaming.message().await
}

fn gathered(chunks: Vec<Bytes>, limit: usize) -> Result<Bytes, FrameError> {
    let mut gather = Gather::new(limit);
    chunks.into_iter().try_for_each(|c| gather.push(c))?;
    gather.finish()
}

#[tokio::test]
async fn our_framing_is_what_tonics_codec_reads_and_writes() {
    use prost::Message;
    for text in ["", "short", &"x".repeat(70_000)] {
        let framed = encode(&answer(text));
        let cut = framed.len() / 2;
        for chunks in [vec![framed.clone()], vec![framed.slice(..cut), framed.slice(cut..)]] {
            let tonic = tonic_decodes(chunks.clone(), 1 << 20).await.unwrap();
            assert_eq!(tonic, Some(answer(text)));
            assert_eq!(InvokeResponse::decode(gathered(chunks, 1 << 20).unwrap()).unwrap(), answer(text));
        }
        // tonic's server writes the same bytes, and after them the same trailers as `UnaryBody::ok`.
        let encoder = ProstCodec::<InvokeResponse, InvokeResponse>::default().encoder();
        let source = stream::iter([Ok::<_, Status>(answer(text))]);
        let tonic = EncodeBody::new_server(encoder, source, None, Default::default(), None).collect().await.unwrap();
        let ours = UnaryBody::ok(framed.clone()).into_body().collect().await.unwrap();
        assert_eq!(tonic.trailers(), ours.trailers());
        assert_eq!(tonic.to_bytes(), ours.to_bytes());
    }
}

#[tokio::test]
async fn a_frame_tonic_refuses_is_refused_here() {
    let framed = encode(&answer(&"x".repeat(3000)));
    // Over the limit: OUT_OF_RANGE in tonic; `TooLarge` here, which the server answers with OUT_OF_RANGE too.
    let tonic = tonic_decodes(vec![framed.clone()], 1000).await.unwrap_err();
    assert_eq!(tonic.code(), Code::OutOfRange);
    assert!(matches!(gathered(vec![framed.clone()], 1000), Err(FrameError::TooLarge { limit: 1000, .. })));
    // The compressed flag with no compression agreed: INTERNAL in tonic, as the gRPC spec asks; `Compressed` here,
    // which the server answers with UNIMPLEMENTED (no compression is ever agreed with it). Either way, refused.
    let mut compressed = framed.to_vec();
    compressed[0] = 1;
    let tonic = tonic_decodes(vec![compressed.clone().into()], 1 << 20).await.unwrap_err();
    assert_eq!(tonic.code(), Code::Internal);
    assert_eq!(gathered(vec![compressed.into()], 1 << 20), Err(FrameError::Compressed));
    // A body that ends inside its message: INTERNAL in tonic, `Truncated` here (INVALID_ARGUMENT at the server).
    let tonic = tonic_decodes(vec![framed.slice(..100)], 1 << 20).await.unwrap_err();
    assert_eq!(tonic.code(), Code::Internal);
    assert_eq!(gathered(vec![framed.slice(..100)], 1 << 20), Err(FrameError::Truncated));
}
