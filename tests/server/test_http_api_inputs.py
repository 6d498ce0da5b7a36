"""The JSON API's own checks of what a client sends, at their edges: list filters (their
values, their bounds, a limit that is kept), an item reference on a read, and the idempotency
key given in the body. Each refusal is 422, names the problem, and writes nothing."""

from __future__ import annotations

from stopline.http.api import MAX_LIMIT

from .conftest import Demo
from .httphelp import Server, nothing_written

CHECKOUT = "service-health/checkout-api"
EVERY_ITEM = 8  # the demo's


def test_the_overdue_filter_reads_true_and_false_in_each_spelling(demo: Demo, live: Server) -> None:
    """Nothing in the fresh demo is overdue: each spelling of false lists every item, each
    spelling of true none, anything else is 422."""
    with live.client(demo.tokens["dana"]) as c:
        for value in ("false", "0", "False", "FALSE"):
            found = c.get("/api/items", params={"overdue": value})
            assert found.status_code == 200 and len(found.json()["items"]) == EVERY_ITEM, value
        for value in ("true", "1", "True"):
            found = c.get("/api/items", params={"overdue": value})
            assert found.status_code == 200 and found.json()["items"] == [], value
        for value in ("yes", "2", "-1", "on"):
            refused = c.get("/api/items", params={"overdue": value})
            assert refused.status_code == 422, value
            assert refused.json()["problems"] == ["overdue must be true or false"]


def test_the_limit_is_kept_and_bounded(demo: Demo, live: Server) -> None:
    with live.client(demo.tokens["dana"]) as c:
        assert len(c.get("/api/items", params={"limit": "3"}).json()["items"]) == 3
        oldest = c.get("/api/items", params={"limit": "1"}).json()["items"]
        every = c.get("/api/items").json()["items"]
        assert [i["id"] for i in oldest] == [every[0]["id"]]
        # with overdue the database reads the first MAX_LIMIT and the API keeps the limit
        two = c.get("/api/items", params={"overdue": "false", "limit": "2"}).json()["items"]
        assert [i["id"] for i in two] == [i["id"] for i in every[:2]]
        top = c.get("/api/items", params={"limit": str(MAX_LIMIT)})
        assert top.status_code == 200 and len(top.json()["items"]) == EVERY_ITEM
        problem = f"limit must be an integer from 1 to {MAX_LIMIT}"
        # "²" and "٣" are digits to Python's str.isdigit (int("٣") is 3, int("²") raises)
        for value in (str(MAX_LIMIT + 1), "0", "-1", "1.5", "²", "٣", "\uff11"):
            refused = c.get("/api/items", params={"limit": value})
            assert refused.status_code == 422, value
            assert refused.json()["problems"] == [problem], value


def test_text_filters_are_bounded_and_unknown_filters_refused(demo: Demo, live: Server) -> None:
    with live.client(demo.tokens["dana"]) as c:
        for name in ("automation", "key"):
            longest = c.get("/api/items", params={name: "a" * 200})
            assert longest.status_code == 200 and longest.json()["items"] == [], name
            for value in ("a" * 201, "service\x00-health"):
                refused = c.get("/api/items", params={name: value})
                assert refused.status_code == 422, (name, value[:10])
                assert refused.json()["problems"] == [
                    f"{name} must be at most 200 characters without NUL"
                ]
        typo = c.get("/api/items", params={"stat": "exhausted"})
        assert typo.status_code == 422 and "unknown filter 'stat'" in typo.json()["problems"][0]


def test_a_read_of_an_item_reference_that_cannot_be_one_is_422_not_404(
    demo: Demo, live: Server
) -> None:
    """Only text that could name an item is looked up; the rest is the client's mistake,
    said as such (the 404 of ``unknown_item`` is for a reference of the right form)."""
    with live.client(demo.tokens["dana"]) as c:
        for ref in ("bad%20id", ".hidden", "a" * 201, "caf%C3%A9"):
            for path in (f"/api/items/{ref}", f"/api/items/{ref}/history"):
                response = c.get(path)
                assert response.status_code == 422, path
                assert response.json()["error"] == "invalid_input"
        unknown = c.get("/api/items/itm_nope")
        assert unknown.status_code == 404 and unknown.json()["reasons"] == ["unknown_item"]


def test_an_idempotency_key_in_the_body_is_checked_as_the_header_is(
    demo: Demo, live: Server
) -> None:
    item = demo.item(CHECKOUT)
    digest = item.doc("proposal")["digest"]
    url = f"/api/items/{item.id}/approve"
    with live.client(demo.tokens["alice"]) as alice:
        with nothing_written(demo.url):
            refusals = [
                ({"proposal": digest, "idempotency_key": 7}, {}, "must be a string"),
                ({"proposal": digest, "idempotency_key": ["k"]}, {}, "must be a string"),
                ({"proposal": digest, "idempotency_key": "two words"}, {}, ""),
                ({"proposal": digest, "idempotency_key": ""}, {}, ""),
                (
                    {"proposal": digest, "idempotency_key": "one"},
                    {"Idempotency-Key": "other"},
                    "differ",
                ),
            ]
            for body, headers, said in refusals:
                response = alice.post(url, json=body, headers=headers)
                assert response.status_code == 422, (body, response.text)
                assert response.json()["error"] == "invalid_input"
                assert said in response.json()["message"], body
        both = {"proposal": digest, "idempotency_key": "approve-1"}
        first = alice.post(url, json=both, headers={"Idempotency-Key": "approve-1"})
        assert first.status_code == 200 and first.json()["decision"] == "applied"
        with nothing_written(demo.url):
            again = alice.post(url, json=both)
            assert again.status_code == 200 and again.json()["decision"] == "zero_write"
