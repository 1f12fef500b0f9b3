// attn-lower-dynamic-expand-shapes: an expand_shape that splits a dimension
// into two runtime sizes (what expand-strided-metadata crashes on in MLIR 22)
// becomes extract_strided_metadata + reinterpret_cast; the outer stride is
// the inner size times the split dimension's stride. Others stay.
// RUN: attnfuse-opt %s --attn-lower-dynamic-expand-shapes | FileCheck %s
// RUN: attnfuse-opt %s --attn-lower-dynamic-expand-shapes --expand-strided-metadata --lower-affine | FileCheck %s --check-prefix=LOWERED

// CHECK-LABEL: func.func @split_runtime
// CHECK-SAME: (%[[A:.*]]: memref<?x32xf32>, %[[N:.*]]: index, %[[M:.*]]: index)
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[S0:.*]] = affine.apply #{{.*}}()[%[[M]]]
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[N]], %[[M]], 32], strides: [%[[S0]], 32, 1]
// CHECK-NOT: memref.expand_shape
// LOWERED-LABEL: func.func @split_runtime
// LOWERED: memref.reinterpret_cast
func.func @split_runtime(%a: memref<?x32xf32>, %n: index, %m: index) -> memref<?x?x32xf32> {
  %e = memref.expand_shape %a [[0, 1], [2]] output_shape [%n, %m, 32] : memref<?x32xf32> into memref<?x?x32xf32>
  return %e : memref<?x?x32xf32>
}

// A strided source: the split dimension's stride (?) times the inner size.
// CHECK-LABEL: func.func @split_strided
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %[[ST:.*]]:2 = memref.extract_strided_metadata
// CHECK: affine.apply #{{.*}}()[%[[ST]]#0, %{{.*}}]
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%{{.*}}, %{{.*}}, 8], strides: [%{{.*}}, %[[ST]]#0, 1]
func.func @split_strided(%a: memref<?x8xf32, strided<[?, 1], offset: ?>>, %n: index, %m: index) -> memref<?x?x8xf32, strided<[?, ?, 1], offset: ?>> {
  %e = memref.expand_shape %a [[0, 1], [2]] output_shape [%n, %m, 8] : memref<?x8xf32, strided<[?, 1], offset: ?>> into memref<?x?x8xf32, strided<[?, ?, 1], offset: ?>>
  return %e : memref<?x?x8xf32, strided<[?, ?, 1], offset: ?>>
}

// One runtime size in the group: left to expand-strided-metadata.
// CHECK-LABEL: func.func @one_runtime
// CHECK: memref.expand_shape
func.func @one_runtime(%a: memref<?x32xf32>, %n: index) -> memref<2x?x32xf32> {
  %e = memref.expand_shape %a [[0, 1], [2]] output_shape [2, %n, 32] : memref<?x32xf32> into memref<2x?x32xf32>
  return %e : memref<2x?x32xf32>
}
