// Integer arguments that index a tensor (token ids, positions, token types)
// are drawn in the range they index by default: the smallest dimension they
// index through tensor.extract (torch-mlir's embedding gathers, behind
// cf.asserts) or tosa.gather, followed through casts, reshapes and linalg
// bodies. The corpus's GPT-2 (linalg) and BERT (TOSA) exports run with the
// default inputs; an argument that indexes nothing keeps the type's range.
// RUN: attnfuse-run %S/../Corpus/torch-linalg/gpt2_sdpa_b1.mlir --check=fa | FileCheck %s --check-prefix=GPT2
// RUN: attnfuse-run %S/../Corpus/torch-tosa/bert_eager_b1.mlir --check=fa | FileCheck %s --check-prefix=BERT
// RUN: rm -rf %t && attnfuse-run %s --entry=indexes --check=none --dump-inputs=%t
// RUN: %python -c "import numpy as np, sys; a = [np.load(sys.argv[1] + '/arg%%d.npy' %% i) for i in range(3)]; print('ids', a[0].min(), a[0].max(), 'types', a[1].min(), a[1].max(), 'free', a[2].max() > 1000)" %t | FileCheck %s --check-prefix=RANGE
// GPT2: @forward check=fa: PASS
// BERT: @forward check=fa: PASS
// The ids index a table of 10 rows (and, reshaped, one of 7 columns: the
// smaller wins); the types a gather of 3; the third argument indexes nothing.
// RANGE: ids 0 6 types 0 2 free True

#id = affine_map<(i) -> (i)>
func.func @indexes(%ids: tensor<64xi64>, %types: tensor<1x64xi32>, %free: tensor<64xi64>)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<1x64x1xf32>, tensor<64xi64>) {
  %table = arith.constant dense<1.0> : tensor<10x4xf32>
  %narrow = arith.constant dense<2.0> : tensor<2x7xf32>
  %e = tensor.empty() : tensor<64xf32>
  %rows = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%ids : tensor<64xi64>) outs(%e : tensor<64xf32>) {
  ^bb0(%v: i64, %o: f32):
    %i = arith.index_cast %v : i64 to index
    %c0 = arith.constant 0 : index
    %x = tensor.extract %table[%i, %c0] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<64xf32>
  %shaped = tensor.expand_shape %ids [[0, 1]] output_shape [1, 64] : tensor<64xi64> into tensor<1x64xi64>
  %flat = tensor.collapse_shape %shaped [[0, 1]] : tensor<1x64xi64> into tensor<64xi64>
  %cols = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%flat : tensor<64xi64>) outs(%e : tensor<64xf32>) {
  ^bb0(%v: i64, %o: f32):
    %i = arith.index_cast %v : i64 to index
    %c1 = arith.constant 1 : index
    %x = tensor.extract %narrow[%c1, %i] : tensor<2x7xf32>
    linalg.yield %x : f32
  } -> tensor<64xf32>
  %values = arith.constant dense<3.0> : tensor<1x3x1xf32>
  %g = tosa.gather %values, %types : (tensor<1x3x1xf32>, tensor<1x64xi32>) -> tensor<1x64x1xf32>
  return %rows, %cols, %g, %free : tensor<64xf32>, tensor<64xf32>, tensor<1x64x1xf32>, tensor<64xi64>
}
