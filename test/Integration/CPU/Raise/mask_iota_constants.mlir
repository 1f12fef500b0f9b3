// The graphs of test/Dialect/Attn/Transforms/mask_iota_constants.mlir: the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_iota_constants.mlir --entry=iota_causal | FileCheck %s --check-prefix=IOTACAUSAL
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_iota_constants.mlir --entry=iota_sliding_window | FileCheck %s --check-prefix=IOTASLIDINGWINDOW
// IOTACAUSAL: @iota_causal check=naive: PASS
// IOTASLIDINGWINDOW: @iota_sliding_window check=naive: PASS
