// The dropout threshold is floor(p * 2^32) of the op's f32 dropout_p, in the
// compiler (ScoreUtils: getDropoutThreshold of the attribute's value) and in
// the independent reference (test/lib/reference.py, also used by
// test/GPU/check_gpu.py): 0.17 as f32 is 0.17000000178813934, threshold
// 730144448, where the double 0.17 gives 730144440. Seed 4246825929904704413
// puts the dropout word of (b, h, q, k) = (0, 0, 18, 43) (Philox word 3 of
// counter (10, 18, 0, 0)) at 730144443, between the two: the op drops that
// element. Before, the reference took the double
// and kept it ("mask == Philox4x32-10 FAIL"); on the GPU such an element was
// one kept V row of error in check_gpu.py's sweep (docs/Testing.md).
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import sys; sys.path.insert(0, '%S/../../lib'); import reference as r; print(r.dropout_threshold(0.17), int(r.dropout_word(4246825929904704413, 0, 0, 18, 43)), r.dropout_keep(4246825929904704413, 0.17, (1, 1, 64, 64))[0, 0, 18, 43])" | FileCheck %s --check-prefix=THRESHOLD
// THRESHOLD: 730144448 730144443 False
// RUN: %reference gen --dir %t/in --seed 5 --arg 0:normal:1x1x64x16:float32 --arg 1:normal:1x1x64x16:float32 --arg 2:identity:1x1x64x64:float32 --arg 3:int=4246825929904704413::int64
// RUN: attnfuse-run %s --inputs=%t/in/arg0.npy,%t/in/arg1.npy,%t/in/arg2.npy,%t/in/arg3.npy --pipeline-options="block-q=16 block-k=16" --dump-inputs=%t/in2 --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: %reference check --inputs %t/in2 --outputs %t/naive --dtype f32 --seed 3 --dropout 0.17 --dropout-stats | FileCheck %s --check-prefix=STATS
// RUN: %reference check --inputs %t/in2 --outputs %t/tiled --dtype f32 --seed 3 --dropout 0.17 --dropout-stats | FileCheck %s --check-prefix=STATS
// CHECK: PASS
// STATS: mask == Philox4x32-10 PASS
func.func @f(%q: tensor<1x1x64x16xf32>, %k: tensor<1x1x64x16xf32>, %v: tensor<1x1x64x64xf32>,
             %seed: i64) -> tensor<1x1x64x64xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>, tensor<1x1x64x64xf32>)
      seed(%seed) {dropout_p = 0.17 : f32} -> tensor<1x1x64x64xf32>
  return %o : tensor<1x1x64x64xf32>
}
