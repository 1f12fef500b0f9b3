// The graph of test/Dialect/Attn/Transforms/bool_mask_keep.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/bool_mask_keep.mlir --entry=bool_mask_keep | FileCheck %s
// CHECK: @bool_mask_keep check=naive: PASS
