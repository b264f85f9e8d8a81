#!/usr/bin/env python3
"""Extract (input, expected) repair cases from json_repair's pytest files.

Usage:
    python3 extract.py tests/test_parse_array.py tests/test_parse_object.py ... > cases.jsonl

Give local copies of the test files of https://github.com/mangiucugna/json_repair
as arguments, in the order the cases should appear. Standard library only.

Nothing is executed: each file is parsed with `ast`, and the script walks the
`assert` statements whose test is a comparison with a call to `repair_json(...)`
or `loads(...)` on one side. String arguments are evaluated from their source
text the way `ast.literal_eval` does; on top of that, simple `name = <literal>`
assignments, `for a, b in <literal list>:` loops, `@pytest.mark.parametrize`
tables and calls to small helper functions defined in the same file are
followed, so that cases written in those forms are found too.

A case is kept when the call passes the input and, besides it, only
`return_objects=`, `ensure_ascii=` (which changes escaping, not the value) or
another option set to its default value (`skip_json_loads=False`,
`stream_stable=False`, `logging=False`, `strict=False`). Anything else
(`skip_json_loads=True`, `schema=`, `strict=True`, `logging=True`, ...) is skipped.

Expected value:
  * string form (`repair_json(x) == "<json>"`): `json.loads("<json>")`;
    when the expected text is "" the case is kept as unrepairable
    (json_repair returns "" when it finds nothing to repair); when it does not
    parse as JSON the case is skipped;
  * object form (`return_objects=True`, or `loads(x)`): the Python value as
    JSON (tuples become lists); `== ""` is kept as unrepairable unless the
    input itself is the JSON text of an empty string; `is None` means JSON null;
    values that are not representable in JSON are skipped.

Each output line is
    {"source": "tests/<file>:<line>", "input": ..., "expected": ..., "unrepairable": bool}
with <line> the line of the input's literal in the test file. Inputs are
deduplicated across all files (the first occurrence wins). A summary goes to
stderr.
"""

import argparse
import ast
import json
import math
import os
import sys
from collections import Counter

CALL_NAMES = {"repair_json", "loads"}
# Options that may be present without changing what is being tested, with the
# values for which that holds (None: any value).
NEUTRAL_OPTIONS = {
    "ensure_ascii": None,
    "skip_json_loads": False,
    "stream_stable": False,
    "logging": False,
    "strict": False,
}


class Unevaluable(Exception):
    pass


def _call_name(node):
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
    return None


def _is_parametrize(dec):
    return (
        isinstance(dec, ast.Call)
        and isinstance(dec.func, ast.Attribute)
        and dec.func.attr == "parametrize"
    )


