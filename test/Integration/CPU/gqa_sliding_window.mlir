// f32, grouped-query attention (4 query heads over 2 key/value heads) with a
// sliding window of 5 keys back and 3 ahead.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --seed=7 --pipeline-options="block-q=8 block-k=8" --dump-inputs=%t/in --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: %reference check --inputs %t/in --outputs %t/naive --dtype f32 --mask sliding_window --window 5 3
// RUN: %reference check --inputs %t/in --outputs %t/tiled --dtype f32 --mask sliding_window --window 5 3
// CHECK: PASS
func.func @f(%q: tensor<1x4x37x16xf32>, %k: tensor<1x2x37x16xf32>, %v: tensor<1x2x37x16xf32>)
    -> tensor<1x4x37x16xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x4x37x16xf32>, tensor<1x2x37x16xf32>, tensor<1x2x37x16xf32>)
      {mask = #attn.mask<sliding_window>, window_left = 5, window_right = 3}
      -> tensor<1x4x37x16xf32>
  return %o : tensor<1x4x37x16xf32>
}
