"""A target that keeps each object as one JSON resource on a WebDAV server.

The resource of the object created with key ``k`` is ``<base_url>/<key_slug(k)>.json``; its
document is ``{"title", "summary", "body", "assets": [{"name", "media_type", "data_base64"}],
"idempotency_key"}``. The ``version`` of an object is the SHA-256 of the stored document bytes
(not the server's ETag; see below). The ``remote_id`` is the resource name ``<slug>.json`` and is
checked against that pattern on every call, so it can never address anything but a direct child
of ``base_url``.

What a plain conditional ``PUT`` cannot guarantee here, found against WsgiDAV 4.4 (the server
the tests run) and handled as follows:

* **If-Match on a missing resource creates it.** RFC 9110 says ``If-Match`` must fail (412) when
  the resource does not exist; WsgiDAV skips every precondition for an unmapped URL and answers
  ``201 Created``. An update therefore never relies on ``If-Match`` alone to avoid recreating.
* **ETags are ``inode-mtime-size`` with mtime in whole seconds.** Two writes of equally long
  documents within one second keep the same ETag, so ``If-Match`` cannot tell them apart and a
  stale writer could overwrite a newer document. The version is therefore the hash of the bytes,
  compared by the client.
* **PUT writes in place**: a new resource is created empty, an existing one truncated, then the
  body is streamed in. A reader can see an empty or partial document, and an interrupted PUT
  leaves one behind; such a document does not parse and reads (and finds) as a
  :class:`TargetError`, never as a matching readback or as "absent". A create interrupted that
  way blocks its key until an operator removes the resource: fail closed, not retried blindly.

An update is therefore check-then-act, made safe with a WebDAV write lock (RFC 4918 class 2)::

    HEAD    -> 404: RemoteMissing (nothing is created by an update)
    LOCK    exclusive, depth 0 (someone else's lock -> 423 -> TargetError, nothing changed)
    GET     -> sha256(bytes) != ref.version: VersionConflict
    PUT     If: (<lock token>)  If-Match: <ETag from the GET>
    UNLOCK  (always; a lost UNLOCK expires after ``lock_seconds``)

While the lock is held the server refuses every other client's PUT, DELETE and MOVE of the
resource (423), so nothing can change between the comparison and the write: the check-then-act
is atomic for every writer that goes through the server. (A process editing the server's disk
directly is not covered; nothing could cover it.) A LOCK of a URL that vanished after the HEAD
creates an empty resource (RFC 4918 lock-null behaviour, WsgiDAV follows it); the update
deletes it again and raises :class:`RemoteMissing`. Servers without LOCK support are refused
with a :class:`TargetError` on update rather than updated without the guard.

Transport errors: a failure to connect means nothing was sent (:class:`TargetError`); any other
transport failure of a request that can change the server (timeouts and resets after sending)
means the outcome is unknown (:class:`OutcomeUnknown`): look the object up before acting again.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
import time
from collections.abc import Mapping
from typing import Any

import httpx

from ..core.artifacts import Artifact, Readback
from ..core.canonical import sha256_bytes
from .base import OutcomeUnknown, RemoteMissing, RemoteRef, TargetError, VersionConflict
from .directory import SLUG_PATTERN, key_slug

MAX_RESPONSE_BYTES = 16 << 20  # an object's document is within 1 MiB of canonical JSON
TOTAL_SECONDS = 60.0

_RESOURCE_RE = re.compile(rf"({SLUG_PATTERN})\.json")
_MISSING = (404, 410)
_NOT_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.ProxyError,
    httpx.UnsupportedProtocol,
    httpx.LocalProtocolError,
)
_LOCK_BODY = (
    b'<?xml version="1.0" encoding="utf-8"?>'
    b'<D:lockinfo xmlns:D="DAV:">'
    b"<D:lockscope><D:exclusive/></D:lockscope>"
    b"<D:locktype><D:write/></D:locktype>"
    b"<D:owner>stopline</D:owner>"
    b"</D:lockinfo>"
)


def _encode(idempotency_key: str, artifact: Artifact) -> bytes:
    doc = {
        "title": artifact.title,
        "summary": artifact.summary,
        "body": artifact.body,
        "assets": [
            {
                "name": a.name,
                "media_type": a.media_type,
                "data_base64": base64.b64encode(a.data).decode("ascii"),
            }
            for a in artifact.assets
        ],
        "idempotency_key": idempotency_key,
    }
    # ASCII-escaped: any str (even a lone surrogate) encodes, and decodes to the same str.
    return json.dumps(doc, ensure_ascii=True, sort_keys=True, separators=(",", ":")).encode()


def _decode(data: bytes) -> dict[str, Any]:
    """The stored document, checked field by field (asset data decoded to bytes)."""
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise TargetError(f"stored document is not JSON ({len(data)} bytes)") from exc
    fields = ("title", "summary", "body", "idempotency_key")
    if (
        not isinstance(doc, dict)
        or set(doc) != {*fields, "assets"}
        or not all(isinstance(doc[f], str) for f in fields)
        or not isinstance(doc["assets"], list)
    ):
        raise TargetError("stored document has unexpected fields")
    assets = []
    for entry in doc["assets"]:
        if (
            not isinstance(entry, dict)
            or set(entry) != {"name", "media_type", "data_base64"}
            or not all(isinstance(v, str) for v in entry.values())
        ):
            raise TargetError("stored document has a malformed asset")
        try:
            data_bytes = base64.b64decode(entry["data_base64"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise TargetError("stored asset data is not base64") from exc
        assets.append(
            {"name": entry["name"], "media_type": entry["media_type"], "data": data_bytes}
        )
    doc["assets"] = assets
    return doc


class WebDAVTarget:
    """Objects as JSON resources under ``base_url`` on a WebDAV (class 2) server."""

    def __init__(
        self,
        base_url: str,
        name: str = "webdav",
        timeout: float = 5.0,
        auth: httpx.Auth | tuple[str, str] | None = None,
        *,
        lock_seconds: int = 60,
        trust_env: bool = True,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        total_seconds: float = TOTAL_SECONDS,
    ) -> None:
        """``timeout``: each connect, read and write; ``total_seconds`` and
        ``max_response_bytes`` (decoded): the most one request's answer may take."""
        self.name = name
        self.base_url = base_url.rstrip("/") + "/"
        self._lock_seconds = lock_seconds
        self._max_bytes = max_response_bytes
        self._total = total_seconds
        self._client = httpx.Client(
            timeout=timeout, auth=auth, trust_env=trust_env, follow_redirects=False
        )

    def describe(self) -> dict[str, str]:
        """Plain data to rebuild this target (credentials are never described)."""
        return {"kind": "webdav", "base_url": self.base_url, "name": self.name}

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> WebDAVTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- HTTP --------------------------------------------------------------------------------

    def _url(self, remote_id: str) -> str:
        if not isinstance(remote_id, str) or _RESOURCE_RE.fullmatch(remote_id) is None:
            raise TargetError(f"{self.name}: invalid remote id {remote_id!r}")
        return self.base_url + remote_id

    def _send(
        self,
        method: str,
        url: str,
        *,
        changes: bool,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> httpx.Response:
        """One request; ``changes`` says whether it can alter the server (for error mapping)."""
        try:
            return self._bounded(method, url, headers, content)
        except _NOT_SENT as exc:
            raise TargetError(f"{self.name}: {method} {url} not sent: {exc!r}") from exc
        except httpx.TransportError as exc:
            if changes:
                raise OutcomeUnknown(f"{self.name}: {method} {url}: {exc!r}") from exc
            raise TargetError(f"{self.name}: {method} {url}: {exc!r}") from exc

    def _bounded(
        self, method: str, url: str, headers: Mapping[str, str] | None, content: bytes | None
    ) -> httpx.Response:
        """The answer, cut off past ``max_response_bytes`` or ``total_seconds`` (a server
        sending without end, or a byte at a time, each within the read timeout)."""
        deadline = time.monotonic() + self._total
        with self._client.stream(method, url, headers=headers, content=content) as response:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > self._max_bytes:
                    raise httpx.ReadError(f"answer longer than {self._max_bytes} bytes")
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(f"answer not read within {self._total:g} s")
        kept = httpx.Headers(response.headers)
        kept.pop("content-encoding", None)  # the body as read is decoded already
        return httpx.Response(
            response.status_code, headers=kept, content=bytes(body), request=response.request
        )

    def _fail(self, response: httpx.Response) -> TargetError:
        request = response.request
        return TargetError(
            f"{self.name}: {request.method} {request.url} answered HTTP {response.status_code}"
        )

    def _get(self, url: str) -> httpx.Response | None:
        """GET the resource; ``None`` when the server says it does not exist."""
        response = self._send("GET", url, changes=False)
        if response.status_code in _MISSING:
            return None
        if response.status_code != 200:
            raise self._fail(response)
        return response

    def _exists(self, url: str) -> bool:
        response = self._send("HEAD", url, changes=False)
        if response.status_code in _MISSING:
            return False
        if response.status_code != 200:
            raise self._fail(response)
        return True

    def _lock(self, url: str) -> tuple[str, bool]:
        """Take an exclusive write lock; returns the token and whether LOCK created the URL."""
        response = self._send(
            "LOCK",
            url,
            changes=True,
            headers={
                "Depth": "0",
                "Timeout": f"Second-{self._lock_seconds}",
                "Content-Type": "application/xml; charset=utf-8",
            },
            content=_LOCK_BODY,
        )
        if response.status_code == 423:
            raise TargetError(f"{self.name}: {url} is locked by another writer; nothing changed")
        if response.status_code in (405, 501):
            raise TargetError(f"{self.name}: the server does not support LOCK; cannot update")
        if response.status_code not in (200, 201):
            raise self._fail(response)
        token = response.headers.get("Lock-Token", "").strip().removeprefix("<").removesuffix(">")
        if not token:
            raise TargetError(f"{self.name}: LOCK of {url} returned no lock token")
        return token, response.status_code == 201

    def _undo_create(self, url: str, token: str) -> None:
        """Delete a resource this update created by accident; unknown outcome if that fails."""
        response = self._send("DELETE", url, changes=True, headers={"If": f"(<{token}>)"})
        if response.status_code not in (200, 204, *_MISSING):
            raise OutcomeUnknown(
                f"{self.name}: {url} was recreated by the update and could not be deleted "
                f"(HTTP {response.status_code})"
            )

    def _unlock(self, url: str, token: str) -> None:
        with contextlib.suppress(TargetError):  # an unreleased lock expires on its own
            self._send("UNLOCK", url, changes=True, headers={"Lock-Token": f"<{token}>"})

    # -- protocol ----------------------------------------------------------------------------

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        """``PUT`` with ``If-None-Match: *``; an existing resource of the key is returned."""
        remote_id = key_slug(idempotency_key) + ".json"
        url = self._url(remote_id)
        data = _encode(idempotency_key, artifact)
        response = self._send(
            "PUT",
            url,
            changes=True,
            headers={"If-None-Match": "*", "Content-Type": "application/json"},
            content=data,
        )
        if response.status_code == 201:
            return RemoteRef(remote_id, sha256_bytes(data))
        if response.status_code == 412:
            found = self.find(idempotency_key)
            if found is None:
                raise TargetError(f"{self.name}: {url} existed on create, then vanished")
            return found
        if response.status_code in (200, 204):
            # The server ignored If-None-Match and replaced an existing resource.
            raise OutcomeUnknown(f"{self.name}: PUT {url} overwrote instead of creating")
        raise self._fail(response)

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        """Replace the resource if it is at ``ref.version``, under a WebDAV lock (see module)."""
        url = self._url(ref.remote_id)
        if not self._exists(url):
            raise RemoteMissing(f"{self.name}: {url} does not exist")
        token, created = self._lock(url)
        try:
            if created:
                self._undo_create(url, token)
                raise RemoteMissing(f"{self.name}: {url} vanished before it could be locked")
            current = self._get(url)
            if current is None:
                raise RemoteMissing(f"{self.name}: {url} does not exist")
            if sha256_bytes(current.content) != ref.version:
                raise VersionConflict(f"{self.name}: {url} is at another version")
            data = _encode(_decode(current.content)["idempotency_key"], artifact)
            headers = {"If": f"(<{token}>)", "Content-Type": "application/json"}
            etag = current.headers.get("ETag")
            if etag:
                headers["If-Match"] = etag
            response = self._send("PUT", url, changes=True, headers=headers, content=data)
            if response.status_code in (200, 204):
                return RemoteRef(ref.remote_id, sha256_bytes(data))
            if response.status_code == 201:  # recreated after all: undo, report it gone
                self._undo_create(url, token)
                raise RemoteMissing(f"{self.name}: {url} vanished during the update")
            if response.status_code in (412, 423):
                if not self._exists(url):
                    raise RemoteMissing(f"{self.name}: {url} does not exist")
                raise VersionConflict(
                    f"{self.name}: {url} changed or lost its lock (HTTP {response.status_code})"
                )
            raise self._fail(response)
        finally:
            self._unlock(url, token)

    def read(self, remote_id: str) -> Readback:
        """``GET`` and parse the document; asset hashes are computed from the stored data."""
        url = self._url(remote_id)
        response = self._get(url)
        if response is None:
            raise RemoteMissing(f"{self.name}: {url} does not exist")
        doc = _decode(response.content)
        return Readback(
            remote_id=remote_id,
            version=sha256_bytes(response.content),
            title=doc["title"],
            summary=doc["summary"],
            body=doc["body"],
            assets=tuple(
                {
                    "name": a["name"],
                    "media_type": a["media_type"],
                    "sha256": sha256_bytes(a["data"]),
                }
                for a in doc["assets"]
            ),
        )

    def find(self, idempotency_key: str) -> RemoteRef | None:
        """``GET`` the key's resource: ``None`` on 404; another key stored there is an error."""
        remote_id = key_slug(idempotency_key) + ".json"
        url = self._url(remote_id)
        response = self._get(url)
        if response is None:
            return None
        if _decode(response.content)["idempotency_key"] != idempotency_key:
            raise TargetError(f"{self.name}: {url} holds an object of another key")
        return RemoteRef(remote_id, sha256_bytes(response.content))

    def publish(self, ref: RemoteRef) -> str:
        """Check the version, then ``PUT <slug>.published`` once; returns the marker's URL."""
        url = self._url(ref.remote_id)
        current = self._get(url)
        if current is None:
            raise RemoteMissing(f"{self.name}: {url} does not exist")
        if sha256_bytes(current.content) != ref.version:
            raise VersionConflict(f"{self.name}: {url} is at another version")
        marker = self.base_url + ref.remote_id.removesuffix(".json") + ".published"
        doc = {"remote_id": ref.remote_id, "version": ref.version}
        response = self._send(
            "PUT",
            marker,
            changes=True,
            headers={"If-None-Match": "*", "Content-Type": "application/json"},
            content=json.dumps(doc, sort_keys=True).encode(),
        )
        if response.status_code in (201, 412):  # 412: published before
            return marker
        raise self._fail(response)
