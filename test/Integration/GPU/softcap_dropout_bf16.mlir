// REQUIRES: cuda
// bf16, a softcap score_mod region and dropout (Philox keyed on the seed
// argument): the GPU's mask must be the CPU reference's.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=5 --pipeline-options="mma=simt"
func.func @f(%q: tensor<2x2x128x64xbf16>, %k: tensor<2x2x192x64xbf16>, %v: tensor<2x2x192x64xbf16>,
             %seed: i64) -> tensor<2x2x128x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x2x128x64xbf16>, tensor<2x2x192x64xbf16>, tensor<2x2x192x64xbf16>)
      seed(%seed) {dropout_p = 0.17 : f32} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<2x2x128x64xbf16>
  return %o : tensor<2x2x128x64xbf16>
}
