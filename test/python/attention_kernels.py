# REQUIRES: ptxas
# RUN: rm -rf %t && mkdir -p %t
# RUN: env ATTNFUSE_CACHE_DIR=%t %python %s | FileCheck %s
# attnfuse.attention_kernels, what attnfuse.torch compiles (no torch, no
# GPU here): the attn.attention / attn.attention_backward of a
# configuration, its kernels with their arguments by name, the memory and
# disk cache (concurrent processes), and the errors.
import os
import subprocess
import sys

import attnfuse
from attnfuse.attention_kernels import (AttentionConfig, backward_module,
                                        cache_dir, cache_stats,
                                        forward_module, get_kernels)

base = dict(dtype="bf16", batch=2, heads_q=4, heads_kv=2, seq_q=113,
            seq_k=203, head_dim_qk=64, head_dim_v=64)

# Every feature of the configuration reaches the op.
cfg = AttentionConfig(**base, causal=True, alignment="bottom_right",
                      softcap=30.0, scale=0.1, dropout_p=0.17,
                      bias_shape=(1, 4, 113, 203))
# CHECK: bias(%bias : tensor<1x4x113x203xbf16>) seed(%seed) {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.17 : f32, scale = 0.1 : f32} score_mod
# CHECK: math.tanh
print(forward_module(cfg).splitlines()[1].split(") ", 1)[1])
print(forward_module(cfg))
# CHECK: attn.attention_backward
# CHECK-SAME: grad(%o, %lse, %do
print(backward_module(cfg))

# A window with one unbounded side reaches every key on that side.
w = AttentionConfig(**base, window=(-1, 7))
# CHECK: {mask = #attn.mask<sliding_window>, window_left = 316, window_right = 7, alignment = #attn.alignment<top_left>}
print(forward_module(w).splitlines()[1].split(") ", 1)[1].split(" ->")[0])

# The kernels, by name: the forward, then the backward's pre-pass, backward
# and dQ conversion, each argument named by its role.
for which in ("forward", "backward"):
    for k in get_kernels(cfg, which):
        print(which, k.name, k.argument_names)
# CHECK: forward attn_fwd_0 ['q', 'k', 'v', 'bias', 'seed', 'o', 'lse', 'tmap_q', 'tmap_k', 'tmap_v', 'tmap_o']
# CHECK: backward attn_fwd_0_bwd_pre ['do', 'o', 'di', 'dq_accum']
# CHECK: backward attn_fwd_0_bwd ['q', 'k', 'v', 'do', 'lse', 'di', 'bias', 'seed', 'dq_accum', 'dk', 'dv']
# CHECK: backward attn_fwd_0_bwd_dq ['dq_accum', 'dq']
# f32 has no conversion: the accumulator is dQ.
f32 = AttentionConfig(**dict(base, dtype="f32"))
print("f32 backward", [k.name for k in get_kernels(f32, "backward")])
# CHECK: f32 backward ['attn_fwd_0_bwd_pre', 'attn_fwd_0_bwd']

# A second request is answered from memory.
get_kernels(cfg, "forward")
# CHECK: stats {'memory': 1, 'disk': 0, 'compiled': 3}
print("stats", cache_stats())

# deterministic=True: the backward's kernels without the dQ accumulator,
# dQ from a kernel of its own; the forward is the same kernel.
det = AttentionConfig(**base, causal=True, deterministic=True)
for k in get_kernels(det, "backward"):
    print("deterministic", k.name, k.argument_names)
# CHECK: deterministic attn_fwd_0_bwd_pre ['do', 'o', 'di']
# CHECK: deterministic attn_fwd_0_bwd ['q', 'k', 'v', 'do', 'lse', 'di', 'dk', 'dv']
# CHECK: deterministic attn_fwd_0_bwd_dq_ordered ['q', 'k', 'v', 'do', 'lse', 'di', 'dq']
print("deterministic options", det.kernel_options("forward") or "none",
      det.kernel_options("backward"))
# CHECK: deterministic options none deterministic=true

# Other processes find the kernels on disk; two at once on a new
# configuration both get whole kernels and leave one entry, no temporary.
CHILD = """
from attnfuse.attention_kernels import AttentionConfig, get_kernels, cache_stats
cfg = AttentionConfig(dtype="f16", batch=1, heads_q=2, heads_kv=2, seq_q=%d,
                      seq_k=64, head_dim_qk=64, head_dim_v=64)
k = get_kernels(cfg, "forward")[0]
s = cache_stats()
print(s["compiled"], s["disk"], k.binary[:4] == b"\\x7fELF")
"""
runs = [subprocess.Popen([sys.executable, "-c", CHILD % 96],
                         stdout=subprocess.PIPE, text=True) for _ in range(2)]
