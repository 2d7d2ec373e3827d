//===- plugin.cpp - stitchopt's model inside clang and opt ----------------===//
//
// `clang -Oz -fpass-plugin=libstitchopt-plugin.so` runs the shipped model on
// each translation unit: features of the module as the front end wrote it,
// the model's order of its coreset lists, and the chosen list instead of
// clang's -Oz pipeline. clang has no API to replace its pipeline, so the list
// runs at the PipelineStart extension point with clang's own PassBuilder and
// analysis managers, and clang's optional passes are then vetoed for that
// module (required ones, e.g. sanitizers, still run). Policies:
//   exact (default): -Oz's object and each candidate's are compiled in memory
//       on clones; a list is kept only where its object is smaller and its
//       output passes stitchopt-cc's guards (guards.h), smallest first.
//   fast: one pipeline; the model's choice when it is predicted to beat -Oz
//       by more than the model's cross-validated margin, else -Oz.
// Anything wrong (model, list, LLVM version) is one warning line and plain
// -Oz: the plugin never fails a compile.
//
// Settings (environment, as for stitchopt-cc): STITCHOPT_MODEL (a model
// directory with plugin.json, or `default`), STITCHOPT_MODE (static, jit),
// STITCHOPT_K, STITCHOPT_POLICY (exact, fast), STITCHOPT_LIST (one list for
// every unit), STITCHOPT_BUILD_LOG (one JSON line per unit, the wrapper's
// build log fields), STITCHOPT_OFFLOAD (keep: OpenMP offload data stays on
// the device across loops at every level but -O0; off, the default).
//
//===----------------------------------------------------------------------===//

#include "guards.h"
#include "isolate.h"
#include "module_features.h"
#include "model.h"
#include "objects.h"
#include "target_data.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LazyCallGraph.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <algorithm>
#include <chrono>
#include <dlfcn.h>
#include <fstream>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

using namespace llvm;

namespace stitchopt {

static constexpr unsigned DefaultK = 5; // apply.modes.RANKED_K
// How long a unit's candidate lists may run in their children, all together:
// this many times what -Oz took on the same module (pipeline and object), and
// at least the minimum; the fast policy, which measures no -Oz, gives its one
// list the minimum.
static constexpr double LimitOverOz = 4.0;
static constexpr double MinimumLimitSeconds = 3.0;

/// One warning line per distinct message and process.
static void warnOnce(const Twine &Message) {
  static std::mutex Lock;
  static StringSet<> Said;
  std::string Text = Message.str();
  std::lock_guard<std::mutex> Guard(Lock);
  if (Said.insert(Text).second)
    errs() << "stitchopt plugin: warning: " << Text << "\n";
}

/// Why a module's features are missing. The function properties are the one
/// representation that declines a module: one whose function names Python's
/// reader would read back otherwise (features/native.py matches the words).
static std::string notComputed(StringRef Name) {
  std::string Text = "the module's " + Name.str() + " features could not be computed";
  if (Name == "func_properties")
    Text += " (a function name that is not UTF-8 or holds a line break)";
  return Text;
}

static std::string setting(const char *Name) {
  std::optional<std::string> Value = sys::Process::GetEnv(Name);
  return Value ? StringRef(*Value).trim().str() : std::string();
}

/// What the environment asks of the plugin; a bad value is a warning and
/// its default.
struct Settings {
  std::string ModelPath;
  std::string List;
  bool Jit = false;
  unsigned K = DefaultK;
  bool Fast = false;
  std::string Log;

