#!/usr/bin/env python3
"""Re-runnable selection and assembly of the text-negative corpus (python3, standard library only).

The *selection of candidates* is mechanical; the *labels* (keep or not, kind, why) were given by hand, by
reading every candidate, and live in labels.jsonl next to this script. Nothing here decides that a text is a
negative: it only proposes texts to read and then joins the hand labels with the verbatim source texts.

Usage:
  build.py bfcl-candidates  --results <BFCL-Result git dir> --gorilla <gorilla git dir> -o candidates.jsonl
  build.py bfcl-assemble    --results <BFCL-Result git dir> --gorilla <gorilla git dir> -o bfcl.jsonl
  build.py check            (validates bfcl.jsonl, docs.jsonl, transcripts.jsonl, bfcl-hard.jsonl in this folder)

The git dirs are bare snapshots (no work tree); files are read with `git show <commit>:<path>`.
"""
import argparse, hashlib, json, os, random, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_COMMIT = "b4adfc9be5e0c65e8dbb1340c689688eb92a9379"   # HuanzhiMao/BFCL-Result, "add 8/11 result"
RESULTS_DIR = "2024-08-11/result"
GORILLA_COMMIT = "4a64db342cbdb936c27c0016c4186cb5c2426fbb"   # ShishirPatil/gorilla 2024-08-06, last data change before 2024-08-11
GORILLA_DATA = "berkeley-function-call-leaderboard/data"
CATEGORIES = ["relevance", "executable_simple", "executable_multiple_function",
              "executable_parallel_function", "executable_parallel_multiple_function",
              "java", "javascript", "rest"]
MAX_TEXT = 16 * 1024

TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "String": "string", "Boolean": "boolean",
            "Array": "array", "ArrayList": "array", "HashMap": "object", "long": "integer",
            "double": "number", "char": "string", "string": "string", "integer": "integer",
            "number": "number", "boolean": "boolean", "array": "array", "object": "object"}
KEEP = ("description", "enum", "required", "default")


def git_show(gitdir, commit, path):
    return subprocess.run(["git", "-C", gitdir, "show", f"{commit}:{path}"], capture_output=True,
                          text=True, check=True).stdout


def full_sha(gitdir, commit):
    return subprocess.run(["git", "-C", gitdir, "rev-parse", commit], capture_output=True, text=True,
                          check=True).stdout.strip()


def norm(s):
    return re.sub(r"[^a-z0-9]", "", s.lower())


def conv_schema(p):
    """BFCL parameter schema -> JSON Schema (dict->object, float->number, tuple->array, any->no type)."""
    out = {}
    t = p.get("type")
    if isinstance(t, str) and t in TYPE_MAP:
        out["type"] = TYPE_MAP[t]
    # "any" and "" -> no type
    for k in KEEP:
        if k in p:
            out[k] = p[k]
    if isinstance(p.get("properties"), dict):
        out["properties"] = {k: conv_schema(v) for k, v in p["properties"].items()}
        out.setdefault("type", "object")
    if isinstance(p.get("items"), dict):
        out["items"] = conv_schema(p["items"])
    return out


def conv_tool(f):
    schema = conv_schema(f.get("parameters") or {})
    schema["type"] = "object"
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    # put type first for readability
    schema = {"type": "object", **{k: v for k, v in schema.items() if k != "type"}}
    return {"name": f["name"], "description": f.get("description", ""), "input_schema": schema}


def load_items(gorilla):
    items = {}
    for c in CATEGORIES:
        txt = git_show(gorilla, GORILLA_COMMIT, f"{GORILLA_DATA}/gorilla_openfunctions_v1_test_{c}.json")
        for line in txt.splitlines():
            if line.strip():
                d = json.loads(line)
                items[d["id"]] = d
    return items


def functions_of(item):
    f = item["function"]
    return f if isinstance(f, list) else [f]


def load_results(results):
    models = subprocess.run(["git", "-C", results, "ls-tree", "--name-only", f"{RESULTS_COMMIT}:{RESULTS_DIR}"],
                            capture_output=True, text=True, check=True).stdout.split()
    out = {}
    for m in models:
        for c in CATEGORIES:
            path = f"{RESULTS_DIR}/{m}/gorilla_openfunctions_v1_test_{c}_result.json"
            for line in git_show(results, RESULTS_COMMIT, path).splitlines():
                if not line.strip():
                    continue
                d = json.loads(line)
                out[(m, d["id"])] = (c, path, d["result"])
    return out


def starts_like_call(t):
    s = t.lstrip()
    return bool(re.match(r"(\[|\{|<tool_call>|<\|im_start\|>|<functioncall>|```|\(|<<function>>)", s)) or \
        bool(re.match(r"[\w.]+\(", s))


