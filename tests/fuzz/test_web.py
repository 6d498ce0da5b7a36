"""The web inbox's forms under hostile fields: the real app in this process (Starlette over
ASGI) on a copy of the demo database, signed in with a token as a browser is, every post with
the session's CSRF token.

Property: never a 5xx. A form with problems is shown again (422) with the problems, a form
the core refuses is shown again (409) with the refusal, a person who may not act is told so
(403); none of them writes anything (a refusal the core decided: its one audit row). An
accepted form redirects (303).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote_from_bytes

from hypothesis import given
from hypothesis import strategies as st

from stopline.commands.entry import Shell
from stopline.commands.fields import Type
from stopline.commands.table import exposed
from stopline.server.app import create_app

from .conftest import PEOPLE, DemoTemplate
from .kit import (
    asgi_client,
    changes,
    fuzz_settings,
    hostile_texts,
    int_texts,
    json_texts,
    shown,
    snapshot,
    tally,
    wire,
)

WEB = exposed(Shell.WEB)
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SHOWN = {422: 'data-testid="problems"', 409: 'data-testid="refusal"'}


def signed_in(client: Any, token: str) -> str:
    """Sign ``client`` in with ``token``; the session's CSRF token."""
    page = client.get("/signin")
    csrf = CSRF.search(page.text)
    assert csrf, page.text[:300]
    done = client.post(
        "/signin", data={"csrf": csrf.group(1), "token": token}, follow_redirects=False
    )
    assert done.status_code == 303, done.text[:300]
    inbox = client.get("/inbox")
    found = CSRF.search(inbox.text)
    assert found, inbox.text[:300]
    return found.group(1)


def field_values(kind: Type, digests: list[str]) -> st.SearchStrategy[str]:
    if kind is Type.OBJECT:
        return json_texts()
    if kind is Type.INT:
        return int_texts
    if kind is Type.BOOL:
        return st.sampled_from(["1", "on", "true", "0", ""]) | hostile_texts()
    return (
        st.sampled_from([*digests, "approve", "reject", "article-1", "a reason"]) | hostile_texts()
    )


@st.composite
def forms(draw: Any, digests: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """A command and its form fields (repeated, left out, unknown, hostile)."""
    entry = draw(st.sampled_from(WEB))
    pairs: list[tuple[str, str]] = []
    for f in entry.fields:
        for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
            pairs.append((f.name, draw(field_values(f.type, digests))))
    if not draw(st.integers(0, 5)):
        pairs.append(
            (
                draw(st.sampled_from(["actor", "nope", "csrf"]) | hostile_texts()),
                draw(hostile_texts()),
            )
        )
    return entry.name, pairs


def encode(pairs: list[tuple[str, str]], csrf: str) -> bytes:
    """``application/x-www-form-urlencoded``, bytes that are not UTF-8 left as they are."""
    fields = [("csrf", csrf), *pairs]
    return "&".join(
        quote_from_bytes(wire(k)) + "=" + quote_from_bytes(wire(v)) for k, v in fields
    ).encode("ascii")


def test_web_forms_answer_hostile_fields(
    demo_db: DemoTemplate, tmp_path: Path, clean_env: None, record_property: Any
) -> None:
    url = demo_db.copy(tmp_path)
    app = create_app(url)
    clients = {}
    for person in PEOPLE:
        client = asgi_client(app)
        clients[person] = (client, signed_in(client, demo_db.tokens[person]))
    items = sorted({ref for ref in demo_db.refs if ref.startswith("itm_")})

    with tally("web forms", record_property) as t:

        @fuzz_settings(weight=5)
        @given(
            person=st.sampled_from(PEOPLE),
            item=st.sampled_from(items),
            form=forms(demo_db.digests),
        )
        def case(person: str, item: str, form: tuple[str, list[tuple[str, str]]]) -> None:
            t.cases += 1
            command, pairs = form
            client, csrf = clients[person]
            before = snapshot(url)
            response = client.post(
                f"/items/{item}/{command}",
                content=encode(pairs, csrf),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            what = f"{person}: {command} on {item} with {shown(pairs)}"
            status = response.status_code
            if status >= 500:
                t.crash(f"{what}: {status} {response.text[:300]}")
            if status == 303:
                t.accepted += 1
                return
            if status not in (403, 409, 422, 413):
                t.crash(f"{what}: unexpected {status} {response.text[:300]}")
            if status in SHOWN and SHOWN[status] not in response.text:
                t.crash(f"{what}: {status} without the error shown")
            t.refused += 1
            changed = changes(before, snapshot(url), audit=status == 409)
            if changed:
                t.wrote(f"{what}: {status}, and {changed}")

        case()
