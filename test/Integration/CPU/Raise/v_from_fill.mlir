// The graph of test/Dialect/Attn/Transforms/v_from_fill.mlir (is fused): the
// attnfuse pipeline (with the raising) against the naive lowering of the graph
// as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/v_from_fill.mlir --entry=v_from_fill | FileCheck %s
// CHECK: @v_from_fill check=naive: PASS
