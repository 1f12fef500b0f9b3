// A crash of attnfuse-opt (here the upstream linalg parser's, known to the
// fuzzer: test/fuzz/known-crashes.txt) prints LLVM's stack dump with what the
// tool was doing, as mlir-opt does; without it the fuzzer cannot tell the
// crash apart from a new one.
// RUN: not --crash attnfuse-opt %s 2>&1 | FileCheck %s
// CHECK: Stack dump:
// CHECK: MLIR Parser: custom op parser 'linalg.batch_matmul'
%0 = linalg.batch_matmul ins(%a, %b : tensor<2x4x4xindex>, tensor<2x4x4xindex>) outs(%c : tensor<2x4x4xindex>) -> tensor<2x4x4xindex>
