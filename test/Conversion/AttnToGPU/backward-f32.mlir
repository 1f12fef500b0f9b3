// attn.attention_backward in f32 with MQA and a sliding window: the
// accumulator of the backward's f32 atomics is dQ itself (no conversion
// kernel); one CTA per (key block of 64, batch * KV head = 2): grid (2, 2);
// T = 2 threads per key row (d = 32); the query rows of a key block are
// bounded on both sides by the window (max and min of the row range).
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt" | FileCheck %s
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --target=cuda --check=none --pipeline-options="mma=simt" 2>&1 | FileCheck %s --check-prefix=MOCK

// CHECK-LABEL: func.func @f(
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<2x3x70x32xf32>
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_pre
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd
// CHECK-NOT: gpu.launch_func
// CHECK: %[[DQ:.*]] = bufferization.to_tensor %[[ACC]]
// CHECK: return %[[DQ]]
// CHECK: gpu.func @attn_fwd_0_bwd(
// CHECK-SAME: attn.block = array<i64: 128, 1, 1>
// CHECK-SAME: attn.config = array<i64: 1, 64, 2, 1>
// CHECK-SAME: attn.grid = array<i64: 2, 2, 1>
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: gpu.func @attn_fwd_0_bwd_dq

// MOCK: mock-cuda: launch attn_fwd_0_bwd_pre grid=14,1,1 block=256,1,1 shared=0
// MOCK-NEXT: mock-cuda: launch attn_fwd_0_bwd grid=2,2,1 block=128,1,1 shared=0
// MOCK-NEXT: attnfuse-run: @f check=none: RAN
func.func @f(%q: tensor<2x3x70x32xf32>, %k: tensor<2x1x90x32xf32>, %v: tensor<2x1x90x32xf32>,
             %o: tensor<2x3x70x32xf32>, %lse: tensor<2x3x70xf32>, %do: tensor<2x3x70x32xf32>)
    -> (tensor<2x3x70x32xf32>, tensor<2x1x90x32xf32>, tensor<2x1x90x32xf32>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x3x70x32xf32>, tensor<2x1x90x32xf32>, tensor<2x1x90x32xf32>)
      grad(%o, %lse, %do : tensor<2x3x70x32xf32>, tensor<2x3x70xf32>, tensor<2x3x70x32xf32>)
      {mask = #attn.mask<sliding_window>, window_left = 16, window_right = 4}
      -> tensor<2x3x70x32xf32>, tensor<2x1x90x32xf32>, tensor<2x1x90x32xf32>
  return %dq, %dk, %dv : tensor<2x3x70x32xf32>, tensor<2x1x90x32xf32>, tensor<2x1x90x32xf32>
}
