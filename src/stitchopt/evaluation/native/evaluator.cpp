// In-process evaluation of one (bitcode, pipeline, options) triple against libLLVM, exposed as a C ABI
// for ctypes. Two phases, so that the caller can skip codegen when it already knows the optimized IR:
//   so_optimize: parse the bitcode into a fresh LLVMContext, run the pipeline, count instructions and
//                serialize the optimized module (its sha256 is the codegen-skip key);
//   so_codegen:  emit the object file into memory.
// With a prefix cache (so_prefix_cache_new), a pipeline whose top-level elements run apart exactly as together
// runs one element at a time, and the cache remembers, by content, which module state each element turned which
// state into (bitcode with use-list order, least recently used out first, bounded in bytes). A later pipeline
// on the same input follows the remembered steps as far as they go and runs only the rest; a neighbour whose
// edit changed nothing rejoins the known path after its edit, and when the whole path is known nothing runs.
// Only steps that start with no analysis cached are remembered or resumed from (at the start, or after
// `invalidate<all>,invalidate<globals-aa>`, which stitchopt puts between the elements of searched lists:
// passes.pipeline.ANALYSES_RESET): LLVM passes may read analyses that earlier passes left cached (BasicAA uses
// LoopInfo when it is cached), which a module read back from bitcode would not have.
// Both phases run inside a CrashRecoveryContext: LLVM fatal errors come back as SO_CRASH with LLVM's message,
// signals (abort, segfault) as SO_SIGNAL, instead of killing the caller. After a signal the process state is
// suspect (the signal may have hit anywhere, e.g. inside malloc), so the caller must not use it again.
// Hangs are the caller's watchdog's job.

#include "llvm/ADT/DepthFirstIterator.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/ProfileSummaryInfo.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/IR/InstIterator.h"
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
#include "llvm/Support/xxhash.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <chrono>
#include <list>
#include <map>
#include <unordered_map>
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
  long long size_estimate;  // LLVM's code-size cost model summed over the optimized module (a screen for codegen)
  double opt_seconds;
  int elements;         // top-level pipeline elements, when the pipeline ran element by element; else 0
  int reused_elements;  // of those, how many came from the prefix cache
};

struct so_prefix_stats {
  long long entries;
  long long bytes;  // bitcode and keys held, never above max_bytes
  long long max_bytes;
  long long evictions;
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

// Commas outside <...> and (...) separate top-level elements (the same rule as passes.pipeline.split_top_level).
std::vector<std::string> topLevelElements(StringRef pipeline) {
  std::vector<std::string> elements;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= pipeline.size(); ++i) {
    char c = i < pipeline.size() ? pipeline[i] : ',';
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      StringRef element = pipeline.slice(start, i).trim();
      if (!element.empty()) elements.push_back(element.str());
      start = i + 1;
    }
  }
  return elements;
}

}  // namespace

// Module states by content digest, the steps between them, and finished results, least recently used out first.
struct so_prefix_cache {
  static constexpr size_t EntryOverhead = 96;  // list and hash-map nodes, per entry
  size_t maxBytes;
  size_t bytes = 0;
  long long evictions = 0;
  std::list<std::string> order;  // keys, most recently used first
  struct Entry {
    std::string value;
    std::list<std::string>::iterator position;
  };
  std::unordered_map<std::string, Entry> entries;

  explicit so_prefix_cache(size_t maxBytes) : maxBytes(maxBytes) {}

  static size_t cost(const std::string &key, const std::string &value) {
    return 2 * key.size() + value.size() + EntryOverhead;
  }

  const std::string *find(const std::string &key) {
    auto found = entries.find(key);
    if (found == entries.end()) return nullptr;
    order.splice(order.begin(), order, found->second.position);
    return &found->second.value;
  }

  void insert(const std::string &key, std::string value) {
    if (entries.count(key) || cost(key, value) > maxBytes) return;
    bytes += cost(key, value);
    order.push_front(key);
    entries.emplace(key, Entry{std::move(value), order.begin()});
    while (bytes > maxBytes) {
      auto victim = entries.find(order.back());
      bytes -= cost(victim->first, victim->second.value);
      entries.erase(victim);
      order.pop_back();
      ++evictions;
    }
  }
};

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

