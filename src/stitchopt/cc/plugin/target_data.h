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
// A global G is kept on the device across loop L only where that cannot be
// told apart from the original program:
//   - every launch in L maps G whole (base and begin G, size G's), with map
//     types to/from/alloc only (no always, present, delete, members, ...),
//     and no other item of a launch in L may alias G;
//   - the host touches G nowhere in L but in the launches themselves and
//     their host fallbacks (alias analysis on every other instruction);
//   - every launch that maps G without `from` does not write G: its host
//     fallback (the same region compiled for the host, reached through
//     __kmpc_fork_teams/__kmpc_fork_call) only reads through G's pointer;
//   - no other offload call (data regions, updates, nowait launches) is in L.
// Then the device copy of G always equals the host copy of the original
// program. The data region maps G `to` (so data no launch wrote comes back
// unchanged) and `from` only if some launch in L maps it `from`.
//
//===----------------------------------------------------------------------===//

#ifndef STITCHOPT_CC_PLUGIN_TARGET_DATA_H
#define STITCHOPT_CC_PLUGIN_TARGET_DATA_H

#include "llvm/IR/PassManager.h"

namespace stitchopt {

struct HoistTargetDataPass : llvm::PassInfoMixin<HoistTargetDataPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &MAM);
};

} // namespace stitchopt

#endif // STITCHOPT_CC_PLUGIN_TARGET_DATA_H
