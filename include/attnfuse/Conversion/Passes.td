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

    Two instruction families: `mma_sync` (default; bf16/f16, head dims
    multiples of 16 up to 256): FlashAttention-2's structure on tensor cores
    (mma.sync m16n8k16, f32 accumulators), 4 warps, Q and two cp.async K/V
    stages in shared memory, ldmatrix, P kept in registers, the blocks that
    every row sees whole in a loop without per-element mask; `simt`: f32
    FMAs, T threads per query row (f32, odd head dims: `mma_sync` falls back
    to it with a remark). Options left at 0 take defaults per head dimension
    and features. The kernel's arguments: Q, K, V, [bias], [keep], [seed],
    O, lse. See docs/GPU.md.
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", /*default=*/"0",
           "Query rows per CTA (0: the default per head dim and features; "
           "mma_sync: 16 or 32 rows per warp)">,
    Option<"blockK", "block-k", "int64_t", /*default=*/"0",
           "Keys per shared-memory block (0: the default per head dim and "
           "features; mma_sync: 32 or 64)">,
    Option<"threadsPerRow", "threads-per-row", "int64_t", /*default=*/"0",
           "Threads per query row (0: max(1, d / 32))">,
    Option<"chunk", "chunk", "int64_t", /*default=*/"0",
           "Keys per online-softmax rescaling (0: simt 16, mma_sync block-k; "
           "mma_sync: a multiple of 16 dividing block-k)">,
    Option<"minCtasPerSM", "min-ctas-per-sm", "int64_t", /*default=*/"1",
           "CTAs per SM that register allocation must allow "
           "(.minnctapersm; negative: ptxas's choice)">,
    Option<"warps", "warps", "int64_t", /*default=*/"0",
           "mma_sync: warps per CTA, 4 or 8 (0: 4, 8 above d = 128); block-q "
           "is 16 or 32 rows per warp">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "mma_sync: K/V shared-memory stages of the cp.async pipeline, "
           "2-4 (0: 2)">,
    Option<"sharedMemoryLimit", "shared-memory-limit", "int64_t",
           /*default=*/"0",
           "mma_sync: dynamic shared memory per CTA in bytes (0: 227 KB, "
           "sm_90); attn-lower-to-nvvm-pipeline sets it from its chip">,
    Option<"lazyRescale", "lazy-rescale", "bool", /*default=*/"true",
           "mma_sync: rescale the O accumulators by exp2(m_old - m_new) "
           "only when a row max of the warp changed (warp vote), instead of "
           "after every key block">,
    Option<"mma", "mma", "std::string", /*default=*/"\"mma_sync\"",
           "Instruction family of the products: mma_sync (default; "
           "tensor-core mma.sync m16n8k16, bf16/f16; ops it does not cover "
           "fall back to simt with a remark) or simt (f32 FMAs)">,
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
