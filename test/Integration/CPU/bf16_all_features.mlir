// Everything at once in bf16: GQA, causal bottom-right, f32 bias, keep mask,
// softcap region, dropout, lse. The tiled lowering must meet FlashAttention's
// tolerance rule against fp64 (at most twice the reference lowering's error).
// RUN: attnfuse-run %s --seed=13 --check=fa --pipeline-options="block-q=8 block-k=16" | FileCheck %s
// RUN: attnfuse-run %s --seed=14 --pipeline-options="block-q=32 block-k=8" | FileCheck %s
// CHECK: PASS
func.func @f(%q: tensor<2x4x29x32xbf16>, %k: tensor<2x2x45x32xbf16>, %v: tensor<2x2x45x16xbf16>,
             %bias: tensor<29x45xf32>, %keep: tensor<2x1x1x45xi1>, %seed: i64)
    -> (tensor<2x4x29x16xbf16>, tensor<2x4x29xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x29x32xbf16>, tensor<2x2x45x32xbf16>, tensor<2x2x45x16xbf16>)
      bias(%bias : tensor<29x45xf32>) keep(%keep : tensor<2x1x1x45xi1>) seed(%seed)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.1 : f32}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<2x4x29x16xbf16>, tensor<2x4x29xf32>
  return %o, %lse : tensor<2x4x29x16xbf16>, tensor<2x4x29xf32>
}
