//===- isolate.h - Work in a child process, within a time limit -*- C++ -*-===//
//
// A candidate list is untrusted work inside a user's compiler: an LLVM pass
// may crash on an unusual module or run for minutes (the IR outliner on a
// large function does). Candidates are therefore tried in a forked child of
// clang first; what the child reports decides, and only a list that finished
// there runs in clang itself.
//
//===----------------------------------------------------------------------===//

#ifndef STITCHOPT_CC_PLUGIN_ISOLATE_H
#define STITCHOPT_CC_PLUGIN_ISOLATE_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"

#include <string>

namespace stitchopt {

/// Runs `Work` in a forked child and returns the text it returned, or an
/// error saying that the child did not finish within `LimitSeconds`, died on
/// a signal, or could not be started. The child never touches this process's
/// files: its stderr goes to /dev/null, LLVM's crash and fatal-error handlers
/// (which delete the compiler's output files) are replaced, and it ends with
/// _exit.
llvm::Expected<std::string> inChild(llvm::function_ref<std::string()> Work,
                                    double LimitSeconds);

} // namespace stitchopt

#endif // STITCHOPT_CC_PLUGIN_ISOLATE_H
