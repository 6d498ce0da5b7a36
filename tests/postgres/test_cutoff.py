"""A worker cut off from the database past its lease: its late commit is refused ``lease_lost``.

The victim claims the only item and blocks inside its ``observe`` hook. While it is cut off
(paused with SIGSTOP; or its sessions ended with ``pg_terminate_backend`` while a proxy keeps it
from reconnecting) its lease expires and a second worker completes the item. Then the victim
carries on: its commit is refused and writes nothing, and the other worker's work stands.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest

from proc import Proc, wait_for

from .conftest import PgLab

pytestmark = pytest.mark.postgres

KEY = "item-0000"
LEASE = 2


class CuttableProxy:
    """A TCP proxy in front of the database; :meth:`sever` stops it passing new connections."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.severed = threading.Event()
        self.closed = False
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            if self.severed.is_set():
                client.close()  # the victim's reconnects fail at once
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._pairs.append((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def sever(self) -> list[int]:
        """Refuse new connections; returns the client ports of the server sessions it carries."""
        self.severed.set()
        with self._lock:
            ports = []
            for _, upstream in self._pairs:
                with contextlib.suppress(OSError):
                    ports.append(int(upstream.getsockname()[1]))
            return ports

    def restore(self) -> None:
        self.severed.clear()

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        with self._lock:
            for pair in self._pairs:
                for sock in pair:
                    sock.close()


@pytest.fixture
def proxy(pg_lab: PgLab) -> Iterator[CuttableProxy]:
    """A cuttable proxy to the lab's database server."""
    where = urlsplit(pg_lab.url)
    made = CuttableProxy(where.hostname or "127.0.0.1", where.port or 5432)
    try:
        yield made
    finally:
        made.close()


def late_commit(
    lab: PgLab, cut: Callable[[Proc], None], reconnect: Callable[[Proc], None], db: str = ""
) -> None:
    """Block the victim in ``observe``, ``cut`` it off, let a rescuer complete the item past
    the victim's lease, ``reconnect`` it, open the gate; check the late commit's refusal."""
    gate = lab.root / "gate"
    victim = lab.run_fleet(
        env={
            "STOPLINE_PG_ITEMS": 1,
            "STOPLINE_PG_LEASE": LEASE,
            "STOPLINE_PG_BLOCK_KEY": KEY,
            "STOPLINE_PG_GATE": gate,
        },
        name="victim",
        db=db or None,
    )
    wait_for(
        lambda: lab.query("SELECT 1 FROM executions WHERE pid = %s", (victim.pid,)),
        120,
        "the victim to enter its observe hook",
    )
    (item,) = lab.query("SELECT id, lease_owner, lease_token FROM items")
    assert f":{victim.pid}:" in item["lease_owner"]
    cut(victim)

    # The rescuer's own leases are long: no stall of a loaded machine can cost it one.
    rescuer = lab.run_fleet(env={"STOPLINE_PG_LEASE": 60}, name="rescuer")
    assert rescuer.wait(180) == 0, rescuer.output()
    assert lab.states() == {"completed": 1}, "the rescuer did not complete the item"
    before = lab.dump()
    assert lab.refusals() == []

    reconnect(victim)
    gate.touch()
    assert victim.wait(180) == 0, victim.output()
    assert "lease lost" in victim.err.read_text(), victim.output()

    assert lab.dump() == before, "the late commit wrote something"
    (refusal,) = lab.refusals()
    assert refusal["item_id"] == item["id"]
    assert refusal["command"] == "observe"
    assert refusal["reasons"] == ["lease_lost"]
    assert f":{victim.pid}:" in refusal["actor"]
    runs = lab.query("SELECT pid, token FROM executions WHERE step = 'observe' ORDER BY id")
    assert [r["pid"] for r in runs] == [victim.pid, rescuer.pid]
    assert runs[0]["token"] == item["lease_token"] < runs[1]["token"]
    committed = lab.query("SELECT DISTINCT actor FROM events WHERE command <> 'discover'")
    assert [f":{rescuer.pid}:" in r["actor"] for r in committed] == [True]
    (effect,) = lab.query("SELECT pid FROM effects WHERE step = 'observe'")
    assert effect["pid"] == rescuer.pid
    lab.verify()


def test_a_worker_paused_past_its_lease_is_refused_lease_lost(pg_lab: PgLab) -> None:
    """SIGSTOP inside a step past the lease; after SIGCONT the commit is refused lease_lost."""
    late_commit(
        pg_lab,
        cut=lambda victim: os.kill(victim.pid, signal.SIGSTOP),
        reconnect=lambda victim: os.kill(victim.pid, signal.SIGCONT),
    )


def test_a_worker_whose_sessions_are_killed_past_its_lease_is_refused(
    pg_lab: PgLab, proxy: CuttableProxy
) -> None:
    """pg_terminate_backend inside a step, no way back until past the lease: lease_lost."""

    def cut(victim: Proc) -> None:
        ports = proxy.sever()
        assert ports, "the victim has no session through the proxy"
        killed = pg_lab.query(
            "SELECT pg_terminate_backend(pid, 5000) AS ok FROM pg_stat_activity"
            " WHERE client_port = ANY(%s) AND client_addr = '127.0.0.1'",
            (ports,),
        )
        assert killed and all(r["ok"] for r in killed), killed

    where = urlsplit(pg_lab.url)
    user = where.netloc.rpartition("@")[0]
    netloc = f"{user}@127.0.0.1:{proxy.port}" if user else f"127.0.0.1:{proxy.port}"
    late_commit(
        pg_lab,
        cut=cut,
        reconnect=lambda victim: proxy.restore(),
        db=where._replace(netloc=netloc).geturl(),
    )
