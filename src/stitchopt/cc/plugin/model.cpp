//===- model.cpp - The flag-tuning model as the plugin reads it ------------===//

#include "model.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace llvm;

namespace stitchopt {

// 2: the large arrays in a rows file; 3: a chooser per language, which a
// reader of 2 would take for one over all programs; 4: each language with its
// own neighbours and shrink, which a reader of 3 would answer with the
// chooser's.
static constexpr int PluginFormats[] = {2, 3, 4};
// The most neighbours a ranker or chooser may ask for.
static constexpr int64_t MaxNeighbors = 1 << 20;

namespace {
/// Reads fields of the model file, remembering the first problem.
class Reader {
public:
  explicit Reader(StringRef Path) : Path(Path) {}

  Error fail(const Twine &What) const {
    return createStringError(inconvertibleErrorCode(),
                             Path + ": " + What +
                                 "; export it again with `stitchopt plugin "
                                 "export MODEL_DIR`");
  }

  Expected<std::vector<double>> numbers(const json::Value *V,
                                        StringRef Name) const {
    const json::Array *A = V ? V->getAsArray() : nullptr;
    if (!A)
      return fail("field " + Name + " is not a list of numbers");
    std::vector<double> Out;
    Out.reserve(A->size());
    for (const json::Value &E : *A) {
      std::optional<double> D = E.getAsNumber();
      if (!D || !std::isfinite(*D))
        return fail("field " + Name + " holds a value that is not a number");
      Out.push_back(*D);
    }
    return Out;
  }

  /// One number per list: `Size` of them.
  Expected<std::vector<double>> perList(const json::Value *V, StringRef Name,
                                        size_t Size) const {
    Expected<std::vector<double>> Out = numbers(V, Name);
    if (Out && Out->size() != Size)
      return fail("field " + Name + " has " + Twine(Out->size()) +
                  " values for " + Twine(Size) + " lists");
    return Out;
  }

  /// A matrix written as lists of numbers, or as `{"offset", "rows",
  /// "cols"}` in the rows file: little-endian float32 values, `offset` the
  /// first one's index (plugin_file.written_arrays).
  Expected<Matrix> matrix(const json::Value *V, StringRef Name, size_t Rows,
                          size_t Cols) const {
    if (const json::Object *O = V ? V->getAsObject() : nullptr)
      return stored(*O, Name, Rows, Cols);
    const json::Array *A = V ? V->getAsArray() : nullptr;
    if (!A)
      return fail("field " + Name + " is not a matrix");
    Matrix M;
    M.Rows = A->size();
    M.Cols = Cols;
    if (M.Rows == 0)
      return fail("field " + Name + " has no rows");
    if (Rows && M.Rows != Rows)
      return fail("field " + Name + " has " + Twine(M.Rows) + " rows where " +
                  Twine(Rows) + " were expected");
    M.Values.reserve(M.Rows * Cols);
    for (const json::Value &Row : *A) {
      Expected<std::vector<double>> R = numbers(&Row, Name);
      if (!R)
        return R.takeError();
      if (R->size() != Cols)
        return fail("field " + Name + " has a row of " + Twine(R->size()) +
                    " values, not " + Twine(Cols));
      M.Values.insert(M.Values.end(), R->begin(), R->end());
    }
    return M;
  }

