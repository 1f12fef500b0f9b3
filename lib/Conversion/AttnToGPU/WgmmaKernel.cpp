//===- WgmmaKernel.cpp - the sm_90a wgmma instruction family --------------===//
//
// The Hopper (sm_90a) variant of the fused forward kernel, FlashAttention-3's
// structure; the products are warpgroup-wide asynchronous MMAs
// (wgmma.mma_async). docs/GPU.md describes it; in short:
//
//   CTA = a producer warpgroup and W = warps / 4 consumer warpgroups (2 or
//   3) of 64 query rows each (BQ = 64 W), as the two branches of one if on
//   the (warp-uniform) warpgroup index, each starting with setmaxnreg
//   (RegisterSplit). The grid is persistent: each CTA walks tiles (query
//   block, batch * head) in the order of the other families' grid, so the
//   producer loads the next tile's Q and K/V while the consumers finish the
//   last (forEachTile; the K/V ring and the Q barriers run on across tiles).
//   The producer loads Q per tile, once the consumers freed it (Q empty
//   mbarrier), and the K and V blocks of BK keys into a ring of S stages, in
//   the swizzled layouts wgmma reads (TileLayout): by TMA, one thread
//   issuing a tile's boxes from the tensor maps the kernel takes (the full
//   mbarrier completes on the bytes), or, with tma=false and for head dims
//   that are not multiples of 8, by cp.async of the warpgroup, each copy
//   signalling the full mbarrier as it lands
//   (cp.async.mbarrier.arrive.noinc); it refills a stage's K (V) once every
//   consumer thread arrived on its K (V) empty mbarrier.
//   A consumer warpgroup, per key block j: waits for K_j (after cp.async
//   also fence.proxy.async: those copies are generic-proxy writes, wgmma
//   reads through the async proxy), issues S_j = Q K_j^T (nvvm.wgmma.mma_async,
//   both operands in shared memory, K-major) and O += P_{j-1} V_{j-1}
//   (register-A wgmma, inline PTX: MLIR 22 has none; V N-major), waits for
//   S_j alone, frees K_j, runs the softmax of block j while P V runs, waits
//   for it, frees V_{j-1} and rescales O. Its turn to issue products comes
//   on named barriers after the previous consumer's (ping-pong). The first
//   block's S and the last block's P V are peeled off.
//   Each warp's share of a wgmma m64nN accumulator is the m16n8 fragment
//   layout of mma.sync, so the per-element scores, masks, online softmax
//   (log2 domain, lazy rescale) and epilogue are Fragments.h's; the P of a
//   k-step is the A fragment of the register-A wgmma as of mma.sync.
//   wgmma.wait_group is inline PTX that takes and returns the accumulators
//   ("+f"), so that no read of them moves above the wait.
//
//   Head dims are padded to the k step of 16 with zeros in shared memory
//   (exact; padded O columns are not stored).
//
//===----------------------------------------------------------------------===//
#include "Fragments.h"
#include "KernelFamily.h"
#include "Staging.h"

#include "attnfuse/Dialect/Attn/Utils/ScoreUtils.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/FormatVariadic.h"

#include <array>
#include <limits>
#include <tuple>

using namespace mlir;
using namespace attnfuse;
using namespace attnfuse::gpu_kernels;

