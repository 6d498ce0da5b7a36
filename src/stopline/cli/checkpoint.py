"""``stopline checkpoint``, ``stopline verify --since`` and ``stopline run --since``.

A checkpoint is the head of every chain, signed by a root key or a key certified for
``checkpoint`` (:mod:`stopline.trust.checkpoints`). Keep it where the database's writers cannot
write; ``verify --since FILE`` then names any rollback, deletion or rewrite before it, and
``run --since FILE`` (or ``STOPLINE_CHECKPOINT``) refuses to start workers on such a database.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..clock import utcnow
from ..core.integrity import Finding
from ..runtime.notify_attempt import NoRedirect
from ..store import Store, database_url, open_store
from ..trust.authority import Authority, Trust
from ..trust.checkpoints import CheckpointError, Held, hold, parse, take
from ..trust.documents import CHECKPOINT_PURPOSE
from ..trust.keys import Signer
from .errors import UsageError
from .options import CHECKPOINT_ENV
from .signing import host_trust, key_spec, named_signer, note, signer_for

if TYPE_CHECKING:
    from .output import Out

WEBHOOK_TIMEOUT = 30.0
EXIT_OK, EXIT_ERROR, EXIT_REFUSED = 0, 1, 3


def _signer(args: argparse.Namespace, store: Store, trust: Trust | None) -> Signer | None:
    if trust is None:
        spec = key_spec(args)
        return named_signer(spec) if spec else None
    signer = signer_for(args, store, trust, None)
    if signer is None:
        raise UsageError(
            "signed mode: sign the checkpoint with a root key or a key certified for checkpoint "
            "(--key PATH or STOPLINE_KEY)"
        )
    key = signer.public_key
    cert = Authority.build(trust, store.registry().signed).certificate(key)
    if key.fingerprint not in trust.fingerprints and (
        cert is None or CHECKPOINT_PURPOSE not in cert.purposes or not cert.live(utcnow())
    ):
        raise UsageError(
            f"{key.fingerprint} is neither a trust root key nor certified for checkpoints "
            f"(stopline keys certify NAME --key PUB --purpose {CHECKPOINT_PURPOSE} --root ROOT)"
        )
    return signer


def _write_new(path: Path, text: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError as exc:
        raise UsageError(f"{path} exists: a checkpoint is never overwritten") from exc
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())


_OPENER = urllib.request.build_opener(NoRedirect)


def _post(url: str, text: str) -> str | None:
    """POST the document; ``None`` when the receiver accepted it (2xx), else why not (a
    redirect is not followed)."""
    request = urllib.request.Request(
        url,
        data=text.encode("utf-8"),
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "stopline-checkpoint"},
    )
    try:
        with _OPENER.open(request, timeout=WEBHOOK_TIMEOUT) as response:
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        return f"cannot reach {url}: {exc}"
    return None if 200 <= status < 300 else f"{url} answered {status}"


def cmd_checkpoint(args: argparse.Namespace, store: Store, out: Out) -> int:
    if args.out and args.webhook:
        raise UsageError("give --out or --webhook, not both")
    if args.webhook and not args.webhook.startswith(("http://", "https://")):
        raise UsageError("--webhook must be an http:// or https:// URL")
    trust = host_trust()
    signer = _signer(args, store, trust)
    doc = take(store, utcnow(), signer)
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=1) + "\n"
    body = doc["body"]
    summary = {
        "at": body["at"],
        "items": len(body["items"]),
        "ledger": body["ledger"],
        "registry": body["registry"],
        "signed_by": signer.public_key.fingerprint if signer else None,
    }
    if signer is None:
        note("unsigned checkpoint: it detects a rollback, but whoever can write it can forge it")
    where = "stdout"
    if args.out:
        _write_new(Path(args.out), text)
        where = args.out
    elif args.webhook:
        problem = _post(args.webhook, text)
        if problem:
            note(f"the checkpoint was not delivered: {problem}")
            return EXIT_ERROR
        where = args.webhook
    else:
        print(text, end="")
        return EXIT_OK
    out.doc(
        {**summary, "written_to": where},
        f"checkpoint of {summary['items']} items, ledger {body['ledger']['n']}, registry "
        f"{body['registry']['n']} at {body['at']}"
        + (f", signed by {summary['signed_by']}" if signer else ", unsigned")
        + f": {where}",
    )
    return EXIT_OK


def read_since(path: str) -> dict[str, Any]:
    try:
        return dict(parse(Path(path).read_text("utf-8")))
    except OSError as exc:
        raise UsageError(f"cannot read the checkpoint {path}: {exc.strerror or exc}") from exc
    except (CheckpointError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not a checkpoint: {exc}") from exc


def held_since(path: str, store: Store) -> Held:
    """The store held against the checkpoint file ``path`` (warnings printed to stderr)."""
    held = hold(store, read_since(path), host_trust())
    for warning in held.warnings:
        note(warning)
    return held


def since_text(held: Held) -> str:
    by = f"signed by {held.signed_by}" if held.signed_by else "unsigned"
    return f"checkpoint of {held.at} ({by}): " + (
        f"{len(held.findings)} findings" if held.findings else "every chain still holds it"
    )


def refuse_if_behind(args: argparse.Namespace, store: Store | None) -> list[Finding]:
    """``run --since``: what the store no longer holds of the checkpoint (empty: run). With no
    store at hand (``run`` opens its own), the database the checkpoint names must exist."""
    path = getattr(args, "since", None) or os.environ.get(CHECKPOINT_ENV)
    if not path:
        return []
    if store is not None:
        return held_since(path, store).findings
    opened = open_store(database_url(args.db), migrate=False, check=True, create=False)
    try:
        return held_since(path, opened).findings
    finally:
        opened.close()
