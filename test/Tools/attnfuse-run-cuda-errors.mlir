// attnfuse-run --target=cuda runs functions whose computations all become
// kernels (attention fused, the other linalg ops as naive-path kernels,
// what is left between them as one-thread kernels); a value the host would
// still compute for a kernel (here a scalar read by tensor.extract and used
// by a linalg op) is reported before any GPU is needed. Without a driver,
// the run fails with a clear message (exit 2), never a crash.
// The naive reference on the GPU (run first) and the fused kernels say so
// alike.
// RUN: not attnfuse-run %s --target=cuda 2>&1 | FileCheck %s --check-prefix=NAIVE
// RUN: not attnfuse-run %s --target=cuda --check=none 2>&1 | FileCheck %s
// NAIVE: error: cannot run the naive reference on the GPU: --target=cuda runs functions whose computations all become GPU kernels: the function computes on the host (memref.load
// CHECK: error: cannot run on the GPU: --target=cuda runs functions whose computations all become GPU kernels: the function computes on the host (memref.load
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @f(%q: tensor<1x1x64x64xbf16>, %s: tensor<2xbf16>) -> tensor<1x1x64x64xbf16> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16>
  %c0 = arith.constant 0 : index
  %x = tensor.extract %s[%c0] : tensor<2xbf16>
  %e = tensor.empty() : tensor<1x1x64x64xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o : tensor<1x1x64x64xbf16>) outs(%e : tensor<1x1x64x64xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %m = arith.mulf %in, %x : bf16
    linalg.yield %m : bf16
  } -> tensor<1x1x64x64xbf16>
  return %r : tensor<1x1x64x64xbf16>
}
