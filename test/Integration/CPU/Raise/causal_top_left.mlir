// The graph of test/Dialect/Attn/Transforms/causal_top_left.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/causal_top_left.mlir --entry=causal_top_left | FileCheck %s
// CHECK: @causal_top_left check=naive: PASS
