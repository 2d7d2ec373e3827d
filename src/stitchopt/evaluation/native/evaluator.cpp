// In-process evaluation of one (bitcode, pipeline, options) triple against libLLVM, exposed as a C ABI
// for ctypes. Two phases, so that the caller can skip codegen when it already knows the optimized IR:
//   so_optimize: parse the bitcode into a fresh LLVMContext, run the pipeline, count instructions and
//                serialize the optimized module (its sha256 is the codegen-skip key);
//   so_codegen:  emit the object file into memory.
// Both phases run inside a CrashRecoveryContext: LLVM fatal errors come back as SO_CRASH with LLVM's message,
// signals (abort, segfault) as SO_SIGNAL, instead of killing the caller. After a signal the process state is
// suspect (the signal may have hit anywhere, e.g. inside malloc), so the caller must not use it again.
// Hangs are the caller's watchdog's job.

#include "llvm/ADT/DepthFirstIterator.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/CodeGen/CommandFlags.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <chrono>
#include <map>
#include <tuple>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;

extern "C" {
enum so_status { SO_OK = 0, SO_COMPILE_ERROR = 1, SO_CRASH = 2, SO_SIGNAL = 3 };

struct so_opt_result {
  int status;
  long long instruction_count;
  double opt_seconds;
};

struct so_codegen_result {
  int status;
  double codegen_seconds;
};
}

