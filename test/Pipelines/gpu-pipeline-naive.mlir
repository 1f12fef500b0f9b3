// REQUIRES: ptxas
// attn-lower-to-nvvm-pipeline{naive=true}: the reference lowering
// (convert-attn-to-linalg) as upstream-made kernels, the GPU oracle of
// attnfuse-run --target=cuda: one launch per linalg op of the materializing
// computation (bias, causal mask, softcap score_mod, dropout, lse), each with
// its own binary; no attn op is left. Blocks of at most 32x8 threads.
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="naive=true format=isa" | FileCheck %s
// ptxas assembles every naive kernel for sm_90a (format=bin, the default):
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="naive=true" | FileCheck %s --check-prefix=BIN
// BIN-NOT: attn.
// BIN-COUNT-14: gpu.binary @f_kernel{{(_[0-9]+)?}} [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx81">, properties = {{.*}}, bin = "
// CHECK-NOT: attn.
// CHECK: llvm.func @f(
// CHECK-COUNT-10: gpu.launch_func @f_kernel{{(_[0-9]+)?}}::@f_kernel
// CHECK: llvm.return
// CHECK-NOT: attn.
// CHECK: gpu.binary @f_kernel{{.*}}#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx81">
// CHECK-SAME: .entry f_kernel
// CHECK-NOT: attn.
func.func @f(%q: tensor<1x2x40x32xbf16>, %k: tensor<1x2x50x32xbf16>, %v: tensor<1x2x50x32xbf16>,
             %bias: tensor<40x50xbf16>, %seed: i64) -> (tensor<1x2x40x32xbf16>, tensor<1x2x40xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x40x32xbf16>, tensor<1x2x50x32xbf16>, tensor<1x2x50x32xbf16>)
      bias(%bias : tensor<40x50xbf16>) seed(%seed)
      {mask = #attn.mask<causal>, dropout_p = 0.1 : f32} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x40x32xbf16>, tensor<1x2x40xf32>
  return %o, %lse : tensor<1x2x40x32xbf16>, tensor<1x2x40xf32>
}
