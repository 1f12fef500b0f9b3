// UNSUPPORTED: cuda
// Where no CUDA driver is installed, --target=cuda fails cleanly (exit 2):
// the naive reference (the reference lowering as upstream-made kernels)
// runs first, so its kernels are compiled and its launch plan read before
// the driver is needed; with --check=none only the fused kernels are.
// RUN: not attnfuse-run %s --target=cuda 2>&1 | FileCheck %s --check-prefix=NAIVE
// RUN: not attnfuse-run %s --target=cuda --check=fa 2>&1 | FileCheck %s --check-prefix=NAIVE
// RUN: not attnfuse-run %s --target=cuda --check=none 2>&1 | FileCheck %s --check-prefix=FUSED
// NAIVE: attnfuse-run: error: cannot run the naive reference on the GPU: cannot load the CUDA driver (libcuda.so.1)
// FUSED: attnfuse-run: error: cannot run on the GPU: cannot load the CUDA driver (libcuda.so.1)
func.func @f(%q: tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>,
                          tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32>
  return %o : tensor<1x1x16x16xf32>
}
