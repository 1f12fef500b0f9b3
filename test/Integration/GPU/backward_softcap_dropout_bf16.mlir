// REQUIRES: cuda
// The GPU backward through a softcap score_mod (its derivative derived from
// the region) with dropout: the backward regenerates the forward kernel's
// mask from the same Philox counters and seed (the forward runs on the GPU
// too, in the same function), an explicit scale, d = 128, bf16. The mma_sync
// backward (the default), with libdevice's tanhf and IEEE division instead of tanh.approx.f32
// and a multiplication by 1 / cap
// (approx-score-mod=false), and the simt backward:
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5 --pipeline-options="approx-score-mod=false"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5 --pipeline-options="mma=simt"
// Deterministic mode (dQ summed in order by a kernel of its own, no atomics):
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5 --pipeline-options="deterministic=true"
func.func @f(%q: tensor<1x2x128x128xbf16>, %k: tensor<1x2x192x128xbf16>, %v: tensor<1x2x192x128xbf16>,
             %do: tensor<1x2x128x128xbf16>, %seed: i64)
    -> (tensor<1x2x128x128xbf16>, tensor<1x2x192x128xbf16>, tensor<1x2x192x128xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x128x128xbf16>, tensor<1x2x192x128xbf16>, tensor<1x2x192x128xbf16>)
      seed(%seed) {dropout_p = 0.17 : f32, scale = 0.125 : f32} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x128x128xbf16>, tensor<1x2x128xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x128x128xbf16>, tensor<1x2x192x128xbf16>, tensor<1x2x192x128xbf16>)
      grad(%o, %lse, %do : tensor<1x2x128x128xbf16>, tensor<1x2x128xf32>, tensor<1x2x128x128xbf16>)
      seed(%seed) {dropout_p = 0.17 : f32, scale = 0.125 : f32} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x128x128xbf16>, tensor<1x2x192x128xbf16>, tensor<1x2x192x128xbf16>
  return %dq, %dk, %dv : tensor<1x2x128x128xbf16>, tensor<1x2x192x128xbf16>, tensor<1x2x192x128xbf16>
}
