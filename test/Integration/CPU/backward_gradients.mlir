// attn.attention_backward with GQA, bottom-right causal mask, dropout, an
// explicit scale and a softcap region (whose derivative is derived from the
// region). Its fp64 evaluation matches central finite differences of
// L = sum(O * dO); the reference and the tiled lowering (tiny blocks) match an
// independent analytic fp64 evaluation.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --seed=3 --pipeline-options="block-q=2 block-k=3" --dump-inputs=%t/in --dump-f64=%t/f64 --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: attnfuse-run %s --seed=3 --check=fd --pipeline-options="block-q=2 block-k=3" | FileCheck %s --check-prefix=ORACLE
// ORACLE: check=fd: PASS
// RUN: %reference gradcheck --inputs %t/in --outputs %t/f64 --seed 4 --dropout 0.2 --scale 1.5 --softcap 2 --mask causal --align bottom_right | FileCheck %s --check-prefix=FD
// RUN: %reference check --backward --inputs %t/in --outputs %t/naive --seed 4 --dropout 0.2 --scale 1.5 --softcap 2 --mask causal --align bottom_right
// RUN: %reference check --backward --inputs %t/in --outputs %t/tiled --seed 4 --dropout 0.2 --scale 1.5 --softcap 2 --mask causal --align bottom_right
// CHECK: PASS
// FD-COUNT-3: vs finite differences (f64): PASS
func.func @f(%q: tensor<1x2x5x4xf32>, %k: tensor<1x1x7x4xf32>, %v: tensor<1x1x7x3xf32>,
             %do: tensor<1x2x5x3xf32>, %seed: i64)
    -> (tensor<1x2x5x3xf32>, tensor<1x2x5x4xf32>, tensor<1x1x7x4xf32>, tensor<1x1x7x3xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x5x4xf32>, tensor<1x1x7x4xf32>, tensor<1x1x7x3xf32>)
      seed(%seed)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>,
       dropout_p = 0.2 : f32, scale = 1.5 : f32}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 2.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x5x3xf32>, tensor<1x2x5xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x5x4xf32>, tensor<1x1x7x4xf32>, tensor<1x1x7x3xf32>)
      grad(%o, %lse, %do : tensor<1x2x5x3xf32>, tensor<1x2x5xf32>, tensor<1x2x5x3xf32>)
      seed(%seed)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>,
       dropout_p = 0.2 : f32, scale = 1.5 : f32}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 2.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x5x4xf32>, tensor<1x1x7x4xf32>, tensor<1x1x7x3xf32>
  return %o, %dq, %dk, %dv
      : tensor<1x2x5x3xf32>, tensor<1x2x5x4xf32>, tensor<1x1x7x4xf32>, tensor<1x1x7x3xf32>
}
