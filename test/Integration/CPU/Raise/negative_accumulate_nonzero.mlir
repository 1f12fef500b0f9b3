// The graph of test/Dialect/Attn/Transforms/negative_accumulate_nonzero.mlir (is not fused and still computes the graph): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/negative_accumulate_nonzero.mlir --entry=negative_accumulate_nonzero | FileCheck %s
// CHECK: @negative_accumulate_nonzero check=naive: PASS
