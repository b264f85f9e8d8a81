"""Fixtures: one real gateway process (`toolgate serve`) for the session, with both planes closed by tokens and a
review token that opens ToolReview alone; gateways of a test's own (`own_gateway`), which it may restart; and two
real tool servers they call: an HTTP server (the gateway POSTs the arguments as JSON) and a gRPC
`toolgate.v1.ToolRuntime` server built on this package's own stubs. Tests register their tools over the API.

The gateway binary is `$TOOLGATE_BIN`, or `<repo>/target/debug/toolgate` (which `cargo build` makes).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import grpc
import pytest
from support import GrpcTools, HttpTools

import toolgate

REPO = Path(__file__).resolve().parents[3]
ADMIN_TOKEN = "admin-secret"
DATA_TOKEN = "data-secret"
REVIEW_TOKEN = "review-secret"

CONFIG = """
[limits]
batch_concurrency = 16
default_timeout_ms = 10000

[review]
keep_decided_s = 3600
"""


def gateway_binary() -> Path:
    configured = os.environ.get("TOOLGATE_BIN")
    path = Path(configured).resolve() if configured else REPO / "target" / "debug" / "toolgate"
    if not path.is_file() or not os.access(path, os.X_OK):
        source = "TOOLGATE_BIN" if configured else "the default <repo>/target/debug/toolgate"
        pytest.fail(
            f"the toolgate gateway binary is missing: {path} ({source}) is not an executable file. Build it with "
            "`cargo build` in the repository root, or point TOOLGATE_BIN at a toolgate binary.",
            pytrace=False,
        )
    return path


class Gateway:
    """A running `toolgate serve`, its address and its log."""

    def __init__(self, binary: Path, workdir: Path, port: int | None = None, listen: str | None = None) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        # On TCP the gateway binds `port` (a restart keeps its port) or 127.0.0.1:0, and `wait_healthy` reads the
        # port it got from its log: a port picked here and released could go to another socket before it binds.
        # `listen` may be a Unix socket (`unix:/path`), which grpc dials as it is.
        self.port = port
        self.target = listen or (f"127.0.0.1:{port}" if port else None)
        self.log_path = workdir / "gateway.log"
        config = workdir / "toolgate.toml"
        config.write_text(CONFIG)
        env = {
            **os.environ,
            "TOOLGATE_ADMIN_TOKEN": ADMIN_TOKEN,
            "TOOLGATE_DATA_TOKEN": DATA_TOKEN,
            "TOOLGATE_REVIEW_TOKEN": REVIEW_TOKEN,
            "RUST_LOG": os.environ.get("RUST_LOG", "info"),
        }
        for inherited in ("TOOLGATE_LISTEN", "TOOLGATE_DATA_DIR", "TOOLGATE_CONFIG", "OTEL_EXPORTER_OTLP_ENDPOINT"):
            env.pop(inherited, None)
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                str(binary),
                "serve",
                "--listen",
                listen or f"127.0.0.1:{port or 0}",
                "--data-dir",
                str(workdir / "data"),
                "--config",
                str(config),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Until grpc.health.v1 answers SERVING. The request is empty; SERVING is field 1 = 1."""
        deadline = time.monotonic() + timeout
        if self.target is None:
            self.port = self._bound_port(deadline, timeout)
            self.target = f"127.0.0.1:{self.port}"
        options = [("grpc.default_authority", "localhost")] if self.target.startswith("unix:") else []
        with grpc.insecure_channel(self.target, options=options) as channel:
            check = channel.unary_unary(
                "/grpc.health.v1.Health/Check", request_serializer=lambda b: b, response_deserializer=lambda b: b
            )
            while True:
                if self.process.poll() is not None:
                    pytest.fail(
                        f"toolgate serve exited with {self.process.returncode}:\n{self.log_tail()}", pytrace=False
                    )
                try:
                    if check(b"", timeout=1.0) == b"\x08\x01":
                        return
                except grpc.RpcError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"toolgate serve not healthy after {timeout}s:\n{self.log_tail()}", pytrace=False)
                time.sleep(0.05)

    def _bound_port(self, deadline: float, timeout: float) -> int:
        """The port of `toolgate serving addr=127.0.0.1:<port>`, the line the gateway logs once it has bound."""
        while True:
            for line in self.log_path.read_text(errors="replace").splitlines():
                if "toolgate serving" in line and "addr=" in line:
                    return int(line.split("addr=", 1)[1].split()[0].rsplit(":", 1)[1])
            if self.process.poll() is not None:
                pytest.fail(f"toolgate serve exited with {self.process.returncode}:\n{self.log_tail()}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"toolgate serve not listening after {timeout}s:\n{self.log_tail()}", pytrace=False)
            time.sleep(0.05)

    def log_tail(self, lines: int = 40) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self._log.closed:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory):
    gw = Gateway(gateway_binary(), tmp_path_factory.mktemp("gateway"))
    try:
        gw.wait_healthy()
        yield gw
    finally:
        gw.stop()


@pytest.fixture(scope="session")
def http_tools():
    server = HttpTools()
    yield server
    server.close()


@pytest.fixture(scope="session")
def grpc_tools():
    server = GrpcTools()
    yield server
    server.close()


@pytest.fixture
def own_gateway(tmp_path: Path):
    """Starts gateways of the test's own (`start(port=None)`), which it may stop and start again on the same port
    with a fresh data dir: a gateway that lost its reviews. All are stopped after the test."""
    started: list[Gateway] = []

    def start(port: int | None = None) -> Gateway:
        gw = Gateway(gateway_binary(), tmp_path / f"gateway{len(started)}", port=port)
        started.append(gw)
        gw.wait_healthy()
        return gw

    yield start
    for gw in started:
        gw.stop()


@pytest.fixture(scope="session")
def client(gateway: Gateway):
    """The operator's client: the data token, and the admin token for the registry and review."""
    with toolgate.Client(gateway.target, token=DATA_TOKEN, admin_token=ADMIN_TOKEN, timeout=30) as c:
        yield c


@pytest.fixture(scope="session")
def agent_client(gateway: Gateway):
    """An agent's client: the data token and the review token, no admin token. It runs calls and decides their
    reviews, and cannot touch the registry."""
    with toolgate.Client(gateway.target, token=DATA_TOKEN, review_token=REVIEW_TOKEN, timeout=30) as c:
        yield c


@pytest.fixture(autouse=True)
def _gateway_log_on_failure(request: pytest.FixtureRequest):
    """A failing test that used the gateway shows the end of its log."""
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed and "gateway" in request.fixturenames:
        gw = request.getfixturevalue("gateway")
        print(f"--- gateway log ({gw.log_path}) ---\n{gw.log_tail()}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
