// The graph of test/Dialect/Attn/Transforms/einsum_bhsd_softmax.mlir: the attnfuse pipeline
// (with the raising) against the naive lowering of the graph as written; both
// decompose the linalg.softmax left in the graph (attn-decompose-aggregates).
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/einsum_bhsd_softmax.mlir --entry=einsum_bhsd_softmax | FileCheck %s
// CHECK: @einsum_bhsd_softmax check=naive: PASS
