"""The web inbox in a real browser (Debian's Chromium via Playwright) against a real
``stopline serve``: sign in, the inbox, acting on items, and the README's screenshots."""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import TYPE_CHECKING

try:
    from playwright.sync_api import expect
except ImportError:  # the `chromium` fixture then skips (or fails) with the reason
    expect = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from server.httphelp import Server

    from .conftest import Demo

MSG_1041 = "support-triage/msg-1041"
MSG_1044 = "support-triage/msg-1044"  # a reply whose policy needs one approver
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"


def images(tmp_path: Path) -> Path:
    """Where the screenshot tests save: ``docs/img/`` with ``STOPLINE_SCREENSHOTS=1`` (to
    refresh the documentation's pictures), else the test's own folder, so that a test run
    leaves the checkout as it found it."""
    return DOCS_IMAGES if os.environ.get("STOPLINE_SCREENSHOTS") == "1" else tmp_path


def laid_out(page: Page) -> None:
    """Wait for the page's ``load`` event: its stylesheet has arrived and applies. A click that
    navigates returns once the new document is there, and a script can measure it before a
    slow stylesheet has come (then a digest is one unbroken 509 px line at 390 px)."""
    page.wait_for_load_state("load")


def sign_in(page: Page, server: Server, token: str) -> None:
    """Sign in through the form, as a person would, and land on the inbox."""
    page.goto(f"{server.base}/signin")
    page.get_by_test_id("signin-token").fill(token)
    page.get_by_test_id("signin-submit").click()
    expect(page).to_have_url(f"{server.base}/inbox")
    laid_out(page)


def group_count(page: Page, state: str) -> int:
    return int(page.get_by_test_id(f"group-{state}").get_by_test_id("group-count").inner_text())


def open_item(page: Page, ref: str) -> None:
    """Follow the inbox's link to ``ref`` (an ``automation/key``)."""
    page.get_by_test_id("inbox-item-link").filter(has_text=re.compile(f"^{ref}$")).click()
    expect(page.get_by_test_id("item-title")).to_have_text(ref)
    laid_out(page)


def test_sign_in_open_an_item_approve_it_and_see_it_move(
    page: Page, server: Server, demo: Demo
) -> None:
    """An approver signs in, sees the grouped inbox, approves a one-approval item, and it moves."""
    sign_in(page, server, demo.tokens["alice"])
    expect(page.get_by_test_id("whoami-name")).to_have_text("alice")
    expect(page.get_by_test_id("inbox-total")).to_have_text("7")
    assert group_count(page, "awaiting_approval") == 3
    assert group_count(page, "exception") == 1
    assert group_count(page, "exhausted") == 1
    assert group_count(page, "ready_for_review") == 2
    waiting = page.get_by_test_id("group-awaiting_approval")
    expect(waiting.get_by_test_id("inbox-item-link").filter(has_text=MSG_1044)).to_be_visible()

    open_item(page, MSG_1044)
    expect(page.get_by_test_id("item-state")).to_have_text("awaiting_approval")
    expect(page.get_by_test_id("approvals-count")).to_have_text("0 of 1")
    digest = demo.item(MSG_1044).doc("proposal")["digest"]
    expect(page.get_by_test_id("approve-digest")).to_have_value(digest)
    page.get_by_test_id("approve-submit").click()

    expect(page.get_by_test_id("flash-outcome")).to_have_text("applied")
    expect(page.get_by_test_id("item-state")).to_have_text("approved")
    expect(page.get_by_test_id("approval")).to_contain_text("alice")
    expect(page.get_by_test_id("action-approve")).to_have_count(0)
    assert demo.item(MSG_1044).state.value == "approved"

    page.get_by_test_id("back-to-inbox").click()
    expect(page.get_by_test_id("inbox-total")).to_have_text("6")
    assert group_count(page, "awaiting_approval") == 2
    expect(page.get_by_test_id("inbox-item-link").filter(has_text=MSG_1044)).to_have_count(0)


