"""The command layer: load, decide, write. The CLI, the HTTP API and the web inbox call this.

Every method returns a :class:`~stopline.core.decision.Decision`; refusals are values, never
exceptions. A refused decision writes nothing but an audit row in ``refusals``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any

from .clock import Clock, utcnow
from .core.authorship import Author
from .core.canonical import CanonicalError, digest
from .core.command_types import wrong_types
from .core.commands import (
    Acknowledge,
    ActorCommand,
    Approve,
    Close,
    Command,
    Edit,
    Finalize,
    Note,
    Observed,
    Publish,
    Reconcile,
    Reinspect,
    Reject,
    Resolve,
    Resume,
    Review,
    Revise,
)
from .core.decide import decide
from .core.decision import Decision, Outcome, refused
from .core.integrity import Finding, head_findings
from .core.ledger import item_ledger_findings
from .core.limits import text_problem
from .core.policy import Policy
from .core.reasons import Reason
from .core.records import Actor, Item
from .core.registry import Registry
from .core.states import State
from .core.step import Context, bind_idempotency, idempotency_digest
from .core.verify import verify_item
from .idempotency import stored_decision
from .registrar import Registrar
from .runtime.commit import Commit, Committed, Writer, commit
from .store import Store
from .trust.authority import Authority, Trust, attestation_problems
from .trust.checks import attest, binds_for, needed_roles
from .trust.keys import Signer

UNSIGNED_HINT = (
    "signed mode: sign the command with the actor's key (--key PATH, STOPLINE_KEY or ssh-agent)"
)
IDEMPOTENT_REPLAY = "idempotent_replay"


@dataclass
class Controller(Registrar):
    """The command layer over one store.

    ``trust``: the host's trust root; when set (by default from ``STOPLINE_TRUST_ROOT``), the
    host is in signed mode: every person's command must be signed (``signer``: the actor's key,
    or a server's key certified to speak for the actors who sign in to it, named ``via``), and
    authority comes only from certificates the trust root signed.
    """

    store: Store
    clock: Clock = utcnow
    trust: Trust | None = field(default_factory=Trust.from_env)
    signer: Signer | None = None
    via: str | None = None
    # what a refusal says when signed mode finds no key to sign with (the shell knows how)
    unsigned_hint: str = UNSIGNED_HINT

    @property
    def signed_mode(self) -> bool:
        return self.trust is not None

    def authority(self, registry: Registry | None = None) -> Authority | None:
        """What the trust root certified, from the registry's signed documents (signed mode)."""
        if self.trust is None:
            return None
        return Authority.build(self.trust, (registry or self.store.registry()).signed)

    # --- reading --------------------------------------------------------------------------

    def item(self, ref: str) -> Item | None:
        """An item by id, or by ``AUTOMATION/KEY``."""
        if text_problem(ref) is not None:
            return None  # no item's id or key holds what is not valid text (nor is it sent on)
        found = self.store.get(ref)
        if found is None and "/" in ref:
            automation, _, key = ref.partition("/")
            found = self.store.find(automation, key)
        return found

    def record_findings(self, item: Item) -> list[Finding]:
        """What ``item`` (as read) fails against its head event, that event's seal and its
        proposal's digest: what a shell shows beside a record a person may act on."""
        head, legacy = self.store.head(item.id)
        return head_findings(item, head, legacy)

    # --- the one path every command takes ------------------------------------------------------

    def run(self, ref: str, command: Command, *, idempotency_key: str | None = None) -> Decision:
        now = self.clock()
        item = self.item(ref)
        try:
            if wrong_types(command):  # a library caller's command: refused before any digest
                raise TypeError("a value of the wrong type")
            command_digest = digest({"item": item.id if item else ref, **command.to_plain()})
        except (CanonicalError, TypeError, ValueError, RecursionError):
            # input with no canonical form (NaN, an integer beyond 2**53, a lone surrogate, a
            # value nested deeper than a command's copy of it can follow)
            return self._commit(refused(item, [Reason.INVALID_INPUT], ref), command, now).decision
        if idempotency_key and text_problem(idempotency_key) is not None:
            return self._commit(refused(item, [Reason.INVALID_INPUT], ref), command, now).decision
        if idempotency_key:  # the actor's own key (a key another actor sent is another)
            idempotency_key, seen = stored_decision(self.store, command, idempotency_key)
            if seen is not None:
                return self._replay(item, ref, seen, command_digest, command, now)
        decision = self._decide(item, ref, command, now)
        if not decision.applied:
            return self._commit(decision, command, now).decision
        write = None
        if idempotency_key:
            decision = bind_idempotency(decision, idempotency_digest(idempotency_key))
            key = (idempotency_key, command_digest, json.dumps(decision.to_plain()))
            write = partial(self.store.apply, idempotency=key)
        done = self._commit(decision, command, now, write)
        if done.status is not Committed.LOST:
            return done.decision
        if idempotency_key and (seen := self.store.idempotency(idempotency_key)):
            return self._replay(item, ref, seen, command_digest, command, now)
        return self._commit(refused(item, [Reason.STALE_VERSION]), command, now).decision

    def refuse(self, ref: str, command: Command, reasons: list[str]) -> Decision:
        """Refuse ``command`` for ``reasons`` found outside the core (a target that did not
        answer), with its audit row."""
        item = self.item(ref)
        return self._commit(refused(item, reasons, ref), command, self.clock()).decision

    def _commit(
        self, decision: Decision, command: Command, now: datetime, write: Writer | None = None
    ) -> Commit:
        actor = command.actor if isinstance(command, ActorCommand) else None
        if actor is not None and text_problem(actor) is not None:
            actor = None  # not valid text: no registered actor, and no column holds it
        return commit(self.store, decision, command=command.name, actor=actor, now=now, write=write)

    def preview(self, ref: str, command: Command) -> Decision:
        """What :meth:`run` would decide now, with every check, writing nothing (not even the
        audit row of a refusal): what a shell asks before it makes a remote call."""
        return self._decide(self.item(ref), ref, command, self.clock())

    def _decide(self, item: Item | None, ref: str, command: Command, now: datetime) -> Decision:
        """Every check and the core's decision; nothing is written here."""
        actor = command.actor if isinstance(command, ActorCommand) else None
        if item is None:
            return refused(None, [Reason.UNKNOWN_ITEM], ref)
        policy = self.store.policy(item.automation)
        if policy is None:
            return refused(item, [Reason.UNKNOWN_AUTOMATION])
        # What is decided on must be what its history sealed, and authority comes from the
        # registry chain (in signed mode: from what the trust root certified), never from a
        # table alone.
        head, legacy = self.store.head(item.id)
        findings = head_findings(item, head, legacy)
        if actor is not None:  # a person's command: the whole history, against the ledger
            history = self.store.history(item.id)
            findings += [f for f in verify_item(item, history) if f not in findings]
            findings += item_ledger_findings(item.id, history, self.store.item_ledger(item.id))
        fresh = self.store.get(item.id) if findings else None
        if fresh is not None and fresh.version != item.version:
            return refused(item, [Reason.STALE_VERSION])  # written between the reads
        registry = self.store.registry()
        actors = dict(registry.actors)
        if actor is not None:
            findings += registry.findings
        authority = self.authority(registry)
        if authority is not None and isinstance(command, ActorCommand):
            actors = authority.actors(now)
            command, problems = self._attested(item, command, policy, authority, actors, now)
            if problems:
                return replace(
                    refused(item, [Reason.SIGNATURE_INVALID]), explanation=tuple(problems)
                )
        if findings:
            if isinstance(command, Close) and registry.ok:
                # closing never acts: the way out of a record nobody can trust, with the
                # findings kept in its history
                command = replace(command, integrity=tuple(findings))
            else:
                return replace(
                    refused(item, [Reason.INTEGRITY_FAILED]),
                    explanation=tuple(f.text() for f in findings[:5]),
                )
        return decide(item, command, Context(now, policy, actors))

    def _attested(
        self,
        item: Item,
        command: ActorCommand,
        policy: Policy,
        authority: Authority,
        actors: Mapping[str, Actor],
        now: datetime,
    ) -> tuple[ActorCommand, list[str]]:
        """The command with its attestation (signed here with ``signer`` unless the command
        brought one), and why that attestation does not authorise it (empty when it does)."""
        attestation = command.attestation
        if attestation is None:
            if self.signer is None:
                return command, [self.unsigned_hint]
            held = actors.get(command.actor)
            roles = needed_roles(item, command, policy) & (held.roles if held else frozenset())
            proposal = item.doc("proposal") or {}
            signed = attest(
                item,
                command,
                self.signer,
                now,
                roles=sorted(roles),
                policy_version=proposal.get("policy_version"),
                via=self.via,
            )
            attestation = signed.to_plain()
        problems = attestation_problems(
            authority,
            attestation,
            command=command.name,
            item=item.id,
            actor=command.actor,
            binds=binds_for(item, command),
            now=now,
        )
        return replace(command, attestation=attestation), problems

    def _replay(
        self,
        item: Item | None,
        ref: str,
        seen: tuple[str, str],
        command_digest: str,
        command: Command,
        now: datetime,
    ) -> Decision:
        recorded_digest, recorded = seen
        if recorded_digest != command_digest:
            reuse = refused(item, [Reason.IDEMPOTENCY_KEY_REUSE], ref)
            return self._commit(reuse, command, now).decision
        original = json.loads(recorded)
        state = State(original["state"]) if original.get("state") else None
        return Decision(
            Outcome.ZERO_WRITE, (IDEMPOTENT_REPLAY,), original["item"], state, before=item
        )

    # --- commands, one method each -----------------------------------------------------------

    def approve(
        self, ref: str, *, proposal: str, actor: str, idempotency_key: str | None = None
    ) -> Decision:
        return self.run(ref, Approve(actor=actor, digest=proposal), idempotency_key=idempotency_key)

    def reject(
        self,
        ref: str,
        *,
        actor: str,
        reason: str,
        send_back: bool = False,
        proposal: str | None = None,
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Reject(actor=actor, reason=reason, send_back=send_back, digest=proposal)
        return self.run(ref, command, idempotency_key=idempotency_key)

    def edit(
        self, ref: str, *, actor: str, params: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Decision:
        return self.run(
            ref, Edit(actor=actor, params=dict(params)), idempotency_key=idempotency_key
        )

    def reinspect(
        self, ref: str, *, actor: str, reason: str, idempotency_key: str | None = None
    ) -> Decision:
        return self.run(ref, Reinspect(actor=actor, reason=reason), idempotency_key=idempotency_key)

    def acknowledge(
        self, ref: str, *, actor: str, reason: str = "", idempotency_key: str | None = None
    ) -> Decision:
        return self.run(
            ref, Acknowledge(actor=actor, reason=reason), idempotency_key=idempotency_key
        )

    def resolve(
        self,
        ref: str,
        *,
        actor: str,
        reason: str,
        input: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Resolve(actor=actor, reason=reason, input=dict(input or {}))
        return self.run(ref, command, idempotency_key=idempotency_key)

    def resume(
        self,
        ref: str,
        *,
        actor: str,
        reason: str,
        attempts: int | None = None,
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Resume(actor=actor, reason=reason, attempts=attempts)
        return self.run(ref, command, idempotency_key=idempotency_key)

    def close(
        self, ref: str, *, actor: str, reason: str, idempotency_key: str | None = None
    ) -> Decision:
        return self.run(ref, Close(actor=actor, reason=reason), idempotency_key=idempotency_key)

    def note(
        self,
        ref: str,
        *,
        actor: str,
        body: str,
        author: Author | None = None,
        idempotency_key: str | None = None,
    ) -> Decision:
        """A comment in the item's history; nothing else changes. ``author``: who wrote it, as
        the caller declares (``None``: a person), recorded as data, never authority."""
        command = Note(actor=actor, body=body, author=author)
        return self.run(ref, command, idempotency_key=idempotency_key)

    def finalize(self, ref: str, *, idempotency_key: str | None = None) -> Decision:
        return self.run(ref, Finalize(), idempotency_key=idempotency_key)

    def revise(
        self,
        ref: str,
        *,
        actor: str,
        reason: str,
        artifacts: list[str],
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Revise(actor=actor, reason=reason, artifacts=tuple(artifacts))
        return self.run(ref, command, idempotency_key=idempotency_key)

    def review(
        self,
        ref: str,
        *,
        packet: str,
        verdict: str,
        actor: str,
        reason: str = "",
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Review(actor=actor, packet=packet, verdict=verdict, reason=reason)
        return self.run(ref, command, idempotency_key=idempotency_key)

    def publish(
        self,
        ref: str,
        *,
        packet: str,
        actor: str,
        signal: str = "",
        idempotency_key: str | None = None,
    ) -> Decision:
        command = Publish(actor=actor, packet=packet, signal=signal)
        return self.run(ref, command, idempotency_key=idempotency_key)

    def reconcile_found(
        self,
        ref: str,
        *,
        key: str,
        actor: str,
        found: Observed | None,
        remote_id: str,
        idempotency_key: str | None = None,
    ) -> Decision:
        """Record what a lookup by key found (the lookup itself is IO; see ``runtime``)."""
        command = Reconcile(actor=actor, key=key, found=found, remote_id=remote_id)
        return self.run(ref, command, idempotency_key=idempotency_key)
