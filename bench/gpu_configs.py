"""The attention configurations that attnfuse compiles for the GPU machine.

Shared by scripts/build-gpu-artifacts.sh (which writes one MLIR function per
configuration with `mlir_for`), test/GPU/check_gpu.py and
bench/bench_attention.py (which read the same descriptions back from the
artifacts' manifest). Pure Python: runs where there is no MLIR.
"""

SOFTCAP = 30.0

# The kernel families of convert-attn-to-gpu, by the option that selects
# each: the GPU sweep (role sweep) and scripts/run-compute-sanitizer.sh cover
# every family listed here. A new family needs its check configurations too.
FAMILIES = {"simt": "mma=simt", "mma_sync": "mma=mma_sync",
            "wgmma": "mma=wgmma"}


def family(c):
    """The family of a configuration: the first listed option it uses."""
    opts = c["opts"].split()
    return next(f for f, o in FAMILIES.items() if o in opts)


def cfg(name, dtype="bf16", B=2, Hq=4, Hkv=None, Nq=128, Nk=None, D=64,
        Dv=None, mask="none", align="top_left", window=None, bias=None,
        keep=None, score_mod=None, dropout=0.0, role="check",
        opts="mma=simt", softcap=SOFTCAP):
    return dict(name=name, dtype=dtype, B=B, Hq=Hq, Hkv=Hkv or Hq, Nq=Nq,
                Nk=Nk or Nq, D=D, Dv=Dv or D, mask=mask, align=align,
                window=window, bias=bias, keep=keep, score_mod=score_mod,
                dropout=dropout, role=role, opts=opts, softcap=softcap)


CHECK = [
    cfg("bf16_d64_plain", Nq=256),
    cfg("f16_d128_tails", dtype="f16", Nq=113, Nk=203, D=128),
    cfg("bf16_d128_causal_tl", Nq=257, D=128, mask="causal"),
    cfg("bf16_d64_causal_br_gqa", Hq=8, Hkv=2, Nq=100, Nk=300,
        mask="causal", align="bottom_right"),
    cfg("f16_d64_causal_tl_empty_rows", dtype="f16", Nq=300, Nk=100,
        mask="causal", align="bottom_right"),
    cfg("bf16_d128_window", Nq=384, D=128, mask="sliding_window",
        window=(64, 16)),
    cfg("bf16_d64_bias_keep", Nq=200, Nk=333, bias=("bf16", "1HQK"),
        keep="B11K"),
    cfg("f16_d64_bias_f32_full", dtype="f16", Nq=96, Nk=160,
        bias=("f32", "BHQK")),
    cfg("bf16_d64_softcap_causal", Nq=256, mask="causal",
        score_mod="softcap"),
    cfg("bf16_d64_dropout", Nq=160, Nk=224, dropout=0.17),
    cfg("bf16_d128_mqa_causal", Hq=8, Hkv=1, Nq=1024, D=128, mask="causal"),
    cfg("f32_d64_plain", dtype="f32", Nq=130, Nk=70),
]

# The mma.sync (tensor-core) family with its defaults per head dim: every
# bf16/f16 check configuration (masks, GQA, bias, keep mask, score_mod,
# dropout, tails), head dims 16..256 (Dqk != Dv too), and the benchmark.
MMA = "mma=mma_sync"
for c in list(CHECK):
    if c["dtype"] != "f32":
        CHECK.append(dict(c, name=c["name"] + "_mma", opts=MMA))
