// The graph of test/Dialect/Attn/Transforms/bias_then_causal.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/bias_then_causal.mlir --entry=bias_then_causal | FileCheck %s
// CHECK: @bias_then_causal check=naive: PASS
