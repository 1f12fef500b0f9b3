//===- Passes.td - attnfuse conversion passes --------------*- tablegen -*-===//
#ifndef ATTNFUSE_CONVERSION_PASSES_TD
#define ATTNFUSE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertAttnToLinalg : Pass<"convert-attn-to-linalg"> {
  let summary = "Lower attn.attention to the naive, materializing computation "
                "in linalg on tensors (the reference semantics)";
  let description = [{
    Rewrites every `attn.attention` into the computation its definition
    states, one linalg.generic per step and every intermediate materialized:
    the f32 score matrix `S = scale * Q K^T`, the score modification, bias and
    masks, the row max, `exp`, the row sum, the normalized probabilities (with
    the empty-row rule and dropout), `O = P V` and the row log-sum-exp.

    This lowering *is* attnfuse's semantics: it is the oracle every fused
    lowering is compared against. It is meant to be obviously right, not
    fast, and it allocates `[B, Hq, Nq, Nk]` scores.

    Example: `attnfuse-opt --convert-attn-to-linalg input.mlir`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ConvertAttnToSCF : Pass<"convert-attn-to-scf"> {
  let summary = "Lower attn.attention to the tiled FlashAttention algorithm "
                "(online softmax over key blocks, O(N) memory)";
  let description = [{
    Rewrites every `attn.attention` into FlashAttention's forward algorithm,
    target-independent:

    * `scf.forall` over (batch, query head, query block): the parallel loops;
    * inside, `scf.for` over key/value blocks carrying the running row max
      `m`, row sum `l` and the f32 output accumulator `acc`:
      `m' = max(m, rowmax(S))`, `alpha = exp(m - m')`, `P = exp(S - m')`,
      `l' = alpha * l + rowsum(P)`, `acc' = alpha * acc + dropout(P) V`;
    * at the end `O = acc / l` (0 for empty rows) and `lse = m + log(l)`.

    Scale, score modification, bias, masks and dropout are applied to each
    block's scores. Key blocks that the causal or sliding-window mask hides
    entirely are not visited (the loop bounds exclude them); blocks that it
    shows entirely skip the mask computation (an `scf.if` picks the
    unmasked variant). Sizes need not be multiples of the block sizes.
    No tensor has both a query-length and a key-length dimension.
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", /*default=*/"64",
           "Query rows per block">,
    Option<"blockK", "block-k", "int64_t", /*default=*/"64",
           "Key rows per block">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ConvertAttnToGPU : Pass<"convert-attn-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Generate a fused CUDA FlashAttention forward kernel "
                "(gpu.func) for every attn.attention";
  let description = [{
    Replaces each `attn.attention` (static shapes) by a `gpu.launch_func` of
    a fused forward kernel added to a `gpu.module`: a CTA per (query block,
    batch * head) streams K/V blocks through shared memory, runs the online
    softmax in the log2 domain (exp2, log2 e folded into the scale) and
    writes O and lse once. Key blocks that the structural mask hides are not
    visited; GQA reads K/V head h / G; bias, keep mask, score_mod and dropout
    use the shared ScoreUtils builders.

    Three instruction families; `mma=auto` (the default) picks by `chip`:
    `wgmma` on sm_90a (bf16/f16, head dims up to 256; those that are not
    multiples of 8 copied element by element): FlashAttention-3's
    structure, a producer warpgroup filling a ring of K/V stages (TMA, or
    cp.async with tma=false; mbarriers) and consumer warpgroups issuing
    wgmma.mma_async from swizzled shared memory, P in registers, softmax
    overlapped with the products, setmaxnreg, ping-pong, O by TMA stores,
    a persistent grid; `mma_sync` below
    sm_90a (same types and head dims): FlashAttention-2's structure on
    tensor cores (mma.sync m16n8k16, f32 accumulators), 4 warps, Q and
    cp.async K/V stages in shared memory, ldmatrix, P kept in registers;
    `simt`: f32 FMAs, T threads per query row (f32). A
    family that cannot compute an op falls back, wgmma to mma_sync to simt,
    with a remark. The blocks that every row sees whole run a loop without
    per-element mask. Options left at 0 take defaults per head dimension
    and features. The kernel's arguments: Q, K, V, [bias], [keep], [seed],
    [score_mod captures], O, lse, [tensor maps of Q, K, V, O: the wgmma
    family's TMA]; where the mma_sync forward splits the keys (kv-splits,
    FlashDecoding) it writes f32 partials instead of O and lse, and a
    second kernel combines them. Layouts: an operand that is a permutation
    keeping the head dim innermost (a `linalg.transpose` or a permuting
    `linalg.generic` copy, e.g. Q, K, V in [B, N, H, D]) is read in place
    through a `memref.transpose` view of its source, and a result whose
    only use is one is written in that layout; the permutations are erased.
    See docs/GPU.md.

    Besides the options below, the pass takes the kernel options declared
    once in include/attnfuse/Conversion/AttnToGPU/KernelOptions.def (and
    forwarded by attn-lower-to-nvvm-pipeline): `chip`, `mma`, `block-q`,
    `block-k`, `threads-per-row`, `chunk`, `min-ctas-per-sm`, `warps`,
    `stages`, `persistent-ctas`, `kv-splits`, `pack-gqa`, `tma`,
    `tma-store`, `q-buffers`, `lazy-rescale`, `deterministic`,
    `dq-column-split`, `approx-score-mod`,
    `report-cost`, `peak-tflops`, `peak-gbps`, `shared-memory-limit`
    (`attnfuse-opt --help` lists them with their meaning).
  }];
  let options = [
    Option<"kernelPrefix", "kernel-prefix", "std::string",
           /*default=*/"\"attn_fwd\"", "Kernel name prefix">,
    Option<"moduleName", "module-name", "std::string",
           /*default=*/"\"attn_kernels\"", "Name of the gpu.module">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

#endif // ATTNFUSE_CONVERSION_PASSES_TD
