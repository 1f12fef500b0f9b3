// Constant mask tensors: a boolean `tril` [1, 2, 8, 8] selected with
// -0.7 * f32 max (Keras, through TFLite), and a 0/-10000 table added
// (MIGraphX): the causal mask, every row sees a key. A table that is no
// window (the diagonal hidden) stays the bias.

// RUN: attnfuse-opt %s --attn-raise-attention -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @const_tril_select(
// CHECK:         %{{[a-zA-Z0-9_]+}} = attn.attention ins(%{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {mask = #attn.mask<causal>, scale = 2.500000e-01 : f32} -> tensor<1x2x8x16xf32>
// CHECK-NOT:     math.exp
// CHECK:         return
// CHECK-LABEL: func.func @const_table(
// CHECK:         %{{[a-zA-Z0-9_]+}} = attn.attention ins(%{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {mask = #attn.mask<causal>, scale = 2.500000e-01 : f32} -> tensor<1x2x8x16xf32>
// CHECK-NOT:     math.exp
// CHECK:         return
// CHECK-LABEL: func.func @const_table_diagonal(
// CHECK:         %{{[a-zA-Z0-9_]+}} = attn.attention ins(%{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) bias(%{{[a-zA-Z0-9_]+}} : tensor<1x1x8x8xf32>) {scale = 2.500000e-01 : f32} -> tensor<1x2x8x16xf32>
// CHECK-NOT:     math.exp
// CHECK:         return

func.func @const_tril_select(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %tril = arith.constant dense<[[[[true, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false], [true, true, true, false, false, false, false, false], [true, true, true, true, false, false, false, false], [true, true, true, true, true, false, false, false], [true, true, true, true, true, true, false, false], [true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true]], [[true, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false], [true, true, true, false, false, false, false, false], [true, true, true, true, false, false, false, false], [true, true, true, true, true, false, false, false], [true, true, true, true, true, true, false, false], [true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true]]]]> : tensor<1x2x8x8xi1>
  %es = tensor.empty() : tensor<1x2x8x8xf32>
  %zs = linalg.fill ins(%c0 : f32) outs(%es : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, q, k, d) -> (b, h, q, d)>, affine_map<(b, h, q, k, d) -> (b, h, k, d)>, affine_map<(b, h, q, k, d) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%zs : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (0, 0, q, k)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %tril : tensor<1x2x8x8xf32>, tensor<1x2x8x8xi1>) outs(%es : tensor<1x2x8x8xf32>) {
  ^bb0(%x0: f32, %x1: i1, %o: f32):
    %cs = arith.constant 0.25 : f32
    %y = arith.mulf %x0, %cs : f32
    %neg = arith.constant -2.37267096E+38 : f32
    %r = arith.select %x1, %y, %neg : f32
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
  // expected-remark @below {{fused into attn.attention (mask causal; 1 mask term(s) dropped)}}
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, q, e, k) -> (b, h, q, k)>, affine_map<(b, h, q, e, k) -> (b, h, k, e)>, affine_map<(b, h, q, e, k) -> (b, h, q, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%zo : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

func.func @const_table(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %mask = arith.constant dense<[[[[0.0, -10000.0, -10000.0, -10000.0, -10000.0, -10000.0, -10000.0, -10000.0], [0.0, 0.0, -10000.0, -10000.0, -10000.0, -10000.0, -10000.0, -10000.0], [0.0, 0.0, 0.0, -10000.0, -10000.0, -10000.0, -10000.0, -10000.0], [0.0, 0.0, 0.0, 0.0, -10000.0, -10000.0, -10000.0, -10000.0], [0.0, 0.0, 0.0, 0.0, 0.0, -10000.0, -10000.0, -10000.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -10000.0, -10000.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -10000.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x8x8xf32>
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
  // expected-remark @below {{fused into attn.attention (mask causal; 1 mask term(s) dropped)}}
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, q, e, k) -> (b, h, q, k)>, affine_map<(b, h, q, e, k) -> (b, h, k, e)>, affine_map<(b, h, q, e, k) -> (b, h, q, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%zo : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

func.func @const_table_diagonal(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %mask = arith.constant dense<[[[[-10000.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, -10000.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, -10000.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, -10000.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, -10000.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, -10000.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -10000.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -10000.0]]]]> : tensor<1x1x8x8xf32>
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
  // expected-remark @below {{fused into attn.attention}}
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, q, e, k) -> (b, h, q, k)>, affine_map<(b, h, q, e, k) -> (b, h, k, e)>, affine_map<(b, h, q, e, k) -> (b, h, q, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%zo : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
