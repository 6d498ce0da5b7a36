"""An incident whose recorded findings were edited into something other than objects is shown
with them as their text: a report of a store is never cut short by what it reports (found by a
mutation pass over ``core/verify.py``; ``verify`` used to raise on it)."""

from __future__ import annotations

from stopline.core.verify import INCIDENT, incidents

from .helpers import Harness, resealed


def test_an_incident_whose_findings_were_edited_is_shown_as_their_text() -> None:
    h = Harness()
    h.to_awaiting()
    last = h.events[-1]
    for findings in ([1, "x", {"reason": "seal_mismatch"}], "edited", 7):
        event = resealed(last, reasons=(INCIDENT,), detail={"findings": findings})
        [listed] = incidents(h.it, [*h.events[:-1], event])
        shown = listed["findings"]
        assert isinstance(shown, list) and all(isinstance(f, dict) for f in shown), shown
        if isinstance(findings, list):
            assert shown == [{"detail": "1"}, {"detail": "x"}, {"reason": "seal_mismatch"}]
        else:
            assert shown == [{"detail": str(findings)}]
