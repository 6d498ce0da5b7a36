"""What a person may sign with, at its edges (``stopline.trust.signers``), and what the
ssh-agent client accepts from an agent (``stopline.trust.agent``).

The key specs are real key files (OpenSSH, PKCS#8, RSA, a directory, a binary file). The agent's
answers that a real ssh-agent never gives (a malformed key, a signature that does not verify, a
message of 0 bytes) come from a scripted agent: a Unix socket server written from
draft-miller-ssh-agent that answers each request with the bytes the test chose.
"""

from __future__ import annotations

import shutil
import socketserver
import struct
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from helpers import T0
from stopline.trust.agent import (
    FAILURE,
    IDENTITIES_ANSWER,
    MAX_MESSAGE,
    SIGN_RESPONSE,
    SOCK_ENV,
    Agent,
    AgentError,
    AgentSigner,
    Identity,
)
from stopline.trust.authority import Authority
from stopline.trust.documents import SIGN, SPEAK_FOR, sign
from stopline.trust.keys import KEY_TYPE, KeySigner
from stopline.trust.signers import SigningError, agent_signer_for, load_signer

from .agentkit import RunningAgent
from .certkit import ALICE, HOUR, TRUST, certificate

# --- the agent protocol, written out --------------------------------------------------------------

Answer = Callable[[int, bytes], bytes]


def string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def message(kind: int, contents: bytes = b"") -> bytes:
    """A whole answer: its length, its type byte, its contents."""
    return string(bytes([kind]) + contents)


def key_blob(kind: str, raw: bytes, tail: bytes = b"") -> bytes:
    return string(kind.encode()) + string(raw) + tail


def identities_answer(*listed: tuple[bytes, bytes]) -> bytes:
    contents = struct.pack(">I", len(listed))
    for blob, comment in listed:
        contents += string(blob) + string(comment)
    return message(IDENTITIES_ANSWER, contents)


def signature_answer(kind: str, signature: bytes) -> bytes:
    return message(SIGN_RESPONSE, string(string(kind.encode()) + string(signature)))


def signed_data(request: bytes) -> bytes:
    """The data of a sign request (key blob, data, flags)."""
    at = 4 + struct.unpack(">I", request[:4])[0]
    return request[at + 4 : at + 4 + struct.unpack(">I", request[at : at + 4])[0]]


