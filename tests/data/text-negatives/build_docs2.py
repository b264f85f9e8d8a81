#!/usr/bin/env python3
"""Assemble and check docs2.jsonl: more documentation passages that SHOW tool calls without making one
(python3, standard library only).

The passages were chosen and labelled by hand; they live in docs2_spec.json next to this script (repository,
commit, path, line range, offered tools, kind, format shown, why, licence). This script only re-reads each
passage from its git snapshot, checks that it is a verbatim slice of whole lines, and writes the records.

Usage:
  build_docs2.py assemble [--mirrors /work/.mirror] [-o docs2.jsonl]
  build_docs2.py check      (docs2.jsonl + every other record file in this folder: same checks as build.py check,
                             plus: no duplicate text or id across ALL .jsonl record files here)
  build_docs2.py stats      (counts by repository, kind and format, from docs2_spec.json)

Snapshots are bare git directories (no work tree) at <mirrors>/<owner>+<name>/repo, read with
`git show <commit>:<path>`. A spec entry with "text" (a passage transcribed from a repository too large to fetch)
is taken as given.
"""
import argparse, collections, json, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import build as B  # noqa: E402  (norm, NAME_RE, MAX_TEXT)

SPEC = os.path.join(HERE, "docs2_spec.json")
OUT = os.path.join(HERE, "docs2.jsonl")
KINDS = {"docs_template", "example", "explains"}
KEYS = {"id", "source", "licence", "tools", "text", "kind", "why"}
ALL_KINDS = {"explains", "refuses", "asks", "example", "hypothetical", "offers_options", "code", "docs_template",
             "past", "other"}
