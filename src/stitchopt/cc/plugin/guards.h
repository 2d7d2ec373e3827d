//===- guards.h - stitchopt's guards on a list's output, in C++ -*- C++ -*-===//
//
// The guards stitchopt-cc applies before it keeps a list whose object is
// smaller than -Oz's (src/stitchopt/validate/guards.py, security_guard.py):
// exported definitions kept, no function body reduced to `unreachable`, no
// more stores to null/poison, and no security-relevant code (clearing writes
// and calls, volatile accesses, stack canary checks, fortified calls,
// overflow checks) fewer than -Oz keeps. Each summary must equal Python's
// `summarize(text)` with its `ModuleHardening` on the same module: it is read
// from the same text (the module printed as `opt -S` prints it) by hand-written
// equivalents of the Python regular expressions, and canary checks are
// counted in the assembly of the module, as Python counts them in `llc`'s.
//
//===----------------------------------------------------------------------===//

#ifndef STITCHOPT_CC_PLUGIN_GUARDS_H
#define STITCHOPT_CC_PLUGIN_GUARDS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Target/TargetMachine.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace stitchopt {

/// security_guard.HardeningCounts: security-relevant items by kind.
struct HardeningCounts {
  uint64_t ClearingWrites = 0;
  uint64_t ClearingCalls = 0;
  uint64_t VolatileAccesses = 0;
  uint64_t ProtectedFunctions = 0;
  uint64_t CanaryChecks = 0;
  uint64_t FortifiedCalls = 0;
  uint64_t OverflowChecks = 0;
};

/// security_guard.ThunkCredit: what a thunk takes over from the shared
/// functions its call reaches.
struct ThunkCredit {
  std::string Function;
  std::string Callee; // the function its body calls
  HardeningCounts Items;
};

/// guards.ModuleSummary, with its security_guard.ModuleHardening spread over
/// `Hardening` (`own`), `Thunks` and `Calls`, and whether its canary checks
/// need code generation (security_guard.needs_codegen).
struct ModuleSummary {
  std::set<std::string> Required; // externally visible, not discardable
  std::set<std::string> Exported; // visible outside the module
  std::set<std::string> UnreachableBodies; // bodies that are `unreachable`
  uint64_t UBMarkers = 0;                  // stores to null or poison
  HardeningCounts Hardening; // every item in the function that holds it
  std::vector<ThunkCredit> Thunks; // sorted by function
  // (caller, defined function it calls, directly or through thunks)
  std::set<std::pair<std::string, std::string>> Calls;
  bool NeedsCodegen = false; // some function asks for a stack protector
};

/// summarize(text) and read_counts(text) of a module's text: every field but
/// the canary checks (0).
ModuleSummary summarizeText(llvm::StringRef Text);

/// count_canaries: calls (or tail jumps) of __stack_chk_fail in assembly.
uint64_t countCanaries(llvm::StringRef Assembly);

/// The canary checks of `M`'s assembly as `TM` writes it (code generation
/// changes `M`: pass a clone).
llvm::Expected<uint64_t> canaryChecks(llvm::TargetMachine &TM, llvm::Module &M);

/// The module's summary as Python reads it from `opt -S` text, with the
/// canary checks of its assembly when it needs code generation and `TM` is
/// given (without `TM` they stay 0). `M` is not changed.
llvm::Expected<ModuleSummary> summarize(const llvm::Module &M,
                                        llvm::TargetMachine *TM);

/// The summary of `M` as it is, locals promoted (security_guard's
/// SOURCE_PIPELINE, `function(mem2reg)`, run on a clone): the guards'
/// `source`. Without canary checks: the guards compare those only between
/// -Oz and a list.
llvm::Expected<ModuleSummary> summarizeSource(const llvm::Module &M);

/// suspicious_changes: why `Candidate` looks miscompiled or weakened, in
/// Python's words; empty when every guard holds. `Reference` is -Oz's output
/// on the same `Source`.
std::vector<std::string> suspiciousChanges(const ModuleSummary &Source,
                                           const ModuleSummary &Reference,
                                           const ModuleSummary &Candidate);

/// The summary as JSON: sorted name lists, the counts as
/// ModuleHardening.to_dict gives them (`own`, `thunks`, `calls`), and
/// needs_codegen.
llvm::json::Value toJSON(const ModuleSummary &S);

/// validate.guards.Guard for one unit inside the compiler: the summaries of
/// the source and of -Oz's output are taken on the first check, each
/// candidate's on its check. `Source` and `Reference` must outlive this
/// object and not change; `Reference` and the candidates are modules after
/// their pipelines and before code generation.
class UnitGuards {
public:
  UnitGuards(const llvm::Module &Source, const llvm::Module &Reference,
             llvm::TargetMachine &TM)
      : Source(Source), Reference(Reference), TM(TM) {}

  /// Guard.check: reasons to distrust `Candidate`, empty when every guard
  /// holds. A module the guards cannot read is a reason.
  std::vector<std::string> check(const llvm::Module &Candidate);

private:
  const llvm::Module &Source;
  const llvm::Module &Reference;
  llvm::TargetMachine &TM;
  bool Ready = false;
  std::string Failure; // why the source or -Oz's output could not be read
  ModuleSummary SourceSummary, ReferenceSummary;
};

/// `print<stitchopt-guards>`: the summary of the module it runs on as one
/// JSON line on stdout ({"error": ...} when it cannot be read), for checking
/// it against the Python guards.
class PrintGuardsPass : public llvm::PassInfoMixin<PrintGuardsPass> {
public:
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  static bool isRequired() { return true; }
};

} // namespace stitchopt

#endif // STITCHOPT_CC_PLUGIN_GUARDS_H
