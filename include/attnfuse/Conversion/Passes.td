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

#endif // ATTNFUSE_CONVERSION_PASSES_TD
