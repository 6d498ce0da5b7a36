"""A two-artifact draft delivery for the delivery and revision tests, on a real target.

``build_app(config)`` makes one in-process; ``app`` is the ``stopline run
tests/delivery/apps/digest_app.py:app`` entry point, configured by ``STOPLINE_DELIVERY_APP``
(a JSON object of the same ``config``).

``config`` keys (all optional but ``target``):

* ``target``: ``{"kind": "directory", "root": PATH}`` or ``{"kind": "webdav", "base_url": URL}``.
* ``calls``: a file; every remote call the target receives is appended to it as one JSON line
  ``{"op": "create" | "update" | "read" | "find" | "publish", "arg": ..., "pid": ...}``.
* ``keys``: the item keys discovery finds (default ``["w1"]``).
* ``mode``: ``draft`` (default) or ``publish``; ``revisable`` (default true).
* ``revise``: what the revise hook does: ``scope`` (default: rewrite every artifact in the
  revision's scope), ``first`` (only the first one in scope), ``none`` (return everything
  unchanged), ``all`` (rewrite every artifact, in scope or not), ``extra`` (``scope`` plus a new
  artifact ``article-3``), ``fail`` (raise), ``answer-fail``, ``answer-retry`` and
  ``answer-eyes`` (answer ``Fail``, ``RetryLater`` or ``NeedsEyes`` instead of artifacts),
  ``not-artifacts`` (a list whose members are not artifacts), ``absent`` (the automation
  declares no revise hook at all).
* ``lease_seconds`` (default 1.0; the tests set 30), ``timeout`` (WebDAV client timeout, default 5.0).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from stopline.core.artifacts import Artifact, Asset, Readback
from stopline.core.policy import ApprovalPolicy, ApprovalRule, DeliveryPolicy, RetryPolicy
from stopline.runtime.automation import App, Automation, HookContext
from stopline.runtime.outcomes import Deliver, Evidence, Fail, NeedsEyes, Proposal, RetryLater
from stopline.targets.base import RemoteRef, Target
from stopline.targets.directory import DirectoryTarget
from stopline.targets.webdav import WebDAVTarget

CONFIG_ENV = "STOPLINE_DELIVERY_APP"
NAME = "digest"
KEYS = ("article-1", "article-2")
# what the revise hook answers, for the behaviours that answer an outcome instead of artifacts
ANSWERS = {
    "answer-fail": Fail("the editor refused the change"),
    "answer-retry": RetryLater("the editor is away"),
    "answer-eyes": NeedsEyes("the change needs legal's eyes", owner="legal"),
}
ACTORS: dict[str, tuple[str, ...]] = {
    "olga": ("operator",),
    "pete": ("operator", "publisher"),
    "vic": ("viewer",),
}


def make_target(desc: dict[str, Any], timeout: float = 5.0) -> Target:
    if desc["kind"] == "directory":
        return DirectoryTarget(desc["root"])
    return WebDAVTarget(desc["base_url"], timeout=timeout, trust_env=False)


class Recording:
    """A target that appends each call it receives to a file, then passes it on."""

    def __init__(self, inner: Target, log: str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.log = Path(log)

    def _note(self, op: str, arg: str) -> None:
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"op": op, "arg": arg, "pid": os.getpid()}) + "\n")

    def describe(self) -> dict[str, Any]:
        describe: Callable[[], dict[str, Any]] = getattr(self.inner, "describe")  # noqa: B009
        return describe()

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        self._note("create", idempotency_key)
        return self.inner.create(artifact, idempotency_key)

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        self._note("update", ref.remote_id)
        return self.inner.update(ref, artifact)

    def read(self, remote_id: str) -> Readback:
        self._note("read", remote_id)
        return self.inner.read(remote_id)

    def find(self, idempotency_key: str) -> RemoteRef | None:
        self._note("find", idempotency_key)
        return self.inner.find(idempotency_key)

    def publish(self, ref: RemoteRef) -> str:
        self._note("publish", ref.remote_id)
        return self.inner.publish(ref)


def read_calls(log: str | Path) -> list[dict[str, Any]]:
    path = Path(log)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def chart(key: str, note: str = "") -> Asset:
    svg = f'<svg xmlns="http://www.w3.org/2000/svg"><title>{key}{note}</title></svg>'
    return Asset(f"{key}.svg", "image/svg+xml", svg.encode())


def original(key: str, item_key: str) -> Artifact:
    return Artifact(
        key,
        f"{key} of {item_key}",
        f"what {key} says",
        f"The first draft of {key} for {item_key}. It has several words in it.",
        assets=(chart(key),),
        metadata={"item": item_key},
    )


def rewrite(artifact: Artifact, reason: str) -> Artifact:
    return Artifact(
        artifact.key,
        artifact.title,
        f"{artifact.summary} (revised: {reason})",
        f"{artifact.body}\n\nRevised because: {reason}.",
        assets=(chart(artifact.key, f" revised: {reason}"),),
        metadata=dict(artifact.metadata),
    )


def build_app(config: dict[str, Any], wrap: Callable[[Target], Target] | None = None) -> App:
    """The ``digest`` automation with ``config`` (see the module); ``wrap`` decorates its target."""
    target: Target = make_target(config["target"], float(config.get("timeout", 5.0)))
    if wrap is not None:
        target = wrap(target)
    if config.get("calls"):
        target = Recording(target, config["calls"])
    behaviour = config.get("revise", "scope")
    keys = list(config.get("keys", ["w1"]))

    def discover(ctx: HookContext) -> Iterable[str]:
        return keys

    def observe(ctx: HookContext) -> Evidence:
        assert ctx.item is not None
        return Evidence({"week": ctx.item.key, "articles": list(KEYS)})

    def propose(ctx: HookContext) -> Proposal:
        return Proposal("write_drafts", {"articles": list(KEYS)}, target="drafts")

    def execute(ctx: HookContext) -> Deliver:
        assert ctx.item is not None
        item_key = ctx.item.key
        return Deliver([original(k, item_key) for k in KEYS], result={"drafts": len(KEYS)})

    def revise(ctx: HookContext, reason: str, current: Sequence[Artifact]) -> list[Artifact]:
        scope = list((ctx.revision or {}).get("scope", ()))
        if behaviour == "fail":
            raise RuntimeError("the revise hook failed")
        if behaviour in ANSWERS:
            return ANSWERS[behaviour]  # type: ignore[return-value]
        if behaviour == "not-artifacts":
            return [a.to_plain() for a in current]  # type: ignore[misc]
        if behaviour == "none":
            return list(current)
        if behaviour == "all":
            return [rewrite(a, reason) for a in current]
        chosen = scope[:1] if behaviour == "first" else scope
        out = [rewrite(a, reason) if a.key in chosen else a for a in current]
        if behaviour == "extra":
            out.append(Artifact("article-3", "new", "new", "a new article nobody asked for"))
        return out

    automation = Automation(
        name=NAME,
        discover=discover,
        observe=observe,
        propose=propose,
        execute=execute,
        revise=None if behaviour == "absent" else revise,
        target=target,
        every=3600,
        approval=ApprovalPolicy(rules={"write_drafts": ApprovalRule(approvals=0)}),
        delivery=DeliveryPolicy(
            mode=config.get("mode", "draft"), revisable=bool(config.get("revisable", True))
        ),
        retry=RetryPolicy(max_attempts=5, base_delay=0.05, backoff=1.0, max_delay=0.05),
        lease_seconds=float(config.get("lease_seconds", 1.0)),
    )
    return App([automation], actors=ACTORS)


def app() -> App:
    """``stopline run tests/delivery/apps/digest_app.py:app``: configured by the environment."""
    return build_app(json.loads(os.environ[CONFIG_ENV]))
