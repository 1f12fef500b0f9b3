// attnfuse-run --target=cuda runs functions made of attention ops; what the
// host would compute is reported before any GPU is needed. Without a driver,
// the run fails with a clear message (exit 2), never a crash.
// The naive reference on the GPU (run first) and the fused kernels say so
// alike.
// RUN: not attnfuse-run %s --target=cuda 2>&1 | FileCheck %s --check-prefix=NAIVE
// RUN: not attnfuse-run %s --target=cuda --check=none 2>&1 | FileCheck %s
// NAIVE: error: cannot run the naive reference on the GPU: --target=cuda runs functions made of attention ops only: the function computes on the host (tensor.empty
// CHECK: error: cannot run on the GPU: --target=cuda runs functions made of attention ops only: the function computes on the host (tensor.empty
func.func @f(%q: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16>
  %e = tensor.empty() : tensor<1x1x64x64xbf16>
  %r = linalg.add ins(%o, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>)
                  outs(%e : tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16>
  return %r : tensor<1x1x64x64xbf16>
}
