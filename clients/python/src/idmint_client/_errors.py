"""The exceptions of idmint_client: every error the client raises is an `IdmintError`."""

from __future__ import annotations

from typing import Optional

#: Every error code an idmint node answers with: the HTTP API's `error.code`, and the word
#: right after `-ERR` for the ones the Redis protocol names (see `REFUSED_CODES`). The same
#: list, in the same order, as the server's (idmint-core's `ErrorCode::ALL`); a test of the
#: server's suite compares the two, so a code added there is added here.
ERROR_CODES = (
    "invalid_layout",
    "invalid_epoch",
    "invalid_argument",
    "invalid_shard",
    "invalid_id",
    "invalid_tag",
    "layout_exhausted",
    "clock_before_epoch",
    "clock_behind",
    "hwm_not_granted",
    "segment_unavailable",
    "store_unavailable",
    "store_conflict",
    "lease_lost",
    "shutting_down",
    "no_worker_free",
    "store_invalid",
    "store_corrupt",
    "worker_held",
    "unknown_tag",
    "tag_exists",
    "tag_exhausted",
    "too_many_tags",
    "tag_quota",
    "period_unavailable",
    "dated",
    "permuted",
    "id_space_mismatch",
    "id_space_unrecorded",
    "id_space_refused",
    "id_space_changed",
    "invalid_format",
    "invalid_count",
    "invalid_size",
    "invalid_query",
    "invalid_json",
    "invalid_body",
    "invalid_step",
    "invalid_description",
    "invalid_first_id",
    "invalid_dating",
    "bad_request",
    "unauthorized",
    "forbidden",
    "not_found",
    "metrics_disabled",
    "method_not_allowed",
    "payload_too_large",
    "timeout",
    "lease_not_held",
    "too_many_connections",
    "internal",
)

#: The codes after `-ERR` that every node answers the same, so no other node nor a later try
#: helps: a used-up tag, the nodes' tag cap, the token's tag quota, runs of permuted IDs, a
#: range of a dated tag, a dated tag's used-up period. Another code there (`store_corrupt`:
#: that node's store is damaged) is the node's failure.
REFUSED_CODES = frozenset(
    ("tag_exhausted", "too_many_tags", "tag_quota", "permuted", "dated", "period_unavailable")
)


class IdmintError(Exception):
    """Base class of the client's errors."""


class ConfigError(IdmintError, ValueError):
    """The client was given settings it cannot work with (no node, a bad URL or option)."""


class Unavailable(IdmintError):
    """No node could serve the request within the wait; `cause` is the last failure seen."""

    def __init__(self, message: str, cause: Optional[BaseException] = None) -> None:
        if cause is not None:
            message = f"{message} (last cause: {type(cause).__name__}: {cause})"
        super().__init__(message)
        self.cause = cause


class TagExhausted(IdmintError):
    """The tag's IDs are used up (or too few are left): start a new tag. Not retried elsewhere."""


class DatedTag(IdmintError):
    """The nodes refused a range of the tag: it is dated (made with a `period`), and a range
    kept by the client would outlive its period. Handled inside the client, which then takes
    the tag's IDs from a node one call at a time; not raised to callers."""


class PeriodUnavailable(IdmintError):
    """A dated tag cannot hand out an ID now: its period's counters are used up (or too few are
    left for the request), or the store's clock went back into an earlier period. It lifts when
    the next period begins; every node answers the same, so it is not retried elsewhere."""


class Permuted(IdmintError):
    """The nodes hand out their IDs permuted (`serve --permutation-key-file`): this client
    keeps segment IDs as runs of consecutive IDs, which permuted IDs are not. Take segment IDs
    from the nodes themselves (`IDMINT.NEXT tag COUNT n`); snowflakes are still served."""


class TooManyTags(IdmintError):
    """The node serves as many tags as it may (`--max-tags`); creating one more was refused."""


class AuthError(IdmintError):
    """The token was refused (missing, wrong, or not allowed this command or tag)."""


class ClientClosed(IdmintError):
    """The client was closed; it hands out nothing more."""


class InvalidId128(IdmintError, ValueError):
    """A text (or bytes) that is not a 128-bit ID in one of its forms (canonical UUID, 32 hex
    digits, 26-character ULID, 16 bytes), or not of the kind asked for (a UUID without version 7
    and the RFC variant when a UUIDv7 was asked for). `reason` says which rule it broke:
    `length`, `character`, `dashes`, `overflow`, `version` or `type`."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
