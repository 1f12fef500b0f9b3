//===- AttnToGPU.cpp - fused CUDA attention kernels -----------------------===//
//
// Generates, for each attn.attention, one fused FlashAttention forward kernel
// (gpu.func, kernel kind `forward`) and its launch (gpu.launch_func); for
// each attn.attention_backward, the backward kinds' kernels (pre-pass,
// backward, dQ conversion) and their launches in order. The
// kernel body belongs to an instruction family (KernelFamily.h: simt,
// mma_sync, wgmma); this file builds the op's KernelPlan, picks the family
// (`mma`, `auto` by `chip`; the fallback remarks), checks what every family
// shares (shapes, element types, captures, the grid) and writes the host
// side: the kernel's arguments by role (KernelPlan.h: the operands as
// buffers, O and lse allocated, the tensor maps), the launch.
//
// Every family computes the function the reference lowering defines: what
// acts per element (structural mask, score_mod, bias, keep mask, dropout) is
// built by the shared ScoreUtils builders.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Conversion/AttnToGPU/AttnToGPU.h"
#include "attnfuse/Conversion/AttnToGPU/TensorMapCodes.h"
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Transforms/Transforms.h"
#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include <cmath>
#include <limits>

namespace attnfuse {
#define GEN_PASS_DEF_CONVERTATTNTOGPU
#include "attnfuse/Conversion/Passes.h.inc"
} // namespace attnfuse

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::attn;

#include "KernelCost.h"
#include "KernelFamily.h"
#include "TileScheduler.h"

using namespace attnfuse::gpu_kernels;

namespace {
MemRefType memrefFor(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// Where `op` permutes the dimensions of one tensor and nothing else — a
/// linalg.transpose, or a linalg.generic of parallel loops whose body yields
/// its input element, with a permuted input map and an identity output map
/// (the raising's layout adaptation) — and keeps the last dimension last:
/// its input, and the permutation `perm` (result dimension i is input
/// dimension perm[i]).
Value permutedSource(Operation *op, SmallVectorImpl<int64_t> &perm) {
  if (!op)
    return {};
  Value input;
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
    input = transpose.getInput();
    perm.assign(transpose.getPermutation().begin(),
                transpose.getPermutation().end());
  } else if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
        generic.getNumResults() != 1 ||
        generic.getNumLoops() != generic.getNumParallelLoops())
      return {};
    Block &body = generic.getRegion().front();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    if (body.getOperations().size() != 1 ||
        yield.getValues().front() != body.getArgument(0))
      return {};
    AffineMap in = generic.getIndexingMapsArray()[0],
              out = generic.getIndexingMapsArray()[1];
    if (!out.isIdentity() || !in.isPermutation())
      return {};
    // Input dimension j is loop (= result) dimension in(j): result
    // dimension i is input dimension in^-1(i).
    perm.assign(in.getNumResults(), 0);
    for (unsigned j = 0; j < in.getNumResults(); ++j)
      perm[in.getDimPosition(j)] = j;
    input = generic.getDpsInputs()[0];
  } else {
    return {};
  }
  auto type = dyn_cast<RankedTensorType>(input.getType());
  if (!type || !type.hasStaticShape() || perm.empty() ||
      perm.back() != static_cast<int64_t>(perm.size()) - 1)
    return {};
  return input;
}

/// `buffer` viewed through `perm` (memref.transpose: result dimension i is
/// buffer dimension perm[i]; static strides, no copy).
Value permutedView(OpBuilder &b, Location loc, Value buffer,
                   ArrayRef<int64_t> perm) {
  SmallVector<unsigned> dims(perm.begin(), perm.end());
  return memref::TransposeOp::create(
             b, loc, buffer,
             AffineMapAttr::get(
                 AffineMap::getPermutationMap(dims, b.getContext())))
      .getResult();
}

/// A Q, K, V, O or dO operand's buffer for the kernels: where it is a
/// permutation of another tensor that keeps the head dim innermost (Q, K,
/// V in [B, N, H, D], as projections and flash_attn_func have them), that
/// tensor's buffer read in place through the permuted view; else the
/// operand's own.
Value kernelInput(OpBuilder &b, Location loc, Value tensor) {
  SmallVector<int64_t> perm;
  if (Value source = permutedSource(tensor.getDefiningOp(), perm))
    return permutedView(
        b, loc,
        bufferization::ToBufferOp::create(b, loc, memrefFor(source), source,
                                          /*readOnly=*/true),
        perm);
  return bufferization::ToBufferOp::create(b, loc, memrefFor(tensor), tensor,
                                           /*readOnly=*/true);
}

/// Whether `result`'s only use permutes it keeping the head dim innermost.
bool hasPermutedUse(Value result) {
  SmallVector<int64_t> perm;
  return result.hasOneUse() &&
         permutedSource(*result.getUsers().begin(), perm) == result;
}

/// `buffer` ([B, Hq, Nq, ...], Q, O, lse or the split forward's partials)
/// viewed as [B, Hq / G, G * Nq, ...] for packed grouped queries (row r of
/// K/V head h is position r mod Nq of query head h * G + r / Nq): one query
/// row, or a head's rows right after the previous head's (stride 1 = Nq ×
/// stride 2; packsGroupedQueries). No copy.
Value groupedRowsView(OpBuilder &b, Location loc, Value buffer, int64_t G) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  (void)type.getStridesAndOffset(strides, offset);
  SmallVector<int64_t> shape(type.getShape());
  int64_t nq = shape[2];
  shape[1] /= G;
  shape[2] *= G;
  strides[2] = nq == 1 ? strides[1] : strides[2];
  strides[1] *= G;
  MemRefType viewType = MemRefType::get(shape, type.getElementType());
  SmallVector<int64_t> identity;
  int64_t identityOffset;
  (void)viewType.getStridesAndOffset(identity, identityOffset);
  if (offset != 0 || strides != identity)
    viewType = MemRefType::get(
        shape, type.getElementType(),
        StridedLayoutAttr::get(b.getContext(), offset, strides));
  return memref::ReinterpretCastOp::create(b, loc, viewType, buffer, offset,
                                           shape, strides)
      .getResult();
}

