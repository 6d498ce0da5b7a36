"""``stopline demo --signed``: a scratch trust root and a key for each of the demo's people.

The keys go to a folder the demo names (``./stopline-demo-keys``): ``root`` (the trust root)
and ``alice``, ``bob``, ``carol``, ``dana`` (OpenSSH private keys, mode 0600, each with its
``.pub``). A second run reuses them. The root certifies each person with the demo's roles, and
this process (its workers too) runs in signed mode with that root.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..clock import utcnow
from ..controller import Controller
from ..examples.demo import ACTORS
from ..store import Store
from ..trust import admin
from ..trust.authority import TRUST_ROOT_ENV, Authority, Trust
from ..trust.keys import KeySigner
from .errors import UsageError

FOLDER = "stopline-demo-keys"
ROOT = "root"


@dataclass
class DemoKeys:
    folder: Path
    root: KeySigner
    people: dict[str, KeySigner]

    @property
    def trust(self) -> Trust:
        return Trust((self.root.public_key,))

    def path(self, name: str) -> str:
        return str(self.folder / name)

    def controller(self, store: Store, name: str) -> Controller:
        return Controller(store, trust=self.trust, signer=self.people[name])


def _key(folder: Path, name: str) -> KeySigner:
    path = folder / name
    if path.exists():
        return KeySigner.load(path)
    signer = KeySigner.generate()
    signer.save(path, f"stopline-demo-{name}")
    return signer


def prepare(store: Store, folder: Path | None = None) -> DemoKeys:
    """Make (or reuse) the keys, certify the people, and put this process in signed mode."""
    where = folder or Path(FOLDER)
    where.mkdir(mode=0o700, exist_ok=True)
    keys = DemoKeys(where, _key(where, ROOT), {name: _key(where, name) for name in ACTORS})
    authority = Authority.build(keys.trust, store.registry().signed)
    if store.list_items(limit=1) and not authority.certificates:
        raise UsageError(
            f"{store.url} already holds an unsigned demo: run the signed demo on a fresh "
            "database (in another folder, or with --db sqlite:///signed-demo.db)"
        )
    now = utcnow()
    for name, roles in ACTORS.items():
        cert = authority.certificate(keys.people[name].public_key)
        if cert is None or not cert.live(now):
            admin.certify(
                store, keys.root, name, keys.people[name].public_key, roles=roles, now=now
            )
    os.environ[TRUST_ROOT_ENV] = keys.root.public_key.line  # the workers this demo runs
    return keys
