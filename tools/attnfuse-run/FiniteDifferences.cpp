//===- FiniteDifferences.cpp - an independent backward oracle -------------===//
#include "FiniteDifferences.h"

#include "Promote.h"
#include "Runner.h"

#include "attnfuse/Conversion/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"

#include <cmath>

using namespace mlir;
using namespace attnfuse::attn;
using namespace attnfuse_run;

std::optional<GradientResult>
attnfuse_run::getGradientResult(func::FuncOp entry, unsigned resultIndex) {
  auto ret = cast<func::ReturnOp>(entry.getBody().front().getTerminator());
  auto result = dyn_cast<OpResult>(ret.getOperand(resultIndex));
  if (!result)
    return std::nullopt;
  auto op = dyn_cast<AttentionBackwardOp>(result.getOwner());
  if (!op)
    return std::nullopt;
  return GradientResult{op, result.getResultNumber()};
}

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "--check=fd: " + message);
}

/// The operands of the forward op of `op`, in order: Q, K, V and those of
/// bias, keep mask, seed, key lengths and sequence offsets that it has.
static SmallVector<Value> getForwardOperands(AttentionBackwardOp op) {
  SmallVector<Value> operands = {op.getQuery(), op.getKey(), op.getValue()};
  for (Value v : {Value(op.getBias()), Value(op.getKeepMask()), Value(op.getSeed()),
                  Value(op.getKeyLengths()), Value(op.getQueryOffsets()),
                  Value(op.getKeyOffsets())})
    if (v)
      operands.push_back(v);
  return operands;
}

/// A module with `func.func @fd_forward(Q, K, V[, bias][, keep][, seed]
/// [, key_lengths][, query and key offsets]) -> O`:
/// the forward op of `op`, with its attributes and region.
static FailureOr<OwningOpRef<ModuleOp>> buildForward(AttentionBackwardOp op) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Value> operands = getForwardOperands(op);
  auto func = func::FuncOp::create(
      b, loc, "fd_forward",
      b.getFunctionType(ValueRange(operands).getTypes(),
                        {op.getOutput().getType()}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToEnd(body);
  IRMapping mapping;
  for (auto [v, arg] : llvm::zip(operands, body->getArguments()))
    mapping.map(v, arg);
  auto arg = [&](Value v) { return v ? mapping.lookup(v) : Value(); };
  auto forward = AttentionOp::create(
      b, loc, TypeRange{op.getOutput().getType()}, arg(op.getQuery()),
      arg(op.getKey()), arg(op.getValue()), arg(op.getBias()),
      arg(op.getKeepMask()), arg(op.getSeed()), arg(op.getKeyLengths()),
      /*block_table=*/Value(), arg(op.getQueryOffsets()),
      arg(op.getKeyOffsets()), op.getScaleAttr(),
      op.getMaskAttr(), op.getAlignmentAttr(), op.getWindowLeftAttr(),
      op.getWindowRightAttr(), op.getDropoutPAttr());
  if (!op.getScoreMod().empty()) {
    // Constants the region uses from above come along; other values cannot.
    if (!getScoreModCaptures(op.getScoreMod()).empty()) {
      op.emitOpError() << "--check=fd: the score_mod region uses values "
                          "defined outside it that are not constants";
      return failure();
    }
    IRMapping regionMapping;
    OpBuilder cb = OpBuilder::atBlockBegin(body);
    op.getScoreMod().walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        (void)lookupOrCloneScoreModValue(cb, v, op.getScoreMod(),
                                         regionMapping);
    });
    op.getScoreMod().cloneInto(&forward.getScoreMod(), regionMapping);
  }
  func::ReturnOp::create(b, loc, forward.getOutput());
  return module;
}

llvm::Expected<HostTensor>
attnfuse_run::finiteDifferenceGradient(func::FuncOp entry, GradientResult which,
                                       ArrayRef<HostTensor> inputs,
                                       const JitSettings &jit) {
  AttentionBackwardOp op = which.op;
  // The operands' values: arguments of the entry function.
  SmallVector<Value> operands = getForwardOperands(op);
  auto argumentIndex = [&](Value v) -> std::optional<unsigned> {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &entry.getBody().front())
      return std::nullopt;
    return arg.getArgNumber();
  };
  operands.push_back(op.getGradOutput());
  SmallVector<HostTensor> base;
  for (Value v : operands) {
    std::optional<unsigned> i = argumentIndex(v);
    if (!i)
      return fail("the operands Q, K, V, grad_output, bias, keep mask, "
                  "seed and key lengths of the attn.attention_backward op "
                  "must be arguments of the function");
    // Floats in f64 (the forward is promoted to f64), exactly.
    const HostTensor &in = inputs[*i];
    if (!isFloat(in.getKind())) {
      base.push_back(in);
      continue;
    }
    HostTensor wide(ElementKind::F64, in.getShape());
    for (int64_t j = 0, e = in.getNumElements(); j < e; ++j)
      wide.setFloat(j, in.getFloat(j));
    base.push_back(std::move(wide));
  }
  HostTensor dO = base.pop_back_val();

  FailureOr<OwningOpRef<ModuleOp>> module = buildForward(op);
  if (failed(module))
    return fail("cannot build the forward function");
  PassManager pm(op.getContext());
  pm.addPass(attnfuse::createConvertAttnToLinalg());
  if (failed(pm.run(**module)) || failed(promoteFloatsToF64(**module)))
    return fail("cannot promote the forward function to f64");
  FunctionType signature =
      (*module)->lookupSymbol<func::FuncOp>("fd_forward").getFunctionType();
  if (failed(lowerToLLVM(**module, "fd_forward", /*naive=*/true, "")))
    return fail("the forward function's pipeline failed");

  // Element j of X moves by +-h_j; set 2j is +h, 2j + 1 is -h.
  const HostTensor &x = base[which.gradient];
  int64_t n = x.getNumElements();
  auto step = [&](int64_t j) {
    return 1e-6 * std::max(1.0, std::abs(x.getFloat(j)));
  };
  SmallVector<double> loss(2 * n);
  llvm::Error error = executeEach(
      **module, "fd_forward", signature, jit, 2 * n,
      [&](size_t set) {
        SmallVector<HostTensor> args(base);
        int64_t j = set / 2;
        HostTensor &moved = args[which.gradient];
        moved.setFloat(j, x.getFloat(j) + (set % 2 ? -step(j) : step(j)));
        return args;
      },
      [&](size_t set, SmallVector<HostTensor> results) {
        // L = sum(O * dO), in f64.
        double sum = 0;
        for (int64_t i = 0, e = dO.getNumElements(); i < e; ++i)
          sum += results[0].getFloat(i) * dO.getFloat(i);
        loss[set] = sum;
        return llvm::Error::success();
      });
  if (error)
    return std::move(error);
  HostTensor gradient(ElementKind::F64, x.getShape());
  for (int64_t j = 0; j < n; ++j)
    gradient.setFloat(j, (loss[2 * j] - loss[2 * j + 1]) / (2 * step(j)));
  return gradient;
}
