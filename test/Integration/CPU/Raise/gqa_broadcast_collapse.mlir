// The graph of test/Dialect/Attn/Transforms/gqa_broadcast_collapse.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/gqa_broadcast_collapse.mlir --entry=gqa_broadcast_collapse | FileCheck %s
// CHECK: @gqa_broadcast_collapse check=naive: PASS
