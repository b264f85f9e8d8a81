#!/usr/bin/env python3
"""Regenerates toolgate/_pb/ from the repository's proto/ with grpcio-tools.

protoc writes modules for the proto package `toolgate.v1` that import each other as `toolgate.v1.*`, which
would clash with this distribution's own `toolgate` package; the imports are rewritten to be relative to
`toolgate._pb`, and the module names recorded in the descriptors to `toolgate._pb.*`.

    python scripts/gen_stubs.py           # rewrite toolgate/_pb/
    python scripts/gen_stubs.py --check   # regenerate into a temp dir; fail listing the files that differ
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "toolgate" / "_pb"
PROTO_ROOT = HERE.parent.parent.parent / "proto"
PROTO_PACKAGE = Path("toolgate") / "v1"

INIT = '''"""gRPC stubs generated from proto/toolgate/v1 by scripts/gen_stubs.py. Do not edit."""
'''

# protoc's `from toolgate.v1 import types_pb2 as ...`, in .py and .pyi files alike.
_FROM_IMPORT = re.compile(r"^from toolgate\.v1 import ", re.MULTILINE)
_MODULE_NAME = re.compile(r"'toolgate\.v1\.(\w+_pb2)'")


def generate(out: Path) -> list[Path]:
    """Runs protoc into `out` (flat) and rewrites the imports; returns the files written."""
    from grpc_tools import protoc  # imported here so --help works without grpcio-tools

    protos = sorted((PROTO_ROOT / PROTO_PACKAGE).glob("*.proto"))
    if not protos:
        raise SystemExit(f"no .proto files under {PROTO_ROOT / PROTO_PACKAGE}")
    with tempfile.TemporaryDirectory() as raw:
        include = Path(protoc.__file__).resolve().parent / "_proto"
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{include}",
            f"--python_out={raw}",
            f"--pyi_out={raw}",
            f"--grpc_python_out={raw}",
            *(str(p.relative_to(PROTO_ROOT)) for p in protos),
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for src in sorted((Path(raw) / PROTO_PACKAGE).iterdir()):
            text = _FROM_IMPORT.sub("from . import ", src.read_text())
            text = _MODULE_NAME.sub(r"'toolgate._pb.\1'", text)
            dst = out / src.name
            dst.write_text(text)
            written.append(dst)
    init = out / "__init__.py"
    init.write_text(INIT)
    written.append(init)
    return written


def differing(expected: Path, actual: Path) -> list[str]:
    """File names that are missing, extra or different in `actual` compared with `expected`."""
    want = {p.name: p.read_bytes() for p in expected.iterdir() if p.is_file()}
    have = {p.name: p.read_bytes() for p in actual.iterdir() if p.is_file() and p.suffix in (".py", ".pyi")}
    return sorted(name for name in want.keys() | have.keys() if want.get(name) != have.get(name))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if toolgate/_pb/ is not up to date")
    args = parser.parse_args()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            generate(Path(tmp))
            stale = differing(Path(tmp), PACKAGE) if PACKAGE.is_dir() else ["(toolgate/_pb/ is missing)"]
        if stale:
            print("toolgate/_pb/ is out of date with proto/; run clients/python/scripts/gen_stubs.py", file=sys.stderr)
            for name in stale:
                print(f"  differs: toolgate/_pb/{name}", file=sys.stderr)
            return 1
        print(f"toolgate/_pb/ is up to date with {PROTO_ROOT.relative_to(HERE.parent.parent.parent)}/")
        return 0
    if PACKAGE.exists():
        shutil.rmtree(PACKAGE)
    for path in generate(PACKAGE):
        print(f"wrote {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
