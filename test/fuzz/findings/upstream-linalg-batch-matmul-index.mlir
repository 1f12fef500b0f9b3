// Found by test/fuzz/fuzz.py --mode mutate (an element type of
// test/Dialect/Attn/Transforms/f16_everywhere.mlir changed to index).
// Upstream MLIR 22 (Debian's libMLIR.so), not attnfuse: the parser of
// linalg.batch_matmul segfaults on index operands; `mlir-opt` of LLVM 22
// crashes the same way. Listed in test/fuzz/known-crashes.txt (upstream).
// attnfuse-opt upstream-linalg-batch-matmul-index.mlir  -> SIGSEGV
func.func @f(%q: tensor<4x8x16xindex>, %k: tensor<4x8x16xindex>, %z: tensor<4x8x8xindex>) -> tensor<4x8x8xindex> {
  %s = linalg.batch_matmul ins(%q, %k : tensor<4x8x16xindex>, tensor<4x8x16xindex>) outs(%z : tensor<4x8x8xindex>) -> tensor<4x8x8xindex>
  return %s : tensor<4x8x8xindex>
}
