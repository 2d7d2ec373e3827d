//===- module_features.h - The model's representations in C++ -*- C++ -*-===//
//
// The feature vectors the shipped model reads, computed inside the compiler.
// Each must equal what stitchopt's Python computes for the same module
// (src/stitchopt/features/), value for value: the model was trained on those.
//
//===----------------------------------------------------------------------===//

#ifndef STITCHOPT_CC_PLUGIN_MODULE_FEATURES_H
#define STITCHOPT_CC_PLUGIN_MODULE_FEATURES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Module.h"
#include <string>
#include <vector>

namespace stitchopt {

/// Appends the feature values of representation `Name` version `Version` for
/// `M` to `Out`, in the order of the Python representation's feature_names();
/// false (Out untouched) when this file does not implement it.
///
/// Implemented: autophase v1, histogram v1, func_properties v1. `M` must be
/// fully materialized. func_properties turns on LLVM's
/// `-enable-detailed-function-properties` for the whole process on first use
/// (the Python side runs opt with it); it is false when that option cannot be
/// set or a defined function has a block without a terminator.
bool appendFeatures(llvm::StringRef Name, int Version, const llvm::Module &M,
                    std::vector<double> &Out);

/// The representations of one module computed together: the module's text,
/// which autophase and histogram both read, is printed once instead of once
/// per representation. `M` must not change while this object is in use.
class ModuleFeatures {
public:
  explicit ModuleFeatures(const llvm::Module &M) : M(M) {}

  /// As appendFeatures for this object's module.
  bool append(llvm::StringRef Name, int Version, std::vector<double> &Out);

  /// The language clang compiled the module from as its text shows it
  /// ("c++", "c"), empty where it does not show: as Python's `ir_language`.
  llvm::StringRef language();

private:
  /// The module's text, printed on first use.
  llvm::StringRef text();

  const llvm::Module &M;
  std::string Text;
  bool Printed = false;
};

/// The feature names of a representation, in order (empty when not
/// implemented).
std::vector<std::string> featureNames(llvm::StringRef Name, int Version);

} // namespace stitchopt

#endif // STITCHOPT_CC_PLUGIN_MODULE_FEATURES_H
