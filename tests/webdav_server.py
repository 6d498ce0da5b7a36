"""A real WsgiDAV server process on a loopback port, shared by the target and delivery suites:
the one launcher of ``wsgidav`` in the tests, and the fixture of a server of one test alone."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from proc import free_port

WSGIDAV = shutil.which("wsgidav", path=str(Path(sys.executable).parent)) or "wsgidav"


@dataclass
class DavServer:
    """One ``wsgidav`` process serving ``root`` read-write to anonymous clients."""

    root: Path
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)

    def pause(self) -> None:
        """SIGSTOP: the kernel still accepts connections, the server answers nothing."""
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)


def start_wsgidav(root: Path, log: Path | None = None) -> DavServer:
    """Start a server on ``root`` and wait until it accepts connections. With ``log``, it logs
    every request (``-v``) to that file; without, it is quiet."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [
        WSGIDAV,
        "--host=127.0.0.1",
        f"--port={port}",
        f"--root={root}",
        "--auth=anonymous",
        "--no-config",
        "-v" if log is not None else "-qq",
    ]
    if log is None:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        with open(log, "wb") as sink:
            process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)
    server = DavServer(root, port, process)
    deadline = time.monotonic() + 60  # a bound on a hang, not on speed
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"wsgidav exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return server
        except OSError:
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError("wsgidav did not open its port") from None
            time.sleep(0.02)


@pytest.fixture
def own_dav_server(tmp_path: Path) -> Iterator[DavServer]:
    """A WsgiDAV process of this test alone, for tests that stop or pause it."""
    server = start_wsgidav(tmp_path / "dav-root")
    try:
        yield server
    finally:
        server.resume()
        server.stop()
