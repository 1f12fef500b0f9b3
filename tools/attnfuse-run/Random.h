//===- Random.h - deterministic random inputs -------------------*- C++ -*-===//
#ifndef ATTNFUSE_TOOLS_ATTNFUSE_RUN_RANDOM_H
#define ATTNFUSE_TOOLS_ATTNFUSE_RUN_RANDOM_H

#include "HostTensor.h"

namespace attnfuse_run {

/// Returns a tensor of random values for argument number `argIndex`, drawn
/// from a std::mt19937_64 seeded through std::seed_seq with
/// (seed[31:0], seed[63:32], argIndex), so that the values depend on nothing
/// but these numbers and the tensor's size (both are specified exactly by the
/// C++ standard, unlike the standard distributions):
///   * floats: N(0, 1) by the Box-Muller transform of 53-bit uniforms, then
///     rounded to nearest even to the element type;
///   * i1: true with probability `keepProbability`;
///   * iN: uniform in [0, 2^min(31, N-1)), or in [0, intBound) when
///     `intBound` > 0 (token ids and positions of exported models must index
///     their tables), as `generator() mod intBound`.
HostTensor makeRandomTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                            uint64_t seed, unsigned argIndex,
                            double keepProbability, int64_t intBound = 0);

} // namespace attnfuse_run

#endif // ATTNFUSE_TOOLS_ATTNFUSE_RUN_RANDOM_H
