#!/usr/bin/env python3
"""Hard BFCL negatives (bfcl-hard.jsonl): answers that DO start like a call or contain call-shaped content, yet
make no call as their action (python3, standard library only; reuses build.py beside it).

The *selection of candidates* is mechanical; the *labels* (keep or not, kind, why) were given by hand, by
reading every candidate in full, and live in labels-hard.jsonl next to this script.

Usage:
  build_hard.py candidates -o candidates-hard.jsonl   (what was read, in reading order)
  build_hard.py assemble   -o bfcl-hard.jsonl         (joins labels-hard.jsonl with the verbatim results)
  build_hard.py check                                 (build.py's checks over bfcl-hard.jsonl; duplicates
                                                       across every .jsonl corpus file of this folder)
"""
import argparse, hashlib, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build as B  # noqa: E402

CATEGORIES = ["relevance", "java", "javascript", "rest", "executable_simple", "executable_multiple_function",
              "executable_parallel_function", "executable_parallel_multiple_function"]
assert set(CATEGORIES) == set(B.CATEGORIES)
PHRASE = re.compile(r"(for example|for instance|would look like|could look like|you could|you can use|here'?s how|"
                    r"here is how|would you like|shall I|should I|do you want|cannot|can't|unable|not able|suppose|"
                    r"hypothetical|if you (provide|have|want|give)|placeholder|replace|example usage|example:|e\.g\.)",
                    re.I)


def callshaped(text, names):
    """Starts like a call, or holds a code fence, '[', '{', '<tool_call>' or 'name(' of an offered function."""
    cs = any(re.search(re.escape(n) + r"\s*\(", text) or re.search(re.escape(n.replace(".", "_")) + r"\s*\(", text)
             for n in names)
    return B.starts_like_call(text) or "```" in text or "[" in text or "{" in text or "<tool_call>" in text or cs


def features(text, names):
    f = set()
    for n in names:
        short = n.split(".")[-1]
        if re.search(r"\bdef\s+(" + re.escape(short) + "|" + re.escape(n.replace(".", "_")) + r")\s*\(", text):
            f.add("def")
        if re.search(r"(function\s+" + re.escape(short) + r"\s*\(|" + re.escape(short) +
                     r"\s*=\s*(async\s*)?(function|\())", text):
            f.add("jsdef")
    if re.search(r"^\s*(import|from)\s+\w", text, re.M):
        f.add("import")
    if re.search(r"\b(public|private|static)\s+(static\s+)?(void|class)\b", text):
        f.add("javaclass")
    if re.search(r"<[a-z_ ]+>|your_\w+|YOUR_|\.\.\.", text):
        f.add("placeholder")
    if PHRASE.search(text):
        f.add("phrase")
    if "```" in text:
        f.add("fence")
    words = len(re.findall(r"\b[a-zA-Z]{3,}\b", re.sub(r"```.*?```", " ", text, flags=re.S)))
    if words > 25:
        f.add("prose")
    return f


def tier(f):
    """0 code defining/wrapping the tool; 1 fenced program with imports; 2 'example/offer/cannot' prose with a
    fence or placeholders; 3 such prose alone; None: too little prose outside code to be anything but a call."""
    if "prose" not in f:
        return None
    if f & {"def", "jsdef", "javaclass"}:
        return 0
    if "import" in f and "fence" in f:
        return 1
    if "phrase" in f and ("fence" in f or "placeholder" in f):
        return 2
    if "phrase" in f:
        return 3
    return None


def existing_ids():
    ids = set()
    for fn in ("labels.jsonl", "bfcl.jsonl"):
        p = os.path.join(HERE, fn)
        if os.path.exists(p):
            ids |= {json.loads(l)["id"] for l in open(p) if l.strip()}
    return ids


STRONG = re.compile(r"(would you like|shall I|do you want me|should I proceed|let me know if you (want|would like)|"
                    r"if we had|would look like|could look like|for example|for instance|hypothetical|suppose|"
                    r"placeholder|replace [^.\n]{0,60} with|I (cannot|can't|can not|am unable to|'m unable to|"
                    r"am not able to) (directly )?(execute|run|call|make|perform|invoke)|I previously|earlier I|"
                    r"I called|I have called)", re.I)


