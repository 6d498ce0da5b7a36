"""Human output: readable tables and the next command a person would type."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from ..commands.perform import Performed
from ..core.explain import diff_lines


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


def show_text(view: Mapping[str, Any]) -> str:
    out = [
        f"{view['id']}  {view['automation']}/{view['key']}",
        f"state:     {view['state']} ({view['state_class']}), {view['history_length']} events",
        f"attempts:  {view['attempts']} of {view['max_attempts']}, next eligible {view['next_eligible_at']}",
    ]
    if view["lease"]:
        lease = view["lease"]
        out.append(
            f"lease:     {lease['owner']} token {lease['token']} until {lease['expires_at']}"
        )
    if view["evidence"]:
        ev = view["evidence"]
        out.append(f"evidence:  {ev['digest'][:16]}… observed {ev['observed_at']}")
        out.append("           " + json.dumps(ev["data"], ensure_ascii=False)[:300])
    p = view["proposal"]
    if p:
        out.append(f"proposal:  {p['action']} on {p['target'] or '-'}  digest {p['digest']}")
        out.append(f"           params {json.dumps(p['params'], ensure_ascii=False)[:300]}")
        out.append(
            f"           needs {p['required_approvals']} of roles {', '.join(p['required_roles'])}"
            f"; approvals so far: {p['approvals_text']}; proposer {p['proposer']}"
        )
        out.append(f"           digest covers: {', '.join(p['covers'])}")
        for a in p["approvals"]:
            out.append(f"           approved by {a['actor']} ({a['role']}) at {a['at']}")
    if view["exception"]:
        e = view["exception"]
        out.append(f"exception: owner {e['owner']}: {e['why']}")
    if view["report"]:
        out.append("report:    " + json.dumps(view["report"]["data"], ensure_ascii=False)[:300])
    if view["account"]:
        a = view["account"]
        out.append(
            f"account:   {a['attempt_count']} of {a['max_attempts']} attempts in {a['state']}"
        )
        for entry in a["attempts"]:
            out.append(
                f"           #{entry['attempt']} at {entry['at']}: {entry['class']}: {entry['message']}"
            )
        out.append(
            f"           last evidence {a['last_evidence_digest']}; to resume: {a['resume']['condition']}"
        )
    for art in view["artifacts"]:
        verified = "verified" if art["readback_verified"] else "not verified"
        out.append(
            f"artifact:  {art['key']} remote {art['remote_id'] or '-'} content {str(art['content_hash'])[:12]}…"
            f" qa {str(art['qa_hash'])[:12]}… readback {verified}"
        )
    if view["review_packet"]:
        rp = view["review_packet"]
        void = " (void)" if rp.get("void") else ""
        out.append(f"packet:    {rp['digest']} for delivery {rp['delivery_seq']}{void}")
    if view["review"]:
        r = view["review"]
        out.append(f"review:    {r['verdict']} by {r['actor']} at {r['at']}")
    if view["revision"]:
        r = view["revision"]
        out.append(
            f"revision:  {r['sequence']} {r['state']} request {r['request_digest'][:16]}… scope {', '.join(r['scope'])}"
        )
    if view["publication"]:
        out.append(f"published: {view['publication']['signal']} by {view['publication']['actor']}")
    return "\n".join(out)
