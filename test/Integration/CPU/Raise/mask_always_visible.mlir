// The graphs of test/Dialect/Attn/Transforms/mask_always_visible.mlir: the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_always_visible.mlir --entry=always_visible | FileCheck %s --check-prefix=ALWAYSVISIBLE
// ALWAYSVISIBLE: @always_visible check=naive: PASS
