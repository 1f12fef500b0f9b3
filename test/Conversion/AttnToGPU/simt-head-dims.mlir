// The simt family's defaults fit any head dims that are multiples of 4:
// threads per row that split both Dqk and Dv into groups of 4 (Dqk = 256,
// Dv = 136: 2, since 136 = 4 * 2 * 17), and a key block whose f32 K and V
// fit in 48 KB of static shared memory (16 keys). A requested
// threads-per-row that does not split them is an error that says which
// multiple the head dims would need.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=simt | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt threads-per-row=8" -verify-diagnostics -o /dev/null

// 64 rows x 2 threads; block-q 64, block-k 16.
// CHECK: attn.block = array<i64: 128, 1, 1>
// CHECK-SAME: attn.config = array<i64: 64, 16, 2, 16>
// CHECK-SAME: attn.family = "simt"
func.func @dv136(%q: tensor<1x2x64x256xf16>, %k: tensor<1x2x64x256xf16>, %v: tensor<1x2x64x136xf16>) -> tensor<1x2x64x136xf16> {
  // expected-error @+1 {{threads-per-row (8) must split both head dimensions into groups of 4 elements per thread: Dqk = 256 and Dv = 136 must be multiples of 32}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x64x256xf16>, tensor<1x2x64x256xf16>, tensor<1x2x64x136xf16>) -> tensor<1x2x64x136xf16>
  return %o : tensor<1x2x64x136xf16>
}
