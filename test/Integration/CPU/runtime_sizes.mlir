// Runtime sizes: attn.attention and attn.attention_backward with '?' batch
// and sequence lengths, one compiled function run at several lengths
// (attnfuse-run --dynamic-sizes), the tiled lowering against the reference
// lowering, the fp64 evaluation and finite differences; and the same op with
// static shapes gives bitwise the same results.
//
// Forward, GQA, causal bottom-right (a runtime mask offset Nk - Nq), tails at
// every block size, Nq > Nk (rows that see no key), an empty key sequence.
// RUN: attnfuse-run %s --entry=forward --dynamic-sizes=2,37,2,53,2,53 --pipeline-options="block-q=16 block-k=32" | FileCheck %s --check-prefix=FWD
// RUN: attnfuse-run %s --entry=forward --dynamic-sizes=1,1,1,200,1,200 --pipeline-options="block-q=16 block-k=32" | FileCheck %s --check-prefix=FWD
// RUN: attnfuse-run %s --entry=forward --dynamic-sizes=3,20,3,7,3,7 --check=f64 | FileCheck %s --check-prefix=FWD
// RUN: attnfuse-run %s --entry=forward --dynamic-sizes=2,5,2,0,2,0 --check=f64 | FileCheck %s --check-prefix=FWD
// FWD: PASS result0 tensor<?x4x?x16xf32> {{.+}}; result1 tensor<?x4x?xf32>
//
// The dynamic function and its static instance, on the same inputs.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --entry=forward --dynamic-sizes=2,37,2,53,2,53 --pipeline-options="block-q=16 block-k=32" --dump-outputs=%t/dynamic
// RUN: attnfuse-run %s --entry=forward_static --pipeline-options="block-q=16 block-k=32" --dump-outputs=%t/static
// RUN: cmp %t/dynamic/result0.npy %t/static/result0.npy
// RUN: cmp %t/dynamic/result1.npy %t/static/result1.npy
//
// Backward with a sliding window, a [1, Nq, Nk] bias of runtime sizes and
// dropout, against finite differences at two lengths.
// RUN: attnfuse-run %s --entry=training --dynamic-sizes=5,7,7,5,5,7 --check=fd --pipeline-options="block-q=2 block-k=3" | FileCheck %s --check-prefix=FD
// RUN: attnfuse-run %s --entry=training --dynamic-sizes=9,4,4,9,9,4 --check=fd | FileCheck %s --check-prefix=FD
// FD: check=fd: PASS result0 {{.+}} vs fd {{.+}}; result1 {{.+}} vs fd {{.+}}; result2 {{.+}} vs fd
//
// Sizes that disagree at run time stop the function with a message (the
// verifier can only require both to be '?').
// RUN: not attnfuse-run %s --entry=forward --dynamic-sizes=2,8,3,8,2,8 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not attnfuse-run %s --entry=training --dynamic-sizes=5,7,6,5,5,7 --check=none 2>&1 | FileCheck %s --check-prefix=MISMATCH-V
// MISMATCH: attn: runtime size mismatch: key batch != query batch
// MISMATCH-V: attn: runtime size mismatch: value length != key length
//
// A runtime dimension needs a size.
// RUN: not attnfuse-run %s --entry=forward 2>&1 | FileCheck %s --check-prefix=NOSIZE
// NOSIZE: error: argument 0 of @forward has runtime dimensions: tensor<?x4x?x32xf32>; give their sizes with --dynamic-sizes

func.func @forward(%q: tensor<?x4x?x32xf32>, %k: tensor<?x2x?x32xf32>, %v: tensor<?x2x?x16xf32>)
    -> (tensor<?x4x?x16xf32>, tensor<?x4x?xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<?x4x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x16xf32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<?x4x?x16xf32>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x16xf32>, tensor<?x4x?xf32>
}

func.func @forward_static(%q: tensor<2x4x37x32xf32>, %k: tensor<2x2x53x32xf32>, %v: tensor<2x2x53x16xf32>)
    -> (tensor<2x4x37x16xf32>, tensor<2x4x37xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x37x32xf32>, tensor<2x2x53x32xf32>, tensor<2x2x53x16xf32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x37x16xf32>, tensor<2x4x37xf32>
  return %o, %lse : tensor<2x4x37x16xf32>, tensor<2x4x37xf32>
}

func.func @training(%q: tensor<1x2x?x4xf32>, %k: tensor<1x1x?x4xf32>, %v: tensor<1x1x?x3xf32>,
                    %do: tensor<1x2x?x3xf32>, %bias: tensor<1x?x?xf32>, %seed: i64)
    -> (tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x3xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x3xf32>)
      bias(%bias : tensor<1x?x?xf32>) seed(%seed)
      {mask = #attn.mask<sliding_window>, window_left = 2 : i64, window_right = 1 : i64,
       alignment = #attn.alignment<bottom_right>, dropout_p = 0.25 : f32}
      -> tensor<1x2x?x3xf32>, tensor<1x2x?xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x3xf32>)
      grad(%o, %lse, %do : tensor<1x2x?x3xf32>, tensor<1x2x?xf32>, tensor<1x2x?x3xf32>)
      bias(%bias : tensor<1x?x?xf32>) seed(%seed)
      {mask = #attn.mask<sliding_window>, window_left = 2 : i64, window_right = 1 : i64,
       alignment = #attn.alignment<bottom_right>, dropout_p = 0.25 : f32}
      -> tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x3xf32>
  return %dq, %dk, %dv : tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x3xf32>
}