def test_reject_with_a_reason_closes_the_item_and_the_reason_is_in_the_history(
    page: Page, server: Server, demo: Demo
) -> None:
    """Rejecting with a reason closes the item, and the reason shows in its history timeline."""
    sign_in(page, server, demo.tokens["bob"])
    open_item(page, MSG_1041)
    reason = "Wrong tone: <b>ask for the invoice</b> first"
    page.get_by_test_id("reject-reason").fill(reason)
    page.get_by_test_id("reject-submit").click()

    expect(page.get_by_test_id("flash-outcome")).to_have_text("applied")
    expect(page.get_by_test_id("item-state")).to_have_text("closed")
    # a closed item takes one command, a note, which moves nothing
    expect(page.get_by_test_id("action-note")).to_have_count(1)
    for gone in ("approve", "reject", "close", "edit"):
        expect(page.get_by_test_id(f"action-{gone}")).to_have_count(0)
    last = page.get_by_test_id("history-event").last
    expect(last).to_contain_text("reject")
    expect(last).to_contain_text("bob")
    expect(last).to_contain_text(reason)  # shown as text: the markup in it stays inert
    expect(page.locator("[data-testid=history] b")).to_have_count(0)
    assert demo.item(MSG_1041).state.value == "closed"


def test_approving_a_stale_page_is_refused_and_shows_the_new_proposal(
    page: Page, server: Server, demo: Demo
) -> None:
    """Approving a page whose proposal was edited meanwhile is refused and shows the new one."""
    sign_in(page, server, demo.tokens["alice"])
    open_item(page, MSG_1041)
    before = demo.item(MSG_1041).doc("proposal")
    expect(page.get_by_test_id("approve-digest")).to_have_value(before["digest"])

    new_draft = "Hello,\n\nCould you send us the invoice number first?\n\nBest regards,\nSupport"
    controller = demo.controller()
    try:
        edited = controller.edit(
            MSG_1041, actor="carol", params={**before["params"], "draft": new_draft}
        )
    finally:
        controller.store.close()
    assert edited.outcome.value == "applied", edited
    after = demo.item(MSG_1041).doc("proposal")
    assert after["digest"] != before["digest"]

    page.get_by_test_id("approve-submit").click()  # the page still carries the old digest

    refusal = page.get_by_test_id("refusal")
    expect(refusal).to_be_visible()
    expect(refusal.get_by_test_id("refusal-reason")).to_have_text("proposal_digest_mismatch")
    expect(page.get_by_test_id("refusal-new-proposal")).to_be_visible()
    expect(page.get_by_test_id("proposal-digest")).to_have_text(after["digest"])
    draft = page.locator("[data-testid=proposal-param][data-name=draft]")
    expect(draft).to_contain_text("Could you send us the invoice number first?")
    expect(page.get_by_test_id("proposal-diff-field")).to_have_text("params.draft")
    expect(page.get_by_test_id("approve-digest")).to_have_value(after["digest"])
    expect(page.get_by_test_id("item-state")).to_have_text("awaiting_approval")
    expect(page.get_by_test_id("approvals-count")).to_have_text("0 of 1")
    assert demo.item(MSG_1041).state.value == "awaiting_approval"


def test_a_viewer_sees_no_action_buttons(page: Page, server: Server, demo: Demo) -> None:
    """A viewer reads the inbox and every item page but is offered no action at all."""
    sign_in(page, server, demo.tokens["dana"])
    expect(page.get_by_test_id("whoami")).to_contain_text("viewer")
    links = page.get_by_test_id("inbox-item-link")
    expect(links).to_have_count(7)
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    for href in hrefs:
        page.goto(f"{server.base}{href}")
        expect(page.get_by_test_id("item-state")).to_be_visible()
        expect(page.get_by_test_id("actions")).to_have_count(0)
        expect(page.locator("main form")).to_have_count(0)
        expect(page.locator("main button")).to_have_count(0)
        expect(page.locator("button")).to_have_text(["Sign out"])


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_screenshots_of_the_inbox_and_an_item_page(
    page: Page, server: Server, demo: Demo, tmp_path: Path
) -> None:
    """The README's screenshots of the inbox and of an item page (saved under docs/img/ with
    ``STOPLINE_SCREENSHOTS=1``)."""
    folder = images(tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    sign_in(page, server, demo.tokens["alice"])
    expect(page.get_by_test_id("group-awaiting_approval")).to_be_visible()
    page.screenshot(path=folder / "inbox.png", animations="disabled", caret="hide")
    open_item(page, MSG_1041)
    expect(page.get_by_test_id("proposal")).to_be_visible()
    page.screenshot(path=folder / "item.png", animations="disabled", caret="hide")
    for name in ("inbox.png", "item.png"):
        assert png_size(folder / name) == (1280, 900), name
