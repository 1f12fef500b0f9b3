// UNSUPPORTED: cuda
// Where no CUDA driver is installed, --target=cuda fails cleanly (exit 2).
// RUN: not attnfuse-run %s --target=cuda 2>&1 | FileCheck %s
// CHECK: attnfuse-run: error: cannot run on the GPU: cannot load the CUDA driver (libcuda.so.1)
func.func @f(%q: tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>,
                          tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32>
  return %o : tensor<1x1x16x16xf32>
}
