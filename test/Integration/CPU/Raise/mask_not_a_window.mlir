// The graphs of test/Dialect/Attn/Transforms/mask_not_a_window.mlir: the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_not_a_window.mlir --entry=keys_prefix | FileCheck %s --check-prefix=KEYSPREFIX
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_not_a_window.mlir --entry=diagonal_hidden | FileCheck %s --check-prefix=DIAGONALHIDDEN
// KEYSPREFIX: @keys_prefix check=naive: PASS
// DIAGONALHIDDEN: @diagonal_hidden check=naive: PASS
