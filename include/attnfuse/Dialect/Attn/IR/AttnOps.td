//===- AttnOps.td - the attn dialect and its operations ----*- tablegen -*-===//
//
// The `attn` dialect states attention's semantics exactly, so that every
// transformation of attnfuse (raising, tiling, GPU code generation) can be
// checked against one definition.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNFUSE_DIALECT_ATTN_IR_ATTNOPS_TD
#define ATTNFUSE_DIALECT_ATTN_IR_ATTNOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::attnfuse::attn";
  let summary = "Attention, stated exactly";
  let description = [{
    The `attn` dialect carries scaled dot-product attention as one operation
    whose semantics are fixed down to the masking of empty rows and the
    random numbers of dropout. Every lowering of attnfuse (the naive
    reference lowering, the tiled FlashAttention lowering, the GPU kernels)
    computes the function defined here; only the order of floating-point
    accumulation differs.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  let useDefaultAttributePrinterParser = 1;
  let hasCanonicalizer = 0;
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Attn_MaskKind : I32EnumAttr<"MaskKind", "structural attention mask", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"causal", 1>,
    I32EnumAttrCase<"sliding_window", 2>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnfuse::attn";
}
def Attn_MaskKindAttr : EnumAttr<Attn_Dialect, Attn_MaskKind, "mask"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_MaskAlignment : I32EnumAttr<"MaskAlignment",
    "how query rows are aligned to key columns when Nq != Nk", [
    I32EnumAttrCase<"top_left", 0>,
    I32EnumAttrCase<"bottom_right", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::attnfuse::attn";
}
def Attn_MaskAlignmentAttr
    : EnumAttr<Attn_Dialect, Attn_MaskAlignment, "alignment"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// The element-wise semantics shared by the forward and backward ops
//===----------------------------------------------------------------------===//

def Attn_AttentionOpInterface : OpInterface<"AttentionOpInterface"> {
  let cppNamespace = "::attnfuse::attn";
  let description = [{
    The score pipeline of attention (scale, score modification, bias,
    structural and keep masks, dropout), shared by `attn.attention` and
    `attn.attention_backward` so that every lowering builds it once.
  }];
  let methods = [
    InterfaceMethod<"The scale applied to Q.K^T: the attribute, or 1/sqrt(Dqk).",
      "float", "getScaleOrDefault", (ins), [{}], [{
        return ::attnfuse::attn::detail::getScaleOrDefault(
            $_op.getScale(), $_op.getQueryType().getDimSize(3));
      }]>,
    InterfaceMethod<[{The structural mask as a window on `k - (q + offset)`:
      `-left <= k - (q + offset) <= right`; unbounded sides are INT64_MAX.}],
      "::attnfuse::attn::MaskWindow", "getMaskWindow", (ins), [{}], [{
        return ::attnfuse::attn::detail::getMaskWindow(
            $_op.getMask(), $_op.getAlignment(), $_op.getWindowLeft(),
            $_op.getWindowRight(), $_op.getQueryType().getDimSize(2),
            $_op.getSizes().keyLength,
            $_op.getKeyLengths() || $_op.getQueryOffsets());
      }]>,
    InterfaceMethod<[{The sizes (B, Hq, Hkv, Nq, Nk, Dqk, Dv), B, Nq and Nk
      possibly runtime (ShapedType::kDynamic).}],
      "::attnfuse::attn::AttentionSizes", "getSizes", (ins), [{}], [{
        return ::attnfuse::attn::detail::getAttentionSizes(
            $_op.getQueryType(), $_op.getKeyType(), $_op.getValueType(),
            $_op.getBlockTableValue());
      }]>,
    InterfaceMethod<"The query operand.", "::mlir::Value", "getQueryValue",
      (ins), [{}], [{ return $_op.getQuery(); }]>,
    InterfaceMethod<"The key operand.", "::mlir::Value", "getKeyValue",
      (ins), [{}], [{ return $_op.getKey(); }]>,
    InterfaceMethod<"The per-batch key lengths (null when absent).",
      "::mlir::Value", "getKeyLengthsValue", (ins), [{}],
      [{ return $_op.getKeyLengths(); }]>,
    InterfaceMethod<"The packed sequences' query offsets (null when absent).",
      "::mlir::Value", "getQueryOffsetsValue", (ins), [{}],
      [{ return $_op.getQueryOffsets(); }]>,
    InterfaceMethod<"The packed sequences' key offsets (null when absent).",
      "::mlir::Value", "getKeyOffsetsValue", (ins), [{}],
      [{ return $_op.getKeyOffsets(); }]>,
    InterfaceMethod<"The block table of paged K/V (null when absent).",
      "::mlir::Value", "getBlockTableValue", (ins), [{}],
      [{ return $_op.getBlockTable(); }]>,
    InterfaceMethod<"The score_mod region (empty when absent).",
      "::mlir::Region &", "getScoreModRegion", (ins), [{}],
      [{ return $_op.getScoreMod(); }]>,
    InterfaceMethod<"The dropout probability.", "double",
      "getDropoutProbability", (ins), [{}],
      [{ return $_op.getDropoutP().convertToDouble(); }]>,
    InterfaceMethod<"The dropout seed (null without dropout).", "::mlir::Value",
      "getDropoutSeed", (ins), [{}], [{ return $_op.getSeed(); }]>,
  ];
  let extraClassDeclaration = [{
    bool hasScoreMod() { return !getScoreModRegion().empty(); }
  }];
  let extraSharedClassDeclaration = [{
    /// Whether K and V are paged (a block table gives their pages).
    bool isPaged() { return static_cast<bool>($_op.getBlockTableValue()); }
    /// Whether Q and K/V pack several sequences (sequence_offsets).
    bool isPacked() { return static_cast<bool>($_op.getQueryOffsetsValue()); }
  }];
}

//===----------------------------------------------------------------------===//
// attn.attention
//===----------------------------------------------------------------------===//

def Attn_AttentionOp : Attn_Op<"attention", [
    AttrSizedOperandSegments, RecursiveMemoryEffects,
    DeclareOpInterfaceMethods<Attn_AttentionOpInterface>]> {
  let summary = "scaled dot-product attention, with masks, bias, score "
                "modification, dropout and grouped key/value heads";
  let description = [{
    Computes, with every product and sum accumulated in f32,

    ```
    S[b,h,q,k] = scale * sum_d Q[b,h,q,d] * K[b,h/G,k,d]
    T[b,h,q,k] = score_mod(S[b,h,q,k], b, h, q, k) + bias[b,h,q,k]
    T[b,h,q,k] = -inf   where the structural mask or keep_mask hides (q, k)
    m[b,h,q]   = max_k T[b,h,q,k]          m' = (m == -inf) ? 0 : m
    l[b,h,q]   = sum_k exp(T[b,h,q,k] - m')
    P[b,h,q,k] = (l != 0) ? exp(T[b,h,q,k] - m') / l : 0
    P[b,h,q,k] = keep(seed,b,h,q,k) ? P[b,h,q,k] * (1 / (1 - p)) : 0   (dropout)
    O[b,h,q,e] = sum_{k : T[b,h,q,k] > -inf} P[b,h,q,k] * V[b,h/G,k,e]
    lse[b,h,q] = m' + log(l)
    ```

    with `Q : [B, Hq, Nq, Dqk]`, `K : [B, Hkv, Nk, Dqk]`, `V : [B, Hkv, Nk, Dv]`,
    `O : [B, Hq, Nq, Dv]` and `G = Hq / Hkv` (grouped-query attention; `Hkv = 1`
    is multi-query attention). `O` has the element type of `Q` (f16, bf16 or
    f32; Q, K and V share it); the optional second result `lse` is the row
    log-sum-exp in f32, `[B, Hq, Nq]`, which the backward pass needs.

    * `scale` defaults to `1 / sqrt(Dqk)`.
    * `mask` is the structural mask. With `off = Nk - Nq` for
      `alignment = #attn.alignment<bottom_right>` and `off = 0` for
      `top_left` (the default), query `q` sees key `k` iff
      `-window_left <= k - (q + off) <= window_right`. `causal` is
      `window_left = inf, window_right = 0`; `sliding_window` takes both
      bounds (non-negative) as attributes; `none` hides nothing.
    * `bias` (f16, bf16, f32 or f64) and `keep_mask` (`i1`, true = keep)
      have rank at most 4 and broadcast to `[B, Hq, Nq, Nk]` with numpy's
      rules (aligned on the right, each dimension 1 or full size).
    * `key_lengths` (`[B]`, i32 or i64; decode over a cache, padded
      batches) gives each batch its number of keys `L[b] = clamp(key_lengths[b],
      0, Nk)`: the keys `[L[b], Nk)` are hidden, and `bottom_right`
      alignment takes `off = L[b] - Nq` per batch.
    * `block_table` (`[B, P]`, i32 or i64) pages K and V: they are
      `[pages, Hkv, page_size, D]`, `Nk = P * page_size`, and key position `k`
      of batch `b` is slot `k % page_size` of page `block_table[b, k /
      page_size]`. A key whose page id is outside `[0, pages)` is hidden
      (no memory outside K and V is read). Only `attn.attention` takes a block table.
    * `sequence_offsets(%cq, %ck)` (`[S + 1]` each, i32 or i64; packed
      variable-length batches, as `cu_seqlens_q` / `cu_seqlens_k` of
      `flash_attn_varlen_func`) packs S sequences into Q (rows) and K/V
      (keys) of batch `B = 1`: sequence `s` is the queries `[cq'[s],
      cq'[s+1])` and the keys `[ck'[s], ck'[s+1])`, where the offsets are
      made monotone and in range (`cq'[t] = min(max(0, cq[0..t]), Nq)`, and
      `ck'` with Nk). A query sees only its sequence's keys, under the
      structural mask in the sequence's own positions (`off = Lk - Lq` of
      the sequence for `bottom_right`); a query in no sequence sees no key.
      Bias, keep mask, `score_mod` and dropout index the packed positions.
    * Q, K, V, O and the score matrix `[B, Hq, Nq, Nk]` have at most 2^60
      elements each.
    * The optional `score_mod` region is a pointwise function of the scaled
      score (f32) and its coordinates `(b, h, q, k)` (index) that yields the
      new score (f32) with `attn.yield`; softcapping, ALiBi and
      relative-position terms are written here. Its operations must be free
      of memory effects. It may use values defined outside it (constants,
      scalars of the function); the GPU kernels take only constants.
    * `dropout_p` in `[0, 1)` drops probabilities after normalization, from a
      counter-based generator, so a backward pass regenerates the same mask:
      `r = Philox4x32-10(counter = (4 (k / 32) + (k / 2) % 4, q, h, b),
      key = (seed[31:0], seed[63:32]))`; `u` = half `k % 2` (low, high) of
      output word `(k / 8) % 4` (one call serves eight keys); `(q, k)` is
      kept iff `u >= floor(p * 2^16)`. The `seed`
      operand (i64) is present iff `dropout_p > 0`.
    * **Rows in which every key is hidden** (by the masks, or by a bias or
      `score_mod` of `-inf`) produce `O = 0` and `lse = -inf`; they never
      produce NaN. A NaN or `+inf` score makes its row's `O` and `lse` NaN.
      A hidden key (`T = -inf`) contributes nothing to `O`, whatever `V`
      holds (docs/Semantics.md).

    Example (grouped-query, causal, bottom-right aligned, softcapped scores):

    ```mlir
    %o, %lse = attn.attention
        ins(%q, %k, %v : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>,
                         tensor<2x2x256x64xbf16>)
        {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
        score_mod {
        ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
          %cap = arith.constant 50.0 : f32
          %x = arith.divf %s, %cap : f32
          %t = math.tanh %x : f32
          %y = arith.mulf %t, %cap : f32
          attn.yield %y : f32
        } -> tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$query,
    AnyRankedTensor:$key,
    AnyRankedTensor:$value,
    Optional<AnyRankedTensor>:$bias,
    Optional<AnyRankedTensor>:$keep_mask,
    Optional<I64>:$seed,
    Optional<AnyRankedTensor>:$key_lengths,
    Optional<AnyRankedTensor>:$block_table,
    Optional<AnyRankedTensor>:$query_offsets,
    Optional<AnyRankedTensor>:$key_offsets,
    OptionalAttr<F32Attr>:$scale,
    DefaultValuedAttr<Attn_MaskKindAttr, "MaskKind::none">:$mask,
    DefaultValuedAttr<Attn_MaskAlignmentAttr,
                      "MaskAlignment::top_left">:$alignment,
    OptionalAttr<I64Attr>:$window_left,
    OptionalAttr<I64Attr>:$window_right,
    DefaultValuedAttr<F32Attr, "0.0f">:$dropout_p
  );
  let results = (outs AnyRankedTensor:$output,
                      Optional<AnyRankedTensor>:$lse);
  let regions = (region AnyRegion:$score_mod);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
        type($value) `)`
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`keep` `(` $keep_mask^ `:` type($keep_mask) `)`)?
    (`seed` `(` $seed^ `)`)?
    (`key_lengths` `(` $key_lengths^ `:` type($key_lengths) `)`)?
    (`block_table` `(` $block_table^ `:` type($block_table) `)`)?
    (`sequence_offsets` `(` $query_offsets^ `,` $key_offsets `:`
        type($query_offsets) `,` type($key_offsets) `)`)?
    attr-dict
    (`score_mod` $score_mod^)?
    `->` type(results)
  }];

  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let hasCanonicalizer = 1;

  let extraClassDeclaration = [{
    /// The operands that are not optional, in order (one each).
    static ::llvm::ArrayRef<::llvm::StringLiteral> getRequiredOperandNames() {
      static constexpr ::llvm::StringLiteral names[] = {"query", "key",
                                                        "value"};
      return names;
    }
    /// Sizes (getSizes(); B, Nq and Nk may be ShapedType::kDynamic).
    int64_t getBatchSize() { return getSizes().batch; }
    int64_t getNumQueryHeads() { return getSizes().queryHeads; }
    int64_t getNumKeyValueHeads() { return getSizes().kvHeads; }
    int64_t getQueryLength() { return getSizes().queryLength; }
    int64_t getKeyLength() { return getSizes().keyLength; }
    int64_t getHeadDimQK() { return getSizes().headDimQK; }
    int64_t getHeadDimV() { return getSizes().headDimV; }
    int64_t getGroupSize() { return getSizes().groupSize(); }

    ::mlir::RankedTensorType getQueryType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getQuery().getType());
    }
    ::mlir::RankedTensorType getKeyType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getKey().getType());
    }
    ::mlir::RankedTensorType getValueType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getValue().getType());
    }

    /// True when a score_mod region is present.
    bool hasScoreMod() { return !getScoreMod().empty(); }
  }];
}

def Attn_AttentionBackwardOp : Attn_Op<"attention_backward", [
    AttrSizedOperandSegments, RecursiveMemoryEffects,
    DeclareOpInterfaceMethods<Attn_AttentionOpInterface>]> {
  let summary = "gradients of attn.attention with respect to Q, K and V";
  let description = [{
    Given the forward op's operands, attributes and region, its output `O`
    and row log-sum-exp `lse`, and the gradient `dO` of a loss with respect to
    `O`, computes (in f32, with `T`, `P` and the dropout factor
    `Z = keep ? 1/(1-p) : 0` as in `attn.attention`):

    ```
    P   = exp(T - lse)   (0 where lse = -inf)
    dV  = (P * Z)^T dO                        summed over the query heads of a group
    dP  = (dO V^T) * Z
    Di  = rowsum(dO * O)
    dS  = P * (dP - Di) * score_mod'(scale * S) * scale
    dQ  = dS K,   dK = dS^T Q                 (dK summed over the query heads of a group)
    ```

    `score_mod'` is the derivative of the score_mod region with respect to the
    score, derived automatically from its operations (forward mode); a region
    with an operation that cannot be differentiated is rejected by the
    verifier. The keep mask has no gradient. The first three results have
    the types of Q, K and V. The optional fourth result is the bias's
    gradient, of the bias's type (present only with a bias):

    ```
    dT  = P * (dP - Di)                       (0 where (q, k) is hidden)
    dBias[b', h', q', k'] = sum of dT[b, h, q, k] over the entries that read
                            bias[b', h', q', k'] (the broadcast dimensions)
    ```

    The dropout mask is regenerated from `seed`, so it
    is the forward pass's mask. `key_lengths` and `sequence_offsets` hide
    keys as in the forward op; a hidden key's dK and dV are 0.

    ```mlir
    %dq, %dk, %dv = attn.attention_backward
        ins(%q, %k, %v : tensor<1x4x128x64xf16>, tensor<1x1x128x64xf16>,
                         tensor<1x1x128x64xf16>)
        grad(%o, %lse, %do : tensor<1x4x128x64xf16>, tensor<1x4x128xf32>,
                             tensor<1x4x128x64xf16>)
        {mask = #attn.mask<causal>}
        -> tensor<1x4x128x64xf16>, tensor<1x1x128x64xf16>, tensor<1x1x128x64xf16>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$query,
    AnyRankedTensor:$key,
    AnyRankedTensor:$value,
    AnyRankedTensor:$output,
    AnyRankedTensor:$lse,
    AnyRankedTensor:$grad_output,
    Optional<AnyRankedTensor>:$bias,
    Optional<AnyRankedTensor>:$keep_mask,
    Optional<I64>:$seed,
    Optional<AnyRankedTensor>:$key_lengths,
    Optional<AnyRankedTensor>:$query_offsets,
    Optional<AnyRankedTensor>:$key_offsets,
    OptionalAttr<F32Attr>:$scale,
    DefaultValuedAttr<Attn_MaskKindAttr, "MaskKind::none">:$mask,
    DefaultValuedAttr<Attn_MaskAlignmentAttr,
                      "MaskAlignment::top_left">:$alignment,
    OptionalAttr<I64Attr>:$window_left,
    OptionalAttr<I64Attr>:$window_right,
    DefaultValuedAttr<F32Attr, "0.0f">:$dropout_p
  );
  let results = (outs AnyRankedTensor:$grad_query,
                      AnyRankedTensor:$grad_key,
                      AnyRankedTensor:$grad_value,
                      Optional<AnyRankedTensor>:$grad_bias);
  let regions = (region AnyRegion:$score_mod);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
        type($value) `)`
    `grad` `(` $output `,` $lse `,` $grad_output `:` type($output) `,`
        type($lse) `,` type($grad_output) `)`
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`keep` `(` $keep_mask^ `:` type($keep_mask) `)`)?
    (`seed` `(` $seed^ `)`)?
    (`key_lengths` `(` $key_lengths^ `:` type($key_lengths) `)`)?
    (`sequence_offsets` `(` $query_offsets^ `,` $key_offsets `:`
        type($query_offsets) `,` type($key_offsets) `)`)?
    attr-dict
    (`score_mod` $score_mod^)?
    `->` type(results)
  }];

  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let extraClassDeclaration = [{
    /// The operands that are not optional, in order (one each).
    static ::llvm::ArrayRef<::llvm::StringLiteral> getRequiredOperandNames() {
      static constexpr ::llvm::StringLiteral names[] = {
          "query", "key", "value", "output", "lse", "grad_output"};
      return names;
    }
    /// K and V of the backward op are never paged (a layout for inference).
    ::mlir::Value getBlockTable() { return {}; }
    ::mlir::RankedTensorType getQueryType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getQuery().getType());
    }
    ::mlir::RankedTensorType getKeyType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getKey().getType());
    }
    ::mlir::RankedTensorType getValueType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getValue().getType());
    }
  }];
}

def Attn_YieldOp : Attn_Op<"yield", [
    Pure, Terminator, ReturnLike,
    ParentOneOf<["AttentionOp", "AttentionBackwardOp"]>]> {
  let summary = "yields the modified score from a score_mod region";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

#endif // ATTNFUSE_DIALECT_ATTN_IR_ATTNOPS_TD