outs = sorted(r.communicate()[0].strip() for r in runs)
print("concurrent", outs, [r.returncode for r in runs])
# CHECK: concurrent ['{{[01]}} {{[01]}} True', '{{[01]}} {{[01]}} True'] [0, 0]
third = subprocess.run([sys.executable, "-c", CHILD % 96],
                       capture_output=True, text=True)
print("third", third.stdout.strip())
# CHECK: third 0 1 True
print("temporaries", [e for e in os.listdir(cache_dir()) if e.startswith(".")])
# CHECK: temporaries []
subdirs = [os.path.join(cache_dir(), d) for d in os.listdir(cache_dir())]
print("entries", sum(len(os.listdir(d)) for d in subdirs))
# CHECK: entries 5

# A damaged entry is recompiled and replaced.
for d in subdirs:
    for e in os.listdir(d):
        with open(os.path.join(d, e, "kernels.json"), "w") as f:
            f.write("{not json")
damaged = subprocess.run([sys.executable, "-c", CHILD % 96],
                         capture_output=True, text=True)
print("damaged", damaged.stdout.strip())
# CHECK: damaged 1 0 True

# Bad configurations are ValueErrors that say why.
for bad in (dict(heads_kv=3), dict(dtype="f64"), dict(seq_q=0),
            dict(window=(-2, 0)), dict(dropout_p=1.0),
            dict(bias_shape=(3, 113, 203)), dict(causal=True, window=(4, 4))):
    try:
        AttentionConfig(**dict(base, **bad))
        print("accepted", bad)
    except ValueError as e:
        print("ValueError:", e)
# CHECK: ValueError: attention configuration: heads_q = 4 is not a multiple of heads_kv = 3
# CHECK: ValueError: attention configuration: dtype must be one of ('bf16', 'f16', 'f32'), got 'f64'
# CHECK: ValueError: attention configuration: seq_q must be a positive integer, got 0
# CHECK: ValueError: attention configuration: window sizes are -1 (unbounded) or >= 0, got (-2, 0)
# CHECK: ValueError: attention configuration: dropout_p must be in [0, 1), got 1.0
# CHECK: ValueError: attention configuration: bias of shape [3, 113, 203] does not broadcast to [2, 4, 113, 203]
# CHECK: ValueError: attention configuration: causal with a window reaching 4 keys to the right
# CHECK-NOT: accepted

# A compile error is a CompileError with the compiler's located diagnostic,
# and is not cached.
old = AttentionConfig(**dict(base, chip="sm_70"))
try:
    get_kernels(old, "forward")
except attnfuse.CompileError as e:
    d = [x for x in e.diagnostics if x.severity == "error"][0]
    print("CompileError at", d.location.split(":")[0], "-", d.message)
# CHECK: CompileError at attnfuse.attention_kernels
# CHECK-SAME: sm_70
print("stats after the error", cache_stats()["compiled"])
# CHECK: stats after the error 4

# Kernel options the pipeline does not parse, and kernel options for the
# CPU target, are errors of the compilation that say so.
source = forward_module(AttentionConfig(**base))
for target, text in (("cuda", "deterministic=maybe"),
                     ("cuda", "no-such-option=1"),
                     ("cpu", "deterministic=true")):
    try:
        attnfuse.compile(source, target=target, kernel_options=text)
        print("compiled", target, text)
    except attnfuse.CompileError as e:
        print("kernel options", target, repr(text), "->",
              e.diagnostics[0].message.splitlines()[0][:110])
# CHECK: kernel options cuda 'deterministic=maybe' -> invalid kernel options 'deterministic=maybe':
# CHECK: kernel options cuda 'no-such-option=1' -> invalid kernel options 'no-such-option=1':
# CHECK: kernel options cpu 'deterministic=true' -> kernel options 'deterministic=true' given for the CPU target
# CHECK-NOT: compiled

# bias_grad: the backward also returns dBias. A bias shared by several
# scores is summed into an f32 accumulator the conversion rounds; a bias of
# the scores' shape is stored, so deterministic mode takes only that one.
shared = AttentionConfig(**base, causal=True, bias_shape=(1, 1, 1, 203),
                         bias_grad=True)
