// REQUIRES: cuda
// The GPU backward in f32 (dQ is the f32 accumulator itself: no conversion
// kernel): MQA (3 query heads on one KV head), causal top-left with
// Nq > Nk (the rows past Nk see every key), tails of the key blocks.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=4
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=4 --pipeline-options="mma=simt block-k=16"
// Deterministic mode (dQ summed in order by a kernel of its own, no atomics):
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=4 --pipeline-options="deterministic=true"
func.func @f(%q: tensor<1x3x150x32xf32>, %k: tensor<1x1x90x32xf32>, %v: tensor<1x1x90x32xf32>,
             %do: tensor<1x3x150x32xf32>)
    -> (tensor<1x3x150x32xf32>, tensor<1x1x90x32xf32>, tensor<1x1x90x32xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x3x150x32xf32>, tensor<1x1x90x32xf32>, tensor<1x1x90x32xf32>)
      {mask = #attn.mask<causal>} -> tensor<1x3x150x32xf32>, tensor<1x3x150xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x3x150x32xf32>, tensor<1x1x90x32xf32>, tensor<1x1x90x32xf32>)
      grad(%o, %lse, %do : tensor<1x3x150x32xf32>, tensor<1x3x150xf32>, tensor<1x3x150x32xf32>)
      {mask = #attn.mask<causal>}
      -> tensor<1x3x150x32xf32>, tensor<1x1x90x32xf32>, tensor<1x1x90x32xf32>
  return %dq, %dk, %dv : tensor<1x3x150x32xf32>, tensor<1x1x90x32xf32>, tensor<1x1x90x32xf32>
}
