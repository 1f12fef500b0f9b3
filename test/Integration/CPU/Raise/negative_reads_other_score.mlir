// The graph of test/Dialect/Attn/Transforms/negative_reads_other_score.mlir (is not fused and still computes the graph): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/negative_reads_other_score.mlir --entry=negative_reads_other_score | FileCheck %s
// CHECK: @negative_reads_other_score check=naive: PASS
