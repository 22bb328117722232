#!/usr/bin/env python3
"""The conformance suite's conductor: starts, kills and restarts the real `idmint serve` nodes
each scenario of `scenarios.json` needs, on behalf of the five libraries' runners.

The scenarios are data; each library's runner (JUnit, `go test`, `node --test`, unittest,
cargo test) reads them from here, plays the client steps with its own library and sends every
other step here. The nodes' life is the same for all five that way, written once.

    conductor.py --idmint PATH [--port N]   prints `url=http://127.0.0.1:PORT`, then serves
                                            until SIGTERM or SIGINT (nodes then stopped)

The API (JSON bodies; errors are 4xx/5xx with {"error": "..."}):
    GET  /scenarios            the scenarios, as in scenarios.json
    POST /start {"scenario"}   a fresh folder and store, the scenario's nodes started:
                               {"nodes": ["redis://127.0.0.1:P", ...],
                                "tokens": {"good": MINT_TOKEN, "bad": UNKNOWN_TOKEN},
                                "ca_pem": PEM (only when a node serves TLS: rediss://)}
    POST /act STEP             one of the steps below, on the running scenario
    POST /stop {"scenario"}    every node stopped, the folder removed

Steps the conductor plays: kill (SIGKILL, or `in_ms` later without waiting), stop (SIGTERM),
start (again, at the same addresses, on the same store), restart (SIGKILL then start),
create_tag (PUT /v1/tags/TAG with `settings`, by the admin token).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent

#: Leases that lapse 2 s after a node died, so a node restarted under its name waits little
#: (the integration tests' LeaseTiming::SHORT).
LEASE_FLAGS = ["--lease-ttl", "2s", "--lease-renew", "500ms", "--hwm-lead", "1500ms"]

#: How long a node may take to say it serves (a restart waits for its old lease to lapse).
START_TIMEOUT = 30.0

#: Where Debian's faketime package puts the library that fakes a process's clock.
FAKETIME_LIBS = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
]


class Refusal(Exception):
    """A request the conductor cannot carry out; the runner fails the scenario with it."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def faketime_library() -> str:
    for path in FAKETIME_LIBS:
        if os.path.exists(path):
            return path
    raise Refusal("libfaketime is not installed (Debian: apt-get install faketime)", 500)


class Node:
    """One `idmint serve` of a scenario, restartable at the same addresses."""

    def __init__(self, run: "Run", index: int, spec: Dict[str, Any]) -> None:
        self.run = run
        self.index = index
        self.spec = spec
        self.http = f"127.0.0.1:{free_port()}"
        self.resp = f"127.0.0.1:{free_port()}"
        self.log = run.folder / f"node{index}.log"
        self.process: Optional[subprocess.Popen] = None

    def command(self) -> List[str]:
        run = self.run
        args = [
            run.idmint, "serve",
            "--store", f"sqlite://{run.folder / 'ids.db'}",
            "--http", self.http, "--resp", self.resp,
            "--node-name", f"node{self.index}",
            "--admin-token-file", str(run.admin_file),
            "--tokens-file", str(run.tokens_file),
            *LEASE_FLAGS,
        ]
        if self.spec.get("permuted"):
            args += ["--permutation-key-file", str(run.key_file())]
        if self.spec.get("tls"):
            cert, key = run.certificate()
            args += ["--tls-cert", str(cert), "--tls-key", str(key)]
        return args + [str(flag) for flag in self.spec.get("flags", [])]

    def environment(self) -> Dict[str, str]:
        env = dict(os.environ, RUST_LOG="info", NO_COLOR="1")
        clock = self.spec.get("clock")
        if clock:
            # The node's clock starts at CLOCK (UTC, HH:MM:SS) of tomorrow and runs from there:
            # for a scenario that crosses a midnight within seconds, whatever the real hour.
            day = datetime.datetime.now(datetime.timezone.utc).date() + datetime.timedelta(days=1)
            env.update(
                LD_PRELOAD=faketime_library(),
                FAKETIME=f"@{day.isoformat()} {clock}",
                FAKETIME_DONT_RESET="1",
                TZ="UTC",
            )
        return env

    def start(self) -> None:
        if self.process and self.process.poll() is None:
            raise Refusal(f"node {self.index} is already running")
        offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                self.command(), env=self.environment(), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=log,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            with open(self.log, "rb") as log:
                log.seek(offset)
                if b"idmint serving" in log.read():
                    return
            if self.process.poll() is not None:
                raise Refusal(f"node {self.index} exited before serving:\n{self.tail()}", 500)
            time.sleep(0.02)
        self.kill()
        raise Refusal(f"node {self.index} did not serve within {START_TIMEOUT} s:\n{self.tail()}", 500)

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def url(self) -> str:
        return f"{'rediss' if self.spec.get('tls') else 'redis'}://{self.resp}"

    def http_url(self) -> str:
        return f"{'https' if self.spec.get('tls') else 'http'}://{self.http}"


