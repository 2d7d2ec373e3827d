//===- standalone_pass.h - One function pass on a module, outside the compiler's pipeline -*- C++ -*-===//
//
// The plugin sometimes needs a canonical form of a module it only reads (a
// clone's promoted values, a device image's parameters as values): a
// PassBuilder of its own runs the pass, with no target (the passes used need
// none) and none of the compiler's instrumentation, whose pass vetoes would
// skip it.
//
//===----------------------------------------------------------------------===//

#ifndef STITCHOPT_CC_PLUGIN_STANDALONE_PASS_H
#define STITCHOPT_CC_PLUGIN_STANDALONE_PASS_H

#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"

#include <utility>

namespace stitchopt {

template <typename FunctionPassT>
void runOnEveryFunction(llvm::Module &M, FunctionPassT Pass) {
  llvm::PassBuilder PB;
  llvm::LoopAnalysisManager LAM;
  llvm::FunctionAnalysisManager FAM;
  llvm::CGSCCAnalysisManager CGAM;
  llvm::ModuleAnalysisManager MAM;
  PB.registerModuleAnalyses(MAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerLoopAnalyses(LAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
  llvm::ModulePassManager MPM;
  MPM.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(Pass)));
  MPM.run(M, MAM);
}

} // namespace stitchopt

#endif // STITCHOPT_CC_PLUGIN_STANDALONE_PASS_H