/// A kernel result (O, dQ, dK, dV) of `type`: where `result`'s only use
/// permutes it keeping the head dim innermost (O back to [B, N, H, D]),
/// the buffer is allocated in the permuted layout and the kernel writes it
/// through the inverse view, and that use is returned in `permutedUse`
/// (its result is the buffer's); else an allocation of `type`.
Value kernelOutput(OpBuilder &b, Location loc, Value result, MemRefType type,
                   Operation *&permutedUse, Value &permutedBuffer) {
  permutedUse = nullptr;
  SmallVector<int64_t> perm;
  if (result.hasOneUse()) {
    Operation *user = *result.getUsers().begin();
    if (permutedSource(user, perm) == result) {
      permutedUse = user;
      permutedBuffer = memref::AllocOp::create(
          b, loc, memrefFor(user->getResult(0)));
      SmallVector<int64_t> inverse(perm.size());
      for (auto [i, p] : llvm::enumerate(perm))
        inverse[p] = i;
      return permutedView(b, loc, permutedBuffer, inverse);
    }
  }
  return memref::AllocOp::create(b, loc, type);
}

/// Replaces `op`'s results by tensors of `buffers` (the kernels' outputs)
/// and the permuted uses that kernelOutput folded (null where none) by
/// tensors of their buffers.
void replaceByBuffers(OpBuilder &b, Location loc, Operation *op,
                      ArrayRef<Value> buffers, ArrayRef<Operation *> uses,
                      ArrayRef<Value> permuted) {
  auto toTensor = [&](Value result, Value buf) {
    return bufferization::ToTensorOp::create(b, loc, result.getType(), buf,
                                             /*restrict=*/true,
                                             /*writable=*/true)
        .getResult();
  };
  auto eraseWithEmptyInit = [](Operation *permutation) {
    Value init = cast<DestinationStyleOpInterface>(permutation).getDpsInits()[0];
    permutation->erase();
    if (auto empty = init.getDefiningOp<tensor::EmptyOp>();
        empty && empty->use_empty())
      empty->erase();
  };
  for (auto [use, buf] : llvm::zip(uses, permuted))
    if (use) {
      use->getResult(0).replaceAllUsesWith(toTensor(use->getResult(0), buf));
      eraseWithEmptyInit(use);
    }
  SmallVector<Value> results;
  for (auto [result, buf] : llvm::zip(op->getResults(), buffers))
    results.push_back(toTensor(result, buf));
  SmallVector<Operation *> permutations;
  for (Value operand : op->getOperands()) {
    SmallVector<int64_t> perm;
    Operation *def = operand.getDefiningOp();
    if (permutedSource(def, perm) && !llvm::is_contained(permutations, def))
      permutations.push_back(def);
  }
  op->replaceAllUsesWith(results);
  op->erase();
  // The permutations that kernelInput read through, and their destinations,
  // once nothing else uses them.
  for (Operation *def : permutations)
    if (isOpTriviallyDead(def))
      eraseWithEmptyInit(def);
}
} // namespace

/// The score_mod region reads a captured tensor with tensor.extract of the
/// kernel argument's bufferization.to_tensor (KernelArgs::mapCaptures): those
/// reads become memref.load of the argument.
static LogicalResult loadCapturedTensors(AttentionOpInterface op,
                                         gpu::GPUFuncOp func) {
  SmallVector<bufferization::ToTensorOp> views;
  func.walk([&](bufferization::ToTensorOp view) { views.push_back(view); });
  for (bufferization::ToTensorOp view : views) {
    for (Operation *user : llvm::make_early_inc_range(view->getUsers())) {
      auto extract = dyn_cast<tensor::ExtractOp>(user);
      if (!extract)
        return op->emitOpError()
               << "convert-attn-to-gpu: the score_mod region uses a captured "
                  "tensor in '"
               << user->getName() << "'; a kernel reads it by tensor.extract";
      OpBuilder b(extract);
      Value load = memref::LoadOp::create(b, extract.getLoc(), view.getBuffer(),
                                          extract.getIndices());
      extract.replaceAllUsesWith(load);
      extract.erase();
    }
    view.erase();
  }
  return success();
}

/// The cheaper arithmetic of approx-score-mod in the kernel (a score_mod's,
/// cloned per element, and its derivative's): tanh.approx.f32 (sm_75+, one
/// MUFU.TANH) for every f32 math.tanh, and x * (1 / c) for every f32 x / c
/// with c a finite non-zero constant. libdevice's tanhf is some twenty
/// instructions and div.rn.f32 about eight, per score: a softcap (cap *
/// tanh(s / cap)) cost a third of the plain kernel's speed.
static void approximateScoreMath(gpu::GPUFuncOp func) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<math::TanhOp, arith::DivFOp>(op) &&
        op->getResult(0).getType().isF32())
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder b(op);
    if (auto div = dyn_cast<arith::DivFOp>(op)) {
      FloatAttr c;
      if (!matchPattern(div.getRhs(), m_Constant(&c)))
        continue;
      double divisor = c.getValueAsDouble();
      if (divisor == 0.0 || !std::isfinite(divisor))
        continue;
      Value reciprocal = arith::ConstantOp::create(
          b, div.getLoc(), b.getF32FloatAttr(static_cast<float>(1.0 / divisor)));
      div.replaceAllUsesWith(
          arith::MulFOp::create(b, div.getLoc(), div.getLhs(), reciprocal)
              .getResult());
      div.erase();
      continue;
    }
    KB k{b, op->getLoc()};
    Value approx = inlinePtx(k, b.getF32Type(), op->getOperand(0),
                             "tanh.approx.f32 $0, $1;", "=f,f", /*pure=*/true);
    op->getResult(0).replaceAllUsesWith(approx);
    op->erase();
  }
}

/// What every kernel's body gets after its family emitted it: the reads of
/// captured tensors (loadCapturedTensors) and, in bf16/f16 kernels with
/// approx-score-mod, the cheaper score arithmetic (approximateScoreMath;
/// docs/Semantics.md states its error).
static LogicalResult finishKernelBody(AttentionOpInterface op,
                                      const KernelPlan &plan,
                                      gpu::GPUFuncOp func) {
  if (failed(loadCapturedTensors(op, func)))
    return failure();
  if (plan.cfg.approxScoreMod && !plan.elementType.isF32())
    approximateScoreMath(func);
  return success();
}

LaunchShape KernelFamily::getLaunchShape(const KernelPlan &plan) const {
  return getTileGridShape(plan);
}

bool attnfuse::gpu_kernels::isWgmmaChip(StringRef chip) {
  return chip == "sm_90a";
}