CHECK += [
    cfg("bf16_d128_plain_mma", Nq=256, D=128, opts=MMA),
    cfg("f16_d64_causal_tl_tails_mma", dtype="f16", Nq=200, Nk=77,
        mask="causal", opts=MMA),
    cfg("bf16_d64_window_gqa_mma", Hq=6, Hkv=3, Nq=333, Nk=333,
        mask="sliding_window", window=(100, 3), opts=MMA),
    cfg("bf16_d32_causal_mma", Nq=200, D=32, mask="causal", opts=MMA),
    cfg("f16_d96_tails_mma", dtype="f16", Nq=113, Nk=203, D=96, opts=MMA),
    cfg("bf16_d48_dv80_causal_br_mma", Nq=70, Nk=150, D=48, Dv=80,
        mask="causal", align="bottom_right", opts=MMA),
    cfg("bf16_d160_dv96_mma", Nq=190, Nk=260, D=160, Dv=96, opts=MMA),
    cfg("bf16_d256_causal_gqa_tails_mma", Hq=4, Hkv=2, Nq=300, Nk=333,
        D=256, mask="causal", align="bottom_right", opts=MMA),
    cfg("f16_d256_bias_dropout_mma", dtype="f16", Nq=130, Nk=150, D=256,
        bias=("f16", "BHQK"), dropout=0.1, opts=MMA),
    cfg("bf16_d128_softcap_keep_window_mma", Nq=300, Nk=300, D=128,
        mask="sliding_window", window=(90, 0), keep="1HQK",
        score_mod="softcap", opts=MMA),
]

# Online-softmax steps shorter than the K/V block (chunk).
CHECK += [
    cfg("bf16_d64_causal_br_gqa_chunk16", Hq=8, Hkv=2, Nq=100, Nk=300,
        mask="causal", align="bottom_right", opts=MMA + " chunk=16"),
    cfg("bf16_d128_window_bk64_chunk32", Nq=384, D=128,
        mask="sliding_window", window=(64, 16),
        opts=MMA + " block-k=64 chunk=32"),
    cfg("f16_d128_tails_bk64_chunk32", dtype="f16", Nq=113, Nk=203, D=128,
        opts=MMA + " block-k=64 chunk=32"),
]

# Other warp counts and pipeline depths.
CHECK += [
    cfg("bf16_d256_causal_gqa_tails_w8", Hq=4, Hkv=2, Nq=300, Nk=333,
        D=256, mask="causal", align="bottom_right", opts=MMA + " warps=8"),
    cfg("bf16_d128_window_s3", Nq=384, D=128, mask="sliding_window",
        window=(64, 16), opts=MMA + " stages=3"),
    cfg("f16_d64_causal_br_gqa_w8_s4", dtype="f16", Hq=8, Hkv=2, Nq=100,
        Nk=300, mask="causal", align="bottom_right",
        opts=MMA + " warps=8 stages=4"),
]

# Head dims that are multiples of 8 but not of 16, on the tensor cores
# (padded to 16 with zeros in shared memory and registers): Stable
# Diffusion's 8 x 40, 72, Dqk != Dv with a padded V (24 -> 32), a padded dim
# above 128 (Q in shared memory).
CHECK += [
    cfg("f16_d40_tails_mma", dtype="f16", Hq=8, Nq=300, Nk=77, D=40,
        opts=MMA),
    cfg("bf16_d72_causal_br_gqa_mma", Hq=4, Hkv=2, Nq=200, Nk=260, D=72,
        mask="causal", align="bottom_right", opts=MMA),
    cfg("bf16_d40_dv24_bias_dropout_mma", Nq=150, Nk=170, D=40, Dv=24,
        bias=("bf16", "BHQK"), dropout=0.17, opts=MMA),
    cfg("f16_d200_window_mma", dtype="f16", Nq=260, Nk=300, D=200,
        mask="sliding_window", window=(70, 5), opts=MMA),
]

# block-q=64 (4 warps x one m16 tile, Q fragments in registers up to
# d = 128): every mma_sync check configuration of head dim <= 128 again.
MMA64 = "mma=mma_sync block-q=64"
for c in [c for c in CHECK
          if c["opts"] == MMA and max(c["D"], c["Dv"]) <= 128]:
    CHECK.append(dict(c, name=c["name"] + "_bq64", opts=MMA64))


# The wgmma (sm_90a) family with its defaults: every mma_sync configuration
# that runs with the family's defaults (masks, GQA/MQA, bias, keep mask,
# score_mod, dropout, tails, empty rows, head dims 32..256 with Dqk != Dv and
# padded dims), then its own options (3 warpgroups, 3-4 stages, block-k).
WGMMA = "mma=wgmma"
CHECK += [dict(c, name=c["name"].removesuffix("_mma") + "_wgmma", opts=WGMMA)
          for c in list(CHECK) if c["opts"] == MMA]