  static Settings read();
};

/// The directory of this shared object: the shipped model lies beside it.
static std::string pluginDirectory() {
  Dl_info Info;
  if (!dladdr(reinterpret_cast<void *>(&warnOnce), &Info) || !Info.dli_fname)
    return "";
  SmallString<256> Path(Info.dli_fname);
  sys::fs::make_absolute(Path);
  return sys::path::parent_path(Path).str();
}

Settings Settings::read() {
  Settings S;
  std::string Model = setting("STITCHOPT_MODEL");
  if (Model.empty() || Model == "default") {
    SmallString<256> Path(pluginDirectory());
    sys::path::append(Path, "..", "..", "models");
    sys::path::append(Path, "default", "plugin.json");
    S.ModelPath = Path.str().str();
  } else {
    SmallString<256> Path(Model);
    sys::path::append(Path, "plugin.json");
    S.ModelPath = Path.str().str();
  }
  S.List = setting("STITCHOPT_LIST");
  std::string Mode = setting("STITCHOPT_MODE");
  if (Mode == "jit")
    S.Jit = true;
  else if (!Mode.empty() && Mode != "static")
    warnOnce("STITCHOPT_MODE=" + Mode +
             ": the plugin runs static or jit (search and tune are "
             "stitchopt-cc's); using static");
  std::string K = setting("STITCHOPT_K");
  unsigned Parsed = 0;
  if (!K.empty() && (StringRef(K).getAsInteger(10, Parsed) || Parsed == 0))
    warnOnce("STITCHOPT_K=" + K + ": use a positive whole number; using " +
             Twine(DefaultK));
  else if (!K.empty())
    S.K = Parsed;
  std::string Policy = setting("STITCHOPT_POLICY");
  if (Policy == "fast")
    S.Fast = true;
  else if (!Policy.empty() && Policy != "exact")
    warnOnce("STITCHOPT_POLICY=" + Policy + ": use exact or fast; using exact");
  if (S.Fast && S.Jit) {
    warnOnce("jit compares its lists' objects, which is the exact policy; "
             "using exact");
    S.Fast = false;
  }
  S.Log = setting("STITCHOPT_BUILD_LOG");
  return S;
}

/// The model file, read once per process; its error otherwise.
struct LoadedModel {
  std::optional<PluginModel> Model;
  std::string Error;
};

static const LoadedModel &loadedModel(StringRef Path) {
  static std::once_flag Once;
  static LoadedModel Loaded;
  std::call_once(Once, [&] {
    Expected<PluginModel> M = PluginModel::load(Path);
    if (!M) {
      Loaded.Error = toString(M.takeError());
      return;
    }
    StringRef Version(M->LLVMVersion);
    if (Version.split('.').first != Twine(LLVM_VERSION_MAJOR).str()) {
      Loaded.Error = (Path + ": made for LLVM " + Version + ", this is LLVM " +
                      LLVM_VERSION_STRING +
                      "; export a model trained for this LLVM")
                         .str();
      return;
    }
    for (const auto &[Name, V] : M->Representations)
      if (featureNames(Name, V).empty()) {
        Loaded.Error = (Path + ": representation " + Name + " v" + Twine(V) +
                        " is not computed by this plugin; export a model "
                        "on autophase, histogram and func_properties")
                           .str();
        return;
      }
    size_t Features = 0;
    for (const auto &[Name, V] : M->Representations)
      Features += featureNames(Name, V).size();
    if (Features != M->features()) {
      Loaded.Error = (Path + ": " + Twine(M->features()) +
                      " features, this plugin computes " + Twine(Features) +
                      " for its representations; export the model again")
                         .str();
      return;
    }
    Loaded.Model = std::move(*M);
  });
  return Loaded;
}

/// A module whose pipeline the plugin ran carries this named metadata: clang's
/// optional passes skip it. A mark on the module itself, not a set of
/// addresses, so that a module freed and another made at its address (a
/// host compiling many modules in one process) is never mistaken for it.
static constexpr const char *PipelineRan = "stitchopt.pipeline-ran";

static void markPipelineRan(Module &M) {
  M.getOrInsertNamedMetadata(PipelineRan);
}

static bool pipelineRan(const Module *M) {
  return M && M->getNamedMetadata(PipelineRan);
}

static const Module *moduleOf(const Any &IR) {
  if (const auto *M = any_cast<const Module *>(&IR))
    return *M;
  if (const auto *F = any_cast<const Function *>(&IR))
    return (*F)->getParent();
  if (const auto *C = any_cast<const LazyCallGraph::SCC *>(&IR))
    return (*C)->begin()->getFunction().getParent();
  if (const auto *L = any_cast<const Loop *>(&IR))
    return (*L)->getHeader()->getModule();
  return nullptr;
}

/// A list's `inline` takes opt's default threshold (225); clang's -Oz
/// pipeline inlines at 5. The wrapper gives opt -inlinedefault-threshold=5
/// for that (toolchain.baselines.OPT_FLAGS); here the same option is set once,
/// unless the user set it with -mllvm.
static void useTheInlineThresholdOfOz() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    StringMap<cl::Option *> &Options = cl::getRegisteredOptions();
    auto Found = Options.find("inlinedefault-threshold");
    if (Found == Options.end() || Found->second->getNumOccurrences() > 0)
      return;
    if (Found->second->addOccurrence(0, "inlinedefault-threshold", "5"))
      warnOnce("cannot set -inlinedefault-threshold; lists that inline "
               "may differ from stitchopt-cc's");
  });
}

