// REQUIRES: cuda
// A raised graph whose layout is not [B,H,N,D]: Q, K, V and the output are
// [B,S,H,D] (test/Dialect/Attn/Transforms/bshd_layout.mlir, larger), and a
// residual add follows. The raising leaves layout copies (linalg.generic)
// around attn.attention; convert-attn-to-gpu folds those of Q, K and V into
// the fused kernel (read in place), and the output's, fused with the
// residual, runs on the GPU as a kernel of its own.
// test/Tools/attnfuse-run-mock-glue.mlir checks the launch plan on the
// stand-in driver.
// RUN: attnfuse-run %s --target=cuda --check=fa
// RUN: attnfuse-run %s --target=cuda --check=naive --seed=3
func.func @f(%q: tensor<2x40x2x32xf32>, %k: tensor<2x40x2x32xf32>, %v: tensor<2x40x2x32xf32>) -> tensor<2x40x2x32xf32> {
  %c0 = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %es = tensor.empty() : tensor<2x2x40x40xf32>
  %zs = linalg.fill ins(%c0 : f32) outs(%es : tensor<2x2x40x40xf32>) -> tensor<2x2x40x40xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, q, k, d) -> (b, q, h, d)>, affine_map<(b, h, q, k, d) -> (b, k, h, d)>, affine_map<(b, h, q, k, d) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x40x2x32xf32>, tensor<2x40x2x32xf32>) outs(%zs : tensor<2x2x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x40x40xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x2x40x40xf32>) outs(%es : tensor<2x2x40x40xf32>) {
  ^bb0(%x0: f32, %o: f32):
    linalg.yield %x0 : f32
  } -> tensor<2x2x40x40xf32>
  %er = tensor.empty() : tensor<2x2x40xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x2x40xf32>) -> tensor<2x2x40xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t : tensor<2x2x40x40xf32>) outs(%mi : tensor<2x2x40xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<2x2x40xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t, %mx : tensor<2x2x40x40xf32>, tensor<2x2x40xf32>) outs(%es : tensor<2x2x40x40xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<2x2x40x40xf32>
  %si = linalg.fill ins(%c0 : f32) outs(%er : tensor<2x2x40xf32>) -> tensor<2x2x40xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x40x40xf32>) outs(%si : tensor<2x2x40xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.addf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<2x2x40xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<2x2x40x40xf32>, tensor<2x2x40xf32>) outs(%es : tensor<2x2x40x40xf32>) {
  ^bb0(%a: f32, %l: f32, %o: f32):
    %d = arith.divf %a, %l : f32
    linalg.yield %d : f32
  } -> tensor<2x2x40x40xf32>
  %eo = tensor.empty() : tensor<2x40x2x32xf32>
  %zo = linalg.fill ins(%c0 : f32) outs(%eo : tensor<2x40x2x32xf32>) -> tensor<2x40x2x32xf32>
    %o = linalg.generic {indexing_maps = [affine_map<(b, h, q, e, k) -> (b, h, q, k)>, affine_map<(b, h, q, e, k) -> (b, k, h, e)>, affine_map<(b, h, q, e, k) -> (b, q, h, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x2x40x40xf32>, tensor<2x40x2x32xf32>) outs(%zo : tensor<2x40x2x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x40x2x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(b, s, h, d) -> (b, s, h, d)>, affine_map<(b, s, h, d) -> (b, s, h, d)>, affine_map<(b, s, h, d) -> (b, s, h, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o, %q : tensor<2x40x2x32xf32>, tensor<2x40x2x32xf32>) outs(%eo : tensor<2x40x2x32xf32>) {
  ^bb0(%a: f32, %b: f32, %x: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x40x2x32xf32>
  return %r : tensor<2x40x2x32xf32>
}