CHECK += [
    cfg("bf16_d64_causal_br_gqa_w12_wgmma", Hq=8, Hkv=2, Nq=300, Nk=500,
        mask="causal", align="bottom_right", opts=WGMMA + " warps=12"),
    cfg("f16_d128_tails_s3_bk64_wgmma", dtype="f16", Nq=113, Nk=203, D=128,
        opts=WGMMA + " stages=3 block-k=64"),
    cfg("bf16_d128_window_s4_bk32_wgmma", Nq=384, D=128,
        mask="sliding_window", window=(64, 16),
        opts=WGMMA + " stages=4 block-k=32"),
    cfg("bf16_d96_bias_dropout_bk96_wgmma", Nq=200, Nk=333, D=96,
        bias=("bf16", "1HQK"), dropout=0.17, opts=WGMMA + " block-k=96"),
    # Dropout where steps do not start at multiples of 32 keys (48-key
    # blocks; mma_sync's 16-key chunks): each n-tile draws its own calls.
    cfg("f16_d64_dropout_causal_bk48_wgmma", dtype="f16", Nq=150, Nk=250,
        mask="causal", align="bottom_right", dropout=0.3,
        opts=WGMMA + " block-k=48"),
    cfg("bf16_d64_dropout_chunk16_mma", Nq=150, Nk=250, dropout=0.3,
        opts=MMA + " block-k=32 chunk=16"),
    # Bias tiles staged by TMA (a bias of the operands' type, [B or 1, H or
    # 1, Nq, Nk], Nk a multiple of 8 and of block-k): a query tail (200
    # rows), a bias per head shared by the batch, one per batch
    # element shared by the heads (with GQA, causal), with a keep mask and
    # dropout, and at d = 256 (32-key blocks).
    cfg("bf16_d128_bias_staged_tails_wgmma", Nq=200, Nk=256, D=128,
        bias=("bf16", "1HQK"), opts=WGMMA),
    cfg("f16_d64_bias_staged_b1qk_causal_gqa_wgmma", dtype="f16", Hq=4,
        Hkv=2, Nq=256, Nk=384, D=64, mask="causal", align="bottom_right",
        bias=("f16", "B1QK"), opts=WGMMA),
    cfg("bf16_d128_bias_staged_keep_dropout_wgmma", Nq=136, Nk=256, D=128,
        bias=("bf16", "BHQK"), keep="B11K", dropout=0.17, opts=WGMMA),
    cfg("bf16_d256_bias_staged_wgmma", Nq=160, Nk=392, D=256,
        bias=("bf16", "11QK"), opts=WGMMA),
    # A window that shows the first CTA's rows no key (Nq > Nk,
    # bottom-right): the key-block range's end is negative there (the sweep
    # configuration that hung before the range test was made signed).
    cfg("f16_d160_window_empty_ctas_softcap_mqa_wgmma", dtype="f16", Hq=4,
        Hkv=1, Nq=512, Nk=256, D=160, mask="sliding_window",
        align="bottom_right", window=(128, 32), score_mod="softcap",
        softcap=50.0, opts=WGMMA),
    # Head dims that are not multiples of 8 (FlashAttention's grid has 59
    # and 111): element copies, per-element O stores.
    cfg("f16_d59_causal_tails_wgmma", dtype="f16", Nq=300, Nk=213, D=59,
        mask="causal", align="bottom_right", opts=WGMMA),
    cfg("bf16_d111_dv59_gqa_bias_dropout_wgmma", Hq=4, Hkv=2, Nq=150,
        Nk=170, D=111, Dv=59, bias=("bf16", "1HQK"), dropout=0.17,
        opts=WGMMA),
    cfg("f16_d59_causal_tails_mma", dtype="f16", Nq=300, Nk=213, D=59,
        mask="causal", align="bottom_right", opts=MMA),
    cfg("bf16_d111_dv59_gqa_bias_dropout_mma", Hq=4, Hkv=2, Nq=150,
        Nk=170, D=111, Dv=59, bias=("bf16", "1HQK"), dropout=0.17,
        opts=MMA),
    cfg("f16_d59_window_mma_bq64", dtype="f16", Nq=200, D=59,
        mask="sliding_window", window=(48, 16), opts=MMA + " block-q=64"),
    # Causal above 1k queries on the persistent grid: units of two query
    # blocks of a head (8 query blocks of 192 rows), with GQA.
    cfg("bf16_d64_causal_units_gqa_wgmma", B=2, Hq=4, Hkv=2, Nq=1536,
        mask="causal", opts=WGMMA),
]
# The persistent grid on every wgmma check shape, with 3 CTAs (each walks
# several tiles: the K/V ring and the Q barriers across tiles, empty tiles,
# tails) -- the default is one CTA per tile at these small shapes.
CHECK += [dict(c, name=c["name"] + "_persistent",
               opts=c["opts"] + " persistent-ctas=3")
          for c in list(CHECK) if c["name"].endswith("_wgmma")]


