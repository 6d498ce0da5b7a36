"""Signed mode over HTTP: the server signs each signed-in person's command with its own key,
certified by the root to speak for them; tokens authenticate only when their actor signed
their issue; without a server key every command is refused and says why."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from proc import free_port
from server.httphelp import Server, sign_in, start_serve
from stopline.controller import utcnow
from stopline.store import raw
from stopline.trust.documents import Signed

from .signedlab import SignedLab, execute_sql, store_time


@contextmanager
def serving(lab: SignedLab, *, signed: bool = True, **env: str) -> Iterator[Server]:
    """A real ``stopline serve`` on the lab's database, stopped afterwards."""
    server = start_serve(["serve"], env={**lab.env(signed=signed), **env}, folder=lab.root)
    try:
        yield server
    finally:
        server.stop()


def token(lab: SignedLab, name: str) -> str:
    made = lab.cli_json("actors", "token", name, "--key", str(lab.key_path(name)))
    return str(made["token"])


def approve(server: Server, bearer: str, item: str, digest: str) -> httpx.Response:
    with server.client(bearer) as c:
        return c.post(f"/api/items/{item}/approve", json={"proposal": digest})


def certify_server(lab: SignedLab) -> None:
    lab.cli(
        "keys",
        "certify",
        "server.web-1",
        "--key",
        f"{lab.key_path('server')}.pub",
        "--purpose",
        "speak_for",
        "--root",
        str(lab.key_path("root")),
    )


def test_the_server_signs_for_the_signed_in_people(lab: SignedLab) -> None:
    """alice and bob approve over the API; each attestation names them and via the server,
    signed by the server's key; a viewer's token cannot approve; the worker executes once."""
    certify_server(lab)
    tokens = {name: token(lab, name) for name in ("alice", "bob", "dana")}
    item, digest = lab.item().id, lab.digest()
    with serving(lab, STOPLINE_SERVER_KEY=str(lab.key_path("server"))) as server:
        with server.client(tokens["alice"]) as c:
            assert c.get("/api/me").json()["mode"] == "signed"
        viewer = approve(server, tokens["dana"], item, digest)
        assert viewer.status_code == 403
        first = approve(server, tokens["alice"], item, digest)
        assert first.status_code == 200, first.text
        second = approve(server, tokens["bob"], item, digest)
        assert second.json()["state"] == "approved", second.text
        page = sign_in(server, tokens["alice"]).get("/inbox").text
        assert 'data-mode="signed"' in page and "server.web-1" in page
    for approval in lab.item().doc("proposal")["approvals"]:
        signed = Signed.from_plain(approval["attestation"])
        assert signed.valid()
        assert signed.body["actor"] == approval["actor"]
        assert signed.body["via"] == "server.web-1"
        assert signed.public_key == lab.keys["server"].public_key
    lab.work()
    assert lab.item().state.value == "completed"
    assert len(lab.executed()) == 1
    assert lab.verify()["ok"]


def test_without_a_server_key_commands_are_refused(lab: SignedLab) -> None:
    """In signed mode a server with no key refuses every command signature_invalid and says
    how to configure one; an unsigned server says the database is the trust boundary."""
    alice = token(lab, "alice")
    with serving(lab) as server:
        refused = approve(server, alice, lab.item().id, lab.digest())
        assert refused.status_code == 409
        body: dict[str, Any] = refused.json()
        assert body["reasons"] == ["signature_invalid"]
        assert any("STOPLINE_SERVER_KEY" in line for line in body["explanation"])
        page = sign_in(server, alice).get("/inbox").text
        assert "no key to sign your commands" in page
    assert lab.item().seq == 3
    with serving(lab, signed=False) as server:
        page = sign_in(server, alice).get("/inbox").text
        assert 'data-mode="unsigned"' in page and "whoever can write it can approve" in page


def serve_refused(lab: SignedLab, key: str) -> str:
    """``stopline serve`` with ``key`` as the server key must exit 2 at once; its stderr."""
    done = lab.cli(
        "serve",
        "--port",
        str(free_port()),
        ok=(2,),
        env={"STOPLINE_SERVER_KEY": str(lab.key_path(key))},
        timeout=60,  # a server that started would serve until then
    )
    return done.stderr


def test_a_server_key_that_may_not_speak_for_people(lab: SignedLab) -> None:
    """serve refuses to start (exit 2) with a key the root did not certify speak_for."""
    assert "not certified to speak for" in serve_refused(lab, "alice")


def test_a_revoked_server_key_may_not_speak_for_people(lab: SignedLab) -> None:
    """serve refuses to start (exit 2) with a key certified speak_for and revoked since."""
    certify_server(lab)
    lab.cli("keys", "revoke", "server.web-1", "--root", str(lab.key_path("root")))
    assert "not certified to speak for" in serve_refused(lab, "server")


def test_a_token_written_into_the_database_authenticates_nobody(lab: SignedLab) -> None:
    """A token row inserted by SQL, or issued consistently through the registry but without
    the actor's signature, gives no access to the API or the inbox."""
    certify_server(lab)
    token(lab, "alice")  # alice has an actor row and a real token
    forged = {"stl_sql": "stl_forged_by_sql", "stl_chain": "stl_forged_in_the_chain"}
    with lab.store() as store:
        hashed = hashlib.sha256(forged["stl_sql"].encode()).hexdigest()
        execute_sql(
            store,
            "INSERT INTO tokens (hash, actor, created_at) VALUES (:hash, 'alice', :at)",
            {"hash": hashed, "at": store_time(store, utcnow())},
        )
        chained = hashlib.sha256(forged["stl_chain"].encode()).hexdigest()
        store.add_token("alice", chained, utcnow())  # a registry event, no signature
    with serving(lab, STOPLINE_SERVER_KEY=str(lab.key_path("server"))) as server:
        for value in forged.values():
            assert approve(server, value, lab.item().id, lab.digest()).status_code == 401
            with server.client() as c:
                page = c.get("/signin")
                csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
                answer = c.post("/signin", data={"csrf": csrf, "token": value})
                assert answer.status_code == 401
    assert lab.item().seq == 3


def test_a_proxy_header_names_only_a_certified_actor(lab: SignedLab) -> None:
    """A trusted proxy header in signed mode names an actor the trust root certified (alice),
    never one whose row was written into the actors table (mallory, an approver); and once
    such a row is there, nobody: the registry no longer verifies, as for a token."""

    def inbox_as(server: Server, name: str) -> int:
        headers = {"X-Remote-User": name}
        return httpx.get(f"{server.base}/inbox", headers=headers, timeout=20).status_code

    with serving(lab, STOPLINE_TRUST_PROXY_HEADER="X-Remote-User") as server:
        assert inbox_as(server, "alice") == 200
        assert inbox_as(server, "mallory") == 303
        with lab.store() as store:
            execute_sql(
                store,
                "INSERT INTO actors (name, roles, active, created_at, updated_at)"
                " VALUES ('mallory', :roles, :yes, :at, :at)",
                {
                    "roles": raw.json_value(store, ["approver"]),
                    "yes": True,
                    "at": store_time(store, utcnow()),
                },
            )
        assert inbox_as(server, "mallory") == 303
        assert inbox_as(server, "alice") == 303
