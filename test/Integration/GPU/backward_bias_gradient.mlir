// REQUIRES: cuda
// grad_bias on the GPU, every family, against the f64 reference (FA rule):
// - @key_padding: a bf16 bias [B, 1, 1, Nk] (summed over heads and queries by
//   f32 atomics, rounded by the conversion), GQA 4/2, causal bottom-right,
//   Nq = 200, Nk = 230 (tails);
// - @heads: an f32 bias [Hq, Nq, Nk] (summed over the batch into dBias
//   itself), sliding window;
// - @full: a bf16 bias of the scores' shape (stored once per element, no
//   atomics: also in deterministic mode) with softcapping and dropout (dBias
//   is dT, before the score_mod's derivative);
// - @full_f32: the same in f32 without the softcap (whose tanh.approx.f32,
//   docs/Semantics.md, the f32 dBias's tight bound would see), causal.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=3 --entry=key_padding
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=3 --entry=key_padding --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=3 --entry=key_padding --pipeline-options="mma=simt"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=4 --entry=heads --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=4 --entry=heads --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=4 --entry=heads --pipeline-options="mma=simt"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5 --entry=full --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5 --entry=full --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5 --entry=full --pipeline-options="mma=simt"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5 --entry=full --pipeline-options="deterministic=true"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=6 --entry=full_f32 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=6 --entry=full_f32 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=6 --entry=full_f32 --pipeline-options="deterministic=true"
func.func @key_padding(%q: tensor<2x4x200x64xbf16>, %k: tensor<2x2x230x64xbf16>, %v: tensor<2x2x230x64xbf16>,
                       %bias: tensor<2x1x1x230xbf16>, %do: tensor<2x4x200x64xbf16>)
    -> (tensor<2x4x200x64xbf16>, tensor<2x2x230x64xbf16>, tensor<2x2x230x64xbf16>, tensor<2x1x1x230xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x200x64xbf16>, tensor<2x2x230x64xbf16>, tensor<2x2x230x64xbf16>)
      bias(%bias : tensor<2x1x1x230xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x200x64xbf16>, tensor<2x4x200xf32>
  %dq, %dk, %dv, %db = attn.attention_backward
      ins(%q, %k, %v : tensor<2x4x200x64xbf16>, tensor<2x2x230x64xbf16>, tensor<2x2x230x64xbf16>)
      grad(%o, %lse, %do : tensor<2x4x200x64xbf16>, tensor<2x4x200xf32>, tensor<2x4x200x64xbf16>)
      bias(%bias : tensor<2x1x1x230xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x200x64xbf16>, tensor<2x2x230x64xbf16>, tensor<2x2x230x64xbf16>, tensor<2x1x1x230xbf16>
  return %dq, %dk, %dv, %db : tensor<2x4x200x64xbf16>, tensor<2x2x230x64xbf16>, tensor<2x2x230x64xbf16>, tensor<2x1x1x230xbf16>
}

func.func @heads(%q: tensor<2x2x192x128xf16>, %k: tensor<2x2x192x128xf16>, %v: tensor<2x2x192x128xf16>,
                 %bias: tensor<2x192x192xf32>, %do: tensor<2x2x192x128xf16>)
    -> (tensor<2x2x192x128xf16>, tensor<2x2x192x128xf16>, tensor<2x2x192x128xf16>, tensor<2x192x192xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x2x192x128xf16>, tensor<2x2x192x128xf16>, tensor<2x2x192x128xf16>)
      bias(%bias : tensor<2x192x192xf32>)
      {mask = #attn.mask<sliding_window>, window_left = 70, window_right = 9}
      -> tensor<2x2x192x128xf16>, tensor<2x2x192xf32>
  %dq, %dk, %dv, %db = attn.attention_backward
      ins(%q, %k, %v : tensor<2x2x192x128xf16>, tensor<2x2x192x128xf16>, tensor<2x2x192x128xf16>)
      grad(%o, %lse, %do : tensor<2x2x192x128xf16>, tensor<2x2x192xf32>, tensor<2x2x192x128xf16>)
      bias(%bias : tensor<2x192x192xf32>)
      {mask = #attn.mask<sliding_window>, window_left = 70, window_right = 9}
      -> tensor<2x2x192x128xf16>, tensor<2x2x192x128xf16>, tensor<2x2x192x128xf16>, tensor<2x192x192xf32>
  return %dq, %dk, %dv, %db : tensor<2x2x192x128xf16>, tensor<2x2x192x128xf16>, tensor<2x2x192x128xf16>, tensor<2x192x192xf32>
}

func.func @full(%q: tensor<1x2x130x64xbf16>, %k: tensor<1x2x150x64xbf16>, %v: tensor<1x2x150x64xbf16>,
                %bias: tensor<1x2x130x150xbf16>, %do: tensor<1x2x130x64xbf16>, %seed: i64)
    -> (tensor<1x2x130x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x130x150xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x130x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>)
      bias(%bias : tensor<1x2x130x150xbf16>) seed(%seed) {dropout_p = 0.17 : f32}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x130x64xbf16>, tensor<1x2x130xf32>
  %dq, %dk, %dv, %db = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x130x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>)
      grad(%o, %lse, %do : tensor<1x2x130x64xbf16>, tensor<1x2x130xf32>, tensor<1x2x130x64xbf16>)
      bias(%bias : tensor<1x2x130x150xbf16>) seed(%seed) {dropout_p = 0.17 : f32}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x130x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x130x150xbf16>
  return %dq, %dk, %dv, %db : tensor<1x2x130x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x130x150xbf16>
}

func.func @full_f32(%q: tensor<1x2x130x64xbf16>, %k: tensor<1x2x150x64xbf16>, %v: tensor<1x2x150x64xbf16>,
                    %bias: tensor<1x2x130x150xf32>, %do: tensor<1x2x130x64xbf16>, %seed: i64)
    -> (tensor<1x2x130x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x130x150xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x130x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>)
      bias(%bias : tensor<1x2x130x150xf32>) seed(%seed)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.17 : f32}
      -> tensor<1x2x130x64xbf16>, tensor<1x2x130xf32>
  %dq, %dk, %dv, %db = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x130x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>)
      grad(%o, %lse, %do : tensor<1x2x130x64xbf16>, tensor<1x2x130xf32>, tensor<1x2x130x64xbf16>)
      bias(%bias : tensor<1x2x130x150xf32>) seed(%seed)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.17 : f32}
      -> tensor<1x2x130x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x130x150xf32>
  return %dq, %dk, %dv, %db : tensor<1x2x130x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x150x64xbf16>, tensor<1x2x130x150xf32>
}
