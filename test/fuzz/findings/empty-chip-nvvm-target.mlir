// Found by test/fuzz/fuzz.py --mode passes (seed 1) once the pass options
// took chip strings (issue 23). An empty chip followed by another option
// reaches the gpu.module's #nvvm.target with chip "", and upstream's
// NVVMTargetAttr::verifyTarget (libMLIR.so 22) segfaults on it, from the
// verifier of gpu.module. `chip=` alone (the last option) does not crash.
// The GPU pipeline should refuse an empty chip (or keep its default); until
// it does, test/fuzz/corpus.py draws no empty chip for pass options (the C
// API and Python map "" to the default chip and are not affected).
// attnfuse-opt empty-chip-nvvm-target.mlir '--attn-lower-to-nvvm-pipeline=format=isa chip= block-k=8'  -> SIGSEGV
func.func @attention(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}
