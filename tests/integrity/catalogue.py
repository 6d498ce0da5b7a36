"""The tamper catalogue: direct edits of a stopline database, what each must set off, and the
moves that try to profit from it.

Every :class:`Edit` is made by SQL alone (:class:`~attacker.Attacker`) on a fresh copy of the
vault database. Then ``stopline verify --json`` must report it (the ``findings`` named here, as
``(kind, reason)``), or it must be refused before any action; and whatever the moves try (the
worker, the people's commands that would move the item, an API call with a token), nothing may
act because of it: no execute hook, no remote create, update or publish that the untouched copy
would not make too, and no tampered item may move forward to delivery or completion.

Edits marked ``limit`` are consistent rewrites of a whole history, ledger included: without a
key outside the database they cannot be told from real history (the known limit of unsigned
mode, docs/security.md); their test pins that they are not detected. Edits marked ``bug`` are
gaps found in this catalogue, kept as strict expected failures until the code closes them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from stopline.core.canonical import digest, format_time
from stopline.core.commands import Approve
from stopline.core.decide import decide
from stopline.core.frozen import freeze
from stopline.core.integrity import proposal_body
from stopline.core.step import Context
from stopline.store import raw
from webhook_receiver import SECRET, Receiver

from .attacker import Attacker
from .lab import IDEMPOTENCY_KEY, VAULT_APP, Base, Vault

FORGED_TOKEN = "stl_forged-by-a-database-writer"


# --- moves: what is tried after the edit ------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """One attempt to act: a worker run, a person's command or an API call."""

    name: str
    do: Callable[[Vault, Base], str]

    def __call__(self, vault: Vault, base: Base) -> str:
        return self.do(vault, base)


def _run(vault: Vault, base: Base) -> str:
    out = vault.run_once()
    return f"run: {out['transitions']} transitions"


RUN = Move("run", _run)


def command(name: str, key: str, actor: str, *extra: str) -> Move:
    """A person's command on ``vault/KEY`` through the CLI (the proposal digest filled in)."""

    def do(vault: Vault, base: Base) -> str:
        args = [name, f"vault/{key}", "--actor", actor, *extra]
        if name == "approve":
            item = vault.item(key)
            proposal = item.doc("proposal") if item is not None else None
            args += ["--proposal", proposal["digest"] if proposal else "0" * 64]
        done = vault.cli(*args, "--json", ok=(0, 2, 3))
        try:
            doc = json.loads(done.stdout)
        except ValueError:
            return f"{name} {key} by {actor}: exit {done.returncode}"
        return f"{name} {key} by {actor}: {doc.get('decision')} {doc.get('reasons', [])}"

    return Move(f"{name}:{key}:{actor}:{':'.join(extra)}", do)


def approve(key: str, actor: str, *extra: str) -> Move:
    return command("approve", key, actor, *extra)


def publish(key: str, actor: str) -> Move:
    """``stopline publish`` of the item's current review packet, with the app's own target
    (``--app``), which writes down every publication."""

    def do(vault: Vault, base: Base) -> str:
        item = vault.item(key)
        packet = (item.doc("review_packet") or {}).get("digest", "0" * 64)
        args = ["publish", f"vault/{key}", "--actor", actor, "--packet", packet]
        done = vault.cli(*args, "--app", VAULT_APP, "--json", ok=(0, 2, 3))
        return f"publish {key} by {actor}: exit {done.returncode} {done.stdout.strip()[:120]}"

    return Move(f"publish:{key}:{actor}", do)


def cli(*args: str) -> Move:
    """Any other command line (an operator's registry change, say)."""

    def do(vault: Vault, base: Base) -> str:
        done = vault.cli(*args, "--json", ok=(0, 2, 3))
        return f"{' '.join(args)}: exit {done.returncode}"

    return Move("cli:" + ":".join(args), do)


def http_approve(key: str, token: str) -> Move:
    """``POST /api/items/ITEM/approve`` on a real ``stopline serve`` with a bearer token
    (``token``: an actor whose issued token to use, or the literal forged token)."""

    def do(vault: Vault, base: Base) -> str:
        bearer = base.tokens.get(token, token)
        item = vault.item(key)
        with vault.server() as url:
            response = httpx.post(
                f"{url}/api/items/{item.id}/approve",
                json={"proposal": item.doc("proposal")["digest"]},
                headers={"Authorization": f"Bearer {bearer}"},
                timeout=30,
            )
        return f"POST approve {key} as {token}: {response.status_code}"

    return Move(f"http-approve:{key}:{token}", do)


def _run_with_webhooks(vault: Vault, base: Base) -> str:
    """``stopline run --once`` with webhooks configured to a real receiver; every message the
    notifier then tried to send to a URL nobody configured is written down as an acting call."""
    receiver = Receiver()
    try:
        env = {
            "STOPLINE_WEBHOOKS": json.dumps({"vault": [receiver.url]}),
            "STOPLINE_WEBHOOK_SECRET": SECRET,
        }
        out = vault.run_once(env=env)
    finally:
        receiver.close()
    rows = vault.query("SELECT id, url, attempts FROM notifications")
    for row in rows:
        if row["url"] != receiver.url and int(row["attempts"]) > 0:
            record_call(vault, "webhook", id=row["id"], url=row["url"])
    return f"run with webhooks: {out['transitions']} transitions, {receiver.count()} received"


