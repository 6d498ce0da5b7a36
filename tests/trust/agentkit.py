"""A real ssh-agent for a test: started on a socket of its own, keys added with ssh-add."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from proc import wait_for


@dataclass
class RunningAgent:
    process: subprocess.Popen[bytes]
    folder: Path

    @property
    def sock(self) -> str:
        return str(self.folder / "agent.sock")

    def add(self, key: Path) -> None:
        """``ssh-add KEY`` into this agent."""
        done = subprocess.run(
            ["ssh-add", str(key)],
            env={**os.environ, "SSH_AUTH_SOCK": self.sock},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)


def accepts(sock: Path) -> bool:
    """True once something listens on SOCK: the file appears at bind(), before listen(), and a
    connect in between is refused."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(sock))
        except OSError:
            return False
    return True


def start_agent() -> RunningAgent:
    if shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None:
        pytest.skip("openssh-client (ssh-agent, ssh-add) is not installed")
    folder = Path(tempfile.mkdtemp(prefix="stl-agent-", dir="/tmp"))  # a socket path is short
    sock = folder / "agent.sock"
    process = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    agent = RunningAgent(process, folder)
    try:
        wait_for(lambda: accepts(sock) or process.poll() is not None, 30, "ssh-agent listening")
        if process.poll() is not None:
            pytest.fail(f"ssh-agent exited {process.returncode}")
    except BaseException:
        agent.stop()
        raise
    return agent