# CHECK: %dq, %dk, %dv, %dbias = attn.attention_backward
# CHECK-SAME: -> tensor<2x4x113x64xbf16>, tensor<2x2x203x64xbf16>, tensor<2x2x203x64xbf16>, tensor<1x1x1x203xbf16>
print(backward_module(shared))
for k in get_kernels(shared, "backward"):
    print("shared bias", k.name, k.argument_names)
# CHECK: shared bias attn_fwd_0_bwd_pre ['do', 'o', 'di', 'dq_accum', 'dbias_accum']
# CHECK: shared bias attn_fwd_0_bwd ['q', 'k', 'v', 'do', 'lse', 'di', 'bias', 'dq_accum', 'dk', 'dv', 'dbias_accum']
# CHECK: shared bias attn_fwd_0_bwd_dq ['dq_accum', 'dq', 'dbias_accum', 'dbias']
full = AttentionConfig(**base, bias_shape=(2, 4, 113, 203), bias_grad=True,
                       deterministic=True)
for k in get_kernels(full, "backward"):
    print("full bias", k.name, k.argument_names)
# CHECK: full bias attn_fwd_0_bwd_pre ['do', 'o', 'di', 'dbias']
# CHECK: full bias attn_fwd_0_bwd ['q', 'k', 'v', 'do', 'lse', 'di', 'bias', 'dk', 'dv', 'dbias']
# CHECK: full bias attn_fwd_0_bwd_dq_ordered ['q', 'k', 'v', 'do', 'lse', 'di', 'bias', 'dq']
try:
    get_kernels(AttentionConfig(**base, bias_shape=(1, 1, 1, 203),
                                bias_grad=True, deterministic=True),
                "backward")
except attnfuse.CompileError as e:
    error = [x for x in e.diagnostics if x.severity == "error"][0]
    print("deterministic shared bias:", error.message.split("(")[0])
# CHECK: deterministic shared bias: {{.*}}deterministic=true cannot compute the gradient of a broadcast bias
try:
    AttentionConfig(**base, bias_grad=True)
except ValueError as e:
    print("ValueError:", e)
# CHECK: ValueError: attention configuration: bias_grad without a bias

# key_lengths: the forward takes the per-batch lengths as an argument of its
# kernel (read by the kernel, no keep mask built first); their element type
# is part of the configuration.
lengths = AttentionConfig(**base, causal=True, alignment="bottom_right",
                          key_lengths="i64")
print(forward_module(lengths))
# CHECK: func.func @forward(%q: tensor<2x4x113x64xbf16>, %k: tensor<2x2x203x64xbf16>, %v: tensor<2x2x203x64xbf16>, %key_lengths: tensor<2xi64>)
# CHECK: key_lengths(%key_lengths : tensor<2xi64>) {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
for k in get_kernels(lengths, "forward"):
    print("key lengths", k.name, k.argument_names)
# CHECK: key lengths attn_fwd_0 ['q', 'k', 'v', 'key_lengths', 'o', 'lse']
try:
    AttentionConfig(**base, key_lengths="f32")
except ValueError as e:
    print("ValueError:", e)
# CHECK: ValueError: attention configuration: key_lengths must be None, 'i32' or 'i64', got 'f32'

# block_table: paged K and V [pages, heads_kv, page_size, D] and the table
# [B, seq_k / page_size], read by the forward kernel; no backward.
pagedcfg = AttentionConfig(**dict(base, seq_k=208), key_lengths="i32",
                           block_table="i32", page_size=16, pages=40)
print(forward_module(pagedcfg))
# CHECK: func.func @forward(%q: tensor<2x4x113x64xbf16>, %k: tensor<40x2x16x64xbf16>, %v: tensor<40x2x16x64xbf16>, %key_lengths: tensor<2xi32>, %block_table: tensor<2x13xi32>)
# CHECK: key_lengths(%key_lengths : tensor<2xi32>) block_table(%block_table : tensor<2x13xi32>)
for k in get_kernels(pagedcfg, "forward"):
    print("paged", k.name, k.argument_names)
# CHECK: paged attn_fwd_0 ['q', 'k', 'v', 'key_lengths', 'block_table', 'o', 'lse']
for bad in (lambda: backward_module(pagedcfg),
            lambda: AttentionConfig(**base, block_table="i32", page_size=16,
                                    pages=4)):
    try:
        bad()
    except ValueError as e:
        print("ValueError:", e)
# CHECK: ValueError: attention configuration: paged K/V (block_table) have no backward
# CHECK: ValueError: attention configuration: a block table needs pages >= 1 of page_size >= 1 keys dividing seq_k = 203, got 4 pages of 16