def candidates(a):
    """Two reading stages. 'code': per (model, category) up to --per texts, round-robin over tiers 0-3.
    'shapes' (read after it, for variety of non-code shapes): texts not read in 'code', not from
    deepseek-coder (all 24 of its texts read in 'code' were degenerate), not opening with <tool_call> or
    <|im_start|> (every such text read in 'code' was a call), with no def/function/class/import (code was
    already plentiful), with more than 25 words of prose and a STRONG phrase (offer, example, supposition,
    inability, placeholder); up to --per2 per (model, category) in hash order."""
    items = B.load_items(a.gorilla)
    res = B.load_results(a.results)
    banned = B.text_dev_ids()
    done = existing_ids()
    per, pool = {}, []
    for (m, iid), (c, path, r) in res.items():
        if not isinstance(r, str) or len(r.encode()) > B.MAX_TEXT or f"{m}/{iid}" in banned \
                or f"bfcl/{m}/{iid}" in done:
            continue
        names = [x["name"] for x in B.functions_of(items[iid])]
        if not any(B.norm(n) in B.norm(r) for n in names) or not callshaped(r, names):
            continue
        f = features(r, names)
        key = hashlib.sha256(f"hard/{m}/{iid}".encode()).hexdigest()
        pool.append((m, c, iid, r, f, key))
        t = tier(f)
        if t is None:
            continue
        per.setdefault((m, c), {}).setdefault(t, []).append((key, iid, r, f))
    order = lambda mc: (CATEGORIES.index(mc[1]), mc[0])
    rows = []
    for (m, c), tiers in sorted(per.items(), key=lambda kv: order(kv[0])):
        for t in tiers.values():
            t.sort()
        # round-robin over tiers (variety of shapes), in hash order inside a tier
        picked, k = [], 0
        while len(picked) < a.per and any(tiers.values()):
            t = sorted(tiers)[k % len(tiers)]
            if tiers[t]:
                picked.append((t,) + tiers[t].pop(0))
            k += 1
        for t, key, iid, r, f in picked:
            rows.append({"id": f"bfcl-hard/{m}/{iid}", "stage": "code", "model": m, "cat": c, "tier": t,
                         "features": sorted(f), "question": items[iid]["question"],
                         "tools": [x["name"] for x in B.functions_of(items[iid])], "text": r})
    seen = {r["id"] for r in rows}
    per2 = {}
    for m, c, iid, r, f, key in pool:
        if f"bfcl-hard/{m}/{iid}" in seen or m.startswith("deepseek-ai_deepseek-coder") \
                or re.match(r"\s*(<tool_call>|<\|im_start\|>)", r) or f & {"def", "jsdef", "javaclass", "import"} \
                or "prose" not in f or not STRONG.search(r):
            continue
        per2.setdefault((m, c), []).append((key, iid, r, f))
    for (m, c), lst in sorted(per2.items(), key=lambda kv: order(kv[0])):
        for key, iid, r, f in sorted(lst)[: a.per2]:
            rows.append({"id": f"bfcl-hard/{m}/{iid}", "stage": "shapes", "model": m, "cat": c, "tier": tier(f),
                         "features": sorted(f), "question": items[iid]["question"],
                         "tools": [x["name"] for x in B.functions_of(items[iid])], "text": r})
    out = sys.stdout if a.o == "-" else open(a.o, "w")
    for r in rows:
        out.write(json.dumps(r, ensure_ascii=False) + "\n")


def assemble(a):
    items = B.load_items(a.gorilla)
    res = B.load_results(a.results)
    rsha = B.full_sha(a.results, B.RESULTS_COMMIT)
    labels = [json.loads(l) for l in open(os.path.join(HERE, "labels-hard.jsonl")) if l.strip()]
    with open(a.o, "w") as f:
        for lab in labels:
            if not lab.get("keep"):
                continue
            _, m, iid = lab["id"].split("/", 2)
            c, path, r = res[(m, iid)]
            rec = {"id": lab["id"], "source": f"HuanzhiMao/BFCL-Result@{rsha}:{path}", "licence": "Apache-2.0",
                   "tools": [B.conv_tool(x) for x in B.functions_of(items[iid])], "text": r,
                   "kind": lab["kind"], "why": lab["why"]}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


KINDS = {"explains", "refuses", "asks", "example", "hypothetical", "offers_options", "code", "docs_template",
         "past", "other"}
FILES = ("bfcl.jsonl", "docs.jsonl", "transcripts.jsonl", "bfcl-hard.jsonl")


def check(_a):
    """build.py's per-record checks over bfcl-hard.jsonl, duplicate texts/ids across all corpus files, and no
    (model, item) shared with labels.jsonl or tests/data/bfcl/text-dev.jsonl."""
    seen, n, bad = {}, 0, 0
    banned = B.text_dev_ids()
    old = {json.loads(l)["id"].split("/", 1)[1] for l in open(os.path.join(HERE, "labels.jsonl")) if l.strip()}
    for fn in FILES:
        p = os.path.join(HERE, fn)
        if not os.path.exists(p):
            continue
        for i, line in enumerate(open(p), 1):
            d = json.loads(line)
            errs = []
            if d["text"] in seen:
                errs.append(f"duplicate text of {seen[d['text']]}")
            if d["id"] in seen:
                errs.append("duplicate id")
            seen[d["text"]] = d["id"]; seen[d["id"]] = d["id"]
            if fn == "bfcl-hard.jsonl":
                n += 1
                if set(d) != {"id", "source", "licence", "tools", "text", "kind", "why"}:
                    errs.append(f"keys {sorted(d)}")
                if d["kind"] not in KINDS:
                    errs.append("kind")
                errs += B.tool_errors(d)
                mi = d["id"].split("/", 1)[1]
                if mi in banned or mi in old:
                    errs.append("(model, item) already used")
                if d["licence"] != "Apache-2.0" or not d["source"].startswith("HuanzhiMao/BFCL-Result@"):
                    errs.append("source/licence")
            if errs:
                bad += 1
                print(f"{fn}:{i} {d['id']}: {'; '.join(errs)}")
    print(f"{n} records in bfcl-hard.jsonl, {bad} with problems")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["candidates", "assemble", "check"])
    ap.add_argument("--results", default="/work/.mirror/HuanzhiMao+BFCL-Result/repo")
    ap.add_argument("--gorilla", default="/work/.mirror/ShishirPatil+gorilla/repo")
    ap.add_argument("--per", type=int, default=3, help="stage 'code': candidates per (model, category)")
    ap.add_argument("--per2", type=int, default=2, help="stage 'shapes': candidates per (model, category)")
    ap.add_argument("-o", default="-")
    a = ap.parse_args()
    if a.cmd == "candidates":
        candidates(a)
    elif a.cmd == "assemble":
        assemble(a)
    else:
        sys.exit(check(a))


if __name__ == "__main__":
    main()
