// The graph of test/Dialect/Attn/Transforms/additive_bias.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/additive_bias.mlir --entry=additive_bias | FileCheck %s
// CHECK: @additive_bias check=naive: PASS
