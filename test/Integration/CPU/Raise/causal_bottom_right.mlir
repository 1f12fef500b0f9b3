// The graph of test/Dialect/Attn/Transforms/causal_bottom_right.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/causal_bottom_right.mlir --entry=causal_bottom_right | FileCheck %s
// CHECK: @causal_bottom_right check=naive: PASS
