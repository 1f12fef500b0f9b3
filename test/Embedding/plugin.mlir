// attnfuse's passes inside Debian's own mlir-opt, through the plugin.
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(convert-attn-to-linalg)" | FileCheck %s --check-prefix=LINALG
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(convert-attn-to-scf{block-q=8 block-k=8})" | FileCheck %s --check-prefix=SCF
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(attn-lower-to-cpu-pipeline)" | FileCheck %s --check-prefix=CPU
// (Plugin passes are named in --pass-pipeline: mlir-opt's pass flags are
// fixed before the plugin loads.)
// Without the plugin, mlir-opt knows neither the dialect nor the passes.
// RUN: not %mlir_opt %s 2>&1 | FileCheck %s --check-prefix=NO-PLUGIN
// RUN: not %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(convert-attn-to-scf)" 2>&1 | FileCheck %s --check-prefix=NO-PASS-PLUGIN

// NO-PLUGIN: Dialect `attn' not found for custom op 'attn.attention'
// NO-PASS-PLUGIN: 'convert-attn-to-scf' does not refer to a registered pass

// LINALG-LABEL: func.func @attention
// LINALG-NOT:     attn.attention
// LINALG:         linalg.generic
// LINALG:         tensor<1x2x16x16xf32>

// SCF-LABEL: func.func @attention
// SCF-NOT:     attn.attention
// SCF:         scf.forall {{.+}} in (1, 2, 2)
// SCF:           scf.for
// SCF-NOT:     tensor<1x2x16x16xf32>

// CPU-LABEL: llvm.func @attention
// CPU-NOT:     attn.attention
func.func @attention(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>,
                     %v: tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x16x8xf32>,
                          tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
      -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}
