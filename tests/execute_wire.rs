//! `Execute` on the wire, as a client other than tonic's may send it: the gateway answers it on a path of its own,
//! so what tonic's server would check is checked there. Raw HTTP/2 requests over a real socket: the answer's
//! framing, and a status for every request that is not one uncompressed `ExecuteRequest`.

mod common;

use bytes::{BufMut, Bytes, BytesMut};
use common::{start_gateway, temp_config};
use prost::Message;
use toolgate::pb::v1 as pb;

/// What came back: the HTTP status, the `content-type`, the body and the `grpc-status` (from the trailers, or the
/// headers of a trailers-only answer).
struct Answer {
    http: u16,
    content_type: String,
    body: Bytes,
    grpc_status: String,
    grpc_message: String,
}

async fn send(addr: std::net::SocketAddr, extra: &[(&str, &str)], body: Bytes) -> Answer {
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
    stream.send_data(body, true).unwrap();
    let (head, mut received) = response.await.unwrap().into_parts();
    let mut body = BytesMut::new();
    while let Some(chunk) = received.data().await {
        body.extend_from_slice(&chunk.unwrap());
    }
    let trailers = received.trailers().await.unwrap().unwrap_or_default();
    let get = |name: &str| {
        let value = trailers.get(name).or_else(|| head.headers.get(name));
        value.map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
    };
    Answer {
        http: head.status.as_u16(),
        content_type: head.headers.get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default(),
        body: body.freeze(),
        grpc_status: get("grpc-status"),
        grpc_message: get("grpc-message"),
    }
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
    }
    let identity = send(gw.addr, &[("grpc-encoding", "identity")], framed(0, &request)).await;
    assert_eq!(identity.grpc_status, "0", "identity is no compression");
}
