"""UUIDv7 and ULID generators: 128-bit IDs made in this process, with no round trip.

    from idmint_client import Uuid7Generator, UlidGenerator

    uuids = Uuid7Generator()
    uuids.new()          # Id128('0192f3a1-7c2e-7a3b-...', kind='uuidv7')
    uuids.new_uuid()     # uuid.UUID
    str(UlidGenerator().new())   # '01JBST2Z1EF8XRTKJZC1RR54X4'

The same guarantees as idmint's own generators: the IDs of one generator strictly increase in
the order it hands them out, across all its threads (a lock), so no generator gives an ID
twice. Per ID: the clock's millisecond; a 24-bit counter that starts at a random value below
2**23 on each new millisecond and counts up within it (past 2**24 - 1 it borrows the next
millisecond, at most one second ahead of the latest clock reading, then waits for the clock);
an optional node field; then random bits from the OS's CSPRNG. A clock that goes back changes
nothing: the generator counts on from where it was.
"""

from __future__ import annotations

import os
import struct
import threading
import time
import uuid
import weakref
from typing import Callable, List, Optional

from ._errors import ConfigError, IdmintError
from .id128 import MAX_NODE_BITS, TAIL_BITS, ULID, UUIDV7, Id128

#: The counter's largest value; one more borrows the next millisecond.
COUNTER_MAX = (1 << 24) - 1
#: How far ahead of its clock a generator may run on borrowed milliseconds before it waits.
MAX_LEAD_MS = 1_000
_MS_LIMIT = 1 << 48
# Random words drawn from the OS per refill: one call of os.urandom serves 512 IDs, and unpacked
# once into ints costs far less than a syscall and a bytes-to-int per ID.
_POOL_WORDS = 512
_UNPACK = struct.Struct(f">{_POOL_WORDS}Q").unpack
_of = Id128._of
# A UUIDv7's version (7) and variant (0b10) bits.
_V7_MARKS = 0x7 << 76 | 0b10 << 62


_time_ns = time.time_ns


def _clock_ms() -> int:
    return _time_ns() // 1_000_000


