"""128-bit IDs, UUIDv7 and ULID, as values: their four forms and their fields.

    from idmint_client import Id128

    id = Id128.parse("0192f3a1-7c2e-7a3b-8d4e-5f60718293a4")
    id.to_ulid_string()      # '01JBST2Z1EF8XRTKJZC1RR54X4'
    id.uuid                  # UUID('0192f3a1-7c2e-7a3b-8d4e-5f60718293a4')
    id.decode().ms           # 1730664299566

The layout (the same in every idmint implementation): 48 bits of Unix milliseconds, a 24-bit
counter (split around the version and variant bits in a UUIDv7), an optional node field, then
random bits. Comparing two IDs, their bytes, or any one of their texts gives the same order.
"""

from __future__ import annotations

import datetime
import re
import uuid
from dataclasses import dataclass
from typing import Optional

from ._errors import InvalidId128

#: The two kinds of 128-bit ID.
UUIDV7 = "uuidv7"
ULID = "ulid"
KINDS = (UUIDV7, ULID)
# The names a kind is read by, in any case: idmint's server and Rust core write `uuid7`.
_KIND_NAMES = {"uuidv7": UUIDV7, "uuid7": UUIDV7, "uuid": UUIDV7, "ulid": ULID}

#: The widest node field a generator may carry, in bits.
MAX_NODE_BITS = 24
#: Bits after the counter (node field plus random): UUIDv7 gives 6 of its 56 to version and variant.
TAIL_BITS = {UUIDV7: 50, ULID: 56}

