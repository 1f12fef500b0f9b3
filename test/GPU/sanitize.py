#!/usr/bin/env python3
"""compute-sanitizer over attnfuse's kernels, one small launch per process.

scripts/run-compute-sanitizer.sh runs this on the GPU machine with the
artifacts of `scripts/build-gpu-artifacts.sh DIR sm_90a sanitize` (role
sanitize of bench/gpu_configs.py: small shapes covering every kernel family's
code paths). Needs Python, numpy, the CUDA driver and compute-sanitizer; no
PyTorch, no MLIR.

For every configuration it draws inputs (numpy, fixed seed), launches the
kernel once without a sanitizer (test/GPU/launch_kernel.py, inside guard
bands) and checks the outputs against test/lib/reference.py's fp64
evaluation (a sanity bound; check_gpu.py checks the numbers), then runs each
tool on the same launch, each in a process of its own (the launcher: ctypes
and libcuda, one cuMemAlloc per tensor), --jobs at a time, each bounded by
--timeout seconds:

  memcheck   exact buffer bounds (no guard bands)
  racecheck  --racecheck-report REPORT (hazard, analysis or all)
  synccheck
  initcheck  global memory (CUDA 13.0's has no --initcheck-address-space), inputs inside unwritten guard
             bands, outputs left unwritten before the launch; every report is
             classified by its address (below)

A run passes when the tool reports 0 errors (racecheck: 0 error hazards;
warnings are counted, and fail with --strict), the launcher ran the kernel
(no sanitizer-internal error, no timeout) and its outputs are bitwise those
of the launch without the tool.

initcheck classes (`Uninitialized ... memory read`):
  kernel: shared memory    a read of __shared__ memory no thread wrote
  kernel: output before write  a read of an output element the kernel had
                           not written
  kernel: past <arg>       a read in the guard band of an input: past the
                           tensor, inside memory the launcher allocated
  harness: host-written    a read of bytes the launcher wrote with
                           cuMemcpyHtoD/cuMemsetD8 (the tool missed a write;
                           the 128 bytes of a TMA kernel's tensor map, an
                           allocation of its own, are all host-written)
  unknown address          outside every buffer of the launcher
  tool: TMA-stored <out>   the copy back of an output that the kernel
                           stores by TMA (a tensor map whose source is that
                           output): initcheck does not count
                           cp.async.bulk.tensor stores as writes, so it
                           reports the host's read of every element
                           ("Uninitialized access ... by cudaMemcpy
                           source"); the plain launch shows every element
                           written, and the outputs under the tool must be
                           bitwise those
A report of a kernel class or of an unknown address fails the run; one of
the harness or tool classes is listed but does not (the kernel read what
the host wrote; the tool missed the kernel's writes).

Prints one line per tool and family and a total; writes OUT/summary.txt,
OUT/summary.json (every run: counts, classes, times) and OUT/logs.tar.xz
(the logs, TOOL/NAME.log). Inputs and outputs go to a temporary folder
(--keep keeps it). Exit status 1 if any run fails.

usage: sanitize.py [ARTIFACTS] [--out DIR] [--tools T,T] [--family F]
                   [--jobs N] [--timeout S] [--budget S]
                   [--racecheck-report R] [--tool-args TOOL:ARGS]
                   [--strict] [--keep]
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
import gpu_configs  # noqa: E402
import reference  # noqa: E402

LAUNCHER = os.path.join(ROOT, "test", "GPU", "launch_kernel.py")
TOOLS = ["memcheck", "racecheck", "synccheck", "initcheck"]
GUARD = 4096
# Sanity bound of max|O - fp64| per element type, times max(1, max|fp64|).
SANITY = {"bf16": 4e-2, "f16": 5e-3, "f32": 1e-4}


# ------------------------------------------------------------------ inputs

def to_bf16_bits(x):
    """float64 -> bf16 bit patterns (uint16), round to nearest even."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def from_bits(raw, dtype):
    """Raw launcher data (bf16 as uint16) -> float64."""
    if dtype == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return raw.astype(np.float64)


def rounded(x, dtype):
    """(raw array for the launcher, its float64 value)."""
    if dtype == "bf16":
        raw = to_bf16_bits(x)
    else:
        raw = np.asarray(x, dtype={"f16": np.float16, "f32": np.float32}[dtype])
    return raw, from_bits(raw, dtype)


