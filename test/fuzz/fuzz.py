#!/usr/bin/env python3
"""attnfuse's fuzzer.

Modes (docs/Testing.md, "Fuzzing"):
  programs  random valid attn.attention / attn.attention_backward programs,
            tiled vs reference lowering vs fp64 through attnfuse-run, and the
            backward against finite differences of the fp64 forward
            (programs.py);
  passes    random pass sequences of attnfuse-opt over the test corpus;
  mutate    attribute/shape/text mutants of the corpus through random passes
            or attnfuse-run (corpus.py);
  capi      random call sequences of the C API (libAttnFuseCAPI.so, next to
            --bin in ../lib) with null, destroyed, foreign and wrong-type
            handles, chip strings, targets and Run arguments, checked against
            the contract of include/attnfuse-c/Compiler.h (capi.py);
  all       the four, sharing the time equally (without capi under ASan:
            a sanitized library does not load into an uninstrumented Python).

Each failure gets a signature (crashes.py; for programs also the kind of
mismatch and the features of the shrunk case); failures with the same
signature are one finding. Every finding is written to OUT/findings/<n>/
(the input, the command, the output; crashes minimized, failing programs
shrunk). Signatures matching a line of the known list (--known, default
test/fuzz/known-crashes.txt) are reported as known.

Prints cases per minute per mode and the findings; exit status 1 iff there
is a new (not known) finding.

usage: fuzz.py [--minutes M | --cases N] [--seed S] [--mode MODE] [--out DIR]
               [--bin DIR] [--known FILE]
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import capi  # noqa: E402
import corpus  # noqa: E402
import crashes  # noqa: E402
import programs  # noqa: E402


class Findings:
    def __init__(self, out, known):
        self.out, self.known, self.by_sig = out, known, {}

    def add(self, mode, sig, save):
        """Records a failure; `save(dir)` writes its reproducer if new."""
        key = f"{mode}: {sig}"
        f = self.by_sig.get(key)
        if f:
            f["count"] += 1
            return False
        d = os.path.join(self.out, "findings", str(len(self.by_sig)))
        os.makedirs(d, exist_ok=True)
        f = dict(signature=key, count=1, dir=d,
                 known=crashes.is_known(key, self.known))
        self.by_sig[key] = f
        save(d)
        with open(os.path.join(d, "signature.txt"), "w") as fh:
            fh.write(key + "\n")
        print(("KNOWN " if f["known"] else "NEW ") + key + f"  -> {d}", flush=True)
        return True


def program_case(rng, bin_dir, work, findings):
    c = programs.random_config(rng)
    sig, log = programs.run_case(c, bin_dir, work)
    if not sig:
        return
    if crashes.is_known("programs: " + sig, findings.known):
        findings.add("programs", sig, lambda d: _save_program(c, log, work, d))
        return
    small = programs.shrink(c, sig, bin_dir, work + "-shrink")
    sig2, log2 = programs.run_case(small, bin_dir, work + "-shrink")
    if not sig2:  # flaky: keep the original
        small, sig2, log2 = c, sig, log
    key = programs.strip_details(sig2) + f" [{programs.features(small)}]"
    findings.add("programs", key,
                 lambda d: _save_program(small, log2, work + "-shrink", d))


def _save_program(c, log, case_dir, d):
    shutil.copytree(case_dir, os.path.join(d, "case"), dirs_exist_ok=True)
    with open(os.path.join(d, "log.txt"), "w") as f:
        f.write(log)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=1)


def corpus_case(rng, chunks, bin_dir, work, findings, mutating):
    mode = "mutate" if mutating else "passes"
    name, text, action = corpus.random_case(chunks, rng, mutating)
    path = os.path.join(work, "case.mlir")
    sig, out = corpus.run_text(text, action, bin_dir, path)
    if not sig:
        return

    def save(d):
        small, act = (text, action)
        if sig != "timeout" and not crashes.is_known(f"{mode}: {sig}",
                                                      findings.known):
            small, act = corpus.minimize(text, action, sig, bin_dir,
                                         os.path.join(work, "min.mlir"))
        with open(os.path.join(d, "input.mlir"), "w") as f:
            f.write(f"// from {name}\n" + small)
        cmd = corpus.command("BIN", "input.mlir", act)
        with open(os.path.join(d, "command.txt"), "w") as f:
            f.write(" ".join(f"'{a}'" if " " in a else a for a in cmd) + "\n")
        with open(os.path.join(d, "log.txt"), "w") as f:
            f.write(out)
    findings.add(mode, sig, save)


def capi_case(rng, lib, work, findings):
    script = capi.random_script(rng)
    path = os.path.join(work, "script.json")
    sig, out = capi.run_script(script, lib, path)
    if not sig:
        return

    def save(d):
        small = script
        if sig != "timeout" and not crashes.is_known(f"capi: {sig}",
                                                      findings.known):
            small = capi.minimize(script, sig, lib,
                                  os.path.join(work, "min.json"))
        with open(os.path.join(d, "script.json"), "w") as f:
            json.dump(small, f, indent=1)
        with open(os.path.join(d, "command.txt"), "w") as f:
            f.write(" ".join(capi.command("LIB", "script.json")) + "\n")
        with open(os.path.join(d, "log.txt"), "w") as f:
            f.write(out)
    findings.add("capi", sig, save)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--cases", type=int, help="stop after N cases (per mode)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode",
                    choices=["programs", "passes", "mutate", "capi", "all"],
                    default="all")
    ap.add_argument("--out", default=None, help="default: a temporary folder")
    ap.add_argument("--bin", default=os.path.join(corpus.ROOT, "build", "bin"))
    ap.add_argument("--known", default=crashes.KNOWN_FILE)
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="attnfuse-fuzz-")
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="work-", dir=out)
    findings = Findings(out, crashes.load_known(a.known))
    chunks = corpus.load_corpus()
    modes = ["programs", "passes", "mutate", "capi"] if a.mode == "all" \
        else [a.mode]
    if a.mode == "all" and "ASAN_OPTIONS" in os.environ:
        modes.remove("capi")
    lib = capi.library_path(a.bin)
    rngs = {m: random.Random(f"{a.seed}:{m}") for m in modes}
    spent = {m: 0.0 for m in modes}
    count = {m: 0 for m in modes}
    deadline = time.time() + 60 * a.minutes
    while time.time() < deadline:
        live = [m for m in modes if a.cases is None or count[m] < a.cases]
        if not live:
            break
        mode = min(live, key=lambda m: spent[m])  # equal time per mode
        t = time.time()
        case_dir = os.path.join(work, f"{mode}")
        shutil.rmtree(case_dir, ignore_errors=True)
        os.makedirs(case_dir)
        if mode == "programs":
            program_case(rngs[mode], a.bin, case_dir, findings)
        elif mode == "capi":
            capi_case(rngs[mode], lib, case_dir, findings)
        else:
            corpus_case(rngs[mode], chunks, a.bin, case_dir, findings,
                        mode == "mutate")
        spent[mode] += time.time() - t
        count[mode] += 1
    shutil.rmtree(work, ignore_errors=True)
    for m in modes:
        rate = count[m] / spent[m] * 60 if spent[m] else 0
        print(f"{m}: {count[m]} cases in {spent[m]:.0f} s ({rate:.0f} cases/minute)")
    new = [f for f in findings.by_sig.values() if not f["known"]]
    known = [f for f in findings.by_sig.values() if f["known"]]
    for f in known + new:
        print(f"{'known' if f['known'] else 'NEW'} x{f['count']}: {f['signature']}  ({f['dir']})")
    print(f"fuzz: {sum(count.values())} cases, {len(new)} new findings, "
          f"{len(known)} known; seed {a.seed}; output in {out}")
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(dict(seed=a.seed, cases=count, seconds=spent,
                       findings=list(findings.by_sig.values())), fh, indent=1)
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
