"""The strict reading of an MCP message, in process (``agents/mcp_wire.py``): what a refusal
says, which ``id`` it carries, a line over the limit on stdio, and what is left for the tool.
The end-to-end tests over stdio and HTTP are ``test_mcp_strict.py``."""

from __future__ import annotations

import io
import json
from typing import Any

import anyio
import pytest

from helpers import in_thread
from stopline.agents.mcp_wire import MAX_MESSAGE, LockedLines, StrictLines, check_message

PARSE_ERROR = -32700


def test_a_line_over_the_limit_is_answered_and_the_next_one_read() -> None:
    """In process: a line of more than MAX_MESSAGE bytes is read to its end and answered;
    the line after it is handed on as it came."""
    good = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    source = io.BytesIO(b"[" + b" " * MAX_MESSAGE + b"]\n" + good + b"\n")
    sink = io.BytesIO()

    async def read() -> list[str]:
        return [line async for line in StrictLines(source, LockedLines(sink))]

    assert in_thread(anyio.run, read) == [good.decode() + "\n"]
    refused = json.loads(sink.getvalue())
    assert refused["id"] is None and refused["error"]["code"] == PARSE_ERROR
    assert f"at most {MAX_MESSAGE}" in refused["error"]["message"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b'{"id": 3, "x": NaN}', 3),
        (b'{"id": "r-1", "x": NaN}', "r-1"),
        (b'{"id": true, "x": NaN}', None),
        (b'{"id": 9007199254740993, "x": NaN}', None),
        (b'{"id": "\\udc00", "x": 1}', None),
        (b'{"id": "a\xff", "x": 1}', None),
        (b'{"id": 4, "x": "\xff"}', 4),
        (b"[NaN]", None),
    ],
)
def test_a_refusal_carries_the_id_only_when_it_reads_without_doubt(
    text: bytes, expected: Any
) -> None:
    passed, refused = check_message(text)
    assert passed is None and refused is not None
    assert refused.to_plain()["id"] == expected


def test_what_a_record_may_not_hold_is_the_tools_to_refuse() -> None:
    """An integer beyond ±(2**53 - 1), a long string or a deep object is carried exactly, for
    the tool to refuse (a tool error); the text handed on is the text received."""
    text = json.dumps({"n": 2**60, "s": "x" * 300_000, "d": [[[[]]]], "e": "é"})
    passed, refused = check_message(text.encode())
    assert refused is None and passed == text
