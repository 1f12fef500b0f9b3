// The dropout threshold is floor(p * 2^16) of the op's f32 dropout_p, in the
// compiler (ScoreUtils: getDropoutThreshold of the attribute's value) and in
// the independent reference (test/lib/reference.py, also used by
// test/GPU/check_gpu.py): 0.5569 as f32 is 0.5569000244140625, threshold
// 36497, where the double 0.5569 gives 36496. Seed 4246825929904704422 puts
// the dropout bits of (b, h, q, k) = (0, 0, 38, 18) (the low half of Philox
// word 2 of counter (1, 38, 0, 0)) at 36496, between the two: the op drops
// that element, a reference that took the double would keep it ("mask ==
// Philox4x32-10 FAIL").
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import sys; sys.path.insert(0, '%S/../../lib'); import reference as r; print(r.dropout_threshold(0.5569), int(r.dropout_word(4246825929904704422, 0, 0, 38, 18)), r.dropout_keep(4246825929904704422, 0.5569, (1, 1, 64, 64))[0, 0, 38, 18])" | FileCheck %s --check-prefix=THRESHOLD
// THRESHOLD: 36497 36496 False
// RUN: %reference gen --dir %t/in --seed 5 --arg 0:normal:1x1x64x16:float32 --arg 1:normal:1x1x64x16:float32 --arg 2:identity:1x1x64x64:float32 --arg 3:int=4246825929904704422::int64
// RUN: attnfuse-run %s --inputs=%t/in/arg0.npy,%t/in/arg1.npy,%t/in/arg2.npy,%t/in/arg3.npy --pipeline-options="block-q=16 block-k=16" --dump-inputs=%t/in2 --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: %reference check --inputs %t/in2 --outputs %t/naive --dtype f32 --seed 3 --dropout 0.5569 --dropout-stats | FileCheck %s --check-prefix=STATS
// RUN: %reference check --inputs %t/in2 --outputs %t/tiled --dtype f32 --seed 3 --dropout 0.5569 --dropout-stats | FileCheck %s --check-prefix=STATS
// CHECK: PASS
// STATS: mask == Philox4x32-10 PASS
func.func @f(%q: tensor<1x1x64x16xf32>, %k: tensor<1x1x64x16xf32>, %v: tensor<1x1x64x64xf32>,
             %seed: i64) -> tensor<1x1x64x64xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>, tensor<1x1x64x64xf32>)
      seed(%seed) {dropout_p = 0.5569 : f32} -> tensor<1x1x64x64xf32>
  return %o : tensor<1x1x64x64xf32>
}