class Run:
    """The running scenario: its folder (store, token files, logs) and its nodes."""

    def __init__(self, idmint: str, scenario: Dict[str, Any]) -> None:
        self.idmint = idmint
        self.scenario = scenario
        self.folder = Path(tempfile.mkdtemp(prefix=f"idmint-conformance-{scenario['name']}-"))
        self.admin = "admin-" + secrets.token_hex(16)
        self.mint = "mint-" + secrets.token_hex(16)
        self.admin_file = self.folder / "admin.token"
        self.admin_file.write_text(self.admin + "\n")
        self.tokens_file = self.folder / "tokens.toml"
        self.tokens_file.write_text(
            f'[[token]]\nname = "conformance"\nscope = "mint"\nsecret = "{self.mint}"\n'
        )
        for path in (self.admin_file, self.tokens_file):
            path.chmod(0o600)
        self._key: Optional[Path] = None
        self.nodes = [Node(self, i, spec) for i, spec in enumerate(scenario.get("nodes", [{}]))]
        self.timers: List[threading.Timer] = []

    def key_file(self) -> Path:
        if self._key is None:
            self._key = self.folder / "permutation.key"
            key = subprocess.run(
                [self.idmint, "permutation-key"], check=True, capture_output=True, text=True
            ).stdout
            self._key.write_text(key)
            self._key.chmod(0o600)
        return self._key

    def certificate(self) -> "tuple[Path, Path]":
        """A certificate authority of the run's own (`ca.pem`) and a certificate it signed for
        127.0.0.1 and localhost, made once with openssl: what an operator's internal CA gives."""
        cert, key = self.folder / "node.pem", self.folder / "node.key"
        if not cert.exists():
            ca, ca_key = self.folder / "ca.pem", self.folder / "ca.key"
            extensions = self.folder / "node.ext"
            extensions.write_text(
                "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\n"
            )
            ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            for command in (
                ["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "2",
                 "-subj", "/CN=idmint conformance CA"],
                ["req", *ec, "-keyout", key, "-out", self.folder / "node.csr",
                 "-subj", "/CN=127.0.0.1"],
                ["x509", "-req", "-in", self.folder / "node.csr", "-CA", ca, "-CAkey", ca_key,
                 "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", extensions],
            ):
                subprocess.run(["openssl", *map(str, command)], check=True, capture_output=True)
            key.chmod(0o600)
        return cert, key

    def ca_pem(self) -> Optional[str]:
        ca = self.folder / "ca.pem"
        return ca.read_text() if ca.exists() else None

    def node(self, step: Dict[str, Any]) -> Node:
        index = step.get("node")
        if not isinstance(index, int) or not 0 <= index < len(self.nodes):
            raise Refusal(f"step {step}: `node` must be an index below {len(self.nodes)}")
        return self.nodes[index]

    def act(self, step: Dict[str, Any]) -> None:
        op = step.get("op")
        if op == "kill":
            node = self.node(step)
            delay = step.get("in_ms")
            if delay:
                timer = threading.Timer(delay / 1000, node.kill)
                self.timers.append(timer)
                timer.start()
            else:
                node.kill()
        elif op == "stop":
            self.node(step).stop()
        elif op == "start":
            self.node(step).start()
        elif op == "restart":
            node = self.node(step)
            node.kill()
            node.start()
        elif op == "create_tag":
            self.create_tag(self.node(step), step)
        else:
            raise Refusal(f"unknown step op {op!r}")

    def create_tag(self, node: Node, step: Dict[str, Any]) -> None:
        request = urllib.request.Request(
            f"{node.http_url()}/v1/tags/{step['tag']}",
            data=json.dumps(step.get("settings", {})).encode(),
            method="PUT",
            headers={"Authorization": f"Bearer {self.admin}", "Content-Type": "application/json"},
        )
        context = ssl.create_default_context(cadata=self.ca_pem()) if self.ca_pem() else None
        try:
            with urllib.request.urlopen(request, timeout=10, context=context) as answer:
                answer.read()
        except urllib.error.HTTPError as e:
            raise Refusal(f"create_tag {step['tag']}: {e.code} {e.read().decode(errors='replace')}")

    def close(self) -> None:
        for timer in self.timers:
            timer.cancel()
        for node in self.nodes:
            node.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


