//! A tool result's content blocks, as MCP and LangChain both model them: text, images, audio, links to resources
//! and embedded resources. A result of text alone keeps no blocks: its `content` is the whole of it.

use serde::{Deserialize, Serialize};

/// One block of a tool's result. Binary data is base64, as MCP carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResultBlock {
    Text {
        text: String,
    },
    Image {
        data: String,
        mime_type: String,
    },
    Audio {
        data: String,
        mime_type: String,
    },
    /// A resource the result points at, not its contents.
    ResourceLink {
        uri: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// A resource's contents: text, or a base64 blob.
    Resource {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
    },
}

impl ResultBlock {
    /// Whether a result of only such blocks is plain text, which `content` carries whole.
    pub fn is_text(&self) -> bool {
        matches!(self, ResultBlock::Text { .. })
    }

    /// The bytes the block holds, counted against `max_result_bytes` as a result's text is.
    pub fn size(&self) -> usize {
        let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        match self {
            ResultBlock::Text { text } => text.len(),
            ResultBlock::Image { data, mime_type } | ResultBlock::Audio { data, mime_type } => {
                data.len() + mime_type.len()
            }
            ResultBlock::ResourceLink { uri, name, mime_type, description } => {
                uri.len() + name.len() + len(mime_type) + len(description)
            }
            ResultBlock::Resource { uri, mime_type, text, blob } => uri.len() + len(mime_type) + len(text) + len(blob),
        }
    }

    /// The block as a model that reads only text reads it: text as it is, and a short note for the rest (never
    /// base64, which is no use to it).
    pub fn as_text(&self) -> String {
        match self {
            ResultBlock::Text { text } => text.clone(),
            ResultBlock::Image { data, mime_type } => format!("[image: {mime_type}, {} bytes]", decoded_len(data)),
            ResultBlock::Audio { data, mime_type } => format!("[audio: {mime_type}, {} bytes]", decoded_len(data)),
            ResultBlock::ResourceLink { uri, name, .. } => format!("[resource link: {name} <{uri}>]"),
            ResultBlock::Resource { text: Some(text), .. } => text.clone(),
            ResultBlock::Resource { uri, mime_type, blob, .. } => {
                let kind = mime_type.as_deref().unwrap_or("application/octet-stream");
                format!("[resource <{uri}>: {kind}, {} bytes]", decoded_len(blob.as_deref().unwrap_or("")))
            }
        }
    }
}

/// The text a model that reads only text gets for `blocks`, one block per line, and the blocks to keep beside it:
/// none when every block is text.
pub fn text_and_blocks(blocks: Vec<ResultBlock>) -> (String, Vec<ResultBlock>) {
    let text = blocks.iter().map(ResultBlock::as_text).collect::<Vec<_>>().join("\n");
    if blocks.iter().all(ResultBlock::is_text) {
        return (text, Vec::new());
    }
    (text, blocks)
}

/// How many bytes base64 `data` decodes to, padded or not.
fn decoded_len(data: &str) -> usize {
    let data = data.trim_end_matches('=');
    // Each 4 characters are 3 bytes; a last 2 or 3 are 1 or 2.
    data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocks_size_is_its_decoded_size_padded_or_not() {
        for (data, len) in [("", 0), ("QQ==", 1), ("QQ", 1), ("QUI=", 2), ("QUI", 2), ("QUJD", 3), ("QUJDRA", 4)] {
            assert_eq!(decoded_len(data), len, "{data}");
        }
    }

    #[test]
    fn text_alone_keeps_no_blocks_and_the_rest_are_noted_not_dumped() {
        let text = |t: &str| ResultBlock::Text { text: t.into() };
        assert_eq!(text_and_blocks(vec![text("a"), text("b")]), ("a\nb".into(), Vec::new()));
        let image = ResultBlock::Image { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() };
        let (content, blocks) = text_and_blocks(vec![text("a chart"), image.clone()]);
        assert_eq!(content, "a chart\n[image: image/png, 8 bytes]");
        assert_eq!(blocks, vec![text("a chart"), image]);
    }

    #[test]
    fn blocks_serialise_as_tagged_snake_case() {
        let link =
            ResultBlock::ResourceLink { uri: "file:///a".into(), name: "a".into(), mime_type: None, description: None };
        let json = serde_json::to_value(&link).unwrap();
        assert_eq!(json, serde_json::json!({"type": "resource_link", "uri": "file:///a", "name": "a"}));
        assert_eq!(serde_json::from_value::<ResultBlock>(json).unwrap(), link);
    }
}
