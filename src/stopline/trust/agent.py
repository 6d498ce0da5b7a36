"""A small ssh-agent client: list the agent's keys, and sign with one of them.

The agent protocol (draft-miller-ssh-agent): every message is a uint32 length, a type byte and
its contents; strings are a uint32 length and the bytes. Two requests are used:

* ``SSH_AGENTC_REQUEST_IDENTITIES`` (11) -> ``SSH_AGENT_IDENTITIES_ANSWER`` (12): a uint32
  count, then per key its blob (string) and comment (string);
* ``SSH_AGENTC_SIGN_REQUEST`` (13: key blob, data, uint32 flags) -> ``SSH_AGENT_SIGN_RESPONSE``
  (14: a signature blob). For ``ssh-ed25519`` that blob is the string ``"ssh-ed25519"`` and the
  string of the raw 64-byte Ed25519 signature, exactly what :class:`~.keys.KeySigner` makes.

Any other answer (``SSH_AGENT_FAILURE``, 5) is an :class:`AgentError`.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from .keys import KEY_TYPE, PublicKey

SOCK_ENV = "SSH_AUTH_SOCK"
REQUEST_IDENTITIES, IDENTITIES_ANSWER = 11, 12
SIGN_REQUEST, SIGN_RESPONSE = 13, 14
FAILURE = 5
MAX_MESSAGE = 256 * 1024
TIMEOUT = 30.0  # seconds; an agent may ask the person to confirm a signature


class AgentError(Exception):
    """The agent cannot be reached, refused, or answered something else."""


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise AgentError("the agent's answer is cut short")
        chunk = self.data[self.at : self.at + n]
        self.at += n
        return chunk

    def uint32(self) -> int:
        value: int = struct.unpack(">I", self.take(4))[0]
        return value

    def string(self) -> bytes:
        return self.take(self.uint32())


@dataclass(frozen=True)
class Identity:
    blob: bytes
    comment: str

    @property
    def key(self) -> PublicKey | None:
        """The Ed25519 key, or ``None`` for a key of another type."""
        reader = _Reader(self.blob)
        try:
            if reader.string() != KEY_TYPE.encode():
                return None
            raw = reader.string()
        except AgentError:
            return None
        return PublicKey(raw) if len(raw) == 32 and reader.at == len(self.blob) else None


@dataclass(frozen=True)
class Agent:
    """The agent listening on ``path``."""

    path: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Agent | None:
        path = (environ if environ is not None else os.environ).get(SOCK_ENV, "")
        return cls(path) if path else None

    def _ask(self, kind: int, contents: bytes = b"") -> tuple[int, bytes]:
        message = bytes([kind]) + contents
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(TIMEOUT)
                conn.connect(self.path)
                conn.sendall(struct.pack(">I", len(message)) + message)
                length = struct.unpack(">I", _receive(conn, 4))[0]
                if not 1 <= length <= MAX_MESSAGE:
                    raise AgentError(f"the agent sent a message of {length} bytes")
                answer = _receive(conn, length)
        except OSError as exc:
            raise AgentError(f"ssh-agent at {self.path}: {exc}") from exc
        return answer[0], answer[1:]

    def identities(self) -> list[Identity]:
        kind, contents = self._ask(REQUEST_IDENTITIES)
        if kind != IDENTITIES_ANSWER:
            raise AgentError(f"the agent refused to list its keys (answer {kind})")
        reader = _Reader(contents)
        found = []
        for _ in range(reader.uint32()):
            blob = reader.string()
            comment = reader.string().decode("utf-8", "replace")
            found.append(Identity(blob, comment))
        return found

    def ed25519_keys(self) -> list[PublicKey]:
        """The agent's Ed25519 keys."""
        return [k for k in (i.key for i in self.identities()) if k is not None]

    def sign(self, key: PublicKey, data: bytes) -> bytes:
        """The raw Ed25519 signature of ``data`` by ``key``, made by the agent."""
        kind, contents = self._ask(SIGN_REQUEST, _string(key.blob) + _string(data) + bytes(4))
        if kind != SIGN_RESPONSE:
            raise AgentError(f"the agent would not sign with {key.fingerprint} (answer {kind})")
        blob = _Reader(_Reader(contents).string())
        if blob.string() != KEY_TYPE.encode():
            raise AgentError("the agent signed with another key type")
        signature = blob.string()
        if len(signature) != 64 or not key.verify(signature, data):
            raise AgentError(f"the agent's signature does not verify with {key.fingerprint}")
        return signature


def _receive(conn: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = conn.recv(left)
        if not chunk:
            raise AgentError("the agent closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class AgentSigner:
    """A :class:`~.keys.Signer` whose private key stays in ssh-agent."""

    agent: Agent
    key: PublicKey

    @property
    def public_key(self) -> PublicKey:
        return self.key

    def sign(self, data: bytes) -> bytes:
        return self.agent.sign(self.key, data)


def signer_in_agent(agent: Agent, wanted: PublicKey) -> AgentSigner:
    """A signer for ``wanted`` if the agent holds it, else :class:`AgentError`."""
    if wanted not in agent.ed25519_keys():
        raise AgentError(f"ssh-agent does not hold the key {wanted.fingerprint}")
    return AgentSigner(agent, wanted)
