"""The added latency of an MCP-stdio call through the gateway versus the same call made directly with the Python
MCP client.

Both modes call the `echo` tool of tests/mcp/server.py (official Python MCP SDK, FastMCP, over stdio) with
{"text": "hello"}, one call at a time:

  direct   this process starts `server.py stdio` with the Python MCP client (stdio_client + ClientSession) and
           calls `echo` itself;
  gateway  this process starts `toolgate serve` with a config declaring the same server as an MCP server named
           `bench`, so the tool is imported as `bench__echo`, and calls toolgate.v1.ToolGateway/Execute over gRPC
           (Python stubs generated at run time from proto/toolgate/v1/*.proto with grpc_tools.protoc).

Both servers run for the whole measurement; the modes alternate in rounds (--rounds, default 4, each round
calls/rounds calls per mode) so drift in machine load hits both alike. Each call's latency is the client's wall
time around one call. Output, one JSON object per line:

  {"mode": "direct",  "calls": N, "p50_us": ..., "p99_us": ..., "mean_us": ...}
  {"mode": "gateway", "calls": N, "p50_us": ..., "p99_us": ..., "mean_us": ..., "gateway_duration_p50_us": ...}
  {"mode": "added", "added_p50_us": ..., "added_p99_us": ..., "ratio_p50": ..., "ratio_p99": ...}

(`gateway_duration_p50_us` is the median of the `duration_us` the gateway reports in its ToolMessage.)

Usage, from the repository root, with the venv of tests/mcp/requirements.txt:

  python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install -r tests/mcp/requirements.txt
  cargo build --release
  target/mcp-venv/bin/python benches/mcp_latency.py [--toolgate target/release/toolgate] [--calls 2000]
                                                    [--warmup 200] [--rounds 4]
  target/mcp-venv/bin/python benches/mcp_latency.py --direct-only      # no gateway needed

The MCP server runs under the same python as this script. Progress and errors go to stderr; only the JSON lines go
to stdout. The gateway's log (with the MCP server's stderr) is printed if the gateway fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
SERVER = REPO / "tests" / "mcp" / "server.py"
PROTO_DIR = REPO / "proto"
ARGUMENTS = {"text": "hello"}
READY_TIMEOUT_S = 20.0


class BenchError(Exception):
    pass


def log(*parts: object) -> None:
    print("mcp_latency:", *parts, file=sys.stderr, flush=True)


def summary(mode: str, samples_ns: list[int]) -> dict:
    s = sorted(samples_ns)

    def pct(p: float) -> float:  # nearest rank
        return s[max(0, math.ceil(p / 100 * len(s)) - 1)] / 1000

    return {
        "mode": mode,
        "calls": len(s),
        "p50_us": round(pct(50), 1),
        "p99_us": round(pct(99), 1),
        "mean_us": round(sum(s) / len(s) / 1000, 1),
    }


# ---------------------------------------------------------------------------------------------------- direct


class Direct:
    """The Python MCP client talking to `server.py stdio` itself."""

    def __init__(self) -> None:
        self.session = None

    async def start(self, stack) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio"])
        read, write = await stack.enter_async_context(stdio_client(params))
        self.session = await stack.enter_async_context(ClientSession(read, write))
        init = await self.session.initialize()
        log(f"direct: {init.serverInfo.name} {init.serverInfo.version}, protocol {init.protocolVersion}")

    async def calls(self, n: int, out: list[int] | None) -> None:
        session = self.session
        for _ in range(n):
            t0 = time.perf_counter_ns()
            result = await session.call_tool("echo", ARGUMENTS)
            t1 = time.perf_counter_ns()
            if result.isError or result.content[0].text != "hello":
                raise BenchError(f"direct: unexpected echo result {result}")
            if out is not None:
                out.append(t1 - t0)


# --------------------------------------------------------------------------------------------------- gateway


def generate_stubs(into: Path):
    """Compiles proto/toolgate/v1/*.proto into Python modules under `into`; returns (types_pb2, gateway_pb2,
    gateway_pb2_grpc)."""
    import importlib

    import grpc_tools
    from grpc_tools import protoc

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    into.mkdir(parents=True, exist_ok=True)
    protos = sorted(str(p.relative_to(PROTO_DIR)) for p in (PROTO_DIR / "toolgate" / "v1").glob("*.proto"))
    rc = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO_DIR}",
            f"-I{well_known}",
            f"--python_out={into}",
            f"--grpc_python_out={into}",
            *protos,
        ]
    )
    if rc != 0:
        raise BenchError(f"protoc failed ({rc}) on {protos}")
    sys.path.insert(0, str(into))
    return (
        importlib.import_module("toolgate.v1.types_pb2"),
        importlib.import_module("toolgate.v1.gateway_pb2"),
        importlib.import_module("toolgate.v1.gateway_pb2_grpc"),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def toml_string(s: str) -> str:
    return json.dumps(s)  # a TOML basic string accepts JSON's escapes


class Gateway:
    """`toolgate serve` with the test server declared as MCP server `bench`, called over gRPC."""

    TOOL = "bench__echo"

    def __init__(self, toolgate: Path, workdir: Path) -> None:
        self.toolgate = toolgate
        self.workdir = workdir
        self.process: subprocess.Popen | None = None
        self.log_path = workdir / "toolgate.log"
        self.sequence = 0

    def start(self) -> None:
        import grpc

        if not os.access(self.toolgate, os.X_OK):
            raise BenchError(f"no toolgate binary at {self.toolgate}: cargo build --release, or pass --toolgate")
        self.types_pb2, self.gateway_pb2, gateway_pb2_grpc = generate_stubs(self.workdir / "stubs")
        config = self.workdir / "toolgate.toml"
        config.write_text(
            "[[mcp_servers]]\n"
            'name = "bench"\n'
            f"command = {toml_string(sys.executable)}\n"
            f"args = [{toml_string(str(SERVER))}, \"stdio\"]\n"
        )
        port = free_port()
        command = [
            str(self.toolgate),
            "serve",
            "--config",
            str(config),
            "--data-dir",
            str(self.workdir / "data"),
            "--listen",
            f"127.0.0.1:{port}",
        ]
        log("gateway:", " ".join(command))
        self.log_file = open(self.log_path, "wb")
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self.log_file, stderr=self.log_file)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = gateway_pb2_grpc.ToolGatewayStub(self.channel)
        deadline = time.monotonic() + READY_TIMEOUT_S
        ready = grpc.channel_ready_future(self.channel)
        while True:
            try:
                ready.result(timeout=0.1)
                break
            except grpc.FutureTimeoutError:
                if self.process.poll() is not None:
                    self.fail(f"toolgate exited ({self.process.returncode}) before listening")
                if time.monotonic() > deadline:
                    self.fail(f"the gateway did not listen on 127.0.0.1:{port} within {READY_TIMEOUT_S:.0f} s")
        # The MCP server's tools are imported once it has started and answered tools/list.
        while True:
            message = self.execute()
            not_found = (
                message.status == self.types_pb2.TOOL_STATUS_ERROR
                and message.error.kind == self.types_pb2.ERROR_KIND_TOOL_NOT_FOUND
            )
            if not not_found:
                break
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.fail(f"{self.TOOL} was not registered within {READY_TIMEOUT_S:.0f} s: {message.content}")
            time.sleep(0.05)
        self.check(message)
        log(f"gateway: {self.TOOL} answers")

    def execute(self):
        self.sequence += 1
        request = self.gateway_pb2.ExecuteRequest(
            call=self.types_pb2.ToolCall(id=f"call-{self.sequence}", name=self.TOOL, arguments=json.dumps(ARGUMENTS)),
        )
        return self.stub.Execute(request, timeout=30).message

    def check(self, message) -> None:
        if message.status != self.types_pb2.TOOL_STATUS_SUCCESS or message.content != "hello":
            self.fail(f"unexpected answer to {self.TOOL}: {message}")

    def calls(self, n: int, out: list[int] | None, reported: list[int] | None) -> None:
        execute = self.execute
        for _ in range(n):
            t0 = time.perf_counter_ns()
            message = execute()
            t1 = time.perf_counter_ns()
            if message.status != self.types_pb2.TOOL_STATUS_SUCCESS or message.content != "hello":
                self.check(message)
            if out is not None:
                out.append(t1 - t0)
            if reported is not None:
                reported.append(message.duration_us)

    def fail(self, why: str):
        self.stop()
        tail = self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""
        raise BenchError(f"gateway: {why}\n--- toolgate log (tail) ---\n{tail}")

    def stop(self) -> None:
        if hasattr(self, "channel"):
            self.channel.close()
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if hasattr(self, "log_file"):
            self.log_file.close()


# ------------------------------------------------------------------------------------------------------ main


async def run(args: argparse.Namespace) -> None:
    from contextlib import AsyncExitStack

    per_round = [args.calls // args.rounds + (1 if r < args.calls % args.rounds else 0) for r in range(args.rounds)]
    direct_ns: list[int] = []
    gateway_ns: list[int] = []
    gateway_reported: list[int] = []

    with tempfile.TemporaryDirectory(prefix="toolgate-mcp-bench-") as tmp:
        gateway = None
        async with AsyncExitStack() as stack:
            if not args.direct_only:
                gateway = Gateway(Path(args.toolgate).resolve(), Path(tmp))
                stack.callback(gateway.stop)
                gateway.start()
            direct = Direct()
            await direct.start(stack)

            log(f"warm-up: {args.warmup} calls per mode")
            await direct.calls(args.warmup, None)
            if gateway:
                gateway.calls(args.warmup, None, None)

            for r, n in enumerate(per_round, 1):
                log(f"round {r}/{args.rounds}: {n} calls per mode")
                await direct.calls(n, direct_ns)
                if gateway:
                    gateway.calls(n, gateway_ns, gateway_reported)

    d = summary("direct", direct_ns)
    print(json.dumps(d), flush=True)
    if gateway:
        g = summary("gateway", gateway_ns)
        g["gateway_duration_p50_us"] = sorted(gateway_reported)[len(gateway_reported) // 2]
        print(json.dumps(g), flush=True)
        added = {
            "mode": "added",
            "added_p50_us": round(g["p50_us"] - d["p50_us"], 1),
            "added_p99_us": round(g["p99_us"] - d["p99_us"], 1),
            "ratio_p50": round(g["p50_us"] / d["p50_us"], 3),
            "ratio_p99": round(g["p99_us"] / d["p99_us"], 3),
        }
        print(json.dumps(added), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--toolgate", default=str(REPO / "target" / "release" / "toolgate"), help="the toolgate binary")
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per mode (default 2000)")
    parser.add_argument("--warmup", type=int, default=200, help="unmeasured calls per mode first (default 200)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds the modes alternate in (default 4)")
    parser.add_argument("--direct-only", action="store_true", help="measure the direct mode only")
    args = parser.parse_args()
    if args.calls < 1 or args.rounds < 1 or args.warmup < 0 or args.rounds > args.calls:
        parser.error("need --calls >= --rounds >= 1 and --warmup >= 0")
    try:
        anyio.run(run, args)
    except BaseException as e:  # anyio's task groups wrap a failure in exception groups
        error = bench_error(e)
        if error is None:
            raise
        sys.exit(f"mcp_latency: {error}")


def bench_error(e: BaseException) -> BenchError | None:
    if isinstance(e, BenchError):
        return e
    for inner in getattr(e, "exceptions", ()):
        if (found := bench_error(inner)) is not None:
            return found
    return None


if __name__ == "__main__":
    main()
