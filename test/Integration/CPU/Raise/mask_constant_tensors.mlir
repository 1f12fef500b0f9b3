// The graphs of test/Dialect/Attn/Transforms/mask_constant_tensors.mlir: the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_constant_tensors.mlir --entry=const_tril_select | FileCheck %s --check-prefix=CONSTTRILSELECT
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_constant_tensors.mlir --entry=const_table | FileCheck %s --check-prefix=CONSTTABLE
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_constant_tensors.mlir --entry=const_table_diagonal | FileCheck %s --check-prefix=CONSTTABLEDIAGONAL
// CONSTTRILSELECT: @const_tril_select check=naive: PASS
// CONSTTABLE: @const_table check=naive: PASS
// CONSTTABLEDIAGONAL: @const_table_diagonal check=naive: PASS
