// A mask that shows every key: `q >= 0` broadcast over the keys, as
// `transformers` builds the bidirectional mask of an encoder without padding
// (ViT). The tensor (0 everywhere) is dropped; no structural mask.

// RUN: attnfuse-opt %s --attn-raise-attention -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @always_visible(
// CHECK:         %{{[a-zA-Z0-9_]+}} = attn.attention ins(%{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {scale = 2.500000e-01 : f32} -> tensor<1x2x8x16xf32>
// CHECK-NOT:     math.exp
// CHECK:         return

func.func @always_visible(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %eikiota = tensor.empty() : tensor<8xi64>
  %kiota = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]} outs(%eikiota : tensor<8xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<8xi64>
  %kpos = tensor.expand_shape %kiota [[0, 1, 2, 3]] output_shape [1, 1, 1, 8] : tensor<8xi64> into tensor<1x1x1x8xi64>
  %qpos = tensor.expand_shape %kiota [[0, 1, 2, 3]] output_shape [1, 1, 8, 1] : tensor<8xi64> into tensor<1x1x8x1xi64>
  %ev = tensor.empty() : tensor<1x1x8x1xi1>
  %vq = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qpos : tensor<1x1x8x1xi64>) outs(%ev : tensor<1x1x8x1xi1>) {
  ^bb0(%qq: i64, %out: i1):
    %z = arith.constant 0 : i64
    %c = arith.cmpi sge, %qq, %z : i64
    linalg.yield %c : i1
  } -> tensor<1x1x8x1xi1>
  %eb = tensor.empty() : tensor<1x1x8x8xi1>
  %vis = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, 0)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%vq : tensor<1x1x8x1xi1>) outs(%eb : tensor<1x1x8x8xi1>) {
  ^bb0(%x: i1, %out: i1):
    linalg.yield %x : i1
  } -> tensor<1x1x8x8xi1>
  %ef = tensor.empty() : tensor<1x1x8x8xf32>
  %mask = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%vis : tensor<1x1x8x8xi1>) outs(%ef : tensor<1x1x8x8xf32>) {
  ^bb0(%c: i1, %out: f32):
    %zero = arith.constant 0.0 : f32
    %neg = arith.constant 0xFF800000 : f32
    %m = arith.select %c, %zero, %neg : f32
    linalg.yield %m : f32
  } -> tensor<1x1x8x8xf32>
  %es = tensor.empty() : tensor<1x2x8x8xf32>
  %zs = linalg.fill ins(%c0 : f32) outs(%es : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, q, k, d) -> (b, h, q, d)>, affine_map<(b, h, q, k, d) -> (b, h, k, d)>, affine_map<(b, h, q, k, d) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%zs : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (0, 0, q, k)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %mask : tensor<1x2x8x8xf32>, tensor<1x1x8x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%x0: f32, %x1: f32, %o: f32):
    %cs = arith.constant 0.25 : f32
    %y = arith.mulf %x0, %cs : f32
    %r = arith.addf %y, %x1 : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t : tensor<1x2x8x8xf32>) outs(%mi : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<1x2x8x8xf32>
  %si = linalg.fill ins(%c0 : f32) outs(%er : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x8x8xf32>) outs(%si : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.addf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %l: f32, %o: f32):
    %d = arith.divf %a, %l : f32
    linalg.yield %d : f32
  } -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %zo = linalg.fill ins(%c0 : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  // expected-remark @below {{fused into attn.attention (1 mask term(s) dropped)}}
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, q, e, k) -> (b, h, q, k)>, affine_map<(b, h, q, e, k) -> (b, h, k, e)>, affine_map<(b, h, q, e, k) -> (b, h, q, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%zo : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
