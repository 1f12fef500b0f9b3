// Packed variable-length sequences (`sequence_offsets`, as cu_seqlens of
// flash_attn_varlen_func): the tiled lowering against the reference lowering,
// the fp64 evaluation and finite differences; offsets out of order or out of
// range act as their effective (monotone, clamped) offsets, bitwise. Against
// an independent per-sequence numpy oracle: test/python/run_cpu.py.
//
// Forward: four sequences (one of them without queries, 7 and 2 keys for 5
// and 0 queries), causal bottom-right per sequence, GQA, at two block sizes
// (blocks that straddle sequences).
// RUN: attnfuse-run %s --entry=prefill --pipeline-options="block-q=4 block-k=8" --check=naive | FileCheck %s --check-prefix=PAIR
// RUN: attnfuse-run %s --entry=prefill --pipeline-options="block-q=16 block-k=4" --check=f64 | FileCheck %s --check-prefix=PAIR
// PAIR: PASS result0 {{.+}}; result1
//
// Offsets [3, 2, 10, 30] over Nq = 20 act as [3, 3, 10, 20] and [-5, 6, 4,
// 100] over Nk = 24 as [0, 6, 6, 24]: rows 0-2 see no key (O = 0, lse =
// -inf).
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --entry=out_of_order --pipeline-options="block-q=4 block-k=8" --check=none --dump-outputs=%t/clamp
// RUN: cmp %t/clamp/result0.npy %t/clamp/result2.npy
// RUN: cmp %t/clamp/result1.npy %t/clamp/result3.npy
// RUN: attnfuse-run %s --entry=out_of_order --check=naive | FileCheck %s --check-prefix=FOUR
// FOUR: PASS result0 {{.+}}; result1 {{.+}}; result2 {{.+}}; result3
//
// A sliding window (top-left, per sequence), bf16, runtime lengths and a
// runtime number of sequences: one compiled function at two sizes, random
// offsets in [0, 40) (unsorted: their effective offsets).
// RUN: attnfuse-run %s --entry=window --dynamic-sizes=37,29,29,5,5 --int-bound=40 --pipeline-options="block-q=4 block-k=8" | FileCheck %s --check-prefix=WINDOW
// RUN: attnfuse-run %s --entry=window --dynamic-sizes=12,40,40,3,3 --int-bound=40 | FileCheck %s --check-prefix=WINDOW
// WINDOW: check=fa: PASS result0
//
// Backward, random offsets in [0, 12) over Nq = 10, Nk = 11, bias and
// dropout, against finite differences.
// RUN: attnfuse-run %s --entry=training --int-bound=12 --seed=3 --check=fd --pipeline-options="block-q=2 block-k=4" | FileCheck %s --check-prefix=FD
// RUN: attnfuse-run %s --entry=training --int-bound=12 --seed=5 --check=fd | FileCheck %s --check-prefix=FD
// FD: check=fd: PASS result0 {{.+}} vs fd {{.+}}; result1 {{.+}} vs fd {{.+}}; result2 {{.+}} vs fd
//
// Query and key offsets of different lengths, at run time.
// RUN: not attnfuse-run %s --entry=window --dynamic-sizes=12,40,40,3,4 --int-bound=40 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: attn: runtime size mismatch: key offsets length != query offsets length
//
// Runtime offsets without any entry stop the call (no read of cq[0]).
// RUN: not attnfuse-run %s --entry=window --dynamic-sizes=12,40,40,0,0 --int-bound=40 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: attn: sequence offsets are empty (S + 1 = 0)

func.func @prefill(%q: tensor<1x4x20x16xf32>, %k: tensor<1x2x24x16xf32>, %v: tensor<1x2x24x8xf32>)
    -> (tensor<1x4x20x8xf32>, tensor<1x4x20xf32>) {
  %cq = arith.constant dense<[0, 5, 5, 12, 20]> : tensor<5xi32>
  %ck = arith.constant dense<[0, 7, 9, 15, 24]> : tensor<5xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x4x20x16xf32>, tensor<1x2x24x16xf32>, tensor<1x2x24x8xf32>)
      sequence_offsets(%cq, %ck : tensor<5xi32>, tensor<5xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x4x20x8xf32>, tensor<1x4x20xf32>
  return %o, %lse : tensor<1x4x20x8xf32>, tensor<1x4x20xf32>
}

