"""lit test format of test/Corpus: every exported model is a test (see
test/Corpus/lit.local.cfg for what it checks). A module, not the cfg file,
so that lit's worker processes can unpickle the format."""
import json
import os
import shlex
import subprocess

import lit.formats
import lit.Test

import measure  # scripts/corpus/measure.py: the remark and summary parser

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Corpus")
with open(os.path.join(CORPUS, "manifest.json")) as f:
    MANIFEST = json.load(f)["files"]


class CorpusTest(lit.formats.TestFormat):
    def getTestsInDirectory(self, testSuite, path_in_suite, litConfig,
                            localConfig):
        source_path = testSuite.getSourcePath(path_in_suite)
        for source in sorted(os.listdir(source_path)):
            directory = os.path.join(source_path, source)
            if not os.path.isdir(directory):
                continue
            for name in sorted(os.listdir(directory)):
                if name.endswith(".mlir"):
                    yield lit.Test.Test(testSuite,
                                        path_in_suite + (source, name),
                                        localConfig)

    def execute(self, test, litConfig):
        path = test.getSourcePath()
        key = os.path.relpath(path, CORPUS)
        entry = MANIFEST.get(key)
        if entry is None:
            return lit.Test.FAIL, f"{key} has no entry in manifest.json"
        tools = test.config.attnfuse_tools_dir
        res = measure.run_one(os.path.join(tools, "attnfuse-opt"), path, 600)
        if res["status"] != "ok":
            return lit.Test.FAIL, f"attnfuse-opt: {res['status']}: {res['errors']}"
        want = entry.get("fused", entry["chains"])
        remarks = [r for r in res["remarks"] if r["text"].startswith("not fused")]
        if res["fused"] != want or len(remarks) != res["candidates"] - res["fused"]:
            return lit.Test.FAIL, (f"fused {res['fused']} of {res['candidates']} "
                                   f"candidates, expected {want}; remarks: {remarks}")
        # Every chain is a candidate (none silently skipped).
        if res["candidates"] < entry["chains"]:
            return lit.Test.FAIL, (f"{res['candidates']} candidate(s) for "
                                   f"{entry['chains']} chain(s)")
        # Structural masks and lse results: exactly the entry's (default 0).
        for field, key in (("structural", "structural"), ("lse", "lse")):
            if res[key] != entry.get(field, 0):
                fused = [r for r in res["remarks"] if r["text"].startswith("fused")]
                return lit.Test.FAIL, (f"{res[key]} fused chain(s) with {field}, expected "
                                       f"{entry.get(field, 0)}; remarks: {fused}")
        run = [os.path.join(tools, "attnfuse-run"), path, "--check=fa",
               f"--int-bound={entry.get('int_bound', 2)}"]
        # Runtime sizes: one compiled function at several lengths (within
        # what the exported model accepts: GPT-2's position table).
        lengths = entry.get("lengths", [1, 5, 16]) if entry.get("dynamic") else [None]
        out = ""
        for n in lengths:
            cmd = run + ([f"--dynamic-sizes={n}"] if n is not None else [])
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            out += " ".join(map(shlex.quote, cmd)) + "\n" + p.stdout + p.stderr
            if p.returncode != 0 or "PASS" not in p.stdout + p.stderr:
                return lit.Test.FAIL, out
        return lit.Test.PASS, out
