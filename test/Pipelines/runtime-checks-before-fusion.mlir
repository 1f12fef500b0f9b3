// BERT's TorchScript ONNX export with a dynamic sequence axis (generated:
// scripts/corpus/generate_dynamic.py --failing-onnx) fails its own
// "mismatched size for broadcast" check at every length: torch-mlir assumes
// a runtime dimension never broadcasts, and the padding mask [1, 1, 1, N]
// meets the scores [1, 2, N, N]. The naive pipeline stops at the check;
// the pipeline under test did not: upstream linalg-fuse-elementwise-ops
// (after the raising) sized views by the checked sizes and ran the scores'
// product out of bounds before the check (heap corruption, then a hang).
// attn-hoist-runtime-checks moves the checks first: the program under
// test stops at its check too.
// RUN: not attnfuse-run %S/Inputs/bert_onnx_dynamic_axis.mlir --check=fa --dynamic-sizes=8 --int-bound=2 > %t.out 2> %t.err
// RUN: FileCheck %s --check-prefix=ERR < %t.err
// RUN: FileCheck %s --check-prefix=OUT < %t.out
// RUN: not attnfuse-run %S/Inputs/bert_onnx_dynamic_axis.mlir --check=none --pipeline-options=naive --dynamic-sizes=8 --int-bound=2 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: attnfuse-opt %S/Inputs/bert_onnx_dynamic_axis.mlir --attn-lower-to-cpu-pipeline --mlir-print-ir-after=attn-hoist-runtime-checks -o /dev/null 2>&1 | FileCheck %s --check-prefix=HOISTED
// The same checks fail on the IR before the pass (the checks come after the
// scores' product there).
// RUN: attnfuse-opt %S/Inputs/bert_onnx_dynamic_axis.mlir --attn-lower-to-cpu-pipeline --mlir-print-ir-before=attn-hoist-runtime-checks -o /dev/null 2>&1 | not FileCheck %s --check-prefix=HOISTED

// ERR: @_mlir_ciface_main_graph aborted: the program called abort (a cf.assert that failed
// OUT: mismatched size for broadcast

// After the hoisting, the four checks of the scores' sum with the mask
// (the 5th to 8th of the function) come before the scores' product (the
// first generic with a reduction before a parallel dim).
// HOISTED: IR Dump {{.*}}AttnHoistRuntimeChecks
// HOISTED-COUNT-4: "mismatched size for broadcast"
// HOISTED-NOT: "reduction", "parallel"]
// HOISTED: "mismatched size for broadcast"
// HOISTED-NOT: "reduction", "parallel"]
// HOISTED: "mismatched size for broadcast"
// HOISTED-NOT: "reduction", "parallel"]
// HOISTED: "mismatched size for broadcast"
// HOISTED-NOT: "reduction", "parallel"]
// HOISTED: "mismatched size for broadcast"
// HOISTED: "reduction", "parallel"]
