"""The command table: every command a person gives, declared once.

An entry says what a command is called, the fields it takes (their types, limits and help),
the core command it builds, how that command reaches ``decide()``, whether it takes an
idempotency key, and which shells expose it. From this table come the CLI subcommands and
their ``--help`` (``cli/item_commands.py``), the HTTP routes and the OpenAPI document
(``http/api.py``, ``http/openapi.py``), the web forms (``web/templates/_actions.html``) and
the "next command" hints (``views.next_commands``). Who may run a command is the core's
answer (:mod:`stopline.core.rights`): :attr:`Entry.roles` shows it, and nothing else here
grants or refuses anything.

To add a command: one entry here, one ``decide_*`` function in the core (with its command
dataclass, its rows in the transition table and its line in ``decide.HANDLERS``), and tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..core import commands as core
from ..core.transitions import Cmd
from . import sources
from .entry import PEOPLE, Entry, Shell, WebForm, check_table
from .fields import (
    DIGEST,
    FREE_TEXT,
    INT32,
    JSON_DOCUMENT,
    KEY,
    KEY_LIST,
    REASON,
    Field,
    Limits,
    Type,
    Widget,
)
from .runners import PUBLISH_ON_TARGET, RECONCILE_ON_TARGET

# --- fields that several commands share -------------------------------------------------------

REASON_FIELD = Field(
    "reason",
    Type.TEXT,
    "why (recorded in the history)",
    REASON,
    required=True,
    web=Widget("Reason"),
)
NOTE_FIELD = Field(
    "reason", Type.TEXT, "an optional note", FREE_TEXT, metavar="NOTE", web=Widget("Note")
)


def _digest_of(what: str, **options: Any) -> Field:
    return Field(
        "proposal",
        Type.TEXT,
        f"the digest of the proposal {what} (as `stopline show` prints it; 12 or more"
        " leading characters suffice when they name one digest)",
        DIGEST,
        attr="digest",
        metavar="DIGEST",
        bound=sources.proposal_digest,
        **options,
    )


PACKET = Field(
    "packet",
    Type.TEXT,
    "the digest of the review packet (12 or more leading characters suffice)",
    DIGEST,
    required=True,
    metavar="DIGEST",
    bound=sources.packet_digest,
)

# --- the table (the order is the order of the forms on an item's page) ------------------------

ENTRIES: tuple[Entry, ...] = (
    Entry(
        Cmd.APPROVE,
        core.Approve,
        "approve exactly one proposal digest",
        (
            _digest_of(
                "being approved",
                required=True,
                web=Widget(
                    "You approve this digest, exactly as shown on this page:", testid="digest"
                ),
            ),
        ),
        suggest=True,
        form=WebForm("Approve this proposal", "Approve"),
    ),
    Entry(
        Cmd.REJECT,
        core.Reject,
        "close without action, or send it back to be proposed again",
        (
            _digest_of("being rejected (binds the rejection to it)", web=Widget(testid="digest")),
            REASON_FIELD,
            Field(
                "return",
                Type.BOOL,
                "send back to be proposed again",
                attr="send_back",
                web=Widget("send back to be proposed again"),
            ),
        ),
        suggest=True,
        form=WebForm("Reject", "Reject"),
    ),
    Entry(
        Cmd.EDIT,
        core.Edit,
        "edit the proposal's parameters: a new digest, every approval of the old one void",
        (
            Field(
                "params",
                Type.OBJECT,
                "the new parameters (a JSON object)",
                JSON_DOCUMENT,
                required=True,
                metavar="JSON",
                prefill=sources.proposal_params,
                web=Widget("Parameters, a JSON object", rows=8),
            ),
        ),
        form=WebForm(
            "Edit the parameters (a new digest; approvals so far become void)", "Save the edit"
        ),
    ),
    Entry(
        Cmd.ACKNOWLEDGE,
        core.Acknowledge,
        "ready_for_review -> closed",
        (NOTE_FIELD,),
        suggest=True,
        form=WebForm("Acknowledge (read and close)", "Acknowledge"),
    ),
    Entry(
        Cmd.RESOLVE,
        core.Resolve,
        "exception -> observing, with corrective input",
        (
            REASON_FIELD,
            Field(
                "input",
                Type.OBJECT,
                "corrective input handed to the observe hook (a JSON object)",
                JSON_DOCUMENT,
                metavar="JSON",
                web=Widget("Corrective input, a JSON object", rows=3),
            ),
        ),
        suggest=True,
        form=WebForm("Resolve with corrective input", "Resolve"),
    ),
    Entry(
        Cmd.RESUME,
        core.Resume,
        "exhausted -> its work state, with a new, recorded budget",
        (
            REASON_FIELD,
            Field(
                "attempts",
                Type.INT,
                "attempts granted (capped by the policy)",
                INT32,
                metavar="N",
                web=Widget("Attempts", min=1),
            ),
        ),
        suggest=True,
        form=WebForm("Resume with a new retry budget", "Resume"),
    ),
    Entry(
        Cmd.REVISE,
        core.Revise,
        "open (or resume, with the same request) a revision of a completed delivery",
        (
            dataclasses.replace(REASON_FIELD, prefill=sources.revision_reason),
            Field(
                "artifacts",
                Type.KEYS,
                "the artifacts in scope",
                KEY_LIST,
                required=True,
                flag="--artifact",
                metavar="KEY",
                prefill=sources.revision_scope,
                options=sources.artifact_keys,
                web=Widget("Artifacts in scope", each_testid="artifact"),
            ),
        ),
        suggest=True,
        form=WebForm("Revise the delivered artifacts", "Revise"),
    ),
    Entry(
        Cmd.REVIEW,
        core.Review,
        "a verdict on a delivered review packet",
        (
            PACKET,
            Field(
                "verdict",
                Type.TEXT,
                "approve or reject",
                Limits(choices=("approve", "reject")),
                required=True,
                web=Widget("Verdict"),
            ),
            dataclasses.replace(NOTE_FIELD, help="a note (required with the verdict reject)"),
        ),
        suggest=True,
        form=WebForm("Review the delivered packet", "Record the verdict"),
    ),
    Entry(
        Cmd.PUBLISH,
        core.Publish,
        "publish an approved review packet (delivery mode publish)",
        (PACKET,),
        runner=PUBLISH_ON_TARGET,
        form=WebForm("Publish the approved packet", "Publish"),
    ),
    Entry(
        Cmd.RECONCILE,
        core.Reconcile,
        "find a remote object by its key, verify it by readback and bind it; never creates",
        (
            Field(
                "artifact",
                Type.TEXT,
                "the artifact key",
                KEY,
                required=True,
                attr="key",
                metavar="KEY",
                options=sources.artifact_keys,
                web=Widget("Artifact"),
            ),
        ),
        runner=RECONCILE_ON_TARGET,
        suggest=True,
        form=WebForm("Reconcile an artifact (find, read back, bind; never creates)", "Reconcile"),
    ),
    Entry(
        Cmd.REINSPECT,
        core.Reinspect,
        "back to observing for fresh evidence",
        (REASON_FIELD,),
        form=WebForm("Reinspect (gather fresh evidence)", "Reinspect"),
    ),
    Entry(
        Cmd.CLOSE,
        core.Close,
        "any stop state -> closed",
        (REASON_FIELD,),
        form=WebForm("Close without action", "Close"),
    ),
    Entry(
        Cmd.NOTE,
        core.Note,
        "add a comment to the item's history; the state and everything else stay as they are",
        (
            Field(
                "body",
                Type.TEXT,
                "the comment (recorded in the history)",
                REASON,
                required=True,
                metavar="TEXT",
                web=Widget("Comment", rows=3),
            ),
        ),
        shells=PEOPLE,
        form=WebForm("Add a note to the history (nothing else changes)", "Add the note"),
    ),
    Entry(
        Cmd.FINALIZE,
        core.Finalize,
        "idempotent completion check: zero_write on a completed item",
        shells=frozenset({Shell.CLI, Shell.HTTP}),
    ),
)

COMMANDS: Mapping[str, Entry] = {e.name: e for e in ENTRIES}


def exposed(shell: Shell) -> tuple[Entry, ...]:
    """The entries ``shell`` offers, in table order."""
    return tuple(e for e in ENTRIES if shell in e.shells)


check_table(ENTRIES)
