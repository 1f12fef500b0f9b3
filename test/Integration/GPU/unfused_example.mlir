// REQUIRES: cuda
// The README's bundled unfused graph: raised, fused into one CUDA kernel, and
// compared with the naive lowering of the raised op on the GPU (and, with
// --check=fa, fp64 of the graph as written on the CPU).
// RUN: attnfuse-run %S/../../../examples/attention.mlir --target=cuda
// RUN: attnfuse-run %S/../../../examples/attention.mlir --target=cuda --check=fa
