// The CPU pipeline raises and tiles attention, and a model's CI can make any
// chain left unfused an error.
// RUN: attnfuse-opt %S/../../examples/attention.mlir --attn-lower-to-cpu-pipeline="raise-report=errors" | FileCheck %s --check-prefix=LLVM
// RUN: not attnfuse-opt %S/../Dialect/Attn/Transforms/negative_probs_escape.mlir --attn-lower-to-cpu-pipeline="raise-report=errors" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNFUSED
// RUN: attnfuse-opt %S/../Dialect/Attn/Transforms/negative_probs_escape.mlir --attn-lower-to-cpu-pipeline -o /dev/null

// LLVM: llvm.func @attention
// LLVM-NOT: linalg.
// UNFUSED: error: not fused:
