/**
 * A result of more than text as LangChain content blocks, so a model that sees images gets the image.
 * @module
 */
import type { ContentBlock } from "@langchain/core/messages";
import type { ToolMessage } from "../types.js";
/**
 * The LangChain ToolMessage content for `m`: its text when the result is text alone, else its blocks in order as
 * LangChain's standard content blocks (text, image, and file for audio and binary resources, as the Python
 * client gives them).
 */
export declare function contentOf(m: ToolMessage): string | ContentBlock[];
