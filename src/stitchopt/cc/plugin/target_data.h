//===- target_data.h - Keep offloaded data on the device across a loop -*- C++ -*-===//
//
// `stitchopt-hoist-target-data`: a host pass for OpenMP target offload. Code
// ported to OpenMP often maps the same arrays in every target region of a
// loop (`#pragma omp target ... map(tofrom: grid)` once per time step), so
// every iteration copies them to the device and back. The pass wraps such a
// loop in a `target data` region (a `__tgt_target_data_begin_mapper` call in
// the preheader, `__tgt_target_data_end_mapper` at each exit) that maps those
// arrays once; OpenMP's reference counts then make every map inside the loop
// find its data present and copy nothing.
//
// It wraps loops (preheader to exits) and the straight run of launches
// outside loops that a fully unrolled loop leaves (from the first launch's
// block, which dominates the others, to the nearest common post-dominator of
// their ways out; neither end on a cycle, irreducible ones included).
//
// Memory M (a global, or a section that starts at a pointer) is kept on the
// device across such code L only where that cannot be told apart from the
// original program:
//   - every launch in L maps M whole from its start, at an address and size
//     that do not change in L, with map types to/from/alloc only (no always,
//     present, delete, ...); no item of a launch in L reaches memory through
//     a stored pointer or a struct member, and no other item (its base or
//     its section) may alias M;
//   - the host touches M nowhere in L but in the launches themselves and
//     their host fallbacks (alias analysis on every other instruction; C math
//     library calls write errno only; a launch's firstprivate copy of memory
//     that may alias M is a host read), and nothing in L may throw (an unwind
//     would skip the end of the data region);
//   - every launch that maps M without `from` does not write it: its kernel,
//     read in the device images the host module embeds, only reads through
//     that parameter (device-only code included; `readonly` is trusted only
//     with `nocapture`, since FunctionAttrs ignores returned pointers);
//   - no other offload call (data regions, updates, nowait launches) is in L.
// Then the device copy of M always equals the host copy of the original
// program. The data region maps M `to` (so data no launch wrote comes back
// unchanged) and `from` only if some launch in L maps it `from`. What it
// changes beyond copies: M stays allocated on the device for the whole of L,
// where the original held it only during each launch (a launch that then
// fails for want of device memory falls back to the host's stale copy).
// In a straight run, where each launch runs at most once, in order, the
// region does not copy M in when the first launch to map it always runs
// (post-dominates the run's start) and maps it `from` without `to` (that
// launch starts from device memory the host never wrote, in the original
// too; an `alloc` first launch, or one that may not run, leaves the host's
// values to a later `to` or to the region's end), and M is kept only where
// the region copies it fewer times than the launches that always run do.
//
//===----------------------------------------------------------------------===//

#ifndef STITCHOPT_CC_PLUGIN_TARGET_DATA_H
#define STITCHOPT_CC_PLUGIN_TARGET_DATA_H

#include "llvm/IR/PassManager.h"

namespace stitchopt {

struct HoistTargetDataPass : llvm::PassInfoMixin<HoistTargetDataPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &MAM);
  // Also after a model's list, whose module vetoes clang's optional passes.
  static bool isRequired() { return true; }
};

} // namespace stitchopt

#endif // STITCHOPT_CC_PLUGIN_TARGET_DATA_H
