// REQUIRES: cuda
// The mma_sync backward with every per-element feature at once: GQA (4
// query heads on 2 KV heads), causal bottom-right, tails of Nq = 100 and
// Nk = 130, a bias over heads and positions, a keep mask per batch, dropout
// (regenerated from the forward's Philox counters) and a softcap
// (tanh.approx.f32); the forward runs in the same function. Default
// blocks, then the mma_sync forward and backward with 4 warps (the
// backward's 64-key blocks).
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=7
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=7 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=8 --pipeline-options="mma=mma_sync warps=4"
func.func @f(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x2x130x64xbf16>, %v: tensor<2x2x130x64xbf16>,
             %do: tensor<2x4x100x64xbf16>, %bias: tensor<1x4x100x130xbf16>,
             %keep: tensor<2x1x100x130xi1>, %seed: i64)
    -> (tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      bias(%bias : tensor<1x4x100x130xbf16>) keep(%keep : tensor<2x1x100x130xi1>)
      seed(%seed) {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.17 : f32}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 3.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      grad(%o, %lse, %do : tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>, tensor<2x4x100x64xbf16>)
      bias(%bias : tensor<1x4x100x130xbf16>) keep(%keep : tensor<2x1x100x130xi1>)
      seed(%seed) {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.17 : f32}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 3.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
}
