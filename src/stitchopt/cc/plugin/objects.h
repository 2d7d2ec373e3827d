//===- objects.h - Objects compiled in memory, measured like stitchopt -----===//
//
// The exact policy and jit mode compare candidates by object size before
// clang's own back end runs. clang's TargetMachine is out of a plugin's reach,
// so one is built from the module (triple, target-cpu, target-features, PIC
// level, code model) and from the options of this clang -cc1 that shape an
// object (-faddrsig, -ffunction-sections, ...): the same machine measures
// every candidate, and the object clang writes is clang's own.
//
//===----------------------------------------------------------------------===//

#ifndef STITCHOPT_PLUGIN_OBJECTS_H
#define STITCHOPT_PLUGIN_OBJECTS_H

#include "llvm/ADT/SmallString.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <cstdint>
#include <memory>

namespace stitchopt {

/// A TargetMachine for `M` as this clang process would build it.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
targetMachineFor(const llvm::Module &M);

/// `M` compiled to an object or assembly in memory (consumed: code generation
/// changes the IR), as llc would with `TM` and this triple's library info.
llvm::Expected<llvm::SmallString<0>> emit(llvm::TargetMachine &TM,
                                          llvm::Module &M,
                                          llvm::CodeGenFileType Kind);

/// Compiles `M` (consumed: code generation changes the IR) to an object in
/// memory and returns its size: allocated, file-backed sections (no .bss),
/// what stitchopt.toolchain.elf counts.
llvm::Expected<uint64_t> objectSize(llvm::TargetMachine &TM, llvm::Module &M);

} // namespace stitchopt

#endif
