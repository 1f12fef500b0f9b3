// The graph of test/Dialect/Attn/Transforms/negative_score_times_tensor.mlir (is not fused and still computes the graph): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/negative_score_times_tensor.mlir --entry=negative_score_times_tensor | FileCheck %s
// CHECK: @negative_score_times_tensor check=naive: PASS
