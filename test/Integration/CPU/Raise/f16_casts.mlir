// The graph of test/Dialect/Attn/Transforms/f16_casts.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written
// and fp64 (the default check for an f16 result: the FlashAttention rule).
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/f16_casts.mlir --entry=f16_casts | FileCheck %s
// CHECK: @f16_casts check=fa: PASS
