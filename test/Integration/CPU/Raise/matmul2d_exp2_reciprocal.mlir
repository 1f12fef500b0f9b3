// The graph of test/Dialect/Attn/Transforms/matmul2d_exp2_reciprocal.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/matmul2d_exp2_reciprocal.mlir --entry=matmul2d_exp2_reciprocal | FileCheck %s
// CHECK: @matmul2d_exp2_reciprocal check=naive: PASS