  /// The rows file's bytes (checked against the document's size).
  StringRef RowsData;

private:
  Expected<Matrix> stored(const json::Object &O, StringRef Name, size_t Rows,
                          size_t Cols) const {
    std::optional<int64_t> Offset = O.getInteger("offset");
    std::optional<int64_t> Count = O.getInteger("rows");
    std::optional<int64_t> Width = O.getInteger("cols");
    if (!Offset || !Count || !Width || *Offset < 0 || *Count < 0 ||
        *Width < 0)
      return fail("field " + Name + " lacks offset, rows or cols");
    if (*Count == 0)
      return fail("field " + Name + " has no rows");
    if (static_cast<uint64_t>(*Width) != Cols)
      return fail("field " + Name + " has rows of " + Twine(*Width) +
                  " values, not " + Twine(Cols));
    if (Rows && static_cast<uint64_t>(*Count) != Rows)
      return fail("field " + Name + " has " + Twine(*Count) + " rows where " +
                  Twine(Rows) + " were expected");
    uint64_t First = static_cast<uint64_t>(*Offset);
    uint64_t Available = RowsData.size() / sizeof(float);
    if (First > Available ||
        (Cols && static_cast<uint64_t>(*Count) > (Available - First) / Cols))
      return fail("field " + Name + " reaches past the end of its rows file");
    uint64_t Values = static_cast<uint64_t>(*Count) * Cols;
    Matrix M;
    M.Rows = static_cast<size_t>(*Count);
    M.Cols = Cols;
    M.Values.resize(Values);
    const char *At = RowsData.data() + First * sizeof(float);
    for (uint64_t I = 0; I < Values; ++I, At += sizeof(float)) {
      M.Values[I] = llvm::bit_cast<float>(support::endian::read32le(At));
      if (!std::isfinite(M.Values[I]))
        return fail("field " + Name + " holds a value that is not a number");
    }
    return M;
  }