/// True while the plugin builds a pipeline itself: clang's -Oz pipeline for
/// comparison runs the PipelineStart callbacks again, which must not add the
/// plugin to it.
static thread_local bool BuildingOwnPipeline = false;

/// Why this compile is left to clang untouched, or empty. Output that is IR
/// (LTO, -emit-llvm) keeps clang's pipeline; instrumentation and profiles add
/// passes clang runs after PipelineStart that are not required ones, so the
/// plugin's veto would drop them (as the wrapper, it passes them through).
/// Both the driver's and cc1's spellings: in-process cc1 keeps the driver's.
/// The directories coverage mapping records are no instrumentation (that is
/// -fcoverage-mapping): the driver gives every cc1 it runs as a process of
/// its own -fcoverage-compilation-dir=, e.g. to each source of `clang a.c b.c`.
static std::string leftToClang() {
  static const char *const Prefixes[] = {
      "-flto", "-emit-llvm", "-fsanitize", "--coverage", "-coverage",
      "-fprofile-", "-fcs-profile-", "-ftest-coverage", "-fcoverage-",
      "-finstrument-", "-pg", "-fxray-", "-fmemory-profile",
      "-fpseudo-probe", "-fdebug-info-for-profiling"};
  std::ifstream In("/proc/self/cmdline", std::ios::binary);
  std::string Word;
  while (std::getline(In, Word, '\0')) {
    StringRef W(Word);
    if (W.starts_with("-fno-") || W.starts_with("-flto-jobs") ||
        W.starts_with("-fcoverage-compilation-dir") ||
        W.starts_with("-fcoverage-prefix-map"))
      continue;
    for (const char *Prefix : Prefixes)
      if (W.starts_with(Prefix))
        return ("the compile has " + W + ", which the plugin leaves to clang")
            .str();
  }
  return "";
}

using Clock = std::chrono::steady_clock;

static double secondsSince(Clock::time_point Start) {
  return std::chrono::duration<double>(Clock::now() - Start).count();
}

/// One unit's record, the build log's fields (cc.build_log.BuildEntry).
struct Record {
  std::string Outcome = "oz";
  std::string Model; // the plugin file's digest
  std::string Choice; // the model's first choice, empty for -Oz
  std::string Language; // the chooser's language for the unit, if any
  std::string Pipeline;
  std::optional<uint64_t> OzBytes, Bytes;
  unsigned Candidates = 0;
  std::string Reason;
  json::Object Phases;
};

static void writeRecord(const Settings &S, const Module &M, const Record &R,
                        double Seconds) {
  if (S.Log.empty())
    return;
  SmallString<256> Unit(M.getSourceFileName());
  sys::fs::make_absolute(Unit);
  SmallString<256> Cwd;
  sys::fs::current_path(Cwd);
  json::Object Entry{
      {"unit", Unit.str()},
      {"outcome", R.Outcome},
      {"mode", S.Jit ? "jit" : "static"},
      {"output", nullptr},
      {"pipeline", R.Pipeline.empty() ? json::Value(nullptr)
                                      : json::Value(R.Pipeline)},
      {"oz_bytes", R.OzBytes ? json::Value(*R.OzBytes) : json::Value(nullptr)},
      {"bytes", R.Bytes ? json::Value(*R.Bytes) : json::Value(nullptr)},
      {"candidates", R.Candidates},
      {"cache", nullptr},
      {"reason", R.Reason.empty() ? json::Value(nullptr)
                                  : json::Value(R.Reason)},
      {"seconds", Seconds},
      {"plain_seconds", nullptr},
      {"cwd", Cwd.str()},
      {"time", std::chrono::duration<double>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()},
      {"choice", R.Choice.empty() ? json::Value(nullptr)
                                  : json::Value(R.Choice)},
      {"model", R.Model.empty() ? json::Value(nullptr) : json::Value(R.Model)},
      {"language", R.Language.empty() ? json::Value(nullptr)
                                      : json::Value(R.Language)},
      {"via", "plugin"},
      {"policy", S.Fast ? "fast" : "exact"},
      {"phases", json::Object(R.Phases)},
  };
  std::string Line;
  raw_string_ostream(Line) << json::Value(std::move(Entry)) << "\n";
  // One write of one line with O_APPEND: parallel compiles never interleave.
  int FD = ::open(S.Log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                  0666);
  if (FD < 0 || ::write(FD, Line.data(), Line.size()) !=
                    static_cast<ssize_t>(Line.size()))
    warnOnce("cannot write the build log " + S.Log +
             "; set STITCHOPT_BUILD_LOG to a writable file");
  if (FD >= 0)
    ::close(FD);
}