RUN_WITH_WEBHOOKS = Move("run-with-webhooks", _run_with_webhooks)


def record_call(vault: Vault, call: str, **entry: Any) -> None:
    with vault.log_path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"call": call, **entry}, sort_keys=True) + "\n")


REVISE_NOTE = command("revise", "note-done", "carol", "--reason", "clearer", "--artifact", "note")
RESUME_BROKEN = command("resume", "broken-1", "carol", "--reason", "fixed", "--attempts", "2")


# --- edits ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    name: str
    what: str  # one line for the table
    do: Callable[[Attacker, Base], None]
    findings: tuple[tuple[str, str], ...] = ()  # (kind, reason) verify must report
    items: tuple[str, ...] = ()  # keys of the items the edit touches
    moves: tuple[Move, ...] = (RUN,)
    limit: bool = False  # a consistent rewrite: the known limit of unsigned mode
    bug: str = ""  # a gap found here: a strict expected failure until it is closed


CATALOGUE: list[Edit] = []


def edit(
    what: str,
    *,
    findings: tuple[tuple[str, str], ...] = (),
    items: tuple[str, ...] = (),
    moves: tuple[Move, ...] = (RUN,),
    limit: bool = False,
    bug: str = "",
) -> Callable[[Callable[[Attacker, Base], None]], Callable[[Attacker, Base], None]]:
    def register(fn: Callable[[Attacker, Base], None]) -> Callable[[Attacker, Base], None]:
        CATALOGUE.append(Edit(fn.__name__, what, fn, findings, items, moves, limit, bug))
        return fn

    return register


SEAL = ("item", "seal_mismatch")
NOW = datetime.now(UTC)


def _id(a: Attacker, key: str) -> str:
    return a.item(f"vault/{key}").id


def _redigest(proposal: dict[str, Any]) -> str:
    """Give an edited proposal its matching digest (and its approvals too); the old one."""
    old = proposal["digest"]
    proposal["digest"] = digest(proposal_body(proposal))
    for approval in proposal["approvals"]:
        approval["digest"] = proposal["digest"]
    return str(old)


# items --------------------------------------------------------------------------------------


@edit(
    "proposal params of an approved item (digest left alone)",
    findings=(SEAL, ("item", "proposal_altered")),
    items=("pay-approved",),
)
def params_digest_kept(a: Attacker, base: Base) -> None:
    data = a.data("vault/pay-approved")
    data["proposal"]["params"]["amount"] = 999999
    a.put_data("vault/pay-approved", data)


@edit(
    "proposal params with the digest and approvals recomputed",
    findings=(SEAL, ("item", "approval_unrecorded")),
    items=("pay-approved",),
)
def params_digest_recomputed(a: Attacker, base: Base) -> None:
    data = a.data("vault/pay-approved")
    data["proposal"]["params"]["amount"] = 999999
    _redigest(data["proposal"])
    a.put_data("vault/pay-approved", data)


@edit(
    "a forged approval entry on a two-approver proposal, then one real approval",
    findings=(SEAL, ("item", "approval_unrecorded")),
    items=("dual-fresh",),
    moves=(approve("dual-fresh", "alice"), RUN),
)
def approval_added(a: Attacker, base: Base) -> None:
    data = a.data("vault/dual-fresh")
    proposal = data["proposal"]
    proposal["approvals"].append(
        {
            "actor": "bob",
            "at": "2026-01-01T00:00:00.000000Z",
            "digest": proposal["digest"],
            "role": "approver",
            "policy_version": proposal["policy_version"],
        }
    )
    a.put_data("vault/dual-fresh", data)


@edit(
    "a real approval removed from a two-approver proposal",
    findings=(SEAL,),
    items=("dual-half",),
    moves=(approve("dual-half", "bob"), RUN),
)
def approval_removed(a: Attacker, base: Base) -> None:
    data = a.data("vault/dual-half")
    data["proposal"]["approvals"] = []
    a.put_data("vault/dual-half", data)


@edit(
    "a forged second approval with the state set to approved",
    findings=(SEAL, ("item", "approval_unrecorded"), ("item", "state_mismatch")),
    items=("dual-half",),
)
def approval_and_state_forged(a: Attacker, base: Base) -> None:
    data = a.data("vault/dual-half")
    proposal = data["proposal"]
    proposal["approvals"].append({**proposal["approvals"][0], "actor": "bob"})
    a.put_data("vault/dual-half", data)
    a.sql(
        "UPDATE items SET state = 'approved', state_class = 'work' WHERE id = :id",
        {"id": _id(a, "dual-half")},
    )


@edit(
    "the evidence under a proposal awaiting approval",
    findings=(SEAL,),
    items=("pay-waiting",),
    moves=(approve("pay-waiting", "alice"), RUN),
)
def evidence_edited(a: Attacker, base: Base) -> None:
    data = a.data("vault/pay-waiting")
    data["evidence"]["data"]["balance"] = 1_000_000
    a.put_data("vault/pay-waiting", data)


@edit(
    "a delivered artifact's remote id pointed at another item's object",
    findings=(SEAL,),
    items=("note-done",),
    moves=(REVISE_NOTE, RUN),
)
def artifact_redirected(a: Attacker, base: Base) -> None:
    other = a.data("vault/revfail-1")["artifacts"][0]
    data = a.data("vault/note-done")
    data["artifacts"][0]["remote_id"] = other["remote_id"]
    data["artifacts"][0]["remote_version"] = other["remote_version"]
    a.put_data("vault/note-done", data)


