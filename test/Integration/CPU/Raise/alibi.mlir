// The graph of test/Dialect/Attn/Transforms/alibi.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/alibi.mlir --entry=alibi | FileCheck %s
// CHECK: @alibi check=naive: PASS
