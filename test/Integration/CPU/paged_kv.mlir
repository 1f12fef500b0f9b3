// Paged K/V (`block_table`): key position k of batch b is slot k % 8 of page
// block_table[b, k / 8] of K [pages, Hkv, 8, D] and V. The tiled lowering
// against the reference lowering and the fp64 evaluation, and bitwise
// against the same attention on K/V gathered here, outside the op, with a
// keep mask for what the definition hides (docs/Semantics.md): keys past
// the batch's length and keys on a page id outside [0, pages).
//
// Batch 0 shares pages with batch 1 (a common prefix), batch 1 has a page id
// -1 and batch 2 a page id 7 (there are 7 pages) among the keys it uses;
// ids past a batch's length are never read.
// RUN: attnfuse-run %s --entry=paged --pipeline-options="block-q=2 block-k=4" --check=naive | FileCheck %s --check-prefix=PASS
// RUN: attnfuse-run %s --entry=paged --check=f64 | FileCheck %s --check-prefix=PASS
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --entry=paged --pipeline-options="block-q=2 block-k=4" --check=none --dump-outputs=%t/a
// RUN: cmp %t/a/result0.npy %t/a/result2.npy
// RUN: cmp %t/a/result1.npy %t/a/result3.npy
// RUN: attnfuse-run %s --entry=paged --pipeline-options="block-q=16 block-k=16" --check=none --dump-outputs=%t/b
// RUN: cmp %t/b/result0.npy %t/b/result2.npy
// PASS: PASS result0 {{.+}}; result1 {{.+}}; result2 {{.+}}; result3
//
// A runtime number of block-table entries (Nk = P * 8), f16, sliding window
// bottom-right, dropout: one compiled function at two table widths (the
// random page ids fall in and out of range).
// RUN: attnfuse-run %s --entry=runtime_table --dynamic-sizes=3,3,4 --int-bound=6 --seed=1 | FileCheck %s --check-prefix=FA
// RUN: attnfuse-run %s --entry=runtime_table --dynamic-sizes=5,5,6 --int-bound=6 --seed=2 --pipeline-options="block-q=2 block-k=8" | FileCheck %s --check-prefix=FA
// FA: check=fa: PASS result0