namespace {
/// A chip LLVM 22's NVPTX backend targets from sm_75, and the oldest PTX ISA
/// (times 10) attnfuse compiles for it: the oldest NVPTX accepts (measured
/// with llc: it aborts below), except sm_90a's 8.1 (NVPTX takes 8.0), whose
/// wgmma backward adds dQ by vector reductions (red.global.add.v2.f32).
struct KnownChip {
  const char *name;
  unsigned minPtx;
};
constexpr KnownChip kKnownChips[] = {
    {"sm_75", 63},   {"sm_80", 70},   {"sm_86", 71},   {"sm_87", 74},
    {"sm_88", 90},   {"sm_89", 78},   {"sm_90", 78},   {"sm_90a", 81},
    {"sm_100", 86},  {"sm_100a", 86}, {"sm_100f", 88}, {"sm_101", 86},
    {"sm_101a", 86}, {"sm_101f", 88}, {"sm_103", 88},  {"sm_103a", 88},
    {"sm_103f", 88}, {"sm_110", 90},  {"sm_110a", 90}, {"sm_110f", 90},
    {"sm_120", 87},  {"sm_120a", 87}, {"sm_120f", 88}, {"sm_121", 88},
    {"sm_121a", 88}, {"sm_121f", 88},
};
} // namespace

std::optional<GpuChip> attnfuse::parseGpuChip(StringRef chip) {
  StringRef rest = chip;
  if (!rest.consume_front("sm_"))
    return std::nullopt;
  GpuChip parsed;
  if (rest.ends_with("a") || rest.ends_with("f")) {
    parsed.suffix = rest.back();
    rest = rest.drop_back();
  }
  unsigned number;
  if (rest.size() < 2 || rest.size() > 3 ||
      !llvm::all_of(rest, llvm::isDigit) || rest.getAsInteger(10, number))
    return std::nullopt;
  parsed.major = number / 10;
  parsed.minor = number % 10;
  return parsed;
}

std::string attnfuse::getUnsupportedChipReason(StringRef chip,
                                               StringRef features) {
  std::optional<GpuChip> parsed = parseGpuChip(chip);
  if (!parsed)
    return ("'" + chip +
            "' is not an NVIDIA GPU architecture (sm_<major><minor>, "
            "optionally with a or f: sm_80, sm_90a, ...)")
        .str();
  if (parsed->getNumber() < kOldestGpuChip)
    return (chip + " is older than sm_" + llvm::Twine(kOldestGpuChip) +
            ", the oldest chip the CUDA 13 toolkit (and attnfuse) targets")
        .str();
  const KnownChip *known = llvm::find_if(
      kKnownChips, [&](const KnownChip &k) { return chip == k.name; });
  if (known == std::end(kKnownChips)) {
    std::string names;
    for (const KnownChip &k : kKnownChips)
      names += (names.empty() ? "" : ", ") + std::string(k.name);
    return (chip + " is not a chip LLVM's NVPTX backend knows (" + names +
            ")")
        .str();
  }
  // The PTX ISA version that `features` asks for ("+ptx80": 80), if any.
  SmallVector<StringRef> parts;
  features.split(parts, ',');
  for (StringRef part : parts) {
    StringRef version = part.trim();
    unsigned ptx;
    if (!version.consume_front("+ptx") || version.getAsInteger(10, ptx))
      continue;
    if (ptx < known->minPtx)
      return (chip + " needs PTX ISA " + llvm::Twine(known->minPtx / 10) +
              "." + llvm::Twine(known->minPtx % 10) +
              " or newer, the features ask for " + llvm::Twine(ptx / 10) +
              "." + llvm::Twine(ptx % 10) + " ('" + features +
              "'): set features=+ptx" + llvm::Twine(known->minPtx))
          .str();
  }
  return "";
}

bool attnfuse::gpu_kernels::isMmaSyncChip(StringRef chip) {
  std::optional<GpuChip> parsed = parseGpuChip(chip);
  return parsed && parsed->getNumber() >= 80;
}

const KernelFamily *attnfuse::gpu_kernels::lookupKernelFamily(StringRef name,
                                                              StringRef chip) {
  if (name == "auto")
    return isWgmmaChip(chip) ? &getWgmmaFamily()
           : isMmaSyncChip(chip) ? &getMmaSyncFamily()
                             : &getSimtFamily();
  for (const KernelFamily *family :
       {&getWgmmaFamily(), &getMmaSyncFamily(), &getSimtFamily()})
    if (family->getName() == name)
      return family;
  return nullptr;
}

std::string attnfuse::gpu_kernels::getKernelFamilyNames() {
  return ("auto, " + getSimtFamily().getName() + ", " +
          getMmaSyncFamily().getName() + ", " + getWgmmaFamily().getName())
      .str();
}

int64_t attnfuse::sharedMemoryLimitForChip(StringRef chip) {
  if (chip.starts_with("sm_80") || chip.starts_with("sm_87"))
    return 163 * 1024;
  if (chip.starts_with("sm_86") || chip.starts_with("sm_89"))
    return 99 * 1024;
  return 227 * 1024;
}

int64_t attnfuse::multiprocessorCountForChip(StringRef chip) {
  if (chip.starts_with("sm_80"))
    return 108;
  if (chip.starts_with("sm_86"))
    return 84;
  if (chip.starts_with("sm_89"))
    return 142;
  return 132;
}

/// Refuses, with a located error, what the GPU kernels do not take yet:
/// runtime sizes, packed sequences, and per-batch key lengths in the
/// backward (the forward kernels take key lengths and paged K/V:
/// KernelPlan::keyLengths, blockTable; attn-expand-inference-operands
/// expresses the others through a keep mask).
static LogicalResult checkKernelOperands(AttentionOpInterface op) {
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<ShapedType>(v.getType()); t && !t.hasStaticShape())
      return op->emitOpError(
          "convert-attn-to-gpu needs static shapes: the GPU kernels take no "
          "runtime sizes yet (the CPU lowerings do)");
  bool backwardLengths =
      op.getKeyLengthsValue() && !isa<AttentionOp>(op.getOperation());
  if (backwardLengths || op.isPacked())
    return op->emitOpError()
           << "convert-attn-to-gpu: the GPU kernels take no "
           << (op.isPacked() ? "packed sequences (sequence_offsets)"
                             : "per-batch key lengths (key_lengths) in the "
                               "backward")
           << " (run attn-expand-inference-operands first, as "
              "attn-lower-to-nvvm-pipeline does)";
  return success();
}

