// The graph of test/Dialect/Attn/Transforms/f16_everywhere.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written,
// by the FlashAttention rule: the graph accumulates in f16 and the op in f32, so
// the raised result must be at least about as close to fp64 as the graph's.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/f16_everywhere.mlir --entry=f16_everywhere --check=fa | FileCheck %s
// CHECK: @f16_everywhere check=fa: PASS
