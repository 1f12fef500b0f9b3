// attnfuse-run --check=fd: the gradients of attn.attention_backward against
// central finite differences (f64) of the forward op's reference lowering,
// an oracle that shares nothing with the derivative of the score_mod region.
// RUN: attnfuse-run %s --entry=score_mod_select --check=fd --pipeline-options="block-q=2 block-k=3" | FileCheck %s
// RUN: attnfuse-run %s --entry=score_mod_select --check=fd | FileCheck %s
// RUN: attnfuse-run %s --entry=gqa_dropout_bias_keep --check=fd --seed=5 --pipeline-options="block-q=3 block-k=2" | FileCheck %s
// grad_bias (result 3): bias broadcast over batch and heads above; here over
// queries ([Hq, 1, Nk]) under a softcapping score_mod (dBias is dT, not dS).
// RUN: attnfuse-run %s --entry=score_mod_bias --check=fd --pipeline-options="block-q=2 block-k=4" | FileCheck %s --check-prefix=BIAS
// RUN: attnfuse-run %s --entry=gqa_dropout_bias_keep --check=fd --seed=5 | FileCheck %s --check-prefix=BIAS
// BIAS: check=fd: PASS result0 {{.+}} result3 tensor<{{.+}}> vs fd
// The oracle can fail: a backward op given the O of another forward (scale
// 0.5 instead of the default) computes the wrong Di.
// RUN: not attnfuse-run %s --entry=wrong_output --check=fd | FileCheck %s --check-prefix=WRONG
// A score used inside a nested region is rejected (it read dQ = dK = 0).
// RUN: not attnfuse-run %S/Inputs/backward_nested_score_mod.mlir --check=fd 2>&1 | FileCheck %s --check-prefix=NESTED
// CHECK: check=fd: PASS result0 {{.+}} vs fd {{.+}}; result1 {{.+}} vs fd {{.+}}; result2 {{.+}} vs fd
// WRONG: check=fd: FAIL result0 {{.+}} vs fd {{.+}} mismatches=
// NESTED: error: 'scf.if' op in a score_mod region cannot be differentiated with respect to the score

// A score_mod that uses the score on one side of a coordinate condition
// (arith.select), with softcapping and a relative-position term.
func.func @score_mod_select(%q: tensor<1x2x5x4xf32>, %k: tensor<1x2x7x4xf32>, %v: tensor<1x2x7x3xf32>,
                            %do: tensor<1x2x5x3xf32>)
    -> (tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 2.0 : f32
        %c = arith.cmpi ule, %j, %i : index
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        %ji = arith.index_cast %j : index to i32
        %jf = arith.sitofp %ji : i32 to f32
        %slope = arith.constant -0.25 : f32
        %rel = arith.mulf %jf, %slope : f32
        %z = arith.addf %s, %rel : f32
        %r = arith.select %c, %y, %z : f32
        attn.yield %r : f32
      } -> tensor<1x2x5x3xf32>, tensor<1x2x5xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>)
      grad(%o, %lse, %do : tensor<1x2x5x3xf32>, tensor<1x2x5xf32>, tensor<1x2x5x3xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 2.0 : f32
        %c = arith.cmpi ule, %j, %i : index
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        %ji = arith.index_cast %j : index to i32
        %jf = arith.sitofp %ji : i32 to f32
        %slope = arith.constant -0.25 : f32
        %rel = arith.mulf %jf, %slope : f32
        %z = arith.addf %s, %rel : f32
        %r = arith.select %c, %y, %z : f32
        attn.yield %r : f32
      } -> tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>
  return %dq, %dk, %dv : tensor<1x2x5x4xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x3xf32>
}

func.func @gqa_dropout_bias_keep(%q: tensor<1x4x5x4xf32>, %k: tensor<1x2x6x4xf32>, %v: tensor<1x2x6x3xf32>,
                                 %do: tensor<1x4x5x3xf32>, %bias: tensor<5x6xf32>, %keep: tensor<1x1x5x6xi1>,
                                 %seed: i64)
    -> (tensor<1x4x5x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x3xf32>, tensor<5x6xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x4x5x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x3xf32>)
      bias(%bias : tensor<5x6xf32>) keep(%keep : tensor<1x1x5x6xi1>) seed(%seed)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.25 : f32}
      -> tensor<1x4x5x3xf32>, tensor<1x4x5xf32>
  %dq, %dk, %dv, %dbias = attn.attention_backward
      ins(%q, %k, %v : tensor<1x4x5x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x3xf32>)
      grad(%o, %lse, %do : tensor<1x4x5x3xf32>, tensor<1x4x5xf32>, tensor<1x4x5x3xf32>)
      bias(%bias : tensor<5x6xf32>) keep(%keep : tensor<1x1x5x6xi1>) seed(%seed)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.25 : f32}
      -> tensor<1x4x5x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x3xf32>, tensor<5x6xf32>
  return %dq, %dk, %dv, %dbias : tensor<1x4x5x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x3xf32>, tensor<5x6xf32>
}

func.func @wrong_output(%q: tensor<1x1x5x4xf32>, %k: tensor<1x1x6x4xf32>, %v: tensor<1x1x6x3xf32>,
                        %do: tensor<1x1x5x3xf32>)
    -> (tensor<1x1x5x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x1x5x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>)
      {scale = 0.5 : f32} -> tensor<1x1x5x3xf32>, tensor<1x1x5xf32>
  %o2, %lse2 = attn.attention ins(%q, %k, %v : tensor<1x1x5x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>)
      {scale = 0.9 : f32} -> tensor<1x1x5x3xf32>, tensor<1x1x5xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x1x5x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>)
      grad(%o2, %lse, %do : tensor<1x1x5x3xf32>, tensor<1x1x5xf32>, tensor<1x1x5x3xf32>)
      {scale = 0.5 : f32} -> tensor<1x1x5x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>
  return %dq, %dk, %dv : tensor<1x1x5x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>
}

func.func @score_mod_bias(%q: tensor<2x2x5x4xf32>, %k: tensor<2x2x7x4xf32>, %v: tensor<2x2x7x3xf32>,
                          %do: tensor<2x2x5x3xf32>, %bias: tensor<2x1x7xf32>)
    -> (tensor<2x2x5x4xf32>, tensor<2x2x7x4xf32>, tensor<2x2x7x3xf32>, tensor<2x1x7xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x2x5x4xf32>, tensor<2x2x7x4xf32>, tensor<2x2x7x3xf32>)
      bias(%bias : tensor<2x1x7xf32>)
      {mask = #attn.mask<sliding_window>, window_left = 2 : i64, window_right = 1 : i64}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 2.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<2x2x5x3xf32>, tensor<2x2x5xf32>
  %dq, %dk, %dv, %dbias = attn.attention_backward
      ins(%q, %k, %v : tensor<2x2x5x4xf32>, tensor<2x2x7x4xf32>, tensor<2x2x7x3xf32>)
      grad(%o, %lse, %do : tensor<2x2x5x3xf32>, tensor<2x2x5xf32>, tensor<2x2x5x3xf32>)
      bias(%bias : tensor<2x1x7xf32>)
      {mask = #attn.mask<sliding_window>, window_left = 2 : i64, window_right = 1 : i64}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 2.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<2x2x5x4xf32>, tensor<2x2x7x4xf32>, tensor<2x2x7x3xf32>, tensor<2x1x7xf32>
  return %dq, %dk, %dv, %dbias : tensor<2x2x5x4xf32>, tensor<2x2x7x4xf32>, tensor<2x2x7x3xf32>, tensor<2x1x7xf32>
}
