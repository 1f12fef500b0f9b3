// Per-batch key lengths (`key_lengths`, decode over a cache): the tiled
// lowering against the reference lowering, the fp64 evaluation, finite
// differences, and bitwise against the same attention written with a keep
// mask that hides the keys [L[b], Nk) (built here, outside the op, from the
// definition in docs/Semantics.md).
//
// Forward: lengths 17 (partial), 0 (no key: O = 0, lse = -inf) and 40 (all),
// causal bottom-right per batch (query q sees k <= q + L[b] - Nq), GQA, at
// two block sizes.
// RUN: attnfuse-run %s --entry=decode --pipeline-options="block-q=2 block-k=8" --check=naive | FileCheck %s --check-prefix=PASS
// RUN: attnfuse-run %s --entry=decode --check=f64 | FileCheck %s --check-prefix=PASS
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --entry=decode --pipeline-options="block-q=2 block-k=8" --check=none --dump-outputs=%t/decode
// RUN: cmp %t/decode/result0.npy %t/decode/result2.npy
// RUN: cmp %t/decode/result1.npy %t/decode/result3.npy
// PASS: PASS result0 {{.+}}; result1 {{.+}}; result2 {{.+}}; result3
//
// Lengths outside [0, Nk] are clamped: -3 acts as 0 and 55 as Nk = 40.
// RUN: attnfuse-run %s --entry=out_of_range --pipeline-options="block-q=2 block-k=8" --check=none --dump-outputs=%t/clamp
// RUN: cmp %t/clamp/result0.npy %t/clamp/result1.npy
// RUN: attnfuse-run %s --entry=out_of_range --check=naive | FileCheck %s --check-prefix=PAIR
// PAIR: PASS result0 {{.+}}; result1
//
// A sliding window (top-left), bf16, runtime batch and query length: one
// compiled function at two sizes.
// RUN: attnfuse-run %s --entry=window --dynamic-sizes=2,7,2,2,2 --int-bound=40 --pipeline-options="block-q=4 block-k=8" | FileCheck %s --check-prefix=WINDOW
// RUN: attnfuse-run %s --entry=window --dynamic-sizes=5,1,5,5,5 --int-bound=40 | FileCheck %s --check-prefix=WINDOW
// WINDOW: check=fa: PASS result0
//
// Backward, random lengths in [0, 12) over Nk = 9 (some clamped), bias and
// dropout, against finite differences.
// RUN: attnfuse-run %s --entry=training --int-bound=12 --seed=3 --check=fd --pipeline-options="block-q=2 block-k=4" | FileCheck %s --check-prefix=FD
// RUN: attnfuse-run %s --entry=training --int-bound=12 --seed=4 --check=fd | FileCheck %s --check-prefix=FD
// FD: check=fd: PASS result0 {{.+}} vs fd {{.+}}; result1 {{.+}} vs fd {{.+}}; result2 {{.+}} vs fd
//
// A key_lengths of another batch size than the query's, at run time.
// RUN: not attnfuse-run %s --entry=window --dynamic-sizes=2,7,2,2,3 --int-bound=40 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: attn: runtime size mismatch: key_lengths batch != query batch

func.func @decode(%q: tensor<3x4x5x16xf32>, %k: tensor<3x2x40x16xf32>, %v: tensor<3x2x40x8xf32>)
    -> (tensor<3x4x5x8xf32>, tensor<3x4x5xf32>, tensor<3x4x5x8xf32>, tensor<3x4x5xf32>) {
  %lens = arith.constant dense<[17, 0, 40]> : tensor<3xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<3x4x5x16xf32>, tensor<3x2x40x16xf32>, tensor<3x2x40x8xf32>)
      key_lengths(%lens : tensor<3xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<3x4x5x8xf32>, tensor<3x4x5xf32>
  %keep = call @lengths_causal_keep(%lens) : (tensor<3xi32>) -> tensor<3x1x5x40xi1>
  %o2, %lse2 = attn.attention ins(%q, %k, %v : tensor<3x4x5x16xf32>, tensor<3x2x40x16xf32>, tensor<3x2x40x8xf32>)
      keep(%keep : tensor<3x1x5x40xi1>)
      -> tensor<3x4x5x8xf32>, tensor<3x4x5xf32>
  return %o, %lse, %o2, %lse2 : tensor<3x4x5x8xf32>, tensor<3x4x5xf32>, tensor<3x4x5x8xf32>, tensor<3x4x5xf32>
}

