"""Human output: readable tables and the next command a person would type."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..commands.perform import Performed
from ..core.authorship import author_text, event_author
from ..core.canonical import format_time, parse_time
from ..core.proposal_diff import diff_lines
from ..core.records import Event


def table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    width = shutil.get_terminal_size((120, 20)).columns
    cols = (
        list(zip(*([list(headers)] + [list(r) for r in rows]), strict=True))
        if rows
        else [[h] for h in headers]
    )
    widths = [max(len(str(c)) for c in col) for col in cols]
    # Let the last column take what is left of the terminal.
    fixed = sum(widths[:-1]) + 2 * (len(widths) - 1)
    widths[-1] = max(10, min(widths[-1], width - fixed))
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in rows:
        cells = [str(c) for c in row]
        cells[-1] = cells[-1] if len(cells[-1]) <= widths[-1] else cells[-1][: widths[-1] - 1] + "…"
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    return "\n".join(lines)


def decision_text(done: Performed) -> str:
    """The decision as a person reads it: the outcome, the reason codes, and one sentence per
    code with the specifics (and, for a changed proposal, what changed field by field)."""
    d = done.to_plain()
    if d["state"] is None:
        head = f"{d['decision']}: no item {d['item']}"
    else:
        head = f"{d['decision']}: item {d['item']} is {d['state']}"
    if d["sequence"] is not None:
        head += f" (event {d['sequence']})"
    lines = [head]
    if d["reasons"]:
        lines.append("reasons: " + ", ".join(d["reasons"]))
    for sentence in d["explanation"]:
        lines.append(f"  - {sentence}")
    diff = d["details"].get("diff")
    if diff:
        lines.append("    what changed (the proposal you approved -> the current one):")
        lines += [f"      {line}" for line in diff_lines(diff)]
    return "\n".join(lines)


def dumps(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)


def ago(then: str | None, now: datetime) -> str:
    """``12 min ago`` for an RFC 3339 time (empty when there is none)."""
    if not then:
        return ""
    seconds = int((now - parse_time(then)).total_seconds())
    if seconds < 0:
        return f"in {_span(-seconds)}"
    return f"{_span(seconds)} ago"


def _span(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _json(value: Any, width: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= width else text[: width - 1] + "…"


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "nobody"


def _proposal_lines(p: Mapping[str, Any], now: datetime) -> list[str]:
    out = [f"proposal:  {p['action']} on {p['target'] or '-'}"]
    if p.get("rationale"):
        out.append(f"           rationale: {p['rationale']}")
    out.append(f"           params {_json(p['params'])}")
    out.append(f"           digest {p['digest']}")
    who = f"proposed by {p['proposer']}"
    if p.get("editors"):
        who += f"; edited by {', '.join(p['editors'])}"
    out.append(f"           {who}")
    out.append(f"           the digest covers: {', '.join(p['covers'])}")
    if not p["required_approvals"]:
        out.append("approvals: none (the rule for this action requires no approval)")
        return out
    roles = " or ".join(p["required_roles"]) or "(any role)"
    out.append(
        f"approvals: {p['approvals_text']} (distinct approvers holding {roles};"
        f" evidence at most {_span(int(p['max_evidence_age']))} old)"
    )
    for a in p["approvals"]:
        out.append(f"           approved by {a['actor']} ({a['role']}) {ago(a['at'], now)}")
    seen = p.get("outlook")
    if seen is not None:
        excluded = "".join(f"; {n} {why}" for n, why in sorted(seen["excluded"].items()))
        if seen["missing"]:
            out.append(f"           may still approve: {_names(seen['eligible'])}{excluded}")
        if not seen["satisfiable"]:
            out.append(
                f"           CANNOT BE APPROVED: {seen['missing']} more approval(s) needed and"
                f" {len(seen['eligible'])} eligible approver(s) left; register an approver"
                " (stopline actors add NAME --role ROLE), or edit or reject it"
            )
    return out


def show_text(view: Mapping[str, Any], now: datetime, why: str = "") -> str:
    """``stopline show`` for a person: what applies to the item's state, and nothing else."""
    state = view["state"]
    if view.get("malformed"):  # a record edited into a shape no write makes: as stored
        return "\n".join(
            [
                f"{view['id']}  {view['automation']}/{view['key']}",
                f"state:     {state} ({view['state_class']}), {view['history_length']} events",
                f"why:       {why}" if why else "",
                "data, as stored:",
                "           " + _json(view["data"]),
            ]
        )
    out = [
        f"{view['id']}  {view['automation']}/{view['key']}",
        f"state:     {state} ({view['state_class']}) since {view['updated_at']}"
        f" ({ago(view['updated_at'], now)}), {view['history_length']} events",
    ]
    if why:
        out.append(f"why:       {why}")
    if view["state_class"] == "work":
        out.append(
            f"attempts:  {view['attempts']} of {view['max_attempts']} in this step; next due"
            f" {view['next_eligible_at']} ({ago(view['next_eligible_at'], now)})"
        )
        if view["lease"]:
            lease = view["lease"]
            out.append(
                f"lease:     {lease['owner']} token {lease['token']} until {lease['expires_at']}"
            )
    ev = view["evidence"]
    if ev:
        limit = ""
        p = view["proposal"]
        if p:
            limit = f"; approval accepts at most {_span(int(p['max_evidence_age']))}"
        out.append(
            f"evidence:  observed {ev['observed_at']} ({ago(ev['observed_at'], now)}{limit})"
            f"  digest {ev['digest'][:16]}…"
        )
        out.append("           " + _json(ev["data"]))
    if view["proposal"]:
        out += _proposal_lines(view["proposal"], now)
    rejection = view.get("rejection")
    if rejection and state in ("classified", "awaiting_approval", "observing"):
        out.append(
            f"returned:  by {rejection['actor']} {ago(rejection['at'], now)}: {rejection['reason']}"
        )
    if view["exception"] and state == "exception":
        e = view["exception"]
        out.append(f"exception: owner {e['owner']}: {e['why']}")
        if e.get("evidence"):
            out.append("           " + _json(e["evidence"]))
    if view["report"] and state == "ready_for_review":
        out.append("report:    " + _json(view["report"]["data"]))
    if view["account"] and state == "exhausted":
        a = view["account"]
        out.append(
            f"account:   {a['attempt_count']} of {a['max_attempts']} attempts spent in {a['state']}"
        )
        for entry in a["attempts"]:
            out.append(
                f"           #{entry['attempt']} {ago(entry['at'], now)}: {entry['class']}:"
                f" {entry['message']}"
            )
        if a.get("last_evidence_digest"):
            out.append(f"           last evidence {a['last_evidence_digest'][:16]}…")
        out.append(f"           to resume: {a['resume']['condition']}")
    for art in view["artifacts"]:
        verified = "read back and verified" if art["readback_verified"] else "NOT verified"
        out.append(
            f"artifact:  {art['key']} -> remote {art['remote_id'] or '(not created)'},"
            f" content {str(art['content_hash'])[:12]}…, {verified}"
        )
    if view["review_packet"]:
        rp = view["review_packet"]
        void = " (void: a revision replaced it)" if rp.get("void") else ""
        out.append(f"packet:    {rp['digest']} for delivery {rp['delivery_seq']}{void}")
    if view["review"]:
        r = view["review"]
        out.append(f"review:    {r['verdict']} by {r['actor']} {ago(r['at'], now)}")
    if view["revision"]:
        r = view["revision"]
        out.append(
            f"revision:  {r['sequence']} {r['state']}, scope {', '.join(r['scope'])}:"
            f" {r.get('reason') or ''}"
        )
    if view["publication"]:
        out.append(f"published: {view['publication']['signal']} by {view['publication']['actor']}")
    result = view.get("result") or {}
    if state in ("completed", "revision_completed") and "nothing_to_do" in result:
        out.append(f"result:    nothing to do: {result['nothing_to_do']}")
    if view["closure"] and state == "closed":
        c = view["closure"]
        out.append(f"closed:    {c['how']} by {c['actor']}: {c.get('reason') or ''}")
    if view["failure"] and state == "failed":
        f = view["failure"]
        out.append(f"failed:    {f['class']}: {f['message']}")
    return "\n".join(out)


def note_views(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The notes in an item's history, oldest first: sequence, time, actor, author, body."""
    return [
        {
            "sequence": e.seq,
            "at": format_time(e.at),
            "actor": e.actor,
            "author": event_author(e.detail),
            "body": e.detail.get("body", ""),
        }
        for e in events
        if e.command == "note"
    ]


def notes_text(notes: Sequence[Mapping[str, Any]], now: datetime) -> list[str]:
    """``stopline show``'s lines of the notes (the last :data:`SHOWN_NOTES`)."""
    out = []
    for n in notes[-SHOWN_NOTES:]:
        who = f"{n['actor']} ({author_text(n['author'])})"
        out.append(f"note:      #{n['sequence']} by {who} {ago(n['at'], now)}: {n['body']}")
    if len(notes) > SHOWN_NOTES:
        out.append(f"           {len(notes) - SHOWN_NOTES} earlier note(s): stopline history")
    return out


SHOWN_NOTES = 5
