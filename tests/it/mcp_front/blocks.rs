//! A result of more than text, end to end: an HTTP tool answering a PNG reaches a gRPC caller as an image block
//! (with a note, not base64, as the text) and an MCP host as an image content block; text stays text.

use super::{ALICE, call, client, front, text};
use crate::support::backends::{PIXEL_PNG, start_http};
use crate::support::status_of;
use base64::Engine as _;
use serde_json::json;
use toolgate::pb::v1::{self as pb, ToolStatus, result_block::Block};

#[tokio::test]
async fn an_image_result_is_an_image_block_on_grpc_and_at_the_mcp_door_and_text_stays_text() {
    let (_dir, mut gw, url) = front().await;
    let http = start_http().await;
    let tool = |name: &str, path: &str| {
        json!({"name": name, "tenant": "acme", "input_schema": {"type": "object"},
            "backend": {"http": {"url": format!("{http}{path}")}}})
    };
    gw.register(tool("chart", "/image")).await.unwrap();
    gw.register(tool("note", "/text")).await.unwrap();
    let png = base64::engine::general_purpose::STANDARD.encode(PIXEL_PNG);

    let acme = pb::CallContext { tenant: "acme".into(), ..Default::default() };
    let m = gw.call_as("chart", "{}", acme.clone()).await;
    assert_eq!(status_of(&m), ToolStatus::Success, "{m:?}");
    assert_eq!(m.content, "[image: image/png, 68 bytes]", "a text-only model reads a note, never base64");
    let blocks: Vec<_> = m.blocks.into_iter().map(|b| b.block.unwrap()).collect();
    assert_eq!(blocks, [Block::Image(pb::MediaBlock { data: png.clone(), mime_type: "image/png".into() })]);
    let plain = gw.call_as("note", "{}", acme).await;
    assert_eq!((plain.content.as_str(), plain.blocks.len()), ("plain text answer", 0), "text alone keeps no blocks");

    let host = client(&url, ALICE).await;
    let result = call(&host, "chart", json!({})).await;
    assert_eq!(result.is_error, Some(false));
    let image = result.content[0].as_image().expect("an image content block");
    assert_eq!((image.data.as_str(), image.mime_type.as_str()), (png.as_str(), "image/png"));
    assert_eq!(result.content.len(), 1);
    assert_eq!(text(&call(&host, "note", json!({})).await), "plain text answer");
}
