//! Fuzzes the `Execute` fast path's request decoding (src/grpc/execute.rs): the body's DATA chunks through
//! `wire::frame::Gather` under a limit, the `ExecuteRequest` decoded with prost, the `grpc-timeout` header read, the
//! call and context converted to domain types (the `proto` module's `From` impls, as `GatewayService::execute_request`
//! does), then the pure pipeline and the answer's encoding, on a catalog of corpus tools. The composition is rebuilt
//! here from the public parts: `FastExecute::answer` is async and needs a whole gateway.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use prost::Message;
use std::mem::discriminant;
use std::sync::{Arc, OnceLock};
use toolgate::pb::v1 as pb;
use toolgate::pipeline::{Messages, PipelineSettings, error_message, prepare, success_message};
use toolgate::registry::{Catalog, CompiledTool};
use toolgate::wire::frame::{self, FrameError, Gather};
use toolgate::wire::status::timeout;

/// Limits the body is gathered under: none, tiny, small, and the default `max_request_bytes`.
const LIMITS: [usize; 4] = [0, 16, 4096, 8 << 20];

/// A catalog of corpus tools, some with an injected parameter, for the decoded calls to resolve against.
fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let docs = toolgate_fuzz::documents();
        let cases = toolgate_fuzz::cases();
        let bfcl = cases.iter().filter(|c| !c.name.starts_with("suite_")).take(24);
        let tools = bfcl
            .enumerate()
            .filter_map(|(i, c)| CompiledTool::compile(c.spec(i % 2 == 1), &docs).ok())
            .map(Arc::new)
            .collect();
        Catalog::new(tools)
    })
}

/// Layout: the limit (1 byte), the `grpc-timeout` text (a length byte, up to 15 bytes), the number of cuts and
/// one byte each, then the body.
struct Input<'a> {
    limit: usize,
    timeout: &'a [u8],
    cuts: Vec<usize>,
    body: &'a [u8],
}

fn read(data: &[u8]) -> Option<Input<'_>> {
    let (&limit, rest) = data.split_first()?;
    let (&t, rest) = rest.split_first()?;
    let (timeout, rest) = rest.split_at_checked(usize::from(t & 15))?;
    let (&n, rest) = rest.split_first()?;
    let (cuts, body) = rest.split_at_checked(usize::from(n & 3))?;
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| usize::from(c) * body.len() / 256).collect();
    cuts.sort_unstable();
    Some(Input { limit: LIMITS[usize::from(limit & 3)], timeout, cuts, body })
}

fn gather(body: &Bytes, cuts: &[usize], limit: usize) -> Result<Bytes, FrameError> {
    let mut gathered = Gather::new(limit);
    let mut from = 0;
    for &cut in cuts.iter().chain([body.len()].iter()) {
        gathered.push(body.slice(from..cut))?;
        from = cut;
    }
    gathered.finish()
}

// `init` builds the corpus catalog before libFuzzer times any input. Built lazily, inside the first
// input, it took more than the 10 s `-timeout` in an unoptimised build on a loaded machine.
fuzz_target!(init: { catalog(); }, |data: &[u8]| {
    let Some(input) = read(data) else { return };
    let mut headers = http::HeaderMap::new();
    if let Ok(value) = http::HeaderValue::from_bytes(input.timeout) {
        headers.insert("grpc-timeout", value);
    }
    let _ = timeout(&headers);
    let body = Bytes::copy_from_slice(input.body);
    let whole = gather(&body, &[], input.limit);
    let chunked = gather(&body, &input.cuts, input.limit);
    match (&whole, &chunked) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "chunking changed the message"),
        (Err(a), Err(b)) => assert_eq!(discriminant(a), discriminant(b), "chunking changed the refusal: {a:?} / {b:?}"),
        _ => panic!("chunking changed the outcome: {whole:?} / {chunked:?}"),
    }
    let Ok(message) = whole else { return };
    assert!(message.len() <= input.limit && message[..] == body[frame::PREFIX..], "the message is not the body's");
    let Ok(request) = pb::ExecuteRequest::decode(message) else { return };
    let reencoded = pb::ExecuteRequest::decode(request.encode_to_vec().as_slice()).expect("our encoding decodes");
    assert_eq!(reencoded, request);
    let Some(call) = request.call else { return };
    let call = toolgate::pipeline::ToolCall::from(call);
    let ctx = toolgate::pipeline::CallContext::from(request.context.unwrap_or_default());
    let message = match prepare(catalog(), &call, &ctx, &PipelineSettings::default()) {
        Ok(prepared) => success_message(&call, &prepared.tool.spec.name, prepared.arguments_text, None),
        Err(rejected) => error_message(&call, &call.name, rejected.error, rejected.repairs, &Messages::default()),
    };
    let answer = pb::ExecuteResponse { message: Some(pb::ToolMessage::from(message)) };
    let framed = frame::encode(&answer);
    let back = pb::ExecuteResponse::decode(&framed[frame::PREFIX..]).expect("our answer decodes");
    assert_eq!(back, answer);
});