def bench_cfg(name, d, n, causal, role="bench", opts=WGMMA, **kw):
    """B * N = 16k tokens, hidden 2048 (H = 2048 / d)."""
    return cfg(name, B=16384 // n, Hq=2048 // d, Nq=n, D=d,
               mask="causal" if causal else "none", role=role, opts=opts,
               **kw)


# The benchmark (role bench: attnfuse with its defaults on the H200, the
# wgmma family, against the peers).
GRID = [bench_cfg(f"bench_d{d}_n{n}_c{c}", d, n, c)
        for d in (64, 128, 256) for n in (1024, 4096, 16384) for c in (0, 1)]
BENCH = list(GRID)
# Head dims that are not multiples of 16 (padded on the tensor cores):
# Stable Diffusion's first UNet blocks (f16, B = 2, 8 heads x 40, 64x64
# latents = 4096 tokens), and 72, 80, 96 at the benchmark's 16k tokens.
BENCH += [cfg("bench_sd_d40_n4096_c0", dtype="f16", B=2, Hq=8, Nq=4096,
              D=40, role="bench", opts=WGMMA)]
BENCH += [bench_cfg(f"bench_d{d}_n4096_c{c}", d, 4096, c)
          for d in (72, 80, 96) for c in (0, 1)]
# Real-model shapes and the fused features, against the peers that have
# them: LLaMA-style GQA prefill (32 query heads on 8 K/V heads, d = 128, 8k,
# causal); a [1, H, N, N] bias; Gemma-2's softcap on a causal mask; dropout;
# Mistral's sliding window (4096 keys back) at 16k.
SHAPES = list(BENCH)
GQA = [cfg("bench_gqa_d128_n8192_c1", B=2, Hq=32, Hkv=8, Nq=8192, D=128,
           mask="causal", role="bench", opts=WGMMA)]
FEATURES = [
    bench_cfg("bench_d128_n4096_c0_bias", 128, 4096, 0,
              bias=("bf16", "1HQK")),
    bench_cfg("bench_d128_n4096_c1_softcap", 128, 4096, 1,
              score_mod="softcap"),
    bench_cfg("bench_d128_n4096_c0_dropout", 128, 4096, 0, dropout=0.1),
    cfg("bench_d128_n16384_c0_window", B=1, Hq=16, Nq=16384, D=128,
        mask="sliding_window", window=(4096, 0), role="bench", opts=WGMMA),
    # Gemma-2's attention: d = 256, GQA 16/8, causal, softcap 50.
    cfg("bench_gemma2_d256_gqa_n4096_c1_softcap", B=4, Hq=16, Hkv=8,
        Nq=4096, D=256, mask="causal", score_mod="softcap", softcap=50.0,
        role="bench", opts=WGMMA),
]
BENCH += GQA + FEATURES
# The softcap rows with libdevice's tanhf and IEEE division
# (approx-score-mod=false), the exact option: --ab _exact times what
# tanh.approx.f32 and the reciprocal gain.
for c in [c for c in FEATURES if "softcap" in c["name"]]:
    BENCH.append(dict(c, name=c["name"] + "_exact", role="variant",
                      opts=c["opts"] + " approx-score-mod=false"))
# Variants (role variant: attnfuse only): the mma_sync family on the same
# grid (the wgmma family must never be below it), and other configurations.
for c in SHAPES + GQA:
    BENCH.append(dict(c, name=c["name"] + "_mma_sync", role="variant",
                      opts=MMA))