SPDX = {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause"}
FORMATS = {
    "name_arguments_json": 'a JSON object {"name": ..., "arguments": {...}} (MCP tool-call example inputs)',
    "mcp_jsonrpc": "an MCP tools/call JSON-RPC request",
    "openai_tool_calls": "OpenAI/Ollama-style `tool_calls` in a message or API response",
    "openai_tool_choice": "a named `tool_choice` object",
    "anthropic_tool_use": 'content blocks {"type": "tool_use", "name", "input"}',
    "name_parameters_json": 'Llama-style {"name": ..., "parameters": {...}} (InternLM <|action_start|><|plugin|>, ChatGLM3)',
    "hermes": "<tool_call>{...}</tool_call> template",
    "function_tag": "<function=name>{...}</function> template (Llama 3.1 custom format)",
    "functionary": "functionary >>>recipient / <|recipient|> template",
    "chatglm": "ChatGLM3 `<|assistant|>name` + tool_call(...) code block",
    "python_repr": "printed Python objects of calls (ToolCall(...), function_call dicts, run logs)",
    "name_then_json": "a tool name on one line followed by a JSON object (here a schema)",
    "args_only_json": "a bare JSON arguments object for a named tool",
    "cli_or_sdk_call": "a call written as SDK/CLI code (client.call_tool(...), `fastmcp call ...`, mcpcurl)",
    "declaration": "tool declarations / schemas only",
    "config": "configuration naming tools (tool filters, policy rules, {\"name\": ...} config entries)",
    "reference": "prose tool reference (names, parameters, instructions)",
}


def git_show(gitdir, commit, path):
    return subprocess.run(["git", "-C", gitdir, "show", f"{commit}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def passage_text(p, mirrors):
    if "text" in p:
        return p["text"]
    gitdir = os.path.join(mirrors, p["repo"].replace("/", "+"), "repo")
    full = git_show(gitdir, p["commit"], p["path"])
    lines = full.split("\n")
    lo, hi = p["lines"]
    assert 1 <= lo <= hi <= len(lines), (p["repo"], p["path"], p["lines"])
    text = "\n".join(lines[lo - 1:hi])
    assert text in full and lines[lo - 1].strip() and lines[hi - 1].strip(), (p["repo"], p["path"], p["lines"])
    return text


def assemble(a):
    spec = json.load(open(SPEC))
    counter = {}
    out = []
    for p in spec:
        text = passage_text(p, a.mirrors)
        key = (p["repo"], p["path"])
        counter[key] = counter.get(key, 0) + 1
        src = f"{p['repo']}@{p['commit']}:{p['path']}"
        if "lines" in p:
            src += f"#L{p['lines'][0]}-L{p['lines'][1]}"
        out.append({"id": f"docs2/{p['repo']}/{p['path']}#{counter[key]}", "source": src, "licence": p["licence"],
                    "tools": p["tools"], "text": text, "kind": p["kind"], "why": p["why"]})
    with open(a.o, "w") as f:
        for r in out:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"wrote {len(out)} records to {a.o}")


def record_files():
    """Every .jsonl file in this folder that holds corpus records (not the hand-label files labels*.jsonl)."""
    return sorted(fn for fn in os.listdir(HERE) if fn.endswith(".jsonl") and not fn.startswith("labels"))


def check_record(d):
    errs = []
    if set(d) != KEYS:
        errs.append(f"keys {sorted(d)}")
        return errs
    if d["kind"] not in ALL_KINDS:
        errs.append("kind")
    errs += B.tool_errors(d)
    if not d["text"].strip():
        errs.append("empty text")
    return errs


def check_docs2_extra(d):
    errs = []
    if not d["id"].startswith("docs2/"):
        errs.append("id prefix")
    if d["kind"] not in KINDS:
        errs.append(f"docs2 kind {d['kind']}")
    if d["licence"] not in SPDX:
        errs.append(f"licence {d['licence']}")
    if len(d["text"].encode()) > 4096:
        errs.append("passage over 4 KB")
    for t in d["tools"]:
        if B.norm(t["name"]) not in B.norm(d["text"]):
            errs.append(f"offered tool not named: {t['name']}")
    return errs


def check(_a):
    seen_text, seen_id = {}, {}
    n = bad = 0
    for fn in record_files():
        for i, line in enumerate(open(os.path.join(HERE, fn)), 1):
            d = json.loads(line)
            n += 1
            errs = check_record(d)
            if fn == "docs2.jsonl" and not errs:
                errs += check_docs2_extra(d)
            if "text" in d:
                if d["text"] in seen_text:
                    errs.append(f"duplicate text (also {seen_text[d['text']]})")
                seen_text.setdefault(d["text"], f"{fn}:{i}")
            if "id" in d:
                if d["id"] in seen_id:
                    errs.append(f"duplicate id (also {seen_id[d['id']]})")
                seen_id.setdefault(d["id"], f"{fn}:{i}")
            if errs:
                bad += 1
                print(f"{fn}:{i} {d.get('id')}: {'; '.join(errs)}")
    # the spec and docs2.jsonl must agree
    spec = json.load(open(SPEC))
    recs = [json.loads(l) for l in open(OUT)] if os.path.exists(OUT) else []
    if len(spec) != len(recs):
        bad += 1
        print(f"docs2_spec.json has {len(spec)} passages, docs2.jsonl {len(recs)}")
    for p, r in zip(spec, recs):
        if p["kind"] != r["kind"] or p["tools"] != r["tools"] or ("text" in p and p["text"] != r["text"]) \
                or p.get("format") not in FORMATS or not re.fullmatch(r"[0-9a-f]{40}", p["commit"]):
            bad += 1
            print(f"spec/record mismatch or bad spec entry: {r['id']}")
    print(f"{n} records in {', '.join(record_files())}; {bad} with problems")
    return 1 if bad else 0


def stats(_a):
    spec = json.load(open(SPEC))
    by = lambda k: collections.Counter(p[k] for p in spec)
    print(f"{len(spec)} passages")
    for k in ("repo", "kind", "format"):
        print(f"\nby {k}:")
        for v, c in by(k).most_common():
            print(f"  {c:3}  {v}")
    print("\nrepo x kind:")
    rk = collections.Counter((p["repo"], p["kind"]) for p in spec)
    for r in sorted({p["repo"] for p in spec}):
        print(f"  {r}: " + ", ".join(f"{k} {rk[(r, k)]}" for k in sorted(KINDS) if rk[(r, k)]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["assemble", "check", "stats"])
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("-o", default=OUT)
    a = ap.parse_args()
    if a.cmd == "assemble":
        assemble(a)
    elif a.cmd == "check":
        sys.exit(check(a))
    else:
        stats(a)


if __name__ == "__main__":
    main()
