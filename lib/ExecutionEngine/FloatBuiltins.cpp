//===- FloatBuiltins.cpp - 16-bit float conversions for JIT-compiled code -===//
#include "attnfuse/ExecutionEngine/FloatBuiltins.h"

#include "llvm/ADT/bit.h"

using namespace attnfuse;

uint16_t attnfuse::roundToHalfBits(double value,
                                   const llvm::fltSemantics &semantics) {
  llvm::APFloat f(value);
  bool losesInfo;
  f.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

double attnfuse::halfBitsToDouble(uint16_t bits,
                                  const llvm::fltSemantics &semantics) {
  return llvm::APFloat(semantics, llvm::APInt(16, bits)).convertToDouble();
}

// The builtins, with the calling convention of compiler-rt's and libgcc's:
// 16-bit floats are passed and returned in SSE registers (_Float16, __bf16).
// Only bit casts touch the 16-bit types here, so none of them calls a builtin
// itself. (An f32 value widens to f64 exactly, so rounding it from f64 is one
// rounding of the exact value.)
namespace {
const llvm::fltSemantics &half() { return llvm::APFloat::IEEEhalf(); }
const llvm::fltSemantics &bfloat() { return llvm::APFloat::BFloat(); }

_Float16 truncsfhf2(float x) {
  return llvm::bit_cast<_Float16>(roundToHalfBits(x, half()));
}
_Float16 truncdfhf2(double x) {
  return llvm::bit_cast<_Float16>(roundToHalfBits(x, half()));
}
__bf16 truncsfbf2(float x) {
  return llvm::bit_cast<__bf16>(roundToHalfBits(x, bfloat()));
}
__bf16 truncdfbf2(double x) {
  return llvm::bit_cast<__bf16>(roundToHalfBits(x, bfloat()));
}
float extendhfsf2(_Float16 x) {
  return static_cast<float>(
      halfBitsToDouble(llvm::bit_cast<uint16_t>(x), half()));
}
double extendhfdf2(_Float16 x) {
  return halfBitsToDouble(llvm::bit_cast<uint16_t>(x), half());
}
float extendbfsf2(__bf16 x) {
  return static_cast<float>(
      halfBitsToDouble(llvm::bit_cast<uint16_t>(x), bfloat()));
}
} // namespace

void attnfuse::forEachFloatBuiltin(
    llvm::function_ref<void(llvm::StringRef, void *)> fn) {
  fn("__truncsfhf2", reinterpret_cast<void *>(&truncsfhf2));
  fn("__truncdfhf2", reinterpret_cast<void *>(&truncdfhf2));
  fn("__truncsfbf2", reinterpret_cast<void *>(&truncsfbf2));
  fn("__truncdfbf2", reinterpret_cast<void *>(&truncdfbf2));
  fn("__extendhfsf2", reinterpret_cast<void *>(&extendhfsf2));
  fn("__extendhfdf2", reinterpret_cast<void *>(&extendhfdf2));
  fn("__extendbfsf2", reinterpret_cast<void *>(&extendbfsf2));
}
