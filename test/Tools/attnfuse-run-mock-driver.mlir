// The host side of attnfuse-run --target=cuda on the stand-in driver
// (test/Tools/MockCudaDriver: zeroed buffers, launches only logged): the
// naive reference's launch plan on the GPU (bias, causal mask, dropout with
// the seed a scalar kernel argument, lse, intermediate buffers between the
// launches), then the fused kernel's single launch. The kernels do not run,
// so the outputs stay 0: --check=fa must FAIL, because the naive reference
// itself disagrees with fp64 (a rule measured against a wrong reference
// proves nothing); --check=none runs.
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir not attnfuse-run %s --target=cuda --check=fa 2>&1 | FileCheck %s
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --target=cuda --check=none --pipeline-options="mma=mma_sync block-q=64" 2>&1 | FileCheck %s --check-prefix=NONE

// Naive: 14 launches (the reference lowering's linalg ops on parallel
// loops mapped to blocks and threads), then the fused wgmma kernel (the
// default on sm_90a): with dropout two consumer warpgroups (128 query rows)
// and the producer, 384 threads; causal: grid = (B * H = 2, 1 query block);
// 1024 (alignment) + Q 128 x 64 bytes + two stages of 128 keys x 64 bytes
// for K and V + 9 mbarriers = 42056 bytes. With mma=mma_sync block-q=64: 64
// query rows per CTA, 128 threads, two stages of 32 keys x (32 + 8)
// elements for K and V = 10240 bytes.
// The fused kernel's tensor maps, encoded before its launch (arrays
// innermost first, as the driver takes them): Q, K and V (bf16 = 9) of 32
// columns, contiguous (64-byte rows), boxes of one 64-byte panel (swizzle 2
// = 64 bytes) by 128 rows, L2 promotion 3 = 256 bytes. O is stored from
// registers (TMA stores start at Dv = 64).
// CHECK-COUNT-14: mock-cuda: launch f_kernel{{.*}} grid={{[0-9]+,[0-9]+,[0-9]+}} block={{[0-9]+,[0-9]+,[0-9]+}} shared=0
// CHECK-NEXT: mock-cuda: tensor map dtype=9 rank=4 dims=32,40,2,1 strides=64,2560,5120 box=32,128,1,1 swizzle=2 l2=3
// CHECK-NEXT: mock-cuda: tensor map dtype=9 rank=4 dims=32,50,2,1 strides=64,3200,6400 box=32,128,1,1 swizzle=2 l2=3
// CHECK-NEXT: mock-cuda: tensor map dtype=9 rank=4 dims=32,50,2,1 strides=64,3200,6400 box=32,128,1,1 swizzle=2 l2=3
// CHECK-NEXT: mock-cuda: launch attn_fwd_0 grid=2,1,1 block=384,1,1 shared=42064
// CHECK-NOT: mock-cuda: launch
// CHECK:     attnfuse-run: @f check=fa (reference: naive lowering on the GPU): FAIL result0 {{.*}} (the naive reference is off by more than 5% of max|O| =
// NONE:      mock-cuda: launch attn_fwd_0 grid=2,1,1 block=128,1,1 shared=10240
// NONE:      attnfuse-run: @f check=none: RAN
func.func @f(%q: tensor<1x2x40x32xbf16>, %k: tensor<1x2x50x32xbf16>, %v: tensor<1x2x50x32xbf16>,
             %bias: tensor<40x50xbf16>, %seed: i64) -> (tensor<1x2x40x32xbf16>, tensor<1x2x40xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x40x32xbf16>, tensor<1x2x50x32xbf16>, tensor<1x2x50x32xbf16>)
      bias(%bias : tensor<40x50xbf16>) seed(%seed)
      {mask = #attn.mask<causal>, dropout_p = 0.1 : f32}
      -> tensor<1x2x40x32xbf16>, tensor<1x2x40xf32>
  return %o, %lse : tensor<1x2x40x32xbf16>, tensor<1x2x40xf32>
}
