//===- FloatBuiltins.h - f16/bf16 conversions for JIT code ---*- C++ -*-===//
//
// LLVM's x86-64 backend lowers conversions between f32/f64 and f16/bf16 to
// calls of runtime builtins (`__truncsfbf2`, `__extendhfsf2`, ...) unless the
// target CPU has instructions for them (F16C, AVX-512 BF16). Which builtins a
// JIT-compiled module calls therefore depends on the CPU it is compiled for,
// and the C runtime of the machine may lack them (Debian 12's libgcc has the
// f16 ones, not the bf16 ones). The host JIT (HostExecution.h) provides these,
// so that code compiled for any x86-64 CPU finds them. Every conversion
// rounds to nearest, ties to even (NaNs stay NaNs, quiet), as the hardware
// instructions do.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_EXECUTIONENGINE_FLOATBUILTINS_H
#define ATTNFUSE_EXECUTIONENGINE_FLOATBUILTINS_H

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace attnfuse {

/// The bits of `value` rounded to the 16-bit format `semantics` (IEEE half or
/// bfloat16), to nearest, ties to even: one rounding from the exact value.
uint16_t roundToHalfBits(double value, const llvm::fltSemantics &semantics);

/// The value of the 16-bit float `bits` of `semantics` (exact).
double halfBitsToDouble(uint16_t bits, const llvm::fltSemantics &semantics);

/// Calls `fn` with the name and address of each conversion builtin the host
/// JIT provides.
void forEachFloatBuiltin(
    llvm::function_ref<void(llvm::StringRef name, void *address)> fn);

} // namespace attnfuse

#endif // ATTNFUSE_EXECUTIONENGINE_FLOATBUILTINS_H
