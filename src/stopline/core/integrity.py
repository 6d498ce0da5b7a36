"""Integrity of stored records: the seal each event carries, and what a load must prove.

Every event seals the item record it leaves behind: ``digests["seal"]`` is the digest of the
record's :func:`seal_document` (everything but the version, the head and the live lease). The
event hash covers the seal, and the item's ``head`` is that hash, so a record edited in place no
longer matches its head event. A claim is a lease write, not an event: it adds one attempt and
one fencing token (and may log an abandoned attempt), so a record matches its seal when rolling
back the claims made since the event gives exactly the sealed record (:func:`head_findings`).

The checks return :class:`Finding` values: what is wrong, where, with a reason code. A finding
on an item stops every action on it (``integrity_failed``); ``stopline verify`` lists them all.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .authorship import AuthorKind, author_problems, event_author
from .canonical import CanonicalError, format_time
from .data_digest import MEMO_DATA, data_digest
from .fast_digest import fast_digest, members_text, text_digest
from .frozen import KeptByValue, deeply_frozen
from .legacy_form import digest_matches
from .records import Event, Item
from .transitions import By, Transition

SEAL_VERSION = 1
# How many claims since the last event a load rolls back at most (each claim spends an
# attempt, so more claims than attempts cannot have happened).
MAX_CLAIMS_SINCE_EVENT = 10_000


@dataclass(frozen=True)
class Finding:
    """One integrity problem: ``kind`` of record (item, event, actor, token, automation, ledger,
    idempotency, store), its ``ref``, the ``field`` at fault, a reason code and the specifics."""

    kind: str
    ref: str
    field: str
    reason: str
    detail: str

    def to_plain(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "ref": self.ref,
            "field": self.field,
            "reason": self.reason,
            "detail": self.detail,
        }

    def text(self) -> str:
        return f"{self.kind} {self.ref}: {self.field}: {self.reason} ({self.detail})"


# Reason codes of findings (reasons of a decision are in reasons.Reason).
HEAD_MISSING = "head_missing"
HEAD_MISMATCH = "head_mismatch"
EVENT_ALTERED = "event_altered"
SEAL_MISMATCH = "seal_mismatch"
UNSEALED = "unsealed"
PROPOSAL_ALTERED = "proposal_altered"
APPROVAL_ALTERED = "approval_altered"
APPROVAL_UNRECORDED = "approval_unrecorded"
RECORD_MALFORMED = "record_malformed"
AUTHOR_MALFORMED = "author_malformed"
# A document of an item row (stored apart by digest, see stopline.store.documents) is gone, or
# its stored body no longer hashes to the digest the row names: the record cannot be read whole.
DOCUMENT_MISSING = "document_missing"
DOCUMENT_ALTERED = "document_altered"


def seal_document(
    item: Item,
    *,
    attempts: int | None = None,
    lease_token: int | None = None,
    attempt_log: Sequence[Mapping[str, Any]] | None = None,
    data_hash: str | None = None,
) -> dict[str, Any]:
    """What an event seals of the record it leaves behind (the keyword arguments override the
    claim counters, to roll back claims made since)."""
    return {
        "v": SEAL_VERSION,
        "id": item.id,
        "automation": item.automation,
        "key": item.key,
        "state": item.state.value,
        "seq": item.seq,
        "created_at": format_time(item.created_at),
        "updated_at": format_time(item.updated_at),
        "attempts": item.attempts if attempts is None else attempts,
        "max_attempts": item.max_attempts,
        "next_eligible_at": format_time(item.next_eligible_at),
        "lease_token": item.lease_token if lease_token is None else lease_token,
        "attempt_log": _log_digest(item.attempt_log if attempt_log is None else attempt_log),
        "data": data_digest(item.data) if data_hash is None else data_hash,
    }


# The seal document's keys in RFC 8785 order (all ASCII: code point order).
_SEAL_KEYS = (
    "attempt_log",
    "attempts",
    "automation",
    "created_at",
    "data",
    "id",
    "key",
    "lease_token",
    "max_attempts",
    "next_eligible_at",
    "seq",
    "state",
    "updated_at",
    "v",
)


def seal_digest(document: Mapping[str, Any]) -> str:
    """``digest(document)`` for a seal document, written without a walk: every value of one is
    a string or a small integer, so its canonical text is its keys in order and each value as
    json writes it. Any other document (a key more or less, a value of another type or out of
    range) goes the general way; a lone surrogate is refused as there."""
    text = members_text(document, _SEAL_MEMBERS) if len(document) == len(_SEAL_KEYS) else None
    return fast_digest(document) if text is None else text_digest(text)


_SEAL_MEMBERS = tuple((key, f'"{key}"') for key in _SEAL_KEYS)


def _log_digest(log: Sequence[Mapping[str, Any]]) -> str:
    return fast_digest(list(log)) if log else _EMPTY_LOG


_EMPTY_LOG = fast_digest([])


def item_seal(item: Item) -> str:
    """The seal of ``item`` exactly as it is (what the event that writes it carries)."""
    return seal_digest(seal_document(item))


def _claim_rollbacks(item: Item) -> Iterator[tuple[int, int, Sequence[Mapping[str, Any]]]]:
    """Every (attempts, lease token, attempt log) the record may have had at its last event:
    each claim since added one attempt and one token, and every claim but one that found the
    lease released logged the attempt it abandoned. A record under a lease was most likely
    claimed once since its event, so that comes first (the order changes no answer)."""
    log = item.attempt_log
    limit = min(item.attempts, item.lease_token, MAX_CLAIMS_SINCE_EVENT)
    order: Iterable[int] = range(0, limit + 1)
    if item.lease_owner is not None and limit >= 1:
        order = itertools.chain((1, 0), range(2, limit + 1))
    for claims in order:
        for logged in sorted({claims, claims - 1}):
            if logged < 0 or logged > len(log):
                continue
            extra = log[len(log) - logged :] if logged else ()
            if any(dict(e).get("outcome") != "abandoned" for e in extra):
                continue
            yield item.attempts - claims, item.lease_token - claims, log[: len(log) - logged]


def seal_matches(item: Item, seal: str) -> bool:
    """``item`` is the record ``seal`` was computed over, up to the claims made since."""
    data_hash = data_digest(item.data)
    for attempts, token, log in _claim_rollbacks(item):
        document = seal_document(
            item, attempts=attempts, lease_token=token, attempt_log=log, data_hash=data_hash
        )
        if seal_digest(document) == seal:
            return True
    return False


def head_findings(item: Item, head: Event | None, legacy_seal: str | None = None) -> list[Finding]:
    """What a load must prove before anything acts on ``item``: its head event is intact, is the
    last one, and seals exactly this record. ``legacy_seal``: the seal recorded when a database
    from before seals was upgraded, for a head event that carries none."""
    ref = item.id
    if head is None:
        return [Finding("item", ref, "head", HEAD_MISSING, "the item has no events")]
    found: list[Finding] = []
    if not head.hash_ok():
        found.append(
            Finding("event", f"{ref}#{head.seq}", "hash", EVENT_ALTERED, "the event was altered")
        )
    if head.hash != item.head or head.seq != item.seq or head.item_id != item.id:
        found.append(
            Finding(
                "item",
                ref,
                "head",
                HEAD_MISMATCH,
                f"the item points at event {item.seq} ({item.head[:12]}), the last event is "
                f"{head.seq} ({head.hash[:12]})",
            )
        )
    if head.to_state != item.state:
        found.append(
            Finding(
                "item",
                ref,
                "state",
                SEAL_MISMATCH,
                f"state {item.state.value} but the last event ended in {head.to_state.value}",
            )
        )
    seal = head.digests.get("seal") or legacy_seal
    try:
        if seal is None:
            found.append(Finding("item", ref, "seal", UNSEALED, "the last event carries no seal"))
        elif not seal_matches(item, str(seal)):
            found.append(
                Finding(
                    "item",
                    ref,
                    "record",
                    SEAL_MISMATCH,
                    "the stored record differs from the one its last event sealed",
                )
            )
    except (CanonicalError, TypeError, ValueError) as exc:
        found.append(Finding("item", ref, "record", RECORD_MALFORMED, str(exc)[:200]))
    return found + proposal_findings(item)


def proposal_body(proposal: Mapping[str, Any]) -> dict[str, Any]:
    """What a proposal digest covers: every field but the digest and the approvals."""
    return {k: v for k, v in proposal.items() if k not in ("digest", "approvals")}


def proposal_findings(item: Item) -> list[Finding]:
    """The proposal's digest recomputes from its body, and every approval names that digest."""
    proposal = item.doc("proposal")
    if proposal is None:
        return []
    ref = item.id
    try:
        recorded = proposal["digest"]
        if not _body_matches_digest(proposal):
            return [
                Finding(
                    "item",
                    ref,
                    "proposal",
                    PROPOSAL_ALTERED,
                    f"the proposal body no longer hashes to its digest {str(recorded)[:12]}",
                )
            ]
        found = []
        actors = [a["actor"] for a in proposal["approvals"]]
        for approval in proposal["approvals"]:
            if approval["digest"] != recorded:
                found.append(
                    Finding(
                        "item",
                        ref,
                        "proposal.approvals",
                        APPROVAL_ALTERED,
                        f"{approval['actor']}'s approval names another digest",
                    )
                )
        if len(set(actors)) != len(actors):
            found.append(
                Finding(
                    "item", ref, "proposal.approvals", APPROVAL_ALTERED, "an approver is repeated"
                )
            )
        return found
    except (KeyError, TypeError, ValueError, CanonicalError) as exc:
        return [Finding("item", ref, "proposal", RECORD_MALFORMED, f"malformed proposal: {exc}")]