/// While alive, the diagnostics of a context are counted, not shown: work on
/// copies of the user's module must neither print nor fail the compile with
/// what the module's own pipeline prints once (a warning attribute, remarks).
class CapturedDiagnostics {
public:
  explicit CapturedDiagnostics(LLVMContext &Ctx)
      : Ctx(Ctx), Previous(Ctx.getDiagnosticHandler()) {
    Ctx.setDiagnosticHandler(std::make_unique<Counter>(Errors));
  }
  ~CapturedDiagnostics() { Ctx.setDiagnosticHandler(std::move(Previous)); }
  bool sawError() const { return Errors > 0; }

private:
  struct Counter : DiagnosticHandler {
    explicit Counter(unsigned &Errors) : Errors(Errors) {}
    bool handleDiagnostics(const DiagnosticInfo &DI) override {
      if (DI.getSeverity() == DS_Error)
        ++Errors;
      return true;
    }
    unsigned &Errors;
  };

  LLVMContext &Ctx;
  std::unique_ptr<DiagnosticHandler> Previous;
  unsigned Errors = 0;
};

/// Fresh analysis managers for a clone, registered by clang's PassBuilder
/// (its target's analyses, its instrumentation).
struct Analyses {
  LoopAnalysisManager LAM;
  FunctionAnalysisManager FAM;
  CGSCCAnalysisManager CGAM;
  ModuleAnalysisManager MAM;

  explicit Analyses(PassBuilder &PB) {
    PB.registerModuleAnalyses(MAM);
    PB.registerCGSCCAnalyses(CGAM);
    PB.registerFunctionAnalyses(FAM);
    PB.registerLoopAnalyses(LAM);
    PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
  }
};

/// The module pass: choose, then run the chosen pipeline on the module.
class StitchoptPass : public PassInfoMixin<StitchoptPass> {
public:
  /// `LeaveOzToClang`: inside clang's -Oz pipeline, -Oz is what happens when
  /// the pass does nothing; in opt the pass runs -Oz itself.
  StitchoptPass(PassBuilder &PB, OptimizationLevel Level, bool LeaveOzToClang,
                std::optional<bool> Jit = std::nullopt)
      : PB(PB), Level(Level), LeaveOzToClang(LeaveOzToClang), Jit(Jit) {}

  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM);
  static bool isRequired() { return true; }

private:
  ModulePassManager referencePipeline();
  std::optional<ModulePassManager> listPipeline(StringRef Text,
                                                std::string &Why);
  Error tryInChild(const Module &M, StringRef List, double Limit);
  Error tryChecked(const Module &M, StringRef List, Record &R);
  /// `M`'s object after `MPM` (and, with `ThenRequired`, the required passes
  /// clang runs after a list), measured on a copy; with `Optimized`, the
  /// copy's IR before code generation (what the guards read).
  std::optional<uint64_t> measure(const Module &M, ModulePassManager &MPM,
                                  TargetMachine &TM, std::string &Why,
                                  std::unique_ptr<Module> *Optimized,
                                  bool ThenRequired);
  PreservedAnalyses finish(Module &M, ModuleAnalysisManager &MAM,
                           const Settings &S, Record &R,
                           std::optional<ModulePassManager> Chosen,
                           Clock::time_point Start);

  PassBuilder &PB;
  OptimizationLevel Level;
  bool LeaveOzToClang;
  std::optional<bool> Jit;
};

ModulePassManager StitchoptPass::referencePipeline() {
  BuildingOwnPipeline = true;
  ModulePassManager MPM = PB.buildPerModuleDefaultPipeline(Level);
  BuildingOwnPipeline = false;
  return MPM;
}

std::optional<ModulePassManager>
StitchoptPass::listPipeline(StringRef Text, std::string &Why) {
  useTheInlineThresholdOfOz();
  ModulePassManager MPM;
  BuildingOwnPipeline = true;
  Error E = PB.parsePassPipeline(MPM, Text);
  BuildingOwnPipeline = false;
  if (E) {
    Why = "this LLVM rejects the list (" + toString(std::move(E)) + ")";
    return std::nullopt;
  }
  return MPM;
}

