// REQUIRES: cuda
// The GPU backward at head dims 192 / 128 (DeepSeek's Dqk != Dv), no mask,
// MQA, 160 keys and rows, bf16: the mma_sync backward (two warps on each 16
// keys, tails of its 64-key blocks) and the simt backward (T = 16 threads
// per key row, tails of its key blocks of 32).
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=7
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=7 --pipeline-options="mma=simt"
func.func @f(%q: tensor<1x2x160x192xbf16>, %k: tensor<1x1x160x192xbf16>, %v: tensor<1x1x160x128xbf16>,
             %do: tensor<1x2x160x128xbf16>)
    -> (tensor<1x2x160x192xbf16>, tensor<1x1x160x192xbf16>, tensor<1x1x160x128xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x160x192xbf16>, tensor<1x1x160x192xbf16>, tensor<1x1x160x128xbf16>)
      -> tensor<1x2x160x128xbf16>, tensor<1x2x160xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x160x192xbf16>, tensor<1x1x160x192xbf16>, tensor<1x1x160x128xbf16>)
      grad(%o, %lse, %do : tensor<1x2x160x128xbf16>, tensor<1x2x160xf32>, tensor<1x2x160x128xbf16>)
      -> tensor<1x2x160x192xbf16>, tensor<1x1x160x192xbf16>, tensor<1x1x160x128xbf16>
  return %dq, %dk, %dv : tensor<1x2x160x192xbf16>, tensor<1x1x160x192xbf16>, tensor<1x1x160x128xbf16>
}
