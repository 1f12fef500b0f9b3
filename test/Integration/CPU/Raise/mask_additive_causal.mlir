// The graphs of test/Dialect/Attn/Transforms/mask_additive_causal.mlir: the attnfuse pipeline (with the
// raising) against the naive lowering of the graph as written.
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_additive_causal.mlir --entry=additive_causal_ninf | FileCheck %s --check-prefix=ADDITIVECAUSALNINF
// RUN: attnfuse-run %S/../../../Dialect/Attn/Transforms/mask_additive_causal.mlir --entry=additive_causal_finfo_min | FileCheck %s --check-prefix=ADDITIVECAUSALFINFOMIN
// ADDITIVECAUSALNINF: @additive_causal_ninf check=naive: PASS
// ADDITIVECAUSALFINFOMIN: @additive_causal_finfo_min check=naive: PASS
