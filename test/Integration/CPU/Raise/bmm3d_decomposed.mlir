// The graph of test/Dialect/Attn/Transforms/bmm3d_decomposed.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/bmm3d_decomposed.mlir --entry=bmm3d_decomposed | FileCheck %s
// CHECK: @bmm3d_decomposed check=naive: PASS
