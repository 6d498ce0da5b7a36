"""The bundled example: three automations a small team would run.

* ``support-triage`` reads a support inbox (bundled data), proposes reply drafts for refunds
  (approval by an ``approver``), sends thank-you notes to review, and stops ambiguous messages
  in ``exception``.
* ``service-health`` inspects services and proposes a restart of a degraded one (two distinct
  approvers); a service whose health endpoint never answers exhausts its retry budget.
* ``weekly-digest`` writes a two-article draft digest to a folder (drafts need no approval and
  are never published by stopline), reads both back, and can be revised in place.

``app`` is what ``stopline run stopline.examples.demo:app`` serves; drafts go to the folder
named by ``STOPLINE_DEMO_DRAFTS`` (default ``./stopline-drafts``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any

from ..core.artifacts import Artifact, Asset, Readback
from ..core.commands import QAResult
from ..core.policy import ApprovalPolicy, ApprovalRule, DeliveryPolicy, RetryPolicy
from ..runtime.automation import App, Automation, Discovered, HookContext
from ..runtime.outcomes import (
    Deliver,
    Evidence,
    NeedsEyes,
    Proposal,
    ReportForReview,
    TransientError,
)
from ..targets.base import RemoteRef
from ..targets.directory import DirectoryTarget

DRAFTS_ENV = "STOPLINE_DEMO_DRAFTS"


def _data(name: str) -> Any:
    return json.loads(resources.files(__package__).joinpath("data", name).read_text("utf-8"))


def drafts_folder() -> str:
    return os.environ.get(DRAFTS_ENV, "stopline-drafts")


class _LazyDirectory:
    """A directory target whose folder is read from the environment when first used, so that
    importing the demo creates nothing on disk."""

    def __init__(self, sub: str) -> None:
        self.name = "directory"
        self._sub = sub
        self._target: DirectoryTarget | None = None
        self._folder = ""

    def _get(self) -> DirectoryTarget:
        folder = os.path.join(drafts_folder(), self._sub)
        if self._target is None or folder != self._folder:
            self._target, self._folder = DirectoryTarget(folder), folder
        return self._target

    def describe(self) -> dict[str, str]:
        return self._get().describe()

    def create(self, artifact: Artifact, idempotency_key: str) -> RemoteRef:
        return self._get().create(artifact, idempotency_key)

    def update(self, ref: RemoteRef, artifact: Artifact) -> RemoteRef:
        return self._get().update(ref, artifact)

    def read(self, remote_id: str) -> Readback:
        return self._get().read(remote_id)

    def find(self, idempotency_key: str) -> RemoteRef | None:
        return self._get().find(idempotency_key)

    def publish(self, ref: RemoteRef) -> str:
        return self._get().publish(ref)


# --- support triage ------------------------------------------------------------------------


def discover_messages(ctx: HookContext) -> Iterable[Discovered]:
    for message in _data("support_inbox.json"):
        yield Discovered(message["id"], {"message_id": message["id"]})


def observe_message(ctx: HookContext) -> Evidence | NeedsEyes:
    messages = {m["id"]: m for m in _data("support_inbox.json")}
    message = messages.get(ctx.input["message_id"])
    if message is None:
        return NeedsEyes("the message is gone from the inbox")
    text = (message["subject"] + " " + message["body"]).lower()
    if "refund" in text:
        label = "refund_request"
    elif "thank" in text:
        label = "praise"
    else:
        label = "unclear"
    return Evidence(data=message, classification=label)


def propose_reply(ctx: HookContext) -> Proposal | ReportForReview | NeedsEyes:
    message = ctx.evidence or {}
    label = ctx.classification
    if label == "praise":
        return ReportForReview(
            {"summary": f"Praise from {message['from']}", "message": message["id"]}
        )
    if label != "refund_request":
        return NeedsEyes(
            "cannot tell what the customer is asking for",
            owner="support-leads",
            evidence={"subject": message.get("subject"), "body": message.get("body")},
        )
    note = ""
    if ctx.rejection:
        note = f"\n\n(Revised after review: {ctx.rejection['reason']})"
    draft = (
        f'Hello,\n\nThank you for writing about "{message["subject"]}". We have checked your '
        f"account and will refund the charge within 5 business days.{note}\n\nBest regards,\nSupport"
    )
    return Proposal(
        action="send_reply",
        target=message["from"],
        params={"to": message["from"], "subject": f"Re: {message['subject']}", "draft": draft},
        rationale="refund requests inside the policy window get a standard reply",
    )


def deliver_reply(ctx: HookContext) -> Deliver:
    proposal = ctx.proposal or {}
    params = proposal.get("params", {})
    reply = Artifact(
        key="reply",
        title=params.get("subject", ""),
        summary=f"Reply to {params.get('to', '')}",
        body=params.get("draft", ""),
    )
    return Deliver([reply])


def qa_text(ctx: HookContext, artifact: Artifact) -> QAResult:
    checks = {
        "has_title": bool(artifact.title.strip()),
        "has_body": len(artifact.body.split()) >= 5,
        "no_placeholders": "TODO" not in artifact.body,
    }
    return QAResult(all(checks.values()), {"checks": checks, "words": len(artifact.body.split())})


support = Automation(
    name="support-triage",
    description="Triage the support inbox and draft replies to refund requests",
    discover=discover_messages,
    observe=observe_message,
    propose=propose_reply,
    execute=deliver_reply,
    qa=qa_text,
    target=_LazyDirectory("replies"),
    every=300,
    approval=ApprovalPolicy(
        rules={"send_reply": ApprovalRule(roles=("approver",), approvals=1, max_evidence_age=86400)}
    ),
    retry=RetryPolicy(max_attempts=3, base_delay=0.2, backoff=2.0, max_delay=2.0),
)


# --- service health -------------------------------------------------------------------------


def discover_services(ctx: HookContext) -> Iterable[str]:
    return sorted(_data("services.json"))


def inspect_service(ctx: HookContext) -> Evidence:
    status = _data("services.json")[ctx.item.key if ctx.item else ""]
    if status["status"] == "unreachable":
        raise TransientError("health endpoint timed out after 2.0 s")
    return Evidence(data={"service": ctx.item.key if ctx.item else "", **status})


def propose_restart(ctx: HookContext) -> Proposal | ReportForReview:
    ev = ctx.evidence or {}
    if ev.get("status") == "ok":
        return ReportForReview(
            {"summary": f"{ev['service']} is healthy", "p99_ms": ev.get("p99_ms")}
        )
    return Proposal(
        action="restart_service",
        target=str(ev.get("service")),
        params={"service": ev.get("service"), "strategy": "rolling", "max_unavailable": 1},
        rationale=(
            f"error rate {ev.get('error_rate')} and p99 {ev.get('p99_ms')} ms"
            f" since {ev.get('since')}"
        ),
        severity="high",  # a service down outranks routine replies in the inbox
    )


def restart(ctx: HookContext) -> Deliver:
    proposal = ctx.proposal or {}
    return Deliver(result={"restarted": proposal.get("params", {}).get("service")})


health = Automation(
    name="service-health",
    description="Inspect services; propose restarts that two people approve",
    discover=discover_services,
    observe=inspect_service,
    propose=propose_restart,
    execute=restart,
    every=60,
    approval=ApprovalPolicy(
        rules={
            "restart_service": ApprovalRule(roles=("approver",), approvals=2, max_evidence_age=900)
        }
    ),
    retry=RetryPolicy(max_attempts=3, base_delay=0.2, backoff=2.0, max_delay=1.0),
)


# --- weekly digest: a two-artifact draft delivery -------------------------------------------

ARTICLES = {
    "article-1": (
        "Checkout latency this week",
        "Why p99 rose on Thursday and what we changed",
        "On Thursday the checkout p99 rose to 4.1 s. The cause was a slow dependency. "
        "We added a timeout and a cache. Latency is back under 300 ms.",
    ),
    "article-2": (
        "Support inbox in numbers",
        "Four messages, one refund, one thank-you",
        "The inbox received four messages. Two asked for refunds, one thanked the team for "
        "the export feature, and one needs a person to read it.",
    ),
}


def discover_digest(ctx: HookContext) -> Iterable[str]:
    return ["2026-W48"]


def observe_digest(ctx: HookContext) -> Evidence:
    return Evidence(data={"week": ctx.item.key if ctx.item else "", "articles": sorted(ARTICLES)})


def propose_digest(ctx: HookContext) -> Proposal:
    return Proposal(
        action="write_drafts",
        target="digest-folder",
        params={"articles": sorted(ARTICLES)},
        rationale="drafts only: never published by stopline",
    )


def chart(key: str) -> Asset:
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="10"><title>{key}</title></svg>'
    )
    return Asset(f"{key}.svg", "image/svg+xml", svg.encode())


def write_digest(ctx: HookContext) -> Deliver:
    return Deliver(
        [
            Artifact(key, title, summary, body, assets=(chart(key),))
            for key, (title, summary, body) in sorted(ARTICLES.items())
        ]
    )


def revise_digest(ctx: HookContext, reason: str, current: Sequence[Artifact]) -> list[Artifact]:
    scope = set((ctx.revision or {}).get("scope", ()))
    revised = []
    for artifact in current:
        if artifact.key not in scope:  # only what the request names may change
            revised.append(artifact)
            continue
        paragraphs = [s.strip() + "." for s in artifact.body.split(".") if s.strip()]
        body = "\n\n".join(paragraphs) + f"\n\n(Revised: {reason})"
        revised.append(
            Artifact(
                artifact.key,
                artifact.title,
                artifact.summary + " (revised)",
                body,
                assets=artifact.assets,
            )
        )
    return revised


digest_automation = Automation(
    name="weekly-digest",
    description="Write the weekly digest as two drafts, read them back, revise on request",
    discover=discover_digest,
    observe=observe_digest,
    propose=propose_digest,
    execute=write_digest,
    qa=qa_text,
    revise=revise_digest,
    target=_LazyDirectory("digest"),
    every=3600,
    approval=ApprovalPolicy(rules={"write_drafts": ApprovalRule(approvals=0)}),
    delivery=DeliveryPolicy(mode="draft", revisable=True),
)

ACTORS = {
    "alice": ("approver", "operator"),
    "bob": ("approver", "operator"),
    "carol": ("operator",),
    "dana": ("viewer",),
}

app = App([support, health, digest_automation], actors=ACTORS)
