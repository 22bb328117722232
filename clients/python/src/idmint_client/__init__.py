"""idmint_client: the Python client of the idmint ID service.

    from idmint_client import Client

    with Client(["redis://10.0.0.1:6380", "redis://10.0.0.2:6380"], token="...") as ids:
        order_id = ids.next("orders")      # segment ID, from memory
        event_id = ids.snowflake()         # time-ordered 64-bit ID
        row_id = ids.uuid7()               # a UUIDv7, made here: no round trip

`AsyncClient` is the same for asyncio. `IdForm` writes IDs as text (base62, base36,
base32, padded decimal, with a prefix) and reads them back, as the server does.
`Uuid7Generator` and `UlidGenerator` make 128-bit IDs (`Id128`) in this process, strictly
increasing per generator.
"""

from ._async import AsyncClient
from ._errors import (
    ERROR_CODES,
    AuthError,
    ClientClosed,
    ConfigError,
    DatedTag,
    IdmintError,
    InvalidId128,
    PeriodUnavailable,
    Permuted,
    TagExhausted,
    TooManyTags,
    Unavailable,
)
from ._sync import Client
from .forms import IdForm
from .id128 import Decoded, Id128
from .id128_generators import UlidGenerator, Uuid7Generator

__all__ = [
    "ERROR_CODES",
    "AsyncClient",
    "AuthError",
    "Client",
    "ClientClosed",
    "ConfigError",
    "DatedTag",
    "Decoded",
    "Id128",
    "IdForm",
    "IdmintError",
    "InvalidId128",
    "PeriodUnavailable",
    "Permuted",
    "TagExhausted",
    "TooManyTags",
    "UlidGenerator",
    "Unavailable",
    "Uuid7Generator",
]

__version__ = "0.1.0"
