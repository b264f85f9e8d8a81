//! The same answers, sent by one gRPC tool server, read by tonic's client and by the gateway's own
//! (`toolgate::wire::client`): the same `Code` and message, or the difference pinned where it is on purpose. The
//! server reads both clients' requests with `wire::frame::Gather`, so tonic's framing is checked on the way in too.

use Expect::{Differs, Same, SameCode};
use bytes::Bytes;
use h2::RecvStream;
use h2::server::SendResponse;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response};
use prost::Message;
use std::time::Duration;
use tokio::net::TcpListener;
use tonic::Code;
use tonic::transport::{Channel, Endpoint};
use toolgate::pb::v1 as pb;
use toolgate::pb::v1::tool_runtime_client::ToolRuntimeClient;
use toolgate::wire::client::{CallFailure, Target};
use toolgate::wire::frame::{Gather, encode};

type Fields = &'static [(&'static str, &'static str)];

/// What the tool server answers: the HTTP status, fields in the headers, a message, and the trailers (`None`: the
/// stream ends with the headers or the message).
struct Answer {
    http: u16,
    headers: Fields,
    message: Option<&'static str>,
    trailers: Option<Fields>,
}

/// What a client made of an answer: the message's content, or the status's code and message.
type Outcome = Result<String, (Code, String)>;

/// An outcome expected: the content, or the code and the start of the message.
type Want = Result<&'static str, (Code, &'static str)>;

/// How the two readings compare.
enum Expect {
    /// The same content, or the same code and message.
    Same,
    /// The same code; each client words the message its own way.
    SameCode,
    /// Different on purpose: each reading.
    Differs { ours: Want, tonic: Want },
}

const fn answer(http: u16, headers: Fields, message: Option<&'static str>, trailers: Option<Fields>) -> Answer {
    Answer { http, headers, message, trailers }
}

/// `google.rpc.Status { code: 3, message: "bad" }`, as `grpc-status-details-bin` carries it.
const DETAILS: &str = "CAMSA2JhZA==";

/// Each answer the tool server sends, by name, and how the clients' readings of it compare.
const CASES: &[(&str, Answer, Expect)] = &[
    ("OK", answer(200, &[], Some("hi"), Some(&[("grpc-status", "0")])), Same),
    ("status in the trailers", answer(200, &[], None, Some(&[("grpc-status", "5"), ("grpc-message", "gone")])), Same),
    (
        "percent-encoded message",
        answer(200, &[], None, Some(&[("grpc-status", "3"), ("grpc-message", "caf%C3%A9%20%E2%9C%93%20100%")])),
        Same,
    ),
    ("no message", answer(200, &[], None, Some(&[("grpc-status", "13")])), Same),
    ("unknown code", answer(200, &[], None, Some(&[("grpc-status", "42"), ("grpc-message", "odd")])), Same),
    (
        "binary details",
        answer(
            200,
            &[],
            None,
            Some(&[("grpc-status", "3"), ("grpc-message", "bad"), ("grpc-status-details-bin", DETAILS)]),
        ),
        Same,
    ),
    (
        "status after a message",
        answer(200, &[], Some("part"), Some(&[("grpc-status", "10"), ("grpc-message", "x")])),
        Same,
    ),
    ("trailers-only", answer(200, &[("grpc-status", "14"), ("grpc-message", "down")], None, None), Same),
    ("trailers-only, HTTP error", answer(503, &[("grpc-status", "14"), ("grpc-message", "busy")], None, None), Same),
    ("trailers-only OK, no message", answer(200, &[("grpc-status", "0")], None, None), SameCode),
    ("OK, no message", answer(200, &[], None, Some(&[("grpc-status", "0")])), SameCode),
    // An HTTP error without a gRPC status, as a proxy answers: the code tonic's client infers from it.
    ("HTTP error, no grpc-status", answer(400, &[], None, None), SameCode),
    ("HTTP error, no grpc-status", answer(401, &[], None, None), SameCode),
    ("HTTP error, no grpc-status", answer(403, &[], None, None), SameCode),
    ("HTTP error, no grpc-status", answer(404, &[], None, None), SameCode),
    ("HTTP error, no grpc-status", answer(418, &[], None, None), SameCode),
    ("HTTP error, no grpc-status", answer(429, &[], None, None), SameCode),
    ("HTTP error, no grpc-status", answer(500, &[], None, None), SameCode),
    ("HTTP error, no grpc-status", answer(502, &[], None, None), SameCode),
    ("HTTP error, no grpc-status", answer(503, &[], None, None), SameCode),
    ("HTTP error, no grpc-status", answer(504, &[], None, None), SameCode),
    // The gRPC spec requires a status: tonic's client takes a message without one, the gateway does not.
    (
        "a message and no status",
        answer(200, &[], Some("hi"), None),
        Differs { ours: Err((Code::Internal, "the answer ended without a grpc-status")), tonic: Ok("hi") },
    ),
    // An HTTP error is taken at its word here; tonic reads on and finds the trailers' status.
    (
        "HTTP 500 with a status in the trailers",
        answer(500, &[], Some("hi"), Some(&[("grpc-status", "13"), ("grpc-message", "boom")])),
        Differs { ours: Err((Code::Unknown, "HTTP status 500")), tonic: Err((Code::Internal, "boom")) },
    ),
    // tonic replaces the server's code by UNKNOWN; the gateway keeps it and decodes the message lossily.
    (
        "a message not UTF-8",
        answer(200, &[], None, Some(&[("grpc-status", "3"), ("grpc-message", "bad%FF")])),
        Differs {
            ours: Err((Code::InvalidArgument, "bad\u{FFFD}")),
            tonic: Err((Code::Unknown, "Error deserializing status message header")),
        },
    ),
];

