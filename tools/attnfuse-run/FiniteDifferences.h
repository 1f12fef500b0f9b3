//===- FiniteDifferences.h - an independent backward oracle -----*- C++ -*-===//
//
// `attnfuse-run --check=fd`: the gradients an attn.attention_backward op
// returns are compared with central finite differences, in f64, of
// L = sum(O * dO) through the forward op's reference lowering
// (convert-attn-to-linalg, promoted to f64), so the derivative of a
// score_mod region is never checked against the derivative code itself.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_TOOLS_ATTNFUSE_RUN_FINITEDIFFERENCES_H
#define ATTNFUSE_TOOLS_ATTNFUSE_RUN_FINITEDIFFERENCES_H

#include "HostTensor.h"
#include "Runner.h"

#include "attnfuse/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

namespace attnfuse_run {

/// The gradient that result `resultIndex` of `entry` is, when it is one: a
/// result of an attn.attention_backward op (0: dQ, 1: dK, 2: dV).
struct GradientResult {
  attnfuse::attn::AttentionBackwardOp op;
  unsigned gradient;
};
std::optional<GradientResult> getGradientResult(mlir::func::FuncOp entry,
                                                unsigned resultIndex);

/// Returns dL/dX (X = Q, K or V as `which.gradient` says) for
/// L = sum(attention(Q, K, V, ...) * dO) by central differences in f64, one
/// pair of forward evaluations per element of X. The backward op's Q, K, V,
/// grad_output, bias, keep mask and seed must be arguments of `entry`; their
/// values are `inputs[i]` for argument i.
llvm::Expected<HostTensor> finiteDifferenceGradient(
    mlir::func::FuncOp entry, GradientResult which,
    llvm::ArrayRef<HostTensor> inputs, const JitSettings &jit);

} // namespace attnfuse_run

#endif // ATTNFUSE_TOOLS_ATTNFUSE_RUN_FINITEDIFFERENCES_H
