// The graph of test/Dialect/Attn/Transforms/negative_linalg_softmax_query_axis.mlir: the attnfuse pipeline
// (with the raising) against the naive lowering of the graph as written; both
// decompose the linalg.softmax left in the graph (attn-decompose-aggregates).
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/negative_linalg_softmax_query_axis.mlir --entry=negative_linalg_softmax_query_axis | FileCheck %s
// CHECK: @negative_linalg_softmax_query_axis check=naive: PASS