fn sent() -> pb::InvokeRequest {
    pb::InvokeRequest {
        call_id: "c1".into(),
        tool: "weather".into(),
        arguments: "{\"city\":\"Oslo\"}".into(),
        context: None,
    }
}

fn fields(fields: Fields) -> HeaderMap {
    fields.iter().map(|(k, v)| (HeaderName::from_static(k), HeaderValue::from_static(v))).collect()
}

/// Answers one request as its `x-case` says, once its body has been read as the one `InvokeRequest` sent.
async fn respond(request: Request<RecvStream>, mut respond: SendResponse<Bytes>) {
    let case: usize = request.headers()["x-case"].to_str().unwrap().parse().unwrap();
    let mut body = request.into_body();
    let mut gather = Gather::new(1 << 20);
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        gather.push(chunk).unwrap();
    }
    let received = pb::InvokeRequest::decode(gather.finish().unwrap()).unwrap();
    let mismatch = answer(200, &[("grpc-status", "2"), ("grpc-message", "not the request sent")], None, None);
    let answer = if received == sent() { &CASES[case].1 } else { &mismatch };
    let mut head = Response::builder().status(answer.http).header("content-type", "application/grpc");
    head.headers_mut().unwrap().extend(fields(answer.headers));
    let ends = answer.message.is_none() && answer.trailers.is_none();
    let mut stream = respond.send_response(head.body(()).unwrap(), ends).unwrap();
    if let Some(text) = answer.message {
        let message = pb::InvokeResponse { content: text.into(), ..Default::default() };
        stream.send_data(encode(&message), answer.trailers.is_none()).unwrap();
    }
    if let Some(trailers) = answer.trailers {
        stream.send_trailers(fields(trailers)).unwrap();
    }
}

/// A tool server answering every case, on its own port.
async fn tool_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut connection = h2::server::handshake(tcp).await.unwrap();
                while let Some(Ok((request, send))) = connection.accept().await {
                    tokio::spawn(respond(request, send));
                }
            });
        }
    });
    addr
}

async fn ours(target: &Target, case: usize) -> Outcome {
    let trace = [("x-case", case.to_string())];
    match target.unary(encode(&sent()), &trace, 1 << 20, Duration::from_secs(5)).await {
        Ok(message) => Ok(pb::InvokeResponse::decode(message).unwrap().content),
        Err(CallFailure::Status(status)) => Err((status.code(), status.message().to_owned())),
        Err(CallFailure::TooLarge { limit }) => panic!("over {limit} bytes"),
    }
}

async fn tonics(client: &mut ToolRuntimeClient<Channel>, case: usize) -> Outcome {
    let mut request = tonic::Request::new(sent());
    request.metadata_mut().insert("x-case", case.to_string().parse().unwrap());
    match client.invoke(request).await {
        Ok(response) => Ok(response.into_inner().content),
        Err(status) => Err((status.code(), status.message().to_owned())),
    }
}

/// `got` is `want`, a status's message matched by its start.
fn like(got: &Outcome, want: &Want) -> bool {
    match (got, want) {
        (Ok(content), Ok(want)) => content == want,
        (Err((code, message)), Err((want, start))) => code == want && message.starts_with(start),
        _ => false,
    }
}

#[tokio::test]
async fn both_clients_read_every_answer_alike_but_where_pinned() {
    let addr = tool_server().await;
    let tls = std::sync::Arc::new(toolgate::tls::ClientTls::load(Default::default()).unwrap());
    let target = Target::new(&format!("http://{addr}"), "/toolgate.v1.ToolRuntime/Invoke", &tls).unwrap();
    let mut tonic = ToolRuntimeClient::new(Endpoint::from_shared(format!("http://{addr}")).unwrap().connect_lazy());
    for (case, (name, answer, expect)) in CASES.iter().enumerate() {
        let (ours, tonic) = (ours(&target, case).await, tonics(&mut tonic, case).await);
        let what = format!("case {case} ({name}, HTTP {}): ours {ours:?}, tonic's {tonic:?}", answer.http);
        match expect {
            Same => assert_eq!(ours, tonic, "{what}"),
            SameCode => {
                assert!(matches!((&ours, &tonic), (Err((a, _)), Err((b, _))) if a == b), "{what}");
            }
            Differs { ours: want_ours, tonic: want_tonic } => {
                assert!(like(&ours, want_ours) && like(&tonic, want_tonic), "{what}");
            }
        }
    }
}