def text_dev_ids():
    p = os.path.join(HERE, "..", "bfcl", "text-dev.jsonl")
    return {json.loads(l)["id"] for l in open(p)} if os.path.exists(p) else set()


def bfcl_candidates(a):
    items = load_items(a.gorilla)
    res = load_results(a.results)
    banned = text_dev_ids()
    per = {}
    for (m, iid), (c, path, r) in res.items():
        if not isinstance(r, str) or len(r.encode()) > MAX_TEXT or f"{m}/{iid}" in banned:
            continue
        names = [f["name"] for f in functions_of(items[iid])]
        if not any(norm(n) in norm(r) for n in names) or starts_like_call(r):
            continue
        callshape = any(re.search(re.escape(n) + r"\s*\(", r) or re.search(re.escape(n.replace(".", "_")) + r"\s*\(", r)
                        for n in names)
        key = hashlib.sha256(f"{m}/{iid}".encode()).hexdigest()
        per.setdefault((m, c), []).append((not callshape, key, iid, r))
    rows = []
    for (m, c), lst in sorted(per.items()):
        # alternate texts with a call-shaped mention of an offered tool and texts without one
        cs = sorted(x for x in lst if not x[0])
        ps = sorted(x for x in lst if x[0])
        mixed = [x for pair in zip(cs, ps) for x in pair] + cs[len(ps):] + ps[len(cs):]
        for nc, key, iid, r in mixed[: a.per]:
            rows.append({"id": f"bfcl/{m}/{iid}", "model": m, "cat": c, "callshape": not nc,
                         "question": items[iid]["question"],
                         "tools": [x["name"] for x in functions_of(items[iid])], "text": r})
    # Reading order used for labelling (run with --per 8):
    #  1. every relevance candidate;
    #  2. other categories, texts with no call-shaped content at all ("clean");
    #  3. other categories, longer texts with a code block and call-shaped content ("hard"): two per (model,
    #     category), shuffled with random.Random(7); the first 32 of them were read.
    rel = [r for r in rows if r["cat"] == "relevance"]
    oth = sorted((r for r in rows if r["cat"] != "relevance"), key=lambda r: (r["callshape"], r["cat"], r["model"]))
    callish = lambda t: bool(re.search(r"[\w.\\]+\s*\(|\"name\"|'name'|<function_call>|\"arguments\"|<\|im_start\|>|<tool_call>", t))
    glm = lambda t: bool(re.match(r"\s*[\w\\]+\s*\n\s*\{", t))
    clean = [r for r in oth if not callish(r["text"]) and not glm(r["text"])]
    hard = [r for r in oth if callish(r["text"]) and not glm(r["text"]) and "```" in r["text"] and len(r["text"]) > 600]
    byk = {}
    for r in hard:
        byk.setdefault((r["model"], r["cat"]), []).append(r)
    hard = [r for k in sorted(byk) for r in byk[k][:2]]
    random.Random(7).shuffle(hard)
    with open(a.o, "w") as f:
        for stage, lst in (("relevance", rel), ("other-clean", clean), ("other-hard", hard[:32])):
            for r in lst:
                f.write(json.dumps(dict(r, stage=stage), ensure_ascii=False) + "\n")


def bfcl_assemble(a):
    items = load_items(a.gorilla)
    res = load_results(a.results)
    rsha = full_sha(a.results, RESULTS_COMMIT)
    labels = [json.loads(l) for l in open(os.path.join(HERE, "labels.jsonl")) if l.strip()]
    with open(a.o, "w") as f:
        for lab in labels:
            if not lab["id"].startswith("bfcl/") or not lab.get("keep"):
                continue
            _, m, iid = lab["id"].split("/", 2)
            c, path, r = res[(m, iid)]
            rec = {"id": lab["id"], "source": f"HuanzhiMao/BFCL-Result@{rsha}:{path}", "licence": "Apache-2.0",
                   "tools": [conv_tool(x) for x in functions_of(items[iid])], "text": r,
                   "kind": lab["kind"], "why": lab["why"]}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------------------------------------------
# Documentation passages (docs.jsonl). Passages are given by hand in docs_spec.json (repository, commit, path,
# line range, offered tools, label); the text is read back from the snapshot and checked to be a verbatim slice.
# For MCP server READMEs ("tools": "mcp-readme") the offered tools are that server's tools as its README documents
# them, parsed from the README at the same commit by mcp_readme_tools() below.

