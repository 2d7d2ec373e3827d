//===- text_lines.h - Lines of printed IR as Python reads them -*- C++ -*-===//
//
// The features and the guards both port Python parsers that read the module's
// printed text line by line (str.splitlines()): one definition of a line.
//
//===----------------------------------------------------------------------===//

#ifndef STITCHOPT_CC_PLUGIN_TEXT_LINES_H
#define STITCHOPT_CC_PLUGIN_TEXT_LINES_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>

namespace stitchopt {

inline bool startsWithAt(llvm::StringRef S, size_t Pos,
                         llvm::StringRef Prefix) {
  return Pos <= S.size() && S.substr(Pos).starts_with(Prefix);
}

/// The length of the line break of Python's str.splitlines() at `I` that can
/// occur in UTF-8 text, 0 when there is none.
inline size_t lineBreakAt(llvm::StringRef T, size_t I) {
  switch (T[I]) {
  case '\r':
    return I + 1 < T.size() && T[I + 1] == '\n' ? 2 : 1;
  case '\n':
  case '\v':
  case '\f':
  case '\x1c':
  case '\x1d':
  case '\x1e':
    return 1;
  case '\xc2':
    return startsWithAt(T, I, "\xc2\x85") ? 2 : 0;
  case '\xe2':
    return startsWithAt(T, I, "\xe2\x80\xa8") ||
                   startsWithAt(T, I, "\xe2\x80\xa9")
               ? 3
               : 0;
  default:
    return 0;
  }
}

/// `Fn` on each line of `Text`, as str.splitlines() splits it.
template <typename CallbackT>
void forEachLine(llvm::StringRef Text, CallbackT Fn) {
  size_t Start = 0;
  for (size_t I = 0; I < Text.size();) {
    size_t Break = lineBreakAt(Text, I);
    if (Break == 0) {
      ++I;
      continue;
    }
    Fn(Text.slice(Start, I));
    I += Break;
    Start = I;
  }
  if (Start < Text.size())
    Fn(Text.substr(Start));
}

} // namespace stitchopt

#endif // STITCHOPT_CC_PLUGIN_TEXT_LINES_H
