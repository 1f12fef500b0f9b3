//===- KernelPlan.cpp - kernel kinds and their arguments by role ----------===//
//
// See KernelPlan.h.
//
//===----------------------------------------------------------------------===//
#include "KernelPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/Support/ErrorHandling.h"

#include <iterator>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

SmallVector<ArgRole>
attnfuse::gpu_kernels::getArgumentRoles(const KernelPlan &plan) {
  // The score pipeline's operands, where the forward and the backward take
  // them: the optional bias, keep mask and seed, then the score_mod's
  // captures.
  auto appendScoreOperands = [&](SmallVector<ArgRole> &roles) {
    if (plan.bias)
      roles.push_back(ArgRole::Bias);
    if (plan.keepMask)
      roles.push_back(ArgRole::Keep);
    if (plan.seed)
      roles.push_back(ArgRole::Seed);
    if (plan.keyLengths)
      roles.push_back(ArgRole::KeyLengths);
    if (plan.blockTable)
      roles.push_back(ArgRole::BlockTable);
    roles.append(plan.captures.size(), ArgRole::Capture);
  };
  // What the pre-pass zeroes and the backward writes of grad_bias.
  auto appendBiasGradient = [&](SmallVector<ArgRole> &roles) {
    switch (getBiasGradient(plan)) {
    case BiasGradient::None:
      return;
    case BiasGradient::Store:
      roles.push_back(ArgRole::DBias);
      return;
    case BiasGradient::Accumulate:
      roles.push_back(ArgRole::DBiasAccum);
      return;
    }
  };
  switch (plan.kind) {
  case KernelKind::Forward: {
    SmallVector<ArgRole> roles = {ArgRole::Q, ArgRole::K, ArgRole::V};
    appendScoreOperands(roles);
    if (plan.kvSplits > 1)
      roles.append({ArgRole::OPartial, ArgRole::LsePartial});
    else
      roles.append({ArgRole::O, ArgRole::Lse});
    return roles;
  }
  case KernelKind::ForwardCombine:
    return {ArgRole::OPartial, ArgRole::LsePartial, ArgRole::O, ArgRole::Lse};
  case KernelKind::BackwardPre: {
    SmallVector<ArgRole> roles = {ArgRole::GradOut, ArgRole::O, ArgRole::Di};
    if (!plan.cfg.deterministic)
      roles.push_back(ArgRole::DqAccum);
    appendBiasGradient(roles);
    return roles;
  }
  case KernelKind::Backward:
  case KernelKind::BackwardDQ: {
    SmallVector<ArgRole> roles = {ArgRole::Q,       ArgRole::K,   ArgRole::V,
                                  ArgRole::GradOut, ArgRole::Lse, ArgRole::Di};
    appendScoreOperands(roles);
    if (plan.kind == KernelKind::BackwardDQ) {
      roles.push_back(ArgRole::Dq);
      return roles;
    }
    if (plan.cfg.deterministic)
      roles.append({ArgRole::Dk, ArgRole::Dv});
    else
      roles.append({ArgRole::DqAccum, ArgRole::Dk, ArgRole::Dv});
    appendBiasGradient(roles);
    return roles;
  }
  case KernelKind::BackwardConvert: {
    SmallVector<ArgRole> roles = {ArgRole::DqAccum, ArgRole::Dq};
    if (convertsBiasGradient(plan))
      roles.append({ArgRole::DBiasAccum, ArgRole::DBias});
    return roles;
  }
  }
  llvm_unreachable("unknown kernel kind");
}

namespace {
/// Per role (in ArgRole's order): its name and the KernelArgs member that
/// holds it (null for the captures, a list).
struct RoleInfo {
  const char *name;
  Value KernelArgs::*slot;
};
constexpr RoleInfo kRoles[] = {
    {"q", &KernelArgs::q},       {"k", &KernelArgs::key},
    {"v", &KernelArgs::value},   {"bias", &KernelArgs::bias},
    {"keep", &KernelArgs::keep}, {"seed", &KernelArgs::seed},
    {"key_lengths", &KernelArgs::keyLengths},
    {"block_table", &KernelArgs::blockTable},
    {"capture", nullptr},        {"o", &KernelArgs::out},
    {"lse", &KernelArgs::lse},   {"do", &KernelArgs::gradOut},
    {"di", &KernelArgs::di},     {"dq_accum", &KernelArgs::dqAccum},
    {"dq", &KernelArgs::dq},     {"dk", &KernelArgs::dk},
    {"dv", &KernelArgs::dv},
    {"o_partial", &KernelArgs::outPartial},
    {"lse_partial", &KernelArgs::lsePartial},
    {"dbias", &KernelArgs::dBias},
    {"dbias_accum", &KernelArgs::dBiasAccum},
};
static_assert(std::size(kRoles) ==
                  static_cast<size_t>(ArgRole::DBiasAccum) + 1,
              "kRoles disagrees with ArgRole");
} // namespace