def make_inputs(c, directory, seed):
    """Writes ARG.npy for the launcher; returns the float64 values."""
    rng = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    B, Hq, Hkv, Nq, Nk, D, Dv = (c[x] for x in
                                 ("B", "Hq", "Hkv", "Nq", "Nk", "D", "Dv"))
    values = {}
    for name, shape in (("q", (B, Hq, Nq, D)), ("k", (B, Hkv, Nk, D)),
                        ("v", (B, Hkv, Nk, Dv))):
        raw, values[name] = rounded(rng.standard_normal(shape), c["dtype"])
        np.save(os.path.join(directory, name + ".npy"), raw)
    values["bias"] = values["keep"] = values["seed"] = None
    if c["bias"]:
        raw, values["bias"] = rounded(
            rng.standard_normal(gpu_configs.side_shape(c, c["bias"][1])),
            c["bias"][0])
        np.save(os.path.join(directory, "bias.npy"), raw)
    if c["keep"]:
        keep = rng.random(gpu_configs.side_shape(c, c["keep"])) < 0.8
        np.save(os.path.join(directory, "keep.npy"), keep.astype(np.uint8))
        values["keep"] = keep
    if c["dropout"]:
        values["seed"] = int(rng.integers(0, 2**62))
        np.save(os.path.join(directory, "seed.npy"), np.int64(values["seed"]))
    return values


def fp64_reference(c, x):
    a = types.SimpleNamespace(
        scale=None, mask=c["mask"], align=c["align"], window=c["window"],
        softcap=(c.get("softcap", gpu_configs.SOFTCAP)
                 if c["score_mod"] == "softcap" else None),
        dropout=c["dropout"])
    o, lse, _ = reference.attention_f64(a, x["q"], x["k"], x["v"], x["bias"],
                                        x["keep"], x["seed"])
    return o, lse


# ----------------------------------------------------------------- running

def run_bounded(cmd, timeout, log):
    """Runs cmd in its own process group, output to `log`; kills the whole
    group after `timeout` s. Returns (exit status or None on timeout, s)."""
    t = time.time()
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = None
    return rc, time.time() - t


def tool_command(a, tool, art, name, inputs, outputs):
    # initcheck: enough reports printed to classify them all, as a rule (a
    # TMA-stored output gives one per element group the host copies back).
    limit = "100000" if tool == "initcheck" else "100"
    cmd = [a.sanitizer, "--tool", tool, "--print-limit", limit,
           "--show-backtrace", "device"]
    launcher = [sys.executable, LAUNCHER, os.path.join(art, name + ".json"),
                inputs, outputs]
    for extra in a.tool_args:
        which, _, args = extra.partition(":")
        if which == tool:
            cmd += args.split()
    if tool == "racecheck":
        cmd += ["--racecheck-report", a.racecheck_report]
    if tool == "initcheck":
        launcher += ["--guard", str(GUARD), "--no-fill"]
    return cmd + launcher


def buffers_of(text):
    m = re.search(r"^ATTNFUSE_BUFFERS (.*)$", text, re.M)
    return json.loads(m.group(1)) if m else []


def classify_initcheck(text, buffers):
    """[(class, kernel location, address)] of the initcheck reports."""
    reports = []
    for m in re.finditer(
            r"Uninitialized (__\w+__) memory read of size \d+ bytes\s*\n"
            r"(?:.*\n){0,6}?.*?at (\S+).*\n(?:.*\n){0,6}?.*?Address (0x[0-9a-fA-F]+)",
            text):
        space, where, addr = m.group(1), m.group(2), int(m.group(3), 16)
        if space == "__shared__":
            cls = "kernel: shared memory"
        else:
            cls = "unknown address"
            for b in buffers:
                if not b["alloc"] <= addr < b["alloc"] + b["alloc_bytes"]:
                    continue
                host = any(lo <= addr < hi for lo, hi in b["written"])
                inside = b["start"] <= addr < b["start"] + b["bytes"]
                if host:
                    cls = f"harness: host-written {b['name']}"
                elif inside and b["role"] == "output":
                    cls = f"kernel: {b['name']} before write"
                elif not inside:
                    cls = f"kernel: past {b['name']}"
                else:
                    cls = f"unknown: unwritten {b['name']}"
                break
        reports.append((cls, where, hex(addr)))
    return reports


