"""The claim rule in the core (``work.claimable``, ``work.continue_claim``): the claim a
worker folds into the commit that released an item, when its next step is due at once, takes
it only when the store's claim statement would (a work state, due, no live lease, budget
left, not a revision whose lease ran out), and counts it the same way: one attempt, a new
fencing token."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from stopline.core.records import Item
from stopline.core.states import State
from stopline.core.work import claimable, continue_claim

from .helpers import LEASE, T0, Harness
from .helpers import claimable as store_would_not_claim

S = State
STATES = (
    S.OBSERVING,
    S.CLASSIFIED,
    S.APPROVED,
    S.REVISION_PREPARED,
    S.AWAITING_APPROVAL,
    S.COMPLETED,
    S.EXHAUSTED,
)


@cache
def reached(state: State) -> Item:
    h = Harness()
    return h.to(state)


offsets = st.integers(min_value=-120, max_value=120).map(lambda s: T0 + timedelta(seconds=s))


@st.composite
def items(draw: st.DrawFn) -> Item:
    item = reached(draw(st.sampled_from(STATES)))
    owner = draw(st.sampled_from([None, "w1", "w2"]))
    max_attempts = draw(st.integers(min_value=1, max_value=4))
    return replace(
        item,
        attempts=draw(st.integers(min_value=0, max_value=5)),
        max_attempts=max_attempts,
        next_eligible_at=draw(offsets),
        lease_owner=owner,
        lease_expires_at=None if owner is None else draw(offsets),
    )


@settings(max_examples=examples(1000), deadline=None)
@given(item=items(), now=offsets)
def test_the_core_claims_exactly_what_the_store_claims(item: Item, now: datetime) -> None:
    assert claimable(item, now) == (store_would_not_claim(item, now) == [])


@settings(max_examples=examples(1000), deadline=None)
@given(item=items(), now=offsets)
def test_a_chained_claim_counts_one_attempt_and_fences_a_new_lease(
    item: Item, now: datetime
) -> None:
    claimed = continue_claim(item, "w9", now, LEASE.total_seconds())
    if item.lease_owner is not None or store_would_not_claim(item, now):
        assert claimed is None
        return
    assert claimed is not None
    assert (claimed.attempts, claimed.lease_token) == (item.attempts + 1, item.lease_token + 1)
    assert (claimed.lease_owner, claimed.claimed_at) == ("w9", now)
    assert claimed.lease_expires_at == now + LEASE
    assert claimed.version == item.version and claimed.state is item.state


def test_no_chained_claim_once_the_budget_is_spent() -> None:
    item = replace(reached(S.CLASSIFIED), attempts=3, max_attempts=3, lease_owner=None)
    assert continue_claim(item, "w9", item.next_eligible_at, 30.0) is None
    fewer = replace(item, attempts=2)
    assert continue_claim(fewer, "w9", item.next_eligible_at, 30.0) is not None


def test_a_revision_whose_lease_ran_out_is_left_to_the_sweeper() -> None:
    """Only the sweeper moves it on (to ``revision_failed``): no claim takes it, chained or not."""
    item = reached(S.REVISION_PREPARED)
    expired = replace(item, lease_owner="w1", lease_expires_at=item.next_eligible_at)
    later = item.next_eligible_at + timedelta(seconds=1)
    assert not claimable(expired, later)
    assert claimable(replace(expired, lease_owner=None, lease_expires_at=None), later)


def test_no_claim_takes_an_item_under_a_live_lease() -> None:
    item = replace(reached(S.CLASSIFIED), lease_owner=None)
    now = item.next_eligible_at
    held = replace(item, lease_owner="w1", lease_expires_at=now + timedelta(seconds=1))
    assert claimable(item, now) and not claimable(held, now)
    assert claimable(replace(held, lease_expires_at=now), now)  # a lease ends at its end
