// The graph of test/Dialect/Attn/Transforms/mqa_indexing_map.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mqa_indexing_map.mlir --entry=mqa_indexing_map | FileCheck %s
// CHECK: @mqa_indexing_map check=naive: PASS