// keep[b, 0, q, k] = k < L[b] and k <= q + L[b] - 5.
func.func private @lengths_causal_keep(%lens: tensor<3xi32>) -> tensor<3x1x5x40xi1> {
  %init = tensor.empty() : tensor<3x1x5x40xi1>
  %keep = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>],
                          iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%init : tensor<3x1x5x40xi1>) {
  ^bb0(%out: i1):
    %b = linalg.index 0 : index
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %l32 = tensor.extract %lens[%b] : tensor<3xi32>
    %l = arith.index_cast %l32 : i32 to index
    %c5 = arith.constant 5 : index
    %exists = arith.cmpi slt, %j, %l : index
    %last0 = arith.addi %i, %l : index
    %last = arith.subi %last0, %c5 : index
    %causal = arith.cmpi sle, %j, %last : index
    %ok = arith.andi %exists, %causal : i1
    linalg.yield %ok : i1
  } -> tensor<3x1x5x40xi1>
  return %keep : tensor<3x1x5x40xi1>
}

func.func @out_of_range(%q: tensor<3x4x5x16xf32>, %k: tensor<3x2x40x16xf32>, %v: tensor<3x2x40x8xf32>)
    -> (tensor<3x4x5x8xf32>, tensor<3x4x5x8xf32>) {
  %bad = arith.constant dense<[-3, 55, 6]> : tensor<3xi32>
  %clamped = arith.constant dense<[0, 40, 6]> : tensor<3xi32>
  %o = attn.attention ins(%q, %k, %v : tensor<3x4x5x16xf32>, tensor<3x2x40x16xf32>, tensor<3x2x40x8xf32>)
      key_lengths(%bad : tensor<3xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<3x4x5x8xf32>
  %o2 = attn.attention ins(%q, %k, %v : tensor<3x4x5x16xf32>, tensor<3x2x40x16xf32>, tensor<3x2x40x8xf32>)
      key_lengths(%clamped : tensor<3xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<3x4x5x8xf32>
  return %o, %o2 : tensor<3x4x5x8xf32>, tensor<3x4x5x8xf32>
}

func.func @window(%q: tensor<?x2x?x32xbf16>, %k: tensor<?x1x30x32xbf16>, %v: tensor<?x1x30x32xbf16>,
                  %lens: tensor<?xi64>) -> tensor<?x2x?x32xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<?x2x?x32xbf16>, tensor<?x1x30x32xbf16>, tensor<?x1x30x32xbf16>)
      key_lengths(%lens : tensor<?xi64>)
      {mask = #attn.mask<sliding_window>, window_left = 3 : i64, window_right = 9 : i64}
      -> tensor<?x2x?x32xbf16>
  return %o : tensor<?x2x?x32xbf16>
}

func.func @training(%q: tensor<2x2x6x4xf32>, %k: tensor<2x1x9x4xf32>, %v: tensor<2x1x9x3xf32>,
                    %do: tensor<2x2x6x3xf32>, %bias: tensor<6x9xf32>, %seed: i64, %lens: tensor<2xi32>)
    -> (tensor<2x2x6x4xf32>, tensor<2x1x9x4xf32>, tensor<2x1x9x3xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x2x6x4xf32>, tensor<2x1x9x4xf32>, tensor<2x1x9x3xf32>)
      bias(%bias : tensor<6x9xf32>) seed(%seed) key_lengths(%lens : tensor<2xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.2 : f32}
      -> tensor<2x2x6x3xf32>, tensor<2x2x6xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x2x6x4xf32>, tensor<2x1x9x4xf32>, tensor<2x1x9x3xf32>)
      grad(%o, %lse, %do : tensor<2x2x6x3xf32>, tensor<2x2x6xf32>, tensor<2x2x6x3xf32>)
      bias(%bias : tensor<6x9xf32>) seed(%seed) key_lengths(%lens : tensor<2xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.2 : f32}
      -> tensor<2x2x6x4xf32>, tensor<2x1x9x4xf32>, tensor<2x1x9x3xf32>
  return %dq, %dk, %dv : tensor<2x2x6x4xf32>, tensor<2x1x9x4xf32>, tensor<2x1x9x3xf32>
}
