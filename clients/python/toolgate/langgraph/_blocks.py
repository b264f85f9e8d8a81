"""A result of more than text as LangChain content blocks, so a model that sees images gets the image."""

from __future__ import annotations

from typing import Any

from langchain_core.messages.content import create_file_block, create_image_block, create_text_block

from ..types import ResultBlock, ToolMessage


def content_of(m: ToolMessage) -> str | list[dict[str, Any]]:
    """The LangChain ToolMessage content for `m`: its text when the result is text alone, else its blocks in
    order as LangChain content blocks (text, image, and file for audio and binary resources, the kinds a tool
    message may carry)."""
    if not m.blocks:
        return m.content
    return [_block(b) for b in m.blocks]


def _block(b: ResultBlock) -> dict[str, Any]:
    if b.type == "image" and b.data:
        return dict(create_image_block(base64=b.data, mime_type=b.mime_type))
    if b.type == "audio" and b.data:
        return dict(create_file_block(base64=b.data, mime_type=b.mime_type))
    if b.type == "resource" and b.blob:
        return dict(create_file_block(base64=b.blob, mime_type=b.mime_type or "application/octet-stream"))
    if b.type == "resource_link":
        return dict(create_text_block(f"[resource link: {b.name} <{b.uri}>]"))
    return dict(create_text_block(b.text or ""))
