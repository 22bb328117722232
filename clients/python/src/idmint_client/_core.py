"""What the sync and the asyncio clients share: settings, node choice with back-off, error
classification, range sizing and counters. Nothing here does I/O."""

from __future__ import annotations

import inspect
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

import redis.exceptions as rex
from redis.backoff import NoBackoff
from redis.retry import Retry

from ._errors import (
    REFUSED_CODES,
    AuthError,
    ConfigError,
    DatedTag,
    IdmintError,
    PeriodUnavailable,
    Permuted,
    TagExhausted,
    TooManyTags,
)

#: An ID above every u64, for "no refill trigger".
NEVER = 1 << 65

#: The most snowflakes one `snowflakes(n)` call hands out.
MAX_SNOWFLAKES = 10_000

#: How long to wait before asking again when a snowflake batch brought nothing new (a node
#: whose clock is behind the IDs already handed out).
SNOWFLAKE_PAUSE = 0.001

#: The text of the node's answer to a count above its `--max-count`.
_COUNT_LIMIT = re.compile(r"count must be between 1 and (\d+)")


@dataclass
class Settings:
    """The client's settings, checked once (see `Client` for what each means)."""

    nodes: List[str]
    token: Optional[str] = None
    target_lifetime: float = 10.0
    min_step: int = 100
    max_step: int = 10_000
    refill_at: float = 0.3
    max_wait: float = 3.0
    socket_timeout: float = 1.0
    connect_timeout: float = 1.0
    backoff: float = 1.0
    max_backoff: float = 30.0
    probe_interval: float = 0.5
    snowflake_max_age: float = 0.1
    snowflake_batch: int = 64
    connection_kwargs: Dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        if isinstance(self.nodes, str):
            self.nodes = [n for n in re.split(r"[,\s]+", self.nodes) if n]
        if not self.nodes:
            raise ConfigError("at least one node URL is needed")
        for url in self.nodes:
            scheme = urlsplit(url).scheme
            if scheme not in ("redis", "rediss"):
                raise ConfigError(f"node URL {url!r}: expected redis:// or rediss://")
        positive = {
            "target_lifetime": self.target_lifetime,
            "max_wait": self.max_wait,
            "socket_timeout": self.socket_timeout,
            "connect_timeout": self.connect_timeout,
            "backoff": self.backoff,
            "max_backoff": self.max_backoff,
            "probe_interval": self.probe_interval,
            "snowflake_max_age": self.snowflake_max_age,
        }
        for name, value in positive.items():
            if not value > 0:
                raise ConfigError(f"{name} must be above 0, got {value!r}")
        if self.max_backoff < self.backoff:
            raise ConfigError("max_backoff must not be below backoff")
        if not 1 <= self.min_step <= self.max_step:
            raise ConfigError("need 1 <= min_step <= max_step")
        if not 0.0 <= self.refill_at < 1.0:
            raise ConfigError("refill_at must be in [0, 1)")
        if self.snowflake_batch < 1:
            raise ConfigError("snowflake_batch must be at least 1")

    def pool_kwargs(self) -> Dict[str, Any]:
        """Keyword arguments of `ConnectionPool.from_url` for every node."""
        kwargs: Dict[str, Any] = {
            "socket_timeout": self.socket_timeout,
            "socket_connect_timeout": self.connect_timeout,
            # The client fails over itself: redis-py must not retry (a retried range would be
            # taken twice, a gap, and the failover would come late).
            "retry": Retry(NoBackoff(), 0),
        }
        if self.token is not None:
            kwargs["password"] = self.token
        kwargs.update(self.connection_kwargs)
        return kwargs


def check_count(n: Any) -> int:
    """`n` of `snowflakes(n)`, checked: an int in 1..=MAX_SNOWFLAKES."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SNOWFLAKES:
        raise ConfigError(f"n must be an int in 1..={MAX_SNOWFLAKES}, got {n!r}")
    return n


def own_auth(
    kwargs: Dict[str, Any], connection_class: type
) -> Tuple[Dict[str, Any], Optional[Tuple[Any, ...]]]:
    """The keyword arguments of a node's connections and the AUTH command to send as their
    first command (None: none).

    The token is not left to redis-py's handshake: there the answer of a node that refuses the
    connection (`-ERR max number of clients reached`, sent at accept) can come back as an
    authentication error, and a full node would be taken for a wrong token. Sent as the first
    command, AUTH's reply keeps its code. This needs a connection that sends nothing before it:
    RESP2 (no HELLO) and no `CLIENT SETINFO`. A caller that asks for RESP3 or brings a
    credential provider keeps redis-py's handshake."""
    kw = dict(kwargs)
    if kw.get("credential_provider") is not None or kw.get("protocol") not in (None, 2, "2"):
        return kw, None
    kw["protocol"] = 2
    params = set()
    for klass in getattr(connection_class, "__mro__", ()):  # __init__ passes **kwargs on
        try:
            params.update(inspect.signature(klass.__init__).parameters)
        except (TypeError, ValueError):
            pass
    if "driver_info" in params:
        kw.setdefault("driver_info", None)
    elif "lib_name" in params:
        kw.setdefault("lib_name", None)
        kw.setdefault("lib_version", None)
    if kw.get("maint_notifications_config") is not None:
        kw["maint_notifications_config"] = None  # RESP3 only (redis-py 7+ sets it on its pools)
    password = kw.pop("password", None)
    username = kw.pop("username", None)
    if password is None:
        return kw, None
    if username:
        return kw, ("AUTH", username, password)
    return kw, ("AUTH", password)


