//===- objects.cpp - Objects compiled in memory, measured like stitchopt ---===//

#include "objects.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

using namespace llvm;

namespace stitchopt {

/// This process's arguments (clang -cc1's, or opt's): the options clang
/// turns into TargetOptions are read from them.
static const std::vector<std::string> &processArguments() {
  static const std::vector<std::string> Arguments = [] {
    std::vector<std::string> Out;
    std::ifstream In("/proc/self/cmdline", std::ios::binary);
    std::string Word;
    while (std::getline(In, Word, '\0'))
      Out.push_back(Word);
    return Out;
  }();
  return Arguments;
}

static bool hasArgument(StringRef Name) {
  for (const std::string &A : processArguments())
    if (A == Name)
      return true;
  return false;
}

/// The options of clang's BackendUtil initTargetOptions that change an
/// object's allocated bytes, as clang -cc1 was given them.
static TargetOptions clangTargetOptions() {
  TargetOptions Options;
  Options.EmitAddrsig = hasArgument("-faddrsig");
  Options.FunctionSections = hasArgument("-ffunction-sections");
  Options.DataSections = hasArgument("-fdata-sections");
  Options.UniqueSectionNames = !hasArgument("-fno-unique-section-names");
  Options.UseInitArray = !hasArgument("-fno-use-init-array");
  Options.MCOptions.X86RelaxRelocations =
      !hasArgument("-mrelax-relocations=no");
  Options.MCOptions.MCRelaxAll = hasArgument("-mrelax-all");
  Options.MCOptions.MCIncrementalLinkerCompatible =
      hasArgument("-mincremental-linker-compatible");
  Options.MCOptions.Crel = hasArgument("--crel");
  return Options;
}

static StringRef functionAttribute(const Module &M, StringRef Name) {
  for (const Function &F : M)
    if (!F.isDeclaration() && F.hasFnAttribute(Name))
      return F.getFnAttribute(Name).getValueAsString();
  return "";
}

Expected<std::unique_ptr<TargetMachine>> targetMachineFor(const Module &M) {
  static std::once_flag Initialized;
  std::call_once(Initialized, [] {
    InitializeAllTargetInfos();
    InitializeAllTargets();
    InitializeAllTargetMCs();
    InitializeAllAsmPrinters();
  });
  std::string Error;
  Triple T(M.getTargetTriple());
  const Target *Found = TargetRegistry::lookupTarget(T.str(), Error);
  if (!Found)
    return createStringError(inconvertibleErrorCode(),
                             "no target for " + T.str() + ": " + Error);
  Reloc::Model Relocation =
      M.getPICLevel() != PICLevel::NotPIC ? Reloc::PIC_ : Reloc::Static;
  std::unique_ptr<TargetMachine> TM(Found->createTargetMachine(
      T.str(), functionAttribute(M, "target-cpu"),
      functionAttribute(M, "target-features"), clangTargetOptions(),
      Relocation, M.getCodeModel(), CodeGenOptLevel::Default));
  if (!TM)
    return createStringError(inconvertibleErrorCode(),
                             "cannot make a target machine for " + T.str());
  return std::move(TM);
}

Expected<SmallString<0>> emit(TargetMachine &TM, Module &M,
                              CodeGenFileType Kind) {
  SmallString<0> Out;
  raw_svector_ostream Stream(Out);
  legacy::PassManager Passes;
  TargetLibraryInfoImpl LibraryInfo(Triple(M.getTargetTriple()));
  Passes.add(new TargetLibraryInfoWrapperPass(LibraryInfo));
  if (TM.addPassesToEmitFile(Passes, Stream, nullptr, Kind))
    return createStringError(inconvertibleErrorCode(),
                             "this target cannot emit that kind of file");
  Passes.run(M);
  return Out;
}

Expected<uint64_t> objectSize(TargetMachine &TM, Module &M) {
  Expected<SmallString<0>> Object = emit(TM, M, CodeGenFileType::ObjectFile);
  if (!Object)
    return Object.takeError();
  Expected<std::unique_ptr<object::ObjectFile>> File =
      object::ObjectFile::createObjectFile(
          MemoryBufferRef(StringRef(Object->data(), Object->size()), "object"));
  if (!File)
    return File.takeError();
  const auto *Elf = dyn_cast<object::ELFObjectFileBase>(File->get());
  if (!Elf)
    return createStringError(inconvertibleErrorCode(),
                             "sizes are measured on ELF objects only");
  uint64_t Size = 0;
  for (object::ELFSectionRef Section : Elf->sections())
    if ((Section.getFlags() & ELF::SHF_ALLOC) &&
        Section.getType() != ELF::SHT_NOBITS)
      Size += Section.getSize();
  return Size;
}

} // namespace stitchopt
