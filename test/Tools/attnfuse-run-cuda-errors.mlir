// attnfuse-run --target=cuda runs functions whose computations all become
// kernels (attention fused, the other linalg ops as naive-path kernels);
// what the host would still compute (here a scalar stored by
// tensor.insert) is reported before any GPU is needed. Without a driver,
// the run fails with a clear message (exit 2), never a crash.
// The naive reference on the GPU (run first) and the fused kernels say so
// alike.
// RUN: not attnfuse-run %s --target=cuda 2>&1 | FileCheck %s --check-prefix=NAIVE
// RUN: not attnfuse-run %s --target=cuda --check=none 2>&1 | FileCheck %s
// NAIVE: error: cannot run the naive reference on the GPU: --target=cuda runs functions whose computations all become GPU kernels: the function computes on the host (memref.store
// CHECK: error: cannot run on the GPU: --target=cuda runs functions whose computations all become GPU kernels: the function computes on the host (memref.store
func.func @f(%q: tensor<1x1x64x64xbf16>, %x: bf16) -> tensor<1x1x64x64xbf16> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16>
  %c0 = arith.constant 0 : index
  %r = tensor.insert %x into %o[%c0, %c0, %c0, %c0] : tensor<1x1x64x64xbf16>
  return %r : tensor<1x1x64x64xbf16>
}
