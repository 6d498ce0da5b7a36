"""Security: each attempt is refused and ends with nothing written (every table but
``refusals`` compared before and after)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import httpx

from integrity.attacker import Attacker
from stopline.controller import Controller
from stopline.store import open_store

from .conftest import Demo
from .httphelp import Server, csrf_of, nothing_written, sign_in

MSG_1041 = "support-triage/msg-1041"
MSG_1044 = "support-triage/msg-1044"


def test_form_without_csrf_token(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    digest = item.doc("proposal")["digest"]
    alice = sign_in(live, demo.tokens["alice"])
    other = sign_in(live, demo.tokens["bob"])
    foreign = csrf_of(other.get(f"/items/{item.id}").text)
    with nothing_written(demo.url):
        for form in (
            {"proposal": digest},
            {"proposal": digest, "csrf": ""},
            {"proposal": digest, "csrf": "forged"},
            {"proposal": digest, "csrf": foreign},  # a token bound to another session
        ):
            response = alice.post(f"/items/{item.id}/approve", data=form)
            assert response.status_code == 403, response.text
            assert "Nothing was done" in response.text
        # no session at all (a cross-site form post carries no SameSite=Strict cookie)
        bare = live.client().post(
            f"/items/{item.id}/approve", data={"proposal": digest, "csrf": foreign}
        )
        assert bare.status_code == 403
        # signing in and out need the token too
        assert alice.post("/signout", data={}).status_code == 403
        assert (
            live.client().post("/signin", data={"token": demo.tokens["alice"]}).status_code == 403
        )
    assert demo.item(MSG_1041).state.value == "awaiting_approval"


def test_viewer_token_on_a_command(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    digest = item.doc("proposal")["digest"]
    with nothing_written(demo.url):
        with live.client(demo.tokens["dana"]) as dana:
            for command, body in (
                ("approve", {"proposal": digest}),
                ("close", {"reason": "viewer tries"}),
                ("finalize", {}),
            ):
                response = dana.post(f"/api/items/{item.id}/{command}", json=body)
                assert response.status_code == 403
                assert response.json()["error"] == "forbidden"
        browser = sign_in(live, demo.tokens["dana"])
        page = browser.get(f"/items/{item.id}")
        assert page.status_code == 200
        assert 'data-testid="actions"' not in page.text
        assert 'data-testid="action-' not in page.text
        response = browser.post(
            f"/items/{item.id}/approve", data={"csrf": csrf_of(page.text), "proposal": digest}
        )
        assert response.status_code == 403


def test_an_approver_acting_for_another_actor(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    digest = item.doc("proposal")["digest"]
    with nothing_written(demo.url):
        with live.client(demo.tokens["bob"]) as bob:
            response = bob.post(
                f"/api/items/{item.id}/approve", json={"proposal": digest, "actor": "alice"}
            )
            assert response.status_code == 422
            assert "authenticated identity" in response.json()["problems"][0]
        browser = sign_in(live, demo.tokens["bob"])
        page = browser.get(f"/items/{item.id}")
        response = browser.post(
            f"/items/{item.id}/approve",
            data={"csrf": csrf_of(page.text), "proposal": digest, "actor": "alice"},
        )
        assert response.status_code == 422
        assert "authenticated identity" in response.text


def test_a_script_in_evidence_is_inert(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1044)
    assert "<script>" in item.doc("evidence")["data"]["body"]
    with nothing_written(demo.url):
        browser = sign_in(live, demo.tokens["alice"])
        for path in (f"/items/{item.id}", "/inbox"):
            page = browser.get(path)
            assert page.status_code == 200
            assert "<script" not in page.text.lower()
            assert "default-src 'none'" in page.headers["content-security-policy"]
            assert page.headers["x-content-type-options"] == "nosniff"
        assert (
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
            in browser.get(f"/items/{item.id}").text
        )
        with live.client(demo.tokens["alice"]) as api:
            shown = api.get(f"/api/items/{item.id}")
            assert shown.headers["content-type"] == "application/json"


def test_a_script_in_a_draft_and_a_reason_is_inert(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    params = {
        **item.doc("proposal")["params"],
        "draft": "Hi <script>alert(1)</script><img src=x onerror=alert(2)>",
    }
    with live.client(demo.tokens["carol"]) as carol:
        assert carol.post(f"/api/items/{item.id}/edit", json={"params": params}).status_code == 200
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get(f"/items/{item.id}").text
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in page
    assert 'data-testid="proposal-diff"' in page
    with live.client(demo.tokens["alice"]) as alice:
        reason = "<script>document.cookie</script>"
        assert (
            alice.post(f"/api/items/{item.id}/reject", json={"reason": reason}).status_code == 200
        )
    page = browser.get(f"/items/{item.id}").text
    assert "<script" not in page.lower()
    assert "&lt;script&gt;document.cookie&lt;/script&gt;" in page


SQLISH = [
    "' OR '1'='1",
    "x'; DROP TABLE items; --",
    '" OR 1=1 --',
    "%' UNION SELECT * FROM tokens --",
]


def test_sql_looking_strings_in_filters(demo: Demo, live: Server) -> None:
    with nothing_written(demo.url):
        with live.client(demo.tokens["dana"]) as dana:
            for text in SQLISH:
                for name in ("automation", "key"):
                    found = dana.get("/api/items", params={name: text})
                    assert found.status_code == 200 and found.json() == {"items": []}
                for name in ("state", "state_class", "overdue", "sort", "limit"):
                    assert dana.get("/api/items", params={name: text}).status_code == 422
            assert len(dana.get("/api/items").json()["items"]) == 8
        browser = sign_in(live, demo.tokens["dana"])
        for text in SQLISH:
            page = browser.get("/inbox", params={"automation": text})
            assert page.status_code == 200 and 'data-testid="inbox-empty"' in page.text
            assert browser.get("/inbox", params={"state": text}).status_code == 422
            assert browser.get(f"/items/{text}").status_code in (404, 422)


def _chunks(size: int) -> Iterator[bytes]:
    sent = 0
    while sent < size:
        yield b" " * 4096
        sent += 4096


def test_an_oversized_body(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    big = b'{"reason": "' + b"x" * (70 * 1024) + b'"}'
    with nothing_written(demo.url):
        with live.client(demo.tokens["alice"]) as alice:
            declared = alice.post(
                f"/api/items/{item.id}/close",
                content=big,
                headers={"content-type": "application/json"},
            )
            assert declared.status_code == 413
            assert declared.json()["error"] == "too_large"
            chunked = alice.post(f"/api/items/{item.id}/close", content=_chunks(100 * 1024))
            assert chunked.status_code == 413
        browser = sign_in(live, demo.tokens["alice"])
        csrf = csrf_of(browser.get(f"/items/{item.id}").text)
        form = browser.post(
            f"/items/{item.id}/close", data={"csrf": csrf, "reason": "x" * (70 * 1024)}
        )
        assert form.status_code == 413


def test_a_revoked_token(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    digest = item.doc("proposal")["digest"]
    with nothing_written(demo.url):
        with live.client(demo.tokens["erin"]) as erin:
            assert (
                erin.post(f"/api/items/{item.id}/approve", json={"proposal": digest}).status_code
                == 401
            )
            assert erin.get("/api/items").status_code == 401
        browser = live.client()
        page = browser.get("/signin")
        refused = browser.post(
            "/signin", data={"csrf": csrf_of(page.text), "token": demo.tokens["erin"]}
        )
        assert refused.status_code == 401
        assert 'data-testid="signin-error"' in refused.text


def test_revoking_ends_a_web_session(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["bob"])
    assert browser.get("/inbox").status_code == 200
    store = open_store(demo.url)
    try:
        Controller(store).revoke_actor("bob")
    finally:
        store.close()
    response = browser.get("/inbox")
    assert response.status_code == 303 and response.headers["location"] == "/signin"


def test_a_revocation_undone_in_the_tables_signs_nobody_in_again(
    demo: Demo, live: Server, start_server: Callable[..., Server]
) -> None:
    """Bob is revoked, then someone with the database sets his actor row active and his token
    live again, by hand. The registry chain still records the revocation, so neither his API
    token nor the web session he had signs him in, nor does a proxy header name him."""
    browser = sign_in(live, demo.tokens["bob"])
    store = open_store(demo.url)
    try:
        Controller(store).revoke_actor("bob")
    finally:
        store.close()
    attacker = Attacker(demo.url)
    try:
        attacker.sql("UPDATE actors SET active = :yes WHERE name = 'bob'", {"yes": True})
        attacker.sql("UPDATE tokens SET revoked_at = NULL WHERE actor = 'bob'")
    finally:
        attacker.close()
    with live.client(demo.tokens["bob"]) as api:
        assert api.get("/api/items").status_code == 401
    response = browser.get("/inbox")
    assert response.status_code == 303 and response.headers["location"] == "/signin"
    proxied = start_server(demo.url, STOPLINE_TRUST_PROXY_HEADER="X-Remote-User")
    named = httpx.get(f"{proxied.base}/inbox", headers={"X-Remote-User": "bob"})
    assert named.status_code == 303


def test_session_cookie_flags(live: Server) -> None:
    response = live.client().get("/signin")
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie


def test_tampered_session_cookie_is_refused(demo: Demo, live: Server) -> None:
    """A session cookie changed in any way (its payload, its signature, its purpose) signs
    nobody in, and a form sent with it changes nothing."""
    item = demo.item(MSG_1041)
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get(f"/items/{item.id}")
    csrf = csrf_of(page.text)
    cookie = browser.cookies["stopline_session"]
    signed, _, signature = cookie.rpartition(".")

    def other(char: str) -> str:  # a different character (the first of a base64 text: all bits)
        return "A" if char != "A" else "B"

    forged = [
        f"{other(signed[0])}{signed[1:]}.{signature}",  # the payload changed
        f"{signed}.{other(signature[0])}{signature[1:]}",  # the signature changed
        f"{signed}.{signature}x",
        signed,  # no signature
        csrf,  # a CSRF token is no cookie
        "x" * 5000,
    ]
    with nothing_written(demo.url):
        for value in forged:
            with live.client(cookies={"stopline_session": value}) as client:
                response = client.get("/inbox")
                assert response.status_code == 303, value
                assert response.headers["location"] == "/signin"
                form = {"csrf": csrf, "reason": "tampered"}
                assert client.post(f"/items/{item.id}/close", data=form).status_code == 403
        # the cookie's value is no CSRF token either
        form = {"csrf": cookie, "reason": "cookie as token"}
        assert browser.post(f"/items/{item.id}/close", data=form).status_code == 403
    assert browser.get("/inbox").status_code == 200  # the untouched cookie still works


def test_no_state_change_on_get(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    browser = sign_in(live, demo.tokens["alice"])
    with nothing_written(demo.url):
        for path in (f"/items/{item.id}/approve", f"/items/{item.id}/close", "/signout"):
            assert browser.get(path).status_code == 405
        with live.client(demo.tokens["alice"]) as api:
            assert api.get(f"/api/items/{item.id}/close").status_code == 405


def test_proxy_header_only_when_configured(
    demo: Demo, live: Server, start_server: Callable[..., Server]
) -> None:
    header = {"X-Remote-User": "alice"}
    ignored = httpx.get(f"{live.base}/inbox", headers=header)
    assert ignored.status_code == 303  # not configured: the header means nothing
    proxied = start_server(demo.url, STOPLINE_TRUST_PROXY_HEADER="X-Remote-User")
    page = httpx.get(f"{proxied.base}/inbox", headers=header)
    assert page.status_code == 200 and 'data-testid="whoami-name">alice<' in page.text
    unknown = httpx.get(f"{proxied.base}/inbox", headers={"X-Remote-User": "mallory"})
    assert unknown.status_code == 303
    # the API never trusts the header: it needs a token
    assert httpx.get(f"{proxied.base}/api/items", headers=header).status_code == 401


# What the browser is told, written out here rather than read from the guard's own list.
HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
POLICY = (
    "default-src 'none'",
    "style-src 'self'",
    "img-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
)


def test_every_kind_of_response_carries_the_security_headers(demo: Demo, live: Server) -> None:
    """Pages, API answers, errors, the static files and the documents alike: no framing, no
    caching, no referrer beyond this origin, no script from anywhere."""
    item = demo.item(MSG_1041)
    browser = sign_in(live, demo.tokens["dana"])
    with live.client(demo.tokens["dana"]) as api:
        responses = [
            browser.get("/inbox"),
            browser.get(f"/items/{item.id}"),
            live.client().get("/signin"),
            api.get("/api/items"),
            api.get("/api/items/no-such-item"),
            live.client().get("/api/me"),
            api.get("/openapi.json"),
            api.get("/metrics"),
            api.get("/static/stopline.css"),
            api.get("/nowhere"),
            api.post(f"/api/items/{item.id}/close", content=b"x" * (70 * 1024)),
        ]
    assert [r.status_code for r in responses] == [
        200, 200, 200, 200, 404, 401, 200, 200, 200, 404, 413,
    ]  # fmt: skip
    for response in responses:
        for name, value in HEADERS.items():
            assert response.headers.get_list(name) == [value], (response.url, name)
        policy = response.headers["content-security-policy"].split("; ")
        assert sorted(policy) == sorted(POLICY), response.url


def test_a_label_value_written_into_the_database_cannot_forge_a_metric(
    demo: Demo, live: Server
) -> None:
    """A worker's id and host come from its heartbeat row, which whoever can write the
    database can fill with anything: a quote, a brace, a newline and a backslash are escaped
    in the label, so such a row adds no metric and breaks no line of the exposition."""
    worker = 'w\\1"} 9\nstopline_forged_total 1\n#'
    host = 'h"\\n{x="y"}'
    store = open_store(demo.url)
    try:
        now = datetime.now(UTC)
        store.heartbeats.beat(worker, host, 1, ["support-triage"], now, now, {})
    finally:
        store.close()
    text = live.client().get("/metrics").text
    lines = text.splitlines()
    assert not any(line.startswith("stopline_forged") for line in lines)
    escaped_worker = 'w\\\\1\\"} 9\\nstopline_forged_total 1\\n#'
    escaped_host = 'h\\"\\\\n{x=\\"y\\"}'
    assert any(
        f'worker="{escaped_worker}"' in line and f'host="{escaped_host}"' in line
        for line in lines
        if line.startswith("stopline_worker_heartbeat_age_seconds{")
    ), text[-2000:]
    for line in lines:  # every sample line is a name, its labels and one number
        if line and not line.startswith("#"):
            float(line.rsplit(" ", 1)[1])