BiasGradient attnfuse::gpu_kernels::getBiasGradient(const KernelPlan &plan) {
  if (!plan.biasGrad)
    return BiasGradient::None;
  // Shared bias elements: fewer of them than score elements.
  int64_t scores = plan.B * plan.Hq * plan.Nq * plan.Nk;
  return cast<ShapedType>(plan.bias.getType()).getNumElements() < scores
             ? BiasGradient::Accumulate
             : BiasGradient::Store;
}

bool attnfuse::gpu_kernels::convertsBiasGradient(const KernelPlan &plan) {
  return getBiasGradient(plan) == BiasGradient::Accumulate &&
         !cast<ShapedType>(plan.bias.getType()).getElementType().isF32();
}

StringRef attnfuse::gpu_kernels::getArgumentName(ArgRole role) {
  return kRoles[static_cast<size_t>(role)].name;
}

unsigned attnfuse::gpu_kernels::getArgumentIndex(const KernelPlan &plan,
                                                 ArgRole role) {
  SmallVector<ArgRole> roles = getArgumentRoles(plan);
  auto *it = llvm::find(roles, role);
  assert(it != roles.end() && "the kernel has no argument of this role");
  return it - roles.begin();
}

KernelArgs::KernelArgs(const KernelPlan &plan, ArrayRef<BlockArgument> args) {
  SmallVector<ArgRole> roles = getArgumentRoles(plan);
  assert(args.size() == roles.size() + plan.tensorMaps.size() &&
         "the kernel's arguments disagree with its roles");
  for (auto [role, arg] : llvm::zip(roles, args)) {
    if (Value KernelArgs::*slot = kRoles[static_cast<size_t>(role)].slot)
      this->*slot = arg;
    else
      captureArgs.push_back(arg);
  }
  for (BlockArgument arg : args.drop_front(roles.size()))
    tensorMapArgs.push_back(arg);
}

void KernelArgs::mapCaptures(const KernelPlan &plan, OpBuilder &b,
                             Location loc) {
  for (auto [capture, arg] : llvm::zip(plan.captures, captureArgs)) {
    Value value = arg;
    if (auto type = dyn_cast<RankedTensorType>(capture.getType()))
      value = bufferization::ToTensorOp::create(b, loc, type, arg,
                                                /*restrict=*/true);
    captureMap.map(capture, value);
  }
  if (keyLengths)
    keyLengthsTensor = bufferization::ToTensorOp::create(
        b, loc, cast<RankedTensorType>(plan.keyLengths.getType()), keyLengths,
        /*restrict=*/true);
  if (blockTable)
    blockTableTensor = bufferization::ToTensorOp::create(
        b, loc, cast<RankedTensorType>(plan.blockTable.getType()), blockTable,
        /*restrict=*/true);
}

std::pair<Value, Value> KernelArgs::keyRow(const KernelPlan &plan, OpBuilder &b,
                                           Location loc, Value batch,
                                           Value k) const {
  if (!blockTableTensor)
    return {batch, k};
  attn::PagedPosition at =
      attn::buildPagedPosition(b, loc, plan.op, batch, k, blockTableTensor);
  return {at.page, at.slot};
}

Value KernelArgs::keyPageValid(const KernelPlan &plan, OpBuilder &b,
                               Location loc, Value batch, Value k) const {
  // (A key of a block's tail, past Nk, looks up the last entry: the table
  // has Nk / pageSize of them; the tail mask hides the key anyway.)
  Value last = arith::ConstantIndexOp::create(b, loc, plan.Nk - 1);
  Value key = arith::MinSIOp::create(b, loc, k, last);
  return attn::buildPagedPosition(b, loc, plan.op, batch, key,
                                  blockTableTensor)
      .valid;
}

attn::SizeValues KernelArgs::sizesAt(const KernelPlan &plan, OpBuilder &b,
                                     Location loc, Value batch) const {
  attn::SizeValues sizes;
  sizes.batch = b.getIndexAttr(plan.B);
  sizes.queryLength = b.getIndexAttr(plan.maskQueryLength());
  sizes.keyLength = b.getIndexAttr(plan.Nk);
  if (plan.window.hasStaticOffset())
    sizes.maskOffset = b.getIndexAttr(plan.window.offset);
  if (!keyLengthsTensor)
    return sizes;
  return attn::sizesAtBatch(b, loc, plan.op, sizes, batch, keyLengthsTensor);
}