class Extractor:
    def __init__(self, label):
        self.label = label  # e.g. "tests/test_parse_object.py"
        self.helpers = {}
        self.cases = []  # (line, input, expected, unrepairable)
        self.skipped = Counter()

    # ---- evaluation -------------------------------------------------------

    def evaluate(self, node, env):
        """Evaluate a literal expression; names are looked up in env."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id][0]
            raise Unevaluable(node.id)
        if isinstance(node, ast.Tuple):
            return tuple(self.evaluate(e, env) for e in node.elts)
        if isinstance(node, ast.List):
            return [self.evaluate(e, env) for e in node.elts]
        if isinstance(node, ast.Set):
            return {self.evaluate(e, env) for e in node.elts}
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise Unevaluable("dict unpacking")
            return {self.evaluate(k, env): self.evaluate(v, env) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.evaluate(node.operand, env)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return -value if isinstance(node.op, ast.USub) else value
            raise Unevaluable("unary")
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            left = self.evaluate(node.left, env)
            right = self.evaluate(node.right, env)
            ok = (str, list, tuple, int)
            if isinstance(left, ok) and isinstance(right, ok) and not isinstance(left, bool) and not isinstance(right, bool):
                try:
                    return left + right if isinstance(node.op, ast.Add) else left * right
                except TypeError as exc:
                    raise Unevaluable("binop") from exc
            raise Unevaluable("binop")
        raise Unevaluable(type(node).__name__)

    def origin(self, node, env):
        """The AST node a value came from (for its line number)."""
        if isinstance(node, ast.Name) and node.id in env:
            return env[node.id][1]
        return node

    def elements(self, node, env):
        """(value, node) pairs of an iterable literal (possibly via a name)."""
        src = self.origin(node, env)
        values = self.evaluate(node, env)
        if not isinstance(values, (list, tuple)):
            raise Unevaluable("not a sequence")
        if isinstance(src, (ast.List, ast.Tuple)) and len(src.elts) == len(values):
            return list(zip(values, src.elts))
        return [(v, src) for v in values]

    def bind(self, target, value, node, env):
        if isinstance(target, ast.Name):
            env[target.id] = (value, node)
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (list, tuple)) or len(value) != len(target.elts):
                raise Unevaluable("unpack")
            sub_nodes = node.elts if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) == len(value) else [node] * len(value)
            for t, v, n in zip(target.elts, value, sub_nodes):
                self.bind(t, v, n, env)
            return
        raise Unevaluable("target")

    def unbind(self, target, env):
        for name in ast.walk(target):
            if isinstance(name, ast.Name):
                env.pop(name.id, None)

    # ---- walking ----------------------------------------------------------

    def run(self, tree):
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef) and not stmt.name.startswith("test"):
                self.helpers[stmt.name] = stmt
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name.startswith("test"):
                for env in self.parametrizations(stmt):
                    self.block(stmt.body, env, depth=0)
            elif isinstance(stmt, ast.ClassDef):
                for sub in stmt.body:
                    if isinstance(sub, ast.FunctionDef) and sub.name.startswith("test"):
                        for env in self.parametrizations(sub):
                            self.block(sub.body, env, depth=0)

    def parametrizations(self, func):
        envs = [{}]
        for dec in reversed(func.decorator_list):
            if not _is_parametrize(dec) or len(dec.args) < 2:
                continue
            try:
                names = self.evaluate(dec.args[0], {})
            except Unevaluable:
                self.skipped["parametrize not literal"] += 1
                return []
            if isinstance(names, str):
                names = [n.strip() for n in names.split(",") if n.strip()]
            rows = []
            values_node = dec.args[1]
            if not isinstance(values_node, (ast.List, ast.Tuple)):
                self.skipped["parametrize not literal"] += 1
                return []
            for elt in values_node.elts:
                if _call_name(elt) == "param":  # pytest.param(...)
                    elt = ast.Tuple(elts=elt.args, ctx=ast.Load(), lineno=elt.lineno, col_offset=elt.col_offset)
                    if len(names) == 1 and len(elt.elts) == 1:
                        elt = elt.elts[0]
                try:
                    value = self.evaluate(elt, {})
                except Unevaluable:
                    self.skipped["parametrize not literal"] += 1
                    continue
                row = {}
                if len(names) == 1:
                    row[names[0]] = (value, elt)
                else:
                    if not isinstance(value, (list, tuple)) or len(value) != len(names):
                        self.skipped["parametrize not literal"] += 1
                        continue
                    sub = elt.elts if isinstance(elt, (ast.Tuple, ast.List)) else [elt] * len(names)
                    for name, v, n in zip(names, value, sub):
                        row[name] = (v, n)
                rows.append(row)
            envs = [dict(e, **r) for e in envs for r in rows]
        return envs

    def block(self, stmts, env, depth):
        for stmt in stmts:
            self.statement(stmt, env, depth)

    def statement(self, stmt, env, depth):
        if isinstance(stmt, ast.Assert):
            self.assertion(stmt, env)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is None:
                return
            try:
                value = self.evaluate(stmt.value, env)
            except Unevaluable:
                for t in targets:
                    self.unbind(t, env)
                return
            for t in targets:
                try:
                    self.bind(t, value, stmt.value, env)
                except Unevaluable:
                    self.unbind(t, env)
        elif isinstance(stmt, ast.For):
            try:
                items = self.elements(stmt.iter, env)
            except Unevaluable:
                return
            for value, node in items:
                inner = dict(env)
                try:
                    self.bind(stmt.target, value, node, inner)
                except Unevaluable:
                    continue
                self.block(stmt.body, inner, depth)
        elif isinstance(stmt, ast.With):
            self.block(stmt.body, env, depth)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.helper_call(stmt.value, env, depth)

    def helper_call(self, call, env, depth):
        name = _call_name(call)
        helper = self.helpers.get(name) if isinstance(call.func, ast.Name) else None
        if helper is None or depth > 3:
            return
        params = [a.arg for a in helper.args.args]
        if call.keywords or len(call.args) != len(params) or helper.args.vararg:
            return
        inner = {}
        for param, arg in zip(params, call.args):
            try:
                inner[param] = (self.evaluate(arg, env), self.origin(arg, env))
            except Unevaluable:
                return
        self.block(helper.body, inner, depth + 1)

    def assertion(self, stmt, env):
        test = stmt.test
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if _call_name(left) not in CALL_NAMES and _call_name(right) in CALL_NAMES and isinstance(op, ast.Eq):
            left, right = right, left
        name = _call_name(left)
        if name not in CALL_NAMES:
            return
        if isinstance(op, ast.Is):
            if not (isinstance(right, ast.Constant) and right.value is None):
                return
        elif not isinstance(op, ast.Eq):
            return
        call = left
        if len(call.args) != 1 or any(isinstance(a, ast.Starred) for a in call.args):
            self.skipped["call shape"] += 1
            return
        objects = name == "loads"
        for kw in call.keywords:
            if kw.arg is None:
                self.skipped["option **kwargs"] += 1
                return
            try:
                value = self.evaluate(kw.value, env)
            except Unevaluable:
                self.skipped["option " + kw.arg] += 1
                return
            if kw.arg == "return_objects" and name == "repair_json":
                objects = bool(value)
            elif kw.arg in NEUTRAL_OPTIONS and (NEUTRAL_OPTIONS[kw.arg] is None or value == NEUTRAL_OPTIONS[kw.arg]):
                continue
            else:
                self.skipped["option " + kw.arg] += 1
                return
        arg = call.args[0]
        try:
            text = self.evaluate(arg, env)
        except Unevaluable:
            self.skipped["input not literal"] += 1
            return
        if not isinstance(text, str):
            self.skipped["input not a string"] += 1
            return
        line = getattr(self.origin(arg, env), "lineno", stmt.lineno)

        if isinstance(op, ast.Is):
            if not objects:
                self.skipped["`is None` without return_objects"] += 1
                return
            self.cases.append((line, text, None, False))
            return
        try:
            expected = self.evaluate(right, env)
        except Unevaluable:
            self.skipped["expected not literal"] += 1
            return
        if objects:
            if expected == "" and isinstance(expected, str) and not _is_json_empty_string(text):
                self.cases.append((line, text, None, True))
                return
            try:
                value = _to_json_value(expected)
            except ValueError:
                self.skipped["expected not JSON-representable"] += 1
                return
            self.cases.append((line, text, value, False))
        else:
            if not isinstance(expected, str):
                self.skipped["expected not a string"] += 1
                return
            if expected == "":
                self.cases.append((line, text, None, True))
                return
            try:
                value = json.loads(expected)
            except ValueError:
                self.skipped["expected is not JSON"] += 1
                return
            self.cases.append((line, text, value, False))


def _is_json_empty_string(text):
    try:
        return json.loads(text) == ""
    except ValueError:
        return False


def _to_json_value(value):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError("non-finite float")
        return value
    if isinstance(value, (list, tuple)):
        return [_to_json_value(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError("non-string key")
            out[k] = _to_json_value(v)
        return out
    raise ValueError(type(value).__name__)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="json_repair test files (local copies)")
    parser.add_argument("--prefix", default="tests/", help='directory recorded in "source" (default: tests/)')
    parser.add_argument("-o", "--output", help="write here instead of stdout")
    args = parser.parse_args()

    seen = {}
    lines = []
    per_file = Counter()
    unrepairable = 0
    for path in args.files:
        label = args.prefix + os.path.basename(path)
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        extractor = Extractor(label)
        extractor.run(ast.parse(source, filename=path))
        duplicates = 0
        for line, text, expected, unrep in extractor.cases:
            record = {"source": f"{label}:{line}", "input": text, "expected": expected, "unrepairable": unrep}
            if text in seen:
                duplicates += 1
                first = seen[text]
                if (first["expected"], first["unrepairable"]) != (expected, unrep):
                    print(f"note: {record['source']} repeats the input of {first['source']} with another expectation; kept the first",
                          file=sys.stderr)
                continue
            seen[text] = record
            lines.append(json.dumps(record, ensure_ascii=False))
            per_file[label] += 1
            unrepairable += unrep
        skipped = ", ".join(f"{k}: {v}" for k, v in sorted(extractor.skipped.items())) or "none"
        print(f"{label}: {per_file[label]} cases ({duplicates} duplicate inputs dropped; skipped {skipped})", file=sys.stderr)
    print(f"total: {len(lines)} cases, {unrepairable} unrepairable", file=sys.stderr)

    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for line in lines:
            out.write(line + "\n")
    finally:
        if args.output:
            out.close()


if __name__ == "__main__":
    main()
