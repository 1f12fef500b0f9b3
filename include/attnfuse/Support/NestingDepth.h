//===- NestingDepth.h - a bound on the nesting of MLIR text -----*- C++ -*-===//
//
// MLIR's parser (and the verifier, the printer and many passes after it)
// recurses once per nested region, attribute or type, so deeply nested text
// overflows the stack: a segfault of attnfuse-opt and attnfuse-run, and of
// the Python process that calls the C API. Every attnfuse entry point that
// parses text first checks that its brackets nest at most
// kMaxNestingDepth deep and reports the first one that goes deeper, at its
// location. 1000 levels take a few MB of stack in the deepest recursion we
// measured (regions: the parser, the verifier and canonicalize ran 3000
// levels on an 8 MB stack and crashed at 6000).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_SUPPORT_NESTINGDEPTH_H
#define ATTNFUSE_SUPPORT_NESTINGDEPTH_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace attnfuse {

/// The deepest bracket nesting accepted in MLIR text.
constexpr unsigned kMaxNestingDepth = 1000;

/// Returns the offset in `text` of the first bracket ('(', '[', '{' or '<')
/// nested deeper than `maxDepth`, or nothing. String literals and `//`
/// comments are skipped; '<' of "<=" and '>' of "->" and ">=" are not
/// brackets.
inline std::optional<size_t>
findExcessiveNesting(llvm::StringRef text,
                     unsigned maxDepth = kMaxNestingDepth) {
  size_t depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    char next = i + 1 < e ? text[i + 1] : '\0';
    switch (c) {
    case '"':
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      break;
    case '/':
      if (next == '/')
        while (i < e && text[i] != '\n')
          ++i;
      break;
    case '<':
      if (next == '=')
        break;
      [[fallthrough]];
    case '(':
    case '[':
    case '{':
      if (++depth > maxDepth)
        return i;
      break;
    case '>':
      if (next == '=' || (i > 0 && text[i - 1] == '-'))
        break;
      [[fallthrough]];
    case ')':
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

} // namespace attnfuse

#endif // ATTNFUSE_SUPPORT_NESTINGDEPTH_H