namespace {
/// The producer warpgroup's threads.
constexpr int64_t kProducerThreads = 128;
/// The SMs of the sm_90a GPUs the default persistent grid is for (H100 SXM,
/// H200, GH200); on one with fewer (H100 PCIe: 114) the CTAs past its count
/// run as a second wave, correct but slower: set persistent-ctas.
constexpr int64_t kSmsOfWgmmaChips = 132;
/// Registers per thread of the producer and of the consumer warpgroups
/// (setmaxnreg). The CTA's pool is what it launched with: 65536 / threads,
/// rounded down to 8 (168 x 384 threads, 128 x 512); setmaxnreg.inc waits
/// until the pool has the registers, so a split beyond it hangs the
/// consumers.
struct RegisterSplit {
  int64_t producer, consumer;
};
constexpr RegisterSplit registerSplit(int64_t consumers) {
  return consumers == 2 ? RegisterSplit{40, 232} : RegisterSplit{32, 160};
}
constexpr bool fitsPool(int64_t consumers) {
  int64_t threads = 128 * (consumers + 1);
  RegisterSplit s = registerSplit(consumers);
  return 128 * s.producer + 128 * consumers * s.consumer <=
         (65536 / threads) / 8 * 8 * threads;
}
static_assert(fitsPool(2) && fitsPool(3),
              "the register split exceeds the CTA's pool");

/// A tile of `lines` rows of a row-major source (Q, K or V), each of
/// `lineBytes` bytes, as wgmma reads it from shared memory: cut along the
/// row into panels of `panel` bytes (the swizzle width: 128, 64 or 32), a
/// panel holding its slice of every line, `panel` bytes apart, and panels
/// panelStride() apart. The 16-byte chunks of a line are permuted by the
/// swizzle: chunk c at byte offset x goes to c ^ ((x >> 7) & (panel / 16 -
/// 1)); the hardware applies it to shared-memory address bits, so tiles
/// start at 1024-byte boundaries. Q and K are K-major operands (the head dim
/// is the reduction), V an N-major one (its rows are P V's reduction).
struct TileLayout {
  int64_t lines, lineBytes, panel;
  TileLayout(int64_t lines, int64_t lineBytes)
      : lines(lines), lineBytes(lineBytes), panel(lineBytes % 128 == 0  ? 128
                                                  : lineBytes % 64 == 0 ? 64
                                                                        : 32) {}
  int64_t bytes() const { return lines * lineBytes; }
  int64_t panelStride() const { return lines * panel; }
  /// The byte offset of 16-byte chunk `chunk` of line `line`.
  Value chunkOffset(KB &e, Value line, Value chunk) const {
    int64_t perPanel = panel / 16;
    Value lineBase = e.mul(line, e.idx(panel));
    Value swizzle = e.remu(e.divu(lineBase, 128), perPanel);
    Value inPanel =
        arith::XOrIOp::create(e.b, e.loc, e.remu(chunk, perPanel), swizzle);
    return e.add(
        e.add(e.mul(e.divu(chunk, perPanel), e.idx(panelStride())), lineBase),
        e.mul(inPanel, e.idx(16)));
  }
  /// The byte offset of element `col` (2 bytes) of line `line`.
  Value elementOffset(KB &e, Value line, Value col) const {
    return e.add(chunkOffset(e, line, e.divu(col, 8)),
                 e.mul(e.remu(col, 8), e.idx(2)));
  }
  /// The offset of the operand of k-step ks (16 elements of 2 bytes) from
  /// the tile's start: K-major, 32 bytes along the lines; N-major, 16 lines.
  int64_t kStepOffset(int64_t ks, bool nMajor) const {
    if (nMajor)
      return 16 * ks * panel;
    return (32 * ks / panel) * panelStride() + (32 * ks) % panel;
  }
  /// The matrix descriptor's fields besides the start address (PTX ISA,
  /// "Matrix Descriptor Format"): the leading dimension byte offset (unused
  /// by K-major swizzled layouts; between panels when N-major), the stride
  /// byte offset (between groups of 8 lines) and the swizzle mode.
  uint64_t descriptorBits(bool nMajor) const {
    uint64_t mode = panel == 128 ? 1 : panel == 64 ? 2 : 3;
    uint64_t lbo = nMajor ? panelStride() : 16, sbo = 8 * panel;
    return (((lbo >> 4) & 0x3FFF) << 16) | (((sbo >> 4) & 0x3FFF) << 32) |
           (mode << 62);
  }
};

/// Whether the producer loads Q, K and V by TMA: the tma option, and rows
/// whose strides are multiples of 16 bytes (TMA's global strides).
static bool loadsByTma(const KernelPlan &plan) {
  return plan.cfg.tma && plan.D % 8 == 0 && plan.Dv % 8 == 0;
}
/// The bias's type where it has all four dims [B or 1, H or 1, Nq or 1,
/// Nk or 1]; null without a bias or with a lower-rank one.
static ShapedType fullRankBiasType(const KernelPlan &plan) {
  AttentionOp op = plan.op;
  Value bias = op.getBias();
  if (!bias)
    return {};
  auto type = cast<ShapedType>(bias.getType());
  return type.getRank() == 4 ? type : ShapedType();
}

/// Whether the bias is one per head, the same for every batch element (a
/// [1, H, Nq, Nk] bias; B > 1, no GQA): then the tiles of one head's batch
/// elements run together (forEachTile), so that they read the same bias
/// tiles, mostly from L2, instead of heads of one batch element, which
/// read different ones from memory. (GQA keeps heads fastest: a group's
/// heads share K/V that way; a bias the same for every head is shared by
/// heads running together already.)
static bool sharesBiasAcrossBatch(const KernelPlan &plan) {
  ShapedType type = fullRankBiasType(plan);
  return type && plan.B > 1 && plan.G == 1 && type.getDimSize(0) == 1 &&
         type.getDimSize(1) == plan.Hq;
}

/// Whether the producer stages the bias tile of each key block by TMA (with
/// the block's V, in the tile layout of TileLayout: the consumers read
/// their pairs of keys from shared memory, a warp's 8 rows of 16 bytes from
/// 8 distinct bank groups, where from global memory each such load touched
/// 8 lines): TMA loads, a bias of the operands' element type of shape
/// [B or 1, H or 1, Nq, Nk], Nk a multiple of 8 (16-byte rows) and of
/// block-k (with a key tail ptxas spilled 200 bytes at d = 128).
static bool stagesBias(const KernelPlan &plan) {
  ShapedType type = fullRankBiasType(plan);
  return type && loadsByTma(plan) && type.getDimSize(2) == plan.Nq &&
         type.getDimSize(3) == plan.Nk &&
         type.getElementType() == plan.elementType && plan.Nk % 8 == 0 &&
         plan.Nk % plan.cfg.blockK == 0;
}

/// Whether the consumers store O by TMA (resolveOptions turns tma-store off
/// where the staging tile does not fit).
static bool storesByTma(const KernelPlan &plan) {
  return loadsByTma(plan) && plan.cfg.tmaStore;
}

/// Bytes of dynamic shared memory: 1024 of slack to align the tiles, the
/// Q buffers, the K stages, the V stages, [the bias stages,] [O's staging
/// tile or slot unless it is the Q buffer's,] then the mbarriers of the
/// pipeline.
struct SharedLayout {
  TileLayout q, k, v, o, bias;
  int64_t qBuffers, stages;
  /// Whether the bias goes through shared memory (stagesBias: a tile of
  /// block-q rows and block-k keys per stage, after the V stages).
  bool stagedBias;
  /// Whether O goes through shared memory (the tile `o`) to TMA stores.
  bool stagedOutput;
  /// Whether O's staging tile lies in the Q buffer: with one CTA per tile,
  /// Q is not loaded again, and a warpgroup's Q rows are dead once its last
  /// S is done; with panels of Q's width and no more of them, each
  /// warpgroup's O rows fall on its own Q rows. Else after the other tiles.
  bool outputInQ;
  /// Whether O's staging is a slot of one warpgroup's 64 rows, which the
  /// consumer warpgroups take in turns (waitTurn, passTurn): where the whole
  /// tile does not fit beside the others (a persistent grid at d = 256).
  bool outputSlot = false;
  explicit SharedLayout(const KernelPlan &plan)
      : q(16 * plan.cfg.warps, 2 * paddedHeadDim(plan.D)),
        k(plan.cfg.blockK, 2 * paddedHeadDim(plan.D)),
        v(plan.cfg.blockK, 2 * paddedHeadDim(plan.Dv)),
        o(16 * plan.cfg.warps, 2 * paddedHeadDim(plan.Dv)),
        bias(16 * plan.cfg.warps, 2 * plan.cfg.blockK),
        qBuffers(plan.cfg.qBuffers), stages(plan.cfg.stages),
        stagedBias(stagesBias(plan)), stagedOutput(storesByTma(plan)),
        outputInQ(stagedOutput && plan.cfg.persistentCtas < 0 &&
                  o.panel == q.panel && o.lineBytes <= q.lineBytes) {
    if (stagedOutput && !outputInQ && total() > plan.sharedLimit) {
      outputSlot = true;
      o = TileLayout(64, o.lineBytes);
    }
  }
  int64_t qStride() const { return llvm::alignTo(q.bytes(), 1024); }
  int64_t kOffset() const { return qBuffers * qStride(); }
  int64_t kStage() const { return llvm::alignTo(k.bytes(), 1024); }
  int64_t vOffset() const { return kOffset() + stages * kStage(); }
  int64_t vStage() const { return llvm::alignTo(v.bytes(), 1024); }
  int64_t biasOffset() const { return vOffset() + stages * vStage(); }
  int64_t biasStage() const { return llvm::alignTo(bias.bytes(), 1024); }
  /// The end of the Q, K, V and bias tiles.
  int64_t inputsEnd() const {
    return biasOffset() + (stagedBias ? stages * biasStage() : 0);
  }
  int64_t oOffset() const { return outputInQ ? 0 : inputsEnd(); }
  /// The mbarriers (8 bytes each), by index: Q full of each Q buffer, then
  /// K full, V full, K empty and V empty of each stage, then Q empty of
  /// each Q buffer; the first index of each kind.
  int64_t barrierOffset() const {
    return inputsEnd() +
           (stagedOutput && !outputInQ ? llvm::alignTo(o.bytes(), 1024) : 0);
  }
  int64_t qFull() const { return 0; }
  int64_t kFull() const { return qBuffers; }
  int64_t vFull() const { return qBuffers + stages; }
  int64_t kEmpty() const { return qBuffers + 2 * stages; }
  int64_t vEmpty() const { return qBuffers + 3 * stages; }
  int64_t qEmpty() const { return qBuffers + 4 * stages; }
  int64_t total() const {
    return 1024 + barrierOffset() + 8 * (2 * qBuffers + 4 * stages);
  }
};

class WgmmaEmitter : KernelArgs {
public:
  WgmmaEmitter(KernelPlan &plan, OpBuilder &b, Location loc,
               ArrayRef<BlockArgument> args)
      : KernelArgs(plan, args), plan(plan), b(b), loc(loc), k{b, loc},
        layout(plan), kBK(plan.cfg.blockK), kThreads(plan.threads),
        kStages(plan.cfg.stages), tail(plan.Nk % plan.cfg.blockK != 0),
        tma(!plan.tensorMaps.empty()),
        batchFastest(sharesBiasAcrossBatch(plan)) {
    elt = plan.elementType;
  }
  void emit();

private:
  /// Loads rows row0 + [0, tile.lines) of operand `source` (0: Q, 1: K, 2:
  /// V; 3: the bias, staged by TMA only) of head `h`, their first `width`
  /// columns, into the tile at byte `offset` of the shared buffer and
  /// signals the full mbarrier `full` as they land: by TMA, one copy per
  /// panel issued by this thread (rows past the operand's end and the
  /// padding columns read as zeros), or by cp.async of the producer
  /// warpgroup (copyRows; rows clamped to `lastRow` when given). The bias's
  /// columns start at `col0` and its batch index is `batch` (the tile's
  /// otherwise).
  void loadTile(KB &e, unsigned source, Value h, Value row0, Value lastRow,
                int64_t width, const TileLayout &tile, Value offset, Value full,
                Value col0 = Value(), Value batch = Value());
  /// cp.async by the producer warpgroup of rows row0 + [0, lines) of `src`
  /// (clamped to `lastRow` when given) of head `h`, their first `width`
  /// columns, into the tile `tile` at element offset `base` of the shared
  /// buffer.
  void copyRows(KB &e, Value src, Value h, Value row0, Value lastRow,
                int64_t width, const TileLayout &tile, Value base);
  /// copyRows for a head dim that is not a multiple of 8 (its rows are not
  /// 16-byte aligned): element by element, by loads and shared-memory
  /// stores.
  void copyElements(KB &e, Value src, Value h, Value row0, Value lastRow,
                    int64_t width, const TileLayout &tile, Value base);
  /// Signals the full mbarrier `index` once this thread's copies of rows of
  /// `width` elements (copyRows) landed.
  void signalFull(KB &e, Value index, int64_t width);
  /// Zeros of the padding columns [width, 16-aligned) of every line of
  /// `count` tiles `tile`, `stride` bytes apart from byte `offset`.
  void zeroPadding(const TileLayout &tile, int64_t width, int64_t offset,
                   int64_t count, int64_t stride);
  /// The i64 matrix descriptor of a tile at `address` (a shared-memory
  /// byte address) with the fields of `bits`.
  Value descriptor(KB &e, Value address, uint64_t bits);
  /// `desc` moved by `bytes` (its start address is in 16-byte units).
  Value advance(KB &e, Value desc, Value bytes);
  /// S (struct of n / 2 f32) = A B (+ S unless `first`), both operands
  /// from shared memory, K-major.
  Value wgmmaShared(KB &e, Value acc, Value descA, Value descB, int64_t n,
                    bool first);
  /// acc += P V, P four operand registers, V N-major from shared memory.
  SmallVector<Value> wgmmaRegisterA(KB &e, ArrayRef<Value> acc,
                                    ArrayRef<Value> a, Value descB);
  /// The producer warpgroup's body (setmaxnreg to `registers`).
  void emitProducer(OpBuilder &pb, int64_t registers);
  /// The consumer warpgroups' body (setmaxnreg to `registers`) and the
  /// epilogue.
  void emitConsumers(OpBuilder &cb, Value wgAll, int64_t registers);
  /// The query rows and key blocks of one tile, and its place among the
  /// CTA's tiles (0, 1, ...: the phase of the Q barriers).
  struct Tile {
    Value q0, kbBegin, kbEnd, round;
  };
  /// A consumer thread's constants: its warpgroup (0-based), its lane's
  /// group g and thread t in the quad (t2 = 2t), its warp's first row in
  /// the tile, and the base descriptors of Q, K and V.
  struct ConsumerThread {
    Value wg, g, t, t2, warpRow0, qDesc, kDesc, vDesc;
  };
  /// One tile of the consumers: its products, online softmax and epilogue.
  /// `ring` is the number of K/V blocks the consumers went through before
  /// it; returns the number after it.
  Value emitConsumerTile(KB &c, const Tile &tl, Value ring,
                         const ConsumerThread &th);
  /// The epilogue through shared memory (SharedLayout::stagedOutput): the
  /// warpgroup's O rows (storeOutputs' pairs; `state` and `rows` as there)
  /// into its rows of the staging tile (or the slot, in its turn), then one
  /// TMA store per panel by its first thread, which the next tile's
  /// epilogue waits for (read) before writing the rows again (with the
  /// slot: waited for at once, then the turn passes on).
  void storeStagedOutputs(KB &c, const Tile &tl, ArrayRef<Value> state,
                          ArrayRef<Value> rows, const ConsumerThread &th);
  /// Turns among the consumer warpgroups, cyclically, on named barriers
  /// `first` + w (bar.sync by warpgroup w's 128 threads, bar.arrive by the
  /// previous one's): waitTurn waits for this warpgroup `wg`'s turn,
  /// passTurn gives it to the next. The ping-pong's turns start at
  /// kPingPongBarrier, those of O's staging slot (SharedLayout::outputSlot)
  /// at outputSlotBarrier().
  void waitTurn(KB &c, int64_t first, Value wg);
  void passTurn(KB &c, int64_t first, Value wg);
  /// Gives warpgroup 0 the first turn (by the last warpgroup, at the start).
  void giveFirstTurn(KB &c, int64_t first);
  static constexpr int64_t kPingPongBarrier = 1;
  /// After the ping-pong's barriers and each warpgroup's own (1 + consumers
  /// + w).
  int64_t outputSlotBarrier() const { return 1 + 2 * (plan.cfg.warps / 4); }
  /// Whether the persistent grid walks units of two query blocks of a head
  /// (forEachTile) rather than every head's tiles longest first.
  bool walksUnits() const;
  /// Whether the tile has a key block: signed, since the range's end is
  /// negative when a window shows the tile's rows no key at all (Nq > Nk,
  /// bottom-right); unsigned, it would wrap, and the consumers would wait
  /// for a block the producer never loads.
  Value hasBlocks(KB &e, const Tile &tl);
  /// The ring position after the tile's key blocks, for a tile whose block
  /// kb sits at ring position kb - `kbBase`.
  Value ringAfter(KB &e, const Tile &tl, Value kbBase);
  /// Emits a loop over the CTA's tiles (a snake over rounds of gridDim.x
  /// tiles, in the one-CTA-per-tile grid's order, see KB::tileCoordinates;
  /// causal-like masks where walksUnits: pairs of one head's query blocks)
  /// with loop-carried `init`: `body` gets the tile, whose bi, hi and kvh
  /// it sets, and the carried values, and yields the next ones.
  SmallVector<Value> forEachTile(
      KB &e, ValueRange init,
      function_ref<SmallVector<Value>(KB &, const Tile &, ValueRange)> body);
  /// The Q buffer of the CTA's tile `round` (round mod q-buffers), and how
  /// many tiles used that buffer before it (the phase of its barriers).
  Value qBuffer(KB &e, Value round);
  Value qUse(KB &e, Value round);
  /// The mbarrier `index` (SharedLayout::qFull ...) as a shared-memory
  /// pointer.
  Value barrier(KB &e, Value index);
  /// The shared-memory address of mbarrier `index` (barrier's).
  Value barrierAddress(KB &e, Value index);
  Value i32Constant(KB &e, int64_t v);
  /// An index as i32 (instruction operands: barrier ids, coordinates,
  /// 32-bit shared-memory addresses).
  Value toI32(KB &e, Value v);
  /// mbarrier.try_wait.parity on barrier `index` until the phase of
  /// `parity` completed.
  void waitBarrier(KB &e, Value index, Value parity);
  /// fence.proxy.async.shared::cta: this thread's generic-proxy writes
  /// (cp.async, stores) before the tensor cores' async-proxy reads.
  void proxyFence(KB &e);
  /// Waits on the full barrier `index` (waitBarrier) for a tile the
  /// tensor cores read next: cp.async's copies then need a proxyFence, TMA's
  /// are async-proxy writes already.
  void waitLanded(KB &e, Value index, Value parity);
  /// wgmma.wait_group `pending`, the accumulators `acc` through it.
  SmallVector<Value> waitGroup(KB &e, ArrayRef<Value> acc, int pending = 0);