std::string writeBitcode(const Module &module) {
  std::string bitcode;
  raw_string_ostream stream(bitcode);
  WriteBitcodeToFile(module, stream, /*ShouldPreserveUseListOrder=*/true);
  stream.flush();
  return bitcode;
}

std::string printed(ModulePassManager &passes, PassInstrumentationCallbacks &callbacks) {
  std::string text;
  raw_string_ostream stream(text);
  passes.printPipeline(stream, [&](StringRef name) { return callbacks.getPassNameForClassName(name); });
  return stream.str();
}

// Whether running `elements` one after another is running `pipeline`: true when each parses on its own and the
// parsed passes print as the whole does (a flat list of function passes, for one, nests differently apart).
bool runsApart(const char *pipeline, const std::vector<std::string> &elements) {
  if (elements.size() < 2) return false;
  PassInstrumentationCallbacks callbacks;
  PassBuilder builder(nullptr, PipelineTuningOptions(), std::nullopt, &callbacks);
  ModulePassManager whole;
  if (Error err = builder.parsePassPipeline(whole, pipeline)) {
    consumeError(std::move(err));
    return false;
  }
  std::string apart;
  for (const std::string &element : elements) {
    ModulePassManager part;
    if (Error err = builder.parsePassPipeline(part, element)) {
      consumeError(std::move(err));
      return false;
    }
    apart += (apart.empty() ? "" : ",") + printed(part, callbacks);
  }
  return apart == printed(whole, callbacks);
}

// The optimization of one module: analysis managers that live across the passes it runs, as opt's do.
struct Optimization {
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassInstrumentationCallbacks callbacks;
  StandardInstrumentations instrumentations;
  PassBuilder builder;

  Optimization(LLVMContext &context, TargetMachine *machine)
      : instrumentations(context, false), builder(machine, PipelineTuningOptions(), std::nullopt, &callbacks) {
    instrumentations.registerCallbacks(callbacks, &mam);
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
  }

  bool run(Module &module, StringRef pipeline, std::string &error) {
    ModulePassManager passes;
    if (!pipeline.empty()) {  // opt accepts an empty -passes= (no passes); the parser does not
      if (Error err = builder.parsePassPipeline(passes, pipeline)) {
        error = toString(std::move(err));
        return false;
      }
    }
    passes.run(module, mam);
    return true;
  }
};

// Parses into a fresh context: a second module in the same one would get its struct types renamed (.0, .1).
bool parseInto(so_evaluation &ev, StringRef bitcode) {
  ev.module.reset();
  ev.context = std::make_unique<LLVMContext>();
  // Like clang (and opt -discard-value-names): local value names are dropped. They never reach the object, and
  // bitcode cannot carry the counters that make new names unique, so a module resumed from a prefix would
  // otherwise name its values differently from one optimized in a single run.
  ev.context->setDiscardValueNames(true);
  auto buffer = MemoryBuffer::getMemBuffer(bitcode, "input", false);
  auto parsed = parseBitcodeFile(buffer->getMemBufferRef(), *ev.context);
  if (!parsed) {
    ev.error = toString(parsed.takeError());
    return false;
  }
  ev.module = std::move(*parsed);
  return true;
}

// The two halves of passes.pipeline.ANALYSES_RESET.
bool isReset(StringRef element) { return element == "invalidate<all>" || element == "invalidate<globals-aa>"; }

std::string digest(StringRef bytes) {
  XXH128_hash_t hash = xxh3_128bits(arrayRefFromStringRef(bytes));
  return std::string(reinterpret_cast<const char *>(&hash), sizeof(hash));
}

// The target's code-size cost of every instruction (TargetTransformInfo::TCK_CodeSize), -1 without a target.
long long sizeEstimate(Module &module, so_evaluation &ev) {
  std::string error;
  TargetMachine *machine = machineFor(tripleOf(module), ev.pic, 0, error);
  if (!machine) return -1;
  long long total = 0;
  for (Function &function : module) {
    if (function.isDeclaration()) continue;
    TargetTransformInfo costs = machine->getTargetTransformInfo(function);
    for (Instruction &instruction : instructions(function)) {
      InstructionCost cost = costs.getInstructionCost(&instruction, TargetTransformInfo::TCK_CodeSize);
      total += cost.isValid() ? *cost.getValue() : 1;
    }
  }
  return total;
}