MIRRORS = {
    "modelcontextprotocol/servers": "/work/.mirror/modelcontextprotocol+servers/repo",
    "NousResearch/Hermes-Function-Calling": "/work/.mirror/NousResearch+Hermes-Function-Calling/repo",
    "QwenLM/Qwen": "/work/.mirror/QwenLM+Qwen/repo",
    "mistralai/mistral-common": "/work/.mirror/mistralai+mistral-common/repo",
    "mistralai/mistral-inference": "/work/.mirror/mistralai+mistral-inference/repo",
    "openai/harmony": "/work/.mirror/openai+harmony/repo",
    "ShishirPatil/gorilla": "/work/.mirror/ShishirPatil+gorilla/repo",
}
MCP_OVERRIDES = {
    "generate_image": {"description": "Generates images with multiple model options. Opens result in browser and returns URL.",
                       "input_schema": {"type": "object", "properties": {
                           "prompt": {"type": "string", "description": "Image description"},
                           "model": {"type": "string", "description": "Model ID (default: \"207910310772879360\")"},
                           "image_count": {"type": "number", "description": "Number of images (default: 1)"}},
                           "required": ["prompt"]}},
    "sequential_thinking": {"description": "Facilitates a detailed, step-by-step thinking process for problem-solving and analysis."},
}


def _ptype(t):
    t = t.strip().lower()
    opt = "optional" in t or "default" in t
    t = t.replace("optional", "").strip(" ,")
    t = t.split(",")[0].strip()
    if "|" in t:
        return {}, opt
    if t.endswith("[]"):
        it = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean",
              "object": "object"}.get(t[:-2].strip())
        return ({"type": "array", "items": {"type": it}} if it else {"type": "array"}), opt
    if t.startswith("array"):
        if "object" in t:
            return {"type": "array", "items": {"type": "object"}}, opt
        if "string" in t:
            return {"type": "array", "items": {"type": "string"}}, opt
        return {"type": "array"}, opt
    m = {"string": "string", "str": "string", "number": "number", "int": "integer", "integer": "integer",
         "boolean": "boolean", "bool": "boolean", "object": "object", "dict": "object"}
    return ({"type": m[t]} if t in m else {}), opt


def mcp_readme_tools(md):
    """Tools documented in an MCP server README: '- **name**' / 'N. `name`' / '### name' items under a Tools
    heading, with their 'Input(s):' bullets '`param` (type[, optional]): description'."""
    tools, in_tools, tools_level, cur, input_indent, in_inputs = [], False, None, None, None, False

    def add(cur, pm):
        name, ty, desc = pm.group(1), pm.group(2) or "", (pm.group(3) or "").strip()
        sch, opt = _ptype(ty)
        if desc:
            sch["description"] = desc
        cur["props"][name] = sch
        if not (opt or cur.get("optblock") or "optional" in desc.lower() or "default" in desc.lower()
                or "default" in ty.lower()):
            cur["req"].append(name)

    for ln in md.split("\n"):
        h = re.match(r"^(#+)\s+(.*)", ln)
        if h:
            lvl, title = len(h.group(1)), h.group(2)
            if re.search(r"\btools?\b", title, re.I) and not in_tools:
                in_tools, tools_level = True, lvl
                continue
            if in_tools and lvl <= tools_level:
                in_tools = False
            elif in_tools and re.match(r"^`?[a-z_][a-z0-9_]*`?$", title.strip()):
                cur = {"name": title.strip("` "), "description": "", "props": {}, "req": []}
                tools.append(cur)
                in_inputs = False
                continue
            if not in_tools:
                continue
        if not in_tools:
            continue
        m = re.match(r"^(\s*)(?:\d+\.\s+|[-*]\s+)(?:\*\*`?|`)([A-Za-z0-9_.-]+)(?:`?\*\*|`)\s*(?:[-:]\s*(.*))?$", ln)
        if m and not m.group(1):
            cur = {"name": m.group(2), "description": (m.group(3) or "").strip(), "props": {}, "req": []}
            tools.append(cur)
            in_inputs, input_indent = False, None
            continue
        if cur is None:
            continue
        s = ln.strip()
        if not s:
            continue
        ind = len(ln) - len(ln.lstrip())
        mi = re.match(r"^(?:[-*]\s+)?(?:\*\*)?(?:Inputs?|Parameters?|Arguments?|Required arguments|Optional arguments|"
                      r"Required inputs|Optional inputs):?(?:\*\*)?:?\s*(.*)$", s, re.I)
        if mi:
            in_inputs, input_indent = True, None
            cur["optblock"] = "optional" in s.lower() and "required" not in s.lower()
            pm = re.match(r"^`([A-Za-z0-9_]+)`\s*\(([^)]*)\)\s*:?\s*(.*)$", mi.group(1))
            if pm:
                add(cur, pm)
                input_indent = ind + 2
            continue
        if not in_inputs and not cur["props"] and re.match(r"^[-*]\s+`[A-Za-z0-9_]+`\s*\(", s):
            in_inputs, input_indent = True, None
        if in_inputs:
            pm = re.match(r"^[-*]\s+`([A-Za-z0-9_]+)`\s*(?:\(([^)]*)\))?\s*:?\s*(.*)$", s)
            if pm:
                if input_indent is None:
                    input_indent = ind
                if ind == input_indent:
                    add(cur, pm)
                continue
            if input_indent is not None and ind <= input_indent - 2:
                in_inputs = False
            if input_indent is not None and ind > input_indent:
                continue
            in_inputs = in_inputs and ind >= (input_indent or 0)
            continue
        if not cur["description"] and re.match(r"^[-*]\s+", s) and \
                not re.match(r"^[-*]\s+(Returns:|Features|Note|No input)", s, re.I):
            cur["description"] = re.sub(r"^[-*]\s+", "", s)
    out = []
    for t in tools:
        sch = {"type": "object", "properties": t["props"]}
        if t["req"]:
            sch["required"] = t["req"]
        tool = {"name": t["name"], "description": t["description"], "input_schema": sch}
        tool.update(MCP_OVERRIDES.get(t["name"], {}))
        out.append(tool)
    return out