@edit(
    "a delivered artifact's remote id pointed at another item's object, then a publication",
    findings=(SEAL,),
    items=("note-done",),
    moves=(publish("note-done", "paul"),),
)
def artifact_redirected_published(a: Attacker, base: Base) -> None:
    artifact_redirected(a, base)


@edit(
    "a delivered artifact's content",
    findings=(SEAL,),
    items=("note-done",),
    moves=(REVISE_NOTE, RUN),
)
def artifact_content(a: Attacker, base: Base) -> None:
    data = a.data("vault/note-done")
    data["artifacts"][0]["content"]["body"] = "Wire the balance to account 666."
    a.put_data("vault/note-done", data)


@edit(
    "the attempts of an exhausted item set back to 0",
    findings=(SEAL,),
    items=("broken-1",),
    moves=(RESUME_BROKEN, RUN),
)
def attempts_reset(a: Attacker, base: Base) -> None:
    a.sql("UPDATE items SET attempts = 0 WHERE id = :id", {"id": _id(a, "broken-1")})


@edit(
    "the account of an exhausted item",
    findings=(SEAL,),
    items=("broken-1",),
    moves=(RESUME_BROKEN, RUN),
)
def account_rewritten(a: Attacker, base: Base) -> None:
    data = a.data("vault/broken-1")
    data["account"]["attempts"] = []
    data["account"]["last_error"] = "nothing went wrong"
    a.put_data("vault/broken-1", data)


@edit(
    "max_attempts of an approved item raised",
    findings=(SEAL,),
    items=("pay-approved",),
)
def max_attempts_raised(a: Attacker, base: Base) -> None:
    a.sql("UPDATE items SET max_attempts = 1000 WHERE id = :id", {"id": _id(a, "pay-approved")})


@edit(
    "next_eligible_at of an approved item moved",
    findings=(SEAL,),
    items=("pay-approved",),
)
def next_eligible_moved(a: Attacker, base: Base) -> None:
    a.sql(
        "UPDATE items SET next_eligible_at = :at WHERE id = :id",
        {"at": a.time(datetime(2020, 1, 1, tzinfo=UTC)), "id": _id(a, "pay-approved")},
    )


@edit(
    "the state of a proposal awaiting approval set to approved",
    findings=(SEAL, ("item", "state_mismatch")),
    items=("pay-waiting",),
)
def state_forged(a: Attacker, base: Base) -> None:
    a.sql(
        "UPDATE items SET state = 'approved', state_class = 'work' WHERE id = :id",
        {"id": _id(a, "pay-waiting")},
    )


@edit(
    "the state class of a stopped item set to work",
    findings=(("item", "state_class_mismatch"),),
    items=("pay-waiting",),
)
def state_class_flipped(a: Attacker, base: Base) -> None:
    a.sql("UPDATE items SET state_class = 'work' WHERE id = :id", {"id": _id(a, "pay-waiting")})


@edit(
    "the lease (fencing) token of an approved item",
    findings=(SEAL,),
    items=("pay-approved",),
)
def lease_token_bumped(a: Attacker, base: Base) -> None:
    a.sql(
        "UPDATE items SET lease_token = lease_token + 7 WHERE id = :id",
        {"id": _id(a, "pay-approved")},
    )


@edit(
    "the policy version a proposal was approved under",
    findings=(SEAL, ("item", "proposal_altered")),
    items=("pay-approved",),
)
def proposal_policy_version(a: Attacker, base: Base) -> None:
    data = a.data("vault/pay-approved")
    data["proposal"]["policy_version"] = "0" * 16
    a.put_data("vault/pay-approved", data)


@edit(
    "an item deleted with its events",
    findings=(("item", "item_missing"),),
    items=("pay-waiting",),
    moves=(approve("pay-waiting", "alice"), RUN),
)
def item_deleted(a: Attacker, base: Base) -> None:
    item_id = _id(a, "pay-waiting")
    a.sql("DELETE FROM events WHERE item_id = :id", {"id": item_id})
    a.sql("DELETE FROM items WHERE id = :id", {"id": item_id})


# events -------------------------------------------------------------------------------------


@edit(
    "an event altered in place (the approver's name)",
    findings=(("event", "event_altered"),),
    items=("pay-approved",),
)
def event_altered(a: Attacker, base: Base) -> None:
    item = a.item("vault/pay-approved")
    a.sql(
        "UPDATE events SET actor = 'bob' WHERE item_id = :id AND seq = :seq",
        {"id": item.id, "seq": item.seq},
    )


@edit(
    "the final event dropped (the approval), the row left alone",
    findings=(("item", "history_length"), ("item", "head_mismatch")),
    items=("pay-approved",),
)
def final_event_dropped(a: Attacker, base: Base) -> None:
    item = a.item("vault/pay-approved")
    a.sql("DELETE FROM events WHERE item_id = :id AND seq = :seq", {"id": item.id, "seq": item.seq})