/// pack-gqa (KernelPlan::queryPeriod): whether the forward `op` computes
/// over its K/V heads with the group's query rows as rows. Where a head's
/// rows fill tiles of 64 rows less than 0.9 times as well as its group's
/// (FlashAttention-3's rule: decode, speculative decoding; a packed tile
/// visits the keys of every position of the period, so long causal
/// prefill stays unpacked); its query heads must pack
/// (getGroupedQueryPackingBlocker, the mask kept per row), and Q and O must
/// have a row dimension over (query head, position): one query row, or Q
/// and O in [B, H, N, D] (not read or written through a permuted view,
/// whose rows of a head are H rows apart).
static bool packsGroupedQueries(AttentionOp op,
                                const AttentionKernelOptions &options) {
  auto filled = [](int64_t rows) {
    return static_cast<double>(rows) / llvm::alignTo(rows, 64);
  };
  const int64_t nq = op.getQueryLength();
  if (!options.packGqa ||
      !(filled(nq) < 0.9 * filled(op.getGroupSize() * nq)) ||
      !attn::getGroupedQueryPackingBlocker(op, /*keepsStructuralMask=*/true)
           .empty())
    return false;
  SmallVector<int64_t> perm;
  return nq == 1 ||
         (!permutedSource(op.getQuery().getDefiningOp(), perm) &&
          !hasPermutedUse(op.getOutput()));
}

/// Whether mma=auto takes the split mma_sync forward for `plan` (sizes,
/// multiprocessors, shared-memory limit) instead of the unsplit wgmma one:
/// where the mma_sync forward computes it and, its options resolved on
/// trial (its diagnostics dropped), splits the keys kMinAutomaticSplits
/// times or more (decode with too few tiles for the SMs; its own defaults
/// for the head dims and features decide).
static bool wantsKeySplits(const KernelPlan &plan,
                           const AttentionKernelOptions &options) {
  const KernelFamily &mmaSync = getMmaSyncFamily();
  KernelPlan trial = plan;
  if (!mmaSync.getUnsupportedReason(trial, options.chip).empty())
    return false;
  ScopedDiagnosticHandler drop(plan.op->getContext(),
                               [](Diagnostic &) { return success(); });
  return succeeded(mmaSync.resolveOptions(trial, options)) &&
         trial.kvSplits >= kMinAutomaticSplits;
}

/// The family for the kernel kind of `plan`: `family`, or the first of its
/// fallbacks that can compute it (a remark per fallback taken); null after a
/// located error.
static const KernelFamily *selectFamily(Operation *op,
                                        const KernelFamily *family,
                                        const KernelPlan &plan,
                                        StringRef chip) {
  for (std::string why = family->getUnsupportedReason(plan, chip); !why.empty();
       why = family->getUnsupportedReason(plan, chip)) {
    const KernelFamily *next = family->getFallback();
    if (!next) {
      op->emitOpError() << "convert-attn-to-gpu: mma=" << family->getName()
                        << " cannot compute it: " << why;
      return nullptr;
    }
    op->emitRemark() << "convert-attn-to-gpu: mma=" << family->getName()
                     << " falls back to " << next->getName() << ": " << why;
    family = next;
  }
  return family;
}

/// The gpu.func `name` of the kernel of `plan` (options resolved, no tensor
/// maps) in `gpuModule`, with its launch attributes, and its launch at the
/// insertion point of `b` with `operands` (named `names`, the roles of
/// getArgumentRoles in order).
static LogicalResult
buildKernelAndLaunch(OpBuilder &b, AttentionOpInterface op,
                     gpu::GPUModuleOp gpuModule, StringRef name,
                     const KernelFamily &family, KernelPlan &plan,
                     ArrayRef<Value> operands, ArrayRef<StringRef> names) {
  assert(plan.tensorMaps.empty() && "the host creates no tensor maps here");
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  LaunchShape shape = family.getLaunchShape(plan);
  if (shape.grid[0] > std::numeric_limits<int32_t>::max() ||
      shape.grid[1] > 65535 || shape.grid[2] > 65535)
    return op->emitOpError() << "convert-attn-to-gpu: the grid of " << name
                             << " (" << shape.grid[0] << ", " << shape.grid[1]
                             << ") exceeds CUDA's limits (2^31 - 1, 65535)";
  SmallVector<Type> argTypes;
  for (Value v : operands)
    argTypes.push_back(v.getType());
  OpBuilder kb = OpBuilder::atBlockEnd(gpuModule.getBody());
  auto func = gpu::GPUFuncOp::create(kb, loc, name,
                                     FunctionType::get(ctx, argTypes, {}),
                                     family.getWorkgroupBuffers(plan, ctx));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      DenseI32ArrayAttr::get(ctx, {static_cast<int32_t>(plan.threads), 1, 1}));
  func->setAttr("attn.grid", kb.getDenseI64ArrayAttr(shape.grid));
  func->setAttr("attn.block", kb.getDenseI64ArrayAttr(shape.block));
  func->setAttr("attn.args", kb.getStrArrayAttr(names));
  const AttentionKernelOptions &cfg = plan.cfg;
  func->setAttr("attn.config",
                kb.getDenseI64ArrayAttr(
                    {cfg.blockQ, cfg.blockK, cfg.threadsPerRow, cfg.chunk}));
  int64_t dynamicShared = family.getDynamicSharedBytes(plan);
  func->setAttr("attn.family", kb.getStringAttr(family.getName()));
  func->setAttr("attn.dynamic_shared", kb.getI64IntegerAttr(dynamicShared));
  family.emit(plan, func);
  if (failed(finishKernelBody(op, plan, func)))
    return failure();
  KB k{b, loc};
  auto dim3 = [&](ArrayRef<int64_t> v) {
    return gpu::KernelDim3{k.idx(v[0]), k.idx(v[1]), k.idx(v[2])};
  };
  Value dynamicSharedSize;
  if (dynamicShared > 0)
    dynamicSharedSize = arith::ConstantOp::create(
        b, loc, b.getI32IntegerAttr(static_cast<int32_t>(dynamicShared)));
  gpu::LaunchFuncOp::create(b, loc, func, dim3(shape.grid), dim3(shape.block),
                            dynamicSharedSize, operands);
  return success();
}

