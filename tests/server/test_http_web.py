"""The web inbox against a real server: sign in, the inbox, the item page, acting on it."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

from starlette.datastructures import FormData

from stopline.commands.table import COMMANDS
from stopline.controller import Controller
from stopline.store import open_store
from stopline.web import present
from stopline.web.item import form_values

from .conftest import Demo
from .httphelp import Server, csrf_of, nothing_written, sign_in

MSG_1041 = "support-triage/msg-1041"
CHECKOUT = "service-health/checkout-api"


def _count(html: str, state: str) -> int:
    section = html.split(f'data-testid="group-{state}"', 1)[1]
    found = re.search(r'data-testid="group-count">(\d+)<', section)
    assert found
    return int(found.group(1))


def test_signin_page_and_redirects(demo: Demo, live: Server) -> None:
    anonymous = live.client()
    assert anonymous.get("/").headers["location"] == "/inbox"
    assert anonymous.get("/inbox").headers["location"] == "/signin"
    page = anonymous.get("/signin")
    assert 'data-testid="signin-form"' in page.text and 'data-testid="signin-token"' in page.text
    assert 'data-testid="signin-proxy"' not in page.text
    browser = sign_in(live, demo.tokens["alice"])
    inbox = browser.get("/inbox")
    assert 'data-testid="whoami-name">alice<' in inbox.text
    out = browser.post("/signout", data={"csrf": csrf_of(inbox.text)})
    assert out.headers["location"] == "/signin"
    assert browser.get("/inbox").status_code == 303


def test_inbox_groups_filters_and_next(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get("/inbox").text
    assert re.search(r'data-testid="inbox-total">7<', page)
    assert _count(page, "awaiting_approval") == 3
    assert _count(page, "exception") == 1
    assert _count(page, "exhausted") == 1
    assert _count(page, "ready_for_review") == 2
    assert _count(page, "revision_failed") == 0
    assert 'data-testid="group-oldest"' in page
    support = browser.get("/inbox", params={"automation": "support-triage"}).text
    assert _count(support, "awaiting_approval") == 2
    only = browser.get("/inbox", params={"state": "exhausted"}).text
    assert re.search(r'data-testid="inbox-total">1<', only)
    assert 'data-testid="inbox-empty"' in browser.get("/inbox", params={"overdue": "1"}).text
    rows = re.findall(r'data-testid="inbox-row" data-item="([^"]+)"', page)
    first = browser.get("/inbox/next")
    assert first.status_code == 303
    oldest = first.headers["location"].removeprefix("/items/")
    following = browser.get("/inbox/next", params={"after": oldest}).headers["location"]
    assert following != first.headers["location"] and oldest in rows


def test_item_page_sections(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["alice"])
    reply = browser.get(f"/items/{demo.item(MSG_1041).id}").text
    for testid in (
        "item-state",
        "evidence",
        "evidence-observed-at",
        "evidence-age",
        "proposal",
        "proposal-digest",
        "approvals-count",
        "history",
        "history-event",
        "action-approve",
        "approve-digest",
        "action-reject",
        "reject-reason",
        "action-close",
        "next-item",
    ):
        assert f'data-testid="{testid}"' in reply, testid
    assert 'data-testid="approvals-count">0 of 1<' in reply
    digest = demo.item(MSG_1041).doc("proposal")["digest"]
    assert f'value="{digest}" data-testid="approve-digest"' in reply
    exhausted = browser.get(f"/items/{demo.item('service-health/billing-api').id}").text
    assert 'data-testid="retry-account"' in exhausted and 'data-testid="action-resume"' in exhausted
    assert "TransientError: health endpoint timed out" in exhausted
    digest_page = browser.get(f"/items/{demo.item('weekly-digest/2026-W48').id}").text
    assert digest_page.count('data-testid="artifact"') == 2
    assert 'data-testid="artifact-readback">verified<' in digest_page
    assert (
        'data-testid="review-packet"' in digest_page
        and 'data-testid="action-revise"' in digest_page
    )
    assert 'data-testid="action-review"' in digest_page
    exception = browser.get(f"/items/{demo.item('support-triage/msg-1043').id}").text
    assert 'data-testid="exception"' in exception and 'data-testid="action-resolve"' in exception


def test_approve_by_form_moves_the_item(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get(f"/items/{item.id}").text
    digest = re.search(r'name="proposal" value="([^"]+)" data-testid="approve-digest"', page)
    assert digest
    done = browser.post(
        f"/items/{item.id}/approve", data={"csrf": csrf_of(page), "proposal": digest.group(1)}
    )
    assert done.status_code == 303
    after = browser.get(done.headers["location"]).text
    assert 'data-testid="flash-outcome">applied<' in after
    assert 'data-testid="item-state">approved<' in after
    assert demo.item(MSG_1041).state.value == "approved"
    assert 'data-testid="action-approve"' not in after


def test_two_approvals_show_one_of_two(demo: Demo, live: Server) -> None:
    item = demo.item(CHECKOUT)
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get(f"/items/{item.id}").text
    digest = item.doc("proposal")["digest"]
    browser.post(f"/items/{item.id}/approve", data={"csrf": csrf_of(page), "proposal": digest})
    assert 'data-testid="approvals-count">1 of 2<' in browser.get(f"/items/{item.id}").text


def test_approving_a_stale_page_is_refused_and_shows_the_new_proposal(
    demo: Demo, live: Server
) -> None:
    item = demo.item(CHECKOUT)
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get(f"/items/{item.id}").text
    old = item.doc("proposal")["digest"]
    with live.client(demo.tokens["carol"]) as carol:
        params = {**item.doc("proposal")["params"], "strategy": "all-at-once"}
        assert carol.post(f"/api/items/{item.id}/edit", json={"params": params}).status_code == 200
    new = demo.item(CHECKOUT).doc("proposal")["digest"]
    with nothing_written(demo.url):
        refused = browser.post(
            f"/items/{item.id}/approve", data={"csrf": csrf_of(page), "proposal": old}
        )
    assert refused.status_code == 409
    assert 'data-testid="refusal"' in refused.text
    assert "<code>proposal_digest_mismatch</code>" in refused.text
    assert 'data-testid="refusal-new-proposal"' in refused.text
    assert f'data-testid="proposal-digest">{new}<' in refused.text
    assert f'value="{new}" data-testid="approve-digest"' in refused.text
    assert 'data-testid="proposal-diff-field">params.strategy<' in refused.text
    # the refusal explains itself: who edited, and what changed between the two digests
    assert 'data-testid="refusal-explanation"' in refused.text
    assert "edited by carol" in refused.text
    assert 'data-testid="refusal-diff"' in refused.text and "all-at-once" in refused.text


def test_an_item_that_can_never_be_approved_is_flagged(demo: Demo, live: Server) -> None:
    """With erin revoked and alice the editor of the two-approver restart, only bob may approve: the page says it can
    never be approved, and the inbox row says so too."""
    item = demo.item(CHECKOUT)
    store = open_store(demo.url, migrate=False)
    try:
        Controller(store).revoke_actor("erin")  # the demo copy's third approver
    finally:
        store.close()
    with live.client(demo.tokens["alice"]) as alice:
        params = {**item.doc("proposal")["params"], "strategy": "all-at-once"}
        assert alice.post(f"/api/items/{item.id}/edit", json={"params": params}).status_code == 200
    browser = sign_in(live, demo.tokens["bob"])
    page = browser.get(f"/items/{item.id}").text
    assert 'data-testid="approvals-outlook"' in page
    assert "can never be approved" in page and "alice edited it" in page
    assert "CANNOT BE APPROVED" in browser.get("/inbox").text


def test_reject_and_close_need_a_reason(demo: Demo, live: Server) -> None:
    item = demo.item(MSG_1041)
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get(f"/items/{item.id}").text
    with nothing_written(demo.url):
        for command in ("reject", "close"):
            response = browser.post(
                f"/items/{item.id}/{command}", data={"csrf": csrf_of(page), "reason": "  "}
            )
            assert response.status_code == 422
            assert 'data-testid="problems"' in response.text
    digest = item.doc("proposal")["digest"]
    done = browser.post(
        f"/items/{item.id}/reject",
        data={"csrf": csrf_of(page), "reason": "wrong tone", "proposal": digest},
    )
    assert done.status_code == 303
    closed = browser.get(done.headers["location"]).text
    assert 'data-testid="item-state">closed<' in closed
    assert "rejected" in closed or "closed" in closed


def test_viewer_sees_no_action_buttons(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["dana"])
    for ref in (MSG_1041, CHECKOUT, "weekly-digest/2026-W48", "service-health/billing-api"):
        page = browser.get(f"/items/{demo.item(ref).id}").text
        assert 'data-testid="actions"' not in page
        assert page.count("<button") == 1  # signing out is the only button
        assert page.count("<form") == 1 and 'data-testid="signout-form"' in page


def test_read_only_server_hides_forms(demo: Demo, start_server: Callable[..., Server]) -> None:
    server = start_server(demo.url, STOPLINE_READ_ONLY="1")
    browser = sign_in(server, demo.tokens["alice"])
    page = browser.get(f"/items/{demo.item(MSG_1041).id}").text
    assert 'data-testid="read-only-banner"' in page and 'data-testid="actions"' not in page
    with nothing_written(demo.url):
        response = browser.post(
            f"/items/{demo.item(MSG_1041).id}/close", data={"csrf": csrf_of(page), "reason": "x"}
        )
        assert response.status_code == 403


def test_presenters() -> None:
    assert present.age_text(5) == "5 s"
    assert present.age_text(3 * 3600 + 120) == "3 h 2 min"
    assert present.age_text(2 * 86400 + 3600) == "2 d 1 h"
    old = {"action": "a", "params": {"draft": "one\ntwo\n", "n": 1}}
    new = {"action": "a", "params": {"draft": "one\nthree\n", "n": 1}}
    diff = present.proposal_diff(old, new)
    assert [d["field"] for d in diff] == ["params.draft"]
    kinds = {line["text"]: line["kind"] for line in diff[0]["lines"]}
    assert kinds["-two"] == "del" and kinds["+three"] == "add"
    from datetime import UTC, datetime

    now = datetime(2026, 1, 1, tzinfo=UTC)
    view = {
        "evidence": {"observed_at": "2025-12-31T23:00:00.000000Z", "digest": "d", "data": {}},
        "proposal": {
            "max_evidence_age": 900,
            "evidence": [{"observed_at": "2025-12-31T23:00:00.000000Z"}],
        },
    }
    info = present.evidence_info(view, now)
    assert info is not None and info["stale"] is True and info["age"] == "1 h 0 min"
    fresh = present.evidence_info(view, now - timedelta(minutes=55))
    assert fresh is not None and fresh["stale"] is False
    mismatch = {
        "artifacts": [{"key": "a", "body": "intended", "readback_verified": False}],
        "exception": {"evidence": {"a": {"fields": ["body"], "observed": "h"}}},
    }
    rows = present.artifact_rows(mismatch)
    assert rows[0]["status"] == "mismatch"
    assert rows[0]["diff"] == [{"field": "body", "intended": "intended"}]


def test_form_json_fields_outside_the_input_limits_are_problems() -> None:
    """A form's JSON field with NaN, 1e999, a 20-digit integer or bad syntax is a listed problem."""
    spec = COMMANDS["edit"]
    for raw, expected in [
        ('{"a": NaN}', "$.a: not_finite"),
        ('{"a": 1e999}', "$.a: not_finite"),
        ('{"a": 100000000000000000000}', "$.a: integer_range"),
        ("{not json", "$: syntax"),
    ]:
        fields, problems = form_values(spec, FormData([("params", raw)]))
        assert any(expected in p for p in problems), problems
    fields, problems = form_values(spec, FormData([("params", '{"a": 1.5}')]))
    assert problems == [] and fields["params"] == {"a": 1.5}