func.func @out_of_order(%q: tensor<1x2x20x16xf32>, %k: tensor<1x2x24x16xf32>, %v: tensor<1x2x24x8xf32>)
    -> (tensor<1x2x20x8xf32>, tensor<1x2x20xf32>, tensor<1x2x20x8xf32>, tensor<1x2x20xf32>) {
  %bq = arith.constant dense<[3, 2, 10, 30]> : tensor<4xi64>
  %bk = arith.constant dense<[-5, 6, 4, 100]> : tensor<4xi64>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x20x16xf32>, tensor<1x2x24x16xf32>, tensor<1x2x24x8xf32>)
      sequence_offsets(%bq, %bk : tensor<4xi64>, tensor<4xi64>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x2x20x8xf32>, tensor<1x2x20xf32>
  %cq = arith.constant dense<[3, 3, 10, 20]> : tensor<4xi32>
  %ck = arith.constant dense<[0, 6, 6, 24]> : tensor<4xi32>
  %o2, %lse2 = attn.attention ins(%q, %k, %v : tensor<1x2x20x16xf32>, tensor<1x2x24x16xf32>, tensor<1x2x24x8xf32>)
      sequence_offsets(%cq, %ck : tensor<4xi32>, tensor<4xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x2x20x8xf32>, tensor<1x2x20xf32>
  return %o, %lse, %o2, %lse2 : tensor<1x2x20x8xf32>, tensor<1x2x20xf32>, tensor<1x2x20x8xf32>, tensor<1x2x20xf32>
}

func.func @window(%q: tensor<1x2x?x32xbf16>, %k: tensor<1x1x?x32xbf16>, %v: tensor<1x1x?x32xbf16>,
                  %cq: tensor<?xi32>, %ck: tensor<?xi32>) -> tensor<1x2x?x32xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x?x32xbf16>, tensor<1x1x?x32xbf16>, tensor<1x1x?x32xbf16>)
      sequence_offsets(%cq, %ck : tensor<?xi32>, tensor<?xi32>)
      {mask = #attn.mask<sliding_window>, window_left = 3 : i64, window_right = 2 : i64}
      -> tensor<1x2x?x32xbf16>
  return %o : tensor<1x2x?x32xbf16>
}

func.func @training(%q: tensor<1x2x10x4xf32>, %k: tensor<1x1x11x4xf32>, %v: tensor<1x1x11x3xf32>,
                    %do: tensor<1x2x10x3xf32>, %bias: tensor<10x11xf32>, %seed: i64,
                    %cq: tensor<4xi32>, %ck: tensor<4xi32>)
    -> (tensor<1x2x10x4xf32>, tensor<1x1x11x4xf32>, tensor<1x1x11x3xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x10x4xf32>, tensor<1x1x11x4xf32>, tensor<1x1x11x3xf32>)
      bias(%bias : tensor<10x11xf32>) seed(%seed) sequence_offsets(%cq, %ck : tensor<4xi32>, tensor<4xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.2 : f32}
      -> tensor<1x2x10x3xf32>, tensor<1x2x10xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x10x4xf32>, tensor<1x1x11x4xf32>, tensor<1x1x11x3xf32>)
      grad(%o, %lse, %do : tensor<1x2x10x3xf32>, tensor<1x2x10xf32>, tensor<1x2x10x3xf32>)
      bias(%bias : tensor<10x11xf32>) seed(%seed) sequence_offsets(%cq, %ck : tensor<4xi32>, tensor<4xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.2 : f32}
      -> tensor<1x2x10x4xf32>, tensor<1x1x11x4xf32>, tensor<1x1x11x3xf32>
  return %dq, %dk, %dv : tensor<1x2x10x4xf32>, tensor<1x1x11x4xf32>, tensor<1x1x11x3xf32>
}