LogicalResult attnfuse::convertAttentionToGPU(
    AttentionOp op, Operation *gpuModuleOp, StringRef kernelName,
    const AttentionKernelOptions &options) {
  auto gpuModule = cast<gpu::GPUModuleOp>(gpuModuleOp);
  if (std::string why = getUnsupportedChipReason(options.chip); !why.empty())
    return op.emitOpError() << "convert-attn-to-gpu: chip " << why;
  const KernelFamily *family = lookupKernelFamily(options.mma, options.chip);
  if (!family)
    return op.emitOpError() << "convert-attn-to-gpu: unknown mma family '"
                            << options.mma << "' (" << getKernelFamilyNames()
                            << ")";
  if (failed(checkKernelOperands(op)))
    return failure();
  // The kernel's arguments are Q, K, V, bias, keep mask, seed and what the
  // score_mod region uses from above: statically shaped tensors (read with
  // tensor.extract) and scalars; the region is cloned into the kernel, with
  // its constants.
  SmallVector<Value> captures;
  if (op.hasScoreMod()) {
    for (Value capture : getScoreModCaptures(op.getScoreMod())) {
      auto tensor = dyn_cast<RankedTensorType>(capture.getType());
      if ((tensor && tensor.hasStaticShape()) ||
          capture.getType().isIntOrIndexOrFloat()) {
        captures.push_back(capture);
        continue;
      }
      InFlightDiagnostic diag =
          op.emitOpError()
          << "convert-attn-to-gpu: the score_mod region uses a value of type "
          << capture.getType()
          << " from outside it; a kernel takes statically shaped tensors and "
             "scalars";
      diag.attachNote(capture.getLoc()) << "it is defined here";
      return diag;
    }
  }
  KernelPlan plan;
  plan.kind = KernelKind::Forward;
  plan.op = op;
  plan.bias = op.getBias();
  plan.keepMask = op.getKeepMask();
  plan.seed = op.getSeed();
  plan.keyLengths = op.getKeyLengths();
  plan.blockTable = op.getBlockTable();
  plan.pageSize = op.getSizes().pageSize;
  plan.B = op.getBatchSize();
  plan.Hq = op.getNumQueryHeads();
  plan.Hkv = op.getNumKeyValueHeads();
  plan.Nq = op.getQueryLength();
  plan.Nk = op.getKeyLength();
  plan.D = op.getHeadDimQK();
  plan.Dv = op.getHeadDimV();
  plan.G = op.getGroupSize();
  plan.elementType = op.getQueryType().getElementType();
  if (!plan.elementType.isF16() && !plan.elementType.isBF16() &&
      !plan.elementType.isF32())
    return op.emitOpError("convert-attn-to-gpu supports f16, bf16 and f32");
  plan.window = op.getMaskWindow();
  plan.leftBounded = isWindowSideBounded(plan.window.left, plan.Nq, plan.Nk);
  plan.rightBounded = isWindowSideBounded(plan.window.right, plan.Nq, plan.Nk);
  plan.headsFastest = plan.rightBounded && !plan.leftBounded;
  plan.foldedScale = false;
  plan.captures = std::move(captures);
  // Packed grouped queries: the K/V heads' tiles hold their groups' rows.
  if (packsGroupedQueries(op, options)) {
    plan.queryPeriod = plan.Nq;
    plan.Nq *= plan.G;
    plan.Hq = plan.Hkv;
    plan.G = 1;
    // One query row that sees every key (what packGroupedQueries takes): no
    // mask at all, as that op-level packing leaves.
    if (attn::getGroupedQueryPackingBlocker(op).empty()) {
      plan.window = MaskWindow::none();
      plan.leftBounded = plan.rightBounded = plan.headsFastest = false;
    }
  }
  // The one option a family's getUnsupportedReason reads before the
  // options are resolved: only mma_sync splits the keys.
  plan.cfg.kvSplits = options.kvSplits;
  plan.multiprocessors = multiprocessorCountForChip(options.chip);
  plan.sharedLimit = options.sharedMemoryLimit > 0
                         ? options.sharedMemoryLimit
                         : sharedMemoryLimitForChip(options.chip);
  // mma=auto: decode with too few tiles for the SMs takes the forward that
  // splits the keys.
  if (options.mma == "auto" && family == &getWgmmaFamily() &&
      options.kvSplits != 1 && wantsKeySplits(plan, options))
    family = &getMmaSyncFamily();
  // A family that cannot compute the op hands it to its fallback (never a
  // wrong kernel), with a remark.
  family = selectFamily(op, family, plan, options.chip);
  if (!family)
    return failure();
  if (failed(family->resolveOptions(plan, options)))
    return failure();
  plan.tensorMaps = family->getTensorMaps(plan);
  const AttentionKernelOptions &cfg = plan.cfg;
  plan.numQB = llvm::divideCeil(plan.Nq, cfg.blockQ);
  plan.numKB = llvm::divideCeil(plan.Nk, cfg.blockK);
  if (options.reportCost)
    op.emitRemark() << describeKernelCost(
        getKernelCost(plan, options.peakTflops, options.peakGbps),
        kernelName, family->getName());
  // Grid x, y (see KernelPlan::headsFastest) within CUDA's limits.
  LaunchShape shape = family->getLaunchShape(plan);
  if (shape.grid[0] > std::numeric_limits<int32_t>::max() ||
      shape.grid[1] > 65535 || shape.grid[2] > 65535)
    return op.emitOpError() << "convert-attn-to-gpu: the grid ("
                            << shape.grid[0] << ", " << shape.grid[1]
                            << ") exceeds CUDA's limits (2^31 - 1, 65535)";

  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  KB k{b, loc};
  // Q, O, lse and the partials as the packed kernel sees them.
  auto packedView = [&](Value buffer) {
    return plan.queryPeriod
               ? groupedRowsView(b, loc, buffer, op.getGroupSize())
               : buffer;
  };

  // Host side: the kernel's arguments by role (the forward's: operands as
  // buffers, a scalar seed and scalar captures as values, O and lse
  // allocated), the tensor maps, the launch.
  SmallVector<Value> operands;
  SmallVector<StringRef> names;
  auto addBuffer = [&](Value tensor) {
    return bufferization::ToBufferOp::create(b, loc, memrefFor(tensor), tensor,
                                             /*readOnly=*/true)
        .getResult();
  };
  Value outBuf, lseBuf, outPartial, lsePartial, outPermuted;
  Operation *outPermutedUse = nullptr;
  // lse [B, Hq, Nq] f32; a split forward's partials have kvSplits * B rows
  // of O and lse, in f32 (in the op's shapes; the packed kernel's views).
  Type f32 = b.getF32Type();
  const int64_t Hq = op.getNumQueryHeads(), Nq = op.getQueryLength();
  auto lseType = MemRefType::get({plan.B, Hq, Nq}, f32);
  const Value *nextCapture = plan.captures.begin();
  for (ArgRole role : getArgumentRoles(plan)) {
    Value arg;
    switch (role) {
    case ArgRole::Q:
      arg = packedView(kernelInput(b, loc, op.getQuery()));
      break;
    case ArgRole::K:
      arg = kernelInput(b, loc, op.getKey());
      break;
    case ArgRole::V:
      arg = kernelInput(b, loc, op.getValue());
      break;
    case ArgRole::Bias:
      arg = addBuffer(op.getBias());
      break;
    case ArgRole::Keep:
      arg = addBuffer(op.getKeepMask());
      break;
    case ArgRole::Seed:
      arg = op.getSeed();
      break;
    case ArgRole::KeyLengths:
      arg = addBuffer(op.getKeyLengths());
      break;
    case ArgRole::BlockTable:
      arg = addBuffer(op.getBlockTable());
      break;
    case ArgRole::Capture: {
      Value capture = *nextCapture++;
      arg = isa<RankedTensorType>(capture.getType()) ? addBuffer(capture)
                                                      : capture;
      break;
    }
    case ArgRole::O:
      outBuf = kernelOutput(b, loc, op.getOutput(), memrefFor(op.getOutput()),
                            outPermutedUse, outPermuted);
      arg = packedView(outBuf);
      break;
    case ArgRole::Lse:
      lseBuf = memref::AllocOp::create(b, loc, lseType);
      arg = packedView(lseBuf);
      break;
    case ArgRole::OPartial:
      arg = outPartial = packedView(memref::AllocOp::create(
          b, loc,
          MemRefType::get({plan.kvSplits * plan.B, Hq, Nq, plan.Dv}, f32)));
      break;
    case ArgRole::LsePartial:
      arg = lsePartial = packedView(memref::AllocOp::create(
          b, loc, MemRefType::get({plan.kvSplits * plan.B, Hq, Nq}, f32)));
      break;
    case ArgRole::GradOut:
    case ArgRole::Di:
    case ArgRole::DqAccum:
    case ArgRole::Dq:
    case ArgRole::Dk:
    case ArgRole::Dv:
    case ArgRole::DBias:
    case ArgRole::DBiasAccum:
      llvm_unreachable("a backward role in the forward kernel");
    }
    operands.push_back(arg);
    names.push_back(getArgumentName(role));
  }
  // Tensor maps: created on the host by upstream's op (its lowering calls
  // the CUDA runtime wrappers' cuTensorMapEncodeTiled and copies the map to
  // the device); the kernel takes a pointer to it.
  SmallVector<Attribute> tensorMapAttrs;
  for (const TensorMapSpec &spec : plan.tensorMaps) {
    Value source = operands[spec.source];
    auto sourceType = cast<MemRefType>(source.getType());
    Value unranked = memref::CastOp::create(
        b, loc, UnrankedMemRefType::get(sourceType.getElementType(), 0),
        source);
    SmallVector<Value> box;
    for (int64_t d : spec.box)
      box.push_back(k.idx(d));
    auto descriptorType = nvgpu::TensorMapDescriptorType::get(
        ctx,
        MemRefType::get(
            spec.box, sourceType.getElementType(), MemRefLayoutAttrInterface(),
            gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup)),
        static_cast<nvgpu::TensorMapSwizzleKind>(
            tensorMapSwizzleCode(spec.swizzle)),
        static_cast<nvgpu::TensorMapL2PromoKind>(
            tensorMapL2PromotionCode(spec.l2Promotion)),
        nvgpu::TensorMapOOBKind::OOB_ZERO,
        nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
    Value descriptor = nvgpu::TmaCreateDescriptorOp::create(
        b, loc, descriptorType, unranked, box);
    tensorMapAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("argument", b.getI64IntegerAttr(operands.size())),
         b.getNamedAttr("source", b.getI64IntegerAttr(spec.source)),
         b.getNamedAttr("box", b.getDenseI64ArrayAttr(spec.box)),
         b.getNamedAttr("swizzle", b.getI64IntegerAttr(spec.swizzle)),
         b.getNamedAttr("l2_promotion",
                        b.getI64IntegerAttr(spec.l2Promotion))}));
    operands.push_back(UnrealizedConversionCastOp::create(
                           b, loc, LLVM::LLVMPointerType::get(ctx), descriptor)
                           .getResult(0));
    names.push_back(
        b.getStringAttr("tmap_" + names[spec.source].str()).getValue());
  }

  // The kernel.
  SmallVector<Type> argTypes;
  for (Value v : operands)
    argTypes.push_back(v.getType());
  OpBuilder kb = OpBuilder::atBlockEnd(gpuModule.getBody());
  auto func = gpu::GPUFuncOp::create(kb, loc, kernelName,
                                     FunctionType::get(ctx, argTypes, {}),
                                     family->getWorkgroupBuffers(plan, ctx));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      DenseI32ArrayAttr::get(ctx, {static_cast<int32_t>(plan.threads), 1, 1}));
  ArrayRef<int64_t> grid = shape.grid, block = shape.block;
  // ptxas otherwise caps registers to fit several CTAs per SM and spills.
  if (cfg.minCtasPerSM > 0)
    func->setAttr("nvvm.minctasm", kb.getI32IntegerAttr(cfg.minCtasPerSM));
  func->setAttr("attn.grid", kb.getDenseI64ArrayAttr(grid));
  func->setAttr("attn.block", kb.getDenseI64ArrayAttr(block));
  func->setAttr("attn.args", kb.getStrArrayAttr(names));
  // What a launcher needs to encode the tensor maps (the host's
  // nvgpu.tma.create.descriptor ops, for launchers that do not run the host
  // code: attnfuse-run, the C API's kernels, bench/extract_kernels.py).
  if (!tensorMapAttrs.empty())
    func->setAttr("attn.tensor_maps", kb.getArrayAttr(tensorMapAttrs));
  func->setAttr("attn.config",
                kb.getDenseI64ArrayAttr({cfg.blockQ, cfg.blockK,
                                         cfg.threadsPerRow, cfg.chunk}));
  int64_t dynamicShared = family->getDynamicSharedBytes(plan);
  func->setAttr("attn.family", kb.getStringAttr(family->getName()));
  func->setAttr("attn.dynamic_shared", kb.getI64IntegerAttr(dynamicShared));
  family->emit(plan, func);
  if (failed(finishKernelBody(op, plan, func)))
    return failure();

  auto dim3 = [&](ArrayRef<int64_t> v) {
    return gpu::KernelDim3{k.idx(v[0]), k.idx(v[1]), k.idx(v[2])};
  };
  Value dynamicSharedSize;
  if (dynamicShared > 0)
    dynamicSharedSize = arith::ConstantOp::create(
        b, loc, b.getI32IntegerAttr(static_cast<int32_t>(dynamicShared)));
  gpu::LaunchFuncOp::create(b, loc, func, dim3(grid), dim3(block),
                            dynamicSharedSize, operands);

  // Split keys: the simt family's combine kernel writes O and lse from the
  // partials.
  if (plan.kvSplits > 1) {
    KernelPlan combine = plan;
    combine.kind = KernelKind::ForwardCombine;
    combine.tensorMaps.clear();
    const KernelFamily &simt = getSimtFamily();
    if (failed(simt.resolveOptions(combine, options)))
      return failure();
    outBuf = kernelOutput(b, loc, op.getOutput(), memrefFor(op.getOutput()),
                          outPermutedUse, outPermuted);
    lseBuf = memref::AllocOp::create(b, loc, lseType);
    SmallVector<Value> combineOperands = {outPartial, lsePartial,
                                          packedView(outBuf),
                                          packedView(lseBuf)};
    SmallVector<StringRef> combineNames;
    for (ArgRole role : getArgumentRoles(combine))
      combineNames.push_back(getArgumentName(role));
    if (failed(buildKernelAndLaunch(b, op, gpuModule,
                                    (kernelName + "_combine").str(), simt,
                                    combine, combineOperands, combineNames)))
      return failure();
  }

  SmallVector<Value> buffers = {outBuf}, permuted = {outPermuted};
  SmallVector<Operation *> uses = {outPermutedUse};
  if (op.getLse()) {
    buffers.push_back(lseBuf);
    permuted.push_back(Value());
    uses.push_back(nullptr);
  }
  replaceByBuffers(b, loc, op, buffers, uses, permuted);
  return success();
}

