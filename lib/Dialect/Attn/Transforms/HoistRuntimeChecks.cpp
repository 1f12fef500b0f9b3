//===- HoistRuntimeChecks.cpp - cf.assert as early as its operands allow --===//
//
// attn-hoist-runtime-checks: each cf.assert of a block, with the
// side-effect-free ops of that block that compute its condition, moves up
// to right after the last op it depends on (or that has side effects other
// than another check), so that a transformation that takes the asserted
// facts for granted (upstream elementwise fusion's reshape propagation
// sizes one tensor's view by another's dimensions) cannot run code before
// the check that would have stopped it.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/Dialect/Attn/Transforms/Transforms.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace attnfuse::attn {
#define GEN_PASS_DEF_ATTNHOISTRUNTIMECHECKS
#include "attnfuse/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attnfuse::attn

using namespace mlir;

/// Whether `op` may move above others and others above it: no side
/// effects and no regions (tensor.dim, arith, tensor.from_elements, ...).
static bool isMovable(Operation *op) {
  return op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

void attnfuse::attn::hoistRuntimeChecks(Block &block) {
  SmallVector<cf::AssertOp> checks(block.getOps<cf::AssertOp>());
  for (cf::AssertOp check : checks) {
    // The condition's movable producers in this block, and the last op the
    // check must stay after: a producer that cannot move, or an op with
    // side effects (other than a check) before it.
    llvm::SetVector<Operation *> slice;
    Operation *anchor = nullptr;
    auto after = [&](Operation *op) {
      if (!anchor || anchor->isBeforeInBlock(op))
        anchor = op;
    };
    SmallVector<Value> worklist(check->getOperands());
    while (!worklist.empty()) {
      Operation *def = worklist.pop_back_val().getDefiningOp();
      if (!def || def->getBlock() != &block || slice.contains(def))
        continue;
      if (!isMovable(def)) {
        after(def);
        continue;
      }
      slice.insert(def);
      llvm::append_range(worklist, def->getOperands());
    }
    for (Operation *op = check->getPrevNode(); op; op = op->getPrevNode())
      if (!isa<cf::AssertOp>(op) && !isMemoryEffectFree(op)) {
        after(op);
        break;
      }
    SmallVector<Operation *> moved(slice.begin(), slice.end());
    llvm::sort(moved, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    moved.push_back(check);
    // Ops above the anchor stay (they dominate the check's new place).
    Operation *at = anchor;
    for (Operation *op : moved) {
      if (at && op->isBeforeInBlock(at))
        continue;
      if (at)
        op->moveAfter(at);
      else
        op->moveBefore(&block, block.begin());
      at = op;
    }
  }
}

namespace {
struct AttnHoistRuntimeChecksPass
    : attnfuse::attn::impl::AttnHoistRuntimeChecksBase<
          AttnHoistRuntimeChecksPass> {
  void runOnOperation() override {
    getOperation()->walk(
        [](Block *block) { attnfuse::attn::hoistRuntimeChecks(*block); });
  }
};
} // namespace
