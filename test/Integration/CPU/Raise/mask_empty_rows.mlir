// The graphs of test/Dialect/Attn/Transforms/mask_empty_rows.mlir (but @empty_rows_ninf,
// whose row 0 the graph makes NaN and the op 0, the stated difference): the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_empty_rows.mlir --entry=empty_rows_large_negative | FileCheck %s --check-prefix=EMPTYROWSLARGENEGATIVE
// EMPTYROWSLARGENEGATIVE: @empty_rows_large_negative check=naive: PASS
