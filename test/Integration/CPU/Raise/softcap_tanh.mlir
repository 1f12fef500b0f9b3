// The graph of test/Dialect/Attn/Transforms/softcap_tanh.mlir (is fused): the attnfuse
// pipeline (with the raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/softcap_tanh.mlir --entry=softcap_tanh | FileCheck %s
// CHECK: @softcap_tanh check=naive: PASS
