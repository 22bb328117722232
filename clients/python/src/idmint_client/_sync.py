"""The thread-safe client."""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

import redis

from . import _core as core
from ._errors import ClientClosed, DatedTag, IdmintError, Unavailable
from .id128 import Id128
from .id128_generators import UlidGenerator, Uuid7Generator

T = TypeVar("T")


class _Node:
    """One node: its health (in the NodeSet) and the one connection the client sends it
    everything on, so that `IDMINT.GIVEBACK` reaches the connection that took the range.
    `generation` changes with each new connection: a range taken on an older one can no longer
    be given back."""

    def __init__(self, index: int, url: str, kwargs: Dict[str, Any]) -> None:
        self.index = index
        self.pool = redis.ConnectionPool.from_url(url, **kwargs)
        self.conn_kwargs, self.auth = core.own_auth(
            self.pool.connection_kwargs, self.pool.connection_class
        )
        self.lock = threading.Lock()
        self.conn: Optional[Any] = None
        self.generation = 0

    def call(self, *args: Any, generation: Optional[int] = None) -> Tuple[Any, int]:
        """Sends one command and reads its reply, on the node's connection (made when there is
        none). With `generation`, only on that connection (None when it is gone)."""
        with self.lock:
            conn = self.conn
            if generation is not None and (conn is None or generation != self.generation):
                return None, -1
            try:
                if conn is None:
                    conn = self.pool.connection_class(**self.conn_kwargs)
                    self.generation += 1
                    self.conn = conn
                    conn.connect()
                    if self.auth is not None:
                        # The token as the first command: its reply keeps its code (a full
                        # node's `-ERR max number of clients reached` is not a wrong token).
                        conn.send_command(*self.auth)
                        try:
                            core.check_auth_reply(conn.read_response())
                        except BaseException:
                            self._drop()  # not authenticated: of no use
                            raise
                conn.send_command(*args)
                return conn.read_response(), self.generation
            except redis.exceptions.ResponseError:
                # An error reply (-TRYAGAIN included): the connection is still in step, and
                # keeps what it may give back.
                raise
            except BaseException:
                self._drop()
                raise

    def _drop(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.disconnect()
            except Exception:
                pass

    def close(self) -> None:
        with self.lock:
            self._drop()
        try:
            self.pool.disconnect()
        except Exception:
            pass


class _Tag:
    """The double buffer of one tag: the current range `cur..=last` (IDs still to hand out),
    the next range (fetched ahead), and the refill state. Guarded by `lock`."""

    __slots__ = (
        "name",
        "lock",
        "cond",
        "cur",
        "last",
        "trigger",
        "cur_first",
        "cur_from",
        "nxt",
        "high",
        "retired",
        "refilling",
        "thread",
        "fail_seq",
        "error",
        "cause",
        "sizer",
        "closed",
        "dated",
    )

    def __init__(self, name: str, settings: core.Settings) -> None:
        self.name = name
        self.closed = False  # close() took the tail back: nothing more goes in
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.cur = 1
        self.last = 0
        self.trigger = core.NEVER
        self.cur_first = 1
        self.cur_from: Tuple[int, int] = (-1, -1)  # (node index, connection generation)
        self.nxt: Optional[Tuple[int, int, int, int]] = None  # first, last, node, generation
        self.high = 0  # the largest ID received for this tag
        self.retired = 0  # IDs of the ranges used up
        self.refilling = False
        self.thread: Optional[threading.Thread] = None
        self.fail_seq = 0
        self.error: Optional[BaseException] = None
        self.cause: Optional[BaseException] = None
        self.sizer = core.Sizer(settings)
        # The nodes refused a range (a dated tag): its IDs come from a node one call at a time.
        self.dated = False


class Client:
    """A thread-safe idmint client.

    `next(tag)` hands out segment IDs from a double buffer kept in memory (a lock and an
    integer increment per call); ranges are fetched from the nodes with `IDMINT.RANGE`, in a
    background thread once `refill_at` of the current range is used. Every ID a client hands
    out for a tag is above the previous one. `snowflake()` hands out snowflake IDs from small
    batches no older than `snowflake_max_age`.

    Arguments:
        nodes: `redis://` or `rediss://` URLs of the nodes, tried in turn.
        token: the token sent with AUTH (None: none).
        target_lifetime: seconds a range should last at the rate seen (sets its size).
        min_step, max_step: bounds of a range's size.
        refill_at: fraction of the current range used when the next one is fetched.
        max_wait: seconds a call waits for IDs when the buffers are empty before `Unavailable`.
        socket_timeout, connect_timeout: seconds, for every node call.
        backoff, max_backoff: how long a failed node is avoided (doubling while it fails).
        probe_interval: when every node is avoided, how often one is tried anyway.
        snowflake_max_age: seconds after which an unused fetched snowflake is dropped.
        snowflake_batch: the most snowflakes fetched at once (fewer while demand is low).
        connection_kwargs: more keyword arguments for redis-py's connections (e.g. TLS files).
    """

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
        self._lock = threading.Lock()
        self._tags: Dict[str, _Tag] = {}
        self._closing = threading.Event()
        self._closed = False
        self._cap = s.max_step  # lowered to the node's --max-count when it refuses more
        # Snowflakes: a batch, the next index in it, when it was asked for, the last handed out.
        self._sf_lock = threading.Lock()
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

    def next(self, tag: str) -> int:
        """The next segment ID of `tag`, above every ID this client handed out for it."""
        t = self._tags.get(tag)
        if t is not None:
            with t.lock:
                v = t.cur
                if v <= t.last:
                    t.cur = v + 1
                    if v >= t.trigger:
                        self._start_refill(t)
                    return v
        return self._next_slow(tag)

    def _tag(self, tag: str) -> _Tag:
        t = self._tags.get(tag)
        if t is None:
            if not isinstance(tag, str) or not tag:
                raise core.ConfigError(f"a tag is a non-empty string, got {tag!r}")
            with self._lock:
                t = self._tags.get(tag)
                if t is None:
                    # Under the lock close() sets `_closed` with: a buffer is either in close's
                    # snapshot or never made.
                    if self._closed:
                        raise ClientClosed("the client is closed")
                    t = _Tag(tag, self._s)
                    self._tags[tag] = t
        return t

    def _next_slow(self, tag: str) -> int:
        t = self._tag(tag)
        if t.dated:
            return self._dated_next(t)
        deadline: Optional[float] = None
        with t.cond:
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
                    break
                if t.fail_seq != seq and t.error is not None:
                    raise t.error
                self._start_refill(t)
                now = core.now()
                if deadline is None:
                    deadline = now + self._s.max_wait
                    self._stats.add("refill_waits")
                if now >= deadline:
                    self._stats.add("unavailable")
                    raise Unavailable(
                        f"no ID of tag {tag!r} within max_wait={self._s.max_wait}s", t.cause
                    )
                t.cond.wait(deadline - now)
        return self._dated_next(t)

    def _dated_next(self, t: _Tag) -> int:
        """One ID of a dated tag, from the first node that answers within max_wait: a range
        kept here would outlive its period, so none is."""
        if self._closed:
            raise ClientClosed("the client is closed")
        deadline = core.now() + self._s.max_wait
        reply = self._failover(lambda n: n.call(*core.dated_command(t.name))[0], deadline, t)
        return core.parse_id(reply)

    def _swap(self, t: _Tag) -> None:
        """Makes the next range the current one (the current one is used up). Under t.lock."""
        assert t.nxt is not None
        first, last, node, gen = t.nxt
        t.nxt = None
        t.retired += t.last - t.cur_first + 1
        t.cur, t.last, t.cur_first, t.cur_from = first, last, first, (node, gen)
        t.trigger = first + int((last - first + 1) * self._s.refill_at)

    def _start_refill(self, t: _Tag) -> None:
        """Fetches the next range in the background, unless it is there or on its way. Under
        t.lock."""
        t.trigger = core.NEVER
        if t.refilling or t.nxt is not None or self._closed:
            return
        t.refilling = True
        handed = t.retired + (t.cur - t.cur_first)
        size = t.sizer.size(handed, core.now(), self._cap)
        thread = threading.Thread(
            target=self._refill, args=(t, size, t.high), name=f"idmint-refill-{t.name}", daemon=True
        )
        t.thread = thread
        self._stats.add("refills")
        thread.start()

    def _refill(self, t: _Tag, size: int, above: int) -> None:
        try:
            first, last, node, gen = self._failover(
                lambda n: self._take_range(n, t.name, size, above), None, t
            )
        except BaseException as error:
            if not isinstance(error, IdmintError):
                error = IdmintError(f"refill failed: {type(error).__name__}: {error}")
            with t.cond:
                t.error = error
                t.fail_seq += 1
                t.refilling = False
                t.cond.notify_all()
            self._stats.add("refill_failures")
            return
        self._stats.add("ranges_fetched")
        self._stats.add("ids_fetched", last - first + 1)
        with t.cond:
            t.refilling = False
            if t.closed:
                # close() has taken the buffer's tail back: a range that comes after it is
                # neither handed out nor given back (a gap, never a duplicate).
                t.cond.notify_all()
                return
            t.high = last
            t.nxt = (first, last, node, gen)
            if t.cur > t.last:
                self._swap(t)
            t.cond.notify_all()

    def _take_range(self, node: _Node, tag: str, size: int, above: int) -> Tuple[int, int, int, int]:
        reply, gen, _ = self._counted(node, lambda n: core.range_command(tag, n, above), size)
        first, last = core.parse_range(reply, above)
        return first, last, node.index, gen

    def _counted(
        self, node: _Node, command: Callable[[int], Sequence[Any]], count: int
    ) -> Tuple[Any, int, int]:
        """Sends a command that asks for `count` IDs, asking again for fewer when the node's
        `--max-count` is lower (remembered for the next calls)."""
        count = max(1, min(count, self._cap))
        try:
            reply, gen = node.call(*command(count))
        except redis.exceptions.ResponseError as error:
            limit = core.count_limit(error)
            if limit is None or limit < 1 or limit >= count:
                raise
            self._cap = limit
            count = limit
            reply, gen = node.call(*command(count))
        return reply, gen, count

    # ---- failover ----------------------------------------------------------------------

    def _failover(self, op: Callable[[_Node], T], deadline: Optional[float], t: Any) -> T:
        """Runs `op` on the nodes in turn until one answers. Raises the typed error of a fatal
        answer at once; AuthError when the nodes that answered all refused the token;
        Unavailable past `deadline` (None: until the client is closed). `t.cause` (when `t` is
        given) keeps the last failure."""
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
                self._closing.wait(wait)
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
                    result = op(self._conns[index])
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

    def snowflake(self) -> int:
        """One snowflake ID, above every snowflake this client handed out."""
        return self.snowflakes(1)[0]

    def snowflakes(self, n: int) -> List[int]:
        """`n` snowflake IDs (1..=10000), ascending, above every snowflake this client handed
        out; in the nodes' order when they hand out permuted IDs, which have none."""
        core.check_count(n)
        deadline = core.now() + self._s.max_wait
        with self._sf_lock:
            if self._closed:
                raise ClientClosed("the client is closed")
            out: List[int] = []
            batch, i = self._sf, self._sf_i
            if i < len(batch):
                if core.now() - self._sf_at <= self._s.snowflake_max_age:
                    self._sf_i = self._take_snowflakes(batch, i, n, out)
                else:
                    # Leftovers too old to be handed out: drop them, ask for fewer next time.
                    self._stats.add("snowflakes_expired", len(batch) - i)
                    self._sf_size = max(1, self._sf_size // 2)
                    self._sf, self._sf_i = [], 0
            elif batch:
                # Used up in time: ask for more next time.
                self._sf_size = min(self._s.snowflake_batch, self._sf_size * 2)
            while len(out) < n:
                if self._closed:
                    raise ClientClosed("the client is closed")
                want = min(max(self._sf_size, n - len(out)), self._cap)
                ids, asked = self._fetch_snowflakes(want, deadline)
                # The batch serves its caller whatever the round trip took: the age bound is
                # for leftovers only (else a round trip above snowflake_max_age starves).
                before = len(out)
                self._sf, self._sf_at = ids, asked
                self._sf_i = self._take_snowflakes(ids, 0, n, out)
                if len(out) == before:
                    # Nothing above the last one handed out (a node whose clock is behind):
                    # not straight back to the nodes.
                    self._closing.wait(core.SNOWFLAKE_PAUSE)
            return out

    def _take_snowflakes(self, batch: List[int], i: int, n: int, out: List[int]) -> int:
        """Moves IDs of `batch` from `i` on to `out` (up to `n` there), skipping those not
        above the last handed out. Returns the next index. Under _sf_lock."""
        i, self._sf_last, dropped = core.take_increasing(batch, i, n, out, self._sf_last)
        if dropped:
            self._stats.add("snowflakes_dropped", dropped)
        return i

    def _fetch_snowflakes(self, count: int, deadline: float) -> Tuple[List[int], float]:
        def op(node: _Node) -> List[int]:
            if not self._sf_space_known:
                try:
                    if core.permuted(node.call(*core.space_command())[0]):
                        self._sf_last = core.UNORDERED
                except redis.exceptions.ResponseError as error:
                    if not core.unknown_command(error):
                        raise
                self._sf_space_known = True
            reply, _, asked = self._counted(node, lambda n: ("IDMINT.SNOWFLAKE", "COUNT", n), count)
            return core.parse_ids(reply, asked)

        asked = core.now()
        ids = self._failover(op, deadline, None)
        self._stats.add("snowflake_batches")
        self._stats.add("snowflakes_fetched", len(ids))
        return ids, asked

    # ---- 128-bit IDs, made locally -----------------------------------------------------

    def uuid7(self) -> Id128:
        """A UUIDv7, made in this process (no node is asked): above every UUIDv7 this client
        made before (`.uuid` gives the stdlib's `uuid.UUID`, `str()` the canonical text). Needs no
        node, so it works after close too, as in every idmint library."""
        return self._uuid7s.new()

    def ulid(self) -> Id128:
        """A ULID, made in this process (no node is asked): above every ULID this client made
        before (`str()` gives its 26-character text)."""
        return self._ulids.new()

    # ---- the rest ----------------------------------------------------------------------

    def stats(self) -> Dict[str, Any]:
        """The client's counters (a copy)."""
        out = self._stats.snapshot()
        out["current_node"] = self._nodes.current()
        out["tags"] = len(self._tags)
        return out

    def close(self) -> None:
        """Stops the background refills, gives the unused tails of the ranges back
        (`IDMINT.GIVEBACK`, best effort) and closes the connections. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            # Taken under the lock: a tag made after this is refused (see `_tag`).
            tags = list(self._tags.values())
        self._closing.set()
        threads = []
        for t in tags:
            with t.cond:
                t.cond.notify_all()
                if t.thread is not None:
                    threads.append(t.thread)
        budget = self._s.socket_timeout + self._s.connect_timeout + 1.0
        for thread in threads:
            thread.join(budget)
        returns = []
        for t in tags:
            with t.cond:
                returns.extend((t.name, tail) for tail in _unused_tails(t))
                t.closed = True
                t.cur, t.last, t.nxt, t.trigger = 1, 0, None, core.NEVER
                t.cond.notify_all()
        with self._sf_lock:
            self._sf, self._sf_i = [], 0
        # Every tag's tail, each on the connection that took it (a node remembers the last
        # runs of a connection's last 8 tags).
        for name, tail in returns:
            self._give_back(name, *tail)
        for node in self._conns:
            node.close()

    def _give_back(self, tag: str, first: int, last: int, index: int, gen: int) -> None:
        try:
            reply, _ = self._conns[index].call("IDMINT.GIVEBACK", tag, first, last, generation=gen)
        except Exception:
            reply = None
        if reply == 1:
            self._stats.add("given_back_ranges")
            self._stats.add("given_back_ids", last - first + 1)
        else:
            self._stats.add("giveback_refused")

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<idmint_client.Client nodes={[n.label for n in self._nodes.nodes]}>"


def _unused_tails(t: Any) -> List[Tuple[int, int, int, int]]:
    """What of a tag's buffers can go back, as (first, last, node, generation): the unused IDs
    at the end of the last runs each connection took of the tag. The next range, joined to the
    current one's rest when they are contiguous from the same connection; else each on its own
    (the current range's rest only when taken on another connection than the next range: on the
    same one the next range came after it)."""
    rest = (t.cur, t.last) if t.cur <= t.last and t.cur_from[0] >= 0 else None
    cur_node, cur_gen = t.cur_from
    if t.nxt is None:
        return [] if rest is None else [(rest[0], rest[1], cur_node, cur_gen)]
    first, last, node, gen = t.nxt
    if rest is None:
        return [(first, last, node, gen)]
    if (cur_node, cur_gen) == (node, gen):
        if rest[1] + 1 == first:
            return [(rest[0], last, node, gen)]
        return [(first, last, node, gen)]
    return [(first, last, node, gen), (rest[0], rest[1], cur_node, cur_gen)]