std::optional<uint64_t>
StitchoptPass::measure(const Module &M, ModulePassManager &MPM,
                       TargetMachine &TM, std::string &Why,
                       std::unique_ptr<Module> *Optimized,
                       bool ThenRequired) {
  CapturedDiagnostics Diagnostics(M.getContext());
  std::unique_ptr<Module> Clone = CloneModule(M);
  {
    Analyses A(PB);
    MPM.run(*Clone, A.MAM);
    if (ThenRequired) { // what clang still runs after the plugin's list
      markPipelineRan(*Clone);
      ModulePassManager Rest = referencePipeline();
      Rest.run(*Clone, A.MAM);
    }
  }
  if (Optimized)
    *Optimized = CloneModule(*Clone);
  Expected<uint64_t> Size = objectSize(TM, *Clone);
  if (!Size) {
    Why = toString(Size.takeError());
    return std::nullopt;
  }
  if (Diagnostics.sawError()) {
    Why = "the pipeline leaves an error diagnostic (e.g. a call to an error "
          "attribute function) that -Oz removes";
    return std::nullopt;
  }
  return *Size;
}

/// The list run on a copy of `M` in a child: an error when it does not
/// finish there (the fast policy's check before running it in clang).
Error StitchoptPass::tryInChild(const Module &M, StringRef List,
                                double Limit) {
  Expected<std::string> Reply = inChild(
      [&]() -> std::string {
        std::string Why;
        std::optional<ModulePassManager> MPM = listPipeline(List, Why);
        if (!MPM)
          return "failed " + Why;
        std::unique_ptr<Module> Clone = CloneModule(M);
        Analyses A(PB);
        MPM->run(*Clone, A.MAM);
        return "ran";
      },
      Limit);
  if (!Reply)
    return Reply.takeError();
  if (*Reply != "ran")
    return createStringError(inconvertibleErrorCode(), *Reply);
  return Error::success();
}

/// The fast policy's one list tried in a child (at most the floor of the
/// time limit), its seconds in the record's phases.
Error StitchoptPass::tryChecked(const Module &M, StringRef List, Record &R) {
  Clock::time_point Began = Clock::now();
  Error E = tryInChild(M, List, MinimumLimitSeconds);
  R.Phases["candidates"] = secondsSince(Began);
  return E;
}

PreservedAnalyses StitchoptPass::finish(Module &M, ModuleAnalysisManager &MAM,
                                        const Settings &S, Record &R,
                                        std::optional<ModulePassManager> Chosen,
                                        Clock::time_point Start) {
  Clock::time_point Ran = Clock::now();
  PreservedAnalyses Result = PreservedAnalyses::all();
  if (Chosen) {
    Chosen->run(M, MAM);
    if (LeaveOzToClang)
      markPipelineRan(M);
    Result = PreservedAnalyses::none();
  } else if (!LeaveOzToClang) {
    ModulePassManager Oz = referencePipeline();
    Oz.run(M, MAM);
    Result = PreservedAnalyses::none();
  }
  if (Chosen || !LeaveOzToClang)
    R.Phases["pipeline"] = secondsSince(Ran);
  writeRecord(S, M, R, secondsSince(Start));
  return Result;
}

