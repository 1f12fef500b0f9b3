// The graphs of test/Dialect/Attn/Transforms/lse_second_output.mlir: the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/lse_second_output.mlir --entry=lse_max_log_sum | FileCheck %s --check-prefix=LSEMAXLOGSUM
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/lse_second_output.mlir --entry=lse_log_sum | FileCheck %s --check-prefix=LSELOGSUM
// LSEMAXLOGSUM: @lse_max_log_sum check=naive: PASS
// LSELOGSUM: @lse_log_sum check=naive: PASS
