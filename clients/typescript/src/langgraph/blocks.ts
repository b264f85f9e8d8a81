/**
 * A result of more than text as LangChain content blocks, so a model that sees images gets the image.
 * @module
 */

import type { ContentBlock } from "@langchain/core/messages";
import type { ResultBlock, ToolMessage } from "../types.js";

/**
 * The LangChain ToolMessage content for `m`: its text when the result is text alone, else its blocks in order as
 * LangChain's standard content blocks (text, image, and file for audio and binary resources, as the Python
 * client gives them).
 */
export function contentOf(m: ToolMessage): string | ContentBlock[] {
  if (m.blocks.length === 0) return m.content;
  return m.blocks.map(block);
}

function block(b: ResultBlock): ContentBlock {
  switch (b.type) {
    case "image":
      return { type: "image", data: b.data, mimeType: b.mimeType };
    case "audio":
      return { type: "file", data: b.data, mimeType: b.mimeType };
    case "resource":
      if (b.blob !== undefined) {
        return { type: "file", data: b.blob, mimeType: b.mimeType ?? "application/octet-stream" };
      }
      return { type: "text", text: b.text ?? "" };
    case "resource_link":
      return { type: "text", text: `[resource link: ${b.name} <${b.uri}>]` };
    case "text":
      return { type: "text", text: b.text };
  }
}