class Conductor:
    def __init__(self, idmint: str, scenarios: List[Dict[str, Any]]) -> None:
        self.idmint = idmint
        self.scenarios = {s["name"]: s for s in scenarios}
        self.listing = scenarios
        self.run: Optional[Run] = None
        # One scenario at a time: the runners play them one after another.
        self.lock = threading.Lock()

    def start(self, body: Dict[str, Any]) -> Dict[str, Any]:
        scenario = self.scenarios.get(body.get("scenario"))
        if scenario is None:
            raise Refusal(f"no scenario named {body.get('scenario')!r}", 404)
        if self.run is not None:
            # A runner that died mid-scenario left it running.
            self.run.close()
            self.run = None
        run = Run(self.idmint, scenario)
        try:
            for node in run.nodes:
                node.start()
        except BaseException:
            run.close()
            raise
        self.run = run
        setup: Dict[str, Any] = {
            "nodes": [node.url() for node in run.nodes],
            "tokens": {"good": run.mint, "bad": "mint-" + secrets.token_hex(16)},
        }
        if run.ca_pem():
            setup["ca_pem"] = run.ca_pem()
        return setup

    def act(self, body: Dict[str, Any]) -> Dict[str, Any]:
        if self.run is None:
            raise Refusal("no scenario is running: POST /start first", 409)
        self.run.act(body)
        return {}

    def stop(self, _body: Dict[str, Any]) -> Dict[str, Any]:
        if self.run is not None:
            self.run.close()
            self.run = None
        return {}


def handler_for(conductor: Conductor) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: Any) -> None:
            pass

        def reply(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            # A body sent with a GET is read and dropped, so the next request on the connection
            # starts where it should.
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/scenarios":
                self.reply(200, conductor.listing)
            else:
                self.reply(404, {"error": f"no route GET {self.path}"})

        def do_POST(self) -> None:
            routes = {"/start": conductor.start, "/act": conductor.act, "/stop": conductor.stop}
            route = routes.get(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            if route is None:
                self.reply(404, {"error": f"no route POST {self.path}"})
                return
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise Refusal("the body must be a JSON object")
                with conductor.lock:
                    self.reply(200, route(body))
            except Refusal as e:
                self.reply(e.status, {"error": str(e)})
            except (ValueError, KeyError, OSError, subprocess.SubprocessError) as e:
                self.reply(500, {"error": f"{type(e).__name__}: {e}"})

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idmint", required=True, help="the idmint binary the nodes run")
    parser.add_argument("--port", type=int, default=0, help="the port to serve on (default: any)")
    parser.add_argument("--scenarios", default=str(HERE / "scenarios.json"))
    args = parser.parse_args()
    with open(args.scenarios) as f:
        scenarios = json.load(f)
    conductor = Conductor(os.path.abspath(args.idmint), scenarios)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler_for(conductor))
    print(f"url=http://127.0.0.1:{server.server_address[1]}", flush=True)

    def shut(*_args: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shut)
    signal.signal(signal.SIGINT, shut)
    try:
        server.serve_forever()
    finally:
        conductor.stop({})


if __name__ == "__main__":
    main()
