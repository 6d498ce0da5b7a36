"""The inbox at desktop and phone widths in a real browser (Debian's Chromium via Playwright)
against a real ``stopline serve``: no page is wider than the screen and no row's text overlaps,
Approve stands apart from the destructive actions and goes away once you approved, pages,
search, "needs me" and bulk actions; and the screenshots of docs/inbox.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the `chromium` fixture then skips (or fails) with the reason
    expect = None  # type: ignore[assignment]

from .test_browser_inbox import images, laid_out, open_item, png_size, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from server.httphelp import Server

    from .conftest import Demo

CHECKOUT = "service-health/checkout-api"
WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def no_horizontal_overflow(page: Page) -> None:
    laid_out(page)
    width, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    if width > inner:
        wide = page.evaluate(
            """limit => [...document.querySelectorAll('body *')]
                .filter(e => e.getBoundingClientRect().right > limit)
                .slice(-5)
                .map(e => `${e.tagName.toLowerCase()}.${e.className}`
                    + `[${e.getAttribute('data-testid') || ''}] `
                    + `${Math.round(e.getBoundingClientRect().right)} px: `
                    + (e.textContent || '').trim().slice(0, 80))""",
            inner,
        )
        raise AssertionError(f"{page.url}: {width} px wide in a {inner} px window; " + str(wide))


def rows_do_not_overlap(page: Page) -> None:
    """No two parts of an inbox row (link, severity and age, reason) cover each other."""
    laid_out(page)
    boxes: list[list[dict[str, Any]]] = page.evaluate(
        """() => [...document.querySelectorAll('[data-testid=inbox-row]')].map(row =>
            [...row.querySelectorAll(':scope > a, :scope > span')].map(e => {
                const r = e.getBoundingClientRect();
                return {x: r.left, y: r.top, w: r.width, h: r.height};
            }))"""
    )
    assert boxes
    for parts in boxes:
        for i, a in enumerate(parts):
            for b in parts[i + 1 :]:
                apart = (
                    a["x"] + a["w"] <= b["x"] + 0.5
                    or b["x"] + b["w"] <= a["x"] + 0.5
                    or a["y"] + a["h"] <= b["y"] + 0.5
                    or b["y"] + b["h"] <= a["y"] + 0.5
                )
                assert apart, (a, b)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_every_page_fits_the_screen(page: Page, server: Server, demo: Demo, width: str) -> None:
    page.set_viewport_size(WIDTHS[width])
    sign_in(page, server, demo.tokens["alice"])
    no_horizontal_overflow(page)
    rows_do_not_overlap(page)
    for ref in (CHECKOUT, "weekly-digest/2026-W48", "service-health/billing-api"):
        page.goto(f"{server.base}/items/{demo.item(ref).id}")
        expect(page.get_by_test_id("item-title")).to_have_text(ref)
        no_horizontal_overflow(page)
    page.goto(f"{server.base}/stuck")
    expect(page.get_by_test_id("stuck")).to_be_visible()
    no_horizontal_overflow(page)
    page.goto(f"{server.base}/inbox?q=support&size=2")
    no_horizontal_overflow(page)
    rows_do_not_overlap(page)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_approve_is_apart_from_close_and_hidden_once_you_approved(
    page: Page, server: Server, demo: Demo, width: str
) -> None:
    page.set_viewport_size(WIDTHS[width])
    sign_in(page, server, demo.tokens["alice"])
    open_item(page, CHECKOUT)
    approve = page.get_by_test_id("approve-submit")
    close = page.get_by_test_id("close-submit")
    expect(approve).to_be_visible()
    expect(page.get_by_test_id("approve-effect")).to_contain_text("1 of 2")
    laid_out(page)
    colour = "el => getComputedStyle(el).backgroundColor"
    assert approve.evaluate(colour) != close.evaluate(colour)
    expect(page.get_by_test_id("danger-zone").get_by_test_id("close-submit")).to_be_visible()
    expect(page.get_by_test_id("danger-zone").get_by_test_id("approve-submit")).to_have_count(0)
    approve.click()
    expect(page.get_by_test_id("flash-outcome")).to_have_text("applied")
    expect(page.get_by_test_id("approvals-count")).to_have_text("1 of 2")
    expect(page.get_by_test_id("action-approve")).to_have_count(0)
    expect(page.get_by_test_id("approved-by-me")).to_be_visible()
    expect(page.get_by_test_id("action-close")).to_be_visible()
    no_horizontal_overflow(page)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_pages_search_and_needs_me(page: Page, server: Server, demo: Demo, width: str) -> None:
    page.set_viewport_size(WIDTHS[width])
    sign_in(page, server, demo.tokens["alice"])
    page.goto(f"{server.base}/inbox?size=3&sort=oldest")
    seen: list[str] = []
    for expected in (3, 3, 1):
        rows = page.get_by_test_id("inbox-row")
        expect(rows).to_have_count(expected)
        expect(page.get_by_test_id("inbox-total")).to_have_text("7")
        no_horizontal_overflow(page)
        seen += [rows.nth(n).get_attribute("data-item") or "" for n in range(expected)]
        if expected == 3:
            page.get_by_test_id("page-next").click()
    expect(page.get_by_test_id("page-next")).to_have_count(0)
    assert len(set(seen)) == 7
    page.get_by_test_id("page-first").click()
    expect(page.get_by_test_id("inbox-row")).to_have_count(3)

    page.get_by_test_id("filter-q").fill("msg-1043")
    page.get_by_test_id("filter-submit").click()
    expect(page.get_by_test_id("inbox-total")).to_have_text("1")
    expect(page.get_by_test_id("inbox-item-link")).to_have_text("support-triage/msg-1043")
    page.get_by_test_id("filter-q").fill("")
    page.get_by_test_id("filter-mine").check()
    page.get_by_test_id("filter-submit").click()
    expect(page).to_have_url(re.compile(r"mine=1"))
    expect(page.get_by_test_id("inbox-total")).to_have_text("7")  # an operator may close any

    page.get_by_test_id("signout-submit").click()
    sign_in(page, server, demo.tokens["dana"])  # a viewer: nothing needs her
    page.get_by_test_id("filter-mine").check()
    page.get_by_test_id("filter-submit").click()
    expect(page.get_by_test_id("inbox-total")).to_have_text("0")
    expect(page.get_by_test_id("inbox-empty")).to_be_visible()
    expect(page.get_by_test_id("bulk-form")).to_have_count(0)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_bulk_acknowledge_reports_each_item(
    page: Page, server: Server, demo: Demo, width: str
) -> None:
    page.set_viewport_size(WIDTHS[width])
    sign_in(page, server, demo.tokens["carol"])
    ready = page.get_by_test_id("group-ready_for_review").get_by_test_id("inbox-row-select")
    expect(ready).to_have_count(2)
    ready.nth(0).check()
    ready.nth(1).check()
    waiting = page.get_by_test_id("group-awaiting_approval").get_by_test_id("inbox-row-select")
    waiting.nth(0).check()  # acknowledge does not apply to it: refused, left as it is
    page.get_by_test_id("bulk-command").select_option("acknowledge")
    page.get_by_test_id("bulk-reason").fill("read, nothing to do")
    page.get_by_test_id("bulk-submit").click()
    results = page.get_by_test_id("bulk-result")
    expect(results).to_have_count(3)
    expect(page.get_by_test_id("bulk-summary")).to_contain_text("2 of 3 done")
    outcomes = sorted(results.nth(n).get_attribute("data-outcome") or "" for n in range(3))
    assert outcomes == ["applied", "applied", "refused"]
    no_horizontal_overflow(page)
    page.get_by_test_id("bulk-back").click()
    expect(page.get_by_test_id("inbox-total")).to_have_text("5")
    page.get_by_test_id("group-awaiting_approval").get_by_test_id("inbox-row-select").nth(0).check()
    page.get_by_test_id("bulk-command").select_option("close")
    page.get_by_test_id("bulk-submit").click()  # no reason: nothing is sent
    expect(page.get_by_test_id("bulk-problems")).to_contain_text("reason")
    page.go_back()
    expect(page.get_by_test_id("inbox-total")).to_have_text("5")


def test_screenshots_at_phone_width(page: Page, server: Server, demo: Demo, tmp_path: Path) -> None:
    """docs/inbox.md's phone screenshots of the inbox and an item page (saved under docs/img/
    with ``STOPLINE_SCREENSHOTS=1``)."""
    folder = images(tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size(WIDTHS["phone"])
    sign_in(page, server, demo.tokens["alice"])
    page.screenshot(path=folder / "inbox-phone.png", animations="disabled", caret="hide")
    page.goto(f"{server.base}/items/{demo.item(CHECKOUT).id}")
    page.get_by_test_id("action-approve").evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=folder / "item-phone.png", animations="disabled", caret="hide")
    for name in ("inbox-phone.png", "item-phone.png"):
        assert png_size(folder / name) == (390, 844), name
