"""A PostgreSQL server that vanishes without a word (its host powered off, the network cut)
sends nothing: no reset, no error. A connection waiting for its answer must not wait for good
(``store/pg_connect.py``).

The cut is real: the store runs in a process of its own in a network namespace of its own,
reaching the server through a virtual link and a forwarder in the test's process; the test
takes the link down, and every packet on it is lost, silently, as on a cut cable. This needs
root and ``ip`` (CI has both); elsewhere it is skipped, or failed under
``STOPLINE_REQUIRE_NETNS=1``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from stopline.store.pg_connect import TCP_DEFAULTS, tcp_settings

pytestmark = pytest.mark.postgres

STORE_SIDE = """
import sys
from stopline.store import open_store
from stopline.store.errors import connection_errors

store = open_store(sys.argv[1], migrate=False)
store.get("nothing")  # a round trip through the link
print("ready", flush=True)
sys.stdin.readline()  # the link is down now
try:
    store.get("nothing")
except connection_errors() as exc:
    print("gave up:", type(exc).__name__, flush=True)
    sys.exit(0)
print("answered", flush=True)
sys.exit(1)
"""


def test_the_urls_own_settings_win_and_the_rest_are_the_defaults() -> None:
    url = "postgresql://postgres@db.example:5432/x?tcp_user_timeout=5000&keepalives_idle=7"
    assert tcp_settings(url) == {
        k: v for k, v in TCP_DEFAULTS.items() if k not in {"tcp_user_timeout", "keepalives_idle"}
    }
    assert tcp_settings("host=db.example dbname=x") == TCP_DEFAULTS
    assert TCP_DEFAULTS["keepalives"] == "1" and int(TCP_DEFAULTS["tcp_user_timeout"]) > 0


@dataclass
class Link:
    """A network namespace joined to this one by a virtual link, and a forwarder on this side
    to the PostgreSQL server on 127.0.0.1."""

    namespace: str
    outside: str  # this side's end of the link
    address: str  # this side's address, where the forwarder listens
    port: int

    def down(self) -> None:
        subprocess.run(["ip", "link", "set", self.outside, "down"], check=True)


def _forward(listener: socket.socket, target: tuple[str, int]) -> None:
    """Pass each connection on to ``target``, both ways, until either side ends."""

    def pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass

    while True:
        try:
            inside, _ = listener.accept()
        except OSError:
            return
        server = socket.create_connection(target)
        for a, b in ((inside, server), (server, inside)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


@pytest.fixture
def link(postgres_url: str) -> Iterator[Link]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        if os.environ.get("STOPLINE_REQUIRE_NETNS") == "1":
            pytest.fail("a network namespace needs root and ip (STOPLINE_REQUIRE_NETNS=1)")
        pytest.skip("a network namespace needs root and ip")
    tag = os.getpid() % 100_000
    namespace, outside, inside = f"slns{tag}", f"slv{tag}a", f"slv{tag}b"
    net = f"10.213.{tag % 250}"
    setup = [
        ["ip", "netns", "add", namespace],
        ["ip", "link", "add", outside, "type", "veth", "peer", "name", inside],
        ["ip", "link", "set", inside, "netns", namespace],
        ["ip", "addr", "add", f"{net}.1/30", "dev", outside],
        ["ip", "link", "set", outside, "up"],
        ["ip", "netns", "exec", namespace, "ip", "addr", "add", f"{net}.2/30", "dev", inside],
        ["ip", "netns", "exec", namespace, "ip", "link", "set", inside, "up"],
    ]
    listener = socket.socket()
    _remove(namespace, outside)  # what a killed run of the same process id may have left
    try:
        for argv in setup:
            subprocess.run(argv, check=True, capture_output=True)
        listener.bind((f"{net}.1", 0))
        listener.listen()
        threading.Thread(target=_forward, args=(listener, ("127.0.0.1", 5432)), daemon=True).start()
        yield Link(namespace, outside, f"{net}.1", listener.getsockname()[1])
    finally:
        listener.close()
        _remove(namespace, outside)


def _remove(namespace: str, outside: str) -> None:
    subprocess.run(["ip", "link", "del", outside], capture_output=True)
    subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


@pytest.mark.slow
def test_a_store_whose_server_vanished_gives_up_instead_of_waiting_for_good(
    link: Link, postgres_url: str, tmp_path: Path
) -> None:
    """The store's read after the cut fails as a connection error (the worker's reconnect
    rules take it from there). Before ``pg_connect.py`` it waited for the kernel's own limit
    on a request never acknowledged (about a quarter of an hour) and failed this test's
    deadline; an answer lost after the request was acknowledged, it would wait for ever."""
    database = postgres_url.rsplit("/", 1)[1]
    url = f"postgresql://postgres@{link.address}:{link.port}/{database}"
    script = tmp_path / "store_side.py"
    script.write_text(STORE_SIDE)
    side = subprocess.Popen(
        ["ip", "netns", "exec", link.namespace, sys.executable, str(script), url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert side.stdout is not None and side.stdin is not None
        assert side.stdout.readline().strip() == "ready", side.stderr.read() if side.stderr else ""
        link.down()
        side.stdin.write("go\n")
        side.stdin.flush()
        out, err = side.communicate(timeout=300)
        assert side.returncode == 0, (out, err)
        assert out.startswith("gave up: "), (out, err)
    finally:
        if side.poll() is None:
            side.kill()
            side.wait()
