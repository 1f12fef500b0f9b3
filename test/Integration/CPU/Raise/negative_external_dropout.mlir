// The graph of test/Dialect/Attn/Transforms/negative_external_dropout.mlir (is not fused and still computes the graph): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/negative_external_dropout.mlir --entry=negative_external_dropout | FileCheck %s
// CHECK: @negative_external_dropout check=naive: PASS
