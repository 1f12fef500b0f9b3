// REQUIRES: ptxas
// math.fpowi in kernels, glue and score_mod alike (torch-mlir writes
// x.pow(2) of RMSNorm and x.pow(3) of gelu_new with an i64 exponent):
// upstream convert-gpu-to-nvvm calls libdevice's __nv_powif(float, i32)
// declared with the op's exponent type, `(f32, i64) -> f32`; the call then
// passes the exponent where the callee does not read it (in the SASS, R6:R7
// against R5), and the power is taken to a garbage exponent: NaN or wrong
// values on the GPU in every LLaMA/Mistral/Qwen2/Gemma2/T5 export of
// torch-mlir (RMSNorm). attn-lower-to-nvvm-pipeline expands math.fpowi
// before convert-gpu-to-nvvm: constant exponents as multiplications (as the
// CPU's llvm.powi), others as math.powf of the converted exponent.
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa" --mlir-print-ir-after=convert-gpu-to-nvvm --mlir-disable-threading -o /dev/null 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa" | FileCheck %s --check-prefix=PTX
// The same in the naive path (its own glue kernels, the same device
// lowering), and in a real export: torch-linalg LLaMA's RMSNorm.
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="naive=true format=isa" | FileCheck %s --check-prefix=PTX
// RUN: attnfuse-opt %S/../Corpus/torch-linalg/llama_gqa_eager_b1.mlir --attn-lower-to-nvvm-pipeline="format=isa" --mlir-print-ir-after=convert-gpu-to-nvvm --mlir-disable-threading -o /dev/null 2>&1 | FileCheck %s --check-prefix=LLAMA

// CHECK-NOT: __nv_powi
// The sum of squares: x * x.
// CHECK-LABEL: gpu.module @f_kernel_0
// CHECK:       %[[X:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:       %[[SQ:.*]] = llvm.fmul %[[X]], %[[X]] : f32
// CHECK:       llvm.fadd %[[SQ]], %{{.*}} : f32
// x^-3 = 1 / (x * x * x); x^n through powf.
// CHECK-LABEL: gpu.module @f_kernel_1
// CHECK:       %[[Y:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:       %[[Y2:.*]] = llvm.fmul %[[Y]], %[[Y]] : f32
// CHECK:       %[[Y3:.*]] = llvm.fmul %[[Y2]], %[[Y]] : f32
// CHECK:       llvm.fdiv %{{.*}}, %[[Y3]] : f32
// CHECK:       %[[N:.*]] = llvm.sitofp %{{.*}} : i64 to f32
// CHECK:       llvm.call @__nv_powf(%[[Y]], %[[N]]) : (f32, f32) -> f32
// The fused kernel's score_mod s^3.
// CHECK-LABEL: gpu.module @attn_kernels
// CHECK-NOT:   __nv_powi

// PTX-NOT: __nv_powi
// PTX:     gpu.binary
// PTX-NOT: __nv_powi

// LLAMA-NOT: __nv_powi
// LLAMA:     llvm.fmul %[[L:.*]], %[[L]] : f32
// LLAMA-NOT: __nv_powi

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @f(%x: tensor<4x32xf32>, %n: i64, %q: tensor<1x2x16x32xf32>,
             %k: tensor<1x2x16x32xf32>, %v: tensor<1x2x16x32xf32>)
    -> (tensor<4x1xf32>, tensor<4x32xf32>, tensor<1x2x16x32xf32>) {
  %c2 = arith.constant 2 : i64
  %cm3 = arith.constant -3 : i64
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<4x1xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sq = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x32xf32>) outs(%z : tensor<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.fpowi %in, %c2 : f32, i64
    %s = arith.addf %p, %out : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %e2 = tensor.empty() : tensor<4x32xf32>
  %pw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x32xf32>) outs(%e2 : tensor<4x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.fpowi %in, %cm3 : f32, i64
    %b = math.fpowi %in, %n : f32, i64
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x32xf32>
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>)
      score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c3 = arith.constant 3 : i64
    %t = math.fpowi %s, %c3 : f32, i64
    attn.yield %t : f32
  } -> tensor<1x2x16x32xf32>
  return %sq, %pw, %o : tensor<4x1xf32>, tensor<4x32xf32>, tensor<1x2x16x32xf32>
}
