// The graph of test/Dialect/Attn/Transforms/score_times_tensor.mlir (is fused,
// the region reads the weight tensor): the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/score_times_tensor.mlir --entry=score_times_tensor | FileCheck %s
// CHECK: @score_times_tensor check=naive: PASS
