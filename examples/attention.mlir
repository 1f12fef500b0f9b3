// Causal grouped-query attention as a model exporter writes it, unfused:
// bf16 activations, K and V broadcast from 2 to 8 heads, Q K^T as an einsum,
// scale by 1/sqrt(64), a causal mask from index comparisons, a softmax in f32
// decomposed into max, exp, sum and divide, probabilities rounded to bf16, and
// the second product. attnfuse raises it into one attn.attention and lowers
// that to the tiled FlashAttention algorithm.
#qk = affine_map<(b, h, q, k, d) -> (b, h, q, d)>
#kk = affine_map<(b, h, q, k, d) -> (b, h, k, d)>
#sk = affine_map<(b, h, q, k, d) -> (b, h, q, k)>
#id = affine_map<(b, h, q, k) -> (b, h, q, k)>
#row = affine_map<(b, h, q, k) -> (b, h, q)>
#pv_p = affine_map<(b, h, q, e, k) -> (b, h, q, k)>
#pv_v = affine_map<(b, h, q, e, k) -> (b, h, k, e)>
#pv_o = affine_map<(b, h, q, e, k) -> (b, h, q, e)>
func.func @attention(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x128x64xbf16>,
                     %v: tensor<2x2x128x64xbf16>) -> tensor<2x8x128x64xbf16> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  // Grouped-query heads: repeat each K/V head for its 4 query heads.
  %e5 = tensor.empty() : tensor<2x2x4x128x64xbf16>
  %kb = linalg.broadcast ins(%k : tensor<2x2x128x64xbf16>) outs(%e5 : tensor<2x2x4x128x64xbf16>) dimensions = [2]
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<2x2x4x128x64xbf16> into tensor<2x8x128x64xbf16>
  %vb = linalg.broadcast ins(%v : tensor<2x2x128x64xbf16>) outs(%e5 : tensor<2x2x4x128x64xbf16>) dimensions = [2]
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<2x2x4x128x64xbf16> into tensor<2x8x128x64xbf16>
  // S = Q K^T in f32.
  %es = tensor.empty() : tensor<2x8x128x128xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<2x8x128x128xf32>) -> tensor<2x8x128x128xf32>
  %s = linalg.generic {indexing_maps = [#qk, #kk, #sk], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kr : tensor<2x8x128x64xbf16>, tensor<2x8x128x64xbf16>) outs(%zs : tensor<2x8x128x128xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %m = arith.mulf %af, %bf : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x128x128xf32>
  // Scale and causal mask.
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x128x128xf32>) outs(%es : tensor<2x8x128x128xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %visible = arith.cmpi sle, %j, %i : index
    %scale = arith.constant 0.125 : f32
    %y = arith.mulf %x, %scale : f32
    %r = arith.select %visible, %y, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x8x128x128xf32>
  // Softmax over the keys.
  %er = tensor.empty() : tensor<2x8x128xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x8x128xf32>) -> tensor<2x8x128xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%t : tensor<2x8x128x128xf32>) outs(%mi : tensor<2x8x128xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<2x8x128xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t, %mx : tensor<2x8x128x128xf32>, tensor<2x8x128xf32>) outs(%es : tensor<2x8x128x128xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<2x8x128x128xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<2x8x128xf32>) -> tensor<2x8x128xf32>
  %sm = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x8x128x128xf32>) outs(%si : tensor<2x8x128xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.addf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<2x8x128xf32>
  %ep = tensor.empty() : tensor<2x8x128x128xbf16>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %sm : tensor<2x8x128x128xf32>, tensor<2x8x128xf32>) outs(%ep : tensor<2x8x128x128xbf16>) {
  ^bb0(%a: f32, %l: f32, %o: bf16):
    %d = arith.divf %a, %l : f32
    %r = arith.truncf %d : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x128x128xbf16>
  // O = P V, accumulated in f32, rounded to bf16.
  %eo = tensor.empty() : tensor<2x8x128x64xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x8x128x64xf32>) -> tensor<2x8x128x64xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vr : tensor<2x8x128x128xbf16>, tensor<2x8x128x64xbf16>) outs(%zo : tensor<2x8x128x64xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %m = arith.mulf %af, %bf : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x128x64xf32>
  %eb = tensor.empty() : tensor<2x8x128x64xbf16>
  %ob = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o : tensor<2x8x128x64xf32>) outs(%eb : tensor<2x8x128x64xbf16>) {
  ^bb0(%a: f32, %r: bf16):
    %t2 = arith.truncf %a : f32 to bf16
    linalg.yield %t2 : bf16
  } -> tensor<2x8x128x64xbf16>
  return %ob : tensor<2x8x128x64xbf16>
}
