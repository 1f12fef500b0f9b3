// The graphs of test/Dialect/Attn/Transforms/mask_abs_window.mlir: the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_abs_window.mlir --entry=abs_window | FileCheck %s --check-prefix=ABSWINDOW
// ABSWINDOW: @abs_window check=naive: PASS