for c in (0, 1):
    for d, n, name, opts in (
            (64, 16384, "w8", " warps=8"),
            (64, 4096, "w8", " warps=8"),
            (64, 4096, "s3", " stages=3"),
            (64, 4096, "bk64", " block-k=64"),
            (128, 16384, "s3", " stages=3"),
            (128, 4096, "s3", " stages=3"),
            (96, 4096, "w8", " warps=8"),
            (256, 4096, "bk48", " block-k=48")):
        BENCH.append(bench_cfg(f"bench_d{d}_n{n}_c{c}_wgmma_{name}", d, n, c,
                               role="variant", opts=WGMMA + opts))
# The fused features but the window with 64-key blocks and on mma_sync.
for c in [c for c in FEATURES if not c["name"].endswith("_window")]:
    BENCH.append(dict(c, name=c["name"] + "_wgmma_bk64", role="variant",
                      opts=WGMMA + " block-k=64"))
    BENCH.append(dict(c, name=c["name"] + "_mma_sync", role="variant",
                      opts=MMA))
# The persistent grid's gain (one CTA per tile) and its second Q buffer's
# (one buffer) up to d = 128 (above it, below).
for c in [c for c in GRID if c["D"] <= 128] + GQA:
    BENCH.append(dict(c, name=c["name"] + "_wgmma_p1", role="variant",
                      opts=WGMMA + " persistent-ctas=-1"))
for c in [c for c in GRID if c["D"] <= 128] + GQA + FEATURES:
    BENCH.append(dict(c, name=c["name"] + "_q1", role="variant",
                      opts=WGMMA + " q-buffers=1"))
# Above d = 128: the persistent grid (the default up to 1k queries), one
# CTA per tile, 80-key blocks (the most that fit two stages at d = 256).
for c in [c for c in GRID if c["D"] > 128]:
    BENCH.append(dict(c, name=c["name"] + "_pers", role="variant",
                      opts=WGMMA + " persistent-ctas=132"))
    BENCH.append(dict(c, name=c["name"] + "_wgmma_p1", role="variant",
                      opts=WGMMA + " persistent-ctas=-1"))
    BENCH.append(dict(c, name=c["name"] + "_wgmma_bk80", role="variant",
                      opts=WGMMA + " block-k=80"))
    # Persistent from 4k too with two Q buffers, which fit with 32- or
    # 48-key blocks (not yet timed).
    for k in (32, 48):
        BENCH.append(dict(c, name=c["name"] + f"_wgmma_pq2bk{k}",
                          role="variant", opts=WGMMA + " persistent-ctas=132"
                          f" block-k={k} q-buffers=2"))
# Short sequences and dropout: two consumer warpgroups at d = 64, 64-key
# blocks at d = 128, 3 stages; dropout with 32, 96 or 128 keys per block.
for c in (0, 1):
    for d, name, opts in ((64, "w8", " warps=8"), (128, "bk64", " block-k=64"),
                          (64, "bk64", " block-k=64"),
                          (64, "s3", " stages=3"), (128, "s3", " stages=3")):
        BENCH.append(bench_cfg(f"bench_d{d}_n1024_c{c}_wgmma_{name}", d, 1024,
                               c, role="variant", opts=WGMMA + opts))
# TMA's gain: the producer warpgroup's cp.async instead, and O stored from
# registers instead of by TMA, on the grid.
for c in GRID:
    BENCH.append(dict(c, name=c["name"] + "_cpasync", role="variant",
                      opts=WGMMA + " tma=false"))
    BENCH.append(dict(c, name=c["name"] + "_nostore", role="variant",
                      opts=WGMMA + " tma-store=false"))
# The bias and dropout with 3 stages (the bias with one Q buffer, for the
# room).
for c in FEATURES:
    if c["name"].endswith(("_bias", "_dropout")):
        extra = " q-buffers=1" if c["name"].endswith("_bias") else ""
        BENCH.append(dict(c, name=c["name"] + "_wgmma_s3", role="variant",
                          opts=WGMMA + " stages=3" + extra))
