// REQUIRES: cuda
// The mma_sync backward at head dim 256 (two warps on each 16 keys, each
// with half of the columns of dK and dV): GQA 4/2, causal, tails of
// Nq = Nk = 300, bf16; and with a softcap and dropout. The forward runs in
// the same function (wgmma).
// RUN: attnfuse-run %s --entry=plain --target=cuda --check=fa --seed=9
// RUN: attnfuse-run %s --entry=features --target=cuda --check=fa --seed=10
func.func @plain(%q: tensor<1x4x300x256xbf16>, %k: tensor<1x2x300x256xbf16>, %v: tensor<1x2x300x256xbf16>,
                 %do: tensor<1x4x300x256xbf16>)
    -> (tensor<1x4x300x256xbf16>, tensor<1x2x300x256xbf16>, tensor<1x2x300x256xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x4x300x256xbf16>, tensor<1x2x300x256xbf16>, tensor<1x2x300x256xbf16>)
      {mask = #attn.mask<causal>} -> tensor<1x4x300x256xbf16>, tensor<1x4x300xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x4x300x256xbf16>, tensor<1x2x300x256xbf16>, tensor<1x2x300x256xbf16>)
      grad(%o, %lse, %do : tensor<1x4x300x256xbf16>, tensor<1x4x300xf32>, tensor<1x4x300x256xbf16>)
      {mask = #attn.mask<causal>}
      -> tensor<1x4x300x256xbf16>, tensor<1x2x300x256xbf16>, tensor<1x2x300x256xbf16>
  return %dq, %dk, %dv : tensor<1x4x300x256xbf16>, tensor<1x2x300x256xbf16>, tensor<1x2x300x256xbf16>
}

func.func @features(%q: tensor<2x2x200x256xbf16>, %k: tensor<2x2x200x256xbf16>, %v: tensor<2x2x200x256xbf16>,
                    %do: tensor<2x2x200x256xbf16>, %seed: i64)
    -> (tensor<2x2x200x256xbf16>, tensor<2x2x200x256xbf16>, tensor<2x2x200x256xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x2x200x256xbf16>, tensor<2x2x200x256xbf16>, tensor<2x2x200x256xbf16>)
      seed(%seed) {dropout_p = 0.17 : f32} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<2x2x200x256xbf16>, tensor<2x2x200xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x2x200x256xbf16>, tensor<2x2x200x256xbf16>, tensor<2x2x200x256xbf16>)
      grad(%o, %lse, %do : tensor<2x2x200x256xbf16>, tensor<2x2x200xf32>, tensor<2x2x200x256xbf16>)
      seed(%seed) {dropout_p = 0.17 : f32} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<2x2x200x256xbf16>, tensor<2x2x200x256xbf16>, tensor<2x2x200x256xbf16>
  return %dq, %dk, %dv : tensor<2x2x200x256xbf16>, tensor<2x2x200x256xbf16>, tensor<2x2x200x256xbf16>
}
