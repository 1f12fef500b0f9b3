// A chain with runtime dimensions is matched like a static one and raised to
// attn.attention with runtime sizes. The broadcast of the probabilities is
// written as torch-mlir writes it for runtime sizes: a linalg.generic without
// inputs that reads P with tensor.extract (a use from above, which the
// candidate search and the match follow). A head dim that is a runtime size
// is not fused, with a remark (it shapes the code); so is a reshape that
// groups a runtime length with another dim.

// RUN: attnfuse-opt %s --attn-raise-attention -verify-diagnostics -o /dev/null
// RUN: attnfuse-opt %s --attn-raise-attention="report=none summary" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: attnfuse-opt %s --attn-raise-attention="report=none" | FileCheck %s
// RUN: attnfuse-run %s --entry=dynamic_seq --check=fa --dynamic-sizes=7 | FileCheck %s --check-prefix=EXEC
// RUN: attnfuse-run %s --entry=dynamic_seq --check=fa --dynamic-sizes=130 | FileCheck %s --check-prefix=EXEC
// RUN: attnfuse-run %s --entry=dynamic_keys --check=fa --dynamic-sizes=1 | FileCheck %s --check-prefix=EXEC
// RUN: attnfuse-run %s --entry=dynamic_keys --check=fa --dynamic-sizes=77 | FileCheck %s --check-prefix=EXEC

// SUMMARY:      attn-raise-attention: 4 candidate(s), 2 fused, 2 not fused
// SUMMARY-DAG:    not fused (dynamic): 1
// SUMMARY-DAG:    not fused (dynamic-reshape): 1
// EXEC: check=fa: PASS

// CHECK-LABEL: func.func @dynamic_seq
// CHECK:       attn.attention ins({{.+}} : tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>)
// CHECK-LABEL: func.func @dynamic_keys
// CHECK:       attn.attention ins({{.+}} : tensor<1x4x8x16xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>)

func.func @dynamic_seq(%q: tensor<2x?x16xf32>, %kt: tensor<2x16x?xf32>, %v: tensor<2x?x16xf32>) -> tensor<2x?x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %i1 = arith.constant 1 : index
  %n = tensor.dim %q, %i1 : tensor<2x?x16xf32>
  %e = tensor.empty(%n, %n) : tensor<2x?x?xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x?x16xf32>, tensor<2x16x?xf32>) outs(%z : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x?x?xf32>) outs(%e : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %pb = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<2x?x?xf32>) {
  ^bb0(%o: f32):
    %b = linalg.index 0 : index
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %x = tensor.extract %p[%b, %i, %j] : tensor<2x?x?xf32>
    linalg.yield %x : f32
  } -> tensor<2x?x?xf32>
  %eo = tensor.empty(%n) : tensor<2x?x16xf32>
  %zo = linalg.fill ins(%c0 : f32) outs(%eo : tensor<2x?x16xf32>) -> tensor<2x?x16xf32>
  // expected-remark @below {{fused into attn.attention}}
  %o = linalg.batch_matmul ins(%pb, %v : tensor<2x?x?xf32>, tensor<2x?x16xf32>) outs(%zo : tensor<2x?x16xf32>) -> tensor<2x?x16xf32>
  return %o : tensor<2x?x16xf32>
}

// The same chain with a static batch and heads but a runtime key length only
// (a KV cache of runtime length), written as a decomposed softmax.
func.func @dynamic_keys(%q: tensor<4x8x16xf32>, %kt: tensor<4x16x?xf32>, %v: tensor<4x?x16xf32>) -> tensor<4x8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %i2 = arith.constant 2 : index
  %n = tensor.dim %kt, %i2 : tensor<4x16x?xf32>
  %e = tensor.empty(%n) : tensor<4x8x?xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8x?xf32>) -> tensor<4x8x?xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<4x8x16xf32>, tensor<4x16x?xf32>) outs(%z : tensor<4x8x?xf32>) -> tensor<4x8x?xf32>
  %er = tensor.empty() : tensor<4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.reduce ins(%s : tensor<4x8x?xf32>) outs(%mi : tensor<4x8xf32>) dimensions = [2]
    (%a: f32, %acc: f32) {
      %r = arith.maximumf %a, %acc : f32
      linalg.yield %r : f32
    }
  %x = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<4x8x?xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<4x8x?xf32>
  %si = linalg.fill ins(%c0 : f32) outs(%er : tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = linalg.reduce ins(%x : tensor<4x8x?xf32>) outs(%si : tensor<4x8xf32>) dimensions = [2]
    (%a: f32, %acc: f32) {
      %r = arith.addf %a, %acc : f32
      linalg.yield %r : f32
    }
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %l : tensor<4x8x?xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x8x?xf32>
  %eo = tensor.empty() : tensor<4x8x16xf32>
  %zo = linalg.fill ins(%c0 : f32) outs(%eo : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  // expected-remark @below {{fused into attn.attention}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x8x?xf32>, tensor<4x?x16xf32>) outs(%zo : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %o : tensor<4x8x16xf32>
}

// A runtime head dim: not fused.
func.func @dynamic_head_dim(%q: tensor<2x8x?xf32>, %kt: tensor<2x?x8xf32>, %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x?xf32>, tensor<2x?x8xf32>) outs(%z : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%e : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %eo = tensor.empty() : tensor<2x8x16xf32>
  %zo = linalg.fill ins(%c0 : f32) outs(%eo : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // expected-remark @below {{not fused: the query/key head dim is a runtime size ('?'); attn.attention takes runtime batch and sequence lengths only}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%zo : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// The scores flattened over the batch and a runtime length and expanded back:
// the delinearization would need the runtime size; not fused.
func.func @dynamic_regroup(%q: tensor<2x?x16xf32>, %kt: tensor<2x16x?xf32>, %v: tensor<2x?x16xf32>) -> tensor<2x?x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %i1 = arith.constant 1 : index
  %n = tensor.dim %q, %i1 : tensor<2x?x16xf32>
  %e = tensor.empty(%n, %n) : tensor<2x?x?xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x?x16xf32>, tensor<2x16x?xf32>) outs(%z : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %f = tensor.collapse_shape %s [[0, 1], [2]] : tensor<2x?x?xf32> into tensor<?x?xf32>
  // expected-remark @below {{not fused: the reshape groups a runtime dimension with others}}
  %g = tensor.expand_shape %f [[0, 1], [2]] output_shape [2, %n, %n] : tensor<?x?xf32> into tensor<2x?x?xf32>
  %p = linalg.softmax dimension(2) ins(%g : tensor<2x?x?xf32>) outs(%e : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %eo = tensor.empty(%n) : tensor<2x?x16xf32>
  %zo = linalg.fill ins(%c0 : f32) outs(%eo : tensor<2x?x16xf32>) -> tensor<2x?x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x?x?xf32>, tensor<2x?x16xf32>) outs(%zo : tensor<2x?x16xf32>) -> tensor<2x?x16xf32>
  return %o : tensor<2x?x16xf32>
}
