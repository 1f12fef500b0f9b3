// Dropout p = 0.2, checked statistically: with V = identity (Dv = Nk) the
// output is the dropped-out probability matrix itself, so the kept fraction,
// the 1/(1-p) scaling of kept probabilities and the mask (Philox4x32-10 of
// (seed, b, h, q, k)) can be read off, for the reference and the tiled lowering.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %reference gen --dir %t/in --seed 11 --arg 0:normal:2x2x64x16:float32 --arg 1:normal:2x2x64x16:float32 --arg 2:identity:2x2x64x64:float32 --arg 3:int=12345::int64
// RUN: attnfuse-run %s --inputs=%t/in/arg0.npy,%t/in/arg1.npy,%t/in/arg2.npy,%t/in/arg3.npy --pipeline-options="block-q=16 block-k=16" --dump-inputs=%t/in2 --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: %reference check --inputs %t/in2 --outputs %t/naive --dtype f32 --seed 3 --dropout 0.2 --dropout-stats
// RUN: %reference check --inputs %t/in2 --outputs %t/tiled --dtype f32 --seed 3 --dropout 0.2 --dropout-stats
// CHECK: PASS
func.func @f(%q: tensor<2x2x64x16xf32>, %k: tensor<2x2x64x16xf32>, %v: tensor<2x2x64x64xf32>,
             %seed: i64) -> tensor<2x2x64x64xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x2x64x16xf32>, tensor<2x2x64x16xf32>, tensor<2x2x64x64xf32>)
      seed(%seed) {dropout_p = 0.2 : f32} -> tensor<2x2x64x64xf32>
  return %o : tensor<2x2x64x64xf32>
}
