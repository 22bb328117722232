"""The Python runner of the clients' conformance suite (`clients/conformance`): one test per
scenario of `scenarios.json`, each played with this package's `Client`, the conductor starting
and killing the nodes. Run through the suite, which starts the conductor:

    clients/conformance/run python
"""

import json
import os
import time
import unittest
import urllib.error
import urllib.request
from typing import Any, Dict, List

import idmint_client as ic

URL = os.environ.get("IDMINT_CONFORMANCE_URL", "")

#: The steps the conductor plays; the runner sends them to it as they are.
CONDUCTOR_STEPS = {"kill", "stop", "start", "restart", "create_tag"}


def conductor(method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{URL}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as e:
        raise AssertionError(f"conductor {path}: {json.load(e).get('error')}") from None


def category(error: BaseException) -> str:
    """How the scenarios name an error of this package."""
    for kind, name in (
        (ic.Unavailable, "unavailable"),
        (ic.ClientClosed, "closed"),
        (ic.AuthError, "auth"),
        (ic.TagExhausted, "tag_exhausted"),
        (ic.PeriodUnavailable, "period_unavailable"),
        (ic.Permuted, "permuted"),
        (ic.DatedTag, "dated"),
        (ic.ConfigError, "config"),
    ):
        if isinstance(error, kind):
            return name
    return f"other ({type(error).__name__}: {error})"


def client(setup: Dict[str, Any], step: Dict[str, Any]) -> ic.Client:
    config = step.get("config", {})
    settings: Dict[str, Any] = {}
    for key, name in (("min_step", "min_step"), ("max_step", "max_step"),
                      ("snowflake_batch", "snowflake_batch"), ("prefetch_at", "refill_at")):
        if key in config:
            settings[name] = config[key]
    for key, names in (
        ("target_lifetime_ms", ["target_lifetime"]),
        ("max_wait_ms", ["max_wait"]),
        ("call_timeout_ms", ["socket_timeout", "connect_timeout"]),
        ("backoff_ms", ["backoff"]),
        ("max_backoff_ms", ["max_backoff"]),
        ("snowflake_max_age_ms", ["snowflake_max_age"]),
    ):
        for name in names:
            if key in config:
                settings[name] = config[key] / 1000
    if step.get("ca"):
        # Trust the CA the conductor made for its TLS nodes.
        settings["connection_kwargs"] = {"ssl_ca_data": setup["ca_pem"]}
    nodes = [setup["nodes"][i] for i in step["nodes"]]
    token = setup["tokens"][step["token"]] if "token" in step else None
    return ic.Client(nodes, token, **settings)


class Play:
    """One scenario's clients and the lists of IDs they took."""

    def __init__(self, setup: Dict[str, Any]) -> None:
        self.setup = setup
        self.clients: Dict[str, ic.Client] = {}
        self.lists: Dict[str, List[int]] = {}

    def call(self, step: Dict[str, Any]) -> List[int]:
        c = self.clients[step["client"]]
        kind = step["kind"]
        if kind == "segment":
            return [c.next(step["tag"])]
        if kind == "snowflakes":
            return c.snowflakes(step["batch"])
        return [c.snowflake()]

    def joined(self, names: List[str]) -> List[int]:
        return [id for name in names for id in self.lists[name]]

    def step(self, step: Dict[str, Any]) -> None:
        op = step["op"]
        if op == "client":
            self.clients[step["name"]] = client(self.setup, step)
        elif op == "take":
            taken: List[int] = []
            while len(taken) < step["count"]:
                try:
                    taken += self.call(step)
                except ic.IdmintError as e:
                    raise AssertionError(f"the call after {len(taken)} IDs failed: {e!r}") from e
                if step.get("sleep_ms"):
                    time.sleep(step["sleep_ms"] / 1000)
            self.lists.setdefault(step["into"], []).extend(taken)
        elif op == "fail":
            started = time.monotonic()
            try:
                ids = self.call(step)
            except ic.IdmintError as e:
                got = category(e)
                if got != step["error"]:
                    raise AssertionError(f"expected {step['error']}, got {got}: {e}") from e
            else:
                raise AssertionError(f"expected {step['error']}, got IDs {ids}")
            took = time.monotonic() - started
            if "within_ms" in step and took * 1000 > step["within_ms"]:
                raise AssertionError(f"{step['error']} came after {took:.2f} s, not within "
                                     f"{step['within_ms']} ms")
        elif op == "close":
            self.clients[step["client"]].close()
        elif op == "sleep":
            time.sleep(step["ms"] / 1000)
        elif op == "check":
            self.check(step)
        else:
            raise AssertionError(f"unknown step op {op!r}")

    def check(self, step: Dict[str, Any]) -> None:
        if "unique" in step:
            ids = self.joined(step["unique"])
            assert len(set(ids)) == len(ids), f"an ID handed out twice in {step['unique']}"
        if "increasing" in step:
            ids = self.joined(step["increasing"])
            for a, b in zip(ids, ids[1:]):
                assert a < b, f"{step['increasing']} not increasing: {a} then {b}"
        if "count" in step:
            got = len(self.lists[step["count"]["list"]])
            assert got == step["count"]["is"], f"{step['count']['list']} holds {got} IDs"
        if "follows" in step:
            ids, after = self.lists[step["follows"]["list"]], self.lists[step["follows"]["after"]]
            assert ids and after and ids[0] == after[-1] + 1, \
                f"{step['follows']['list']} starts at {ids[:1]}, not right after {after[-1:]}"
        if "dated" in step:
            check_dated(self.lists[step["dated"]["list"]], step["dated"]["digits"],
                        step["dated"]["days"])


def check_dated(ids: List[int], digits: int, days: int) -> None:
    scale = 10 ** digits
    dates: List[int] = []
    last = None
    for id in ids:
        date, counter = divmod(id, scale)
        year, month, day = date // 10_000, date // 100 % 100, date % 100
        assert 1970 <= year <= 9999 and 1 <= month <= 12 and 1 <= day <= 31, f"{id}: no date"
        assert counter >= 1, f"{id}: counter 0"
        if last is not None:
            assert date >= last[0], f"{id}: date went back from {last[0]}"
            assert date != last[0] or counter > last[1], f"{id}: counter did not increase"
        if last is None or last[0] != date:
            dates.append(date)
        last = (date, counter)
    assert len(dates) == days, f"{len(dates)} dates {dates}, not {days}"


def play(scenario: Dict[str, Any]) -> None:
    setup = conductor("POST", "/start", {"scenario": scenario["name"]})
    game = Play(setup)
    try:
        for i, step in enumerate(scenario["steps"], 1):
            try:
                if step["op"] in CONDUCTOR_STEPS:
                    conductor("POST", "/act", step)
                else:
                    game.step(step)
            except AssertionError as e:
                raise AssertionError(f"step {i} ({json.dumps(step)}): {e}") from None
    finally:
        for c in game.clients.values():
            c.close()
        conductor("POST", "/stop", {"scenario": scenario["name"]})


class Conformance(unittest.TestCase):
    """One test method per scenario, made from the conductor's list."""


def _add_scenarios() -> None:
    if not URL:
        raise SystemExit("IDMINT_CONFORMANCE_URL: run this through clients/conformance/run python")
    for scenario in conductor("GET", "/scenarios"):
        def test(self: unittest.TestCase, scenario: Dict[str, Any] = scenario) -> None:
            play(scenario)
        test.__doc__ = scenario.get("about")
        setattr(Conformance, f"test_{scenario['name']}", test)


_add_scenarios()

if __name__ == "__main__":
    unittest.main()