@edit(
    "the final event dropped and the row's history length and head set back to the one before",
    findings=(SEAL, ("item", "approval_unrecorded")),
    items=("dual-half",),
    moves=(approve("dual-half", "bob"), RUN),
)
def final_event_dropped_head_rolled_back(a: Attacker, base: Base) -> None:
    item = a.item("vault/dual-half")
    previous = a.history(item.id)[-2]
    a.sql("DELETE FROM events WHERE item_id = :id AND seq = :seq", {"id": item.id, "seq": item.seq})
    a.sql(
        "UPDATE items SET seq = :seq, head = :head WHERE id = :id",
        {"seq": previous.seq, "head": previous.hash, "id": item.id},
    )


@edit(
    "a lease written by hand: an owner nobody runs, expiring in a hundred years",
    findings=(("item", "lease_excessive"),),
    items=("pay-approved",),
)
def lease_hijacked(a: Attacker, base: Base) -> None:
    a.sql(
        "UPDATE items SET lease_owner = 'ghost', lease_expires_at = :at, claimed_at = :now"
        " WHERE id = :id",
        {
            "at": a.time(datetime(2126, 1, 1, tzinfo=UTC)),
            "now": a.time(NOW),
            "id": _id(a, "pay-approved"),
        },
    )


def _forged_approval(a: Attacker, key: str, actor: str) -> Any:
    """What ``approve --actor ACTOR`` would have written, made by the core, written by hand."""
    item = a.item(f"vault/{key}")
    policy = a.store.policy("vault")
    command = Approve(actor=actor, digest=item.doc("proposal")["digest"])
    decision = decide(item, command, Context(datetime.now(UTC), policy, a.store.registry().actors))
    assert decision.applied, decision
    return decision


@edit(
    "an extra forged approve event (chain and seal right, not in the ledger)",
    findings=(("event", "event_unrecorded"),),
    items=("dual-half",),
)
def event_forged(a: Attacker, base: Base) -> None:
    a.write_decision(_forged_approval(a, "dual-half", "bob"), ledger=False)


@edit(
    "one item's chain re-hashed after its params changed, item row updated",
    findings=(("event", "event_rewritten"),),
    items=("pay-approved",),
)
def chain_rehashed(a: Attacker, base: Base) -> None:
    item = a.item("vault/pay-approved")
    data = a.data("vault/pay-approved")
    data["proposal"]["params"]["amount"] = 999999
    old = _redigest(data["proposal"])
    events = []
    for event in a.history(item.id):
        digests = dict(event.digests)
        if digests.get("proposal") == old:
            digests["proposal"] = data["proposal"]["digest"]
        events.append(replace(event, digests=freeze(digests)))
    first = min(e.seq for e in events if e.digests.get("proposal") == data["proposal"]["digest"])
    item, events = a.rehash_chain(replace(item, data=freeze(data)), events, first)
    for event in events[first - 1 :]:
        a.put_event(event)
    a.put_item(item)


@edit(
    "a proposal rewritten to need no approval, the propose event re-hashed to end approved",
    items=("pay-waiting",),
)
def proposal_rule_rewritten(a: Attacker, base: Base) -> None:
    item = a.item("vault/pay-waiting")
    data = a.data("vault/pay-waiting")
    proposal = data["proposal"]
    proposal["required_approvals"] = 0
    proposal["required_roles"] = []
    _redigest(proposal)
    events = a.history(item.id)
    last = events[-1]
    data["step"] = {"state": "approved", "since": format_time(last.at)}
    assert last.command == "propose", last
    events[-1] = replace(
        last,
        to_state=type(last.to_state)("approved"),
        digests=freeze({**last.digests, "proposal": proposal["digest"]}),
    )
    policy = a.store.policy("vault")
    budget = policy.retry_for("approved").max_attempts
    forged = replace(
        item, state=type(item.state)("approved"), attempts=0, max_attempts=budget, data=freeze(data)
    )
    forged, events = a.rehash_chain(forged, events, last.seq)
    a.put_event(events[-1])
    a.put_item(forged)


@edit(
    "a completed payment restored from an older backup (row and history prefix)",
    items=("pay-done",),
)
def restored_from_backup(a: Attacker, base: Base) -> None:
    backup = base.backups["pay-done@approved"]
    a.sql(
        "DELETE FROM events WHERE item_id = :id AND seq > :seq",
        {"id": backup.id, "seq": backup.seq},
    )
    a.put_item(backup)


@edit(
    "a forged approved item: a real one's history cloned under a new key, all re-hashed",
    findings=(("item", "item_unrecorded"),),
    items=("pay-cloned",),
)
def item_cloned(a: Attacker, base: Base) -> None:
    source = a.item("vault/pay-approved")
    data = a.data("vault/pay-approved")
    data["proposal"]["params"].update(amount=999999, to="pay-cloned")
    old = _redigest(data["proposal"])
    new_id = "itm_" + "c" * 20
    events = []
    for event in a.history(source.id):
        digests = dict(event.digests)
        if digests.get("proposal") == old:
            digests["proposal"] = data["proposal"]["digest"]
        detail = dict(event.detail)
        if "key" in detail:
            detail["key"] = "pay-cloned"
        events.append(
            replace(event, item_id=new_id, digests=freeze(digests), detail=freeze(detail))
        )
    clone = replace(source, id=new_id, key="pay-cloned", data=freeze(data))
    clone, events = a.rehash_chain(clone, events, 1)
    a.sql(a.store.q["insert_item"], raw.item_row(a.store, clone))
    for event in events:
        a.insert_event(event)


