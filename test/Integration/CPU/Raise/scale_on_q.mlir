// The graph of test/Dialect/Attn/Transforms/scale_on_q.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/scale_on_q.mlir --entry=scale_on_q | FileCheck %s
// CHECK: @scale_on_q check=naive: PASS