LogicalResult attnfuse::convertAttentionBackwardToGPU(
    AttentionBackwardOp op, Operation *gpuModuleOp, StringRef kernelName,
    const AttentionKernelOptions &options) {
  auto gpuModule = cast<gpu::GPUModuleOp>(gpuModuleOp);
  const KernelFamily *family = lookupKernelFamily(options.mma, options.chip);
  if (!family)
    return op.emitOpError()
           << "convert-attn-to-gpu: unknown mma family '" << options.mma
           << "' (" << getKernelFamilyNames() << ")";
  if (failed(checkKernelOperands(op)))
    return failure();
  // The derivative of the score_mod region (buildScoreModWithDerivative)
  // clones constants from above into the kernel, nothing else.
  if (!op.getScoreMod().empty()) {
    SetVector<Value> captures = getScoreModCaptures(op.getScoreMod());
    if (!captures.empty()) {
      InFlightDiagnostic diag =
          op.emitOpError()
          << "convert-attn-to-gpu: the backward kernels do not support a "
             "score_mod region that uses values from outside it other than "
             "constants (here a value of type "
          << captures.front().getType() << ")";
      diag.attachNote(captures.front().getLoc()) << "it is defined here";
      return diag;
    }
  }
  RankedTensorType qType = op.getQueryType(), kType = op.getKeyType(),
                   vType = op.getValueType();
  KernelPlan plan;
  plan.kind = KernelKind::Backward;
  plan.op = op;
  plan.bias = op.getBias();
  plan.keepMask = op.getKeepMask();
  plan.seed = op.getSeed();
  plan.biasGrad = static_cast<bool>(op.getGradBias());
  plan.B = qType.getDimSize(0);
  plan.Hq = qType.getDimSize(1);
  plan.Hkv = kType.getDimSize(1);
  plan.Nq = qType.getDimSize(2);
  plan.Nk = kType.getDimSize(2);
  plan.D = qType.getDimSize(3);
  plan.Dv = vType.getDimSize(3);
  plan.G = plan.Hq / plan.Hkv;
  plan.elementType = qType.getElementType();
  if (!plan.elementType.isF16() && !plan.elementType.isBF16() &&
      !plan.elementType.isF32())
    return op.emitOpError("convert-attn-to-gpu supports f16, bf16 and f32");
  if (plan.biasGrad && cast<ShapedType>(plan.bias.getType()).getRank() == 0)
    return op.emitOpError(
        "convert-attn-to-gpu: the kernels take the gradient of a bias of "
        "rank 1 to 4, not of a scalar");
  // A broadcast bias's gradient sums by f32 atomics, in no fixed order.
  if (options.deterministic &&
      getBiasGradient(plan) == BiasGradient::Accumulate)
    return op.emitOpError()
           << "convert-attn-to-gpu: deterministic=true cannot compute the "
              "gradient of a broadcast bias ("
           << op.getBias().getType()
           << " for scores [B, Hq, Nq, Nk] = [" << plan.B << ", " << plan.Hq
           << ", " << plan.Nq << ", " << plan.Nk
           << "]): its sums use atomics; pass the bias expanded to the "
              "scores' shape, or deterministic=false";
  plan.window = op.getMaskWindow();
  plan.leftBounded = isWindowSideBounded(plan.window.left, plan.Nq, plan.Nk);
  plan.rightBounded = isWindowSideBounded(plan.window.right, plan.Nq, plan.Nk);
  plan.headsFastest = false;
  plan.foldedScale = false;
  // The one option a family's getUnsupportedReason reads before the
  // options are resolved: deterministic mode needs the kinds of its dQ.
  plan.cfg.deterministic = options.deterministic;
  family = selectFamily(op, family, plan, options.chip);
  if (!family)
    return failure();
  plan.sharedLimit = options.sharedMemoryLimit > 0
                         ? options.sharedMemoryLimit
                         : sharedMemoryLimitForChip(options.chip);
  plan.multiprocessors = multiprocessorCountForChip(options.chip);
  if (failed(family->resolveOptions(plan, options)))
    return failure();
  plan.numQB = llvm::divideCeil(plan.Nq, plan.cfg.blockQ);
  plan.numKB = llvm::divideCeil(plan.Nk, plan.cfg.blockK);
  // The pre-pass and the last kernel (the dQ conversion, or in
  // deterministic mode the dQ kernel): the same plan, their own kinds.
  bool deterministic = plan.cfg.deterministic;
  KernelPlan pre = plan, last = plan;
  pre.kind = KernelKind::BackwardPre;
  last.kind = deterministic ? KernelKind::BackwardDQ
                            : KernelKind::BackwardConvert;
  for (KernelPlan *p : {&pre, &last}) {
    if (!family->getUnsupportedReason(*p, options.chip).empty() ||
        failed(family->resolveOptions(*p, options)))
      return op.emitOpError()
             << "convert-attn-to-gpu: mma=" << family->getName()
             << " has the backward but not its pre-pass or "
                "last dQ kernel";
    p->numQB = plan.numQB;
    p->numKB = plan.numKB;
  }

  OpBuilder b(op);
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  auto addBuffer = [&](Value tensor) {
    return bufferization::ToBufferOp::create(b, loc, memrefFor(tensor), tensor,
                                             /*readOnly=*/true)
        .getResult();
  };
  auto alloc = [&](ArrayRef<int64_t> shape, Type type) {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, type))
        .getResult();
  };
  DenseMap<ArgRole, Value> buffers;
  buffers[ArgRole::Q] = kernelInput(b, loc, op.getQuery());
  buffers[ArgRole::K] = kernelInput(b, loc, op.getKey());
  buffers[ArgRole::V] = kernelInput(b, loc, op.getValue());
  buffers[ArgRole::O] = kernelInput(b, loc, op.getOutput());
  buffers[ArgRole::Lse] = addBuffer(op.getLse());
  buffers[ArgRole::GradOut] = kernelInput(b, loc, op.getGradOutput());
  if (plan.bias)
    buffers[ArgRole::Bias] = addBuffer(plan.bias);
  if (plan.keepMask)
    buffers[ArgRole::Keep] = addBuffer(plan.keepMask);
  if (plan.seed)
    buffers[ArgRole::Seed] = plan.seed;
  buffers[ArgRole::Di] = alloc({plan.B, plan.Hq, plan.Nq}, f32);
  if (!deterministic)
    buffers[ArgRole::DqAccum] = alloc({plan.B, plan.Hq, plan.Nq, plan.D}, f32);
  // The gradients, each in the layout of its only permuted use if any.
  Operation *uses[4] = {};
  Value permuted[4];
  buffers[ArgRole::Dk] =
      kernelOutput(b, loc, op.getGradKey(), memrefFor(op.getGradKey()),
                   uses[1], permuted[1]);
  buffers[ArgRole::Dv] =
      kernelOutput(b, loc, op.getGradValue(), memrefFor(op.getGradValue()),
                   uses[2], permuted[2]);
  // grad_bias: stored, or summed into an f32 accumulator (dBias itself for
  // an f32 bias) that the conversion rounds.
  if (plan.biasGrad) {
    buffers[ArgRole::DBias] =
        kernelOutput(b, loc, op.getGradBias(), memrefFor(op.getGradBias()),
                     uses[3], permuted[3]);
    if (getBiasGradient(plan) == BiasGradient::Accumulate)
      buffers[ArgRole::DBiasAccum] =
          convertsBiasGradient(plan)
              ? alloc(cast<ShapedType>(plan.bias.getType()).getShape(), f32)
              : buffers[ArgRole::DBias];
  }
  // Without a conversion (f32, atomics) the accumulator is dQ (contiguous;
  // a permuted dQ takes the conversion).
  bool launchesLast = deterministic || plan.elementType != f32 ||
                      hasPermutedUse(op.getGradQuery()) ||
                      convertsBiasGradient(plan);
  buffers[ArgRole::Dq] =
      launchesLast ? kernelOutput(b, loc, op.getGradQuery(),
                                  memrefFor(op.getGradQuery()), uses[0],
                                  permuted[0])
                   : buffers[ArgRole::DqAccum];

  auto launch = [&](KernelPlan &p, StringRef suffix) {
    SmallVector<Value> operands;
    SmallVector<StringRef> names;
    for (ArgRole role : getArgumentRoles(p)) {
      operands.push_back(buffers.lookup(role));
      names.push_back(getArgumentName(role));
    }
    std::string name = (kernelName + suffix).str();
    if (options.reportCost)
      op.emitRemark() << describeKernelCost(
          getKernelCost(p, options.peakTflops, options.peakGbps), name,
          family->getName());
    return buildKernelAndLaunch(b, op, gpuModule, name, *family, p, operands,
                                names);
  };
  if (failed(launch(pre, "_bwd_pre")) || failed(launch(plan, "_bwd")) ||
      (launchesLast &&
       failed(launch(last, deterministic ? "_bwd_dq_ordered" : "_bwd_dq"))))
    return failure();

  SmallVector<Value> results = {buffers[ArgRole::Dq], buffers[ArgRole::Dk],
                                buffers[ArgRole::Dv]};
  if (plan.biasGrad)
    results.push_back(buffers[ArgRole::DBias]);
  replaceByBuffers(b, loc, op, results,
                   ArrayRef<Operation *>(uses).take_front(results.size()),
                   ArrayRef<Value>(permuted).take_front(results.size()));
  return success();
}