# the ledger --------------------------------------------------------------------------------


def _ledger_n(a: Attacker, key: str, command: str) -> int:
    item = a.item(f"vault/{key}")
    seq = next(e.seq for e in a.history(item.id) if e.command == command)
    rows = a.rows(
        "SELECT n FROM ledger WHERE item_id = :id AND seq = :seq", {"id": item.id, "seq": seq}
    )
    return int(rows[0]["n"])


@edit(
    "a ledger entry deleted (a person's approval)",
    findings=(("ledger", "ledger_broken"), ("event", "event_unrecorded")),
)
def ledger_entry_deleted(a: Attacker, base: Base) -> None:
    a.sql("DELETE FROM ledger WHERE n = :n", {"n": _ledger_n(a, "pay-done", "approve")})


@edit(
    "a ledger entry edited (the event hash it holds)",
    findings=(("ledger", "ledger_broken"), ("event", "event_rewritten")),
)
def ledger_entry_edited(a: Attacker, base: Base) -> None:
    # that one entry: its position n alone would also name entries of other shards, which
    # items land in them depends on their random ids, and so would what the edit reaches
    item = a.item("vault/pay-done")
    a.sql(
        "UPDATE ledger SET event_hash = :h WHERE item_id = :id AND n = :n",
        {"h": "f" * 64, "id": item.id, "n": _ledger_n(a, "pay-done", "approve")},
    )


@edit(
    "a ledger entry edited (the event hash it holds) of an item a person then approves",
    findings=(("ledger", "ledger_broken"), ("event", "event_rewritten")),
    moves=(approve("pay-waiting", "alice"), RUN),
)
def ledger_entry_edited_before_action(a: Attacker, base: Base) -> None:
    item = a.item("vault/pay-waiting")
    a.sql(
        "UPDATE ledger SET event_hash = :h WHERE item_id = :id AND n = :n",
        {"h": "f" * 64, "id": item.id, "n": _ledger_n(a, "pay-waiting", "discover")},
    )


# actors and tokens --------------------------------------------------------------------------


@edit(
    "roles added by UPDATE (a viewer made approver)",
    findings=(("actor", "registry_mismatch"),),
    moves=(approve("pay-waiting", "dana"), RUN),
)
def roles_added(a: Attacker, base: Base) -> None:
    a.sql(
        "UPDATE actors SET roles = :roles WHERE name = 'dana'",
        {"roles": a.json(["approver", "viewer"])},
    )


@edit(
    "roles added by UPDATE, then an operator adds the actor an unrelated role",
    findings=(("actor", "registry_mismatch"),),
    moves=(cli("actors", "add", "dana", "--role", "reviewer"), approve("pay-waiting", "dana"), RUN),
)
def roles_laundered(a: Attacker, base: Base) -> None:
    a.sql(
        "UPDATE actors SET roles = :roles WHERE name = 'dana'",
        {"roles": a.json(["approver", "viewer"])},
    )


@edit(
    "the publisher role added by UPDATE, then a publication",
    findings=(("actor", "registry_mismatch"),),
    moves=(publish("note-done", "dana"),),
)
def publisher_role_added(a: Attacker, base: Base) -> None:
    a.sql(
        "UPDATE actors SET roles = :roles WHERE name = 'dana'",
        {"roles": a.json(["publisher", "viewer"])},
    )


@edit(
    "an actor inserted with the approver role",
    findings=(("actor", "registry_mismatch"),),
    moves=(approve("pay-waiting", "mallory"), RUN),
)
def actor_inserted(a: Attacker, base: Base) -> None:
    a.sql(
        "INSERT INTO actors (name, roles, active, created_at, updated_at)"
        " VALUES ('mallory', :roles, :active, :at, :at)",
        {"roles": a.json(["approver"]), "active": True, "at": a.time(NOW)},
    )


@edit(
    "a revoked actor's row deleted (with its tokens)",
    findings=(("actor", "registry_mismatch"),),
    moves=(RUN, approve("pay-waiting", "rita"), RUN),
)
def actor_deleted(a: Attacker, base: Base) -> None:
    a.sql("DELETE FROM tokens WHERE actor = 'rita'")
    a.sql("DELETE FROM actors WHERE name = 'rita'")


@edit(
    "a revoked actor set active again",
    findings=(("actor", "registry_mismatch"),),
    moves=(approve("pay-waiting", "rita"), RUN),
)
def actor_reactivated(a: Attacker, base: Base) -> None:
    a.sql("UPDATE actors SET active = :yes WHERE name = 'rita'", {"yes": True})


@edit(
    "a registry event edited (a viewer's recorded roles), the table made to match",
    findings=(("registry", "chain_broken"),),
    moves=(approve("pay-waiting", "dana"), RUN),
)
def registry_event_edited(a: Attacker, base: Base) -> None:
    row = a.rows("SELECT id, detail FROM actor_events WHERE actor = 'dana' ORDER BY id")[0]
    detail = json.loads(row["detail"]) if isinstance(row["detail"], str) else dict(row["detail"])
    detail["roles"] = ["approver", "viewer"]
    detail["state"] = {"roles": ["approver", "viewer"], "active": True}
    a.sql(
        "UPDATE actor_events SET detail = :d WHERE id = :id", {"d": a.json(detail), "id": row["id"]}
    )
    a.sql("UPDATE actors SET roles = :r WHERE name = 'dana'", {"r": a.json(["approver", "viewer"])})