for k in (32, 96, 128):
    BENCH.append(bench_cfg(f"bench_d128_n4096_c0_dropout_wgmma_bk{k}", 128,
                           4096, 0, dropout=0.1, role="variant",
                           opts=WGMMA + f" block-k={k}"))


def pairwise(axes, seed=0):
    """A small list of points (dicts) such that every pair of values of every
    two axes occurs in some point (greedy all-pairs)."""
    import itertools
    import random
    rng = random.Random(seed)
    names = list(axes)
    todo = {(a, x, b, y) for a, b in itertools.combinations(names, 2)
            for x in axes[a] for y in axes[b]}
    points = []
    while todo:
        a, x, b, y = min(todo, key=lambda t: (names.index(t[0]), repr(t)))
        best, gain = None, -1
        for _ in range(60):  # random completions of the first missing pair
            p = {n: rng.choice(axes[n]) for n in names}
            p[a], p[b] = x, y
            g = sum((n1, p[n1], n2, p[n2]) in todo
                    for n1, n2 in itertools.combinations(names, 2))
            if g > gain:
                best, gain = p, g
        points.append(best)
        todo -= {(n1, best[n1], n2, best[n2])
                 for n1, n2 in itertools.combinations(names, 2)}
    return points


# FlashAttention's test grid (tests/test_flash_attn.py), covered pairwise per
# kernel family (role sweep: test/GPU/check_gpu.py --role sweep; a head dim a
# family does not support is compiled as "unsupported").
SWEEP_AXES = dict(
    seqlens=[(113, 203), (128, 217), (113, 211), (108, 256), (256, 512),
             (512, 256), (1024, 1024), (1023, 1024), (1024, 1023),
             (2048, 2048)],
    D=[32, 40, 59, 64, 96, 111, 128, 160, 192, 224, 256],
    mask=["none", "causal", "sliding_window"],
    heads=[(4, 4), (4, 2), (4, 1)],  # MHA, GQA, MQA
    dropout=[0.0, 0.17], softcap=[0.0, 50.0], dtype=["bf16", "f16"])
SWEEP = []
for fam, fam_opts in FAMILIES.items():
    for p in pairwise(SWEEP_AXES):
        (nq, nk), (hq, hkv) = p["seqlens"], p["heads"]
        SWEEP.append(cfg(
            f"sweep_{fam}_{p['dtype']}_n{nq}x{nk}_d{p['D']}_{p['mask']}_h{hq}x{hkv}"
            f"_p{int(p['dropout'] * 100)}_cap{int(p['softcap'])}",
            dtype=p["dtype"], B=1, Hq=hq, Hkv=hkv, Nq=nq, Nk=nk, D=p["D"],
            mask=p["mask"], align="bottom_right" if p["mask"] != "none" else "top_left",
            window=(128, 32) if p["mask"] == "sliding_window" else None,
            score_mod="softcap" if p["softcap"] else None,
            softcap=p["softcap"] or SOFTCAP, dropout=p["dropout"],
            role="sweep", opts=fam_opts))
# wgmma: every other configuration on a persistent grid of 5 CTAs (the
# default at the sweep's shapes is mostly one CTA per tile).
for i, c in enumerate([c for c in SWEEP if c["opts"] == FAMILIES["wgmma"]]):
    if i % 2:
        c["opts"] += " persistent-ctas=5"

# Small shapes for compute-sanitizer (role sanitize:
# scripts/run-compute-sanitizer.sh, test/GPU/sanitize.py): every family's
# code paths -- the structural masks and their edge blocks, query and key
# tails, GQA and MQA, bias, keep mask, score_mod, dropout, head dims 32-256,
# Dqk != Dv, chunks, warps, stages, block-q -- at B = 1, 2 to 4 heads and
# 2 to 4 query blocks, so that racecheck and initcheck take seconds per kernel
# (every key block still goes through the pipeline: Nk = 150 is 3-5 blocks
# and a tail).
def san(name, opts, **kw):
    kw.setdefault("B", 1)
    kw.setdefault("Hq", 2)
    kw.setdefault("Nq", 80)
    kw.setdefault("Nk", 150)
    return cfg("san_" + name, role="sanitize", opts=opts, **kw)


