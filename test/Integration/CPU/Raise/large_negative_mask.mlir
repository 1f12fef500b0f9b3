// The graph of test/Dialect/Attn/Transforms/large_negative_mask.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/large_negative_mask.mlir --entry=large_negative_mask | FileCheck %s
// CHECK: @large_negative_mask check=naive: PASS
