// The graph of test/Dialect/Attn/Transforms/negative_probs_escape.mlir (is not fused and still computes the graph): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/negative_probs_escape.mlir --entry=negative_probs_escape | FileCheck %s
// CHECK: @negative_probs_escape check=naive: PASS
