//===- RaiseAttention.cpp - raise unfused attention to attn.attention -----===//
//
// Finds `O = contract_k(P, V)` with `P = softmax_k(T)`, `T = f(S)` and
// `S = contract_d(Q, K)` by meaning, not by syntax, and rewrites the chain
// into one `attn.attention`. The stages live in Raise/ (see Raise/Chain.h);
// this file holds the public entry points and the pass.
//
//===----------------------------------------------------------------------===//
#include "Raise/Chain.h"

#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNRAISEATTENTION
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;

AttentionChainMatch::AttentionChainMatch(std::unique_ptr<raise::Matcher> m,
                                         std::unique_ptr<raise::Chain> c)
    : matcher(std::move(m)), chain(std::move(c)) {}
AttentionChainMatch::AttentionChainMatch(AttentionChainMatch &&) = default;
AttentionChainMatch &
AttentionChainMatch::operator=(AttentionChainMatch &&) = default;
AttentionChainMatch::~AttentionChainMatch() = default;

Operation *AttentionChainMatch::getRoot() const {
  return chain->c2.getOperation();
}

bool AttentionChainMatch::hasStructuralMask() const {
  return chain->mask != MaskKind::none;
}

bool AttentionChainMatch::hasLse() const { return chain->lse.has_value(); }

std::string AttentionChainMatch::describe() const {
  SmallVector<std::string> parts;
  if (chain->mask != MaskKind::none) {
    std::string m = ("mask " + stringifyMaskKind(chain->mask)).str();
    if (chain->alignment == MaskAlignment::bottom_right)
      m += " bottom_right";
    if (chain->mask == MaskKind::sliding_window)
      m += " " + std::to_string(chain->windowLeft) + "/" +
           std::to_string(chain->windowRight);
    parts.push_back(m);
  }
  if (chain->droppedMasks)
    parts.push_back(std::to_string(chain->droppedMasks) +
                    " mask term(s) dropped");
  if (chain->keyLengths)
    parts.push_back("key lengths");
  if (chain->lse)
    parts.push_back("lse");
  return llvm::join(parts, "; ");
}

FailureOr<AttentionChainMatch>
attnfuse::attn::matchAttentionChain(Operation *c2, RaiseFailure &why) {
  auto lin = dyn_cast<linalg::LinalgOp>(c2);
  if (!lin || !raise::isContraction(c2)) {
    why = {c2, "not-contraction", "the op is not a contraction"};
    return failure();
  }
  auto matcher = std::make_unique<raise::Matcher>(lin);
  FailureOr<raise::Chain> chain = matcher->match();
  if (failed(chain)) {
    why = matcher->why;
    if (!why.at)
      why.at = c2;
    if (why.key.empty())
      why.key = "unknown";
    if (why.message.empty())
      why.message = "unknown reason";
    return failure();
  }
  return AttentionChainMatch(
      std::move(matcher), std::make_unique<raise::Chain>(std::move(*chain)));
}

FailureOr<Value>
attnfuse::attn::rewriteAttentionChain(RewriterBase &rewriter,
                                      AttentionChainMatch &match) {
  raise::Chain &c = *match.chain;
  MLIRContext *ctx = rewriter.getContext();
  for (StringRef name : {AttnDialect::getDialectNamespace(),
                         linalg::LinalgDialect::getDialectNamespace(),
                         tensor::TensorDialect::getDialectNamespace(),
                         arith::ArithDialect::getDialectNamespace()})
    if (!ctx->getLoadedDialect(name))
      return c.c2->emitError("attn-raise-attention: the '")
             << name << "' dialect is not loaded in the context";
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(c.c2);
  Value out = raise::buildAttention(rewriter, *match.matcher, c);
  rewriter.replaceOp(c.c2, out);
  // The chain is dead now; erase it, users first.
  SmallVector<Operation *> ops(c.ops.begin(), c.ops.end());
  for (bool progress = true; progress;) {
    progress = false;
    for (Operation *&op : ops)
      if (op && op->use_empty()) {
        rewriter.eraseOp(op);
        op = nullptr;
        progress = true;
      }
  }
  return out;
}

void RaiseAttentionStats::print(llvm::raw_ostream &os) const {
  os << "attn-raise-attention: " << candidates << " candidate(s), " << fused
     << " fused, " << (candidates - fused) << " not fused\n";
  for (const auto &[key, n] : notFused)
    os << "  not fused (" << key << "): " << n << "\n";
  os << "  fused with a structural mask: " << structural << "\n";
  os << "  fused with the lse: " << lse << "\n";
}

LogicalResult attnfuse::attn::raiseAttention(Operation *root,
                                             const RaiseAttentionOptions &options,
                                             RaiseAttentionStats *stats) {
  RaiseAttentionStats local;
  RaiseAttentionStats &st = stats ? *stats : local;
  IRRewriter rewriter(root->getContext());
  bool anyError = false;
  for (Operation *c2 : findAttentionCandidates(root)) {
    ++st.candidates;
    RaiseFailure why;
    FailureOr<AttentionChainMatch> match = matchAttentionChain(c2, why);
    if (failed(match)) {
      ++st.notFused[why.key];
      std::string msg = "not fused: " + why.message;
      if (options.report == RaiseReport::Remarks)
        why.at->emitRemark(msg);
      else if (options.report == RaiseReport::Errors) {
        why.at->emitError(msg);
        anyError = true;
      }
      continue;
    }
    if (options.report != RaiseReport::None) {
      std::string what = match->describe();
      c2->emitRemark("fused into attn.attention")
          << (what.empty() ? "" : " (") << what << (what.empty() ? "" : ")");
    }
    bool structural = match->hasStructuralMask(), lse = match->hasLse();
    if (failed(rewriteAttentionChain(rewriter, *match)))
      return failure();
    ++st.fused;
    st.structural += structural;
    st.lse += lse;
  }
  return failure(anyError);
}
namespace {
struct AttnRaiseAttentionPass
    : attnfuse::attn::impl::AttnRaiseAttentionBase<AttnRaiseAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    RaiseAttentionOptions options;
    if (report == "remarks")
      options.report = RaiseReport::Remarks;
    else if (report == "errors")
      options.report = RaiseReport::Errors;
    else if (report == "none")
      options.report = RaiseReport::None;
    else {
      getOperation()->emitError("attn-raise-attention: unknown report mode '")
          << report << "' (expected remarks, errors or none)";
      return signalPassFailure();
    }
    RaiseAttentionStats stats;
    LogicalResult result = raiseAttention(getOperation(), options, &stats);
    if (summary)
      stats.print(llvm::errs());
    if (failed(result))
      signalPassFailure();
  }
};
} // namespace
