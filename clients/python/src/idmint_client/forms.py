"""IDs as text, as idmint writes them: decimal, base62, base36 and Crockford's base32 (the ULID
alphabet), with an optional prefix, padded by default to the width of the largest ID so that
the texts sort as their IDs do.

    from idmint_client.forms import IdForm

    form = IdForm("base62", prefix="ord_")
    text = form.encode(175928847299117063)   # 'ord_0Czks0tP37X'
    form.decode(text)                        # 175928847299117063

The same rules as the server's `format=` (HTTP), `FORMAT` (Redis protocol) and `idmint decode
--format`: base36 and base32 read either case, base32 also reads I and L as 1, O as 0 and skips
hyphens; base62 is case-sensitive. Text that is not an ID of the form raises ValueError.
"""

from typing import Optional

MAX_ID = (1 << 63) - 1
MAX_PREFIX = 16
MAX_WIDTH = 32

_DIGITS = {
    "decimal": "0123456789",
    "base62": "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "base36": "0123456789abcdefghijklmnopqrstuvwxyz",
    "base32": "0123456789ABCDEFGHJKMNPQRSTVWXYZ",
}
_ALIASES = {
    "dec": "decimal", "10": "decimal", "62": "base62", "36": "base36", "32": "base32",
    "crockford": "base32", "ulid": "base32",
}
_PREFIX_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _full_width(base: int) -> int:
    width, rest = 1, MAX_ID
    while rest >= base:
        rest //= base
        width += 1
    return width


class IdForm:
    """One text form: a radix (`decimal`, `base62`, `base36`, `base32`), a prefix, a width."""

    def __init__(self, radix: str, prefix: str = "", width: Optional[int] = None) -> None:
        name = radix.strip().lower()
        name = _ALIASES.get(name, name)
        if name not in _DIGITS:
            raise ValueError(f"`{radix}` is not a form: decimal, base62, base36 or base32")
        if len(prefix) > MAX_PREFIX or not set(prefix) <= _PREFIX_CHARS:
            raise ValueError(f"a prefix is up to {MAX_PREFIX} characters of A-Z a-z 0-9 _ -")
        self.radix = name
        self.digits = _DIGITS[name]
        self.base = len(self.digits)
        self.prefix = prefix
        self.width = _full_width(self.base) if width is None else int(width)
        if not 0 <= self.width <= MAX_WIDTH:
            raise ValueError(f"width {width} is not between 0 and {MAX_WIDTH}")
        self._values = {c: i for i, c in enumerate(self.digits)}
        if name in ("base36", "base32"):
            for c, i in list(self._values.items()):
                self._values[c.lower()] = self._values[c.upper()] = i
        if name == "base32":
            self._values.update({"I": 1, "i": 1, "L": 1, "l": 1, "O": 0, "o": 0})

    def encode(self, id: int) -> str:
        """`id` as text in this form."""
        if not 0 <= id <= (1 << 64) - 1:
            raise ValueError(f"{id} is not a 64-bit ID")
        out = []
        while True:
            id, digit = divmod(id, self.base)
            out.append(self.digits[digit])
            if id == 0:
                break
        body = "".join(reversed(out))
        return self.prefix + "0" * max(0, self.width - len(body)) + body

    def decode(self, text: str) -> int:
        """The ID `text` holds in this form; ValueError saying why when it holds none."""
        if len(text) > len(self.prefix) + MAX_WIDTH + 16:
            raise ValueError(f"`{text[:40]}` is too long to be an ID")
        if not text.startswith(self.prefix):
            raise ValueError(f"`{text[:40]}` does not start with the prefix `{self.prefix}`")
        value, digits = 0, 0
        for i, c in enumerate(text[len(self.prefix):]):
            if self.radix == "base32" and c == "-":
                continue
            v = self._values.get(c)
            if v is None:
                raise ValueError(
                    f"`{text[:40]}`: character {len(self.prefix) + i + 1} ({c!r}) is not a "
                    f"{self.radix} digit"
                )
            value = value * self.base + v
            if value > MAX_ID:
                raise ValueError(f"`{text[:40]}` is above the largest ID, {MAX_ID}")
            digits += 1
        if digits == 0:
            raise ValueError(f"`{text[:40]}` has no {self.radix} digits")
        return value

    def __repr__(self) -> str:
        return f"IdForm({self.radix!r}, prefix={self.prefix!r}, width={self.width})"
