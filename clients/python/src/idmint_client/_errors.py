"""The exceptions of idmint_client: every error the client raises is an `IdmintError`."""

from __future__ import annotations

from typing import Optional


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


class TooManyTags(IdmintError):
    """The node serves as many tags as it may (`--max-tags`); creating one more was refused."""


class AuthError(IdmintError):
    """The token was refused (missing, wrong, or not allowed this command or tag)."""


class ClientClosed(IdmintError):
    """The client was closed; it hands out nothing more."""