def classify_host_reads(text, buffers):
    """[(class, "host", address)] of initcheck's reports of a host copy
    reading device memory it considers unwritten."""
    tma_stored = {b["source"] for b in buffers if b["role"] == "tensormap"}
    reports = []
    # One report per "Host API memory access error", its first address.
    for m in re.finditer(r"Host API memory access error .*\n\S*\s*"
                         r"Uninitialized access to (0x[0-9a-fA-F]+) on "
                         r"access by cudaMemcpy source", text):
        addr = int(m.group(1), 16)
        cls = "unknown address"
        for b in buffers:
            if b["start"] <= addr < b["start"] + b["bytes"]:
                cls = (f"tool: TMA-stored {b['name']}"
                       if b["role"] == "output" and b["name"] in tma_stored
                       else f"unknown: host read of unwritten {b['name']}")
                break
        reports.append((cls, "host", hex(addr)))
    return reports


def parse_tool_log(text, tool):
    r = {}
    # The total; not the count of "... errors were not printed" after it.
    m = re.findall(r"ERROR SUMMARY: (\d+) errors?\s*$", text, re.M)
    r["errors"] = int(m[-1]) if m else None
    m = re.search(r"RACECHECK SUMMARY: (\d+) hazards? displayed "
                  r"\((\d+) errors?, (\d+) warnings?\)", text)
    if m:
        r["hazards"], r["hazard_errors"], r["hazard_warnings"] = map(int, m.groups())
        # racecheck ends with its own summary, not ERROR SUMMARY.
        if r["errors"] is None:
            r["errors"] = r["hazard_errors"]
    r["internal_error"] = "Internal Sanitizer Error" in text
    r["launched"] = "ATTNFUSE_LAUNCH ok" in text
    m = re.search(r"^ATTNFUSE_LAUNCH error (.*)$", text, re.M)
    if m:
        r["launch_error"] = m.group(1)
    if tool == "initcheck":
        buffers = buffers_of(text)
        reports = (classify_initcheck(text, buffers) +
                   classify_host_reads(text, buffers))
        classes = {}
        for cls, where, _ in reports:
            classes.setdefault(cls, {"count": 0, "at": set()})
            classes[cls]["count"] += 1
            classes[cls]["at"].add(where)
        r["initcheck"] = {k: dict(count=v["count"], at=sorted(v["at"])[:4])
                          for k, v in classes.items()}
        r["initcheck_examples"] = reports[:3]
    return r


def same_outputs(dir_a, dir_b):
    for name in ("o", "lse"):
        pa, pb = (os.path.join(d, name + ".npy") for d in (dir_a, dir_b))
        if not (os.path.exists(pa) and os.path.exists(pb)):
            return False
        a, b = np.load(pa), np.load(pb)
        if a.shape != b.shape or a.tobytes() != b.tobytes():
            return False
    return True


def check_plain(c, out_dir, x, log_text):
    """The launch without a sanitizer against fp64 (sanity bound)."""
    r = dict(launched="ATTNFUSE_LAUNCH ok" in log_text,
             guards_ok="guards=ok" in log_text)
    if not r["launched"]:
        return dict(r, ok=False)
    o = from_bits(np.load(os.path.join(out_dir, "o.npy")), c["dtype"])
    lse = np.load(os.path.join(out_dir, "lse.npy")).astype(np.float64)
    ref_o, ref_lse = fp64_reference(c, x)
    r["unwritten"] = int(np.isnan(o).sum() + np.isnan(lse).sum())
    r["err"] = float(np.abs(o - ref_o).max())
    r["bound"] = SANITY[c["dtype"]] * max(1.0, float(np.abs(ref_o).max()))
    empty = ref_lse == -math.inf
    finite = ~empty
    r["lse_err"] = float(np.abs(lse[finite] - ref_lse[finite]).max()) if finite.any() else 0.0
    r["lse_empty_ok"] = bool(np.all(lse[empty] == -math.inf))
    r["ok"] = (r["guards_ok"] and r["unwritten"] == 0 and r["err"] <= r["bound"]
               and r["lse_err"] <= 1e-3 and r["lse_empty_ok"])
    return r