// opt verifies its output (a broken module is a fatal error there too). The result is the module as llc reads it
// back: reading normalizes what passes may leave behind (AutoUpgrade gives every intrinsic its own attributes,
// attribute groups are rebuilt), so it is the same whether optimized in one run or resumed from a prefix.
bool finish(so_evaluation &ev, std::unique_ptr<Optimization> &optimization, so_opt_result &out) {
  if (!optimization->run(*ev.module, "verify", ev.error)) return false;
  std::string written = writeBitcode(*ev.module);
  optimization.reset();  // before the module and context it refers to
  if (!parseInto(ev, written)) return false;
  // Like FunctionPropertiesAnalysis' TotalInstructionCount: blocks reachable from the entry only.
  long long count = 0;
  for (const Function &function : *ev.module)
    if (!function.isDeclaration())
      for (const BasicBlock *block : depth_first(&function.getEntryBlock())) count += block->sizeWithoutDebug();
  out.instruction_count = count;
  out.size_estimate = sizeEstimate(*ev.module, ev);
  ev.bitcode = writeBitcode(*ev.module);
  return true;
}

bool runWhole(so_evaluation &ev, const char *data, size_t size, const char *pipeline, so_opt_result &out) {
  if (!parseInto(ev, StringRef(data, size))) return false;
  TargetMachine *machine = machineFor(tripleOf(*ev.module), ev.pic, 0, ev.error);
  if (!machine) return false;
  auto optimization = std::make_unique<Optimization>(*ev.context, machine);
  return optimization->run(*ev.module, pipeline, ev.error) && finish(ev, optimization, out);
}

// Whether each element starts with no analysis cached: the first, a reset, and what follows a whole reset.
std::vector<bool> cleanSteps(const std::vector<std::string> &elements) {
  std::vector<bool> clean(elements.size());
  for (size_t k = 0; k < elements.size(); ++k)
    clean[k] = k == 0 || isReset(elements[k]) ||
               (k >= 2 && elements[k - 2] == "invalidate<all>" && elements[k - 1] == "invalidate<globals-aa>");
  return clean;
}

// One evaluation's walk through the cache. Keys: 'S' + state digest -> that state's bitcode; 'T' + state digest +
// step digest -> the next state's digest; 'F' + state digest -> the finished result (instruction count, bitcode).
// A step is one element under the evaluation's opt flags and relocation model.
struct CachedRun {
  so_prefix_cache &cache;
  std::vector<std::string> steps;  // digest of (flags, relocation model, element) per element
  std::vector<bool> clean;          // whether element k starts with no analysis cached

  // The walk of `elements` under `context` (opt flags and relocation model) through `cache`.
  static CachedRun of(so_prefix_cache &cache, const std::vector<std::string> &elements, const std::string &context) {
    CachedRun walk{cache, {}, cleanSteps(elements)};
    for (const std::string &element : elements) walk.steps.push_back(digest(context + '\x1f' + element));
    return walk;
  }

  const std::string *state(const std::string &id) { return cache.find('S' + id); }
  const std::string *next(const std::string &id, size_t k) { return cache.find('T' + id + steps[k]); }
  const std::string *finished(const std::string &id) { return cache.find('F' + id); }

  // Follows remembered steps from state `id` before element `k`: the furthest state reached, and the furthest
  // one on the way whose bitcode is still held (or `k` itself when none is).
  void follow(std::string &id, size_t &k, std::string &heldId, size_t &heldK) {
    heldId = id;
    heldK = k;
    while (k < steps.size() && clean[k]) {
      const std::string *to = next(id, k);
      if (!to) break;
      id = *to;
      ++k;
      if (state(id)) {
        heldId = id;
        heldK = k;
      }
    }
  }
};

