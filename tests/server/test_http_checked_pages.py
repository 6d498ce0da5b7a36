"""What a person is shown to act on is what the record's history sealed.

Someone with the database edits a waiting proposal's parameters where the pages read them,
keeping its digest (which still covers the real ones), and puts the row back after the person
looked. An approval binds the digest, not what the page showed, so a page that showed the
edit would have the person approve parameters they never saw. A record that fails its seal is
shown with the finding and with no command but Close."""

from __future__ import annotations

import copy
import re

from integrity.attacker import Attacker

from .conftest import Demo
from .httphelp import Server, nothing_written, sign_in

CHECKOUT = "service-health/checkout-api"


def test_a_proposal_edited_under_its_digest_is_never_offered_for_approval(
    demo: Demo, live: Server
) -> None:
    item = demo.item(CHECKOUT)
    attacker = Attacker(demo.url)
    try:
        genuine = attacker.data(CHECKOUT)
        forged = copy.deepcopy(genuine)
        forged["proposal"]["params"]["strategy"] = "canary, one pod"
        attacker.put_data(CHECKOUT, forged)
    finally:
        attacker.close()
    with nothing_written(demo.url):
        page = sign_in(live, demo.tokens["bob"]).get(f"/items/{item.id}")
        assert page.status_code == 200
        assert 'data-testid="integrity-failed"' in page.text
        offered = set(re.findall(r'data-testid="action-([a-z_]+)"', page.text))
        assert offered == {"close"}, offered  # the way out of a record nobody can trust
        with live.client(demo.tokens["bob"]) as api:
            shown = api.get(f"/api/items/{item.id}").json()
        assert shown["integrity"]["ok"] is False
        assert shown["integrity"]["findings"]
