//===- Passes.td - attn dialect transformation passes ------*- tablegen -*-===//
#ifndef ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_TD
#define ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnRaiseAttention : Pass<"attn-raise-attention"> {
  let summary = "Raise unfused attention chains (contraction, softmax, "
                "contraction) into attn.attention";
  let description = [{
    Finds every chain `O = contract_k(softmax_k(T(contract_d(Q, K))), V)`
    written in linalg on tensors (named or generic contractions, named or
    decomposed softmax, any pointwise score pipeline, transposes, reshapes,
    broadcasts and casts) and rewrites it into one `attn.attention`, after
    proving that the op computes the same function (docs/Raising.md states
    the rules). Every candidate chain is reported: "fused into
    attn.attention" or "not fused: <reason>" at the op that failed.

    Example: `attnfuse-opt --attn-raise-attention="report=errors summary"`.
  }];
  let options = [
    Option<"report", "report", "std::string", /*default=*/"\"remarks\"",
           "How each candidate chain is reported: 'remarks' (a remark per "
           "chain), 'errors' (a chain that is not fused is an error and the "
           "pass fails), 'none'">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "Print counts (candidates, fused, not fused by reason) to stderr">,
  ];
  let dependentDialects = [
    "::attnfuse::attn::AttnDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def AttnDecomposeAggregates : Pass<"attn-decompose-aggregates"> {
  let summary = "Decompose linalg aggregate ops (linalg.softmax) into "
                "linalg.generic ops";
  let description = [{
    Rewrites every op implementing linalg's AggregatedOpInterface (today
    `linalg.softmax`) with its own decomposition (max, subtract and exp, sum,
    divide), so that attnfuse's pipelines can lower and execute graphs that a
    chain left unfused, or the naive pipeline, still holds them in.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def AttnHoistRuntimeChecks : Pass<"attn-hoist-runtime-checks"> {
  let summary = "Each cf.assert as early in its block as its operands allow";
  let description = [{
    Moves every `cf.assert`, with the side-effect-free, region-free ops of
    its block that compute its condition (`tensor.dim`, `arith`), up to
    right after the last op it depends on or the last op before it with
    side effects other than a check (`hoistRuntimeChecks`). A program whose
    check fails stops there as before, only earlier: no op in between has
    an effect. Graphs imported with runtime sizes check their assumptions
    this way (torch-mlir's "mismatched size for broadcast" before an
    elementwise op), and upstream `linalg-fuse-elementwise-ops` takes the
    checked facts for granted: its reshape propagation sizes one tensor's
    view by another's dimensions, so code that ran after the check before
    fusion can run before it, out of bounds, where the check fails.
    attnfuse's CPU and GPU pipelines run this pass before that fusion.
  }];
}

def AttnLowerDynamicExpandShapes : Pass<"attn-lower-dynamic-expand-shapes"> {
  let summary = "memref.expand_shape ops that split a dimension into several "
                "runtime sizes, as extract_strided_metadata and "
                "reinterpret_cast";
  let description = [{
    MLIR 22's `expand-strided-metadata` crashes (in building a
    `memref.reinterpret_cast`) on a `memref.expand_shape` whose
    reassociation splits one dimension into two or more runtime sizes, e.g.
    `memref<?x32xf32>` into `memref<?x?x32xf32>`: what a graph exported with
    a runtime sequence length (the TorchScript ONNX exporter's reshapes of
    `[B·N, C]` into `[B, N, C]`) bufferizes to. This pass rewrites exactly
    those ops into `memref.extract_strided_metadata` of the source and a
    `memref.reinterpret_cast` of its base buffer with the expanded sizes and
    strides (each split dimension's stride times the sizes inside it), which
    `expand-strided-metadata` then lowers. attnfuse's CPU and GPU pipelines
    run it right before `expand-strided-metadata`;
    `populateLowerDynamicExpandShapePatterns` gives the pattern to other
    pipelines.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def AttnPackGroupedQueries : Pass<"attn-pack-grouped-queries"> {
  let summary = "Decode with grouped query heads as attention over the K/V "
                "heads, the group's query heads as rows";
  let description = [{
    Rewrites every `attn.attention` that decodes one query row per head
    with grouped query heads (GQA/MQA, Nq = 1) and nothing that depends on
    the query head or position (no dropout, a bias or keep mask of size 1
    along the head and query dims, a structural mask that shows the row
    every key, a score_mod that does not read the head or query index) into
    the same attention over the K/V heads (`packGroupedQueries`): Q
    `[B, Hq, 1, D]` viewed as `[B, Hkv, G, D]`, O and lse viewed back. A
    kernel then reads each K/V head once for the whole group
    (FlashAttention's pack_gqa) instead of once per query head. For
    tensor-level pipelines; `convert-attn-to-gpu` packs in its kernels
    instead (its `pack-gqa` option), where a mask per query position may
    stay (speculative decoding, windows).
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def AttnExpandInferenceOperands : Pass<"attn-expand-inference-operands"> {
  let summary = "Express key lengths, paged K/V and packed sequences through "
                "a keep mask and gathered K/V";
  let description = [{
    Rewrites every `attn.attention` and `attn.attention_backward` with
    `key_lengths`, a `block_table` or `sequence_offsets` into the same
    attention without them (`expandInferenceOperands`): a keep mask hides
    the keys they hide (the structural mask moves into it where its
    positions depend on them: packed sequences, key lengths with a
    bottom-right mask), and paged K and V are gathered at the logical key
    positions. For a target whose kernels take none of them: the GPU
    pipeline runs it before `convert-attn-to-gpu`. The result computes the
    same function, without block skipping by length or sequence.

    With `keep-forward-cache-operands`, an `attn.attention` without packed
    sequences keeps its `key_lengths` and `block_table` (a KV cache's
    operands): the GPU's forward kernels take them natively (each tile
    visits only its batch's key blocks and reads each key row from its
    page).
  }];
  let options = [
    Option<"keepForwardCacheOperands", "keep-forward-cache-operands", "bool",
           /*default=*/"false",
           "Leave key_lengths and block_table on an attn.attention without "
           "packed sequences (a target whose forward kernels take them)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // ATTNFUSE_DIALECT_ATTN_TRANSFORMS_PASSES_TD