_MAX = (1 << 128) - 1
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Writing: two ULID digits per 10 bits, looked up (13 lookups beat the stdlib's base32 codec,
# which is Python code, by more than twice). Reading: Crockford's digits swapped for the ones
# int(text, 32) reads, once the text is known to hold only Crockford's digits.
_PAIRS = tuple(_CROCKFORD[i >> 5] + _CROCKFORD[i & 31] for i in range(1024))
_PAIR_SHIFTS = tuple(range(120, -1, -10))
_TO_INT32 = str.maketrans(_CROCKFORD, "0123456789abcdefghijklmnopqrstuv")
_HEX32 = re.compile(r"[0-9a-fA-F]{32}")
_CANONICAL = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
_FORMS = "a canonical UUID (36 characters, 8-4-4-4-12), 32 hex digits or a 26-character ULID"


def _kind(kind: Optional[str]) -> Optional[str]:
    """`kind` as one of KINDS (None stays None), or InvalidId128."""
    if kind is None:
        return None
    found = _KIND_NAMES.get(kind.lower()) if isinstance(kind, str) else None
    if found is None:
        raise InvalidId128(f"kind {kind!r} is not a 128-bit kind: uuidv7 (or uuid7) or ulid", "type")
    return found


def _shown(text: str) -> str:
    """The text as an error message quotes it: repr, cut short."""
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _checked_uuid(value: int) -> uuid.UUID:
    return uuid.UUID(int=value)


def _unchecked_uuid(value: int) -> uuid.UUID:
    # uuid.UUID(int=...) checks its argument at length; a value known to fit 128 bits needs
    # none of that (the stdlib builds UUIDs so itself, and 3.14 names it UUID._from_int).
    made = object.__new__(uuid.UUID)
    object.__setattr__(made, "int", value)
    object.__setattr__(made, "is_safe", uuid.SafeUUID.unknown)
    return made


def _uuid_builder():
    """The fast way where this Python's UUID is built as expected, else the documented one."""
    probe = (1 << 127) | 12345
    try:
        fast = _unchecked_uuid(probe)
        if fast == _checked_uuid(probe) and str(fast) == str(_checked_uuid(probe)):
            return _unchecked_uuid
    except (AttributeError, TypeError):
        pass
    return _checked_uuid


_stdlib_uuid = _uuid_builder()


@dataclass(frozen=True)
class Decoded:
    """The fields of one 128-bit ID (see `Id128.decode`)."""

    #: `uuidv7` or `ulid`.
    kind: str
    #: Unix milliseconds (48 bits).
    ms: int
    #: `ms` as an aware UTC datetime (its `isoformat()` is RFC 3339); None after the year 9999.
    time: Optional[datetime.datetime]
    #: The 24-bit counter.
    counter: int
    #: The node field, when `node_bits` was given (else None).
    node: Optional[int]
    #: The UUID version bits (7 for a UUIDv7); None for a ULID.
    version: Optional[int]
    #: The UUID variant bits (0b10, RFC 9562's, for a UUIDv7); None for a ULID.
    variant: Optional[int]


class Id128:
    """One 128-bit ID: a UUIDv7 or a ULID (its `kind`, which picks what `str()` writes).

    Equal, ordered and hashed by value alone, so IDs sort in the order their generator issued
    them. Immutable. `Id128(value, kind)` wraps an int in 0..2**128-1; `Id128.parse(text)`
    reads any text form, `Id128.from_bytes(data)` the 16 bytes.
    """

    __slots__ = ("_value", "_kind")

    def __init__(self, value: int, kind: Optional[str] = None) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidId128(f"a 128-bit ID is an int, not {type(value).__name__}", "type")
        if not 0 <= value <= _MAX:
            raise InvalidId128(f"{value} does not fit 128 bits", "overflow")
        self._value = value
        self._kind = _kind(kind)

    @classmethod
    def _of(cls, value: int, kind: Optional[str]) -> "Id128":
        """An ID from fields known good (the generators' fast path: no checks)."""
        made = object.__new__(cls)
        made._value = value
        made._kind = kind
        return made

    @classmethod
    def from_fields(
        cls, kind: str, ms: int, counter: int, random: int, node: int = 0, node_bits: int = 0
    ) -> "Id128":
        """The ID with these fields, by the layout every idmint implementation shares. Handy
        for the bounds of a time range: `from_fields("uuidv7", ms, 0, 0)` is below every
        UUIDv7 of millisecond `ms`. `random` fills the bits after the node field (50 -
        node_bits of a UUIDv7, 56 - node_bits of a ULID). Raises `InvalidId128` for a field
        that does not fit."""
        kind = _kind(kind)
        if kind is None:
            raise InvalidId128("from_fields needs a kind: uuidv7 or ulid", "type")
        fields = (
            ("ms", ms), ("counter", counter), ("random", random), ("node", node), ("node_bits", node_bits)
        )
        for name, value in fields:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidId128(f"{name} must be a non-negative int, not {value!r}", "type")
        if node_bits > MAX_NODE_BITS:
            raise InvalidId128(f"node_bits must be in 0..{MAX_NODE_BITS}, not {node_bits}", "overflow")
        rand_bits = TAIL_BITS[kind] - node_bits
        widths = (
            ("ms", ms, 48), ("counter", counter, 24), ("node", node, node_bits), ("random", random, rand_bits)
        )
        for name, value, bits in widths:
            if value >> bits:
                raise InvalidId128(f"{name} {value} does not fit its {bits} bits", "overflow")
        if kind == UUIDV7:
            value = ms << 80 | 0x7 << 76 | (counter >> 12) << 64 | 0b10 << 62 | (counter & 0xFFF) << 50
        else:
            value = ms << 80 | counter << 56
        return cls._of(value | node << rand_bits | random, kind)

    # ---- reading ----------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str, kind: Optional[str] = None) -> "Id128":
        """Reads a canonical UUID (36 characters), 32 hex digits or a 26-character ULID, in
        either case. Raises `InvalidId128` saying what is wrong.

        With `kind="uuidv7"` (or `uuid7`, as idmint's server names it) the ID must carry
        version 7 and the RFC variant; with `kind="ulid"` any value is a ULID. Without
        `kind`, ULID text reads as a ULID, other text as a UUIDv7 when it has that version and
        variant, else with no kind (`str()` then writes the canonical UUID form).
        """
        if not isinstance(text, str):
            raise InvalidId128(
                f"Id128.parse reads text, not {type(text).__name__} (16 bytes: Id128.from_bytes)",
                "type",
            )
        kind = _kind(kind)
        n = len(text)
        if n == 36:
            if not _CANONICAL.fullmatch(text):
                # Say which rule: the dashes, or a character that is not a hex digit.
                if any(text[i] != "-" for i in (8, 13, 18, 23)) or text.count("-") != 4:
                    raise InvalidId128(
                        f"{_shown(text)} is not a canonical UUID: dashes belong at 9, 14, 19 and 24",
                        "dashes",
                    )
                raise InvalidId128(
                    f"{_shown(text)} is not a canonical UUID: not hex digits", "character"
                )
            value = int(text.replace("-", ""), 16)
            found = None
        elif n == 32:
            if not _HEX32.fullmatch(text):
                raise InvalidId128(f"{_shown(text)} is not 32 hex digits", "character")
            value = int(text, 16)
            found = None
        elif n == 26:
            upper = text.upper()
            if not _ULID.fullmatch(upper):
                raise InvalidId128(
                    f"{_shown(text)} is not a ULID: Crockford base32 digits only "
                    f"({_CROCKFORD}, no I, L, O or U)",
                    "character",
                )
            if upper[0] > "7":
                raise InvalidId128(
                    f"{_shown(text)} is not a ULID: it starts above 7, beyond 128 bits", "overflow"
                )
            value = int(upper.translate(_TO_INT32), 32)
            found = ULID
        else:
            raise InvalidId128(
                f"{_shown(text)} ({n} characters) is not a 128-bit ID: expected {_FORMS}", "length"
            )
        return cls._read(value, kind, found, text)

    @classmethod
    def from_bytes(cls, data: bytes, kind: Optional[str] = None) -> "Id128":
        """Reads the 16 bytes, big-endian (as `to_bytes` writes them); `kind` as in `parse`."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidId128(f"Id128.from_bytes reads bytes, not {type(data).__name__}", "type")
        if len(data) != 16:
            raise InvalidId128(f"a 128-bit ID is 16 bytes, not {len(data)}", "length")
        kind = _kind(kind)
        return cls._read(int.from_bytes(data, "big"), kind, None, bytes(data).hex())

    @classmethod
    def _read(cls, value: int, kind: Optional[str], found: Optional[str], text: str) -> "Id128":
        is_v7 = (value >> 76) & 0xF == 7 and (value >> 62) & 0b11 == 0b10
        if kind == UUIDV7 and not is_v7:
            raise InvalidId128(
                f"{_shown(text)} is not a UUIDv7: version {(value >> 76) & 0xF}, "
                f"variant {(value >> 62) & 0b11:02b} (a UUIDv7 has version 7, variant 10)",
                "version",
            )
        if kind is None:
            kind = found or (UUIDV7 if is_v7 else None)
        return cls._of(value, kind)

    # ---- writing ----------------------------------------------------------------------

    @property
    def kind(self) -> Optional[str]:
        """`uuidv7`, `ulid`, or None (parsed from a UUID or hex text that is not a UUIDv7)."""
        return self._kind

    @property
    def int(self) -> int:
        """The 128-bit value."""
        return self._value

    @property
    def uuid(self) -> uuid.UUID:
        """As the stdlib's `uuid.UUID` (a UUIDv7 reads there as version 7, variant RFC_4122)."""
        return _stdlib_uuid(self._value)

    def to_uuid_string(self) -> str:
        """The canonical 8-4-4-4-12 form, lowercase."""
        h = f"{self._value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def to_ulid_string(self) -> str:
        """The 26-character ULID form: Crockford base32, uppercase."""
        v = self._value
        return "".join([_PAIRS[(v >> shift) & 1023] for shift in _PAIR_SHIFTS])

    def to_hex(self) -> str:
        """32 lowercase hex digits."""
        return f"{self._value:032x}"

    def to_bytes(self) -> bytes:
        """The 16 bytes, big-endian: they sort as the IDs do."""
        return self._value.to_bytes(16, "big")

    def __bytes__(self) -> bytes:
        return self._value.to_bytes(16, "big")

    def __int__(self) -> int:
        return self._value

    def __str__(self) -> str:
        """The kind's own form: the ULID text for a ULID, else the canonical UUID."""
        return self.to_ulid_string() if self._kind == ULID else self.to_uuid_string()

    def __repr__(self) -> str:
        return f"Id128({str(self)!r}, kind={self._kind!r})"

    def decode(self, node_bits: Optional[int] = None, kind: Optional[str] = None) -> Decoded:
        """The ID's fields, read by the layout of `kind` (default: its own kind; for an ID of
        no kind, a UUIDv7 when its version and variant bits say so, else a ULID, as idmint's
        server reads it). The node field is read only when `node_bits` (0..24, as the
        generator had it) is given: the bits themselves do not say how wide it is."""
        v = self._value
        kind = _kind(kind) or self._kind
        if kind is None:
            # As idmint's server reads an ID of no stated kind.
            kind = UUIDV7 if (v >> 76) & 0xF == 7 and (v >> 62) & 0b11 == 0b10 else ULID
        ms = v >> 80
        if kind == UUIDV7:
            counter = ((v >> 64) & 0xFFF) << 12 | (v >> 50) & 0xFFF
            version, variant = (v >> 76) & 0xF, (v >> 62) & 0b11
        else:
            counter = (v >> 56) & 0xFFFFFF
            version = variant = None
        node = None
        if node_bits is not None:
            if (
                isinstance(node_bits, bool)
                or not isinstance(node_bits, int)
                or not 0 <= node_bits <= MAX_NODE_BITS
            ):
                raise InvalidId128(
                    f"node_bits must be an int in 0..{MAX_NODE_BITS}, not {node_bits!r}", "type"
                )
            node = (v >> (TAIL_BITS[kind] - node_bits)) & ((1 << node_bits) - 1)
        try:
            when: Optional[datetime.datetime] = _EPOCH + datetime.timedelta(milliseconds=ms)
        except OverflowError:
            when = None  # after the year 9999, which datetime cannot hold
        return Decoded(kind, ms, when, counter, node, version, variant)

    # ---- comparing: by value alone ----------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return self._value == other._value if isinstance(other, Id128) else NotImplemented

    def __ne__(self, other: object) -> bool:
        return self._value != other._value if isinstance(other, Id128) else NotImplemented

    def __lt__(self, other: "Id128") -> bool:
        return self._value < other._value if isinstance(other, Id128) else NotImplemented

    def __le__(self, other: "Id128") -> bool:
        return self._value <= other._value if isinstance(other, Id128) else NotImplemented

    def __gt__(self, other: "Id128") -> bool:
        return self._value > other._value if isinstance(other, Id128) else NotImplemented

    def __ge__(self, other: "Id128") -> bool:
        return self._value >= other._value if isinstance(other, Id128) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._value)
