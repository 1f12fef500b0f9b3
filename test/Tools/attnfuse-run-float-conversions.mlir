// Conversions between f32/f64 and f16/bf16 compiled by the host JIT for the
// baseline CPU (no F16C, no AVX-512 BF16: LLVM calls runtime builtins for
// them, which the JIT provides) and for the host: each rounds once, to
// nearest, ties to even, bit for bit as ml_dtypes, numpy and exact rational
// arithmetic do (test/Tools/Inputs/float_conversions.py).
// RUN: rm -rf %t && %python %S/Inputs/float_conversions.py gen %t/in
// RUN: attnfuse-run %s --jit-cpu=x86-64 --check=none --inputs=%t/in/x.npy,%t/in/y.npy,%t/in/h.npy,%t/in/b.npy --dump-outputs=%t/baseline | FileCheck %s --check-prefix=RAN
// RUN: %python %S/Inputs/float_conversions.py check %t/in %t/baseline | FileCheck %s
// RUN: attnfuse-run %s --jit-cpu=host --check=none --inputs=%t/in/x.npy,%t/in/y.npy,%t/in/h.npy,%t/in/b.npy --dump-outputs=%t/host | FileCheck %s --check-prefix=RAN
// RUN: %python %S/Inputs/float_conversions.py check %t/in %t/host | FileCheck %s
// RAN: @convert check=none: RAN
// CHECK: f32 -> bf16: 1048576 of 1048576 exact
// CHECK: f32 -> f16: 1048576 of 1048576 exact
// CHECK: f64 -> bf16: [[N:[0-9]+]] of [[N]] exact
// CHECK: f64 -> f16: [[N]] of [[N]] exact
// CHECK: f16 -> f32: 65536 of 65536 exact
// CHECK: bf16 -> f32: 65536 of 65536 exact
// CHECK: f16 -> f64: 65536 of 65536 exact

#id = affine_map<(i) -> (i)>
func.func @convert(%x: tensor<1048576xf32>, %y: tensor<37314xf64>,
                   %h: tensor<65536xf16>, %b: tensor<65536xbf16>)
    -> (tensor<1048576xbf16>, tensor<1048576xf16>, tensor<37314xbf16>,
        tensor<37314xf16>, tensor<65536xf32>, tensor<65536xf32>,
        tensor<65536xf64>) {
  %xb0 = tensor.empty() : tensor<1048576xbf16>
  %xb = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<1048576xf32>) outs(%xb0 : tensor<1048576xbf16>) {
  ^bb0(%v: f32, %o: bf16):
    %r = arith.truncf %v : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<1048576xbf16>
  %xh0 = tensor.empty() : tensor<1048576xf16>
  %xh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<1048576xf32>) outs(%xh0 : tensor<1048576xf16>) {
  ^bb0(%v: f32, %o: f16):
    %r = arith.truncf %v : f32 to f16
    linalg.yield %r : f16
  } -> tensor<1048576xf16>
  %yb0 = tensor.empty() : tensor<37314xbf16>
  %yb = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%y : tensor<37314xf64>) outs(%yb0 : tensor<37314xbf16>) {
  ^bb0(%v: f64, %o: bf16):
    %r = arith.truncf %v : f64 to bf16
    linalg.yield %r : bf16
  } -> tensor<37314xbf16>
  %yh0 = tensor.empty() : tensor<37314xf16>
  %yh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%y : tensor<37314xf64>) outs(%yh0 : tensor<37314xf16>) {
  ^bb0(%v: f64, %o: f16):
    %r = arith.truncf %v : f64 to f16
    linalg.yield %r : f16
  } -> tensor<37314xf16>
  %hf0 = tensor.empty() : tensor<65536xf32>
  %hf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%h : tensor<65536xf16>) outs(%hf0 : tensor<65536xf32>) {
  ^bb0(%v: f16, %o: f32):
    %r = arith.extf %v : f16 to f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %bf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : tensor<65536xbf16>) outs(%hf0 : tensor<65536xf32>) {
  ^bb0(%v: bf16, %o: f32):
    %r = arith.extf %v : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %hd0 = tensor.empty() : tensor<65536xf64>
  %hd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%h : tensor<65536xf16>) outs(%hd0 : tensor<65536xf64>) {
  ^bb0(%v: f16, %o: f64):
    %r = arith.extf %v : f16 to f64
    linalg.yield %r : f64
  } -> tensor<65536xf64>
  return %xb, %xh, %yb, %yh, %hf, %bf, %hd
      : tensor<1048576xbf16>, tensor<1048576xf16>, tensor<37314xbf16>,
        tensor<37314xf16>, tensor<65536xf32>, tensor<65536xf32>,
        tensor<65536xf64>
}
