// A runtime dimension split into two runtime sizes (what a graph exported
// with a runtime sequence length reshapes [B·N, C] into [B, N, C] with):
// after bufferization a memref.expand_shape that MLIR 22's
// expand-strided-metadata crashed on; attnfuse's pipelines lower it first
// (attn-lower-dynamic-expand-shapes). Executed against fp64 at two sizes.
// RUN: attnfuse-run %s --dynamic-sizes=6,2 --check=f64 | FileCheck %s
// RUN: attnfuse-run %s --dynamic-sizes=12,4 --check=f64 | FileCheck %s
// RUN: attnfuse-opt %s --attn-lower-to-cpu-pipeline --mlir-print-ir-before=attn-lower-dynamic-expand-shapes -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE

// CHECK: check=f64: PASS
// BEFORE: memref.expand_shape {{.*}} into memref<?x?x4xf32>
func.func @f(%a: tensor<?x4xf32>, %b: tensor<?xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %b, %c0 : tensor<?xf32>
  %rows = tensor.dim %a, %c0 : tensor<?x4xf32>
  %m = arith.divui %rows, %n : index
  %e = tensor.expand_shape %a [[0, 1], [2]] output_shape [%n, %m, 4]
      : tensor<?x4xf32> into tensor<?x?x4xf32>
  %init = tensor.empty(%n) : tensor<?x4xf32>
  %zero = arith.constant 0.0 : f32
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<?x4xf32>) -> tensor<?x4xf32>
  %r = linalg.reduce ins(%e : tensor<?x?x4xf32>) outs(%fill : tensor<?x4xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  return %r : tensor<?x4xf32>
}
