// The graph of test/Dialect/Attn/Transforms/tosa_attention.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/tosa_attention.mlir --entry=tosa_attention | FileCheck %s
// CHECK: @tosa_attention check=naive: PASS
