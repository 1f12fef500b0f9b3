// The graph of test/Dialect/Attn/Transforms/negative_softmax_query_axis.mlir (is not fused and still computes the graph): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/negative_softmax_query_axis.mlir --entry=negative_softmax_query_axis | FileCheck %s
// CHECK: @negative_softmax_query_axis check=naive: PASS