@edit(
    "a registry event deleted from the middle (a revocation), the table made to match",
    findings=(("registry", "chain_broken"),),
    moves=(approve("pay-waiting", "rita"), RUN),
)
def registry_event_deleted(a: Attacker, base: Base) -> None:
    revoke = a.rows("SELECT id FROM actor_events WHERE actor = 'rita' AND change = 'revoke'")[0]
    a.sql("DELETE FROM actor_events WHERE id = :id", {"id": revoke["id"]})
    a.sql("UPDATE actors SET active = :yes WHERE name = 'rita'", {"yes": True})


@edit(
    "the registry chain's last events (a revocation) deleted, the tables set back",
    findings=(("registry", "history_cut"),),
    moves=(approve("pay-waiting", "rita"), RUN),
)
def registry_tail_dropped(a: Attacker, base: Base) -> None:
    revoke = a.rows("SELECT id FROM actor_events WHERE actor = 'rita' AND change = 'revoke'")[0]
    a.sql("DELETE FROM actor_events WHERE id >= :id", {"id": revoke["id"]})
    a.sql("UPDATE actors SET active = :yes WHERE name = 'rita'", {"yes": True})
    a.sql("UPDATE tokens SET revoked_at = NULL WHERE actor = 'rita'")


@edit(
    "an API token row inserted for an approver",
    findings=(("token", "token_unrecorded"),),
    moves=(http_approve("pay-waiting", FORGED_TOKEN), RUN),
)
def token_inserted(a: Attacker, base: Base) -> None:
    a.sql(
        "INSERT INTO tokens (hash, actor, created_at) VALUES (:hash, 'bob', :at)",
        {"hash": hashlib.sha256(FORGED_TOKEN.encode()).hexdigest(), "at": a.time(NOW)},
    )


@edit(
    "a revoked API token un-revoked",
    findings=(("token", "registry_mismatch"),),
    moves=(http_approve("pay-waiting", "rita"), RUN),
)
def token_unrevoked(a: Attacker, base: Base) -> None:
    a.sql("UPDATE tokens SET revoked_at = NULL WHERE actor = 'rita'")


# automations -------------------------------------------------------------------------------


@edit(
    "an automation's stored policy edited (version kept)",
    findings=(("automation", "policy_mismatch"),),
    moves=(approve("pay-waiting", "alice"), RUN),
)
def policy_edited(a: Attacker, base: Base) -> None:
    row = a.rows("SELECT policy FROM automations WHERE name = 'vault'")[0]
    policy = json.loads(row["policy"]) if isinstance(row["policy"], str) else dict(row["policy"])
    policy["approval"]["rules"]["refund"]["approvals"] = 0
    a.sql("UPDATE automations SET policy = :p WHERE name = 'vault'", {"p": a.json(policy)})


@edit(
    "an automation's policy version edited",
    findings=(("automation", "policy_mismatch"),),
)
def policy_version_edited(a: Attacker, base: Base) -> None:
    a.sql("UPDATE automations SET version = 'forged' WHERE name = 'vault'")


# idempotency keys ---------------------------------------------------------------------------

STORED_KEY = f"alice/{IDEMPOTENCY_KEY}"  # alice's key, as it is stored (her own)


@edit(
    "an idempotency key row deleted",
    findings=(("idempotency", "idempotency_missing"),),
    moves=(approve("pay-approved", "alice", "--idempotency-key", IDEMPOTENCY_KEY), RUN),
)
def idempotency_deleted(a: Attacker, base: Base) -> None:
    a.sql("DELETE FROM idempotency WHERE key = :k", {"k": STORED_KEY})


@edit(
    "an idempotency key row added (a decision nobody made)",
    findings=(("idempotency", "idempotency_unrecorded"),),
    moves=(approve("pay-waiting", "alice", "--idempotency-key", "approve-pay-waiting-1"), RUN),
)
def idempotency_added(a: Attacker, base: Base) -> None:
    item = a.item("vault/pay-waiting")
    command = Approve(actor="alice", digest=item.doc("proposal")["digest"])
    a.sql(
        "INSERT INTO idempotency (key, command_digest, item_id, decision, at)"
        " VALUES (:key, :cd, :item, :decision, :at)",
        {
            "key": "approve-pay-waiting-1",
            "cd": digest({"item": item.id, **command.to_plain()}),
            "item": item.id,
            "decision": json.dumps(
                {"decision": "applied", "item": item.id, "sequence": 4, "state": "approved"}
            ),
            "at": a.time(NOW),
        },
    )


@edit(
    "a stored idempotent decision edited",
    findings=(("idempotency", "idempotency_mismatch"),),
    moves=(approve("pay-approved", "alice", "--idempotency-key", IDEMPOTENCY_KEY), RUN),
)
def idempotency_decision_edited(a: Attacker, base: Base) -> None:
    row = a.rows("SELECT decision FROM idempotency WHERE key = :k", {"k": STORED_KEY})[0]
    decision = json.loads(row["decision"])
    decision["state"] = "completed"
    a.sql(
        "UPDATE idempotency SET decision = :d WHERE key = :k",
        {"d": json.dumps(decision), "k": STORED_KEY},
    )


# the notification outbox -------------------------------------------------------------------


