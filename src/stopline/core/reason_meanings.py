"""What every reason code means, one line each: the sentence a refusal starts from when
:mod:`.explain` has nothing more specific to say, and the table of ``docs/cli.md``."""

from __future__ import annotations

from collections.abc import Mapping

from .reasons import Reason

# What every reason code means, one line each (docs/cli.md lists them from here).
MEANINGS: Mapping[str, str] = {
    Reason.UNKNOWN_ITEM: "no item has that id or AUTOMATION/KEY",
    Reason.ILLEGAL_TRANSITION: "the command does not apply to the item's current state",
    Reason.STALE_VERSION: "another command changed the item while this one was decided",
    Reason.IDEMPOTENCY_KEY_REUSE: "the idempotency key was used before for a different command",
    Reason.UNKNOWN_AUTOMATION: "the item's automation is not registered in this database",
    Reason.INVALID_INPUT: "a value is empty where it may not be, or has no canonical JSON form",
    Reason.INTEGRITY_FAILED: "the stored record does not match what its history sealed",
    Reason.SIGNATURE_INVALID: "signed mode: the command's signature does not authorise it",
    Reason.NOT_DUE: "the step is not due yet",
    Reason.LEASE_HELD: "another worker holds the item's lease",
    Reason.LEASE_LOST: "the worker's lease is gone; it writes nothing more",
    Reason.LEASE_EXPIRED: "the lease expired before the step ended",
    Reason.RETRY_BUDGET_EXHAUSTED: "the step's retry budget is spent",
    Reason.RESUME_CAP: "more attempts were asked than the policy's resume cap grants",
    Reason.NO_PROPOSAL: "the item holds no proposal",
    Reason.PROPOSAL_DIGEST_MISMATCH: "the digest given is not the current proposal's",
    Reason.EVIDENCE_STALE: "the evidence is older than the approval rule allows",
    Reason.ACTOR_UNKNOWN: "no active actor of that name is in the registry",
    Reason.ACTOR_NOT_AUTHORIZED: "the actor holds none of the roles the command needs",
    Reason.SELF_APPROVAL: "the proposer, an editor or a returner may not approve (separation"
    " of duties)",
    Reason.ALREADY_APPROVED: "the actor approved this digest already",
    Reason.APPROVALS_MISSING: "fewer approvals hold than the rule requires",
    Reason.POLICY_CHANGED: "the approval policy changed since the proposal was made",
    Reason.ALREADY_COMPLETED: "the item is completed; nothing to do",
    Reason.NOT_COMPLETED: "the command needs a completed item",
    Reason.QA_FAILED: "an artifact failed its QA check",
    Reason.MODE_FORBIDS_REVISION: "the automation's delivery policy (or its missing revise hook)"
    " allows no revision",
    Reason.PUBLISHED: "the delivery was published; it is not revised in place",
    Reason.ARTIFACT_NOT_BOUND: "an artifact in scope has no bound remote identity",
    Reason.READBACK_UNVERIFIED: "an artifact in scope was never verified by readback",
    Reason.REVIEW_HEAD_MOVED: "the delivery head moved since the revision or packet was bound",
    Reason.REVISION_ACTIVE: "a revision is already under way",
    Reason.SCOPE_INVALID: "the artifacts named are not the item's, or are empty",
    Reason.CONTENT_UNCHANGED: "a revised artifact's content did not change",
    Reason.QA_UNCHANGED: "a revised artifact's QA evidence did not change",
    Reason.NOT_AN_UPDATE: "the write was not an update of the bound remote object (a bound artifact is"
    " updated, never created again)",
    Reason.READBACK_MISMATCH: "what was read back differs from what was sent",
    Reason.REVIEW_PACKET_STALE: "the review packet does not match the item's current packet",
    Reason.REMOTE_IDENTITY_MISSING: "a bound remote object is gone",
    Reason.PUBLICATION_GUARD: "the delivery was published: a revision may not complete over it",
    Reason.REQUEST_MISMATCH: "a failed revision resumes only with the same request",
    Reason.MODE_FORBIDS_PUBLICATION: "the automation's delivery mode does not publish",
    Reason.REVIEW_NOT_APPROVED: "the review packet has no approving verdict",
    Reason.NOT_FOUND_REMOTE: "the target holds no object with that key",
    Reason.ALREADY_STAGED: "the artifacts were staged already",
    Reason.REMOTE_VERSION_CONFLICT: "the remote object changed since it was bound",
    Reason.REMOTE_OBJECT_HELD: "the remote object is held by another artifact, of this item or"
    " another: binding or writing it would rewrite that one's",
    Reason.TARGET_UNAVAILABLE: "the target could not be reached",
    Reason.AGENT_FORBIDDEN: "the actor holds the agent role: an agent proposes and reports, and"
    " never approves, rejects, edits, resumes or closes, whatever other role it holds",
    Reason.NOT_YOUR_ITEM: "the item was not started by this agent",
    Reason.NOT_AN_AGENT_AUTOMATION: "the automation does not take proposals from agents",
}
