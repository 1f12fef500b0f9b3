// The score used only inside an scf.if on a coordinate (issue 11: dQ = dK = 0,
// which the f64 check could not see): rejected by the verifier.
func.func @nested(%q: tensor<1x1x5x4xf32>, %k: tensor<1x1x6x4xf32>, %v: tensor<1x1x6x3xf32>,
                  %o: tensor<1x1x5x3xf32>, %lse: tensor<1x1x5xf32>, %do: tensor<1x1x5x3xf32>)
    -> (tensor<1x1x5x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x1x5x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>)
      grad(%o, %lse, %do : tensor<1x1x5x3xf32>, tensor<1x1x5xf32>, tensor<1x1x5x3xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.cmpi ule, %j, %i : index
        %r = scf.if %c -> f32 {
          %t = math.tanh %s : f32
          scf.yield %t : f32
        } else {
          scf.yield %s : f32
        }
        attn.yield %r : f32
      } -> tensor<1x1x5x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>
  return %dq, %dk, %dv : tensor<1x1x5x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>
}