  KernelPlan &plan;
  OpBuilder &b;
  Location loc;
  KB k;
  SharedLayout layout;
  Type elt;
  /// The current tile's batch, head and K/V head (set by forEachTile).
  Value bi, hi, kvh;
  Value tid, buf, bufAddress;
  /// Keys per block, threads of the CTA, K/V pipeline stages.
  const int64_t kBK, kThreads, kStages;
  /// Whether the keys end in a partial block; whether the producer loads by
  /// TMA (the kernel takes tensor maps of Q, K and V: loadsByTma); whether
  /// the tiles' (batch, head) index walks the batch fastest
  /// (sharesBiasAcrossBatch).
  const bool tail, tma, batchFastest;
};

/// Emits `fn` under scf.if `cond`.
static void ifThen(KB &e, Value cond, function_ref<void(KB &)> fn) {
  scf::IfOp::create(e.b, e.loc, cond, [&](OpBuilder &nb, Location nl) {
    KB x{nb, nl};
    fn(x);
    scf::YieldOp::create(nb, nl);
  });
}

/// Inline PTX (AT&T dialect, with side effects) of `operands` under
/// `constraints`; its result (null for a `result` type of none).
static Value inlinePtx(KB &e, Type result, ValueRange operands,
                       StringRef asmString, StringRef constraints) {
  auto op = LLVM::InlineAsmOp::create(
      e.b, e.loc, result ? TypeRange(result) : TypeRange(), operands, asmString,
      constraints, /*has_side_effects=*/true,
      /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(e.b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  return result ? op.getResult(0) : Value();
}

static Value isEqual(KB &e, Value x, int64_t c) {
  return arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::eq, x,
                               e.idx(c));
}

void WgmmaEmitter::loadTile(KB &e, unsigned source, Value h, Value row0,
                            Value lastRow, int64_t width,
                            const TileLayout &tile, Value offset, Value full,
                            Value col0, Value batch) {
  if (!tma) {
    assert(source < 3 && "the bias is staged by TMA only");
    copyRows(e, std::array<Value, 3>{q, key, value}[source], h, row0, lastRow,
             width, tile, e.divu(offset, 2));
    signalFull(e, full, width);
    return;
  }
  // The barrier completes once the bytes of every box landed (the boxes'
  // out-of-bounds elements count).
  NVVM::MBarrierArriveExpectTxOp::create(
      e.b, e.loc, Type(), barrier(e, full), i32Constant(e, tile.bytes()),
      NVVM::MemScopeKind::CTA, /*relaxed=*/false, Value());
  // A box is one panel of the tile (TensorMapSpec of getTensorMaps);
  // coordinates innermost first: column, row, head, batch. Inline PTX with
  // 32-bit shared-memory addresses: MLIR 22's
  // nvvm.cp.async.bulk.tensor.shared.cluster.global takes a 64-bit
  // shared::cluster pointer, and the producer thread, at 32 registers
  // (setmaxnreg), then spilled (8 bytes at d = 64, 3 consumer warpgroups).
  Value fullAddress = toI32(e, barrierAddress(e, full));
  for (int64_t p = 0; p < tile.lineBytes / tile.panel; ++p) {
    Value dst = toI32(
        e, e.add(bufAddress, e.add(offset, e.idx(p * tile.panelStride()))));
    Value col = col0 ? toI32(e, e.add(col0, e.idx(p * tile.panel / 2)))
                     : i32Constant(e, p * tile.panel / 2);
    inlinePtx(e, Type(),
              {dst, tensorMapArgs[source], col, toI32(e, row0), toI32(e, h),
               toI32(e, batch ? batch : bi), fullAddress},
              "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::"
              "complete_tx::bytes [$0], [$1, {$2, $3, $4, $5}], [$6];",
              "r,l,r,r,r,r,r,~{memory}");
  }
}

void WgmmaEmitter::copyRows(KB &e, Value src, Value h, Value row0,
                            Value lastRow, int64_t width,
                            const TileLayout &tile, Value base) {
  // A line's `perRow` 16-byte chunks go to `slots` (a power of two)
  // threads, the ones past perRow idle: thread tid copies chunk tid % slots
  // of lines tid / slots + it * step. Its chunk is the same in every round,
  // and when step is a multiple of 8 lines (the swizzle's period) so is the
  // swizzle: its offset grows by step * panel. The rounds are a loop: the
  // producer runs with few registers.
  const int64_t threads = kProducerThreads;
  if (width % 8 != 0) {
    copyElements(e, src, h, row0, lastRow, width, tile, base);
    return;
  }
  int64_t perRow = width / 8, slots = llvm::PowerOf2Ceil(perRow);
  int64_t step = threads / slots, fullRounds = tile.lines / step;
  Value chunk = e.remu(tid, slots), line0 = e.divu(tid, slots);
  Value offset0 = tile.chunkOffset(e, line0, chunk);
  auto copy = [&](KB &x, Value it) {
    Value lines = x.mul(it, x.idx(step));
    Value line = x.add(line0, lines);
    Value offset = step % 8 == 0
                       ? x.add(offset0, x.mul(lines, x.idx(tile.panel)))
                       : tile.chunkOffset(x, line, chunk);
    Value row = x.add(row0, line);
    if (lastRow)
      row = x.min(row, lastRow);
    nvgpu::DeviceAsyncCopyOp::create(
        x.b, x.loc, nvgpu::DeviceAsyncTokenType::get(x.b.getContext()), buf,
        ValueRange{x.add(base, x.divu(offset, 2))}, src,
        ValueRange{bi, h, row, x.mul(chunk, x.idx(8))}, x.b.getIndexAttr(8),
        /*srcElements=*/Value(), /*bypassL1=*/x.b.getUnitAttr());
  };
  auto rounds = [&](KB &x) {
    if (fullRounds > 0)
      scf::ForOp::create(x.b, x.loc, x.idx(0), x.idx(fullRounds), x.idx(1),
                         ValueRange{},
                         [&](OpBuilder &lb, Location ll, Value it, ValueRange) {
                           KB y{lb, ll};
                           copy(y, it);
                           scf::YieldOp::create(lb, ll);
                         });
    if (tile.lines % step != 0)
      scf::IfOp::create(
          x.b, x.loc,
          x.ult(x.add(line0, x.idx(fullRounds * step)), x.idx(tile.lines)),
          [&](OpBuilder &nb, Location nl) {
            KB y{nb, nl};
            copy(y, y.idx(fullRounds));
            scf::YieldOp::create(nb, nl);
          });
  };
  if (slots == perRow) {
    rounds(e);
    return;
  }
  scf::IfOp::create(e.b, e.loc, e.ult(chunk, e.idx(perRow)),
                    [&](OpBuilder &nb, Location nl) {
                      KB y{nb, nl};
                      rounds(y);
                      scf::YieldOp::create(nb, nl);
                    });
}

void WgmmaEmitter::copyElements(KB &e, Value src, Value h, Value row0,
                                Value lastRow, int64_t width,
                                const TileLayout &tile, Value base) {
  forEachElement(
      e, tid, kProducerThreads, tile.lines * width, [&](KB &y, Value flat) {
        Value line = y.divu(flat, width), col = y.remu(flat, width);
        Value row = y.add(row0, line);
        if (lastRow)
          row = y.min(row, lastRow);
        Value v = memref::LoadOp::create(y.b, y.loc, src,
                                         ValueRange{bi, h, row, col});
        Value bytes = tile.elementOffset(y, line, col);
        memref::StoreOp::create(y.b, y.loc, v, buf,
                                ValueRange{y.add(base, y.divu(bytes, 2))});
      });
}

void WgmmaEmitter::signalFull(KB &e, Value index, int64_t width) {
  if (width % 8 == 0)
    NVVM::CpAsyncMBarrierArriveOp::create(e.b, e.loc, barrier(e, index),
                                          /*noinc=*/true);
  else
    NVVM::MBarrierArriveOp::create(e.b, e.loc, Type(), barrier(e, index),
                                   Value());
}

void WgmmaEmitter::zeroPadding(const TileLayout &tile, int64_t width,
                               int64_t offset, int64_t count, int64_t stride) {
  // The chunks from the one that holds column `width` to the padded dim's
  // last (width itself when it is a multiple of 8); the copies write only
  // the columns below `width`.
  int64_t firstChunk = width / 8, chunks = tile.lineBytes / 16 - firstChunk;
  if (2 * width == tile.lineBytes)
    return;
  auto zeros = VectorType::get({8}, elt);
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(zeros, b.getZeroAttr(elt)));
  forEachItem(k, tid, kThreads, count * tile.lines * chunks,
              [&](KB &x, int64_t it) -> Value {
                Value flat = x.add(tid, x.idx(it * kThreads));
                Value chunk = x.add(x.idx(firstChunk), x.remu(flat, chunks));
                Value n = x.divu(flat, tile.lines * chunks);
                Value line = x.remu(x.divu(flat, chunks), tile.lines);
                Value bytes =
                    x.add(x.add(x.idx(offset), x.mul(n, x.idx(stride))),
                          tile.chunkOffset(x, line, chunk));
                vector::StoreOp::create(
                    x.b, x.loc, zero, buf, ValueRange{x.divu(bytes, 2)},
                    /*nontemporal=*/false, llvm::MaybeAlign(16));
                return Value();
              });
}

Value WgmmaEmitter::descriptor(KB &e, Value address, uint64_t bits) {
  Type i64 = e.b.getI64Type();
  auto c = [&](uint64_t v) {
    return arith::ConstantOp::create(
        e.b, e.loc, e.b.getI64IntegerAttr(static_cast<int64_t>(v)));
  };
  Value a = arith::IndexCastUIOp::create(e.b, e.loc, i64, address);
  a = arith::AndIOp::create(
      e.b, e.loc, arith::ShRUIOp::create(e.b, e.loc, a, c(4)), c(0x3FFF));
  return arith::OrIOp::create(e.b, e.loc, a, c(bits));
}

Value WgmmaEmitter::advance(KB &e, Value desc, Value bytes) {
  Value units = arith::IndexCastUIOp::create(e.b, e.loc, e.b.getI64Type(),
                                             e.divu(bytes, 16));
  return arith::AddIOp::create(e.b, e.loc, desc, units);
}

Value WgmmaEmitter::wgmmaShared(KB &e, Value acc, Value descA, Value descB,
                                int64_t n, bool first) {
  MLIRContext *ctx = e.b.getContext();
  auto t = elt.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  return NVVM::WgmmaMmaAsyncOp::create(
      e.b, e.loc, acc.getType(), acc, descA, descB,
      NVVM::MMAShapeAttr::get(ctx, 64, n, 16),
      NVVM::WGMMATypesAttr::get(ctx, t), NVVM::WGMMATypesAttr::get(ctx, t),
      NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
      NVVM::WGMMAScaleOutAttr::get(ctx, first ? NVVM::WGMMAScaleOut::zero
                                              : NVVM::WGMMAScaleOut::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
      NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col),
      /*satfinite=*/NVVM::MMAIntOverflowAttr());
}

/// The f32 values of an LLVM struct, and a struct of f32 values.
static SmallVector<Value> unpack(KB &e, Value s, int64_t n) {
  SmallVector<Value> v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(LLVM::ExtractValueOp::create(e.b, e.loc, s, i));
  return v;
}
static Type f32Struct(MLIRContext *ctx, int64_t n) {
  return LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(n, Float32Type::get(ctx)));
}

