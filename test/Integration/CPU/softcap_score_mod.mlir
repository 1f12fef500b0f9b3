// f32, a softcapping score_mod region (s -> 2 tanh(s / 2)) with an explicit
// scale of 0.5, so that the cap is reached.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --seed=10 --pipeline-options="block-q=16 block-k=16" --dump-inputs=%t/in --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: %reference check --inputs %t/in --outputs %t/naive --dtype f32 --scale 0.5 --softcap 2
// RUN: %reference check --inputs %t/in --outputs %t/tiled --dtype f32 --scale 0.5 --softcap 2
// RUN: not %reference check --inputs %t/in --outputs %t/tiled --dtype f32 --scale 0.5
// CHECK: PASS
func.func @f(%q: tensor<1x2x30x16xf32>, %k: tensor<1x2x30x16xf32>, %v: tensor<1x2x30x16xf32>)
    -> tensor<1x2x30x16xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x30x16xf32>, tensor<1x2x30x16xf32>, tensor<1x2x30x16xf32>)
      {scale = 0.5 : f32} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 2.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x30x16xf32>
  return %o : tensor<1x2x30x16xf32>
}
