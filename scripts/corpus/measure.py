#!/usr/bin/env python3
"""Measure attn-raise-attention over the corpus of real frontend exports.

For every test/Corpus/<source>/*.mlir runs

  attnfuse-opt FILE --pass-pipeline="builtin.module([func.func(tosa-to-linalg-named,
      tosa-to-linalg, tosa-to-arith, tosa-to-tensor),] attn-raise-attention{summary=true})"

(the TOSA lowering only for files containing TOSA ops), parses the summary on
stderr (`attn-raise-attention: N candidate(s), F fused, U not fused`,
`  not fused (<key>): n`) and the remarks (`remark: not fused: <reason>`), and
compares with the TRUE number of attention chains per file from
test/Corpus/manifest.json ("chains").

Columns: files, chains (expected, from the manifest), cand (the pass's
candidates), fused, struct (fused chains whose attn.attention has a structural
mask: causal or sliding window, from the summary line `fused with a structural
mask: n`), lse (fused chains whose graph's log-sum-exp became the op's lse
result), notf (not fused), missed (= chains - fused), extra
(candidates beyond the expected chains: non-attention chains reported as
candidates, e.g. a SwiGLU MLP; counted as max(0, cand - chains) per file, negative
files excluded), neg (negative files: manifest "negative": true, chains 0, nothing
may fuse; their candidates are expected to be reported as not fused), wrong
(fusions in negative files, or more fusions than chains in a file), err (files where
attnfuse-opt failed or crashed).

Usage:
  scripts/corpus/measure.py [--opt build/bin/attnfuse-opt] [--corpus test/Corpus]
                            [--sources torch-linalg,torch-tosa] [--files] [--json]
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TOSA_PREFIX = "func.func(tosa-to-linalg-named, tosa-to-linalg, tosa-to-arith, tosa-to-tensor), "
SUMMARY_RE = re.compile(r"attn-raise-attention: (\d+) candidate\(s\), (\d+) fused, (\d+) not fused")
KEY_RE = re.compile(r"^\s+not fused \(([^)]*)\): (\d+)")
STRUCT_RE = re.compile(r"^\s+fused with a structural mask: (\d+)", re.M)
LSE_RE = re.compile(r"^\s+fused with the lse: (\d+)", re.M)
REMARK_RE = re.compile(r"^(.*?):(\d+):(\d+): remark: (fused.*|not fused: .*)$")
ERROR_RE = re.compile(r"^(.*?):(\d+):(\d+): error: (.*)$")
OPNAME_RE = re.compile(r"(?:=|^)\s*\"?([a-z_][a-z0-9_]*\.[a-z0-9_.]+)")


def is_tosa(path):
    with open(path, errors="replace") as f:
        for line in f:
            if "tosa." in line and not line.lstrip().startswith("//"):
                return True
    return False


def run_one(opt, path, timeout):
    pipeline = "builtin.module(" + (TOSA_PREFIX if is_tosa(path) else "") + \
        "attn-raise-attention{summary=true})"
    cmd = [opt, path, f"--pass-pipeline={pipeline}", "-o", os.devnull]
    res = {"file": path, "pipeline": pipeline}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        res.update(status="timeout", rc=None, stderr="")
        return res
    res["rc"] = p.returncode
    err = p.stderr
    lines = err.splitlines()
    m = SUMMARY_RE.search(err)
    if m:
        res["candidates"], res["fused"], res["not_fused"] = map(int, m.groups())
    st = STRUCT_RE.search(err)
    res["structural"] = int(st.group(1)) if st else 0
    ls = LSE_RE.search(err)
    res["lse"] = int(ls.group(1)) if ls else 0
    res["keys"] = {}
    for ln in lines:
        k = KEY_RE.match(ln)
        if k:
            res["keys"][k.group(1)] = res["keys"].get(k.group(1), 0) + int(k.group(2))
    remarks, errors = [], []
    for i, ln in enumerate(lines):
        r = REMARK_RE.match(ln)
        if r:
            src = lines[i + 1] if i + 1 < len(lines) else ""
            op = OPNAME_RE.search(src)
            remarks.append({"line": int(r.group(2)), "op": op.group(1) if op else "?",
                            "text": r.group(4)})
            continue
        e = ERROR_RE.match(ln)
        if e:
            errors.append(f"{e.group(2)}:{e.group(3)}: {e.group(4)}")
    res["remarks"] = remarks
    res["errors"] = errors
    if p.returncode < 0 or "Stack dump" in err or "PLEASE submit a bug report" in err:
        res["status"] = f"crash (signal {-p.returncode})" if p.returncode < 0 else "crash"
    elif p.returncode != 0 or errors or not m:
        res["status"] = "error"
        if not errors:
            res["errors"] = [l for l in lines if l.strip()][:3]
    else:
        res["status"] = "ok"
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opt", default=os.path.join("build", "bin", "attnfuse-opt"))
    ap.add_argument("--corpus", default=os.path.join(REPO, "test", "Corpus"))
    ap.add_argument("--sources", default=None, help="comma-separated; default: every folder")
    ap.add_argument("--manifest", default=None, help="default: <corpus>/manifest.json")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--files", action="store_true", help="also print one row per file")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    args = ap.parse_args()

    opt = args.opt
    if not os.path.isabs(opt) and not os.path.exists(opt):
        opt = os.path.join(REPO, opt)
    if not os.path.exists(opt):
        print(f"attnfuse-opt not found: {args.opt}", file=sys.stderr)
        return 2
    manifest_path = args.manifest or os.path.join(args.corpus, "manifest.json")
    expected = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            entries = json.load(f)["files"]
        expected = {k: v["chains"] for k, v in entries.items()}
        negatives = {k for k, v in entries.items() if v.get("negative")}
    else:
        negatives = set()

    if args.sources:
        sources = args.sources.split(",")
    else:
        sources = sorted(d for d in os.listdir(args.corpus)
                         if os.path.isdir(os.path.join(args.corpus, d)))
    report = {"opt": opt, "sources": {}}
    for src in sources:
        d = os.path.join(args.corpus, src)
        files = sorted(f for f in os.listdir(d) if f.endswith(".mlir")) if os.path.isdir(d) else []
        rows = []
        for f in files:
            rel = f"{src}/{f}"
            r = run_one(opt, os.path.join(d, f), args.timeout)
            r["file"] = rel
            r["chains"] = expected.get(rel)
            rows.append(r)
        tot = collections.Counter()
        keys = collections.Counter()
        reasons = collections.Counter()
        bad = []
        no_manifest = []
        for r in rows:
            tot["files"] += 1
            ch = r["chains"]
            if ch is None:
                no_manifest.append(r["file"])
                ch = 0
            tot["chains"] += ch
            if r["status"] != "ok":
                bad.append(r)
                tot["err"] += 1
                tot["missed"] += ch
                continue
            tot["cand"] += r["candidates"]
            tot["fused"] += r["fused"]
            tot["struct"] += r["structural"]
            tot["lse"] += r["lse"]
            tot["notf"] += r["not_fused"]
            tot["missed"] += max(0, ch - r["fused"])
            if r["file"] in negatives:
                tot["neg"] += 1
                tot["wrong"] += r["fused"]  # nothing in a negative file may fuse
            else:
                tot["extra"] += max(0, r["candidates"] - ch)
                tot["wrong"] += max(0, r["fused"] - ch)
            keys.update(r["keys"])
            for rm in r["remarks"]:
                if rm["text"].startswith("not fused"):
                    reasons[f"{rm['op']}: {rm['text']}"] += 1
        report["sources"][src] = {
            "totals": dict(tot), "not_fused_keys": dict(keys.most_common()),
            "remarks": dict(reasons.most_common()),
            "failed_files": [{"file": r["file"], "status": r["status"], "errors": r["errors"][:3]}
                             for r in bad],
            "not_in_manifest": no_manifest,
            "files": [{k: r.get(k) for k in ("file", "chains", "candidates", "fused", "structural",
                                               "lse", "not_fused", "status", "keys", "remarks")}
                      for r in rows],
        }
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
        return 0

    cols = ["files", "neg", "chains", "cand", "fused", "struct", "lse", "notf", "missed", "extra",
            "wrong", "err"]
    print(f"attnfuse-opt: {opt}\n")
    print(f"{'source':<14}" + "".join(f"{c:>8}" for c in cols))
    grand = collections.Counter()
    for src, s in report["sources"].items():
        t = s["totals"]
        grand.update(t)
        print(f"{src:<14}" + "".join(f"{t.get(c, 0):>8}" for c in cols))
    print(f"{'total':<14}" + "".join(f"{grand.get(c, 0):>8}" for c in cols))
    for src, s in report["sources"].items():
        print(f"\n== {src}")
        if s["not_fused_keys"]:
            print("  not fused (summary key): " +
                  ", ".join(f"{k} {n}" for k, n in s["not_fused_keys"].items()))
        for text, n in s["remarks"].items():
            print(f"  {n:4d}  {text}")
        for b in s["failed_files"]:
            print(f"  FAILED {b['file']}: {b['status']}: " + " | ".join(b["errors"])[:300])
        for nm in s["not_in_manifest"]:
            print(f"  (no manifest entry: {nm})")
        if args.files:
            for r in s["files"]:
                print(f"    {r['file']:<44} chains {r['chains']!s:>3}  cand {r['candidates']!s:>3}"
                      f"  fused {r['fused']!s:>3}  struct {r['structural']!s:>3}"
                      f"  lse {r['lse']!s:>2}  {r['status']}  "
                      + ", ".join(f"{k} {n}" for k, n in (r["keys"] or {}).items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