/// Inline PTX with the accumulators `acc` as "+f" operands (outputs tied
/// to inputs) followed by `extra` inputs of `extraConstraints`.
static SmallVector<Value> accumulatorAsm(KB &e, StringRef asmString,
                                         ArrayRef<Value> acc,
                                         ArrayRef<Value> extra,
                                         StringRef extraConstraints) {
  int64_t n = acc.size();
  std::string constraints;
  for (int64_t i = 0; i < n; ++i)
    constraints += "=f,";
  for (int64_t i = 0; i < n; ++i)
    constraints += std::to_string(i) + ",";
  constraints += extraConstraints;
  if (!constraints.empty() && constraints.back() == ',')
    constraints.pop_back();
  SmallVector<Value> operands(acc);
  operands.append(extra.begin(), extra.end());
  return unpack(e,
                inlinePtx(e, f32Struct(e.b.getContext(), n), operands,
                          asmString, constraints),
                n);
}

SmallVector<Value> WgmmaEmitter::waitGroup(KB &e, ArrayRef<Value> acc,
                                           int pending) {
  return accumulatorAsm(
      e, ("wgmma.wait_group.sync.aligned " + Twine(pending) + ";").str(), acc,
      {}, "");
}

SmallVector<Value> WgmmaEmitter::wgmmaRegisterA(KB &e, ArrayRef<Value> acc,
                                                ArrayRef<Value> a,
                                                Value descB) {
  int64_t n = acc.size();
  std::string d;
  for (int64_t i = 0; i < n; ++i)
    d += (i ? ", $" : "$") + std::to_string(i);
  // Operands: accumulators 0 .. n-1 (tied n .. 2n-1), A 2n .. 2n+3, B 2n+4;
  // scale-d is a predicate (true: accumulate), V is N-major (imm-trans-b).
  std::string asmString = llvm::formatv(
      "{{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n{0}k16.f32.{1}.{1} {{{2}}, "
      "{{${3}, ${4}, ${5}, ${6}}, ${7}, p, 1, 1, 1;\n}\n",
      2 * n, elt.isBF16() ? "bf16" : "f16", d, 2 * n, 2 * n + 1, 2 * n + 2,
      2 * n + 3, 2 * n + 4);
  SmallVector<Value> extra;
  Type i32 = e.b.getI32Type();
  for (Value reg : a) {
    if (reg.getType() != i32) {
      auto one = VectorType::get({1}, i32);
      reg = vector::ExtractOp::create(
          e.b, e.loc, vector::BitCastOp::create(e.b, e.loc, one, reg), 0);
    }
    extra.push_back(reg);
  }
  extra.push_back(descB);
  return accumulatorAsm(e, asmString, acc, extra, "r,r,r,r,l");
}

Value WgmmaEmitter::barrierAddress(KB &e, Value index) {
  return e.add(e.add(bufAddress, e.idx(layout.barrierOffset())),
               e.mul(index, e.idx(8)));
}

Value WgmmaEmitter::barrier(KB &e, Value index) {
  Value i64 = arith::IndexCastUIOp::create(e.b, e.loc, e.b.getI64Type(),
                                           barrierAddress(e, index));
  return LLVM::IntToPtrOp::create(
      e.b, e.loc, LLVM::LLVMPointerType::get(e.b.getContext(), 3), i64);
}

Value WgmmaEmitter::i32Constant(KB &e, int64_t v) {
  return arith::ConstantOp::create(e.b, e.loc, e.b.getI32IntegerAttr(v));
}

Value WgmmaEmitter::toI32(KB &e, Value v) {
  return arith::IndexCastUIOp::create(e.b, e.loc, e.b.getI32Type(), v);
}

void WgmmaEmitter::waitBarrier(KB &e, Value index, Value parity) {
  NVVM::MBarrierTryWaitParityOp::create(e.b, e.loc, barrier(e, index),
                                        toI32(e, parity),
                                        i32Constant(e, 10000000));
}

