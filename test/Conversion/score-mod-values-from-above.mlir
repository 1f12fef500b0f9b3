// A score_mod region may use values defined outside it: canonicalization
// hoists its constants (even the yielded one) above the op, which is not
// isolated from above, and the raising captures scalars of the graph. Every
// lowering clones the constants next to its copy of the region and uses the
// other values where they are.
// RUN: attnfuse-opt %s -canonicalize -convert-attn-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: attnfuse-opt %s -canonicalize -convert-attn-to-scf | FileCheck %s --check-prefix=SCF
// RUN: attnfuse-opt %s -canonicalize -attn-lower-to-cpu-pipeline | FileCheck %s --check-prefix=CPU
// RUN: attnfuse-opt %s -canonicalize -attn-lower-to-cpu-pipeline=naive=1 | FileCheck %s --check-prefix=CPU

// LINALG-LABEL: func.func @yields_constant
// LINALG:         linalg.generic
// LINALG:         linalg.generic
// LINALG:           %[[C:.+]] = arith.constant 0xFF800000 : f32
// LINALG:           arith.select %{{.+}}, %[[C]]
// SCF-LABEL:    func.func @yields_constant
// SCF:            scf.forall
// SCF:              arith.constant 0xFF800000 : f32
// CPU-LABEL:    llvm.func @yields_constant
func.func @yields_constant(%q: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>)
      {mask = #attn.mask<causal>} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 0xFF800000 : f32
        attn.yield %c : f32
      } -> tensor<1x1x4x4xf32>
  return %o : tensor<1x1x4x4xf32>
}

// LINALG-LABEL: func.func @captures_argument(
// LINALG-SAME:      %{{.+}}: tensor<1x1x4x4xf32>, %[[CAP:.+]]: f32)
// LINALG:           arith.divf %{{.+}}, %[[CAP]] : f32
// SCF-LABEL:    func.func @captures_argument(
// SCF-SAME:         %{{.+}}: tensor<1x1x4x4xf32>, %[[CAP:.+]]: f32)
// SCF:                arith.divf %{{.+}}, %[[CAP]] : f32
// CPU-LABEL:    llvm.func @captures_argument
func.func @captures_argument(%q: tensor<1x1x4x4xf32>, %cap: f32) -> tensor<1x1x4x4xf32> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x1x4x4xf32>
  return %o : tensor<1x1x4x4xf32>
}

// The backward op's derivative of a region that yields a constant is 0.
// LINALG-LABEL: func.func @backward_yields_constant
// SCF-LABEL:    func.func @backward_yields_constant
// CPU-LABEL:    llvm.func @backward_yields_constant
func.func @backward_yields_constant(%q: tensor<1x1x4x4xf32>, %lse: tensor<1x1x4xf32>) -> tensor<1x1x4x4xf32> {
  %dq, %dk, %dv = attn.attention_backward ins(%q, %q, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>)
      grad(%q, %lse, %q : tensor<1x1x4x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4x4xf32>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 1.0 : f32
        attn.yield %c : f32
      } -> tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>
  return %dq : tensor<1x1x4x4xf32>
}
