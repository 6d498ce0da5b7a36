"""The agent commands: what an AI agent may ask of stopline, declared once.

An agent proposes, reports, asks for a person, reads its own items, waits for a person's
decision, and carries out what a person approved. From this table come the tools of
``stopline mcp`` (``agents/mcp_server.py``: each entry's name, help and JSON Schema) and the
operations they run (``agents/desk.py``, the method named by ``operation``). No entry approves,
rejects, edits, resumes, closes or changes the registry: those are people's commands
(``table.py``), which no agent shell offers, and the core refuses every one of them from an
actor holding the ``agent`` role (``agent_forbidden``), whatever else it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..trust.checks import needed_roles
from .fields import (
    FREE_TEXT,
    KEY,
    MAX_KEY,
    REASON,
    Field,
    Limits,
    Type,
)

FULL_DIGEST = Limits(min_length=64, max_length=64)
WAIT_LIMIT = 300  # seconds: the longest one wait_for_decision call holds


@dataclass(frozen=True)
class AgentEntry:
    name: str  # the tool's name
    help: str
    fields: tuple[Field, ...]
    operation: str  # the AgentDesk method that runs it
    writes: bool  # whether it may write (a read never does)

    @property
    def roles(self) -> frozenset[str]:
        """Who may give it: an actor holding the agent role (``trust/checks.needed_roles``)."""
        return needed_roles(None, self.name, None)

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)


def _text(name: str, help: str, limits: Limits = KEY, required: bool = True) -> Field:
    return Field(name, Type.TEXT, help, limits, required=required)


AUTOMATION = _text("automation", "the agent automation the item belongs to")
KEY_FIELD = _text("key", "the item's key within the automation (one item per key)")
ITEM = _text("item", "the item: its id, or AUTOMATION/KEY")
DIGEST_FIELD = _text(
    "digest", "the proposal digest, whole (as propose_action or get_item returned it)", FULL_DIGEST
)
EVIDENCE = Field(
    "evidence",
    Type.OBJECT,
    "what the agent observed (a JSON object), recorded with the time it was received",
    required=True,
)

AGENT_ENTRIES: tuple[AgentEntry, ...] = (
    AgentEntry(
        "propose_action",
        "Record evidence and a proposed action. The item waits at awaiting_approval until a"
        " person decides (or is approved at once where the policy needs no approval). Proposing"
        " again with the same content writes nothing.",
        (
            AUTOMATION,
            KEY_FIELD,
            _text("action", "the kind of action (the approval policy has a rule per kind)"),
            _text("target", "what the action acts on", Limits(max_length=MAX_KEY)),
            Field("params", Type.OBJECT, "the action's parameters (a JSON object)", required=True),
            EVIDENCE,
            _text("rationale", "why the agent proposes it", FREE_TEXT, required=False),
        ),
        "propose",
        writes=True,
    ),
    AgentEntry(
        "get_item",
        "One of the agent's items: its state, proposal, digest and outcome, once the record is"
        " checked against its sealed history (refused integrity_failed when it is not).",
        (ITEM,),
        "get",
        writes=False,
    ),
    AgentEntry(
        "list_items",
        "The agent's own items, newest first.",
        (
            _text("automation", "only this automation's items", required=False),
            _text("state", "only items in this state", required=False),
        ),
        "list",
        writes=False,
    ),
    AgentEntry(
        "wait_for_decision",
        "Wait (at most `timeout` seconds) for a person's decision on a proposal: approved,"
        " rejected, changed (a person edited it: a new digest) or waiting (no decision yet).",
        (
            ITEM,
            _text(
                "digest",
                "the digest the agent proposed (changed: it is no longer current)",
                FULL_DIGEST,
                required=False,
            ),
            Field(
                "timeout",
                Type.INT,
                f"seconds to wait, 0 to {WAIT_LIMIT} (default 30)",
                Limits(minimum=0, maximum=WAIT_LIMIT),
            ),
        ),
        "wait",
        writes=False,
    ),
    AgentEntry(
        "begin_action",
        "Just before carrying out an approved proposal: authority, evidence freshness and the"
        " record are checked again, and the step is taken (once). Act only when this succeeds;"
        " after a retryable failure, call it again before acting again.",
        (ITEM, DIGEST_FIELD),
        "begin",
        writes=True,
    ),
    AgentEntry(
        "record_outcome",
        "The outcome of an approved action the agent carried out, bound to the approved digest:"
        " done (the item completes) or failed (retried within the budget, or stopped for a"
        " person). Recording the same outcome again writes nothing.",
        (
            ITEM,
            DIGEST_FIELD,
            _text("status", "done or failed", Limits(choices=("done", "failed"))),
            Field("result", Type.OBJECT, "what the action produced (a JSON object)"),
            _text("message", "what went wrong (failed)", FREE_TEXT, required=False),
            Field("retryable", Type.BOOL, "failed: whether trying again may help"),
        ),
        "record",
        writes=True,
    ),
    AgentEntry(
        "report_for_review",
        "Stop at ready_for_review with a result for a person to read (no action is taken).",
        (
            AUTOMATION,
            KEY_FIELD,
            Field("report", Type.OBJECT, "the result to read (a JSON object)", required=True),
            EVIDENCE,
        ),
        "report",
        writes=True,
    ),
    AgentEntry(
        "needs_eyes",
        "Stop at exception: the agent cannot decide, and names who should look.",
        (
            AUTOMATION,
            KEY_FIELD,
            _text("why", "what the person should know", REASON),
            _text("owner", "who should look (a person or a team)"),
            Field("evidence", Type.OBJECT, "what the agent observed (a JSON object)"),
        ),
        "needs_eyes",
        writes=True,
    ),
)

AGENT_ENTRIES += (
    AgentEntry(
        "add_note",
        "Add a comment to one of the agent's own items (its account of the work); the item's"
        " state and everything else stay as they are. Recorded as written by an AI, with the"
        " declared name and model family, as data and never as authority.",
        (
            ITEM,
            _text("body", "the comment", REASON),
            _text(
                "family",
                "the model family the agent declares (default: unspecified)",
                Limits(max_length=200),
                required=False,
            ),
            _text(
                "name",
                "the name the agent declares (default: its actor name)",
                Limits(max_length=200),
                required=False,
            ),
        ),
        "note",
        writes=True,
    ),
)

AGENT_COMMANDS: Mapping[str, AgentEntry] = {e.name: e for e in AGENT_ENTRIES}