void WgmmaEmitter::proxyFence(KB &e) {
  NVVM::FenceProxyOp::create(
      e.b, e.loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(e.b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

void WgmmaEmitter::waitLanded(KB &e, Value index, Value parity) {
  waitBarrier(e, index, parity);
  if (!tma)
    proxyFence(e);
}

Value WgmmaEmitter::qBuffer(KB &e, Value round) {
  return layout.qBuffers == 1 ? e.idx(0) : e.remu(round, layout.qBuffers);
}

Value WgmmaEmitter::qUse(KB &e, Value round) {
  return layout.qBuffers == 1 ? round : e.divu(round, layout.qBuffers);
}

bool WgmmaEmitter::walksUnits() const {
  if (!plan.headsFastest || plan.numQB % 2 != 0)
    return false;
  if (plan.Nq <= 1024)
    return true;
  // Heads fastest, longest first (forEachTile's other walk) puts every
  // head's K/V in flight at once: at d = 64, 4k, causal the tiles read
  // them from DRAM at 54% of its bandwidth (ncu), and the H200, at its
  // 700 W limit, ran the SMs at 1.61 GHz against 1.78 with the units
  // (cuDNN 1.82). Timed alternately, the units: d = 64 4k +6.2%, d = 128
  // 4k / 16k +9.7% / +3.7%, d = 72 / 80 / 96 4k +1.3 / +3.3 / +9.1%, GQA
  // 8k +4.3%, d = 64 16k -1.6%; a softcap (computed scores, bound by
  // their arithmetic) -5.7%. At 1k they pay with every feature (+6.5 to
  // +13%).
  AttentionOp op = plan.op;
  return !op.getSeed() && !op.hasScoreMod();
}

Value WgmmaEmitter::hasBlocks(KB &e, const Tile &tl) {
  return arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::slt,
                               tl.kbBegin, tl.kbEnd);
}

Value WgmmaEmitter::ringAfter(KB &e, const Tile &tl, Value kbBase) {
  return e.sub(e.select(hasBlocks(e, tl), tl.kbEnd, tl.kbBegin), kbBase);
}

SmallVector<Value> WgmmaEmitter::forEachTile(
    KB &e, ValueRange init,
    function_ref<SmallVector<Value>(KB &, const Tile &, ValueRange)> body) {
  const int64_t kBQ = 16 * plan.cfg.warps;
  const int64_t tiles = plan.numQB * plan.B * plan.Hq;
  auto tileBody = [&](KB &x, Value qb, Value by, Value round, ValueRange iter) {
    if (batchFastest) {
      bi = x.remu(by, plan.B);
      hi = x.divu(by, plan.B);
    } else {
      bi = x.divu(by, plan.Hq);
      hi = x.remu(by, plan.Hq);
    }
    kvh = x.divu(hi, plan.G);
    Tile tl;
    tl.round = round;
    tl.q0 = x.mul(qb, x.idx(kBQ));
    std::tie(tl.kbBegin, tl.kbEnd) = x.keyBlockRange(
        plan, tl.q0, x.min(x.idx(kBQ), x.sub(x.idx(plan.Nq), tl.q0)), kBK);
    return body(x, tl, iter);
  };
  Value cta = gpu::BlockIdOp::create(e.b, e.loc, gpu::Dimension::x);
  // One tile per CTA: no loop (nothing carried across it for ptxas).
  if (plan.cfg.persistentCtas < 0) {
    auto [qb, by] = e.tileCoordinates(plan, cta);
    return tileBody(e, qb, by, e.idx(0), init);
  }
  Value grid = gpu::GridDimOp::create(e.b, e.loc, gpu::Dimension::x);
  // The loop over rounds: `tileOf` gives this CTA's tile of a round (an
  // index), `inRange` whether it has one, `coordinates` its query block and
  // batch * head (computed where it has one).
  auto loopOver = [&](Value rounds, function_ref<Value(KB &, Value)> tileOf,
                      function_ref<Value(KB &, Value)> inRange,
                      function_ref<std::pair<Value, Value>(KB &, Value, Value)>
                          coordinates) {
    return scf::ForOp::create(
               e.b, e.loc, e.idx(0), rounds, e.idx(1), init,
               [&](OpBuilder &lb, Location ll, Value round, ValueRange iter) {
                 KB x{lb, ll};
                 Value tile = tileOf(x, round);
                 auto inRangeIf = scf::IfOp::create(lb, ll, TypeRange(init),
                                                    inRange(x, tile),
                                                    /*withElseRegion=*/true);
                 OpBuilder tb = inRangeIf.getThenBodyBuilder();
                 KB y{tb, ll};
                 auto [qb, by] = coordinates(y, tile, round);
                 scf::YieldOp::create(tb, ll, tileBody(y, qb, by, round, iter));
                 OpBuilder eb = inRangeIf.getElseBodyBuilder();
                 scf::YieldOp::create(eb, ll, iter);
                 scf::YieldOp::create(lb, ll, inRangeIf.getResults());
               })
        .getResults();
  };
  if (walksUnits()) {
    // Causal-like masks, an even number of query blocks: unit u of
    // (batch * head) u / P, P = numQB / 2, is its query blocks numQB - 1 - j
    // and j (j = u mod P: numQB + 1 key blocks in all for a causal mask),
    // one after the other on one CTA (rounds 2m and 2m + 1 of CTA c: unit
    // m G + c). Every unit is the same work, and the CTAs running together
    // take a few heads' units, which share their K/V in L2 (walksUnits says
    // where it pays).
    const int64_t half = plan.numQB / 2, units = tiles / 2;
    Value rounds = e.mul(
        arith::DivUIOp::create(e.b, e.loc, e.add(e.idx(units - 1), grid), grid),
        e.idx(2));
    return loopOver(
        rounds,
        [&](KB &x, Value round) {
          return x.add(x.mul(x.divu(round, 2), grid), cta);
        },
        [&](KB &x, Value unit) { return x.ult(unit, x.idx(units)); },
        [&](KB &x, Value unit, Value round) {
          Value j = x.remu(unit, half);
          Value second = x.ult(x.idx(0), x.remu(round, 2));
          return std::make_pair(
              x.select(second, j, x.sub(x.idx(plan.numQB - 1), j)),
              x.divu(unit, half));
        });
  }
  // Round r takes tiles [r G, r G + G) (G CTAs), CTA c the c-th of them in
  // even rounds and the (G - 1 - c)-th in odd ones: the tiles come longest
  // first, and the snake evens out what round robin would give the low CTAs
  // in every round (-14% at d = 128, 16k, causal).
  Value rounds =
      arith::DivUIOp::create(e.b, e.loc, e.add(e.idx(tiles - 1), grid), grid);
  return loopOver(
      rounds,
      [&](KB &x, Value round) {
        Value odd = x.ult(x.idx(0), x.remu(round, 2));
        Value pos = x.select(odd, x.sub(x.sub(grid, x.idx(1)), cta), cta);
        return x.add(x.mul(round, grid), pos);
      },
      [&](KB &x, Value tile) { return x.ult(tile, x.idx(tiles)); },
      [&](KB &x, Value tile, Value) { return x.tileCoordinates(plan, tile); });
}

// The producer warpgroup: Q, then K and V of each block into the stage
// ring: a stage's K (V) is refilled once every consumer thread arrived on
// its K (V) empty barrier; each copy signals its full barrier as it
// lands.
void WgmmaEmitter::emitProducer(OpBuilder &pb, int64_t registers) {
  const TileLayout &qt = layout.q, &kt = layout.k, &vt = layout.v;
  int64_t D = plan.D, Dv = plan.Dv;
  KB top{pb, loc};
  NVVM::SetMaxRegisterOp::create(pb, loc, registers,
                                 NVVM::SetMaxRegisterAction::decrease);
  // Carried: the K/V blocks loaded so far (the next block's place in the
  // ring).
  auto tiles = [&](KB &p) {
    forEachTile(
        p, ValueRange{p.idx(0)},
        [&](KB &x, const Tile &tl, ValueRange iter) -> SmallVector<Value> {
          Value kbBase = x.sub(tl.kbBegin, iter[0]);
          // Q into its buffer once the consumers are done with the tile's
          // that was there (its S).
          Value qb = qBuffer(x, tl.round);
          ifThen(x, x.ult(x.idx(layout.qBuffers - 1), tl.round), [&](KB &y) {
            waitBarrier(y, y.add(y.idx(layout.qEmpty()), qb),
                        y.remu(y.sub(qUse(y, tl.round), y.idx(1)), 2));
          });
          loadTile(x, 0, hi, tl.q0, x.idx(plan.Nq - 1), D, qt,
                   x.mul(qb, x.idx(layout.qStride())),
                   x.add(x.idx(layout.qFull()), qb));
          scf::ForOp::create(
              x.b, x.loc, tl.kbBegin, tl.kbEnd, x.idx(1), ValueRange{},
              [&](OpBuilder &lb, Location ll, Value kb, ValueRange) {
                KB e{lb, ll};
                Value i = e.sub(kb, kbBase);
                Value stage = e.remu(i, kStages), round = e.divu(i, kStages);
                auto waitEmpty = [&](int64_t first) {
                  ifThen(e, e.ult(e.idx(kStages - 1), i), [&](KB &y) {
                    waitBarrier(y, y.add(y.idx(first), stage),
                                y.remu(y.sub(round, y.idx(1)), 2));
                  });
                };
                Value k0 = e.mul(kb, e.idx(kBK));
                Value last = tail ? e.idx(plan.Nk - 1) : Value();
                // Rows k0 .. of `src` into the stage of the tile at `offset`,
                // once its `empty` barrier allows; signals `full` as the
                // copies land.
                auto fill = [&](unsigned source, int64_t width,
                                const TileLayout &tile, int64_t offset,
                                int64_t stageBytes, int64_t full,
                                int64_t empty) {
                  waitEmpty(empty);
                  loadTile(
                      e, source, kvh, k0, last, width, tile,
                      e.add(e.idx(offset), e.mul(stage, e.idx(stageBytes))),
                      e.add(e.idx(full), stage));
                };
                fill(1, D, kt, layout.kOffset(), layout.kStage(),
                     layout.kFull(), layout.kEmpty());
                fill(2, Dv, vt, layout.vOffset(), layout.vStage(),
                     layout.vFull(), layout.vEmpty());
                // The block's bias tile with its V (the same full and empty
                // barriers: the consumers read it after S, and are done
                // with it once they freed V).
                if (layout.stagedBias) {
                  SmallVector<Value> at =
                      e.broadcastIndices(bias, {bi, hi, tl.q0, k0});
                  loadTile(e, 3, at[1], at[2], Value(), 0, layout.bias,
                           e.add(e.idx(layout.biasOffset()),
                                 e.mul(stage, e.idx(layout.biasStage()))),
                           e.add(e.idx(layout.vFull()), stage), at[3], at[0]);
                }
                scf::YieldOp::create(lb, ll);
              });
          return {ringAfter(x, tl, kbBase)};
        });
  };
  if (!tma) {
    tiles(top);
    // No copy outlives the producer.
    NVVM::CpAsyncWaitGroupOp::create(pb, loc, 0);
    return;
  }
  // TMA: one thread issues every copy (the barriers complete on the bytes,
  // not on arrivals); the tensor maps are fetched ahead of the first.
  ifThen(top, isEqual(top, tid, 0), [&](KB &x) {
    for (Value map : tensorMapArgs)
      NVVM::PrefetchOp::create(x.b, x.loc, NVVM::PrefetchCacheLevelAttr(),
                               NVVM::CacheEvictionPriorityAttr(), map, Value(),
                               /*tensormap=*/true);
    tiles(x);
  });
}

// The consumer warpgroups (`wgAll`: the warpgroup index, 1 ..).
void WgmmaEmitter::emitConsumers(OpBuilder &ob, Value wgAll,
                                 int64_t registers) {
  const int64_t consumers = plan.cfg.warps / 4;
  const TileLayout &qt = layout.q, &kt = layout.k, &vt = layout.v;
  KB top{ob, loc};
  NVVM::SetMaxRegisterOp::create(ob, loc, registers,
                                 NVVM::SetMaxRegisterAction::increase);
  ConsumerThread th;
  th.wg = top.sub(wgAll, top.idx(1));
  Value warp = top.remu(top.divu(tid, 32), 4);
  Value lane = top.remu(tid, 32);
  th.g = top.divu(lane, 4);
  th.t = top.remu(lane, 4);
  th.t2 = top.mul(th.t, top.idx(2));
  th.warpRow0 =
      top.add(top.mul(th.wg, top.idx(64)), top.mul(warp, top.idx(16)));
  // Descriptors: Q of the warpgroup's 64 rows; K and V of stage 0.
  th.qDesc = descriptor(
      top, top.add(bufAddress, top.mul(th.wg, top.idx(64 * qt.panel))),
      qt.descriptorBits(/*nMajor=*/false));
  th.kDesc = descriptor(top, top.add(bufAddress, top.idx(layout.kOffset())),
                        kt.descriptorBits(/*nMajor=*/false));
  th.vDesc = descriptor(top, top.add(bufAddress, top.idx(layout.vOffset())),
                        vt.descriptorBits(/*nMajor=*/true));
  // The last warpgroup lets the first one take the first turn (ping-pong,
  // emitConsumerTile).
  ifThen(top, isEqual(top, th.wg, consumers - 1), [&](KB &x) {
    giveFirstTurn(x, kPingPongBarrier);
    // And the staging slot's first turn to the first warpgroup.
    if (layout.outputSlot)
      giveFirstTurn(x, outputSlotBarrier());
  });
  // Carried across tiles: the K/V blocks consumed so far (the next block's
  // place in the ring).
  forEachTile(top, ValueRange{top.idx(0)},
              [&](KB &c, const Tile &tl, ValueRange iter) {
                return SmallVector<Value>{emitConsumerTile(c, tl, iter[0], th)};
              });
  // The last O stores complete before the CTA (its shared memory) ends.
  if (layout.stagedOutput)
    ifThen(top, isEqual(top, top.remu(tid, 128), 0), [&](KB &x) {
      NVVM::CpAsyncBulkWaitGroupOp::create(x.b, x.loc, 0, UnitAttr());
    });
}

Value WgmmaEmitter::emitConsumerTile(KB &c, const Tile &tl, Value ring,
                                     const ConsumerThread &th) {
  int64_t Dp = paddedHeadDim(plan.D), Dvp = paddedHeadDim(plan.Dv);
  const int64_t consumers = plan.cfg.warps / 4, kBQ = 64 * consumers;
  const FragmentLayout sl{1, kBK / 8}, ol{1, Dvp / 8};
  const TileLayout &qt = layout.q, &kt = layout.k, &vt = layout.v;
  MLIRContext *ctx = b.getContext();
  Value wg = th.wg, g = th.g, t = th.t, t2 = th.t2, warpRow0 = th.warpRow0;
  Value kDesc = th.kDesc, vDesc = th.vDesc;
  // The tile's Q buffer.
  Value qBuf = qBuffer(c, tl.round);
  Value qDesc = advance(c, th.qDesc, c.mul(qBuf, c.idx(layout.qStride())));

  // Ping-pong between the consumer warpgroups (named barriers 1 ..
  // consumers): a warpgroup issues its products only after the previous one
  // (cyclically) issued its own, so that one's softmax runs while the
  // other's products do. Barrier 1 + w counts warpgroup w's 128 threads
  // (bar.sync) and its predecessor's (bar.arrive); the last warpgroup lets
  // the first one start (emitConsumers). Below: waitTurn and passTurn on
  // kPingPongBarrier around each block's products.

  // The thread's rows (g and g + 8 of its warp's m16 tile of its
  // warpgroup's 64 rows), Q once it landed, then the key blocks.
  OpBuilder &cb = c.b;
  Value q0 = tl.q0, kbBegin = tl.kbBegin, kbEnd = tl.kbEnd;
  Value kbBase = c.sub(kbBegin, ring);
  SmallVector<Value> rows, rowsC;
  for (int64_t r = 0; r < 2; ++r) {
    Value row = c.add(c.add(q0, warpRow0), c.add(g, c.idx(8 * r)));
    rows.push_back(row);
    rowsC.push_back(c.min(row, c.idx(plan.Nq - 1)));
  }
  waitLanded(c, c.add(c.idx(layout.qFull()), qBuf),
             c.remu(qUse(c, tl.round), 2));

  const ScoreScaling scaling(plan.op);
  const int64_t kP = kBK / 16;
  // Block kb's place in the ring.
  auto stageOf = [&](KB &e, Value kb) {
    return e.remu(e.sub(kb, kbBase), kStages);
  };
  auto parityOf = [&](KB &e, Value kb) {
    return e.remu(e.divu(e.sub(kb, kbBase), kStages), 2);
  };
  // Issues S = Q K^T of block kb once its K landed (not waited for).
  auto issueScores = [&](KB &e, Value kb) -> Value {
    Value stage = stageOf(e, kb);
    Value kStageDesc = advance(e, kDesc, e.mul(stage, e.idx(layout.kStage())));
    Value acc = LLVM::UndefOp::create(e.b, e.loc, f32Struct(ctx, kBK / 2));
    for (int64_t ks = 0; ks < Dp / 16; ++ks)
      acc = wgmmaShared(
          e, acc, advance(e, qDesc, e.idx(qt.kStepOffset(ks, false))),
          advance(e, kStageDesc, e.idx(kt.kStepOffset(ks, false))), kBK,
          /*first=*/ks == 0);
    NVVM::WgmmaGroupSyncAlignedOp::create(e.b, e.loc);
    return acc;
  };
  auto waitKeys = [&](KB &e, Value kb) {
    waitLanded(e, e.add(e.idx(layout.kFull()), stageOf(e, kb)),
               parityOf(e, kb));
  };
  // Issues O += P V of block kb once its V landed (not waited for).
  auto issueValues = [&](KB &e, Value kb, ArrayRef<Value> pRegs,
                         ArrayRef<Value> o) {
    Value stage = stageOf(e, kb);
    waitLanded(e, e.add(e.idx(layout.vFull()), stage), parityOf(e, kb));
    Value vStageDesc = advance(e, vDesc, e.mul(stage, e.idx(layout.vStage())));
    SmallVector<Value> acc(o);
    for (int64_t ks = 0; ks < kP; ++ks)
      acc = wgmmaRegisterA(
          e, acc, pRegs.slice(4 * ks, 4),
          advance(e, vStageDesc, e.idx(vt.kStepOffset(ks, true))));
    NVVM::WgmmaGroupSyncAlignedOp::create(e.b, e.loc);
    return acc;
  };
  // Frees block kb's K (first = kEmpty) or V (vEmpty) stage.
  auto release = [&](KB &e, int64_t first, Value kb) {
    NVVM::MBarrierArriveOp::create(
        e.b, e.loc, Type(), barrier(e, e.add(e.idx(first), stageOf(e, kb))),
        Value());
  };
  // Element (n, i) of block kb's S: row rows[i / 2], key kb BK + 8n + 2t
  // + i % 2; keys past a tail are clamped where they address bias/keep,
  // not where they only count (dropout).
  auto coordinates = [&](KB &e, Value kb, int64_t j, int64_t i, bool clamp) {
    Value kg = e.add(e.add(e.mul(kb, e.idx(kBK)), e.idx(8 * j + i % 2)), t2);
    if (tail && clamp)
      kg = e.min(kg, e.idx(plan.Nk - 1));
    return SmallVector<Value>{bi, hi, rowsC[i / 2], kg};
  };
  // Block kb's bias and keep values, loaded while its scores are
  // computed; a staged bias's pairs of keys 8n + 2t, + 1 of the thread's
  // rows from the block's stage, once it landed (with V).
  auto loadOperands = [&](KB &e, Value kb) {
    ElementOperands ops =
        loadElementOperands(e, plan, sl, layout.stagedBias ? Value() : bias,
                            keep, [&](int64_t, int64_t j, int64_t i) {
                              return coordinates(e, kb, j, i, true);
                            });
    if (!layout.stagedBias)
      return ops;
    Value stage = stageOf(e, kb);
    waitLanded(e, e.add(e.idx(layout.vFull()), stage), parityOf(e, kb));
    Value base = e.add(e.idx(layout.biasOffset()),
                       e.mul(stage, e.idx(layout.biasStage())));
    ops.bias.resize(sl.size());
    for (int64_t j = 0; j < sl.nTiles; ++j)
      for (int64_t i = 0; i < 4; i += 2) {
        Value row = e.add(e.add(warpRow0, g), e.idx(8 * (i / 2)));
        Value col = e.add(e.idx(8 * j), t2);
        Value bytes = e.add(base, layout.bias.elementOffset(e, row, col));
        Value pair =
            vector::LoadOp::create(e.b, e.loc, VectorType::get({2}, elt), buf,
                                   ValueRange{e.divu(bytes, 2)},
                                   /*nontemporal=*/false, llvm::MaybeAlign(4));
        ops.setBiasPair(e, sl.index(0, j, i), pair);
      }
    return ops;
  };
  // The online softmax of block kb's scores `s` (waited for): the row
  // maxima and the P operands of its k-steps (P V's A fragments).
  auto softmax = [&](KB &e, Value kb, bool masked, SmallVector<Value> &s,
                     const ElementOperands &operands, ArrayRef<Value> m,
                     ArrayRef<Value> l, SmallVector<Value> &pRegs) {
    scoreFragments(
        e, plan, scaling, sl, s, operands, getCaptures(),
        [&](int64_t, int64_t j, int64_t i) {
          return coordinates(e, kb, j, i, true);
        },
        masked, e.mul(kb, e.idx(kBK)), t2, rows[0]);
    RowMaxima rowMax = updateRowMaxima(e, sl, s, m, l, scaling);
    DropoutDraws dropout(plan.op, seed, kBK % 32 == 0);
    for (int64_t ks = 0; ks < kP; ++ks)
      pRegs.append(probabilityOperands(e, plan, sl, s, 0, ks, rowMax, scaling,
                                       dropout, [&](int64_t j, int64_t i) {
                                         return coordinates(e, kb, j, i, false);
                                       }));
    return rowMax;
  };

  // Loop state: m (2 rows), l (2 rows, thread-partial), O accumulators,
  // then the P operands of the previous block (4 per k-step). The
  // products of one step are S of block kb and O += P V of block kb - 1,
  // issued together (FlashAttention-3's overlap within the warpgroup):
  // the softmax of block kb runs while P V of kb - 1 does. The first
  // block (its S alone) is peeled off, and so is the last P V.
  SmallVector<Value> zeros;
  for (int64_t i = 0; i < 2 + ol.size(); ++i)
    zeros.push_back(c.f32(0.0));
  Type pType =
      toOperand(c, elt,
                vector::BroadcastOp::create(
                    cb, loc, VectorType::get({2}, elt),
                    arith::ConstantOp::create(cb, loc, cb.getZeroAttr(elt))))
          .getType();
  SmallVector<Type> stateTypes(4 + ol.size(), cb.getF32Type());
  stateTypes.append(4 * kP, pType);
  Value any = hasBlocks(c, tl);
  auto first = scf::IfOp::create(cb, loc, stateTypes, any,
                                 /*withElseRegion=*/true);
  {
    OpBuilder fb = first.getThenBodyBuilder();
    KB e{fb, loc};
    waitKeys(e, kbBegin);
    waitTurn(e, kPingPongBarrier, wg);
    NVVM::WgmmaFenceAlignedOp::create(fb, loc);
    Value acc = issueScores(e, kbBegin);
    passTurn(e, kPingPongBarrier, wg);
    ElementOperands operands = loadOperands(e, kbBegin);
    SmallVector<Value> s = waitGroup(e, unpack(e, acc, kBK / 2));
    release(e, layout.kEmpty(), kbBegin);
    SmallVector<Value> m{e.f32(kNegInf), e.f32(kNegInf)};
    SmallVector<Value> l{e.f32(0.0), e.f32(0.0)}, pRegs;
    RowMaxima rowMax =
        softmax(e, kbBegin, /*masked=*/true, s, operands, m, l, pRegs);
    SmallVector<Value> result = rowMax.mNew;
    result.append(rowMax.lsum);
    result.append(zeros.begin() + 2, zeros.end());
    result.append(pRegs);
    scf::YieldOp::create(fb, loc, result);
    // No block: nothing is read (the state only feeds the epilogue's
    // empty rows).
    OpBuilder eb = first.getElseBodyBuilder();
    KB x{eb, loc};
    SmallVector<Value> none{x.f32(kNegInf), x.f32(kNegInf)};
    none.append(zeros);
    Value zeroP =
        toOperand(x, elt,
                  vector::BroadcastOp::create(
                      eb, loc, VectorType::get({2}, elt),
                      arith::ConstantOp::create(eb, loc, eb.getZeroAttr(elt))));
    none.append(4 * kP, zeroP);
    scf::YieldOp::create(eb, loc, none);
  }

  auto blockBody = [&](bool masked, OpBuilder &lb, Location ll, Value kb,
                       ValueRange iter) {
    KB e{lb, ll};
    SmallVector<Value> cur(iter.begin(), iter.end());
    ArrayRef<Value> curRef(cur);
    Value prev = e.sub(kb, e.idx(1));
    waitKeys(e, kb);
    waitTurn(e, kPingPongBarrier, wg);
    NVVM::WgmmaFenceAlignedOp::create(e.b, e.loc);
    Value acc = issueScores(e, kb);
    SmallVector<Value> o = issueValues(
        e, prev, curRef.drop_front(4 + ol.size()), curRef.slice(4, ol.size()));
    passTurn(e, kPingPongBarrier, wg);
    ElementOperands operands = loadOperands(e, kb);
    SmallVector<Value> s = waitGroup(e, unpack(e, acc, kBK / 2), 1);
    release(e, layout.kEmpty(), kb);
    SmallVector<Value> pRegs;
    RowMaxima rowMax = softmax(e, kb, masked, s, operands, curRef.take_front(2),
                               curRef.slice(2, 2), pRegs);
    o = waitGroup(e, o);
    release(e, layout.vEmpty(), prev);
    o = rescaleAccumulators(e, ol, rowMax, curRef.take_front(2), o,
                            plan.cfg.lazyRescale);
    SmallVector<Value> next = rowMax.mNew;
    next.append(rowMax.lsum);
    next.append(o);
    next.append(pRegs);
    scf::YieldOp::create(lb, ll, next);
  };
  SmallVector<Value> loopState =
      runKeyBlocks(c, plan, q0, kBQ, kBK, c.add(kbBegin, c.idx(1)), kbEnd,
                   first.getResults(), blockBody);
  // Every S of the tile was waited for: the producer may load another Q
  // into its buffer.
  NVVM::MBarrierArriveOp::create(
      cb, loc, Type(), barrier(c, c.add(c.idx(layout.qEmpty()), qBuf)),
      Value());
  // The last block's P V.
  auto last = scf::IfOp::create(
      cb, loc, TypeRange(ArrayRef<Type>(stateTypes).slice(4, ol.size())), any,
      /*withElseRegion=*/true);
  {
    ArrayRef<Value> st(loopState);
    OpBuilder lb = last.getThenBodyBuilder();
    KB e{lb, loc};
    NVVM::WgmmaFenceAlignedOp::create(lb, loc);
    Value lastBlock = e.sub(kbEnd, e.idx(1));
    SmallVector<Value> acc =
        waitGroup(e, issueValues(e, lastBlock, st.drop_front(4 + ol.size()),
                                 st.slice(4, ol.size())));
    // The ring runs on into the next tile: its V stage is free again.
    release(e, layout.vEmpty(), lastBlock);
    scf::YieldOp::create(lb, loc, acc);
    OpBuilder eb = last.getElseBodyBuilder();
    scf::YieldOp::create(eb, loc, st.slice(4, ol.size()));
  }
  SmallVector<Value> state(loopState.begin(), loopState.begin() + 4);
  state.append(last.getResults().begin(), last.getResults().end());
  if (layout.stagedOutput)
    storeStagedOutputs(c, tl, state, rows, th);
  else
    storeOutputs(c, plan, ol, state, rows, bi, hi, t, t2, out, lse);
  return ringAfter(c, tl, kbBase);
}

void WgmmaEmitter::storeStagedOutputs(KB &c, const Tile &tl,
                                      ArrayRef<Value> state,
                                      ArrayRef<Value> rows,
                                      const ConsumerThread &th) {
  const TileLayout &ot = layout.o;
  const int64_t consumers = plan.cfg.warps / 4;
  // The warpgroup's own named barrier (after the ping-pong ones).
  auto syncWarpgroup = [&] {
    NVVM::BarrierOp::create(
        c.b, c.loc, Type(), toI32(c, c.add(th.wg, c.idx(1 + consumers))),
        i32Constant(c, 128), NVVM::BarrierReductionAttr(), Value());
  };
  Value leader = isEqual(c, c.remu(tid, 128), 0);
  // The warpgroup's rows start at line `first` of the staging, whose line 0
  // is query row `row0`.
  Value first = c.mul(th.wg, c.idx(64)), row0 = tl.q0;
  if (layout.outputSlot) {
    // The slot is this warpgroup's once the previous one's store read it.
    waitTurn(c, outputSlotBarrier(), th.wg);
    row0 = c.add(row0, first);
    first = c.idx(0);
  } else {
    ifThen(c, leader, [&](KB &x) {
      NVVM::CpAsyncBulkWaitGroupOp::create(x.b, x.loc, 0, x.b.getUnitAttr());
    });
    syncWarpgroup();
  }
  storeOutputs(
      c, plan, FragmentLayout{1, paddedHeadDim(plan.Dv) / 8}, state, rows, bi,
      hi, th.t, th.t2, out, lse, [&](KB &s, Value row, Value col, Value pair) {
        Value bytes = ot.elementOffset(s, s.sub(row, row0), col);
        vector::StoreOp::create(
            s.b, s.loc, pair, buf,
            ValueRange{s.divu(s.add(s.idx(layout.oOffset()), bytes), 2)},
            /*nontemporal=*/false, llvm::MaybeAlign(4));
      });
  // The stores are generic-proxy writes, TMA reads through the async proxy.
  proxyFence(c);
  syncWarpgroup();
  ifThen(c, leader, [&](KB &x) {
    Value row0 = x.add(tl.q0, x.mul(th.wg, x.idx(64)));
    for (int64_t p = 0; p < ot.lineBytes / ot.panel; ++p) {
      Value src = x.add(
          x.add(bufAddress, x.idx(layout.oOffset() + p * ot.panelStride())),
          x.mul(first, x.idx(ot.panel)));
      inlinePtx(x, Type(),
                {tensorMapArgs.back(), i32Constant(x, p * ot.panel / 2),
                 toI32(x, row0), toI32(x, hi), toI32(x, bi), toI32(x, src)},
                "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group "
                "[$0, {$1, $2, $3, $4}], [$5];",
                "l,r,r,r,r,r,~{memory}");
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(x.b, x.loc);
    if (layout.outputSlot)
      NVVM::CpAsyncBulkWaitGroupOp::create(x.b, x.loc, 0, x.b.getUnitAttr());
  });
  // The slot is read: the next warpgroup's turn.
  if (layout.outputSlot) {
    syncWarpgroup();
    passTurn(c, outputSlotBarrier(), th.wg);
  }
}

void WgmmaEmitter::waitTurn(KB &c, int64_t first, Value wg) {
  NVVM::BarrierOp::create(c.b, c.loc, Type(), toI32(c, c.add(wg, c.idx(first))),
                          i32Constant(c, 256), NVVM::BarrierReductionAttr(),
                          Value());
}

void WgmmaEmitter::passTurn(KB &c, int64_t first, Value wg) {
  Value next = c.remu(c.add(wg, c.idx(1)), plan.cfg.warps / 4);
  NVVM::BarrierArriveOp::create(c.b, c.loc, toI32(c, c.add(next, c.idx(first))),
                                i32Constant(c, 256));
}

void WgmmaEmitter::giveFirstTurn(KB &c, int64_t first) {
  NVVM::BarrierArriveOp::create(c.b, c.loc, i32Constant(c, first),
                                i32Constant(c, 256));
}

void WgmmaEmitter::emit() {
  mapCaptures(plan, b, loc);
  int64_t D = plan.D, Dv = plan.Dv, Dp = paddedHeadDim(D),
          Dvp = paddedHeadDim(Dv);
  const int64_t consumers = plan.cfg.warps / 4;
  MLIRContext *ctx = b.getContext();

  // Dynamic shared memory, its first 1024-byte boundary as the base of the
  // tiles (`buf`, elements; `bufAddress`, the shared-memory address).
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value smem = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  Value start = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem);
  Value shift = k.remu(k.sub(k.idx(1024), k.remu(start, 1024)), 1024);
  bufAddress = k.add(start, shift);
  buf = memref::ViewOp::create(b, loc,
                               MemRefType::get({layout.barrierOffset() / 2},
                                               elt, MemRefLayoutAttrInterface(),
                                               workgroup),
                               smem, shift, ValueRange{});
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);

  // Set-up by the whole CTA: the mbarriers (the producer's 128 threads
  // arrive on the full ones as their copies land, every consumer thread on
  // the empty ones), zeros in the padding columns; then the roles.
  ifThen(k, isEqual(k, tid, 0), [&](KB &x) {
    auto init = [&](int64_t index, int64_t count) {
      NVVM::MBarrierInitOp::create(x.b, x.loc, barrier(x, x.idx(index)),
                                   i32Constant(x, count), Value());
    };
    // A full barrier takes the producer's 128 cp.async arrivals, or the
    // one arrive.expect_tx of its TMA thread.
    const int64_t loaders = tma ? 1 : kProducerThreads;
    for (int64_t qb = 0; qb < layout.qBuffers; ++qb)
      init(layout.qFull() + qb, loaders);
    for (int64_t st = 0; st < kStages; ++st) {
      init(layout.kFull() + st, loaders);
      // (V's and the bias's arrive.expect_tx with a staged bias.)
      init(layout.vFull() + st, layout.stagedBias ? 2 : loaders);
      init(layout.kEmpty() + st, 32 * plan.cfg.warps);
      init(layout.vEmpty() + st, 32 * plan.cfg.warps);
    }
    for (int64_t qb = 0; qb < layout.qBuffers; ++qb)
      init(layout.qEmpty() + qb, 32 * plan.cfg.warps);
    NVVM::FenceMbarrierInitOp::create(x.b, x.loc);
  });
  // (TMA reads the padding columns as zeros: they are past the operand's
  // head dim.)
  if (!tma && (Dp != D || Dvp != Dv)) {
    zeroPadding(layout.q, D, 0, layout.qBuffers, layout.qStride());
    zeroPadding(layout.k, D, layout.kOffset(), kStages, layout.kStage());
    zeroPadding(layout.v, Dv, layout.vOffset(), kStages, layout.vStage());
    proxyFence(k);
  }
  gpu::BarrierOp::create(b, loc);

  // Registers: the producer gives up what the consumers take (one branch
  // per role, as setmaxnreg needs; RegisterSplit).
  const RegisterSplit split = registerSplit(consumers);
  // The warpgroup index, made warp-uniform for ptxas by a shuffle from lane
  // 0 (otherwise it allocates both roles' registers at the entry cap).
  Value wgAll = arith::IndexCastUIOp::create(
      b, loc, b.getIndexType(),
      gpu::ShuffleOp::create(b, loc,
                             arith::IndexCastUIOp::create(
                                 b, loc, b.getI32Type(), k.divu(tid, 128)),
                             0, 32, gpu::ShuffleMode::IDX)
          .getShuffleResult());
  scf::IfOp roles = scf::IfOp::create(b, loc, isEqual(k, wgAll, 0),
                                      /*withElseRegion=*/true);

  OpBuilder pb = roles.getThenBodyBuilder();
  emitProducer(pb, split.producer);
  OpBuilder cb = roles.getElseBodyBuilder();
  emitConsumers(cb, wgAll, split.consumer);
  b.setInsertionPointAfter(roles);
  gpu::ReturnOp::create(b, loc);
}

class WgmmaFamily final : public KernelFamily {
public:
  StringRef getName() const override { return "wgmma"; }
  const KernelFamily *getFallback() const override {
    return &getMmaSyncFamily();
  }
  std::string getUnsupportedReason(AttentionOp op,
                                   StringRef chip) const override {
    if (!isWgmmaChip(chip))
      return ("wgmma needs sm_90a, the target is " + chip).str();
    return getTensorCoreUnsupportedReason(op);
  }
  LogicalResult
  resolveOptions(KernelPlan &plan,
                 const AttentionKernelOptions &requested) const override;
  int64_t getDynamicSharedBytes(const KernelPlan &plan) const override {
    return SharedLayout(plan).total();
  }
  /// With TMA loads (loadsByTma): one map per operand whose box is a panel
  /// of its tile (TileLayout), in the tile's swizzle: Q, K, V, [the bias
  /// (stagesBias),] [O (TMA stores)].
  SmallVector<TensorMapSpec>
  getTensorMaps(const KernelPlan &plan) const override {
    if (!loadsByTma(plan))
      return {};
    SharedLayout layout(plan);
    auto map = [](unsigned source, const TileLayout &tile, int64_t lines) {
      return TensorMapSpec{
          source, {1, 1, lines, tile.panel / 2}, tile.panel, 256};
    };
    SmallVector<TensorMapSpec> maps = {map(0, layout.q, layout.q.lines),
                                       map(1, layout.k, layout.k.lines),
                                       map(2, layout.v, layout.v.lines)};
    // The bias: a block's tile (before O, whose map is the last).
    if (layout.stagedBias)
      maps.push_back(
          map(KernelArgs::kBiasIndex, layout.bias, layout.bias.lines));
    // O: a consumer warpgroup's 64 rows per store.
    if (layout.stagedOutput)
      maps.push_back(map(KernelArgs::outIndex(plan), layout.o, 64));
    return maps;
  }
  /// A persistent grid: min(tiles, persistent-ctas) CTAs (forEachTile), or
  /// one per tile with persistent-ctas = -1; x alone.
  LaunchShape getLaunchShape(const KernelPlan &plan) const override {
    int64_t tiles = plan.numQB * plan.B * plan.Hq;
    int64_t ctas = plan.cfg.persistentCtas;
    return {{ctas > 0 ? std::min(tiles, ctas) : tiles, 1, 1},
            {plan.threads, 1, 1}};
  }
  void emit(KernelPlan &plan, gpu::GPUFuncOp func) const override {
    OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
    WgmmaEmitter(plan, b, plan.op.getLoc(), func.getArguments()).emit();
  }
};

/// Defaults, measured on the H200 (docs/GPU.md), within the consumers'
/// registers (232 with two consumer warpgroups, 160 with three; no spills at
/// the benchmark's shapes): three consumer warpgroups (192 query rows) up to
/// d = 96 without per-element features (bias, keep mask, score_mod,
/// dropout) unless causal with Nq <= 1024, two otherwise; 2 stages; keys per
/// block 128 up to d = 64 and with two warpgroups up to d = 128, 64 between 64
/// and 128 with three or with computed features (score_mod, dropout: 128 was
/// 6-12% slower; a bias 16% faster), and above d = 128 64, 32 with features; a
/// persistent grid up to d = 128.
LogicalResult
WgmmaFamily::resolveOptions(KernelPlan &plan,
                            const AttentionKernelOptions &requested) const {
  AttentionOp op = plan.op;
  const int64_t sharedLimit = plan.sharedLimit;
  AttentionKernelOptions &resolved = plan.cfg;
  resolved = requested;
  resolved.mma = getName();
  int64_t d = std::max(paddedHeadDim(plan.D), paddedHeadDim(plan.Dv));
  auto error = [&]() {
    return op.emitOpError() << "convert-attn-to-gpu: mma=wgmma ";
  };
  // Per-element work: computed (dropout, score_mod) or loaded (bias, keep
  // mask, issued ahead of the wait for S).
  bool computed = op.getSeed() || op.hasScoreMod();
  bool features = computed || op.getBias() || op.getKeepMask();
  // Two consumer warpgroups (128-row tiles) also for short causal-like
  // sequences: less of each tile on the diagonal, more tiles to spread
  // (d = 64, 1k, causal: +5 to +13%; at 16k three were 15% faster).
  bool shortCausal = plan.rightBounded && !plan.leftBounded && plan.Nq <= 1024;
  if (resolved.warps == 0)
    resolved.warps = d <= 96 && !features && !shortCausal ? 12 : 8;
  if (resolved.warps != 8 && resolved.warps != 12)
    return error() << "takes warps 8 or 12 (2 or 3 warpgroups), not "
                   << resolved.warps;
  if (resolved.stages == 0)
    resolved.stages = 2;
  if (resolved.stages < 2 || resolved.stages > 4)
    return error() << "takes 2 to 4 stages, not " << resolved.stages;
  if (resolved.blockQ == 0)
    resolved.blockQ = 16 * resolved.warps;
  if (resolved.blockQ != 16 * resolved.warps)
    return error() << "with " << resolved.warps << " warps takes block-q "
                   << 16 * resolved.warps << " (64 rows per warpgroup), not "
                   << resolved.blockQ;
  if (resolved.blockK == 0)
    resolved.blockK = d > 128 ? (features ? 32 : 64)
                      : d > 64 && (computed || resolved.warps == 12) ? 64
                                                                     : 128;
  if (resolved.blockK % 16 != 0 || resolved.blockK < 16 ||
      resolved.blockK > 256)
    return error() << "takes a block-k that is a multiple of 16 up to 256, "
                      "not "
                   << resolved.blockK;
  if (resolved.chunk == 0)
    resolved.chunk = resolved.blockK;
  if (resolved.chunk != resolved.blockK)
    return error() << "takes chunk = block-k, not " << resolved.chunk;
  if (resolved.persistentCtas < -1)
    return error() << "takes persistent-ctas > 0, or -1 (one CTA per tile), "
                      "not "
                   << resolved.persistentCtas;
  if (resolved.qBuffers < 0 || resolved.qBuffers > 2)
    return error() << "takes q-buffers 1 or 2, not " << resolved.qBuffers;
  // One Q buffer until the other tiles have their room.
  if (resolved.qBuffers == 0)
    resolved.qBuffers = 1;
  resolved.threadsPerRow = 1;
  // The consumer warpgroups and the producer warpgroup.
  plan.threads = 32 * resolved.warps + kProducerThreads;
  auto sharedBytes = [&] { return getDynamicSharedBytes(plan); };
  // O's staging tile only where it fits (decided after the other tiles;
  // with one CTA per tile it is the Q buffer's).
  resolved.tmaStore = false;
  while (requested.blockK == 0 && sharedBytes() > sharedLimit &&
         resolved.blockK > 32) {
    resolved.blockK /= 2;
    resolved.chunk = resolved.blockK;
  }
  // Persistent with at least 3 key blocks and no key tail (ptxas spills the
  // consumers' registers in the tile loop with a key tail, e.g. 76 bytes at
  // d = 128, Nq = Nk = 1000, and with one or two blocks, 224 bytes at 256
  // keys, where one CTA per tile does not); up to d = 128, and above it for
  // short causal-like masks, whose tiles differ in length (d = 256, 1k,
  // timed alternately: one CTA per tile 20% slower causal; not causal
  // level, and 7.7% faster than the grid before O's staging slot; from 4k
  // -0.5 to -2.8% with one Q buffer: two do not fit).
  if (resolved.persistentCtas == 0)
    resolved.persistentCtas = (d <= 128 || shortCausal) &&
                                      plan.Nk % resolved.blockK == 0 &&
                                      plan.Nk / resolved.blockK >= 3
                                  ? kSmsOfWgmmaChips
                                  : -1;
  // Rows narrower than 64 elements: the staging costs more than it saves
  // (d = 40, Stable Diffusion's: -4% against stores from registers,
  // timed alternately; +1 to +6% from d = 64 to 128).
  resolved.tmaStore = requested.tmaStore && paddedHeadDim(plan.Dv) >= 64;
  if (storesByTma(plan) && sharedBytes() > sharedLimit)
    resolved.tmaStore = false;
  // A second Q buffer on a persistent grid, where it fits (+2 to +4% at
  // 1k and 4k keys, timed alternately; level at 16k) and leaves the
  // consumers their registers: with a bias and another per-element feature
  // (keep mask, dropout; score_mod alike) ptxas spilled 4-12 bytes at
  // d = 128.
  bool crowded = op.getBias() && (op.getKeepMask() || computed);
  if (requested.qBuffers == 0 && resolved.persistentCtas > 0 && !crowded) {
    resolved.qBuffers = 2;
    if (sharedBytes() > sharedLimit)
      resolved.qBuffers = 1;
  }
  if (sharedBytes() > sharedLimit)
    return op.emitOpError()
           << "convert-attn-to-gpu: the wgmma kernel needs " << sharedBytes()
           << " bytes of shared memory (Q, K/V stages), more than the "
           << sharedLimit << " a CTA can have on the target; lower stages "
           << "or block-k";
  if (plan.Nq + plan.Nk + resolved.blockQ + resolved.blockK >
      std::numeric_limits<int32_t>::max())
    return error() << "needs Nq + Nk below 2^31";
  return success();
}
} // namespace

const KernelFamily &attnfuse::gpu_kernels::getWgmmaFamily() {
  static const WgmmaFamily family;
  return family;
}
