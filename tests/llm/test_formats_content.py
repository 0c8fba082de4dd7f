"""A tool's result read as text and media, once for every provider (mcp_sync.llm.content)."""

from __future__ import annotations

from mcp_sync.llm.content import Media, pieces, stand_in
from mcp_sync.protocol.types import CallToolResult, ImageContent, TextContent


def test_structured_content_is_added_unless_a_text_block_already_holds_it() -> None:
    image = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    result = CallToolResult(content=[TextContent(text="not json"), image], structured_content={"n": 1})
    assert pieces(result) == ["not json", Media("image", "image/png", "iVBORw0KGgo="), '{"n": 1}']
    said = CallToolResult(content=[TextContent(text="[1]"), TextContent(text='{"n": 1}')], structured_content={"n": 1})
    assert pieces(said) == ["[1]", '{"n": 1}']


def test_media_that_is_not_base64_is_described_as_empty_not_a_crash() -> None:
    broken = Media("image", "image/png", "not base64!")
    assert broken.raw() == b"" and broken.size == 0
    assert stand_in(broken) == "[an image (image/png, 0 bytes) the tool returned, which cannot be shown here]"
