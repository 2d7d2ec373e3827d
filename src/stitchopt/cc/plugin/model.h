//===- model.h - The flag-tuning model as the plugin reads it --------------===//
//
// The JSON file `stitchopt plugin export` writes from a model directory: the
// representations, the standardizer, the coreset lists as -passes= text, and
// the ranker (ridge + neighbours, shrunk), softmax chooser or neighbours'
// gains that order them.
// The order is the one FlagModel.rank_features computes in Python.
//
//===----------------------------------------------------------------------===//

#ifndef STITCHOPT_PLUGIN_MODEL_H
#define STITCHOPT_PLUGIN_MODEL_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stitchopt {

/// A row-major matrix of doubles.
struct Matrix {
  size_t Rows = 0, Cols = 0;
  std::vector<double> Values;
  double at(size_t Row, size_t Col) const { return Values[Row * Cols + Col]; }
};

/// One candidate of the order: a coreset list, or -Oz (List == -1).
struct Ranked {
  int List = -1;
  double PredictedLogRatio = 0.0; // the static (shrunk) prediction: < 0 beats -Oz
};

/// One language of a chooser per language: the source suffixes it is known
/// by, its training programs, each list's mean gain over them, and the
/// neighbours and shrink it is answered with (the chooser's unless training
/// tuned them per language).
struct ChooserLanguage {
  std::string Name;
  std::vector<std::string> Suffixes;
  std::vector<size_t> Rows;
  std::vector<double> Means;
  unsigned Neighbors = 0;
  double Shrink = 1.0;
};

class PluginModel {
public:
  /// Reads and checks a model file; the error says what is wrong in one line.
  static llvm::Expected<PluginModel> load(llvm::StringRef Path);

  /// Every list and -Oz, in the order the modes try them (static's choice
  /// first), for one raw feature row of a module whose IR shows it was
  /// compiled from `IRLanguage` (ModuleFeatures::language; empty: it does not
  /// show) and from `SourceFile` (a chooser per language answers from that
  /// language's programs: the IR's, else the source file suffix's).
  std::vector<Ranked> order(const std::vector<double> &Raw,
                            llvm::StringRef IRLanguage,
                            llvm::StringRef SourceFile) const;

  /// The language of a chooser per language that answers such a module,
  /// empty when none does (all programs answer).
  llvm::StringRef language(llvm::StringRef IRLanguage,
                           llvm::StringRef SourceFile) const;

  /// How many raw features a row holds.
  size_t features() const { return Mean.size(); }

  std::vector<std::pair<std::string, int>> Representations;
  std::vector<std::string> Lists; // -passes= text, one per coreset list
  std::string LLVMVersion;        // what the model was made with
  std::string Identity;           // the exported file's digest, for records
  // `fast` builds the choice only where predicted below -margin; none: the
  // model was trained before margins were learned.
  std::optional<double> FastMargin;

private:
  std::vector<double> standardize(const std::vector<double> &Raw) const;
  std::vector<double> linear(const std::vector<double> &X) const;
  std::vector<double> neighbours(const std::vector<double> &X) const;
  struct Pool;
  const ChooserLanguage *languageFor(llvm::StringRef IRLanguage,
                                     llvm::StringRef SourceFile) const;
  Pool poolFor(llvm::StringRef IRLanguage, llvm::StringRef SourceFile) const;
  std::vector<size_t> nearestRows(const std::vector<double> &X,
                                  const Pool &P) const;
  std::vector<double> nearestGains(const std::vector<size_t> &Near,
                                   const Pool &P) const;
  std::vector<size_t> cover(size_t First, const std::vector<size_t> &Candidates,
                            const std::vector<size_t> &Near,
                            const Pool &P) const;

  bool Log = true;
  std::vector<double> Mean, Std;
  unsigned Neighbors = 0;
  double Blend = 0.0, Shrink = 1.0;
  Matrix TrainFeatures, TrainTargets, Weights; // Weights: (d + 1) x lists
  std::vector<double> ShrunkMeans; // (1 - shrink) x each list's mean target
  std::optional<Matrix> Chooser; // (d + 1) x (lists + 1), -Oz last

  /// The neighbours' chooser (NeighbourChooser in Python): the mean gain over
  /// -Oz of the nearest training programs, shrunk toward each list's mean;
  /// per language, both over the module's language's programs only.
  struct NearestGains {
    unsigned Neighbors = 0;
    double Shrink = 1.0;
    Matrix Features, Gains;     // training programs x d, x lists
    std::vector<double> Means;  // each list's mean gain over them (as exported)
    std::vector<ChooserLanguage> Languages; // none: one over all programs
  };
  std::optional<NearestGains> Nearest;

  /// The training programs a module is answered from, their means, and the
  /// neighbours and shrink to answer with.
  struct Pool {
    const std::vector<size_t> &Rows;
    const std::vector<double> &Means;
    unsigned Neighbors;
    double Shrink;
  };
  std::vector<size_t> AllRows; // 0 .. Nearest's programs - 1
};

} // namespace stitchopt

#endif