def docs_assemble(a):
    spec = json.load(open(os.path.join(HERE, "docs_spec.json")))
    counter = {}
    with open(a.o, "w") as f:
        for p in spec:
            if "text" in p:     # transcribed passage (repository too large to fetch here)
                text = p["text"]
            else:
                full = git_show(MIRRORS[p["repo"]], p["commit"], p["path"])
                lo, hi = p["lines"]
                text = "\n".join(full.split("\n")[lo - 1:hi])
                assert text in full and text.strip()
            if p["tools"] == "mcp-readme":
                tools = mcp_readme_tools(git_show(MIRRORS[p["repo"]], p["commit"], p["path"]))
            else:
                tools = p["tools"]
            key = (p["repo"], p["path"])
            counter[key] = counter.get(key, 0) + 1
            src = f"{p['repo']}@{p['commit']}:{p['path']}"
            if "lines" in p:
                src += f"#L{p['lines'][0]}-L{p['lines'][1]}"
            rec = {"id": f"docs/{p['repo']}/{p['path']}#{counter[key]}", "source": src, "licence": p["licence"],
                   "tools": tools, "text": text, "kind": p["kind"], "why": p["why"]}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def check(_a):
    seen, n, bad = set(), 0, 0
    for fn in ("bfcl.jsonl", "docs.jsonl", "transcripts.jsonl", "bfcl-hard.jsonl"):
        p = os.path.join(HERE, fn)
        if not os.path.exists(p):
            continue
        for i, line in enumerate(open(p), 1):
            d = json.loads(line)
            n += 1
            errs = []
            if set(d) != {"id", "source", "licence", "tools", "text", "kind", "why"}:
                errs.append(f"keys {sorted(d)}")
            if d["kind"] not in {"explains", "refuses", "asks", "example", "hypothetical", "offers_options",
                                 "code", "docs_template", "past", "other"}:
                errs.append("kind")
            errs += tool_errors(d)
            if d["text"] in seen:
                errs.append("duplicate text")
            if d["id"] in seen:
                errs.append("duplicate id")
            seen.add(d["text"]); seen.add(d["id"])
            if errs:
                bad += 1
                print(f"{fn}:{i} {d['id']}: {'; '.join(errs)}")
    print(f"{n} records, {bad} with problems")
    return 1 if bad else 0


def tool_errors(d):
    """What is wrong with a record's tools and text: names, schemas, keys, a tool named, the length."""
    errs = []
    if not d["tools"]:
        errs.append("no tools")
    for t in d["tools"]:
        if not NAME_RE.match(t.get("name", "")):
            errs.append(f"name {t.get('name')!r}")
        s = t.get("input_schema")
        if not (isinstance(s, dict) and s.get("type") == "object"):
            errs.append(f"schema of {t.get('name')}")
        if set(t) != {"name", "description", "input_schema"}:
            errs.append("tool keys")
    if not any(norm(t["name"]) in norm(d["text"]) for t in d["tools"]):
        errs.append("names no tool")
    if len(d["text"].encode()) > MAX_TEXT:
        errs.append("too long")
    return errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["bfcl-candidates", "bfcl-assemble", "docs-assemble", "check"])
    ap.add_argument("--results", default="/work/.mirror/HuanzhiMao+BFCL-Result/repo")
    ap.add_argument("--gorilla", default="/work/.mirror/ShishirPatil+gorilla/repo")
    ap.add_argument("--per", type=int, default=12, help="candidates per (model, category)")
    ap.add_argument("-o", default="-")
    a = ap.parse_args()
    if a.cmd == "bfcl-candidates":
        bfcl_candidates(a)
    elif a.cmd == "bfcl-assemble":
        bfcl_assemble(a)
    elif a.cmd == "docs-assemble":
        docs_assemble(a)
    else:
        sys.exit(check(a))


if __name__ == "__main__":
    main()