def plural(n, what):
    return f"{n} {what}{'s' * (n != 1)}"


def verdict(res, strict):
    """(ok, why) of one tool run."""
    why = []
    if res.get("timeout"):
        why.append(f"timeout after {res['seconds']:.0f} s")
    if res.get("internal_error"):
        why.append("Internal Sanitizer Error")
    if not res.get("launched"):
        why.append("launch " + res.get("launch_error", "did not finish"))
    init = res.get("initcheck")
    if res.get("errors") is None and not res.get("timeout"):
        why.append("no ERROR SUMMARY")
    elif init is not None and res.get("errors") is not None:
        # Each report is judged by its class; reports beyond the printed
        # ones (--print-limit) cannot be classified.
        unparsed = res["errors"] - sum(v["count"] for v in init.values())
        if unparsed > 0:
            why.append(f"{plural(unparsed, 'unclassified report')}")
    elif res.get("errors"):
        why.append(plural(res["errors"], "error"))
    if res.get("hazard_errors"):
        why.append(plural(res["hazard_errors"], "error hazard"))
    if strict and res.get("hazard_warnings"):
        why.append(plural(res["hazard_warnings"], "warning hazard"))
    failing = {k: v for k, v in (init or {}).items()
               if not k.startswith(("harness", "tool"))}
    if failing:
        why.append("initcheck: " + ", ".join(
            f"{v['count']} {k}" for k, v in sorted(failing.items())))
    if res.get("launched") and not res.get("same_outputs", True):
        why.append("outputs differ from the launch without the tool")
    if res.get("rc") not in (0, None):
        why.append(f"exit status {res['rc']}")
    return not why, "; ".join(why)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("artifacts", nargs="?",
                    default=os.path.join(ROOT, ".gpu-sanitize"))
    ap.add_argument("--out", default=os.path.join(os.getcwd(), "sanitizer-out"))
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--family", choices=sorted(gpu_configs.FAMILIES))
    ap.add_argument("--role", default="sanitize")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=90,
                    help="seconds per sanitized launch (default 90)")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds of wall time after which no further "
                         "sanitized launch starts (those are reported as "
                         "not run; default 0: no limit)")
    ap.add_argument("--racecheck-report", default="all",
                    choices=["hazard", "analysis", "all"])
    ap.add_argument("--tool-args", action="append", default=[],
                    metavar="TOOL:ARGS",
                    help="more compute-sanitizer options for one tool, e.g. "
                         "'racecheck:--racecheck-memcpy-async no' "
                         "(repeatable)")
    ap.add_argument("--strict", action="store_true",
                    help="racecheck warnings fail too")
    ap.add_argument("--keep", action="store_true",
                    help="keep the folder of inputs, outputs and logs")
    ap.add_argument("--sanitizer", default=os.environ.get("COMPUTE_SANITIZER") or
                    shutil.which("compute-sanitizer") or
                    "/usr/local/cuda/bin/compute-sanitizer")
    a = ap.parse_args()
    tools = [t for t in a.tools.split(",") if t]
    start = time.time()
    art = os.path.abspath(a.artifacts)
    manifest = json.load(open(os.path.join(art, "manifest.json")))
    configs = [c for c in manifest if c["role"] == a.role and
               (not a.family or gpu_configs.family(c) == a.family) and
               os.path.exists(os.path.join(art, c["name"] + ".json"))]
    if not configs:
        print(f"sanitize: no compiled configurations of role {a.role} in {art}")
        return 1
    report = os.path.abspath(a.out)
    os.makedirs(report, exist_ok=True)
    out = tempfile.mkdtemp(prefix="attnfuse-sanitize-")
    os.makedirs(os.path.join(out, "logs"))

    values = {}
    plain = {}

    def run_plain(c):
        name = c["name"]
        inputs = os.path.join(out, "inputs", name)
        values[name] = make_inputs(c, inputs, seed=sum(map(ord, name)))
        outputs = os.path.join(out, "plain", name)
        log = os.path.join(out, "logs", "plain", name + ".log")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        rc, secs = run_bounded([sys.executable, LAUNCHER,
                                os.path.join(art, name + ".json"), inputs,
                                outputs, "--guard", str(GUARD)], a.timeout, log)
        r = check_plain(c, outputs, values[name], open(log).read())
        r.update(rc=rc, seconds=round(secs, 1))
        r["ok"] = r["ok"] and rc == 0
        plain[name] = r

    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        list(ex.map(run_plain, configs))

    results = {t: {} for t in tools}

    def run_tool(job):
        tool, c = job
        name = c["name"]
        if a.budget and time.time() - start > a.budget:
            results[tool][name] = dict(family=gpu_configs.family(c), ok=False,
                                       seconds=0, why="not run: --budget spent")
            return
        inputs = os.path.join(out, "inputs", name)
        outputs = os.path.join(out, tool, name)
        log = os.path.join(out, "logs", tool, name + ".log")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        rc, secs = run_bounded(tool_command(a, tool, art, name, inputs, outputs),
                               a.timeout, log)
        r = parse_tool_log(open(log, errors="replace").read(), tool)
        r.update(rc=rc, seconds=round(secs, 1), timeout=rc is None,
                 family=gpu_configs.family(c))
        if r["launched"]:
            r["same_outputs"] = same_outputs(outputs, os.path.join(out, "plain", name))
        r["ok"], r["why"] = verdict(r, a.strict)
        results[tool][name] = r

    jobs = [(t, c) for t in tools for c in configs]
    # The slowest tools first, so that the pool ends together.
    jobs.sort(key=lambda j: {"racecheck": 0, "initcheck": 1}.get(j[0], 2))
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        list(ex.map(run_tool, jobs))

    lines = []
    status = 0
    fams = [f for f in gpu_configs.FAMILIES
            if any(gpu_configs.family(c) == f for c in configs)]
    for fam in fams:
        names = [c["name"] for c in configs if gpu_configs.family(c) == fam]
        ok = sum(plain[n]["ok"] for n in names)
        status |= ok != len(names)
        lines.append(f"{'PASS' if ok == len(names) else 'FAIL'} plain {fam}: "
                     f"{ok}/{len(names)} launches pass (outputs written, guard "
                     f"bands intact, within the sanity bound of fp64)")
    for tool in tools:
        for fam in fams:
            rs = {n: r for n, r in results[tool].items() if r["family"] == fam}
            bad = {n: r for n, r in rs.items() if not r["ok"]}
            status |= bool(bad)
            errors = sum(r.get("errors") or 0 for r in rs.values())
            extra = ""
            if tool == "racecheck":
                extra = (f", {sum(r.get('hazard_errors', 0) for r in rs.values())} "
                         f"error / {sum(r.get('hazard_warnings', 0) for r in rs.values())} "
                         f"warning hazards")
            if tool == "initcheck":
                classes = {}
                for r in rs.values():
                    for k, v in r.get("initcheck", {}).items():
                        classes[k] = classes.get(k, 0) + v["count"]
                extra = ", reports: " + (", ".join(
                    f"{v} {k}" for k, v in sorted(classes.items())) or "none")
            slowest = max((r["seconds"] for r in rs.values()), default=0)
            lines.append(f"{'FAIL' if bad else 'PASS'} {tool} {fam}: "
                         f"{len(rs) - len(bad)}/{len(rs)} kernels pass, "
                         f"{plural(errors, 'error')}{extra} (slowest {slowest:.0f} s)")
            for n, r in sorted(bad.items()):
                lines.append(f"    {n}: {r['why']}")
    for n, r in sorted(plain.items()):
        if not r["ok"]:
            lines.append(f"    plain {n}: {json.dumps(r)}")
    wall = time.time() - start
    lines.append(f"sanitize: {len(configs)} kernels x {len(tools)} tools "
                 f"({', '.join(tools)}), {wall:.0f} s wall with {a.jobs} jobs; "
                 f"status {int(status)}")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(report, "summary.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(report, "summary.json"), "w") as f:
        json.dump(dict(plain=plain, tools=results, seconds=wall), f, indent=1,
                  default=str)
    with tarfile.open(os.path.join(report, "logs.tar.xz"), "w:xz") as tar:
        tar.add(os.path.join(out, "logs"), arcname="logs")
    if a.keep:
        print(f"sanitize: inputs, outputs and logs kept in {out}")
    else:
        shutil.rmtree(out, ignore_errors=True)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
