// RUN: attnfuse-opt %s --attn-hoist-runtime-checks -split-input-file | FileCheck %s

// A check of the arguments' sizes moves above the computation before it,
// with the ops of its condition; the constant already above stays there.
// CHECK-LABEL: func.func @above_compute(
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: tensor.dim %arg0
// CHECK-NEXT: tensor.dim %arg1
// CHECK-NEXT: arith.cmpi eq
// CHECK-NEXT: cf.assert %{{.*}}, "sizes"
// CHECK-NEXT: linalg.generic
#map = affine_map<(d0) -> (d0)>
func.func @above_compute(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %e = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%a : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  %da = tensor.dim %a, %c0 : tensor<?xf32>
  %db = tensor.dim %b, %c0 : tensor<?xf32>
  %eq = arith.cmpi eq, %da, %db : index
  cf.assert %eq, "sizes"
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%e, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%x: f32, %z: f32, %o: f32):
    %y = arith.addf %x, %z : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  return %s : tensor<?xf32>
}

// -----

// A check of a computed tensor's size stays after the op that computes it;
// one after an op with side effects stays after that op.
// CHECK-LABEL: func.func @stays(
// CHECK: tensor.pad
// CHECK: tensor.dim %padded
// CHECK: cf.assert %{{.*}}, "computed"
// CHECK: memref.store
// CHECK-NEXT: tensor.dim %arg1
// CHECK-NEXT: arith.cmpi
// CHECK-NEXT: cf.assert %{{.*}}, "after the store"
func.func @stays(%a: tensor<?xf32>, %b: tensor<?xf32>, %n: index, %m: memref<f32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %f = arith.constant 0.0 : f32
  %p = tensor.pad %a low[0] high[%n] {
  ^bb0(%i: index):
    tensor.yield %f : f32
  } : tensor<?xf32> to tensor<?xf32>
  %dp = tensor.dim %p, %c0 : tensor<?xf32>
  %db = tensor.dim %b, %c0 : tensor<?xf32>
  %eq = arith.cmpi eq, %dp, %db : index
  cf.assert %eq, "computed"
  memref.store %f, %m[] : memref<f32>
  %db2 = tensor.dim %b, %c0 : tensor<?xf32>
  %eq2 = arith.cmpi sge, %db2, %n : index
  cf.assert %eq2, "after the store"
  return %p : tensor<?xf32>
}
