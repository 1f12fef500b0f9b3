// Q, K, V, O (and dO, dQ, dK, dV) in [B, N, H, D]: convert-attn-to-gpu
// folds the permutations around the ops (linalg.transpose, or the
// raising's linalg.generic copies through a permuted map) into the kernels,
// which read and write the buffers in place through memref.transpose views
// of static strides; the permutations and their destinations are gone (no
// copy kernels). The wgmma forward's tensor maps carry the views' strides
// (the stand-in driver prints them, innermost first, in bytes).
// RUN: attnfuse-opt %s --convert-attn-to-gpu -split-input-file 2>&1 | FileCheck %s
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=forward --target=cuda --check=none 2>&1 | FileCheck %s --check-prefix=MOCK
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=backward --target=cuda --check=none 2>&1 | FileCheck %s --check-prefix=MOCKB

// CHECK-LABEL: func.func @forward(
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.empty
// CHECK: %[[Q:.*]] = bufferization.to_buffer %arg0 read_only : tensor<2x100x4x64xbf16> to memref<2x100x4x64xbf16>
// CHECK: memref.transpose %[[Q]] (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<2x100x4x64xbf16> to memref<2x4x100x64xbf16, strided<[25600, 64, 256, 1]>>
// CHECK: %[[O:.*]] = memref.alloc() : memref<2x100x4x64xbf16>
// CHECK: memref.transpose %[[O]] (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[O]] restrict writable : memref<2x100x4x64xbf16>
// CHECK: return %[[R]]
// CHECK: gpu.func @attn_fwd_0(%{{.*}}: memref<2x4x100x64xbf16, strided<[25600, 64, 256, 1]>>, %{{.*}}: memref<2x2x130x64xbf16, strided<[16640, 64, 128, 1]>>

// MOCK: mock-cuda: tensor map dtype=9 rank=4 dims=64,100,4,2 strides=512,128,51200 box=64,128,1,1
// MOCK: mock-cuda: tensor map dtype=9 rank=4 dims=64,130,2,2 strides=256,128,33280 box=64,128,1,1
// MOCK: mock-cuda: tensor map dtype=9 rank=4 dims=64,130,2,2 strides=256,128,33280 box=64,128,1,1
// MOCK: mock-cuda: tensor map dtype=9 rank=4 dims=64,100,4,2 strides=512,128,51200 box=64,64,1,1
// MOCK: @forward check=none: RAN
func.func @forward(%q: tensor<2x100x4x64xbf16>, %k: tensor<2x130x2x64xbf16>, %v: tensor<2x130x2x64xbf16>)
    -> tensor<2x100x4x64xbf16> {
  %qe = tensor.empty() : tensor<2x4x100x64xbf16>
  %qt = linalg.transpose ins(%q : tensor<2x100x4x64xbf16>) outs(%qe : tensor<2x4x100x64xbf16>) permutation = [0, 2, 1, 3]
  %ke = tensor.empty() : tensor<2x2x130x64xbf16>
  %kt = linalg.transpose ins(%k : tensor<2x130x2x64xbf16>) outs(%ke : tensor<2x2x130x64xbf16>) permutation = [0, 2, 1, 3]
  %vt = linalg.generic {indexing_maps = [affine_map<(b, h, n, d) -> (b, n, h, d)>, affine_map<(b, h, n, d) -> (b, h, n, d)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v : tensor<2x130x2x64xbf16>) outs(%ke : tensor<2x2x130x64xbf16>) {
    ^bb0(%x: bf16, %y: bf16):
      linalg.yield %x : bf16
  } -> tensor<2x2x130x64xbf16>
  %o = attn.attention ins(%qt, %kt, %vt : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> tensor<2x4x100x64xbf16>
  %oe = tensor.empty() : tensor<2x100x4x64xbf16>
  %ot = linalg.transpose ins(%o : tensor<2x4x100x64xbf16>) outs(%oe : tensor<2x100x4x64xbf16>) permutation = [0, 2, 1, 3]
  return %ot : tensor<2x100x4x64xbf16>
}

// -----

// The backward in f32: dQ through the conversion kernel (a copy into the
// permuted view) rather than the accumulator; a permutation that moves the
// head dim (here Q's) is not folded (a copy kernel), and one with another
// use (K's, also returned) stays for that use while the kernels read K in
// place.
// CHECK-LABEL: func.func @backward(
// CHECK: linalg.transpose ins(%arg0 : tensor<2x64x4x100xf32>)
// CHECK: %[[K:.*]] = linalg.transpose ins(%arg1
// CHECK-NOT: linalg.transpose
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_pre
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd
// CHECK-SAME: memref<2x2x130x64xf32, strided<[16640, 64, 128, 1]>>
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_dq
// CHECK-SAME: memref<2x4x100x64xf32, strided<[25600, 64, 256, 1]>>
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[K]]
// MOCKB: @backward check=none: RAN
func.func @backward(%q: tensor<2x64x4x100xf32>, %k: tensor<2x130x2x64xf32>, %v: tensor<2x130x2x64xf32>,
                    %o: tensor<2x4x100x64xf32>, %lse: tensor<2x4x100xf32>, %do: tensor<2x4x100x64xf32>)
    -> (tensor<2x100x4x64xf32>, tensor<2x130x2x64xf32>, tensor<2x130x2x64xf32>, tensor<2x2x130x64xf32>) {
  %qe = tensor.empty() : tensor<2x4x100x64xf32>
  %qt = linalg.transpose ins(%q : tensor<2x64x4x100xf32>) outs(%qe : tensor<2x4x100x64xf32>) permutation = [0, 2, 3, 1]
  %ke = tensor.empty() : tensor<2x2x130x64xf32>
  %kt = linalg.transpose ins(%k : tensor<2x130x2x64xf32>) outs(%ke : tensor<2x2x130x64xf32>) permutation = [0, 2, 1, 3]
  %vt = linalg.transpose ins(%v : tensor<2x130x2x64xf32>) outs(%ke : tensor<2x2x130x64xf32>) permutation = [0, 2, 1, 3]
  %dq, %dk, %dv = attn.attention_backward
      ins(%qt, %kt, %vt : tensor<2x4x100x64xf32>, tensor<2x2x130x64xf32>, tensor<2x2x130x64xf32>)
      grad(%o, %lse, %do : tensor<2x4x100x64xf32>, tensor<2x4x100xf32>, tensor<2x4x100x64xf32>)
      -> tensor<2x4x100x64xf32>, tensor<2x2x130x64xf32>, tensor<2x2x130x64xf32>
  %dqe = tensor.empty() : tensor<2x100x4x64xf32>
  %dqt = linalg.transpose ins(%dq : tensor<2x4x100x64xf32>) outs(%dqe : tensor<2x100x4x64xf32>) permutation = [0, 2, 1, 3]
  %dke = tensor.empty() : tensor<2x130x2x64xf32>
  %dkt = linalg.transpose ins(%dk : tensor<2x2x130x64xf32>) outs(%dke : tensor<2x130x2x64xf32>) permutation = [0, 2, 1, 3]
  %dvt = linalg.transpose ins(%dv : tensor<2x2x130x64xf32>) outs(%dke : tensor<2x130x2x64xf32>) permutation = [0, 2, 1, 3]
  return %dqt, %dkt, %dvt, %kt : tensor<2x100x4x64xf32>, tensor<2x130x2x64xf32>, tensor<2x130x2x64xf32>, tensor<2x2x130x64xf32>
}