// Runs `elements` through the cache: follows remembered steps as far as they go, continues from the furthest
// state whose bitcode is held, and runs the rest. After an element marked in `probes` it writes the module to
// learn its state and follows again, so that a pipeline that rejoins a known path stops running; elsewhere the
// state is unknown until the next probe. With `record`, each probe's step and state are remembered (and the
// finished result): a recorded pipeline probes after every element. Steps that may start with analyses cached
// (not first, not after an analysis reset) are neither remembered nor followed.
bool runCached(so_evaluation &ev, const char *data, size_t size, const std::vector<std::string> &elements,
               so_prefix_cache &cache, const std::string &context, const std::vector<bool> &probes, bool record,
               so_opt_result &out) {
  CachedRun walk = CachedRun::of(cache, elements, context);
  const size_t n = elements.size();
  const std::string input = digest(StringRef(data, size));
  std::string id = input, reachedId, heldId;  // id: the current state's digest, empty while unknown
  size_t k = 0, reachedK, heldK, ran = 0;
  std::unique_ptr<Optimization> optimization;
  auto load = [&](StringRef bitcode, bool resumed) {
    optimization.reset();  // before the context it refers to
    if (!parseInto(ev, bitcode)) return false;
    TargetMachine *machine = machineFor(tripleOf(*ev.module), ev.pic, 0, ev.error);
    if (!machine) return false;
    optimization = std::make_unique<Optimization>(*ev.context, machine);
    // The profile summary outlives every invalidation once a pass computed it (always-inline, first in every
    // searched list, does): a module resumed past the start has it too (codegenprepare needs it).
    if (resumed) optimization->mam.getResult<ProfileSummaryAnalysis>(*ev.module);
    return true;
  };
  while (true) {
    if (!id.empty()) {
      reachedId = heldId = id;
      reachedK = heldK = k;
      walk.follow(reachedId, reachedK, heldId, heldK);
      if (reachedK == n) {
        if (const std::string *done = walk.finished(reachedId)) {  // the rest of the path is known: stop running
          std::memcpy(&out.instruction_count, done->data(), sizeof(long long));
          std::memcpy(&out.size_estimate, done->data() + sizeof(long long), sizeof(long long));
          ev.bitcode = done->substr(2 * sizeof(long long));
          optimization.reset();
          ev.module.reset();  // codegen reads the bitcode, as llc would
          out.elements = static_cast<int>(n);
          out.reused_elements = static_cast<int>(n - ran);
          return true;
        }
      }
      if (heldK > k || !ev.module) {
        if (!load(heldK > 0 ? StringRef(*walk.state(heldId)) : StringRef(data, size), heldK > 0)) return false;
        id = heldK > 0 ? heldId : input;
        k = heldK;
      }
    }
    if (k == n) break;
    if (!optimization->run(*ev.module, elements[k], ev.error)) return false;
    ++ran;
    if (isReset(elements[k])) {  // the same module: no bitcode to write
      if (record && !id.empty() && walk.clean[k]) cache.insert('T' + id + walk.steps[k], id);
      ++k;
      continue;
    }
    if (!probes[k]) {
      id.clear();
      ++k;
      continue;
    }
    std::string bitcode = writeBitcode(*ev.module);
    std::string to = digest(bitcode);
    if (record) {
      if (!id.empty() && walk.clean[k]) cache.insert('T' + id + walk.steps[k], to);
      cache.insert('S' + to, std::move(bitcode));
    }
    id = to;
    ++k;
  }
  if (!finish(ev, optimization, out)) return false;
  if (record && !id.empty()) {
    std::string finished(2 * sizeof(long long), '\0');
    std::memcpy(finished.data(), &out.instruction_count, sizeof(long long));
    std::memcpy(finished.data() + sizeof(long long), &out.size_estimate, sizeof(long long));
    cache.insert('F' + id, finished + ev.bitcode);
  }
  out.elements = static_cast<int>(n);
  out.reused_elements = static_cast<int>(n - ran);
  return true;
}

// Where a pipeline derived from `base` writes its module: once, after the last element that differs from the base
// (the elements after it are the base's own), so that an edit that left the module as the base had it at that point
// rejoins the base's recorded path. A common prefix needs no probe: it is followed from the input.
std::vector<bool> rejoinProbes(const std::vector<std::string> &elements, const std::vector<std::string> &base) {
  const size_t n = elements.size(), shorter = std::min(n, base.size());
  size_t prefix = 0, suffix = 0;
  while (prefix < shorter && elements[prefix] == base[prefix]) ++prefix;
  while (suffix < shorter - prefix && elements[n - 1 - suffix] == base[base.size() - 1 - suffix]) ++suffix;
  std::vector<bool> probes(n, false);
  if (suffix == 0) return probes;
  for (size_t k = n - suffix; k > prefix; --k)
    if (!isReset(elements[k - 1])) {
      probes[k - 1] = true;
      break;
    }
  return probes;
}