SIMT = "mma=simt"
SANITIZE = []
for fam, fam_opts in (("simt", SIMT), ("mma", MMA), ("wgmma", WGMMA)):
    SANITIZE += [
        san(f"{fam}_f16_d64_tails", fam_opts, dtype="f16"),
        san(f"{fam}_bf16_d128_causal_br_gqa", fam_opts, Hq=4, Hkv=2, Nq=70,
            D=128, mask="causal", align="bottom_right"),
        san(f"{fam}_bf16_d64_window", fam_opts, Nq=150,
            mask="sliding_window", window=(32, 8)),
        san(f"{fam}_bf16_d64_bias_keep", fam_opts, bias=("bf16", "1HQK"),
            keep="B11K"),
        san(f"{fam}_f16_d64_bias_f32", fam_opts, dtype="f16",
            bias=("f32", "BHQK")),
        san(f"{fam}_bf16_d64_softcap_causal_tl", fam_opts, Nq=100, Nk=100,
            mask="causal", score_mod="softcap"),
        san(f"{fam}_bf16_d64_dropout", fam_opts, dropout=0.17),
        san(f"{fam}_bf16_d128_mqa_causal_empty_rows", fam_opts, Hq=4, Hkv=1,
            Nq=150, Nk=70, D=128, mask="causal", align="bottom_right"),
    ]
SANITIZE += [
    # The persistent grid: 2 CTAs walk 4 tiles each (the ring and the Q
    # barriers across tiles), one tile with no key block.
    san("wgmma_bf16_d64_causal_gqa_persistent", WGMMA + " persistent-ctas=2",
        Hq=4, Hkv=2, Nq=300, Nk=150, mask="causal", align="bottom_right"),
    san("wgmma_bf16_d128_window_dropout_persistent",
        WGMMA + " persistent-ctas=2", Hq=4, Nq=256, D=128,
        mask="sliding_window", window=(32, 8), dropout=0.17),
    # A bias staged by TMA on the persistent grid (a query tail).
    san("wgmma_bf16_d128_bias_staged_persistent",
        WGMMA + " persistent-ctas=2", B=2, Nq=200, Nk=384, D=128,
        bias=("bf16", "1HQK")),
    # A head dim that is not a multiple of 8: element copies (and one CTA
    # with no key block: Nq > Nk, bottom-right window).
    san("wgmma_f16_d59_dv111_window", WGMMA, dtype="f16", Hq=2, Nq=300,
        D=59, Dv=111, mask="sliding_window", align="bottom_right",
        window=(16, 0)),
    san("mma_f16_d59_dv111_window", MMA, dtype="f16", Hq=2, Nq=300, D=59,
        Dv=111, mask="sliding_window", align="bottom_right", window=(16, 0)),
    san("simt_f32_d64_tails", SIMT, dtype="f32", Nq=70, Nk=50),
    san("mma_bf16_d32_causal", MMA, D=32, mask="causal"),
    san("mma_f16_d96_tails", MMA, dtype="f16", D=96),
    san("mma_bf16_d48_dv80_causal_br", MMA, Nq=70, D=48, Dv=80,
        mask="causal", align="bottom_right"),
    san("mma_bf16_d160_dv96", MMA, D=160, Dv=96),
    san("mma_bf16_d256_causal_gqa_tails", MMA, Hq=4, Hkv=2, D=256,
        mask="causal", align="bottom_right"),
    san("mma_f16_d256_bias_dropout", MMA, dtype="f16", D=256,
        bias=("f16", "BHQK"), dropout=0.1),
    san("mma_bf16_d128_softcap_keep_window", MMA, Nq=150, D=128,
        mask="sliding_window", window=(40, 0), keep="1HQK",
        score_mod="softcap"),
    san("mma_bf16_d64_causal_br_gqa_chunk16", MMA + " chunk=16", Hq=4,
        Hkv=2, mask="causal", align="bottom_right"),
    san("mma_bf16_d128_window_bk64_chunk32", MMA + " block-k=64 chunk=32",
        Nq=150, D=128, mask="sliding_window", window=(64, 16)),
    san("mma_bf16_d128_window_s3", MMA + " stages=3", Nq=150, D=128,
        mask="sliding_window", window=(64, 16)),
    san("mma_f16_d64_causal_br_gqa_w8_s4", MMA + " warps=8 stages=4",
        dtype="f16", Hq=4, Hkv=2, Nq=150, mask="causal",
        align="bottom_right"),
    san("mma_bf16_d64_plain_bq64", MMA64, Nq=150),
    san("mma_f16_d128_bias_dropout_bq64", MMA64, dtype="f16", D=128,
        bias=("f16", "1HQK"), dropout=0.17),
    # Padded head dims: zero stores into the K/V stages and Q (two tiles per
    # warp) and predicated partial copy rounds.
    san("mma_f16_d40_tails", MMA, dtype="f16", Nq=90, D=40),
    san("mma_bf16_d72_dv40_causal_br", MMA, Nq=70, D=72, Dv=40,
        mask="causal", align="bottom_right"),
]