@edit(
    "a notification row inserted (a URL nobody configured, any payload)",
    items=("pay-done",),
    findings=(("notification", "notification_forged"),),
    moves=(RUN_WITH_WEBHOOKS,),
)
def notification_forged(a: Attacker, base: Base) -> None:
    item = a.item("vault/pay-done")
    a.sql(
        "INSERT INTO notifications (id, item_id, seq, url, type, payload, status, attempts,"
        " next_attempt_at, created_at) VALUES ('ntf_forged', :item, 1,"
        " 'http://127.0.0.1:9/forged', 'item.stopped', :payload, 'pending', 0, :at, :at)",
        {
            "item": item.id,
            "payload": json.dumps({"type": "item.completed", "data": {"refund": 999999}}),
            "at": format_time(NOW),  # the outbox keeps its times as text on both stores
        },
    )


# the known limit ---------------------------------------------------------------------------


@edit(
    "a forged approve event for a real approver, item row, seal, chain and ledger entry "
    "all recomputed at the end of the ledger",
    items=("dual-half",),
    limit=True,
)
def forged_approval_consistent(a: Attacker, base: Base) -> None:
    a.write_decision(_forged_approval(a, "dual-half", "bob"), ledger=True)


@edit(
    "a registry event granting a viewer the approver role, appended at the end of the chain "
    "with its hash, the table updated",
    moves=(approve("pay-waiting", "dana"), RUN),
    limit=True,
)
def registry_grant_appended(a: Attacker, base: Base) -> None:
    state = {"roles": ["approver", "viewer"], "active": True}
    a.append_registry("dana", "add", {"roles": ["approver"], "state": state}, NOW)
    a.sql("UPDATE actors SET roles = :r WHERE name = 'dana'", {"r": a.json(state["roles"])})


# --- the table -----------------------------------------------------------------------------


# authors -------------------------------------------------------------------------------------


def _thawed(detail: Any) -> dict[str, Any]:
    return json.loads(json.dumps(detail, default=dict))


@edit(
    "an event's author kind edited in place (the proposal re-labelled as a person's)",
    findings=(("event", "event_altered"),),
    items=("pay-waiting",),
    moves=(approve("pay-waiting", "alice"), RUN),
)
def author_kind_edited(a: Attacker, base: Base) -> None:
    item = a.item("vault/pay-waiting")
    propose = next(e for e in a.history(item.id) if e.command == "propose")
    detail = {**_thawed(propose.detail), "author": {"kind": "human"}}
    a.sql(
        "UPDATE events SET detail = :detail WHERE item_id = :id AND seq = :seq",
        {"detail": a.json(detail), "id": item.id, "seq": propose.seq},
    )


@edit(
    "a worker's event re-labelled a person's author, its chain re-hashed and the row updated",
    findings=(("event", "author_malformed"),),
    items=("pay-waiting",),
    moves=(approve("pay-waiting", "alice"), RUN),
)
def author_rehashed(a: Attacker, base: Base) -> None:
    item = a.item("vault/pay-waiting")
    events = a.history(item.id)
    propose = next(e for e in events if e.command == "propose")
    detail = {**_thawed(propose.detail), "author": {"kind": "ai", "name": "x", "family": "y"}}
    events = [replace(e, detail=freeze(detail)) if e.seq == propose.seq else e for e in events]
    item, events = a.rehash_chain(item, events, propose.seq)
    for event in events[propose.seq - 1 :]:
        a.put_event(event)
    a.put_item(item)


# the inbox keys ------------------------------------------------------------------------------


@edit(
    "the time a stopped item entered its state moved a week back (to the top of the inbox and "
    "into its overdue list)",
    findings=(("item", "stop_key_mismatch"),),
    items=("pay-waiting",),
)
def stop_since_moved(a: Attacker, base: Base) -> None:
    a.sql(
        "UPDATE items SET state_since = :at WHERE id = :id",
        {"at": a.time(NOW - timedelta(days=7)), "id": _id(a, "pay-waiting")},
    )


@edit(
    "the severity rank of a stopped item raised to critical (data untouched)",
    findings=(("item", "stop_key_mismatch"),),
    items=("pay-waiting",),
)
def severity_rank_raised(a: Attacker, base: Base) -> None:
    a.sql("UPDATE items SET severity_rank = 4 WHERE id = :id", {"id": _id(a, "pay-waiting")})


@edit(
    "the search line of a stopped item emptied (data untouched: it drops out of every search)",
    findings=(("item", "stop_key_mismatch"),),
    items=("pay-waiting",),
)
def search_text_emptied(a: Attacker, base: Base) -> None:
    a.sql("UPDATE items SET search_text = '' WHERE id = :id", {"id": _id(a, "pay-waiting")})