// Whether `base` is recorded for this input: every step and its finished result are remembered.
bool recorded(so_prefix_cache &cache, StringRef input, const std::vector<std::string> &base, const std::string &context) {
  CachedRun walk = CachedRun::of(cache, base, context);
  std::string id = digest(input), heldId;
  size_t k = 0, heldK;
  walk.follow(id, k, heldId, heldK);
  return k == base.size() && walk.finished(id);
}

std::string contextOf(const char *optFlags, bool pic) {
  return std::string(optFlags ? optFlags : "") + (pic ? "\x1fpic" : "\x1fstatic");
}

// With a base (the list a search derives its candidates from) and a prefix cache, the pipeline resumes from the base's
// recorded states; without one it runs whole, as opt would.
int optimize(so_evaluation &ev, const char *data, size_t size, const char *pipeline, const char *base,
             const char *optFlags, bool pic, so_prefix_cache *cache, so_opt_result &out) {
  ev.pic = pic;
  if (cache && base && *base) {
    std::vector<std::string> elements = topLevelElements(pipeline), baseElements = topLevelElements(base);
    if (runsApart(pipeline, elements) && runsApart(base, baseElements)) {
      bool ok = runCached(ev, data, size, elements, *cache, contextOf(optFlags, pic),
                          rejoinProbes(elements, baseElements), false, out);
      return ok ? SO_OK : SO_COMPILE_ERROR;
    }
  }
  return runWhole(ev, data, size, pipeline, out) ? SO_OK : SO_COMPILE_ERROR;
}

// Runs `base` element by element, remembering every state on its path, unless that is already done. Its result is
// thrown away: it is the search's best, measured already.
int recordBase(so_evaluation &scratch, const char *data, size_t size, const char *base, const char *optFlags, bool pic,
               so_prefix_cache &cache) {
  scratch.pic = pic;
  std::vector<std::string> elements = topLevelElements(base);
  std::string context = contextOf(optFlags, pic);
  if (!runsApart(base, elements) || recorded(cache, StringRef(data, size), elements, context)) return SO_OK;
  so_opt_result ignored{};
  std::vector<bool> everywhere(elements.size(), true);
  return runCached(scratch, data, size, elements, cache, context, everywhere, true, ignored) ? SO_OK : SO_COMPILE_ERROR;
}

int emitObject(so_evaluation &ev) {
  if (!ev.module && !parseInto(ev, ev.bitcode)) return SO_COMPILE_ERROR;  // a result the prefix cache knew
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
// `cache` and `base` may be null (no prefix reuse). With both, `base` is first recorded in the cache unless it is
// already (that time is not the pipeline's own, so opt_seconds leaves it out), and the pipeline resumes from it.
so_evaluation *so_optimize(const char *data, size_t size, const char *pipeline, const char *base,
                           const char *opt_flags, int pic, int codegen_level, so_prefix_cache *cache,
                           so_opt_result *out) {
  auto *ev = new so_evaluation();
  ev->codegen_level = codegen_level;
  *out = so_opt_result{SO_OK, 0, 0, 0.0, 0, 0};
  if (!applyOptFlags(opt_flags, ev->error)) {
    out->status = SO_COMPILE_ERROR;
    return ev;
  }
  if (cache && base && *base) {
    so_evaluation scratch;
    double seconds;
    int status = runRecovering(scratch, "while recording the base pipeline", seconds,
                               [&] { return recordBase(scratch, data, size, base, opt_flags, pic != 0, *cache); });
    if (status == SO_SIGNAL) {  // the process is suspect now: say so instead of optimizing in it
      ev->error = scratch.error;
      out->status = SO_SIGNAL;
      return ev;
    }
  }
  out->status = runRecovering(*ev, "while optimizing", out->opt_seconds, [&] {
    return optimize(*ev, data, size, pipeline, base, opt_flags, pic != 0, cache, *out);
  });
  return ev;
}

void so_codegen(so_evaluation *ev, so_codegen_result *out) {
  *out = so_codegen_result{SO_CRASH, 0.0};
  if (!ev->module && ev->bitcode.empty()) {
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

so_prefix_cache *so_prefix_cache_new(size_t max_bytes) { return new so_prefix_cache(max_bytes); }

void so_prefix_cache_stats(const so_prefix_cache *cache, so_prefix_stats *out) {
  *out = so_prefix_stats{static_cast<long long>(cache->entries.size()), static_cast<long long>(cache->bytes),
                         static_cast<long long>(cache->maxBytes), cache->evictions};
}

}  // extern "C"