ALL = CHECK + BENCH + SWEEP + SANITIZE


def side_shape(c, spec):
    """Shape of a broadcastable side operand written like 'B11K'."""
    full = dict(B=c["B"], H=c["Hq"], Q=c["Nq"], K=c["Nk"])
    return [full[ch] if ch in full else 1 for ch in spec]


def mlir_for(c):
    """One func.func @attn with the attn.attention of configuration c."""
    t = lambda shape, ty: "tensor<" + "x".join(map(str, shape)) + "x" + ty + ">"
    qt = t([c["B"], c["Hq"], c["Nq"], c["D"]], c["dtype"])
    kt = t([c["B"], c["Hkv"], c["Nk"], c["D"]], c["dtype"])
    vt = t([c["B"], c["Hkv"], c["Nk"], c["Dv"]], c["dtype"])
    ot = t([c["B"], c["Hq"], c["Nq"], c["Dv"]], c["dtype"])
    lt = t([c["B"], c["Hq"], c["Nq"]], "f32")
    args = [f"%q: {qt}", f"%k: {kt}", f"%v: {vt}"]
    extra = ""
    if c["bias"]:
        bt = t(side_shape(c, c["bias"][1]), c["bias"][0])
        args.append(f"%bias: {bt}")
        extra += f" bias(%bias : {bt})"
    if c["keep"]:
        mt = t(side_shape(c, c["keep"]), "i1")
        args.append(f"%keep: {mt}")
        extra += f" keep(%keep : {mt})"
    if c["dropout"]:
        args.append("%seed: i64")
        extra += " seed(%seed)"
    attrs = [f"mask = #attn.mask<{c['mask']}>",
             f"alignment = #attn.alignment<{c['align']}>"]
    if c["window"]:
        attrs += [f"window_left = {c['window'][0]}",
                  f"window_right = {c['window'][1]}"]
    if c["dropout"]:
        attrs.append(f"dropout_p = {c['dropout']} : f32")
    region = ""
    if c["score_mod"] == "softcap":
        region = f""" score_mod {{
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
      %cap = arith.constant {float(c.get("softcap", SOFTCAP))} : f32
      %x = arith.divf %s, %cap : f32
      %th = math.tanh %x : f32
      %y = arith.mulf %th, %cap : f32
      attn.yield %y : f32
    }}"""
    return f"""func.func @attn({", ".join(args)}) -> ({ot}, {lt}) {{
  %o, %lse = attn.attention ins(%q, %k, %v : {qt}, {kt}, {vt}){extra}
      {{{", ".join(attrs)}}}{region} -> {ot}, {lt}
  return %o, %lse : {ot}, {lt}
}}
"""


if __name__ == "__main__":
    import json
    import sys
    if sys.argv[1] == "list":  # [ROLE]: only the configurations of ROLE
        print("\n".join(c["name"] for c in ALL
                        if len(sys.argv) < 3 or c["role"] == sys.argv[2]))
    elif sys.argv[1] == "mlir":
        print(mlir_for(next(c for c in ALL if c["name"] == sys.argv[2])))
    elif sys.argv[1] == "opts":
        print(next(c for c in ALL if c["name"] == sys.argv[2])["opts"])
    elif sys.argv[1] == "manifest":
        json.dump(ALL, sys.stdout, indent=1)