def check_auth_reply(reply: Any) -> None:
    """Raises unless `reply` is AUTH's +OK."""
    if reply not in (b"OK", "OK", True):
        raise rex.AuthenticationError(f"AUTH answered {reply!r}")


def label(url: str) -> str:
    """A node's name in counters and messages: its host and port, never its password."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{parts.port or 6379}"


class NodeState:
    """A node's health as the client sees it."""

    __slots__ = ("url", "label", "avoid_until", "backoff", "failures")

    def __init__(self, url: str) -> None:
        self.url = url
        self.label = label(url)
        self.avoid_until = 0.0
        self.backoff = 0.0
        self.failures = 0


class NodeSet:
    """The nodes in the order they are tried: the one that worked last first, then the others
    in turn; a node that failed is avoided for a back-off period (doubling while it keeps
    failing) as long as another one is not avoided."""

    def __init__(self, settings: Settings, stats: "Stats") -> None:
        self.nodes = [NodeState(url) for url in settings.nodes]
        self._settings = settings
        self._stats = stats
        self._lock = threading.Lock()
        self.sticky = 0

    def plan(self, now: float) -> Tuple[List[int], float]:
        """The nodes to try now, and how long to wait before trying them (only when every node
        is avoided: then the one whose back-off ends first is probed, at the latest after
        `probe_interval`)."""
        with self._lock:
            count = len(self.nodes)
            order = [(self.sticky + k) % count for k in range(count)]
            ready = [i for i in order if self.nodes[i].avoid_until <= now]
            if ready:
                return ready, 0.0
            soonest = min(order, key=lambda i: self.nodes[i].avoid_until)
            wait = min(self.nodes[soonest].avoid_until - now, self._settings.probe_interval)
            return [soonest], max(wait, 0.0)

    def failed(self, index: int, now: float) -> None:
        """Node `index` failed. Requests that were in flight together fail together: the
        back-off steps up (and the failure is counted) only when the node is not already
        avoided."""
        with self._lock:
            node = self.nodes[index]
            if node.avoid_until > now:
                return
            s = self._settings
            node.backoff = s.backoff if node.backoff == 0 else min(node.backoff * 2, s.max_backoff)
            node.avoid_until = now + node.backoff
            node.failures += 1
        self._stats.node_failed(node.label)

    def worked(self, index: int) -> None:
        with self._lock:
            node = self.nodes[index]
            node.backoff = 0.0
            node.avoid_until = 0.0
            moved = index != self.sticky
            self.sticky = index
        if moved:
            self._stats.add("failovers")

    def current(self) -> str:
        with self._lock:
            return self.nodes[self.sticky].label


def _classes(*names: str) -> Tuple[type, ...]:
    """The named redis-py exceptions this version has (they came in over several versions)."""
    return tuple(getattr(rex, n) for n in names if isinstance(getattr(rex, n, None), type))


_AUTH_ERRORS = _classes(
    "AuthenticationError",
    "AuthorizationError",
    "NoPermissionError",
)

# What a failed call means for the client.
NODE_DOWN = "node_down"  # no connection, a timeout, any unexpected reply: avoid it, try another
AUTH = "auth"  # token refused by this node: try another, AuthError if none accepts
FATAL = "fatal"  # a refusal no retry changes: the caller gets a typed error at once
RESIZE = "resize"  # count above the node's --max-count: ask again for fewer

#: The codes of a refused token.
_AUTH_CODES = ("WRONGPASS", "NOAUTH", "NOPERM")

#: What a node without tokens answers a token: a refusal too (configuration, not an outage).
_NO_PASSWORD = "AUTH <password> called without"

