"""Commands: one frozen dataclass per operation, the input of ``decide()``.

Worker commands name the worker and the fencing token of its lease; operator commands name
the actor. A command's ``to_plain()`` is what an idempotency key is bound to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from .artifacts import Artifact
from .authorship import HUMAN, Author
from .integrity import Finding
from .records import Event
from .transitions import Cmd


@dataclass(frozen=True)
class Command:
    name: ClassVar[str] = ""

    def to_plain(self) -> dict[str, Any]:
        return {"command": self.name, **asdict(self)}


# --- the scheduler and the sweeper -------------------------------------------------------


@dataclass(frozen=True)
class Discover(Command):
    name: ClassVar[str] = Cmd.DISCOVER
    item_id: str
    automation: str
    key: str
    input: Mapping[str, Any] = field(default_factory=dict)
    agent: str | None = None  # the agent whose proposal starts the item (``stopline mcp``)


@dataclass(frozen=True)
class Expire(Command):
    """A step whose lease ran out with no outcome: exhaust it or fail the revision."""

    name: ClassVar[str] = "expire"
    sweeper: str = "sweeper"
    head: Event | None = None
    legacy_seal: str | None = None


# --- workers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerCommand(Command):
    worker: str
    token: int


@dataclass(frozen=True)
class Observe(WorkerCommand):
    name: ClassVar[str] = Cmd.OBSERVE
    evidence: Mapping[str, Any]
    observed_at: datetime
    classification: Any = None


@dataclass(frozen=True)
class Propose(WorkerCommand):
    name: ClassVar[str] = Cmd.PROPOSE
    action: str
    target: str
    params: Mapping[str, Any]
    rationale: str = ""
    severity: str | None = None  # one of core.severity.SEVERITIES; orders the inbox only
    proposer: str | None = None  # an agent proposes under its own name


@dataclass(frozen=True)
class Report(WorkerCommand):
    name: ClassVar[str] = Cmd.REPORT
    report: Mapping[str, Any]


@dataclass(frozen=True)
class NothingToDo(WorkerCommand):
    name: ClassVar[str] = Cmd.NOTHING_TO_DO
    reason: str


@dataclass(frozen=True)
class NeedsEyes(WorkerCommand):
    name: ClassVar[str] = Cmd.NEEDS_EYES
    owner: str
    why: str
    evidence: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failure(WorkerCommand):
    """A step failed. ``retryable`` is the hook's own word (``RetryLater``/``Fail``, or an
    exception of ``retry_on``/``terminal_on``); ``None`` leaves it to the rules of
    ``core/failures.py`` for ``failure_class``."""

    name: ClassVar[str] = "failure"
    failure_class: str
    message: str
    retryable: bool | None = None
    jitter_sample: float = 0.0
    traceback: str | None = None  # what a hook raised, where (kept as evidence, bounded)


@dataclass(frozen=True)
class Guard(WorkerCommand):
    """Before an acting call (an execute hook, a remote create or update): the worker read the
    record, its head event and the actor registry again; the core checks that the record is
    sealed, the lease is still this worker's and, with ``authority``, that every counted
    approval still holds. ``registry`` carries what was found wrong with the registry."""

    name: ClassVar[str] = "guard"
    head: Event | None = None
    legacy_seal: str | None = None
    registry: tuple[Finding, ...] = ()
    authority: bool = True


@dataclass(frozen=True)
class Execute(WorkerCommand):
    """Re-check authority just before the approved action runs. ``digest``: the proposal the
    caller means to carry out (an agent names it); any other digest is refused."""

    name: ClassVar[str] = Cmd.EXECUTE
    digest: str | None = None


@dataclass(frozen=True)
class QAResult:
    passed: bool
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_plain(self) -> dict[str, Any]:
        return {"passed": self.passed, "details": self.details}


@dataclass(frozen=True)
class Stage(WorkerCommand):
    """Artifacts rendered by the execute (or revise) hook, with their QA evidence."""

    name: ClassVar[str] = Cmd.STAGE
    artifacts: tuple[Artifact, ...]
    qa: Mapping[str, QAResult]
    result: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Intent(WorkerCommand):
    name: ClassVar[str] = Cmd.INTENT
    key: str
    operation: str  # "create" or "update"
    idempotency_key: str


@dataclass(frozen=True)
class Bind(WorkerCommand):
    name: ClassVar[str] = Cmd.BIND
    key: str
    operation: str  # "create", "update" or "found"
    remote_id: str
    remote_version: str


@dataclass(frozen=True)
class Delivered(WorkerCommand):
    name: ClassVar[str] = Cmd.DELIVERED
    result: Mapping[str, Any] = field(default_factory=dict)
    digest: str | None = None  # an agent's outcome is bound to the digest it carried out


@dataclass(frozen=True)
class Observed:
    """One artifact as read back: ``None`` hash means the object is missing."""

    readback_hash: str | None
    version: str = ""
    diff: tuple[str, ...] = ()

    def to_plain(self) -> dict[str, Any]:
        return {"readback_hash": self.readback_hash, "version": self.version, "diff": self.diff}


@dataclass(frozen=True)
class ReadBack(WorkerCommand):
    name: ClassVar[str] = Cmd.READBACK
    readbacks: Mapping[str, Observed]


# --- people ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActorCommand(Command):
    """A person's command. ``attestation``: in signed mode, the signed record of what the actor
    authorises (``stopline.trust``); kept in the event, and with an approval in the proposal.
    ``author``: who wrote it, as its caller declares (``None``: a person, ``human``); recorded
    in the event as data, never a source of authority (``core/authorship.py``)."""

    actor: str
    attestation: Mapping[str, Any] | None = field(default=None, kw_only=True)
    author: Author | None = field(default=None, kw_only=True)

    def to_plain(self) -> dict[str, Any]:
        plain = super().to_plain()
        plain.pop("attestation", None)  # a signature is fresh on every try: keys bind the rest
        author = plain.pop("author", None)
        if author is not None and self.author != HUMAN:
            # a declared author is part of what a key binds (a person's, the default, is not,
            # so keys bound before authors were kept still match)
            plain["author"] = self.author_of().to_plain()
        return plain

    def author_of(self) -> Author:
        return HUMAN if self.author is None else self.author


@dataclass(frozen=True)
class Approve(ActorCommand):
    name: ClassVar[str] = Cmd.APPROVE
    digest: str


@dataclass(frozen=True)
class Reject(ActorCommand):
    name: ClassVar[str] = Cmd.REJECT
    reason: str
    send_back: bool = False
    digest: str | None = None


@dataclass(frozen=True)
class Edit(ActorCommand):
    name: ClassVar[str] = Cmd.EDIT
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Reinspect(ActorCommand):
    name: ClassVar[str] = Cmd.REINSPECT
    reason: str


@dataclass(frozen=True)
class Acknowledge(ActorCommand):
    name: ClassVar[str] = Cmd.ACKNOWLEDGE
    reason: str = ""


@dataclass(frozen=True)
class Resolve(ActorCommand):
    name: ClassVar[str] = Cmd.RESOLVE
    reason: str
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Resume(ActorCommand):
    name: ClassVar[str] = Cmd.RESUME
    reason: str
    attempts: int | None = None


@dataclass(frozen=True)
class Close(ActorCommand):
    """``integrity``: what the command layer found wrong with the record (closing is the one
    command such a record still accepts; the findings are kept in its history)."""

    name: ClassVar[str] = Cmd.CLOSE
    reason: str
    integrity: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class Note(ActorCommand):
    """A comment added to the item's history; the state, the documents and the lease stay."""

    name: ClassVar[str] = Cmd.NOTE
    body: str


@dataclass(frozen=True)
class Finalize(Command):
    name: ClassVar[str] = Cmd.FINALIZE


@dataclass(frozen=True)
class Revise(ActorCommand):
    name: ClassVar[str] = Cmd.REVISE
    reason: str
    artifacts: tuple[str, ...]


@dataclass(frozen=True)
class Review(ActorCommand):
    name: ClassVar[str] = Cmd.REVIEW
    packet: str
    verdict: str  # "approve" or "reject"
    reason: str = ""


@dataclass(frozen=True)
class Publish(ActorCommand):
    name: ClassVar[str] = Cmd.PUBLISH
    packet: str
    signal: str = ""


@dataclass(frozen=True)
class Reconcile(ActorCommand):
    """Bind a remote object found by its key; ``found`` is what the shell's lookup saw."""

    name: ClassVar[str] = Cmd.RECONCILE
    key: str
    found: Observed | None = None
    remote_id: str = ""
