"""What every fuzz test shares: the Hypothesis profiles, the tally each test records for the
fuzz report, hostile text as a command line or a form sends it, and the snapshot that says
whether refused input wrote anything.

Profiles: ``stopline-fuzz`` (a few examples per test; every test run) and
``stopline-fuzz-slow`` (``STOPLINE_SLOW=1``, as CI runs). ``STOPLINE_FUZZ_EXAMPLES=N`` sets the
examples of a weight-1 test for a longer hunt (docs/reliability.md). The profiles are applied
per test (``fuzz_settings()``), never loaded globally, so no other test changes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from helpers import count, dump
from stopline.store import open_store
from strategies import hostile_json_texts, json_values, nest, surrogate_strings

SLOW = os.environ.get("STOPLINE_SLOW") == "1"
EXAMPLES_ENV = "STOPLINE_FUZZ_EXAMPLES"

settings.register_profile(
    "stopline-fuzz",
    max_examples=10,
    deadline=None,
    database=None,  # a CI run starts clean; a failure prints its reproduction blob
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
)
settings.register_profile(
    "stopline-fuzz-slow", settings.get_profile("stopline-fuzz"), max_examples=50
)
PROFILE = "stopline-fuzz-slow" if SLOW else "stopline-fuzz"


def fuzz_settings(weight: float = 1.0) -> settings:
    """The profile's settings, with ``weight`` times its examples (at least one)."""
    base = settings.get_profile(PROFILE)
    examples = int(os.environ.get(EXAMPLES_ENV) or base.max_examples)
    return settings(base, max_examples=max(1, round(examples * weight)))


def asgi_client(app: Any) -> Any:
    """Starlette's ``TestClient`` for ``app`` (server errors as 500 answers, no redirects
    followed), imported without its warning that it prefers httpx2 to the dev extra's httpx."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    return TestClient(app, raise_server_exceptions=False, follow_redirects=False)


# --- the tally of one fuzz test ---------------------------------------------------------------


@dataclass
class Tally:
    """What one fuzz test saw: cases run, refused, accepted; crashes (a traceback, an exit
    status or HTTP status that is not an answer); writes by refused input."""

    target: str
    cases: int = 0
    refused: int = 0
    accepted: int = 0
    crashes: int = 0
    refused_writes: int = 0

    def crash(self, message: str) -> None:
        self.crashes += 1
        raise AssertionError(message)

    def wrote(self, message: str) -> None:
        self.refused_writes += 1
        raise AssertionError(message)


@contextmanager
def tally(target: str, record_property: Callable[[str, Any], None]) -> Iterator[Tally]:
    """A tally recorded for the fuzz report when the test ends, failed or not."""
    found = Tally(target)
    try:
        yield found
    finally:
        record_property("fuzz", asdict(found))


def shown(value: Any, size: int = 300) -> str:
    """``repr(value)`` cut to ``size``, for any value (an int of 5,000 digits has no repr)."""
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<{type(value).__name__}: {type(exc).__name__}>"
    return text if len(text) <= size else text[:size] + "..."


# --- the database before and after ----------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """Every row of every table but ``refusals``, and how many refusal rows there are (a
    refusal the core decides writes one audit row; input refused at the boundary none)."""

    rows: str
    refusals: int


def snapshot(url: str) -> Snapshot:
    store = open_store(url, migrate=False)
    try:
        return Snapshot(json.dumps(dump(store), default=str), count(store, "refusals"))
    finally:
        store.close()


def changes(before: Snapshot, after: Snapshot, *, audit: bool) -> str | None:
    """What changed, or ``None``: the rows must be equal, and so must the audit unless
    ``audit`` allows the one row of a refusal."""
    if after.rows != before.rows:
        return "rows changed"
    if not audit and after.refusals != before.refusals:
        return f"refusal rows {before.refusals} -> {after.refusals}"
    return None


# --- hostile text, as a command line or a form sends it --------------------------------------

from_bytes = st.binary(min_size=1, max_size=12).map(
    lambda raw: raw.decode("utf-8", "surrogateescape")  # how Python hands over argv
)
edge_texts = st.sampled_from(
    [
        "",
        " ",
        "\t\n",
        "\x00",
        "a\x00b",
        "-",
        "--",
        "\u202e",
        "\ufeff",
        "\ud800",
        "\udcff",
        "null",
        "NaN",
        "1e999",
        "' OR 1=1 --",
        "<script>alert(1)</script>",
        "../../etc/passwd",
        "%s%n",
        "\u0430lice",  # a Cyrillic a
        "ALICE",
    ]
)
long_texts = st.builds(
    lambda c, n: c * n, st.sampled_from(["x", "é", "\U0001f600"]), st.integers(9_000, 12_000)
)


def hostile_texts() -> st.SearchStrategy[str]:
    """A flag or form value: any Unicode, bytes that are not UTF-8, lone surrogates, NUL,
    white space, the long and the tricky."""
    return st.one_of(st.text(max_size=20), from_bytes, surrogate_strings, edge_texts, long_texts)


def wire(text: str) -> bytes:
    """The bytes a client sends for ``text``: UTF-8, with ``\\udc80``-``\\udcff`` back as the
    bytes they stood for (argv's surrogateescape) and any other lone surrogate as its invalid
    three-byte form."""
    out = bytearray()
    for char in text:
        if 0xDC80 <= ord(char) <= 0xDCFF:
            out.append(ord(char) - 0xDC00)
        else:
            out += char.encode("utf-8", "surrogatepass")
    return bytes(out)


def _as_text(raw: str | bytes) -> str:
    return raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw


deep_texts = st.sampled_from([600, 5_000]).map(lambda d: "[" * d + "1" + "]" * d) | st.sampled_from(
    [600, 100_000]
).map(lambda d: '{"a":' * d + "1" + "}" * d)
number_texts = st.sampled_from(
    [
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": -Infinity}',
        '{"a": 1e999}',
        '{"a": ' + "1" * 5000 + "}",
        '{"a": 9007199254740993}',
        '{"a": "\\ud800"}',
        '{"a": 1, "a": 2}',
        '{"\\udfff": 1}',
        "[]",
        "1",
        '"text"',
        "{}",
    ]
)


def json_texts() -> st.SearchStrategy[str]:
    """A JSON document typed as text: hostile, deep, not JSON, or a fine object."""
    return st.one_of(
        hostile_json_texts().map(_as_text),
        deep_texts,
        number_texts,
        st.dictionaries(st.text(max_size=6), json_values(), max_size=4).map(json.dumps),
        hostile_texts(),
    )


int_texts = st.one_of(
    st.integers(-(2**40), 2**40).map(str),
    st.sampled_from(
        ["0", "-1", "1" * 5000, "99999999999", "1e3", "0x10", " 7 ", "\u0663", "+5", ""]
    ),
    hostile_texts(),
)

# --- hostile JSON values, as a parsed body holds them -----------------------------------------


def deep(depth: int) -> Any:
    return nest(1, depth)


__all__ = [
    "SLOW",
    "Snapshot",
    "Tally",
    "asgi_client",
    "changes",
    "deep",
    "fuzz_settings",
    "hostile_texts",
    "int_texts",
    "json_texts",
    "shown",
    "snapshot",
    "tally",
    "wire",
]
