//===- Random.cpp - deterministic random inputs ---------------------------===//
#include "Random.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace attnfuse_run;

/// Returns a uniform double in (0, 1) from the top 53 bits of `generator`.
static double uniform(std::mt19937_64 &generator) {
  return (static_cast<double>(generator() >> 11) + 0.5) * 0x1p-53;
}

HostTensor attnfuse_run::makeRandomTensor(ElementKind kind,
                                          llvm::ArrayRef<int64_t> shape,
                                          uint64_t seed, unsigned argIndex,
                                          double keepProbability,
                                          int64_t intBound) {
  std::seed_seq seq{static_cast<uint32_t>(seed),
                    static_cast<uint32_t>(seed >> 32), argIndex};
  std::mt19937_64 generator(seq);
  HostTensor tensor(kind, shape);
  int64_t n = tensor.getNumElements();
  if (isFloat(kind)) {
    // Box-Muller: each pair of uniforms gives two independent normals.
    for (int64_t i = 0; i < n; i += 2) {
      double radius = std::sqrt(-2.0 * std::log(uniform(generator)));
      double angle = 2.0 * M_PI * uniform(generator);
      tensor.setFloat(i, radius * std::cos(angle));
      if (i + 1 < n)
        tensor.setFloat(i + 1, radius * std::sin(angle));
    }
    return tensor;
  }
  if (kind == ElementKind::I1) {
    for (int64_t i = 0; i < n; ++i)
      tensor.setInt(i, uniform(generator) < keepProbability);
    return tensor;
  }
  unsigned bits = std::min(31u, 8 * getByteSize(kind) - 1);
  for (int64_t i = 0; i < n; ++i)
    tensor.setInt(i, intBound > 0
                         ? static_cast<int64_t>(generator() %
                                                static_cast<uint64_t>(intBound))
                         : static_cast<int64_t>(generator() >> (64 - bits)));
  return tensor;
}
