// The graphs of test/Dialect/Attn/Transforms/mask_causal_and_padding.mlir: the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_causal_and_padding.mlir --entry=causal_and_padding_ninf | FileCheck %s --check-prefix=CAUSALANDPADDINGNINF
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_causal_and_padding.mlir --entry=causal_and_padding_finfo_min | FileCheck %s --check-prefix=CAUSALANDPADDINGFINFOMIN
// CAUSALANDPADDINGNINF: @causal_and_padding_ninf check=naive: PASS
// CAUSALANDPADDINGFINFOMIN: @causal_and_padding_finfo_min check=naive: PASS