namespace {

// opt and llc build their target machines from these flags' defaults; registering them here makes
// InitTargetOptionsFromCodeGenFlags give exactly the options the command-line tools use.
codegen::RegisterCodeGenFlags CodeGenFlags;

std::string FatalMessage;  // filled by the fatal error handler before crash recovery unwinds

// report_fatal_error calls exit(1) after its handler, bypassing crash recovery: unwind from here instead.
// (It releases its handler mutex before calling us, so jumping out leaves no lock held.)
void recordFatalError(void *, const char *reason, bool) {
  FatalMessage = std::string("LLVM ERROR: ") + reason;
  if (CrashRecoveryContext *recovery = CrashRecoveryContext::GetCurrent()) recovery->HandleExit(1);
}

// CrashRecoveryContext reports a signal as 128 + its number, like a shell.
std::string describe(int retCode) {
  if (retCode > 128) return "signal " + std::to_string(retCode - 128) + ": " + strsignal(retCode - 128);
  return "exit status " + std::to_string(retCode);
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// cl::opt flags such as -inlinedefault-threshold=5 are process-global: reset the ones the previous
// evaluation set, then apply this evaluation's, so results never depend on evaluation order.
std::vector<cl::Option *> AppliedOptions;

bool applyOptFlags(const char *flags, std::string &error) {
  for (cl::Option *option : AppliedOptions) option->reset();
  AppliedOptions.clear();
  auto &registered = cl::getRegisteredOptions();
  StringRef rest(flags ? flags : "");
  while (!rest.empty()) {
    auto [flag, tail] = rest.split('\n');
    rest = tail;
    flag = flag.trim();
    if (flag.empty()) continue;
    auto [name, value] = flag.ltrim('-').split('=');
    auto found = registered.find(name);
    if (found == registered.end()) {
      error = ("unknown opt flag: " + flag).str();
      return false;
    }
    cl::Option *option = found->second;
    if (option->addOccurrence(1, name, value)) {
      error = ("invalid value for opt flag: " + flag).str();
      return false;
    }
    AppliedOptions.push_back(option);
  }
  return true;
}


CodeGenOptLevel codegenLevel(int level) {
  switch (level) {
    case 0: return CodeGenOptLevel::None;
    case 1: return CodeGenOptLevel::Less;
    case 3: return CodeGenOptLevel::Aggressive;
    default: return CodeGenOptLevel::Default;
  }
}

// Target machines are independent of any module or context, so one per (triple, PIC, level) is reused.
std::map<std::tuple<std::string, bool, int>, std::unique_ptr<TargetMachine>> Machines;

TargetMachine *machineFor(const std::string &triple, bool pic, int level, std::string &error) {
  auto &slot = Machines[{triple, pic, level}];
  if (!slot) {
    const Target *target = TargetRegistry::lookupTarget(triple, error);
    if (!target) return nullptr;
    TargetOptions options = codegen::InitTargetOptionsFromCodeGenFlags(Triple(triple));
    slot.reset(target->createTargetMachine(triple, "", "", options, pic ? Reloc::PIC_ : Reloc::Static,
                                           std::nullopt, codegenLevel(level)));
    if (!slot) error = "cannot create a target machine for " + triple;
  }
  return slot.get();
}

}  // namespace

struct so_evaluation {
  std::unique_ptr<LLVMContext> context;
  std::unique_ptr<Module> module;
  bool pic = true;
  std::string bitcode;  // the optimized module, as opt would write it
  SmallVector<char, 0> object;
  std::string error;
  int codegen_level = 2;
};

namespace {

// Runs one phase under crash recovery and times it: its status, SO_CRASH with LLVM's message after a fatal
// error, or SO_SIGNAL after a signal.
template <typename Phase>
int runRecovering(so_evaluation &ev, const char *where, double &seconds, Phase phase) {
  FatalMessage.clear();
  auto start = std::chrono::steady_clock::now();
  int status = SO_CRASH;
  CrashRecoveryContext recovery;
  bool finished = recovery.RunSafely([&] { status = phase(); });
  seconds = secondsSince(start);
  if (finished) return status;
  ev.error = FatalMessage.empty() ? std::string("crashed ") + where + " (" + describe(recovery.RetCode) + ")"
                                  : FatalMessage;
  // The module may be half-transformed; leak it rather than run destructors over broken state.
  (void)ev.module.release();
  (void)ev.context.release();
  return recovery.RetCode > 128 ? SO_SIGNAL : SO_CRASH;
}

std::string tripleOf(const Module &module) {
  const std::string &triple = module.getTargetTriple();
  return triple.empty() ? sys::getDefaultTargetTriple() : triple;
}

int optimize(so_evaluation &ev, const char *data, size_t size, const char *pipeline, bool pic,
                    so_opt_result &out) {
  auto buffer = MemoryBuffer::getMemBuffer(StringRef(data, size), "input", false);
  auto parsed = parseBitcodeFile(buffer->getMemBufferRef(), *ev.context);
  if (!parsed) {
    ev.error = toString(parsed.takeError());
    return SO_COMPILE_ERROR;
  }
  ev.module = std::move(*parsed);
  ev.pic = pic;
  // Like opt: a target machine at codegen level None (opt's unset -codegen-opt-level), the IR's layout kept.
  TargetMachine *machine = machineFor(tripleOf(*ev.module), pic, 0, ev.error);
  if (!machine) return SO_COMPILE_ERROR;

  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassInstrumentationCallbacks callbacks;
  StandardInstrumentations instrumentations(*ev.context, false);
  instrumentations.registerCallbacks(callbacks, &mam);
  PassBuilder builder(machine, PipelineTuningOptions(), std::nullopt, &callbacks);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  ModulePassManager passes;
  if (*pipeline != '\0') {  // opt accepts an empty -passes= (no passes); the parser does not
    if (Error err = builder.parsePassPipeline(passes, pipeline)) {
      ev.error = toString(std::move(err));
      return SO_COMPILE_ERROR;
    }
  }
  passes.addPass(VerifierPass());  // opt verifies its output; a broken module is a fatal error there too
  passes.run(*ev.module, mam);

  // Like FunctionPropertiesAnalysis' TotalInstructionCount: blocks reachable from the entry only.
  long long count = 0;
  for (const Function &function : *ev.module)
    if (!function.isDeclaration())
      for (const BasicBlock *block : depth_first(&function.getEntryBlock())) count += block->sizeWithoutDebug();
  out.instruction_count = count;
  raw_string_ostream stream(ev.bitcode);
  WriteBitcodeToFile(*ev.module, stream, /*ShouldPreserveUseListOrder=*/true);
  stream.flush();
  return SO_OK;
}

int emitObject(so_evaluation &ev) {
  // Like llc: its own target machine at the codegen level, and the target's data layout.
  TargetMachine *machine = machineFor(tripleOf(*ev.module), ev.pic, ev.codegen_level, ev.error);
  if (!machine) return SO_COMPILE_ERROR;
  ev.module->setDataLayout(machine->createDataLayout());
  raw_svector_ostream stream(ev.object);
  legacy::PassManager passes;
  // Like llc: library-call knowledge for this triple (the pass manager's default knows no target).
  TargetLibraryInfoImpl libraryInfo(Triple(ev.module->getTargetTriple()));
  passes.add(new TargetLibraryInfoWrapperPass(libraryInfo));
  if (machine->addPassesToEmitFile(passes, stream, nullptr, CodeGenFileType::ObjectFile)) {
    ev.error = "this target cannot emit object files";
    return SO_COMPILE_ERROR;
  }
  passes.run(*ev.module);
  return SO_OK;
}

}  // namespace

extern "C" {

const char *so_llvm_version(void) { return LLVM_VERSION_STRING; }

const char *so_llvm_bindir(void) { return STITCHOPT_LLVM_BINDIR; }

void so_initialize(void) {
  InitializeAllTargetInfos();
  InitializeAllTargets();
  InitializeAllTargetMCs();
  InitializeAllAsmPrinters();
  CrashRecoveryContext::Enable();
  install_fatal_error_handler(recordFatalError, nullptr);
}

// Returns a handle that owns the optimized module (free it with so_free), or null only on allocation failure.
so_evaluation *so_optimize(const char *data, size_t size, const char *pipeline, const char *opt_flags, int pic,
                           int codegen_level, so_opt_result *out) {
  auto *ev = new so_evaluation();
  ev->context = std::make_unique<LLVMContext>();
  ev->codegen_level = codegen_level;
  *out = so_opt_result{SO_OK, 0, 0.0};
  if (!applyOptFlags(opt_flags, ev->error)) {
    out->status = SO_COMPILE_ERROR;
    return ev;
  }
  out->status = runRecovering(*ev, "while optimizing", out->opt_seconds,
                               [&] { return optimize(*ev, data, size, pipeline, pic != 0, *out); });
  return ev;
}

void so_codegen(so_evaluation *ev, so_codegen_result *out) {
  *out = so_codegen_result{SO_CRASH, 0.0};
  if (!ev->module) {
    ev->error = "nothing to generate code for";
    return;
  }
  out->status = runRecovering(*ev, "in codegen", out->codegen_seconds, [&] { return emitObject(*ev); });
}

const char *so_bitcode(so_evaluation *ev, size_t *size) {
  *size = ev->bitcode.size();
  return ev->bitcode.data();
}

const char *so_object(so_evaluation *ev, size_t *size) {
  *size = ev->object.size();
  return ev->object.data();
}

const char *so_error(so_evaluation *ev) { return ev->error.c_str(); }

void so_free(so_evaluation *ev) { delete ev; }

}  // extern "C"
