// The graph of test/Dialect/Attn/Transforms/sliding_window.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/sliding_window.mlir --entry=sliding_window | FileCheck %s
// CHECK: @sliding_window check=naive: PASS