PreservedAnalyses StitchoptPass::run(Module &M, ModuleAnalysisManager &MAM) {
  Clock::time_point Start = Clock::now();
  Settings S = Settings::read();
  if (Jit)
    S.Jit = *Jit;
  Record R;
  if (S.Jit)
    S.Fast = false;

  // The candidates: the user's list, or the model's choice (jit: its top k).
  std::vector<std::string> Candidates;
  std::optional<double> Predicted; // the static choice's log ratio to -Oz
  if (!S.List.empty()) {
    Candidates.push_back(S.List);
  } else {
    const LoadedModel &Loaded = loadedModel(S.ModelPath);
    if (!Loaded.Model) {
      warnOnce(Loaded.Error + "; building with plain -Oz");
      R.Reason = Loaded.Error;
      return finish(M, MAM, S, R, std::nullopt, Start);
    }
    const PluginModel &Model = *Loaded.Model;
    R.Model = Model.Identity;
    Clock::time_point Began = Clock::now();
    std::vector<double> Row;
    ModuleFeatures Features(M);
    for (const auto &[Name, V] : Model.Representations)
      if (!Features.append(Name, V, Row)) {
        R.Reason = notComputed(Name);
        warnOnce(R.Reason + "; building with plain -Oz");
        return finish(M, MAM, S, R, std::nullopt, Start);
      }
    StringRef IRLanguage = Features.language();
    R.Phases["features"] = secondsSince(Began);
    Began = Clock::now();
    std::vector<Ranked> Order =
        Model.order(Row, IRLanguage, M.getSourceFileName());
    R.Language = Model.language(IRLanguage, M.getSourceFileName()).str();
    R.Phases["model"] = secondsSince(Began);
    unsigned Tried = S.Jit ? S.K : 1;
    for (unsigned I = 0; I < Tried && I < Order.size(); ++I)
      if (Order[I].List >= 0)
        Candidates.push_back(Model.Lists[Order[I].List]);
    if (Order.front().List >= 0) {
      Predicted = Order.front().PredictedLogRatio;
      R.Choice = Model.Lists[Order.front().List];
    }
    if (S.Fast && !Model.FastMargin) {
      warnOnce(S.ModelPath + " has no fast margin (trained before margins "
                             "were learned; retrain it); using exact");
      S.Fast = false;
    }
    if (Model.FastMargin && Predicted && *Predicted >= -*Model.FastMargin)
      Predicted.reset(); // fast defers to -Oz
  }
  R.Candidates = Candidates.size();

  if (S.Fast) {
    // One pipeline: the choice when it is predicted to beat -Oz by the
    // margin (a user's list always), else -Oz. Unguarded: nothing but that
    // pipeline runs, so there is no -Oz output to hold the list to (the
    // exact policy's guards need -Oz's IR and the list's side by side).
    std::optional<ModulePassManager> Chosen;
    R.Candidates = 0;
    if (!Candidates.empty() && (!S.List.empty() || Predicted)) {
      R.Candidates = 1;
      std::string Why;
      Chosen = listPipeline(Candidates.front(), Why);
      if (!Chosen) {
        warnOnce(Why + "; building with plain -Oz");
        R.Reason = Why;
      } else if (Error E = tryChecked(M, Candidates.front(), R)) {
        Chosen.reset();
        R.Reason = Candidates.front() + " " + toString(std::move(E));
      } else {
        R.Outcome = "optimized";
        R.Pipeline = Candidates.front();
      }
    }
    return finish(M, MAM, S, R, std::move(Chosen), Start);
  }
  if (Candidates.empty())
    return finish(M, MAM, S, R, std::nullopt, Start);

  // Exact: -Oz's object and each candidate's, compiled in memory.
  Clock::time_point Began = Clock::now();
  Expected<std::unique_ptr<TargetMachine>> TM = targetMachineFor(M);
  if (!TM) {
    R.Reason = toString(TM.takeError());
    warnOnce(R.Reason + "; building with plain -Oz");
    return finish(M, MAM, S, R, std::nullopt, Start);
  }
  std::string Why;
  ModulePassManager Reference = referencePipeline();
  std::unique_ptr<Module> OzOutput; // -Oz's IR, for the guards
  Clock::time_point OzStarted = Clock::now();
  R.OzBytes = measure(M, Reference, **TM, Why, &OzOutput, false);
  if (!R.OzBytes) {
    R.Reason = "-Oz's object could not be measured: " + Why;
    warnOnce(R.Reason + "; building with plain -Oz");
    return finish(M, MAM, S, R, std::nullopt, Start);
  }
  // The lists share what -Oz took, many times over, and never less than a
  // floor: the only rule here that a loaded machine can change. One list that
  // runs for minutes (the IR outliner on a large function) costs the unit
  // that much once, not once per list.
  Clock::time_point Deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::max(
                             MinimumLimitSeconds,
                             LimitOverOz * secondsSince(OzStarted))));
  R.Bytes = R.OzBytes;
  struct Smaller {
    size_t Index;
    uint64_t Size;
    std::string Reasons; // why the guards reject it; empty: it passes
  };
  std::vector<Smaller> BelowOz;
  std::vector<std::string> Notes;
  for (size_t I = 0; I < Candidates.size(); ++I) {
    if (!listPipeline(Candidates[I], Why)) {
      warnOnce(Why + "; that list is left out");
      continue;
    }
    double Left = std::chrono::duration<double>(Deadline - Clock::now()).count();
    if (Left <= 0) {
      Notes.push_back(Candidates[I] + " not tried: the unit's time for lists "
                                      "was spent");
      continue;
    }
    // In the child: the list, its object, and the guards when it beat -Oz
    // (the guards read the source, -Oz's output and the list's).
    Expected<std::string> Reply = inChild(
        [&]() -> std::string {
          std::string Failure;
          std::optional<ModulePassManager> MPM =
              listPipeline(Candidates[I], Failure);
          std::unique_ptr<Module> Output;
          std::optional<uint64_t> Size;
          if (MPM)
            Size = measure(M, *MPM, **TM, Failure, &Output, LeaveOzToClang);
          if (!Size)
            return "failed " + Failure;
          std::string Answer = std::to_string(*Size);
          if (*Size < *R.OzBytes) {
            UnitGuards Guards(M, *OzOutput, **TM);
            Answer += "\n" + join(Guards.check(*Output), "; ");
          }
          return Answer;
        },
        Left);
    if (!Reply) {
      Notes.push_back(Candidates[I] + " " + toString(Reply.takeError()));
      continue;
    }
    auto [First, Reasons] = StringRef(*Reply).split('\n');
    uint64_t Size = 0;
    if (First.getAsInteger(10, Size)) {
      Notes.push_back(Candidates[I] + " " + First.str());
      continue;
    }
    if (Size < *R.OzBytes)
      BelowOz.push_back({I, Size, Reasons.str()});
  }
  R.Phases["candidates"] = secondsSince(Began);
  // The smallest object below -Oz's whose list passes the guards, checked
  // smallest first (model_builds.passing_guards). A rejected list's reasons
  // go to the record, not to a warning.
  std::optional<size_t> Best;
  std::stable_sort(
      BelowOz.begin(), BelowOz.end(),
      [](const Smaller &A, const Smaller &B) { return A.Size < B.Size; });
  for (const Smaller &C : BelowOz) {
    if (C.Reasons.empty()) {
      Best = C.Index;
      R.Bytes = C.Size;
      break;
    }
    Notes.push_back(Candidates[C.Index] + " failed the guards: " + C.Reasons);
  }
  R.Reason = join(Notes, " | ");
  std::optional<ModulePassManager> Chosen;
  if (Best) {
    Chosen = listPipeline(Candidates[*Best], Why);
    R.Outcome = "optimized";
    R.Pipeline = Candidates[*Best];
  }
  return finish(M, MAM, S, R, std::move(Chosen), Start);
}