class _Generator128:
    """What UUIDv7 and ULID generators share: the clock, the counter, the random pool, the lock."""

    _kind = ""

    def __init__(
        self,
        node: Optional[int] = None,
        node_bits: int = 0,
        *,
        clock: Optional[Callable[[], int]] = None,
        random_bytes: Optional[Callable[[int], bytes]] = None,
    ) -> None:
        """`node` (below 2**node_bits, node_bits in 0..24): a value every ID of this generator
        carries, so that generators with different nodes never give the same ID, even should
        their random bits repeat. Costs node_bits random bits per ID.

        `clock` (Unix milliseconds) and `random_bytes` (n -> n bytes) are for tests: by
        default the system clock and os.urandom.
        """
        if isinstance(node_bits, bool) or not isinstance(node_bits, int):
            raise ConfigError(f"node_bits must be an int in 0..{MAX_NODE_BITS}, not {node_bits!r}")
        if not 0 <= node_bits <= MAX_NODE_BITS:
            raise ConfigError(f"node_bits must be in 0..{MAX_NODE_BITS}, not {node_bits}")
        if node is None:
            if node_bits:
                raise ConfigError(f"node_bits={node_bits} needs a node (0..{(1 << node_bits) - 1})")
            node = 0
        elif isinstance(node, bool) or not isinstance(node, int):
            raise ConfigError(f"node must be an int, not {type(node).__name__}")
        elif node_bits == 0:
            raise ConfigError(f"node={node} needs node_bits (1..{MAX_NODE_BITS}): its width in the ID")
        elif not 0 <= node < 1 << node_bits:
            raise ConfigError(
                f"node {node} does not fit node_bits={node_bits} (0..{(1 << node_bits) - 1})"
            )
        self._node = node
        self._node_bits = node_bits
        rand_bits = TAIL_BITS[self._kind] - node_bits
        self._node_part = node << rand_bits
        self._rand_mask = (1 << rand_bits) - 1
        self._clock = clock or _clock_ms
        self._random_bytes = random_bytes or os.urandom
        self._lock = threading.Lock()
        # The last ID's millisecond and counter: the next ID is above them.
        self._ms = -1
        self._counter = 0
        # The latest clock reading that started a millisecond: the lead is measured from it.
        self._clock_high = -1
        self._words: tuple = ()
        self._word_at = _POOL_WORDS  # empty: the first ID fills it
        _register(self)

    @property
    def node(self) -> Optional[int]:
        """The node field's value (None without one)."""
        return self._node if self._node_bits else None

    @property
    def node_bits(self) -> int:
        """The node field's width in bits (0: none)."""
        return self._node_bits

    def new(self) -> Id128:
        """The next ID: above every ID this generator handed out before."""
        with self._lock:
            # The system clock read inline, not through _clock_ms: a Python call costs much
            # of an ID here.
            now = _time_ns() // 1_000_000 if self._clock is _clock_ms else self._clock()
            ms, counter = self._ms, self._counter
            if now <= ms and counter < COUNTER_MAX and ms >= 0:
                # The common case, inline: the same millisecond (or a clock that went back),
                # so count on from the last ID.
                self._counter = counter = counter + 1
            else:
                ms, counter = self._advance(now)
            i = self._word_at
            if i < _POOL_WORDS:
                self._word_at = i + 1
                rand = self._words[i]
            else:
                rand = self._word()
        if self._kind is UUIDV7:  # inline: a method call would cost a third of the rest
            value = ms << 80 | _V7_MARKS | (counter >> 12) << 64 | (counter & 0xFFF) << 50
        else:
            value = ms << 80 | counter << 56
        return _of(value | self._node_part | rand & self._rand_mask, self._kind)

    def _advance(self, now: int) -> "tuple[int, int]":
        """The next (ms, counter) when `now` (the clock) starts a new millisecond or the
        counter is used up, stored. Called under the lock."""
        if now > self._ms:
            # A new millisecond: the counter starts at a random value below 2**23, so the ID
            # does not say how many came before it, and at least 2**23 IDs fit in the ms.
            if now >= _MS_LIMIT:
                raise IdmintError(f"the clock ({now} ms) is past what 48 bits of milliseconds hold")
            self._ms = self._clock_high = now
            self._counter = self._word() >> 41
        elif self._ms < 0:
            raise IdmintError(f"the clock ({now} ms) is before 1970")
        elif self._counter < COUNTER_MAX:
            # The same millisecond, or a clock that went back: count on from the last ID.
            self._counter += 1
        else:
            self._borrow(now)
        return self._ms, self._counter

    def _borrow(self, now: int) -> None:
        """The counter is used up: the next millisecond, counter 0, at most MAX_LEAD_MS ahead
        of the latest clock reading (waiting for the clock, under the lock, when further).
        Measured from the latest reading, not this one, as idmint's core does: a clock stepped
        back leaves the generator counting on, not waiting for the clock to come back."""
        ms = self._ms + 1
        if ms >= _MS_LIMIT:
            raise IdmintError("the 48 bits of milliseconds are used up")
        while ms - max(now, self._clock_high) > MAX_LEAD_MS:
            time.sleep(min(ms - now - MAX_LEAD_MS, 50) / 1000)
            now = self._clock()
        if now > self._ms:
            # The clock caught up with the last ID meanwhile: its own millisecond, a new seed.
            self._ms = self._clock_high = now
            self._counter = self._word() >> 41
        else:
            self._ms, self._counter = ms, 0

    def _word(self) -> int:
        """64 random bits from the pool, refilled from the OS when used up."""
        i = self._word_at
        if i >= _POOL_WORDS:
            self._words = _UNPACK(self._random_bytes(8 * _POOL_WORDS))
            i = 0
        self._word_at = i + 1
        return self._words[i]

    def _after_fork_in_child(self) -> None:
        # The child must not hand out the random words the parent holds too: drop them, and
        # the lock (held by the parent's fork hook, or by a thread the child does not have).
        self._lock = threading.Lock()
        self._words = ()
        self._word_at = _POOL_WORDS

    def __repr__(self) -> str:
        node = f"node={self._node}, node_bits={self._node_bits}" if self._node_bits else ""
        return f"{type(self).__name__}({node})"


class Uuid7Generator(_Generator128):
    """UUIDv7 (RFC 9562): version 7, RFC variant; the 24-bit counter in rand_a and the top of
    rand_b, then the node field and 50 - node_bits random bits."""

    _kind = UUIDV7

    def new_uuid(self) -> uuid.UUID:
        """The next ID as the stdlib's `uuid.UUID`."""
        return self.new().uuid


class UlidGenerator(_Generator128):
    """ULID: 48 bits of ms, the 24-bit counter, the node field, 56 - node_bits random bits."""

    _kind = ULID


# ---- fork safety ---------------------------------------------------------------------
# A forked child gets a copy of every generator. It keeps the last (ms, counter), so its IDs
# stay above what the generator gave before the fork, but it must draw its own random bits:
# the parent's pooled words would otherwise be handed out by both. os.urandom itself is fresh
# in the child.

_live: "weakref.WeakSet[_Generator128]" = weakref.WeakSet()
_live_lock = threading.Lock()
_held: List[_Generator128] = []


def _register(gen: _Generator128) -> None:
    with _live_lock:
        _live.add(gen)


def _before_fork() -> None:
    # Every generator at rest while the process is copied: none mid-update in another thread.
    _live_lock.acquire()
    _held[:] = list(_live)
    for gen in _held:
        gen._lock.acquire()


def _after_fork_in_parent() -> None:
    for gen in _held:
        gen._lock.release()
    _held.clear()
    _live_lock.release()


def _after_fork_in_child() -> None:
    global _live_lock
    for gen in _held:
        gen._after_fork_in_child()
    _held.clear()
    _live_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
