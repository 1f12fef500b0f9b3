// --target=cuda compiles the entry function only: the other function's
// kernels are not in the plan (they made the kernel count disagree with it).
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=second --target=cuda --check=none 2>&1 | FileCheck %s
// CHECK-COUNT-1: mock-cuda: launch
// The wgmma kernel at d = 64: 192 query rows per CTA (Nq = 300: 2 blocks,
// 2 heads: 4 tiles, as many persistent CTAs), three consumer warpgroups and
// the producer.
// CHECK-SAME:    grid=4,1,1 block=512,1,1
// CHECK-NOT:     mock-cuda: launch
// CHECK:         attnfuse-run: @second check=none: RAN
func.func @first(%q: tensor<1x1x64x64xbf16>, %k: tensor<1x1x64x64xbf16>, %v: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}
func.func @second(%q: tensor<1x2x300x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>) -> tensor<1x2x300x64xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x300x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) -> tensor<1x2x300x64xf16>
  return %o : tensor<1x2x300x64xf16>
}