/// A compile the plugin leaves to clang (instrumentation, profiles, IR
/// output): untouched, and counted in the build log with the reason.
class PassedThroughPass : public PassInfoMixin<PassedThroughPass> {
public:
  explicit PassedThroughPass(std::string Reason) : Reason(std::move(Reason)) {}
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    Record R;
    R.Outcome = "passed_through";
    R.Reason = Reason;
    writeRecord(Settings::read(), M, R, 0.0);
    return PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }

private:
  std::string Reason;
};

/// `print<stitchopt-features>`: the plugin's feature row as JSON on stdout,
/// for checking it against the Python representations.
class PrintFeaturesPass : public PassInfoMixin<PrintFeaturesPass> {
public:
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    static const std::pair<const char *, int> Shipped[] = {
        {"autophase", 1}, {"histogram", 1}, {"func_properties", 1}};
    json::Array Representations, Names;
    std::vector<double> Values;
    ModuleFeatures Features(M);
    for (const auto &[Name, V] : Shipped) {
      Representations.push_back(json::Array{Name, V});
      for (std::string &N : featureNames(Name, V))
        Names.push_back(std::move(N));
      if (!Features.append(Name, V, Values)) {
        errs() << "stitchopt plugin: " << notComputed(Name) << "\n";
        return PreservedAnalyses::all();
      }
    }
    json::Array Out;
    for (double V : Values)
      Out.push_back(V);
    StringRef Language = Features.language();
    outs() << json::Value(json::Object{
                  {"representations", std::move(Representations)},
                  {"names", std::move(Names)},
                  {"values", std::move(Out)},
                  {"language", Language.empty() ? json::Value(nullptr)
                                                : json::Value(Language)}})
           << "\n";
    return PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }
};


