"""What a command prints: one JSON document (``--json``) or text, and the exit statuses
every command shares."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ..logs import printable

if TYPE_CHECKING:
    from ..commands.perform import Performed
    from ..controller import Controller

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_REFUSED, EXIT_HOOKS = 0, 1, 2, 3, 4


def on_terminal(text: str) -> str:
    """``text`` line by line, each character that is not printable written as its escape: a
    note, a hook's message or an item's data may hold a terminal's control sequences (clear
    the screen, retitle the window, overwrite a line), and a person reads them here."""
    return "\n".join(printable(line) for line in text.split("\n"))


class Out:
    def __init__(self, as_json: bool) -> None:
        self.json = as_json

    def doc(self, doc: Any, text: str) -> None:
        try:
            print(
                json.dumps(doc, sort_keys=True, ensure_ascii=False)
                if self.json
                else on_terminal(text)
            )
            sys.stdout.flush()
        except BrokenPipeError:  # `stopline ... | head`: the reader left; the status stands
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())

    def decision(self, done: Performed, controller: Controller | None = None) -> int:
        from ..core.decision import Outcome
        from ..core.reasons import Reason
        from ..views import next_commands
        from . import render

        decision = done.decision
        assert decision is not None
        text = render.decision_text(done)
        if controller is not None and decision.item_id and not self.json:
            item = controller.item(decision.item_id)
            if Reason.PROPOSAL_DIGEST_MISMATCH in decision.reasons and item is not None:
                # never an invitation to approve a digest nobody has read
                text += f"\nnext: read the current proposal first: stopline show {item.id}"
            elif item is not None:
                findings = controller.record_findings(item)
                hints = next_commands(item, findings)
                if hints:
                    text += "\nnext:\n  " + "\n  ".join(hints)
        self.doc(done.to_plain(), text)
        return EXIT_REFUSED if decision.outcome is Outcome.REFUSED else EXIT_OK