class Scripted(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


@contextmanager
def scripted_agent(answer: Answer) -> Iterator[Agent]:
    """An agent listening on a socket of its own (bound before it is used) that answers each
    request ``(type, contents)`` with ``answer(type, contents)``, written as it is."""

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            length = struct.unpack(">I", self.rfile.read(4))[0]
            request = self.rfile.read(length)
            self.wfile.write(answer(request[0], request[1:]))

    folder = Path(tempfile.mkdtemp(prefix="stl-script-", dir="/tmp"))  # a socket path is short
    server = Scripted(str(folder / "agent.sock"), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Agent(str(folder / "agent.sock"))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        shutil.rmtree(folder, ignore_errors=True)


# --- what the client accepts from an agent --------------------------------------------------------


@pytest.mark.parametrize(
    "blob",
    [
        key_blob("ssh-dss", ALICE.public_key.raw),  # another type, a 32-byte second string
        key_blob(KEY_TYPE, ALICE.public_key.raw[:31]),
        key_blob(KEY_TYPE, ALICE.public_key.raw + b"\0"),
        key_blob(KEY_TYPE, ALICE.public_key.raw, tail=b"\0"),  # trailing bytes
        string(KEY_TYPE.encode()),  # no key at all
    ],
    ids=["another-type", "31-bytes", "33-bytes", "trailing-bytes", "no-key"],
)
def test_an_identity_that_is_not_exactly_an_ed25519_key_is_no_key(blob: bytes) -> None:
    """Only the blob ``string "ssh-ed25519", string of 32 bytes`` and nothing after is a key:
    the agent lists it, it is not offered to sign with."""
    assert Identity(ALICE.public_key.blob, "").key == ALICE.public_key
    assert Identity(blob, "").key is None
    listed = identities_answer((blob, b"odd"), (ALICE.public_key.blob, b"alice"))
    with scripted_agent(lambda kind, contents: listed) as agent:
        assert [i.comment for i in agent.identities()] == ["odd", "alice"]
        assert agent.ed25519_keys() == [ALICE.public_key]


def test_a_comment_that_is_not_utf8_is_read_not_refused() -> None:
    """The comment is the person's label, not trusted: bytes that are not UTF-8 are replaced."""
    listed = identities_answer((ALICE.public_key.blob, b"caf\xe9"))
    with scripted_agent(lambda kind, contents: listed) as agent:
        assert [i.comment for i in agent.identities()] == ["caf\ufffd"]
        assert agent.ed25519_keys() == [ALICE.public_key]


@pytest.mark.parametrize("length", [0, MAX_MESSAGE + 1])
def test_an_answer_of_no_bytes_or_of_too_many_is_refused(length: int) -> None:
    """An answer must hold its type byte and at most MAX_MESSAGE bytes: anything else is an
    AgentError naming its length, before any of it is read."""

    def answer(kind: int, contents: bytes) -> bytes:
        return struct.pack(">I", length)  # the length alone, then the connection closes

    with (
        scripted_agent(answer) as agent,
        pytest.raises(AgentError, match=f"a message of {length} bytes"),
    ):
        agent.identities()


OTHER = KeySigner.generate()
LYING: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "other-key": (lambda data: signature_answer(KEY_TYPE, OTHER.sign(data)), "does not verify"),
    "other-data": (
        lambda data: signature_answer(KEY_TYPE, ALICE.sign(data + b".")),
        "does not verify",
    ),
    "other-type": (lambda data: signature_answer("ssh-ed448", ALICE.sign(data)), "another key"),
    "short": (lambda data: signature_answer(KEY_TYPE, ALICE.sign(data)[:63]), "does not verify"),
    "refused": (lambda data: message(FAILURE), "would not sign"),
}


def test_the_agent_signs_what_was_asked_with_the_key_asked() -> None:
    """The sign request names the key and the data; the agent's signature is returned as is."""
    asked: list[bytes] = []

    def answer(kind: int, contents: bytes) -> bytes:
        asked.append(contents)
        return signature_answer(KEY_TYPE, ALICE.sign(signed_data(contents)))

    with scripted_agent(answer) as agent:
        assert agent.sign(ALICE.public_key, b"approve k1") == ALICE.sign(b"approve k1")
    assert asked == [string(ALICE.public_key.blob) + string(b"approve k1") + bytes(4)]


@pytest.mark.parametrize("lie", sorted(LYING))
def test_a_signature_from_the_agent_is_used_only_if_it_verifies(lie: str) -> None:
    """The agent is not trusted to sign what was asked with the key asked: a signature by
    another key, of other data, of another type or cut short, or a refusal, is an AgentError,
    and no document is signed through it."""
    made, error = LYING[lie]
    with scripted_agent(lambda kind, contents: made(signed_data(contents))) as agent:
        with pytest.raises(AgentError, match=error):
            agent.sign(ALICE.public_key, b"approve k1")
        with pytest.raises(AgentError, match=error):
            sign({"kind": "stopline.attestation", "n": 1}, AgentSigner(agent, ALICE.public_key))


def test_the_agent_socket_comes_from_the_environment_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """No SSH_AUTH_SOCK, or an empty one, is no agent; an environment given (even an empty one)
    is read instead of the process's."""
    monkeypatch.setenv(SOCK_ENV, "/tmp/the-process-agent.sock")
    assert Agent.from_env({}) is None
    assert Agent.from_env({SOCK_ENV: ""}) is None
    assert Agent.from_env({SOCK_ENV: "/tmp/given.sock"}) == Agent("/tmp/given.sock")
    assert Agent.from_env() == Agent("/tmp/the-process-agent.sock")
    monkeypatch.delenv(SOCK_ENV)
    assert Agent.from_env() is None


# --- which agent key signs for a person -----------------------------------------------------------


def test_an_agent_that_cannot_be_reached_offers_no_key(tmp_path: Path) -> None:
    """Nobody listening on SSH_AUTH_SOCK: no key is found for the actor (the command is then
    refused unsigned), and a public key named with --key cannot sign, with the reason."""
    nobody = Agent(str(tmp_path / "nobody.sock"))
    authority = Authority.build(TRUST, [certificate("alice", ALICE, T0)])
    assert agent_signer_for(nobody, authority, "alice", T0 + HOUR) is None
    with pytest.raises(SigningError, match="ssh-agent at"):
        load_signer(ALICE.public_key.line, agent=nobody)


def test_a_key_certified_only_to_speak_for_people_does_not_sign_as_its_actor(
    ssh_agent: RunningAgent, tmp_path: Path
) -> None:
    """The agent holds a key the root certified to alice for speak_for only: signing as alice
    (purpose sign, the default) finds no key; asked for speak_for, it is found."""
    server = KeySigner.generate()
    server.save(tmp_path / "server")
    ssh_agent.add(tmp_path / "server")
    agent = Agent(ssh_agent.sock)
    authority = Authority.build(TRUST, [certificate("alice", server, T0, purposes=(SPEAK_FOR,))])
    now = T0 + HOUR
    assert agent_signer_for(agent, authority, "alice", now) is None
    assert agent_signer_for(agent, authority, "alice", now, (SIGN,)) is None
    found = agent_signer_for(agent, authority, "alice", now, (SPEAK_FOR,))
    assert found is not None and found.public_key == server.public_key


# --- the key a person names -----------------------------------------------------------------------


def saved(folder: Path, name: str) -> KeySigner:
    signer = KeySigner.generate()
    signer.save(folder / name, name)
    return signer


def test_a_key_spec_is_read_without_the_space_around_it(tmp_path: Path) -> None:
    """A spec from the environment or a pasted line may carry spaces or a newline: a path
    around them is the key file; a public key line around them is a public key (here with no
    agent, so it cannot sign, and says why)."""
    bob = saved(tmp_path, "bob")
    signer = load_signer(f"  {tmp_path / 'bob'}\n")
    assert isinstance(signer, KeySigner) and signer.public_key == bob.public_key
    with pytest.raises(SigningError, match="SSH_AUTH_SOCK"):
        load_signer(f" {bob.public_key.line}\n", agent=None)


def test_a_key_path_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``~/NAME`` is the key under the home folder."""
    bob = saved(tmp_path, "bob")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert load_signer("~/bob").public_key == bob.public_key


def test_a_key_that_cannot_be_read_is_a_signing_error(tmp_path: Path) -> None:
    """A folder, a missing file, or bytes that are neither key: a SigningError saying so."""
    with pytest.raises(SigningError, match="cannot read the key"):
        load_signer(str(tmp_path))
    with pytest.raises(SigningError, match="cannot read the key"):
        load_signer(str(tmp_path / "missing"))
    (tmp_path / "noise").write_bytes(bytes(range(256)))
    with pytest.raises(SigningError, match="neither a private key nor"):
        load_signer(str(tmp_path / "noise"))


def pkcs8(path: Path, signer: KeySigner, passphrase: bytes | None) -> None:
    encryption = (
        serialization.NoEncryption()
        if passphrase is None
        else serialization.BestAvailableEncryption(passphrase)
    )
    pem = signer.private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )
    path.write_bytes(pem)


def test_a_pkcs8_key_signs_and_its_passphrase_is_asked(tmp_path: Path) -> None:
    """A PKCS#8 PEM key is a private key; a protected one is opened with the passphrase asked
    for its path, points to ssh-agent when none can be asked, and a wrong one is said."""
    carol = KeySigner.generate()
    pkcs8(tmp_path / "plain.pem", carol, None)
    assert load_signer(str(tmp_path / "plain.pem")).public_key == carol.public_key
    pkcs8(tmp_path / "locked.pem", carol, b"right words")
    asked: list[str] = []

    def passphrase(path: str) -> str:
        asked.append(path)
        return "right words"

    opened = load_signer(str(tmp_path / "locked.pem"), passphrase=passphrase)
    assert isinstance(opened, KeySigner) and opened.public_key == carol.public_key
    assert asked == [str(tmp_path / "locked.pem")]
    with pytest.raises(SigningError, match=r"protected by a passphrase.*ssh-add"):
        load_signer(str(tmp_path / "locked.pem"))
    with pytest.raises(SigningError, match="protected by a passphrase"):
        load_signer(str(tmp_path / "locked.pem"), passphrase=lambda path: None)
    with pytest.raises(SigningError, match="wrong passphrase"):
        load_signer(str(tmp_path / "locked.pem"), passphrase=lambda path: "wrong words")


def test_a_key_of_another_type_is_refused_without_asking_a_passphrase(tmp_path: Path) -> None:
    """An RSA private key is refused as not Ed25519; no passphrase is asked for it."""
    if shutil.which("ssh-keygen") is None:
        pytest.skip("openssh-client (ssh-keygen) is not installed")
    rsa = tmp_path / "rsa"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(rsa)], check=True
    )
    asked: list[str] = []

    def passphrase(path: str) -> str:
        asked.append(path)
        return "anything"

    for given in (None, passphrase):
        with pytest.raises(SigningError, match="only Ed25519 keys"):
            load_signer(str(rsa), passphrase=given)
    assert asked == []


@pytest.mark.parametrize("line", ["ssh-ed25519 AAAAnotakey", "ssh-ed25519 !!!"])
def test_a_public_key_line_that_cannot_be_read_is_a_signing_error(line: str) -> None:
    """``--key "ssh-ed25519 ..."`` that is no key: a usage error naming it, not an internal
    error (the line was parsed outside the error handling)."""
    with pytest.raises(SigningError, match="not a readable ssh-ed25519 public key"):
        load_signer(line)


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")
def test_an_openssh_key_with_a_passphrase_signs_or_says_what_to_do(tmp_path: Path) -> None:
    """An OpenSSH key protected by a passphrase needs the bcrypt package to be read: where it
    is missing, the answer is a usage error pointing at ssh-agent, never an internal error."""
    path = tmp_path / "id_ed25519"
    made = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "pw words", "-C", "", "-f", str(path)]
    subprocess.run(made, check=True, capture_output=True)
    try:
        signer = load_signer(str(path), passphrase=lambda _: "pw words")
    except SigningError as exc:
        assert "ssh-agent" in str(exc) and "ssh-add" in str(exc)
    else:
        public = signer.public_key()
        assert public.verify(signer.sign(b"x"), b"x")