/// `print<stitchopt-order>`: the lists in the order the modes try them (as
/// indices into the model's lists, -1 for -Oz) for the model the plugin reads
/// (STITCHOPT_MODEL), as one line of JSON on stdout (`order` null and `error`
/// set when it cannot): what jit with K builds is the first K, for checking
/// against FlagModel.rank in Python.
class PrintOrderPass : public PassInfoMixin<PrintOrderPass> {
public:
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    std::string Error;
    json::Value Order = order(M, Error);
    // Always one line of JSON, so that a script reading it learns why.
    json::Value Why = nullptr;
    if (!Error.empty()) {
      warnOnce(Error);
      Why = json::isUTF8(Error) ? Error : json::fixUTF8(Error);
    }
    outs() << json::Value(json::Object{{"order", std::move(Order)},
                                       {"error", std::move(Why)}})
           << "\n";
    return PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }

private:
  /// Indices into the model's lists (-1: -Oz), or null with `Error` set.
  static json::Value order(Module &M, std::string &Error) {
    const LoadedModel &Loaded = loadedModel(Settings::read().ModelPath);
    if (!Loaded.Model) {
      Error = Loaded.Error;
      return nullptr;
    }
    std::vector<double> Row;
    ModuleFeatures Features(M);
    for (const auto &[Name, V] : Loaded.Model->Representations)
      if (!Features.append(Name, V, Row)) {
        Error = notComputed(Name);
        return nullptr;
      }
    json::Array Order;
    for (const Ranked &R :
         Loaded.Model->order(Row, Features.language(), M.getSourceFileName()))
      Order.push_back(R.List);
    return Order;
  }
};


static void registerCallbacks(PassBuilder &PB) {
  PB.registerPipelineStartEPCallback(
      [&PB](ModulePassManager &MPM, OptimizationLevel Level) {
        // The model was trained against -Oz, and -Oz is its backup: other
        // levels are clang's.
        if (BuildingOwnPipeline || Level != OptimizationLevel::Oz)
          return;
        if (std::string Reason = leftToClang(); !Reason.empty()) {
          MPM.addPass(PassedThroughPass(std::move(Reason)));
          return;
        }
        if (!PB.getPassInstrumentationCallbacks()) {
          warnOnce("this compiler gives plugins no pass instrumentation, "
                   "so the plugin cannot replace its pipeline; building "
                   "with plain -Oz");
          return;
        }
        MPM.addPass(StitchoptPass(PB, Level, /*LeaveOzToClang=*/true));
      });
  // Offloading programs, when STITCHOPT_OFFLOAD=keep: mapped data kept on
  // the device across loops and runs of launches (target_data.h), last, where
  // clang's -O3 has inlined and simplified the host code; nothing changes in
  // a module that launches no target region. Off by default, so that a
  // default<O3> that opt runs with the plugin loaded stays clang's.
  PB.registerOptimizerLastEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel Level) {
        if (BuildingOwnPipeline || Level == OptimizationLevel::O0)
          return;
        std::string Offload = setting("STITCHOPT_OFFLOAD");
        if (Offload.empty() || Offload == "off")
          return;
        if (Offload != "keep") {
          warnOnce("STITCHOPT_OFFLOAD=" + Offload +
                   ": use keep or off (the default); leaving maps alone");
          return;
        }
        MPM.addPass(HoistTargetDataPass());
      });
  if (PassInstrumentationCallbacks *PIC = PB.getPassInstrumentationCallbacks())
    PIC->registerShouldRunOptionalPassCallback(
        [](StringRef, Any IR) { return !pipelineRan(moduleOf(IR)); });
  PB.registerPipelineParsingCallback(
      [&PB](StringRef Name, ModulePassManager &MPM,
            ArrayRef<PassBuilder::PipelineElement>) {
        if (BuildingOwnPipeline) // a list naming the plugin's passes: refused
          return false;
        if (Name == "stitchopt-static" || Name == "stitchopt-jit") {
          MPM.addPass(StitchoptPass(PB, OptimizationLevel::Oz,
                                    /*LeaveOzToClang=*/false,
                                    Name == "stitchopt-jit"));
          return true;
        }
        if (Name == "stitchopt-hoist-target-data") {
          MPM.addPass(HoistTargetDataPass());
          return true;
        }
        if (Name == "print<stitchopt-features>") {
          MPM.addPass(PrintFeaturesPass());
          return true;
        }
        if (Name == "print<stitchopt-order>") {
          MPM.addPass(PrintOrderPass());
          return true;
        }
        if (Name == "print<stitchopt-guards>") {
          MPM.addPass(PrintGuardsPass());
          return true;
        }
        return false;
      });
}

} // namespace stitchopt

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "stitchopt", "1",
          stitchopt::registerCallbacks};
}
