"""The JSON-RPC messages an agent sends ``stopline mcp``, read strictly before the MCP SDK
sees them (``mcp_server.py`` puts this in front of both transports).

The SDK reads a message leniently: ``NaN``, ``Infinity`` and ``1e999`` become numbers that it
later writes back as ``null``, a key given twice keeps its last value, and on stdio a byte
that is not UTF-8 becomes U+FFFD. So every message is first read here, on the exact bytes
received, by stopline's own strict reading (``core/json_input.parse_json``): strict UTF-8, no
``NaN``/``Infinity``/``1e999``, no key given twice, no lone surrogate, no deeper than
:data:`MAX_DEPTH`, no longer than :data:`MAX_MESSAGE` bytes (the SDK's own limit of an HTTP
body). A message that fails never reaches the SDK: it is answered with a JSON-RPC error, code
-32700 when the text cannot be read as JSON at all and -32600 when it can but holds what
stopline refuses, whose message starts ``invalid_input:`` and names every problem, and whose
``id`` is the message's own when it can be read (else ``null``). Nothing is written.

What a record may hold (docs/records.md: string lengths, members, integers within
±(2**53 - 1)) is not the transport's business: the SDK carries such values exactly, and the
tool refuses them with a tool error (``mcp_server.run_tool``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.types import INVALID_REQUEST, PARSE_ERROR
from starlette.types import Message, Receive

from ..core.canonical import MAX_SAFE_INTEGER
from ..core.json_input import parse_json
from ..core.limits import BYTES, INTEGER_RANGE, Limits, Violation, text_problem
from ..core.reasons import Reason

MAX_MESSAGE = DEFAULT_MAX_REQUEST_BODY_SIZE
"""Bytes of one message (4 MiB): the SDK's limit of an HTTP body, and of a line on stdio."""
MAX_DEPTH = 200
"""Containers nested in one message (the arguments' own limit, 64, is the tool's to check)."""
MESSAGE = Limits(
    max_depth=MAX_DEPTH,
    max_bytes=4 * MAX_MESSAGE,
    max_string_length=MAX_MESSAGE,
    max_key_length=MAX_MESSAGE,
    max_members=MAX_MESSAGE,
    max_text_bytes=MAX_MESSAGE,
)
"""The limits of a whole message: only how strictly it is read, never narrower than the SDK."""
RequestId = int | str | None


@dataclass(frozen=True)
class Refused:
    """A message that is not handed to the SDK, and why."""

    id: RequestId
    code: int
    problems: tuple[str, ...]

    @property
    def message(self) -> str:
        return f"{Reason.INVALID_INPUT}: " + "; ".join(self.problems)

    def to_plain(self) -> dict[str, Any]:
        """The JSON-RPC error response."""
        data = {"reasons": [str(Reason.INVALID_INPUT)], "problems": list(self.problems)}
        error = {"code": self.code, "message": self.message, "data": data}
        return {"jsonrpc": "2.0", "id": self.id, "error": error}

    def line(self) -> str:
        return json.dumps(self.to_plain(), sort_keys=True) + "\n"


def check_message(raw: bytes) -> tuple[str, None] | tuple[None, Refused]:
    """``(text, None)`` when ``raw`` is a message read strictly (``text``: the same bytes as
    UTF-8 text), else ``(None, refusal)``. Never raises."""
    value, found = parse_json(raw, MESSAGE)
    problems = [v for v in found if v.limit != INTEGER_RANGE]  # carried exactly; the tool's
    if not problems:
        return raw.decode("utf-8"), None
    code = PARSE_ERROR if value is None else INVALID_REQUEST
    return None, Refused(request_id(raw), code, tuple(str(v) for v in problems))


def too_long(size: int) -> Refused:
    detail = f"a message of {size} bytes; at most {MAX_MESSAGE}"
    return Refused(None, PARSE_ERROR, (str(Violation("$", BYTES, detail)),))


def request_id(raw: bytes) -> RequestId:
    """The ``id`` of a refused message, when it can be read without doubt (text that is not
    UTF-8 read with U+FFFD for the bytes it cannot decode); else ``None``."""
    value, _ = parse_json(raw.decode("utf-8", "replace"), MESSAGE)
    if not isinstance(value, dict) or "id" in getattr(value, "duplicates", ()):
        return None
    found = value.get("id")
    if type(found) is int and -MAX_SAFE_INTEGER <= found <= MAX_SAFE_INTEGER:
        return found
    if type(found) is str and "\ufffd" not in found and text_problem(found) is None:
        return found
    return None


# --- stdio --------------------------------------------------------------------------------------


class LockedLines:
    """stdout for ``mcp.server.stdio.stdio_server``: each :meth:`write` is one whole line,
    written and flushed under one lock, so the SDK's answers and :class:`StrictLines`' refusals
    never interleave."""

    def __init__(self, sink: BinaryIO) -> None:
        self.sink = sink
        self.lock = anyio.Lock()

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")
        async with self.lock:
            await anyio.to_thread.run_sync(self._put, data)

    def _put(self, data: bytes) -> None:
        self.sink.write(data)
        self.sink.flush()

    async def flush(self) -> None:
        """Each write is flushed as it is written."""


class StrictLines:
    """stdin for ``mcp.server.stdio.stdio_server``: the lines of ``source`` read as bytes; a
    line :func:`check_message` passes is handed on as text, any other answered on ``out``."""

    def __init__(self, source: BinaryIO, out: LockedLines) -> None:
        self.source = source
        self.out = out

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            line = await anyio.to_thread.run_sync(self._next, abandon_on_cancel=True)
            if line is None:
                return
            if isinstance(line, Refused):
                await self.out.write(line.line())
            else:
                yield line

    def _next(self) -> str | Refused | None:
        """The next line, checked (in a worker thread); ``None`` at the end of the input. A
        line over the limit is read to its end and dropped, only its size kept."""
        raw = self.source.readline(MAX_MESSAGE + 1)
        if not raw:
            return None
        if len(raw) > MAX_MESSAGE:
            size = len(raw)
            while raw and not raw.endswith(b"\n"):
                raw = self.source.readline(1 << 16)
                size += len(raw)
            return too_long(size)
        text, refused = check_message(raw)
        return refused if refused is not None else text


# --- HTTP ---------------------------------------------------------------------------------------


async def read_body(receive: Receive, limit: int = MAX_MESSAGE) -> bytes | None:
    """The request's whole body; ``None`` when the client left before sending it all. Reading
    stops once the body is longer than ``limit``: the caller answers 413 to such a body."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        if len(body) > limit or not message.get("more_body", False):
            return bytes(body)


def replay(body: bytes, receive: Receive) -> Callable[[], Awaitable[Message]]:
    """A ``receive`` that hands over ``body`` as the request's one message, then defers to
    ``receive`` (for the client leaving)."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again