namespace {
struct ConvertAttnToGPUPass
    : AttentionKernelCommandLine<
          attnfuse::impl::ConvertAttnToGPUBase<ConvertAttnToGPUPass>> {
  using AttentionKernelCommandLine::AttentionKernelCommandLine;
  /// The kernels end in gpu-module-to-binary: make sure the translations to
  /// LLVM IR and the NVVM target are known to the context whatever tool runs
  /// this pass.
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerGPUDialectTranslation(registry);
    registerNVVMDialectTranslation(registry);
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionBackwardOp>(op))
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    MLIRContext *ctx = &getContext();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), moduleName);
    SymbolTable symbols(module);
    symbols.insert(gpuModule);
    AttentionKernelOptions options = getKernelOptions();
    unsigned n = 0;
    for (Operation *op : ops) {
      std::string name = (kernelPrefix + "_" + std::to_string(n++));
      LogicalResult converted =
          isa<AttentionOp>(op)
              ? convertAttentionToGPU(cast<AttentionOp>(op), gpuModule, name,
                                      options)
              : convertAttentionBackwardToGPU(cast<AttentionBackwardOp>(op),
                                              gpuModule, name, options);
      if (failed(converted))
        return signalPassFailure();
    }
  }
};
} // namespace

std::unique_ptr<Pass>
attnfuse::createConvertAttnToGPUPass(const AttentionKernelOptions &options) {
  auto pass = std::make_unique<ConvertAttnToGPUPass>();
  pass->setKernelOptions(options);
  return pass;
}