  StringRef Path;
};
} // namespace

/// A chooser per language's languages (`{"name", "suffixes", "means"}` each,
/// with `neighbors` and `shrink` where training tuned them per language, else
/// `Neighbors` and `Shrink`) and the training programs of each, from `Codes`:
/// one index into them per program, -1 for none.
static Expected<std::vector<ChooserLanguage>>
readLanguages(const Reader &R, const json::Value &Entries,
              const json::Value *Codes, size_t Programs, size_t Lists,
              unsigned Neighbors, double Shrink) {
  const json::Array *A = Entries.getAsArray();
  if (!A)
    return R.fail("field chooser.languages is not a list");
  std::vector<ChooserLanguage> Out;
  for (const json::Value &E : *A) {
    const json::Object *O = E.getAsObject();
    const json::Array *Suffixes = O ? O->getArray("suffixes") : nullptr;
    if (!Suffixes)
      return R.fail("field chooser.languages holds an entry without "
                    "suffixes");
    std::optional<StringRef> Name = O->getString("name");
    if (!Name)
      return R.fail("field chooser.languages holds an entry without a name");
    ChooserLanguage Lang;
    Lang.Name = Name->str();
    Lang.Neighbors = Neighbors;
    Lang.Shrink = Shrink;
    const json::Value *Count = O->get("neighbors");
    const json::Value *Weight = O->get("shrink");
    if (Count || Weight) {
      int64_t K = Count ? Count->getAsInteger().value_or(0) : 0;
      double W = Weight ? Weight->getAsNumber().value_or(-1.0) : -1.0;
      if (K < 1 || K > MaxNeighbors || !(W >= 0.0 && W <= 1.0))
        return R.fail("field chooser.languages holds an entry whose "
                      "neighbors is not a count from 1 to " +
                      Twine(MaxNeighbors) + " or whose shrink is not from 0 to 1");
      Lang.Neighbors = static_cast<unsigned>(K);
      Lang.Shrink = W;
    }
    for (const json::Value &S : *Suffixes) {
      std::optional<StringRef> Text = S.getAsString();
      if (!Text)
        return R.fail("field chooser.languages holds a suffix that is not "
                      "text");
      Lang.Suffixes.push_back(Text->str());
    }
    Expected<std::vector<double>> Means =
        R.perList(O->get("means"), "chooser.languages.means", Lists);
    if (!Means)
      return Means.takeError();
    Lang.Means = std::move(*Means);
    Out.push_back(std::move(Lang));
  }
  Expected<Matrix> Index =
      R.matrix(Codes, "chooser.train_languages", Programs, 1);
  if (!Index)
    return Index.takeError();
  for (size_t Row = 0; Row < Programs; ++Row) {
    double Code = Index->at(Row, 0);
    if (Code != std::floor(Code) || Code < -1 ||
        Code >= static_cast<double>(Out.size()))
      return R.fail("field chooser.train_languages holds a value that is "
                    "not the index of one of chooser.languages, nor -1");
    if (Code >= 0)
      Out[static_cast<size_t>(Code)].Rows.push_back(Row);
  }
  if (llvm::any_of(Out,
                   [](const ChooserLanguage &L) { return L.Rows.empty(); }))
    return R.fail("field chooser.train_languages gives a language of "
                  "chooser.languages no training programs");
  return Out;
}

Expected<PluginModel> PluginModel::load(StringRef Path) {
  Reader R(Path);
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer = MemoryBuffer::getFile(Path);
  if (!Buffer)
    return createStringError(
        Buffer.getError(),
        "cannot read the model file " + Path + ": " +
            Buffer.getError().message() +
            "; set STITCHOPT_MODEL to a directory holding plugin.json "
            "(`stitchopt plugin export MODEL_DIR` writes one), or reinstall "
            "stitchopt for the shipped model");
  Expected<json::Value> Parsed = json::parse((*Buffer)->getBuffer());
  if (!Parsed) {
    std::string Why = toString(Parsed.takeError());
    return R.fail("not JSON (" + Why + ")");
  }
  const json::Object *Root = Parsed->getAsObject();
  if (!Root)
    return R.fail("not a stitchopt plugin model");
  std::optional<int64_t> Format = Root->getInteger("format");
  if (!Format || !llvm::is_contained(PluginFormats, *Format)) {
    std::string Read;
    for (int Known : PluginFormats)
      Read += (Read.empty() ? "" : ", ") + std::to_string(Known);
    std::string Got = Format ? std::to_string(*Format) : "missing";
    return R.fail("model format " + Got + ", this plugin reads " + Read);
  }

  // The rows file the document points into (named after its contents, so the
  // identity below covers it too).
  std::unique_ptr<MemoryBuffer> RowsBuffer;
  if (const json::Object *Rows = Root->getObject("rows")) {
    std::optional<StringRef> File = Rows->getString("file");
    std::optional<int64_t> Bytes = Rows->getInteger("bytes");
    if (!File || !Bytes)
      return R.fail("field rows lacks file or bytes");
    if (File->empty() || sys::path::filename(*File) != *File ||
        *File == "." || *File == "..")
      return R.fail("field rows.file must name a file beside plugin.json");
    SmallString<256> RowsPath(sys::path::parent_path(Path));
    sys::path::append(RowsPath, *File);
    // Read, not mapped: a file rewritten in place while it is read must not
    // end the compile.
    ErrorOr<std::unique_ptr<MemoryBuffer>> Read =
        MemoryBuffer::getFile(RowsPath, /*IsText=*/false,
                              /*RequiresNullTerminator=*/false,
                              /*IsVolatile=*/true);
    if (!Read)
      return R.fail("cannot read its rows file " + RowsPath +
                    " (kept beside plugin.json): " +
                    Read.getError().message());
    if ((*Read)->getBufferSize() != static_cast<uint64_t>(*Bytes))
      return R.fail("its rows file " + RowsPath + " has " +
                    Twine((*Read)->getBufferSize()) + " bytes, not " +
                    Twine(*Bytes));
    RowsBuffer = std::move(*Read);
    R.RowsData = RowsBuffer->getBuffer();
  }

  PluginModel M;
  M.Identity = utohexstr(xxh3_64bits((*Buffer)->getBuffer()), true, 16);
  if (std::optional<StringRef> V = Root->getString("llvm"))
    M.LLVMVersion = V->str();
  else
    return R.fail("field llvm is missing");
  M.FastMargin = Root->getNumber("fast_margin");

  const json::Array *Reps = Root->getArray("representations");
  if (!Reps || Reps->empty())
    return R.fail("field representations is missing");
  for (const json::Value &E : *Reps) {
    const json::Array *Pair = E.getAsArray();
    if (!Pair || Pair->size() != 2 || !(*Pair)[0].getAsString() ||
        !(*Pair)[1].getAsInteger())
      return R.fail("field representations holds an entry that is not "
                    "[name, version]");
    M.Representations.emplace_back((*Pair)[0].getAsString()->str(),
                                   static_cast<int>(*(*Pair)[1].getAsInteger()));
  }

  const json::Array *Lists = Root->getArray("lists");
  if (!Lists || Lists->empty())
    return R.fail("field lists is missing or empty");
  for (const json::Value &E : *Lists) {
    std::optional<StringRef> S = E.getAsString();
    if (!S)
      return R.fail("field lists holds an entry that is not text");
    M.Lists.push_back(S->str());
  }
  size_t L = M.Lists.size();

  const json::Object *Std = Root->getObject("standardizer");
  if (!Std)
    return R.fail("field standardizer is missing");
  M.Log = Std->getBoolean("log").value_or(true);
  Expected<std::vector<double>> Mean = R.numbers(Std->get("mean"), "mean");
  if (!Mean)
    return Mean.takeError();
  Expected<std::vector<double>> Sd = R.numbers(Std->get("std"), "std");
  if (!Sd)
    return Sd.takeError();
  M.Mean = std::move(*Mean);
  M.Std = std::move(*Sd);
  size_t D = M.Mean.size();
  if (D == 0 || M.Std.size() != D ||
      any_of(M.Std, [](double S) { return !(S > 0); }))
    return R.fail("field standardizer has no features or a std that is "
                  "not positive");

  const json::Object *Rk = Root->getObject("ranker");
  if (!Rk)
    return R.fail("field ranker is missing");
  std::optional<int64_t> K = Rk->getInteger("neighbors");
  std::optional<double> Blend = Rk->getNumber("blend");
  std::optional<double> Shrink = Rk->getNumber("shrink");
  if (!K || *K < 1 || *K > MaxNeighbors || !Blend || !Shrink)
    return R.fail("field ranker lacks neighbors, blend or shrink");
  M.Neighbors = static_cast<unsigned>(*K);
  M.Blend = *Blend;
  M.Shrink = *Shrink;
  Expected<Matrix> W = R.matrix(Rk->get("weights"), "weights", D + 1, L);
  if (!W)
    return W.takeError();
  M.Weights = std::move(*W);
  Expected<std::vector<double>> Means =
      R.perList(Rk->get("shrunk_means"), "shrunk_means", L);
  if (!Means)
    return Means.takeError();
  M.ShrunkMeans = std::move(*Means);
  if (M.Blend != 0.0) { // the neighbours' part: only when it weighs
    Expected<Matrix> TF =
        R.matrix(Rk->get("train_features"), "train_features", 0, D);
    if (!TF)
      return TF.takeError();
    M.TrainFeatures = std::move(*TF);
    Expected<Matrix> TT = R.matrix(Rk->get("train_targets"), "train_targets",
                                   M.TrainFeatures.Rows, L);
    if (!TT)
      return TT.takeError();
    M.TrainTargets = std::move(*TT);
  }

  const json::Value *C = Root->get("chooser");
  if (const json::Object *N = C ? C->getAsObject() : nullptr) {
    NearestGains G;
    std::optional<StringRef> Kind = N->getString("kind");
    std::optional<int64_t> Count = N->getInteger("neighbors");
    std::optional<double> Weight = N->getNumber("shrink");
    if (Kind != "neighbours")
      return R.fail("field chooser is an object but not the neighbours' "
                    "chooser");
    if (!Count || !Weight)
      return R.fail("field chooser lacks neighbors (a whole number) or shrink");
    if (*Count < 1 || *Count > MaxNeighbors)
      return R.fail("field chooser.neighbors is " + Twine(*Count) +
                    ", not a count from 1 to " + Twine(MaxNeighbors));
    G.Neighbors = static_cast<unsigned>(*Count);
    G.Shrink = *Weight;
    Expected<Matrix> F =
        R.matrix(N->get("train_features"), "chooser.train_features", 0, D);
    if (!F)
      return F.takeError();
    G.Features = std::move(*F);
    Expected<Matrix> Gains = R.matrix(
        N->get("train_gains"), "chooser.train_gains", G.Features.Rows, L);
    if (!Gains)
      return Gains.takeError();
    G.Gains = std::move(*Gains);
    Expected<std::vector<double>> Means =
        R.perList(N->get("means"), "chooser.means", L);
    if (!Means)
      return Means.takeError();
    G.Means = std::move(*Means);
    if (const json::Value *Languages = N->get("languages")) {
      Expected<std::vector<ChooserLanguage>> Read =
          readLanguages(R, *Languages, N->get("train_languages"),
                        G.Features.Rows, L, G.Neighbors, G.Shrink);
      if (!Read)
        return Read.takeError();
      G.Languages = std::move(*Read);
    }
    M.AllRows.resize(G.Features.Rows);
    std::iota(M.AllRows.begin(), M.AllRows.end(), 0);
    M.Nearest = std::move(G);
  } else if (C && !C->getAsNull()) {
    Expected<Matrix> CW = R.matrix(C, "chooser", D + 1, L + 1);
    if (!CW)
      return CW.takeError();
    M.Chooser = std::move(*CW);
  }
  return M;
}

std::vector<double>
PluginModel::standardize(const std::vector<double> &Raw) const {
  std::vector<double> X(Raw.size());
  for (size_t I = 0; I < Raw.size(); ++I) {
    double V = Raw[I];
    if (Log)
      V = (V > 0 ? 1.0 : V < 0 ? -1.0 : 0.0) * std::log1p(std::fabs(V));
    X[I] = (V - Mean[I]) / Std[I];
  }
  return X;
}

std::vector<double> PluginModel::linear(const std::vector<double> &X) const {
  std::vector<double> Out(Lists.size(), 0.0);
  for (size_t J = 0; J < Lists.size(); ++J) {
    double Sum = 0.0;
    for (size_t I = 0; I < X.size(); ++I)
      Sum += X[I] * Weights.at(I, J);
    Out[J] = Sum + Weights.at(X.size(), J); // the bias row
  }
  return Out;
}

static std::vector<double> unitRow(const double *Row, size_t N) {
  double Norm = 0.0;
  for (size_t I = 0; I < N; ++I)
    Norm += Row[I] * Row[I];
  Norm = std::sqrt(Norm);
  std::vector<double> Out(Row, Row + N);
  if (Norm != 0.0)
    for (double &V : Out)
      V /= Norm;
  return Out;
}

std::vector<double>
PluginModel::neighbours(const std::vector<double> &X) const {
  std::vector<double> Unit = unitRow(X.data(), X.size());
  size_t Rows = TrainFeatures.Rows;
  std::vector<double> Similarity(Rows);
  for (size_t R = 0; R < Rows; ++R) {
    double Dot = 0.0;
    for (size_t I = 0; I < X.size(); ++I)
      Dot += Unit[I] * TrainFeatures.at(R, I);
    Similarity[R] = Dot;
  }
  size_t K = std::min<size_t>(Neighbors, Rows);
  std::vector<size_t> Index(Rows);
  std::iota(Index.begin(), Index.end(), 0);
  // Most similar first; equal similarities by training row (numpy leaves
  // that order unspecified).
  std::partial_sort(Index.begin(), Index.begin() + K, Index.end(),
                    [&](size_t A, size_t B) {
                      return Similarity[A] > Similarity[B] ||
                             (Similarity[A] == Similarity[B] && A < B);
                    });
  double Best = Similarity[Index[0]];
  std::vector<double> Weight(K);
  double Total = 0.0;
  for (size_t N = 0; N < K; ++N)
    Total += Weight[N] = std::exp((Similarity[Index[N]] - Best) * 20.0);
  std::vector<double> Out(Lists.size(), 0.0);
  for (size_t N = 0; N < K; ++N)
    for (size_t J = 0; J < Lists.size(); ++J)
      Out[J] += Weight[N] / Total * TrainTargets.at(Index[N], J);
  return Out;
}

// The language `IRLanguage` names, else the one whose suffix `SourceFile` has
// (as Python's `module_language` picks it), null when no chooser per language
// knows it.
const ChooserLanguage *PluginModel::languageFor(StringRef IRLanguage,
                                                StringRef SourceFile) const {
  if (!Nearest)
    return nullptr;
  StringRef Suffix = sys::path::extension(SourceFile, sys::path::Style::posix);
  for (const ChooserLanguage &Lang : Nearest->Languages)
    if (IRLanguage.empty() ? !Suffix.empty() &&
                                 llvm::is_contained(Lang.Suffixes, Suffix)
                           : Lang.Name == IRLanguage)
      return &Lang;
  return nullptr;
}

StringRef PluginModel::language(StringRef IRLanguage,
                                StringRef SourceFile) const {
  const ChooserLanguage *Lang = languageFor(IRLanguage, SourceFile);
  return Lang ? StringRef(Lang->Name) : StringRef();
}

// The programs of the module's language, else all of them.
PluginModel::Pool PluginModel::poolFor(StringRef IRLanguage,
                                       StringRef SourceFile) const {
  if (const ChooserLanguage *Lang = languageFor(IRLanguage, SourceFile))
    return {Lang->Rows, Lang->Means, Lang->Neighbors, Lang->Shrink};
  return {AllRows, Nearest->Means, Nearest->Neighbors, Nearest->Shrink};
}

std::vector<size_t> PluginModel::nearestRows(const std::vector<double> &X,
                                             const Pool &P) const {
  const NearestGains &G = *Nearest;
  size_t Rows = P.Rows.size();
  // Squared distances summed feature by feature, as NeighbourChooser does.
  std::vector<double> Distance(Rows, 0.0);
  for (size_t I = 0; I < X.size(); ++I)
    for (size_t R = 0; R < Rows; ++R) {
      double Diff = X[I] - G.Features.at(P.Rows[R], I);
      Distance[R] += Diff * Diff;
    }
  size_t K = std::min<size_t>(P.Neighbors, Rows);
  std::vector<size_t> Index(Rows);
  std::iota(Index.begin(), Index.end(), 0);
  // Nearest first; equal distances by training row, as numpy's stable sort.
  std::partial_sort(Index.begin(), Index.begin() + K, Index.end(),
                    [&](size_t A, size_t B) {
                      return Distance[A] < Distance[B] ||
                             (Distance[A] == Distance[B] && A < B);
                    });
  Index.resize(K);
  for (size_t &R : Index)
    R = P.Rows[R];
  return Index;
}

std::vector<double> PluginModel::nearestGains(const std::vector<size_t> &Near,
                                              const Pool &P) const {
  const NearestGains &G = *Nearest;
  size_t L = Lists.size();
  std::vector<double> Out(L, 0.0);
  for (size_t R : Near)
    for (size_t J = 0; J < L; ++J)
      Out[J] += G.Gains.at(R, J);
  for (size_t J = 0; J < L; ++J)
    Out[J] = P.Shrink * (Out[J] / static_cast<double>(Near.size())) +
             (1.0 - P.Shrink) * P.Means[J];
  return Out;
}

// The lists in the order models/covering.py's `cover` gives them after
// `First`: the one that most lowers the mean best gain of the neighbours
// (weight Shrink) and of the pool's training programs (weight 1 - Shrink),
// while one does; equal values go to the earlier of `Candidates`. Sums run
// over rows in order, as numpy's do.
std::vector<size_t>
PluginModel::cover(size_t First, const std::vector<size_t> &Candidates,
                   const std::vector<size_t> &Near,
                   const Pool &Within) const {
  const NearestGains &G = *Nearest;
  struct Part {
    double Weight;
    const std::vector<size_t> &Rows;
    std::vector<double> Best;
  };
  Part Parts[] = {{Within.Shrink, Near, {}},
                  {1.0 - Within.Shrink, Within.Rows, {}}};
  for (Part &P : Parts)
    for (size_t R : P.Rows)
      P.Best.push_back(G.Gains.at(R, First));
  std::vector<size_t> Left;
  for (size_t J : Candidates)
    if (J != First)
      Left.push_back(J);
  auto Lowers = [&](const Part &P) {
    for (size_t I = 0; I < P.Rows.size(); ++I)
      for (size_t J : Left)
        if (G.Gains.at(P.Rows[I], J) < P.Best[I])
          return true;
    return false;
  };
  std::vector<size_t> Chosen;
  while (!Left.empty() && llvm::any_of(Parts, [&](const Part &P) {
           return P.Weight > 0 && Lowers(P);
         })) {
    size_t Pick = 0;
    double PickValue = std::numeric_limits<double>::infinity();
    for (size_t C = 0; C < Left.size(); ++C) {
      double Value = 0.0;
      for (const Part &P : Parts) {
        double Sum = 0.0;
        for (size_t I = 0; I < P.Rows.size(); ++I)
          Sum += std::min(P.Best[I], G.Gains.at(P.Rows[I], Left[C]));
        Value += P.Weight * (Sum / static_cast<double>(P.Rows.size()));
      }
      if (Value < PickValue) {
        PickValue = Value;
        Pick = C;
      }
    }
    size_t J = Left[Pick];
    Left.erase(Left.begin() + Pick);
    Chosen.push_back(J);
    for (Part &P : Parts)
      for (size_t I = 0; I < P.Rows.size(); ++I)
        P.Best[I] = std::min(P.Best[I], G.Gains.at(P.Rows[I], J));
  }
  return Chosen;
}

std::vector<Ranked> PluginModel::order(const std::vector<double> &Raw,
                                       StringRef IRLanguage,
                                       StringRef SourceFile) const {
  std::vector<double> X = standardize(Raw);
  std::vector<double> Own = linear(X);
  if (Blend != 0.0) {
    std::vector<double> Near = neighbours(X);
    for (size_t J = 0; J < Own.size(); ++J)
      Own[J] = Blend * Near[J] + (1.0 - Blend) * Own[J];
  }
  size_t L = Lists.size();
  std::vector<double> Static(L);
  for (size_t J = 0; J < L; ++J)
    Static[J] = Shrink * Own[J] + ShrunkMeans[J];

  // Position of each choice (lists, then -Oz): lowest tried first.
  std::vector<double> Position(L + 1, 0.0);
  if (Chooser) {
    std::vector<double> Logits(L + 1, 0.0);
    for (size_t J = 0; J <= L; ++J) {
      double Sum = 0.0;
      for (size_t I = 0; I < X.size(); ++I)
        Sum += X[I] * Chooser->at(I, J);
      Logits[J] = Sum + Chooser->at(X.size(), J);
    }
    double Max = *std::max_element(Logits.begin(), Logits.end());
    double Total = 0.0;
    for (double &V : Logits)
      Total += V = std::exp(V - Max);
    for (size_t J = 0; J <= L; ++J)
      Position[J] = -(Logits[J] / Total);
  } else if (Nearest) {
    Pool Within = poolFor(IRLanguage, SourceFile);
    std::vector<size_t> Near = nearestRows(X, Within);
    std::vector<double> Gains = nearestGains(Near, Within);
    std::vector<size_t> ByGain(L);
    std::iota(ByGain.begin(), ByGain.end(), 0);
    std::stable_sort(ByGain.begin(), ByGain.end(),
                     [&](size_t A, size_t B) { return Gains[A] < Gains[B]; });
    std::vector<size_t> Tried = {ByGain[0]};
    llvm::append_range(Tried, cover(ByGain[0], ByGain, Near, Within));
    for (size_t J : ByGain)
      if (!llvm::is_contained(Tried, J))
        Tried.push_back(J);
    for (size_t I = 0; I < L; ++I)
      Position[Tried[I]] = static_cast<double>(I);
    Position[L] = *std::min_element(Gains.begin(), Gains.end()) >= 0
                      ? -std::numeric_limits<double>::infinity()
                      : static_cast<double>(L);
  } else {
    std::copy(Own.begin(), Own.end(), Position.begin());
    size_t Best = std::min_element(Static.begin(), Static.end()) - Static.begin();
    Position[Static[Best] < 0 ? Best : L] =
        -std::numeric_limits<double>::infinity();
  }
  std::vector<size_t> Index(L + 1);
  std::iota(Index.begin(), Index.end(), 0);
  std::stable_sort(Index.begin(), Index.end(), [&](size_t A, size_t B) {
    return Position[A] < Position[B];
  });
  std::vector<Ranked> Out;
  Out.reserve(L + 1);
  for (size_t J : Index)
    Out.push_back(J == L ? Ranked{-1, 0.0}
                         : Ranked{static_cast<int>(J), Static[J]});
  return Out;
}

} // namespace stitchopt
