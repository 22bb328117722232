"""The asyncio client: the same as `Client`, on redis.asyncio, for one event loop."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

import redis
import redis.asyncio

from . import _core as core
from ._errors import ClientClosed, DatedTag, IdmintError, Unavailable
from .id128 import Id128
from .id128_generators import UlidGenerator, Uuid7Generator
from ._sync import _unused_tails

T = TypeVar("T")


class _Node:
    """One node and the one connection the client sends it everything on (see the sync
    client's `_Node`)."""

    def __init__(self, index: int, url: str, kwargs: Dict[str, Any]) -> None:
        self.index = index
        self.pool = redis.asyncio.ConnectionPool.from_url(url, **kwargs)
        self.conn_kwargs, self.auth = core.own_auth(
            self.pool.connection_kwargs, self.pool.connection_class
        )
        self.lock = asyncio.Lock()
        self.conn: Optional[Any] = None
        self.generation = 0

    async def call(self, *args: Any, generation: Optional[int] = None) -> Tuple[Any, int]:
        async with self.lock:
            conn = self.conn
            if generation is not None and (conn is None or generation != self.generation):
                return None, -1
            try:
                if conn is None:
                    conn = self.pool.connection_class(**self.conn_kwargs)
                    self.generation += 1
                    self.conn = conn
                    await conn.connect()
                    if self.auth is not None:
                        # The token as the first command (see the sync client's `_Node`).
                        await conn.send_command(*self.auth)
                        try:
                            core.check_auth_reply(await conn.read_response())
                        except BaseException:
                            await self._drop()
                            raise
                await conn.send_command(*args)
                return await conn.read_response(), self.generation
            except redis.exceptions.ResponseError:
                raise  # an error reply (-TRYAGAIN included): the connection stays in step
            except BaseException:
                # Failed or cancelled mid-call: the connection may be out of step.
                await self._drop()
                raise

    async def _drop(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                await conn.disconnect(nowait=True)
            except BaseException:
                pass

    async def close(self) -> None:
        async with self.lock:
            await self._drop()
        try:
            await self.pool.disconnect()
        except Exception:
            pass


class _Tag:
    """A tag's double buffer (see the sync client's `_Tag`); waiters wait on `changed`, which
    is replaced each time it is set."""

    __slots__ = (
        "name",
        "cur",
        "last",
        "trigger",
        "cur_first",
        "cur_from",
        "nxt",
        "high",
        "retired",
        "refilling",
        "task",
        "fail_seq",
        "error",
        "cause",
        "sizer",
        "changed",
        "closed",
        "dated",
    )

    def __init__(self, name: str, settings: core.Settings) -> None:
        self.name = name
        self.closed = False
        self.cur = 1
        self.last = 0
        self.trigger = core.NEVER
        self.cur_first = 1
        self.cur_from: Tuple[int, int] = (-1, -1)
        self.nxt: Optional[Tuple[int, int, int, int]] = None
        self.high = 0
        self.retired = 0
        self.refilling = False
        self.task: Optional[asyncio.Task[None]] = None
        self.fail_seq = 0
        self.error: Optional[BaseException] = None
        self.cause: Optional[BaseException] = None
        self.sizer = core.Sizer(settings)
        self.changed: Optional[asyncio.Event] = None
        self.dated = False  # a dated tag: its IDs come from a node one call at a time

    def notify(self) -> None:
        event, self.changed = self.changed, None
        if event is not None:
            event.set()


class AsyncClient:
    """The asyncio idmint client: `await client.next(tag)`, `await client.snowflake()`,
    `async with AsyncClient(...) as client`. Same arguments and behaviour as `Client`; use it
    from one event loop."""

    def __init__(
        self,
        nodes: Sequence[str],
        token: Optional[str] = None,
        *,
        target_lifetime: float = 10.0,
        min_step: int = 100,
        max_step: int = 10_000,
        refill_at: float = 0.3,
        max_wait: float = 3.0,
        socket_timeout: float = 1.0,
        connect_timeout: float = 1.0,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        probe_interval: float = 0.5,
        snowflake_max_age: float = 0.1,
        snowflake_batch: int = 64,
        connection_kwargs: Optional[Dict[str, Any]] = None,
    ) -> None:
        s = core.Settings(
            nodes=list(nodes) if not isinstance(nodes, str) else nodes,  # type: ignore[arg-type]
            token=token,
            target_lifetime=target_lifetime,
            min_step=min_step,
            max_step=max_step,
            refill_at=refill_at,
            max_wait=max_wait,
            socket_timeout=socket_timeout,
            connect_timeout=connect_timeout,
            backoff=backoff,
            max_backoff=max_backoff,
            probe_interval=probe_interval,
            snowflake_max_age=snowflake_max_age,
            snowflake_batch=snowflake_batch,
            connection_kwargs=dict(connection_kwargs or {}),
        )
        s.check()
        self._s = s
        self._stats = core.Stats([core.label(u) for u in s.nodes])
        self._nodes = core.NodeSet(s, self._stats)
        kwargs = s.pool_kwargs()
        try:
            self._conns = [_Node(i, url, kwargs) for i, url in enumerate(s.nodes)]
        except (ValueError, TypeError) as error:
            raise core.ConfigError(f"bad node URL or connection option: {error}") from error
        self._tags: Dict[str, _Tag] = {}
        self._closing = asyncio.Event()
        self._closed = False
        self._cap = s.max_step
        self._sf_lock = asyncio.Lock()
        self._sf: List[int] = []
        self._sf_i = 0
        self._sf_at = 0.0
        self._sf_last = 0  # core.UNORDERED once the nodes say they permute their IDs
        self._sf_space_known = False
        self._sf_size = min(8, s.snowflake_batch)
        # 128-bit IDs are made here, one generator of each kind per client.
        self._uuid7s = Uuid7Generator()
        self._ulids = UlidGenerator()

    # ---- segment IDs -------------------------------------------------------------------

    async def next(self, tag: str) -> int:
        """The next segment ID of `tag`, above every ID this client handed out for it."""
        t = self._tags.get(tag)
        if t is not None:
            v = t.cur
            if v <= t.last:
                t.cur = v + 1
                if v >= t.trigger:
                    self._start_refill(t)
                return v
        return await self._next_slow(tag)

    def _tag(self, tag: str) -> _Tag:
        t = self._tags.get(tag)
        if t is None:
            if not isinstance(tag, str) or not tag:
                raise core.ConfigError(f"a tag is a non-empty string, got {tag!r}")
            if self._closed:
                raise ClientClosed("the client is closed")
            t = self._tags[tag] = _Tag(tag, self._s)
        return t

    async def _next_slow(self, tag: str) -> int:
        t = self._tag(tag)
        if t.dated:
            return await self._dated_next(t)
        deadline: Optional[float] = None
        seq = t.fail_seq
        while True:
            v = t.cur
            if v <= t.last:
                t.cur = v + 1
                if v >= t.trigger:
                    self._start_refill(t)
                return v
            if self._closed:
                raise ClientClosed("the client is closed")
            if t.nxt is not None:
                self._swap(t)
                continue
            if t.fail_seq != seq and isinstance(t.error, DatedTag):
                t.dated = True
                return await self._dated_next(t)
            if t.fail_seq != seq and t.error is not None:
                raise t.error
            self._start_refill(t)
            now = core.now()
            if deadline is None:
                deadline = now + self._s.max_wait
                self._stats.add("refill_waits")
            if now >= deadline:
                self._stats.add("unavailable")
                raise Unavailable(f"no ID of tag {tag!r} within max_wait={self._s.max_wait}s", t.cause)
            if t.changed is None:
                t.changed = asyncio.Event()
            try:
                await asyncio.wait_for(t.changed.wait(), deadline - now)
            except asyncio.TimeoutError:
                pass

    async def _dated_next(self, t: _Tag) -> int:
        """See `Client._dated_next`."""
        if self._closed:
            raise ClientClosed("the client is closed")
        deadline = core.now() + self._s.max_wait

        async def one(node: _Node) -> Any:
            return (await node.call(*core.dated_command(t.name)))[0]

        return core.parse_id(await self._failover(one, deadline, t))

    def _swap(self, t: _Tag) -> None:
        assert t.nxt is not None
        first, last, node, gen = t.nxt
        t.nxt = None
        t.retired += t.last - t.cur_first + 1
        t.cur, t.last, t.cur_first, t.cur_from = first, last, first, (node, gen)
        t.trigger = first + int((last - first + 1) * self._s.refill_at)

    def _start_refill(self, t: _Tag) -> None:
        t.trigger = core.NEVER
        if t.refilling or t.nxt is not None or self._closed:
            return
        t.refilling = True
        handed = t.retired + (t.cur - t.cur_first)
        size = t.sizer.size(handed, core.now(), self._cap)
        self._stats.add("refills")
        t.task = asyncio.get_running_loop().create_task(self._refill(t, size, t.high))

    async def _refill(self, t: _Tag, size: int, above: int) -> None:
        try:
            first, last, node, gen = await self._failover(
                lambda n: self._take_range(n, t.name, size, above), None, t
            )
        except BaseException as error:
            if not isinstance(error, IdmintError):
                error = IdmintError(f"refill failed: {type(error).__name__}: {error}")
            t.error = error
            t.fail_seq += 1
            t.refilling = False
            t.notify()
            self._stats.add("refill_failures")
            return
        self._stats.add("ranges_fetched")
        self._stats.add("ids_fetched", last - first + 1)
        t.refilling = False
        if t.closed:
            # close() took the tail back already: neither handed out nor given back (a gap).
            t.notify()
            return
        t.high = last
        t.nxt = (first, last, node, gen)
        if t.cur > t.last:
            self._swap(t)
        t.notify()

    async def _take_range(
        self, node: _Node, tag: str, size: int, above: int
    ) -> Tuple[int, int, int, int]:
        reply, gen, _ = await self._counted(node, lambda n: core.range_command(tag, n, above), size)
        first, last = core.parse_range(reply, above)
        return first, last, node.index, gen

    async def _counted(
        self, node: _Node, command: Callable[[int], Sequence[Any]], count: int
    ) -> Tuple[Any, int, int]:
        count = max(1, min(count, self._cap))
        try:
            reply, gen = await node.call(*command(count))
        except redis.exceptions.ResponseError as error:
            limit = core.count_limit(error)
            if limit is None or limit < 1 or limit >= count:
                raise
            self._cap = limit
            count = limit
            reply, gen = await node.call(*command(count))
        return reply, gen, count

    # ---- failover ----------------------------------------------------------------------

    async def _pause(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._closing.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _failover(
        self, op: Callable[[_Node], Awaitable[T]], deadline: Optional[float], t: Any
    ) -> T:
        """See `Client._failover`."""
        cause: Optional[BaseException] = None
        while True:
            if self._closing.is_set():
                raise ClientClosed("the client is closed")
            now = core.now()
            if deadline is not None and now >= deadline:
                self._stats.add("unavailable")
                raise Unavailable("no node answered in time", cause)
            order, wait = self._nodes.plan(now)
            if wait > 0:
                # Every node is avoided: probe the one whose back-off ends first, after at
                # most probe_interval (then straight on, whatever its back-off says).
                if deadline is not None:
                    wait = min(wait, deadline - now)
                await self._pause(wait)
                if self._closing.is_set():
                    raise ClientClosed("the client is closed")
                if deadline is not None and core.now() >= deadline:
                    self._stats.add("unavailable")
                    raise Unavailable("no node answered in time", cause)
            auth: Optional[BaseException] = None
            for index in order:
                if self._closing.is_set():
                    raise ClientClosed("the client is closed")
                self._stats.add("node_attempts")
                try:
                    result = await op(self._conns[index])
                except asyncio.CancelledError:
                    raise
                except BaseException as error:
                    kind, typed = core.classify(error)
                    if kind == core.FATAL or kind == core.RESIZE:
                        raise (typed or IdmintError(str(error))) from error
                    cause = error
                    if t is not None:
                        t.cause = error
                    if kind == core.AUTH:
                        auth = typed  # the node answers: a refusal, not a failure
                    else:
                        self._nodes.failed(index, core.now())
                    continue
                self._nodes.worked(index)
                return result
            if auth is not None:
                raise auth

    # ---- snowflakes --------------------------------------------------------------------

    async def snowflake(self) -> int:
        """One snowflake ID, above every snowflake this client handed out."""
        return (await self.snowflakes(1))[0]

    async def snowflakes(self, n: int) -> List[int]:
        """`n` snowflake IDs (1..=10000), ascending, above every snowflake this client handed
        out; in the nodes' order when they hand out permuted IDs, which have none."""
        core.check_count(n)
        deadline = core.now() + self._s.max_wait
        async with self._sf_lock:
            if self._closed:
                raise ClientClosed("the client is closed")
            out: List[int] = []
            batch, i = self._sf, self._sf_i
            if i < len(batch):
                if core.now() - self._sf_at <= self._s.snowflake_max_age:
                    self._sf_i = self._take_snowflakes(batch, i, n, out)
                else:
                    self._stats.add("snowflakes_expired", len(batch) - i)
                    self._sf_size = max(1, self._sf_size // 2)
                    self._sf, self._sf_i = [], 0
            elif batch:
                self._sf_size = min(self._s.snowflake_batch, self._sf_size * 2)
            while len(out) < n:
                if self._closed:
                    raise ClientClosed("the client is closed")
                want = min(max(self._sf_size, n - len(out)), self._cap)
                ids, asked = await self._fetch_snowflakes(want, deadline)
                # The batch serves its caller whatever the round trip took (see `Client`).
                before = len(out)
                self._sf, self._sf_at = ids, asked
                self._sf_i = self._take_snowflakes(ids, 0, n, out)
                if len(out) == before:
                    await self._pause(core.SNOWFLAKE_PAUSE)
            return out

    def _take_snowflakes(self, batch: List[int], i: int, n: int, out: List[int]) -> int:
        """Moves IDs of `batch` from `i` on to `out` (up to `n` there), skipping those not
        above the last handed out. Returns the next index."""
        i, self._sf_last, dropped = core.take_increasing(batch, i, n, out, self._sf_last)
        if dropped:
            self._stats.add("snowflakes_dropped", dropped)
        return i

    async def _fetch_snowflakes(self, count: int, deadline: float) -> Tuple[List[int], float]:
        async def op(node: _Node) -> List[int]:
            if not self._sf_space_known:
                try:
                    if core.permuted((await node.call(*core.space_command()))[0]):
                        self._sf_last = core.UNORDERED
                except redis.exceptions.ResponseError as error:
                    if not core.unknown_command(error):
                        raise
                self._sf_space_known = True
            reply, _, asked = await self._counted(
                node, lambda n: ("IDMINT.SNOWFLAKE", "COUNT", n), count
            )
            return core.parse_ids(reply, asked)

        asked = core.now()
        ids = await self._failover(op, deadline, None)
        self._stats.add("snowflake_batches")
        self._stats.add("snowflakes_fetched", len(ids))
        return ids, asked

    # ---- 128-bit IDs, made locally -----------------------------------------------------

    def uuid7(self) -> Id128:
        """A UUIDv7, made in this process (no node is asked): above every UUIDv7 this client
        made before (`.uuid` gives the stdlib's `uuid.UUID`, `str()` the canonical text). Needs no
        node, so it works after close too, as in every idmint library. Not a coroutine: nothing to wait for."""
        return self._uuid7s.new()

    def ulid(self) -> Id128:
        """A ULID, made in this process (no node is asked): above every ULID this client made
        before (`str()` gives its 26-character text). Not a coroutine: nothing to wait for."""
        return self._ulids.new()

    # ---- the rest ----------------------------------------------------------------------

    def stats(self) -> Dict[str, Any]:
        """The client's counters (a copy)."""
        out = self._stats.snapshot()
        out["current_node"] = self._nodes.current()
        out["tags"] = len(self._tags)
        return out

    async def close(self) -> None:
        """Stops the background refills, gives the unused tails back (best effort) and closes
        the connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        tags = list(self._tags.values())
        tasks = [t.task for t in tags if t.task is not None and not t.task.done()]
        for t in tags:
            t.notify()
        if tasks:
            budget = self._s.socket_timeout + self._s.connect_timeout + 1.0
            _, pending = await asyncio.wait(tasks, timeout=budget)
            for task in pending:
                task.cancel()
        returns = []
        for t in tags:
            returns.extend((t.name, tail) for tail in _unused_tails(t))
            t.closed = True
            t.cur, t.last, t.nxt, t.trigger = 1, 0, None, core.NEVER
            t.notify()
        self._sf, self._sf_i = [], 0
        # Every tag's tail, each on the connection that took it.
        for name, tail in returns:
            await self._give_back(name, *tail)
        for node in self._conns:
            await node.close()

    aclose = close

    async def _give_back(self, tag: str, first: int, last: int, index: int, gen: int) -> None:
        try:
            reply, _ = await self._conns[index].call(
                "IDMINT.GIVEBACK", tag, first, last, generation=gen
            )
        except Exception:
            reply = None
        if reply == 1:
            self._stats.add("given_back_ranges")
            self._stats.add("given_back_ids", last - first + 1)
        else:
            self._stats.add("giveback_refused")

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<idmint_client.AsyncClient nodes={[n.label for n in self._nodes.nodes]}>"
