// The graph of test/Dialect/Attn/Transforms/runtime_scale.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/runtime_scale.mlir --entry=runtime_scale | FileCheck %s
// CHECK: @runtime_scale check=naive: PASS