func.func @paged(%q: tensor<3x4x2x16xf32>, %kp: tensor<7x2x8x16xf32>, %vp: tensor<7x2x8x8xf32>)
    -> (tensor<3x4x2x8xf32>, tensor<3x4x2xf32>, tensor<3x4x2x8xf32>, tensor<3x4x2xf32>) {
  %table = arith.constant dense<[[3, 0, 5, 99], [3, 0, -1, 6], [2, 4, 7, 1]]> : tensor<3x4xi32>
  %lens = arith.constant dense<[21, 29, 32]> : tensor<3xi32>
  %o, %lse = attn.attention ins(%q, %kp, %vp : tensor<3x4x2x16xf32>, tensor<7x2x8x16xf32>, tensor<7x2x8x8xf32>)
      key_lengths(%lens : tensor<3xi32>) block_table(%table : tensor<3x4xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<3x4x2x8xf32>, tensor<3x4x2xf32>
  %k = call @gather_k(%kp, %table) : (tensor<7x2x8x16xf32>, tensor<3x4xi32>) -> tensor<3x2x32x16xf32>
  %v = call @gather_v(%vp, %table) : (tensor<7x2x8x8xf32>, tensor<3x4xi32>) -> tensor<3x2x32x8xf32>
  %keep = call @keep(%table, %lens) : (tensor<3x4xi32>, tensor<3xi32>) -> tensor<3x1x2x32xi1>
  %o2, %lse2 = attn.attention ins(%q, %k, %v : tensor<3x4x2x16xf32>, tensor<3x2x32x16xf32>, tensor<3x2x32x8xf32>)
      keep(%keep : tensor<3x1x2x32xi1>)
      -> tensor<3x4x2x8xf32>, tensor<3x4x2xf32>
  return %o, %lse, %o2, %lse2 : tensor<3x4x2x8xf32>, tensor<3x4x2xf32>, tensor<3x4x2x8xf32>, tensor<3x4x2xf32>
}

// The page of key k of batch b, 0 where its id is out of range.
func.func private @page(%table: tensor<3x4xi32>, %b: index, %k: index) -> (index, index, i1) {
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %e = arith.divui %k, %c8 : index
  %s = arith.remui %k, %c8 : index
  %id32 = tensor.extract %table[%b, %e] : tensor<3x4xi32>
  %id = arith.index_cast %id32 : i32 to index
  %ge = arith.cmpi sge, %id, %c0 : index
  %lt = arith.cmpi slt, %id, %c7 : index
  %ok = arith.andi %ge, %lt : i1
  %p = arith.select %ok, %id, %c0 : index
  return %p, %s, %ok : index, index, i1
}

func.func private @gather_k(%kp: tensor<7x2x8x16xf32>, %table: tensor<3x4xi32>) -> tensor<3x2x32x16xf32> {
  %init = tensor.empty() : tensor<3x2x32x16xf32>
  %k = linalg.generic {indexing_maps = [affine_map<(b, h, k, d) -> (b, h, k, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%init : tensor<3x2x32x16xf32>) {
  ^bb0(%out: f32):
    %b = linalg.index 0 : index
    %h = linalg.index 1 : index
    %j = linalg.index 2 : index
    %d = linalg.index 3 : index
    %p, %s, %ok = func.call @page(%table, %b, %j) : (tensor<3x4xi32>, index, index) -> (index, index, i1)
    %x = tensor.extract %kp[%p, %h, %s, %d] : tensor<7x2x8x16xf32>
    linalg.yield %x : f32
  } -> tensor<3x2x32x16xf32>
  return %k : tensor<3x2x32x16xf32>
}

func.func private @gather_v(%vp: tensor<7x2x8x8xf32>, %table: tensor<3x4xi32>) -> tensor<3x2x32x8xf32> {
  %init = tensor.empty() : tensor<3x2x32x8xf32>
  %v = linalg.generic {indexing_maps = [affine_map<(b, h, k, d) -> (b, h, k, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%init : tensor<3x2x32x8xf32>) {
  ^bb0(%out: f32):
    %b = linalg.index 0 : index
    %h = linalg.index 1 : index
    %j = linalg.index 2 : index
    %d = linalg.index 3 : index
    %p, %s, %ok = func.call @page(%table, %b, %j) : (tensor<3x4xi32>, index, index) -> (index, index, i1)
    %x = tensor.extract %vp[%p, %h, %s, %d] : tensor<7x2x8x8xf32>
    linalg.yield %x : f32
  } -> tensor<3x2x32x8xf32>
  return %v : tensor<3x2x32x8xf32>
}

// keep[b, 0, q, k] = page id in range, k < L[b] and k <= q + L[b] - 2.
func.func private @keep(%table: tensor<3x4xi32>, %lens: tensor<3xi32>) -> tensor<3x1x2x32xi1> {
  %init = tensor.empty() : tensor<3x1x2x32xi1>
  %keep = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>],
                          iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%init : tensor<3x1x2x32xi1>) {
  ^bb0(%out: i1):
    %b = linalg.index 0 : index
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %p, %s, %ok = func.call @page(%table, %b, %j) : (tensor<3x4xi32>, index, index) -> (index, index, i1)
    %l32 = tensor.extract %lens[%b] : tensor<3xi32>
    %l = arith.index_cast %l32 : i32 to index
    %c2 = arith.constant 2 : index
    %exists = arith.cmpi slt, %j, %l : index
    %last0 = arith.addi %i, %l : index
    %last = arith.subi %last0, %c2 : index
    %causal = arith.cmpi sle, %j, %last : index
    %seen = arith.andi %exists, %causal : i1
    %r = arith.andi %seen, %ok : i1
    linalg.yield %r : i1
  } -> tensor<3x1x2x32xi1>
  return %keep : tensor<3x1x2x32xi1>
}

func.func @runtime_table(%q: tensor<?x2x3x32xf16>, %kp: tensor<5x1x8x32xf16>, %vp: tensor<5x1x8x16xf16>,
                         %table: tensor<?x?xi32>, %seed: i64) -> tensor<?x2x3x16xf16> {
  %o = attn.attention ins(%q, %kp, %vp : tensor<?x2x3x32xf16>, tensor<5x1x8x32xf16>, tensor<5x1x8x16xf16>)
      seed(%seed) block_table(%table : tensor<?x?xi32>)
      {mask = #attn.mask<sliding_window>, window_left = 11 : i64, window_right = 0 : i64,
       alignment = #attn.alignment<bottom_right>, dropout_p = 0.1 : f32}
      -> tensor<?x2x3x16xf16>
  return %o : tensor<?x2x3x16xf16>
}
