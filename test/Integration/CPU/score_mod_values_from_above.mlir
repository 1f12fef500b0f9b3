// score_mod regions that use values defined outside them, as canonicalization
// (hoisted constants, even the yielded one) and the raising (scalars of the
// graph) write them: the tiled and the reference lowering agree with the fp64
// evaluation. Once a segfault of every lowering.
// RUN: attnfuse-run %s --entry=yields_hoisted_constant --check=f64 --pipeline-options="block-q=2 block-k=3" | FileCheck %s
// RUN: attnfuse-run %s --entry=yields_hoisted_constant --check=naive | FileCheck %s
// RUN: attnfuse-run %s --entry=captures_argument --check=f64 --pipeline-options="block-q=2 block-k=3" | FileCheck %s
// RUN: attnfuse-run %s --entry=captures_argument --check=naive | FileCheck %s
// RUN: attnfuse-run %s --entry=backward_hoisted_constants --check=f64 --pipeline-options="block-q=2 block-k=3" | FileCheck %s
// CHECK: PASS
func.func @yields_hoisted_constant(%q: tensor<1x2x5x4xf32>, %k: tensor<1x2x7x4xf32>, %v: tensor<1x2x7x3xf32>)
    -> (tensor<1x2x5x3xf32>, tensor<1x2x5xf32>) {
  %c = arith.constant 0.5 : f32
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        attn.yield %c : f32
      } -> tensor<1x2x5x3xf32>, tensor<1x2x5xf32>
  return %o, %lse : tensor<1x2x5x3xf32>, tensor<1x2x5xf32>
}

func.func @captures_argument(%q: tensor<1x2x5x4xf32>, %k: tensor<1x2x7x4xf32>, %v: tensor<1x2x7x3xf32>, %cap: f32)
    -> tensor<1x2x5x3xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x5x3xf32>
  return %o : tensor<1x2x5x3xf32>
}

func.func @backward_hoisted_constants(%q: tensor<1x2x5x4xf32>, %k: tensor<1x2x7x4xf32>, %v: tensor<1x2x7x3xf32>,
                                      %do: tensor<1x2x5x3xf32>)
    -> (tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>) {
  %cap = arith.constant 2.0 : f32
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x5x3xf32>, tensor<1x2x5xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>)
      grad(%o, %lse, %do : tensor<1x2x5x3xf32>, tensor<1x2x5xf32>, tensor<1x2x5x3xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>
  return %dq, %dk, %dv : tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>
}
