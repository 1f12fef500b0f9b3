// UNSUPPORTED: cuda
// The naive reference's launch plan on the GPU: bias, causal mask, dropout
// (the seed a scalar kernel argument), lse; intermediate buffers between
// the launches. Without a driver the run reaches the driver, no further:
// the plan was read and matched the compiled kernels.
// RUN: not attnfuse-run %s --target=cuda 2>&1 | FileCheck %s
// CHECK-NOT: error: {{.*}}runs functions made of attention ops only
// CHECK: attnfuse-run: error: cannot run the naive reference on the GPU: cannot load the CUDA driver (libcuda.so.1)
func.func @f(%q: tensor<1x2x40x32xbf16>, %k: tensor<1x2x50x32xbf16>, %v: tensor<1x2x50x32xbf16>,
             %bias: tensor<40x50xbf16>, %seed: i64) -> (tensor<1x2x40x32xbf16>, tensor<1x2x40xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x40x32xbf16>, tensor<1x2x50x32xbf16>, tensor<1x2x50x32xbf16>)
      bias(%bias : tensor<40x50xbf16>) seed(%seed)
      {mask = #attn.mask<causal>, dropout_p = 0.1 : f32}
      -> tensor<1x2x40x32xbf16>, tensor<1x2x40xf32>
  return %o, %lse : tensor<1x2x40x32xbf16>, tensor<1x2x40xf32>
}