def summary(rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The catalogue's table (one line per edit and store) and its counts per store."""
    lines = [
        f"{'store':8} {'edit':38} {'verify':8} {'refused':8} {'executed':8} note",
    ]
    counts: dict[str, dict[str, int]] = {}
    for row in sorted(rows, key=lambda r: (r["store"], r["order"])):
        c = counts.setdefault(
            row["store"],
            {
                "tried": 0,
                "detected": 0,
                "refused": 0,
                "caught": 0,
                "executed": 0,
                "limits": 0,
                "limits_detected": 0,
                "limits_executed": 0,
                "open_bugs": 0,
            },
        )
        if row["limit"]:
            c["limits"] += 1
            c["limits_detected"] += row["detected"]
            c["limits_executed"] += bool(row["executed"])
        else:
            c["tried"] += 1
            c["detected"] += row["detected"]
            c["refused"] += row["refused"]
            c["caught"] += row["detected"] or row["refused"]
            c["executed"] += bool(row["executed"])
            c["open_bugs"] += bool(row["bug"])
        note = "known limit" if row["limit"] else ("OPEN: " + row["bug"][:60] if row["bug"] else "")
        lines.append(
            f"{row['store']:8} {row['edit']:38} {'yes' if row['detected'] else 'no':8} "
            f"{'yes' if row['refused'] else 'no':8} {len(row['executed']) or 'no'!s:8} {note}"
        )
    for store, c in sorted(counts.items()):
        lines.append(
            f"{store}: tried {c['tried']}, detected by verify {c['detected']}, refused before "
            f"action {c['refused']}, detected or refused {c['caught']}, executed {c['executed']}"
            f" (open bugs {c['open_bugs']}); known limits {c['limits']}: detected "
            f"{c['limits_detected']}, executed {c['limits_executed']}"
        )
    return "\n".join(lines), {"rows": rows, "counts": counts}


__all__ = ["CATALOGUE", "VAULT_APP", "Edit", "Move", "summary"]


# rows swapped, moved, copied (the attacker review of 2026-12-07) ------------------------------

EVENT_COLUMNS = ("at", "actor", "change", "detail", "prev_hash", "hash")


def _event_row(a: Attacker, where: str) -> dict[str, Any]:
    return a.rows(f"SELECT * FROM actor_events WHERE {where} ORDER BY id")[0]


def _put_event_row(a: Attacker, row_id: int, row: dict[str, Any], **changed: Any) -> None:
    """Write ``row``'s columns (all but its id) over the registry event ``row_id``."""
    values = {c: row[c] for c in EVENT_COLUMNS} | changed
    if not isinstance(values["detail"], str):
        values["detail"] = a.json(values["detail"])
    sets = ", ".join(f"{c} = :{c}" for c in EVENT_COLUMNS)
    a.sql(f"UPDATE actor_events SET {sets} WHERE id = :id", {**values, "id": row_id})


@edit(
    "two actors' rows swapped (an approver's and a viewer's roles and state: their names swapped)",
    findings=(("actor", "registry_mismatch"),),
    moves=(approve("pay-waiting", "dana"), RUN),
)
def actor_rows_swapped(a: Attacker, base: Base) -> None:
    rows = {r["name"]: r for r in a.rows("SELECT * FROM actors WHERE name IN ('bob', 'dana')")}
    for name, other in (("bob", "dana"), ("dana", "bob")):
        a.sql(
            "UPDATE actors SET roles = :roles, active = :active WHERE name = :name",
            {"roles": rows[other]["roles"], "active": rows[other]["active"], "name": name},
        )


@edit(
    "a revocation moved before the event the chain held ahead of it (the two rows swapped, "
    "ids kept), the table made to match",
    findings=(("registry", "chain_broken"),),
    moves=(approve("pay-waiting", "rita"), RUN),
)
def registry_events_reordered(a: Attacker, base: Base) -> None:
    revoke = _event_row(a, "actor = 'rita' AND change = 'revoke'")
    before = a.rows("SELECT * FROM actor_events WHERE id < :id ORDER BY id DESC", revoke)[0]
    _put_event_row(a, before["id"], revoke)
    _put_event_row(a, revoke["id"], before)
    a.sql("UPDATE actors SET active = :yes WHERE name = 'rita'", {"yes": True})


@edit(
    "an approver's grant event copied to a viewer, appended as it is (its hash kept), the "
    "table made to match",
    findings=(("registry", "chain_broken"),),
    moves=(approve("pay-waiting", "dana"), RUN),
)
def registry_grant_copied(a: Attacker, base: Base) -> None:
    grant = _event_row(a, "actor = 'bob' AND change = 'add'")
    values = {c: grant[c] for c in EVENT_COLUMNS} | {"actor": "dana"}
    a.sql(
        "INSERT INTO actor_events (at, actor, change, detail, prev_hash, hash)"
        " VALUES (:at, :actor, :change, :detail, :prev_hash, :hash)",
        {
            **values,
            "detail": values["detail"]
            if isinstance(values["detail"], str)
            else a.json(values["detail"]),
        },
    )
    a.sql("UPDATE actors SET roles = :r WHERE name = 'dana'", {"r": a.json(["approver", "viewer"])})


@edit(
    "a revoked actor's revocation replaced by an earlier event of her own (her grant, copied "
    "whole over it), the table made to match",
    findings=(("registry", "chain_broken"),),
    moves=(approve("pay-waiting", "rita"), RUN),
)
def revoked_actor_rolled_back(a: Attacker, base: Base) -> None:
    grant = _event_row(a, "actor = 'rita' AND change = 'add'")
    revoke = _event_row(a, "actor = 'rita' AND change = 'revoke'")
    _put_event_row(a, revoke["id"], grant)
    a.sql("UPDATE actors SET active = :yes WHERE name = 'rita'", {"yes": True})
    a.sql("UPDATE tokens SET revoked_at = NULL WHERE actor = 'rita'")