#: The starts of the `-ERR` replies without a code that are refusals (no other node nor later
#: try answers otherwise), beside those with a code in `REFUSED_CODES`. Every other error reply
#: (`-ERR max number of clients reached`, `-TRYAGAIN`, anything new) is the node's failure.
REFUSALS = (
    "invalid tag",
    "invalid argument",
    "unknown tag",
    "count must be",
    "unknown command",
    "wrong number of arguments",
    "syntax error",
    "value is not an integer",
)

_CODE = re.compile(r"[A-Z][A-Z_]*$")

#: The word an idmint error code would be, at the start of the text after `-ERR`.
_IDMINT_CODE = re.compile(r"[a-z_]+")


def idmint_code(text: str) -> Optional[str]:
    """The idmint error code the text after `-ERR` starts with, if it is a refusal's
    (`tag_exhausted tag ...` gives `tag_exhausted`); None otherwise."""
    match = _IDMINT_CODE.match(text)
    word = match.group(0) if match else None
    return word if word in REFUSED_CODES else None


def reply_code(error: BaseException) -> Tuple[Optional[str], str]:
    """The code and the text after it of an error reply (redis-py strips the code of the
    codes it knows and keeps it in `status_code`, since 5.x; older versions lose it)."""
    text = str(error)
    code = getattr(error, "status_code", None)
    if code:
        if text.startswith(code + " "):
            text = text[len(code) + 1 :]
        return str(code), text
    head, _, rest = text.partition(" ")
    if _CODE.match(head) and rest:
        return head, rest
    if isinstance(error, rex.ResponseError):
        return "ERR", text  # a plain ResponseError: "ERR " was stripped
    return None, text


def classify(error: BaseException) -> Tuple[str, Optional[BaseException]]:
    """What to do about `error` raised by a node call, and the error to raise (for AUTH and
    FATAL). Refusals are an allow-list; anything else is the node's failure."""
    if not isinstance(error, rex.RedisError):
        if isinstance(error, (OSError, EOFError)):
            return NODE_DOWN, None
        return FATAL, IdmintError(f"unexpected error: {type(error).__name__}: {error}")
    code, text = reply_code(error)
    if code in _AUTH_CODES or (code == "ERR" and text.startswith(_NO_PASSWORD)):
        return AUTH, AuthError(f"{code} {text}")
    if code is None and isinstance(error, _AUTH_ERRORS) and "max number of clients" not in text:
        # An authentication error of redis-py's own (a handshake the caller asked for), or of a
        # redis-py that does not keep the code.
        return AUTH, AuthError(text or type(error).__name__)
    refused = idmint_code(text) if code == "ERR" else None
    if refused is not None or (code == "ERR" and text.startswith(REFUSALS)):
        if refused == "tag_exhausted":
            return FATAL, TagExhausted(text)
        if refused == "too_many_tags":
            return FATAL, TooManyTags(text)
        if refused == "dated":
            return FATAL, DatedTag(text)
        if refused == "period_unavailable":
            return FATAL, PeriodUnavailable(text)
        if refused == "permuted":
            return FATAL, Permuted(
                "the nodes hand out their IDs permuted (serve --permutation-key-file): this "
                "client keeps segment IDs as runs of consecutive IDs, which permuted IDs are not; "
                f"take segment IDs from the nodes themselves (IDMINT.NEXT tag COUNT n): {text}"
            )
        if _COUNT_LIMIT.search(text):
            return RESIZE, None
        return FATAL, IdmintError(f"the node refused the command: {text}")
    # TRYAGAIN (the node's store is down), a full node, a connection lost or timed out, a
    # reply the client could not read, an error reply it does not know: try another node.
    return NODE_DOWN, None


def count_limit(error: BaseException) -> Optional[int]:
    """The node's `--max-count` from its refusal of a larger count."""
    match = _COUNT_LIMIT.search(str(error))
    return int(match.group(1)) if match else None


class BadReply(rex.RedisError):
    """A reply that does not have the expected shape (treated as a node failure)."""


def parse_range(reply: Any, above: int) -> Tuple[int, int]:
    """`[first, last]` of `IDMINT.RANGE`, checked: never an ID at or below `above`."""
    if not isinstance(reply, (list, tuple)) or len(reply) != 2:
        raise BadReply(f"IDMINT.RANGE answered {reply!r}, expected [first, last]")
    first, last = int(reply[0]), int(reply[1])
    if not above < first <= last:
        raise BadReply(f"IDMINT.RANGE answered [{first}, {last}], not above {above}")
    return first, last


def parse_ids(reply: Any, count: int) -> List[int]:
    """The IDs of `IDMINT.SNOWFLAKE COUNT n`."""
    if not isinstance(reply, (list, tuple)) or not 1 <= len(reply) <= count:
        raise BadReply(f"IDMINT.SNOWFLAKE answered {reply!r}, expected up to {count} IDs")
    return [int(v) for v in reply]


