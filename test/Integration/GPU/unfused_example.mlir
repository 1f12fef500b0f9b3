// REQUIRES: cuda
// The README's bundled unfused graph: raised, fused into one CUDA kernel, and
// compared with the naive CPU lowering of the graph as written.
// RUN: attnfuse-run %S/../../../examples/attention.mlir --target=cuda
// RUN: attnfuse-run %S/../../../examples/attention.mlir --target=cuda --check=fa
