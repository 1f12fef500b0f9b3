// The graphs of test/Dialect/Attn/Transforms/negative_lse_not_lse.mlir: the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/negative_lse_not_lse.mlir --entry=not_lse | FileCheck %s --check-prefix=NOTLSE
// NOTLSE: @not_lse check=naive: PASS
