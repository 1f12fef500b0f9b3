// The graph of test/Dialect/Attn/Transforms/bshd_layout.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/bshd_layout.mlir --entry=bshd_layout | FileCheck %s
// CHECK: @bshd_layout check=naive: PASS