def dated_command(tag: str) -> Sequence[Any]:
    """One ID of a dated tag, as a number: `IDMINT.NEXT` (a dated tag's IDs are never kept)."""
    return ("IDMINT.NEXT", tag, "FORMAT", "INTEGER")


def parse_id(reply: Any) -> int:
    """The ID of `IDMINT.NEXT tag FORMAT INTEGER`."""
    if isinstance(reply, bool) or not isinstance(reply, int) or reply < 1:
        raise BadReply(f"IDMINT.NEXT answered {reply!r}, expected an ID")
    return reply


def range_command(tag: str, count: int, above: int) -> Sequence[Any]:
    if above > 0:
        return ("IDMINT.RANGE", tag, count, "ABOVE", above)
    return ("IDMINT.RANGE", tag, count)


class Sizer:
    """How many IDs the next range of a tag asks for: enough to last `target_lifetime` at the
    rate seen since the previous request (smoothed), within `min_step..=max_step`."""

    __slots__ = ("_settings", "_at", "_handed", "rate")

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._at: Optional[float] = None
        self._handed = 0
        self.rate: Optional[float] = None

    def size(self, handed: int, now: float, cap: int) -> int:
        s = self._settings
        if self._at is not None and now > self._at:
            seen = (handed - self._handed) / (now - self._at)
            self.rate = seen if self.rate is None else 0.5 * self.rate + 0.5 * seen
        self._at = now
        self._handed = handed
        if self.rate is None:
            size = s.min_step
        else:
            size = int(self.rate * s.target_lifetime)
            size = max(s.min_step, min(size, s.max_step))
        return max(1, min(size, cap))


class Stats:
    """Counters of one client, read with `stats()`."""

    _NAMES = (
        "ranges_fetched",
        "ids_fetched",
        "refills",
        "refill_waits",
        "refill_failures",
        "unavailable",
        "failovers",
        "node_attempts",
        "given_back_ranges",
        "given_back_ids",
        "giveback_refused",
        "snowflake_batches",
        "snowflakes_fetched",
        "snowflakes_expired",
        "snowflakes_dropped",
    )

    def __init__(self, labels: Sequence[str]) -> None:
        self._lock = threading.Lock()
        self._counts: Dict[str, int] = {name: 0 for name in self._NAMES}
        self._node_failures: Dict[str, int] = {lab: 0 for lab in labels}

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[name] += amount

    def node_failed(self, node_label: str) -> None:
        with self._lock:
            self._node_failures[node_label] = self._node_failures.get(node_label, 0) + 1

    def snapshot(self) -> Dict[str, Any]:
        with self._lock:
            out: Dict[str, Any] = dict(self._counts)
            out["node_failures"] = dict(self._node_failures)
        return out


def now() -> float:
    return time.monotonic()


#: `last` for `take_increasing` when the nodes hand out permuted IDs: no order to keep.
UNORDERED = -1


def space_command() -> Sequence[Any]:
    """Asks a node for its ID space, before the first snowflake batch."""
    return ("IDMINT.SPACE",)


def permuted(reply: Any) -> bool:
    """Whether `IDMINT.SPACE`'s reply (a map, or its pairs in RESP2) says the node hands out
    its IDs permuted (`serve --permutation-key-file`): then no snowflake sorts by time, and
    keeping them in order would skip nearly all of them."""
    if isinstance(reply, dict):
        pairs = list(reply.items())
    elif isinstance(reply, (list, tuple)):
        pairs = list(zip(reply[::2], reply[1::2]))
    else:
        raise BadReply(f"IDMINT.SPACE answered {reply!r}, expected a map")
    for key, value in pairs:
        if key in (b"permuted", "permuted"):
            return int(value) == 1
    return False


def unknown_command(error: BaseException) -> bool:
    """Whether `error` is a node's `-ERR unknown command` (a node older than the command)."""
    code, text = reply_code(error)
    return code == "ERR" and text.startswith("unknown command")


def take_increasing(batch: List[int], i: int, n: int, out: List[int], last: int) -> Tuple[int, int, int]:
    """Moves IDs of `batch` from index `i` on to `out` until `out` holds `n`, skipping every ID
    not above `last` (the last one the client handed out: its snowflakes only increase), or
    none when `last` is `UNORDERED`. Returns the next index, the new last ID, and how many
    were skipped."""
    dropped = 0
    while i < len(batch) and len(out) < n:
        v = batch[i]
        i += 1
        if last == UNORDERED:
            out.append(v)
        elif v > last:
            out.append(v)
            last = v
        else:
            dropped += 1
    return i, last, dropped
