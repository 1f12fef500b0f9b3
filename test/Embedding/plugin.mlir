// attnfuse's passes inside Debian's own mlir-opt, through the plugin.
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(convert-attn-to-linalg)" | FileCheck %s --check-prefix=LINALG
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(convert-attn-to-scf{block-q=8 block-k=8})" | FileCheck %s --check-prefix=SCF
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(attn-lower-to-cpu-pipeline)" | FileCheck %s --check-prefix=CPU
// The raising pass on an unfused graph (the file's second function).
// RUN: %mlir_opt %s --load-dialect-plugin=%attnfuse_plugin --load-pass-plugin=%attnfuse_plugin --pass-pipeline="builtin.module(attn-raise-attention)" 2>&1 | FileCheck %s --check-prefix=RAISE
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
// CPU-LABEL: llvm.func @unfused
// CPU-NOT:     linalg.softmax

// RAISE: plugin.mlir:[[# @LINE + 25]]:8: remark: fused into attn.attention
// RAISE-LABEL: func.func @unfused
// RAISE-NOT:     linalg.softmax
// RAISE:         attn.attention
// RAISE-NOT:     linalg.softmax
func.func @attention(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>,
                     %v: tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x16x8xf32>,
                          tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
      -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}

// softmax(Q K^T) V in linalg.
func.func @unfused(%q: tensor<16x8xf32>, %k: tensor<16x8xf32>,
                   %v: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %kt0 = tensor.empty() : tensor<8x16xf32>
  %kt = linalg.transpose ins(%k : tensor<16x8xf32>) outs(%kt0 : tensor<8x16xf32>) permutation = [1, 0]
  %s0 = tensor.empty() : tensor<16x16xf32>
  %sf = linalg.fill ins(%zero : f32) outs(%s0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<16x8xf32>, tensor<8x16xf32>) outs(%sf : tensor<16x16xf32>) -> tensor<16x16xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<16x16xf32>) outs(%s0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %o0 = tensor.empty() : tensor<16x8xf32>
  %of = linalg.fill ins(%zero : f32) outs(%o0 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %o = linalg.matmul ins(%p, %v : tensor<16x16xf32>, tensor<16x8xf32>) outs(%of : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %o : tensor<16x8xf32>
}