def _body_matches_digest(proposal: Mapping[str, Any]) -> bool:
    """Whether the proposal's body hashes to its digest; kept when it does for a proposal
    frozen to the bottom (the very object is checked again before each acting step): such a
    value cannot change, so neither can the answer."""
    kept, _ = _DIGEST_MATCHED.get(proposal)
    if kept:
        return True
    matches = digest_matches(proposal_body(proposal), proposal["digest"])
    if matches and deeply_frozen(proposal):
        _DIGEST_MATCHED.keep(proposal, True, 1)
    return matches


_DIGEST_MATCHED = KeptByValue(MEMO_DATA, MEMO_DATA)  # proposals whose body matched their digest


def author_findings(event: Event, row: Transition | None) -> list[Finding]:
    """The author an event records is well formed, and a worker's, the scheduler's or the
    sweeper's event names ``automation``. The event hash covers the author, so an edit is also
    ``event_altered``; an event written before authors were kept has none, and that is sound."""
    author = event_author(event.detail)
    if author is None:
        return []
    ref = f"{event.item_id}#{event.seq}"
    problems = author_problems(author)
    if problems:
        return [Finding("event", ref, "author", AUTHOR_MALFORMED, "; ".join(problems)[:200])]
    if (
        row is not None
        and row.by in (By.WORKER, By.SYSTEM)
        and author["kind"] != AuthorKind.AUTOMATION
    ):
        return [
            Finding(
                "event",
                ref,
                "author",
                AUTHOR_MALFORMED,
                f"{event.command} is written by {row.by.value}, but the author is {author['kind']}",
            )
        ]
    return []
