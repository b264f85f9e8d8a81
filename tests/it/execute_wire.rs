//! `Execute` on the wire, as a client other than tonic's may send it: the gateway answers it on a path of its own,
//! so what tonic's server would check is checked there. Raw HTTP/2 requests over a real socket: the answer's
//! framing, and a status for every request that is not one uncompressed `ExecuteRequest`.

use crate::support::{start_gateway, temp_config};
use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use std::time::Duration;
use toolgate::pb::v1 as pb;

/// What came back: the HTTP status, the `content-type`, the body, and the `grpc-status` and `grpc-message` of a
/// trailers-only answer (in its headers) or of the trailers.
struct Answer {
    http: u16,
    content_type: String,
    body: Bytes,
    grpc_status: String,
    grpc_message: String,
    trailers_only: bool,
}

/// Sends an `Execute` with `extra` headers and `body`, ending the stream unless `open`.
async fn exchange(addr: std::net::SocketAddr, extra: &[(&str, &str)], body: Bytes, open: bool) -> Answer {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut request = http::Request::post(format!("http://{addr}/toolgate.v1.ToolGateway/Execute"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let mut client = client.ready().await.unwrap();
    let (response, mut stream) = client.send_request(request.body(()).unwrap(), false).unwrap();
    stream.send_data(body, !open).unwrap();
    let (head, mut received) = response.await.unwrap().into_parts();
    let trailers_only = received.is_end_stream();
    let mut body = BytesMut::new();
    while let Some(chunk) = received.data().await {
        body.extend_from_slice(&chunk.unwrap());
    }
    let trailers = received.trailers().await.unwrap();
    assert_eq!(trailers.is_none(), trailers_only, "trailers follow a body, and only a body");
    let status_in = trailers.unwrap_or_else(|| head.headers.clone());
    let get = |name: &str| status_in.get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    Answer {
        http: head.status.as_u16(),
        content_type: head.headers.get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default(),
        body: body.freeze(),
        grpc_status: get("grpc-status"),
        grpc_message: percent_encoding::percent_decode_str(&get("grpc-message")).decode_utf8_lossy().into_owned(),
        trailers_only,
    }
}

async fn send(addr: std::net::SocketAddr, extra: &[(&str, &str)], body: Bytes) -> Answer {
    exchange(addr, extra, body, false).await
}

fn framed(flag: u8, message: &[u8]) -> Bytes {
    let mut body = BytesMut::new();
    body.put_u8(flag);
    body.put_u32(message.len() as u32);
    body.extend_from_slice(message);
    body.freeze()
}

fn execute_request() -> Vec<u8> {
    let call = pb::ToolCall { id: "c1".into(), name: "missing_tool".into(), arguments: "{}".into() };
    pb::ExecuteRequest { call: Some(call), ..Default::default() }.encode_to_vec()
}

#[tokio::test]
async fn an_execute_is_answered_with_one_framed_message_and_ok_trailers() {
    let (_dir, config) = temp_config();
    let gw = start_gateway(config).await;
    let answer = send(gw.addr, &[], framed(0, &execute_request())).await;
    assert_eq!(
        (answer.http, answer.content_type.as_str(), answer.grpc_status.as_str()),
        (200, "application/grpc", "0")
    );
    assert_eq!(answer.body[0], 0, "not compressed");
    let len = u32::from_be_bytes(answer.body[1..5].try_into().unwrap()) as usize;
    assert_eq!(answer.body.len(), 5 + len, "exactly one message");
    let message = pb::ExecuteResponse::decode(&answer.body[5..]).unwrap().message.unwrap();
    assert_eq!(
        (message.tool_call_id.as_str(), message.error.unwrap().kind),
        ("c1", pb::ErrorKind::ToolNotFound as i32)
    );
}

/// A malformed request: what it is, its extra headers, its body, and the `grpc-status` it must get.
type Case = (&'static str, Vec<(&'static str, &'static str)>, Bytes, &'static str);

#[tokio::test]
async fn requests_that_are_not_one_uncompressed_execute_request_get_a_status() {
    let (_dir, mut config) = temp_config();
    config.max_request_bytes = 1000;
    let gw = start_gateway(config).await;
    let request = execute_request();
    let mut two = BytesMut::from(&framed(0, &request)[..]);
    two.extend_from_slice(&framed(0, &request));
    let cases: Vec<Case> = vec![
        ("not protobuf", vec![], framed(0, b"\xff\xff\xff\xff"), "3"),
        ("compressed", vec![], framed(1, &request), "12"),
        ("gzip", vec![("grpc-encoding", "gzip")], framed(0, &request), "12"),
        ("two messages", vec![], two.freeze(), "3"),
        ("no message", vec![], Bytes::new(), "3"),
        ("cut short", vec![], framed(0, &request).slice(..8), "3"),
        ("over the limit", vec![], framed(0, &vec![b'x'; 2000]), "11"),
    ];
    for (case, headers, body, status) in cases {
        let answer = send(gw.addr, &headers, body).await;
        assert_eq!(answer.http, 200, "{case}");
        assert_eq!(answer.grpc_status, status, "{case}: {}", answer.grpc_message);
        assert!(!answer.grpc_message.is_empty(), "{case}: the status says why");
        assert!(answer.body.is_empty(), "{case}: no message with an error status");
        assert!(answer.trailers_only, "{case}: an error is a trailers-only answer");
    }
    let identity = send(gw.addr, &[("grpc-encoding", "identity")], framed(0, &request)).await;
    assert_eq!(identity.grpc_status, "0", "identity is no compression");
}

#[tokio::test]
async fn a_message_over_the_limit_is_refused_by_its_prefix_before_the_rest_is_sent() {
    let (_dir, mut config) = temp_config();
    config.max_request_bytes = 1000;
    let gw = start_gateway(config).await;
    // A prefix that claims 100 MB, and a stream left open: the answer cannot wait for the rest.
    let mut prefix = BytesMut::new();
    prefix.put_u8(0);
    prefix.put_u32(100_000_000);
    // Waiting for the rest, the gateway would never answer: a minute's wait tells that from a slow machine.
    let answered = tokio::time::timeout(Duration::from_secs(60), exchange(gw.addr, &[], prefix.freeze(), true));
    let answer = answered.await.expect("answered without the rest of the body");
    assert_eq!(answer.grpc_status, "11", "{}", answer.grpc_message);
    assert!(answer.grpc_message.contains("over the limit of 1000 bytes"), "{}", answer.grpc_message);
}

#[tokio::test]
async fn a_request_still_arriving_when_its_grpc_timeout_expires_is_answered_deadline_exceeded() {
    let (_dir, config) = temp_config();
    let gw = start_gateway(config).await;
    // Half a message, and the stream left open: the gateway waits for the rest only until the caller's timeout.
    let half = framed(0, &execute_request()).slice(..6);
    let started = std::time::Instant::now();
    let answered = exchange(gw.addr, &[("grpc-timeout", "300m")], half, true);
    // Left waiting for the rest, the gateway would never answer (or only at some later timeout of its own): it
    // answers once the caller's 300 ms have passed, and well within 15 s, a bound no scheduling delay reaches.
    let answer = tokio::time::timeout(Duration::from_secs(60), answered).await.expect("answered at the timeout");
    assert_eq!(answer.grpc_status, "4", "{}", answer.grpc_message);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(250), "answered before the caller's timeout: {waited:?}");
    assert!(waited < Duration::from_secs(15), "answered long after the caller's 300 ms timeout: {waited:?}");
}
