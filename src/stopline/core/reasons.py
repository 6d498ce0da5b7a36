"""Reason codes (listed with their meanings in docs/cli.md). A code is never reused for another
meaning."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    # any command
    UNKNOWN_ITEM = "unknown_item"
    ILLEGAL_TRANSITION = "illegal_transition"
    STALE_VERSION = "stale_version"
    IDEMPOTENCY_KEY_REUSE = "idempotency_key_reuse"
    UNKNOWN_AUTOMATION = "unknown_automation"
    INVALID_INPUT = "invalid_input"
    INTEGRITY_FAILED = "integrity_failed"
    SIGNATURE_INVALID = "signature_invalid"
    # workers and leases
    NOT_DUE = "not_due"
    LEASE_HELD = "lease_held"
    LEASE_LOST = "lease_lost"
    LEASE_EXPIRED = "lease_expired"
    RETRY_BUDGET_EXHAUSTED = "retry_budget_exhausted"
    RESUME_CAP = "resume_cap"
    # approval
    NO_PROPOSAL = "no_proposal"
    PROPOSAL_DIGEST_MISMATCH = "proposal_digest_mismatch"
    EVIDENCE_STALE = "evidence_stale"
    ACTOR_UNKNOWN = "actor_unknown"
    ACTOR_NOT_AUTHORIZED = "actor_not_authorized"
    SELF_APPROVAL = "self_approval"
    ALREADY_APPROVED = "already_approved"
    APPROVALS_MISSING = "approvals_missing"
    POLICY_CHANGED = "policy_changed"
    # completion
    ALREADY_COMPLETED = "already_completed"
    NOT_COMPLETED = "not_completed"
    QA_FAILED = "qa_failed"
    # revision prerequisites
    MODE_FORBIDS_REVISION = "mode_forbids_revision"
    PUBLISHED = "published"
    ARTIFACT_NOT_BOUND = "artifact_not_bound"
    READBACK_UNVERIFIED = "readback_unverified"
    REVIEW_HEAD_MOVED = "review_head_moved"
    REVISION_ACTIVE = "revision_active"
    SCOPE_INVALID = "scope_invalid"
    # revision completion gate
    CONTENT_UNCHANGED = "content_unchanged"
    QA_UNCHANGED = "qa_unchanged"
    NOT_AN_UPDATE = "not_an_update"
    READBACK_MISMATCH = "readback_mismatch"
    REVIEW_PACKET_STALE = "review_packet_stale"
    REMOTE_IDENTITY_MISSING = "remote_identity_missing"
    PUBLICATION_GUARD = "publication_guard"
    # revision recovery
    REQUEST_MISMATCH = "request_mismatch"
    # review and publication
    MODE_FORBIDS_PUBLICATION = "mode_forbids_publication"
    REVIEW_NOT_APPROVED = "review_not_approved"
    NOT_FOUND_REMOTE = "remote_not_found"
    ALREADY_STAGED = "already_staged"
    REMOTE_VERSION_CONFLICT = "remote_version_conflict"
    REMOTE_OBJECT_HELD = "remote_object_held"
    TARGET_UNAVAILABLE = "target_unavailable"

    AGENT_FORBIDDEN = "agent_forbidden"
    NOT_YOUR_ITEM = "not_your_item"
    NOT_AN_AGENT_AUTOMATION = "not_an_agent_automation"
