// REQUIRES: cuda
// f32 attention, Dqk != Dv.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=7
func.func @f(%q: tensor<1x2x77x32xf32>, %k: tensor<1x2x99x32xf32>, %v: tensor<1x2x99x48xf32>)
    -> tensor<1x2x77x48xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x77x32xf32>, tensor<1x2x99x32xf32>, tensor<1x2x99x48xf32>)
      -> tensor<1x2x77x48xf32>
  return %o : tensor<1x2x77x48xf32>
}
