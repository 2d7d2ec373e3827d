//===- guards.cpp - stitchopt's guards on a list's output, in C++ ---------===//
//
// Python reads the guards' facts from `opt -S` text one line at a time with
// regular expressions (validate/guards.py, validate/security_guard.py). This
// file prints the module with the same AsmWriter (the text `opt -S` and
// `llvm-dis` print) and scans the lines with hand-written equivalents of
// those expressions, so that both read the same facts, the rules'
// approximations included. Each matcher names the Python pattern it
// reproduces; where a pattern could backtrack, the comment says why the
// scan finds the same match. The text is ASCII (the printer escapes other
// bytes in names and strings), so \w is [A-Za-z0-9_].
//
//===----------------------------------------------------------------------===//

#include "guards.h"
#include "objects.h"
#include "standalone_pass.h"
#include "text_lines.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Mem2Reg.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <utility>

using namespace llvm;

namespace stitchopt {
namespace {

constexpr size_t NPos = StringRef::npos;

//===----------------------------------------------------------------------===//
// Tables (security_guard.py)
//===----------------------------------------------------------------------===//

constexpr StringLiteral ClearingFunctions[] = {
    "explicit_bzero",      "memset_s",
    "memset_explicit",     "sodium_memzero",
    "OPENSSL_cleanse",     "SecureZeroMemory",
    "RtlSecureZeroMemory", "mbedtls_platform_zeroize",
    "wc_ForceZero",        "gnutls_memset",
    "secure_zero_memory"};
constexpr StringLiteral TrapFunctions[] = {"abort",      "__assert_fail",
                                           "__chk_fail", "__stack_chk_fail",
                                           "llvm.trap",  "llvm.ubsantrap"};
constexpr StringLiteral ProtectorAttributes[] = {"ssp", "sspstrong", "sspreq"};
constexpr StringLiteral FreeFunctions[] = {"free",   "cfree",   "_ZdlPv",
                                           "_ZdaPv", "_ZdlPvm", "_ZdaPvm"};

template <size_t N>
bool isOneOf(std::optional<StringRef> S, const StringLiteral (&Set)[N]) {
  return S && llvm::is_contained(Set, *S);
}

//===----------------------------------------------------------------------===//
// Python's character classes and string methods on ASCII text
//===----------------------------------------------------------------------===//

bool isWordChar(char C) { return isAlnum(C) || C == '_'; } // \w
bool isNameChar(char C) { // [-\w.$], and guards.py's [-a-zA-Z$._0-9]
  return isWordChar(C) || C == '-' || C == '.' || C == '$';
}
// \s, str.split(), str.strip(): ASCII whitespace and the separators.
bool isPySpace(char C) {
  return C == ' ' || (C >= '\t' && C <= '\r') || (C >= '\x1c' && C <= '\x1f');
}

StringRef pyStrip(StringRef S) {
  while (!S.empty() && isPySpace(S.front()))
    S = S.drop_front();
  while (!S.empty() && isPySpace(S.back()))
    S = S.drop_back();
  return S;
}

StringRef pyRstrip(StringRef S) {
  while (!S.empty() && isPySpace(S.back()))
    S = S.drop_back();
  return S;
}

size_t skipSpaces(StringRef S, size_t Pos) { // \s* from Pos
  while (Pos < S.size() && isPySpace(S[Pos]))
    ++Pos;
  return Pos;
}

/// str.split(): the words between runs of whitespace.
void pySplit(StringRef S, SmallVectorImpl<StringRef> &Words) {
  size_t I = 0;
  while (true) {
    I = skipSpaces(S, I);
    if (I >= S.size())
      return;
    size_t J = I;
    while (J < S.size() && !isPySpace(S[J]))
      ++J;
    Words.push_back(S.slice(I, J));
    I = J;
  }
}

template <size_t N>
bool splitHasAny(StringRef S, const StringLiteral (&Set)[N]) {
  SmallVector<StringRef, 16> Words;
  pySplit(S, Words);
  return llvm::any_of(Words,
                      [&](StringRef W) { return llvm::is_contained(Set, W); });
}

/// A word at Pos that ends at a word boundary (`Word\b`).
bool wordAt(StringRef S, size_t Pos, StringRef Word) {
  if (!startsWithAt(S, Pos, Word))
    return false;
  size_t End = Pos + Word.size();
  return End == S.size() || !isWordChar(S[End]);
}

/// `\b` before a word character at Pos.
bool boundaryBefore(StringRef S, size_t Pos) {
  return Pos == 0 || !isWordChar(S[Pos - 1]);
}


//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

size_t nameRunEnd(StringRef S, size_t Pos) { // [-\w.$]* from Pos
  while (Pos < S.size() && isNameChar(S[Pos]))
    ++Pos;
  return Pos;
}

/// _NAME at Pos, `"[^"]*"|[-\w.$]+`: its end or NPos. Every use is followed
/// by a character outside [-\w.$] (`(`, `:`, `\s*=`), so the unquoted run
/// can only end where it ends.
size_t matchName(StringRef S, size_t Pos) {
  if (Pos >= S.size())
    return NPos;
  if (S[Pos] == '"') {
    size_t Close = S.find('"', Pos + 1);
    return Close == NPos ? NPos : Close + 1;
  }
  size_t End = nameRunEnd(S, Pos);
  return End == Pos ? NPos : End;
}

/// _LOCAL at Pos, `%[-\w.$]+` (greedy): its end or NPos.
size_t matchLocal(StringRef S, size_t Pos) {
  if (Pos >= S.size() || S[Pos] != '%')
    return NPos;
  size_t End = nameRunEnd(S, Pos + 1);
  return End == Pos + 1 ? NPos : End;
}

/// `PREFIX(LOCAL)` at Pos: the local, or nothing.
std::optional<StringRef> localAfter(StringRef S, size_t Pos, StringRef Prefix) {
  if (!startsWithAt(S, Pos, Prefix))
    return std::nullopt;
  size_t Start = Pos + Prefix.size();
  size_t End = matchLocal(S, Start);
  if (End == NPos)
    return std::nullopt;
  return S.slice(Start, End);
}

//===----------------------------------------------------------------------===//
// guards.py
//===----------------------------------------------------------------------===//

/// _DEFINE_RE, `^define\s+(.*?)@(NAME)\(`: the lazy group ends at the first
/// `@` where a name and `(` follow; its words are all that is used.
bool matchGuardDefine(StringRef Line, StringRef &Linkage, StringRef &Name) {
  if (!Line.starts_with("define") || Line.size() < 7 || !isPySpace(Line[6]))
    return false;
  for (size_t At = Line.find('@', 7); At != NPos; At = Line.find('@', At + 1)) {
    size_t End = matchName(Line, At + 1);
    if (End != NPos && End < Line.size() && Line[End] == '(') {
      Linkage = Line.slice(7, At);
      Name = Line.slice(At + 1, End);
      return true;
    }
  }
  return false;
}

/// _GLOBAL_RE, `^@(NAME)\s*=\s*(.*?)\b(global|constant|alias|ifunc)\b`.
bool matchGuardGlobal(StringRef Line, StringRef &Name, StringRef &Linkage) {
  if (!Line.starts_with("@"))
    return false;
  size_t End = matchName(Line, 1);
  if (End == NPos)
    return false;
  size_t Pos = skipSpaces(Line, End);
  if (Pos >= Line.size() || Line[Pos] != '=')
    return false;
  size_t Start = Pos + 1;
  for (size_t Q = Start; Q < Line.size(); ++Q) {
    if (!boundaryBefore(Line, Q))
      continue;
    for (StringRef Word : {"global", "constant", "alias", "ifunc"})
      if (wordAt(Line, Q, Word)) {
        Name = Line.slice(1, End);
        Linkage = Line.slice(Start, Q);
        return true;
      }
  }
  return false;
}

/// _UB_MARKER_RE, `^\s*store\s.*,\s*ptr (?:null|poison)\b`: some comma after
/// `store ` is followed by the null or poison pointer.
bool isUBMarker(StringRef Line) {
  size_t Pos = skipSpaces(Line, 0);
  if (!startsWithAt(Line, Pos, "store") || Pos + 5 >= Line.size() ||
      !isPySpace(Line[Pos + 5]))
    return false;
  for (size_t C = Line.find(',', Pos + 6); C != NPos;
       C = Line.find(',', C + 1)) {
    size_t P = skipSpaces(Line, C + 1);
    if (startsWithAt(Line, P, "ptr ") &&
        (wordAt(Line, P + 4, "null") || wordAt(Line, P + 4, "poison")))
      return true;
  }
  return false;
}

/// guards._classify.
void classify(StringRef Name, StringRef Linkage, ModuleSummary &S) {
  SmallVector<StringRef, 8> Words;
  pySplit(Linkage, Words);
  auto Has = [&](std::initializer_list<StringRef> Set) {
    return llvm::any_of(
        Words, [&](StringRef W) { return llvm::is_contained(Set, W); });
  };
  if (Has({"private", "internal"}))
    return;
  S.Exported.insert(Name.str());
  if (!Has({"linkonce", "linkonce_odr", "available_externally"}))
    S.Required.insert(Name.str());
}

//===----------------------------------------------------------------------===//
// security_guard.py: lines outside functions
//===----------------------------------------------------------------------===//

/// _ATTR_GROUP_RE, `^attributes (#\d+) = \{(.*)\}`: the group and the text
/// up to the line's last `}`.
bool matchAttributeGroup(StringRef Line, StringRef &Id, StringRef &Body) {
  if (!Line.starts_with("attributes #"))
    return false;
  size_t End = 12;
  while (End < Line.size() && isDigit(Line[End]))
    ++End;
  if (End == 12 || !startsWithAt(Line, End, " = {"))
    return false;
  size_t Open = End + 4;
  size_t Close = Line.rfind('}');
  if (Close == NPos || Close < Open)
    return false;
  Id = Line.slice(11, End);
  Body = Line.slice(Open, Close);
  return true;
}

/// _DEFINE_RE, `^define\b.*?@(NAME)\((.*)\)(.*)\{\s*$`: the line ends in `{`,
/// the name is the first `@NAME(`, the arguments run to the last `)` before
/// that `{` (greedy), the attributes from there to the `{`.
bool matchSecurityDefine(StringRef Line, StringRef &Name, StringRef &Arguments,
                         StringRef &Attributes) {
  if (!Line.starts_with("define") || (Line.size() > 6 && isWordChar(Line[6])))
    return false;
  size_t Brace = Line.size();
  while (Brace > 0 && isPySpace(Line[Brace - 1]))
    --Brace;
  if (Brace == 0 || Line[Brace - 1] != '{')
    return false;
  --Brace;
  size_t Paren = NPos;
  for (size_t At = Line.find('@', 6); At != NPos && At < Brace;
       At = Line.find('@', At + 1)) {
    size_t End = matchName(Line, At + 1);
    if (End != NPos && End < Line.size() && Line[End] == '(') {
      Paren = End;
      Name = Line.slice(At + 1, End);
      break;
    }
  }
  if (Paren == NPos || Paren >= Brace)
    return false;
  size_t Close = Line.slice(0, Brace).rfind(')');
  if (Close == NPos || Close <= Paren)
    return false;
  Arguments = Line.slice(Paren + 1, Close);
  Attributes = Line.slice(Close + 1, Brace);
  return true;
}

/// _ARG_RE.findall, `(%[-\w.$]+)(?=\s*[,)]|$)`.
void findArguments(StringRef S, SmallVectorImpl<StringRef> &Out) {
  for (size_t I = 0; I < S.size(); ++I) {
    size_t End = matchLocal(S, I);
    if (End == NPos)
      continue;
    size_t After = skipSpaces(S, End);
    if ((After < S.size() && (S[After] == ',' || S[After] == ')')) ||
        End == S.size()) {
      Out.push_back(S.slice(I, End));
      I = End - 1;
    }
  }
}

/// _ATTR_REF_RE.findall, `#\d+`.
void findAttributeRefs(StringRef S, SmallVectorImpl<StringRef> &Out) {
  for (size_t I = 0; I < S.size(); ++I) {
    if (S[I] != '#' || I + 1 >= S.size() || !isDigit(S[I + 1]))
      continue;
    size_t End = I + 1;
    while (End < S.size() && isDigit(S[End]))
      ++End;
    Out.push_back(S.slice(I, End));
    I = End - 1;
  }
}

//===----------------------------------------------------------------------===//
// security_guard.py: lines of a function
//===----------------------------------------------------------------------===//

/// _LABEL_RE, `^("[^"]*"|[-\w.$]+):`.
bool matchLabel(StringRef Line, StringRef &Label) {
  size_t End = matchName(Line, 0);
  if (End == NPos || End >= Line.size() || Line[End] != ':')
    return false;
  Label = Line.slice(0, End);
  return true;
}

/// _CALLEE_RE.search, `\b(?:call|invoke)\b[^@]*@(NAME)\(`: at the first
/// keyword whose first `@` after it starts `NAME(` ([^@]* cannot pass an `@`).
std::optional<StringRef> findCallee(StringRef Line) {
  for (size_t I = 0; I < Line.size(); ++I) {
    if (Line[I] != 'c' && Line[I] != 'i')
      continue;
    if (!boundaryBefore(Line, I))
      continue;
    size_t After = NPos;
    if (wordAt(Line, I, "call"))
      After = I + 4;
    else if (wordAt(Line, I, "invoke"))
      After = I + 6;
    if (After == NPos)
      continue;
    size_t At = Line.find('@', After);
    if (At == NPos)
      continue;
    size_t End = matchName(Line, At + 1);
    if (End != NPos && End < Line.size() && Line[End] == '(')
      return Line.slice(At + 1, End);
  }
  return std::nullopt;
}

/// _ASSIGN_RE, `^\s*(LOCAL) = (.*)$`.
bool matchAssign(StringRef Line, StringRef &Name, StringRef &Value) {
  size_t Start = skipSpaces(Line, 0);
  size_t End = matchLocal(Line, Start);
  if (End == NPos || !startsWithAt(Line, End, " = "))
    return false;
  Name = Line.slice(Start, End);
  Value = Line.substr(End + 3);
  return true;
}

/// The GEP part of _DERIVE_RE from Pos, `(?:inbounds |nuw |nusw |inrange\(\S+\)
/// )*[^,]+, ptr (LOCAL)`, tried in the regular expression's order.
std::optional<StringRef> gepBase(StringRef V, size_t Pos, unsigned Depth = 0) {
  if (Depth < 64) {
    for (StringRef Flag : {"inbounds ", "nuw ", "nusw "})
      if (startsWithAt(V, Pos, Flag))
        if (auto Found = gepBase(V, Pos + Flag.size(), Depth + 1))
          return Found;
    if (startsWithAt(V, Pos, "inrange(")) {
      // \S+ then `) `: the run of non-spaces must end in `)` and a space.
      size_t Start = Pos + 8, End = Start;
      while (End < V.size() && !isPySpace(V[End]))
        ++End;
      if (End > Start + 1 && V[End - 1] == ')' && End < V.size() &&
          V[End] == ' ')
        if (auto Found = gepBase(V, End + 1, Depth + 1))
          return Found;
    }
  }
  size_t Comma = V.find(',', Pos);
  if (Comma == NPos || Comma == Pos)
    return std::nullopt;
  return localAfter(V, Comma, ", ptr ");
}

/// _DERIVE_RE.match on an assigned value: the pointer it derives from.
std::optional<StringRef> derivedFrom(StringRef Value) {
  if (Value.starts_with("getelementptr "))
    return gepBase(Value, 14);
  for (StringRef Cast : {"bitcast ptr ", "addrspacecast ptr "}) {
    std::optional<StringRef> Local = localAfter(Value, 0, Cast);
    if (Local && startsWithAt(Value, Cast.size() + Local->size(), " to"))
      return Local;
  }
  return std::nullopt;
}

/// _LOAD_PTR_RE, `^load ptr, ptr (LOCAL)`.
std::optional<StringRef> loadedSlot(StringRef Value) {
  return localAfter(Value, 0, "load ptr, ptr ");
}

/// _MERGE_RE, `^(?:select [^,]+, ptr (LOCAL), ptr (LOCAL)|phi ptr (.*))$`,
/// and the findall of `\[ (LOCAL),` on a phi's incoming values.
bool matchMerge(StringRef Value, SmallVectorImpl<StringRef> &Chosen) {
  if (Value.starts_with("select ")) {
    size_t Comma = Value.find(',', 7);
    if (Comma != NPos && Comma > 7)
      if (auto First = localAfter(Value, Comma, ", ptr ")) {
        size_t Next = Comma + 6 + First->size();
        if (auto Second = localAfter(Value, Next, ", ptr "))
          if (Next + 6 + Second->size() == Value.size()) {
            Chosen.push_back(*First);
            Chosen.push_back(*Second);
            return true;
          }
      }
  }
  if (!Value.starts_with("phi ptr "))
    return false;
  StringRef Rest = Value.substr(8);
  for (size_t I = Rest.find("[ "); I != NPos; I = Rest.find("[ ", I + 1)) {
    size_t End = matchLocal(Rest, I + 2);
    if (End != NPos && End < Rest.size() && Rest[End] == ',') {
      Chosen.push_back(Rest.slice(I + 2, End));
      I = End;
    }
  }
  return true;
}

/// _STORE_PTR_RE, `^\s*store ptr (LOCAL), ptr (LOCAL)`.
bool matchStorePointer(StringRef Line, StringRef &Value, StringRef &Slot) {
  size_t Start = skipSpaces(Line, 0);
  std::optional<StringRef> Stored = localAfter(Line, Start, "store ptr ");
  if (!Stored)
    return false;
  std::optional<StringRef> Into =
      localAfter(Line, Start + 10 + Stored->size(), ", ptr ");
  if (!Into)
    return false;
  Value = *Stored;
  Slot = *Into;
  return true;
}

/// `re.search(r"\(ptr [^%,]*(LOCAL)", line)`: the first pointer argument.
std::optional<StringRef> firstPointerArgument(StringRef Line) {
  for (size_t I = Line.find("(ptr "); I != NPos;
       I = Line.find("(ptr ", I + 1)) {
    size_t P = I + 5;
    while (P < Line.size() && Line[P] != '%' && Line[P] != ',')
      ++P;
    size_t End = matchLocal(Line, P);
    if (End != NPos)
      return Line.slice(P, End);
  }
  return std::nullopt;
}

/// _VOLATILE_RE.search: `^\s*(?:\S+ = )?(?:load|store) volatile\b`, or a
/// memset/memcpy/memmove intrinsic with `, i1 true)` after its `(`.
bool isVolatileAccess(StringRef Line) {
  size_t Start = skipSpaces(Line, 0);
  auto AccessAt = [&](size_t P) {
    for (StringRef Op : {"load volatile", "store volatile"})
      if (wordAt(Line, P, Op))
        return true;
    return false;
  };
  size_t Word = Start;
  while (Word < Line.size() && !isPySpace(Line[Word]))
    ++Word;
  if (Word > Start && startsWithAt(Line, Word, " = ") && AccessAt(Word + 3))
    return true;
  if (AccessAt(Start))
    return true;
  for (size_t I = Line.find("@llvm.mem"); I != NPos;
       I = Line.find("@llvm.mem", I + 1)) {
    size_t P = I + 9;
    size_t Kind = NPos;
    for (StringRef K : {"set", "cpy", "move"})
      if (startsWithAt(Line, P, K)) {
        Kind = K.size();
        break;
      }
    if (Kind == NPos)
      continue;
    P += Kind;
    // (?:\.inline)?\.[\w.]+\( : a `.`, a run of [\w.], then `(`.
    if (!startsWithAt(Line, P, "."))
      continue;
    size_t End = P + 1;
    while (End < Line.size() && (isWordChar(Line[End]) || Line[End] == '.'))
      ++End;
    if (End == P + 1 || End >= Line.size() || Line[End] != '(')
      continue;
    if (Line.find(", i1 true)", End + 1) != NPos)
      return true;
  }
  return false;
}

/// _OVERFLOW_RE.search, `@llvm\.\w+\.with\.overflow\.`.
bool isOverflowIntrinsic(StringRef Line) {
  for (size_t I = Line.find("@llvm."); I != NPos;
       I = Line.find("@llvm.", I + 1)) {
    size_t End = I + 6;
    while (End < Line.size() && isWordChar(Line[End]))
      ++End;
    if (End > I + 6 && startsWithAt(Line, End, ".with.overflow."))
      return true;
  }
  return false;
}

/// _COND_BR_RE, `^\s*br i1 [^,]+, label (LOCAL), label (LOCAL)`.
bool matchConditionalBranch(StringRef Line, StringRef &True, StringRef &False) {
  size_t Start = skipSpaces(Line, 0);
  if (!startsWithAt(Line, Start, "br i1 "))
    return false;
  size_t Comma = Line.find(',', Start + 6);
  if (Comma == NPos || Comma == Start + 6)
    return false;
  std::optional<StringRef> First = localAfter(Line, Comma, ", label ");
  if (!First)
    return false;
  std::optional<StringRef> Second =
      localAfter(Line, Comma + 8 + First->size(), ", label ");
  if (!Second)
    return false;
  True = *First;
  False = *Second;
  return true;
}

/// _FORTIFIED_RE, `^__\w+_chk$`.
bool isFortified(StringRef Callee) {
  return Callee.size() >= 7 && Callee.starts_with("__") &&
         Callee.ends_with("_chk") && llvm::all_of(Callee, isWordChar);
}

/// _IGNORED_CALLS, `^llvm\.(?:lifetime|dbg|assume|experimental\.noalias)`.
bool isIgnoredCall(StringRef Callee) {
  if (!Callee.consume_front("llvm."))
    return false;
  return Callee.starts_with("lifetime") || Callee.starts_with("dbg") ||
         Callee.starts_with("assume") ||
         Callee.starts_with("experimental.noalias");
}

/// _ZERO_STORE_RE, `^\s*store (?:volatile )?[^,]*?
/// (?:0|null|zeroinitializer|false|0\.0+e\+00), ptr (LOCAL)`: the text from
/// `store ` to the first comma ends in a space and a zero.
std::optional<StringRef> zeroStoreTarget(StringRef Line) {
  size_t Start = skipSpaces(Line, 0);
  if (!startsWithAt(Line, Start, "store "))
    return std::nullopt;
  Start += 6;
  size_t Comma = Line.find(',', Start);
  if (Comma == NPos)
    return std::nullopt;
  StringRef Before = Line.slice(Start, Comma);
  auto EndsWithZero = [&](StringRef Constant) {
    return Before.size() > Constant.size() && Before.ends_with(Constant) &&
           Before[Before.size() - Constant.size() - 1] == ' ';
  };
  bool Zero = EndsWithZero("0") || EndsWithZero("null") ||
              EndsWithZero("zeroinitializer") || EndsWithZero("false");
  if (!Zero && Before.ends_with("e+00")) {
    StringRef Mantissa = Before.drop_back(4);
    size_t Zeros = Mantissa.size() - Mantissa.rtrim('0').size();
    Mantissa = Mantissa.drop_back(Zeros);
    Zero = Zeros > 0 && Mantissa.ends_with("0.") && Mantissa.size() > 2 &&
           Mantissa[Mantissa.size() - 3] == ' ';
  }
  if (!Zero)
    return std::nullopt;
  return localAfter(Line, Comma, ", ptr ");
}

/// _ZERO_SET_RE.search,
/// `@(?:llvm\.memset(?:\.inline)?\.[\w.]+|memset(?:\.inline)?|__memset_chk)\(ptr
/// [^%,]*(LOCAL), i(?:8|32) (?:\w+ )*0,`.
std::optional<StringRef> zeroSetTarget(StringRef Line) {
  for (size_t At = Line.find('@'); At != NPos; At = Line.find('@', At + 1)) {
    size_t P = At + 1, Open = NPos;
    if (startsWithAt(Line, P, "llvm.memset.")) {
      // (?:\.inline)?\.[\w.]+ : any run of [\w.] after `llvm.memset.`.
      size_t End = P + 12;
      while (End < Line.size() && (isWordChar(Line[End]) || Line[End] == '.'))
        ++End;
      if (End > P + 12)
        Open = End;
    } else if (startsWithAt(Line, P, "memset.inline(")) {
      Open = P + 13;
    } else if (startsWithAt(Line, P, "memset(")) {
      Open = P + 6;
    } else if (startsWithAt(Line, P, "__memset_chk(")) {
      Open = P + 12;
    }
    if (Open == NPos || !startsWithAt(Line, Open, "(ptr "))
      continue;
    size_t Q = Open + 5;
    while (Q < Line.size() && Line[Q] != '%' && Line[Q] != ',')
      ++Q;
    size_t End = matchLocal(Line, Q);
    if (End == NPos)
      continue;
    size_t T = NPos;
    if (startsWithAt(Line, End, ", i8 "))
      T = End + 5;
    else if (startsWithAt(Line, End, ", i32 "))
      T = End + 6;
    if (T == NPos)
      continue;
    // (?:\w+ )* then 0, : words each followed by one space, greedily.
    while (true) {
      size_t W = T;
      while (W < Line.size() && isWordChar(Line[W]))
        ++W;
      if (W == T || W >= Line.size() || Line[W] != ' ')
        break;
      T = W + 1;
    }
    if (startsWithAt(Line, T, "0,"))
      return Line.slice(Q, End);
  }
  return std::nullopt;
}

/// _zero_write: the pointer a line writes zeros to.
std::optional<StringRef> zeroWrite(StringRef Line) {
  if (std::optional<StringRef> Target = zeroStoreTarget(Line))
    return Target;
  return zeroSetTarget(Line);
}

/// _STORE_RE, `^\s*store (?:volatile )?[^,]*?(?: (LOCAL))?, ptr (LOCAL)`:
/// whether it matches, and its first group (the stored local: the text up to
/// the first comma ends in ` %name`; empty when it does not).
bool matchStore(StringRef Line, StringRef &Stored) {
  size_t Start = skipSpaces(Line, 0);
  if (!startsWithAt(Line, Start, "store "))
    return false;
  Start += 6;
  if (startsWithAt(Line, Start, "volatile "))
    Start += 9; // tried first; without it, only the same match or none
  size_t Comma = Line.find(',', Start);
  if (Comma == NPos || !localAfter(Line, Comma, ", ptr "))
    return false;
  Stored = StringRef();
  size_t Run = Comma;
  while (Run > Start && isNameChar(Line[Run - 1]))
    --Run;
  if (Run < Comma && Run >= Start + 2 && Line[Run - 1] == '%' &&
      Line[Run - 2] == ' ')
    Stored = Line.slice(Run - 1, Comma);
  return true;
}

/// re.findall(_LOCAL, line): every local the line names.
template <typename CallbackT> bool anyLocal(StringRef Line, CallbackT Fn) {
  for (size_t I = Line.find('%'); I != NPos; I = Line.find('%', I + 1)) {
    size_t End = matchLocal(Line, I);
    if (End == NPos)
      continue;
    if (Fn(Line.slice(I, End)))
      return true;
    I = End - 1;
  }
  return false;
}

using Roots = StringMap<StringRef>;

StringRef rootOf(StringRef Name, const Roots &R) {
  auto Found = R.find(Name);
  return Found == R.end() ? Name : Found->second;
}

/// _read_later: whether a line after a zero write may read the memory it
/// cleared (`Derived`: its root and the names rooted there).
bool readLater(const StringSet<> &Derived, ArrayRef<StringRef> Lines,
               ArrayRef<std::optional<StringRef>> Callees) {
  for (size_t I = 0; I < Lines.size(); ++I) {
    StringRef Line = Lines[I];
    std::optional<StringRef> Callee = Callees[I];
    if (!anyLocal(Line, [&](StringRef L) { return Derived.contains(L); }))
      continue;
    if (zeroWrite(Line) || isOneOf(Callee, ClearingFunctions) ||
        isOneOf(Callee, FreeFunctions))
      continue;
    if (Callee && isIgnoredCall(*Callee))
      continue;
    StringRef Name, Value;
    if (matchAssign(Line, Name, Value) && Derived.contains(Name) &&
        derivedFrom(Value))
      continue;
    StringRef Stored;
    if (matchStore(Line, Stored) &&
        (Stored.empty() || !Derived.contains(Stored)))
      continue; // a write into the memory, not a read or an escape
    return true;
  }
  return false;
}

/// _count_function: adds the body's items to `Counts`, and the functions it
/// calls to `Called`.
void countFunction(ArrayRef<StringRef> Arguments, ArrayRef<StringRef> Body,
                   HardeningCounts &Counts, StringSet<> &Called) {
  Roots R;
  std::map<StringRef, SmallVector<StringRef, 2>> Merges;
  StringMap<std::optional<StringRef>> Slots;
  StringSet<> Allocas, Freed, TrapBlocks;
  std::string Label = "%0";
  std::vector<std::optional<StringRef>> Callees;
  Callees.reserve(Body.size());
  for (StringRef Line : Body) {
    StringRef Found;
    if (matchLabel(Line, Found))
      Label = ("%" + Found).str();
    std::optional<StringRef> Callee = findCallee(Line);
    Callees.push_back(Callee);
    if (Callee)
      Called.insert(*Callee);
    if (Callee && (isOneOf(Callee, TrapFunctions) ||
                   Callee->starts_with("__ubsan_handle_")))
      TrapBlocks.insert(Label);
    StringRef Name, Value;
    if (matchAssign(Line, Name, Value)) {
      SmallVector<StringRef, 4> Chosen;
      if (Value.starts_with("alloca ")) {
        Allocas.insert(Name);
      } else if (std::optional<StringRef> From = derivedFrom(Value)) {
        R[Name] = rootOf(*From, R);
      } else if (std::optional<StringRef> Slot = loadedSlot(Value);
                 Slot && Slots.count(*Slot) && Slots[*Slot]) {
        R[Name] = rootOf(*Slots[*Slot], R);
      } else if (matchMerge(Value, Chosen)) {
        Merges[Name] = SmallVector<StringRef, 2>(Chosen.begin(), Chosen.end());
      }
    }
    StringRef Stored, Slot;
    if (matchStorePointer(Line, Stored, Slot)) {
      if (Slots.count(Slot))
        Slots[Slot] = std::nullopt;
      else
        Slots[Slot] = Stored;
    }
    if (isOneOf(Callee, FreeFunctions))
      if (std::optional<StringRef> Pointer = firstPointerArgument(Line))
        Freed.insert(rootOf(*Pointer, R));
  }
  StringSet<> Limited;
  for (const StringSet<> *Set : {&Allocas, &Freed})
    for (const auto &Entry : *Set)
      Limited.insert(Entry.getKey());
  for (StringRef A : Arguments)
    Limited.insert(A);
  SmallVector<StringRef, 8> MergedLimited;
  for (const auto &[Name, Chosen] : Merges)
    if (!Chosen.empty() && llvm::all_of(Chosen, [&](StringRef C) {
          return Limited.contains(rootOf(C, R));
        }))
      MergedLimited.push_back(Name);
  for (StringRef Name : MergedLimited)
    Limited.insert(Name);

  StringMap<SmallVector<StringRef, 4>> RootedAt; // root -> names rooted there
  for (const auto &Entry : R)
    RootedAt[Entry.second].push_back(Entry.getKey());
  for (size_t I = 0; I < Body.size(); ++I) {
    StringRef Line = Body[I];
    const std::optional<StringRef> &Callee = Callees[I];
    if (Callee) {
      if (isOneOf(Callee, ClearingFunctions))
        ++Counts.ClearingCalls;
      else if (isFortified(*Callee))
        ++Counts.FortifiedCalls;
    }
    Counts.VolatileAccesses += isVolatileAccess(Line);
    Counts.OverflowChecks += isOverflowIntrinsic(Line);
    StringRef True, False;
    if (matchConditionalBranch(Line, True, False) &&
        (TrapBlocks.contains(True) || TrapBlocks.contains(False)))
      ++Counts.OverflowChecks;
    std::optional<StringRef> Target = zeroWrite(Line);
    if (!Target)
      continue;
    StringRef Root = rootOf(*Target, R);
    if (!Limited.contains(Root))
      continue;
    StringSet<> Derived;
    Derived.insert(Root);
    auto Rooted = RootedAt.find(Root);
    if (Rooted != RootedAt.end())
      for (StringRef Name : Rooted->second)
        Derived.insert(Name);
    if (!readLater(Derived, Body.drop_front(I + 1),
                   ArrayRef(Callees).drop_front(I + 1)))
      ++Counts.ClearingWrites;
  }
}

//===----------------------------------------------------------------------===//
// security_guard.py: thunks
//===----------------------------------------------------------------------===//

/// _THUNK_CALL_RE.match, `^\s*(?:LOCAL = )?(?:tail |musttail |notail )?call\b`:
/// neither optional group can be skipped to match (`%` and `t`, `m`, `n` do
/// not start what follows them).
bool isThunkCall(StringRef Line) {
  size_t Pos = skipSpaces(Line, 0);
  size_t End = matchLocal(Line, Pos);
  if (End != NPos && startsWithAt(Line, End, " = "))
    Pos = End + 3;
  for (StringRef Kind : {"tail ", "musttail ", "notail "})
    if (startsWithAt(Line, Pos, Kind)) {
      Pos += Kind.size();
      break;
    }
  return wordAt(Line, Pos, "call");
}

/// _CAST_RE.match, `^\s*LOCAL = (?:bitcast|...|trunc) `.
bool isCast(StringRef Line) {
  StringRef Name, Value;
  if (!matchAssign(Line, Name, Value))
    return false;
  for (StringRef Cast : {"bitcast ", "addrspacecast ", "ptrtoint ",
                         "inttoptr ", "zext ", "sext ", "trunc "})
    if (Value.starts_with(Cast))
      return true;
  return false;
}

/// _thunk_target(body): the function a body only calls (casts and `ret`
/// aside).
std::optional<StringRef> thunkTarget(ArrayRef<StringRef> Body) {
  SmallVector<StringRef, 8> Instructions;
  for (StringRef Line : Body) {
    StringRef Label;
    if (!pyStrip(Line).empty() && !matchLabel(Line, Label))
      Instructions.push_back(Line);
  }
  std::optional<size_t> Call;
  for (size_t I = 0; I < Instructions.size(); ++I) {
    if (!isThunkCall(Instructions[I]))
      continue;
    if (Call)
      return std::nullopt;
    Call = I;
  }
  if (!Call)
    return std::nullopt;
  StringRef Last = Instructions.back();
  if (!Last.substr(skipSpaces(Last, 0)).starts_with("ret"))
    return std::nullopt;
  for (size_t I = 0; I + 1 < Instructions.size(); ++I)
    if (I != *Call && !isCast(Instructions[I]))
      return std::nullopt;
  return findCallee(Instructions[*Call]);
}

/// _mentions(text): how many times each global name (`@NAME`) is mentioned,
/// found left to right as re.findall does.
StringMap<size_t> mentions(ArrayRef<StringRef> Lines) {
  StringMap<size_t> Count;
  for (StringRef Line : Lines) {
    size_t At = Line.find('@');
    while (At != NPos) {
      size_t End = matchName(Line, At + 1);
      if (End == NPos) {
        At = Line.find('@', At + 1);
        continue;
      }
      ++Count[Line.slice(At + 1, End)];
      At = Line.find('@', End);
    }
  }
  return Count;
}

/// _thunk_chain(start, thunks, within): `Start` and the functions its thunks
/// call, followed while `Within` holds (each once: a cycle ends).
SmallVector<StringRef, 4> thunkChain(std::optional<StringRef> Start,
                                     const StringMap<StringRef> &Thunks,
                                     function_ref<bool(StringRef)> Within) {
  SmallVector<StringRef, 4> Reached;
  std::optional<StringRef> Current = Start;
  while (Current && Within(*Current) &&
         !llvm::is_contained(Reached, *Current)) {
    Reached.push_back(*Current);
    auto It = Thunks.find(*Current);
    Current = It == Thunks.end() ? std::nullopt
                                 : std::optional<StringRef>(It->second);
  }
  return Reached;
}

/// Adds the kinds read from a body (_THUNK_KINDS: neither protected functions
/// nor canary checks).
void addBodyItems(HardeningCounts &To, const HardeningCounts &From) {
  To.ClearingWrites += From.ClearingWrites;
  To.ClearingCalls += From.ClearingCalls;
  To.VolatileAccesses += From.VolatileAccesses;
  To.FortifiedCalls += From.FortifiedCalls;
  To.OverflowChecks += From.OverflowChecks;
}

//===----------------------------------------------------------------------===//
// The module's text
//===----------------------------------------------------------------------===//

/// The module as `opt -S` and `llvm-dis` print it: the same printer, no
/// use-list order.
std::string moduleText(const Module &M) {
  std::string Text;
  raw_string_ostream OS(Text);
  M.print(OS, /*AAW=*/nullptr);
  OS.flush();
  return Text;
}

// Written out only on declarations of globals (guards._DECLARATION_LINKAGES).
constexpr StringLiteral DeclarationLinkages[] = {"external", "extern_weak"};

/// summarize(text)'s own fields.
void summarizeLines(ArrayRef<StringRef> Lines, ModuleSummary &S) {
  bool Inside = false;
  StringRef Function;
  size_t BodySize = 0;
  bool OnlyUnreachable = false;
  for (StringRef Line : Lines) {
    if (Inside) {
      if (Line.starts_with("}")) {
        if (BodySize == 1 && OnlyUnreachable)
          S.UnreachableBodies.insert(Function.str());
        Inside = false;
        continue;
      }
      StringRef Stripped = pyStrip(Line.split(';').first);
      if (!Stripped.empty() && !Stripped.ends_with(":")) {
        OnlyUnreachable = BodySize == 0 && Stripped == "unreachable";
        ++BodySize;
      }
      S.UBMarkers += isUBMarker(Line);
      continue;
    }
    StringRef Name, Linkage;
    if (matchGuardDefine(Line, Linkage, Name)) {
      Inside = true;
      Function = Name;
      BodySize = 0;
      OnlyUnreachable = false;
      classify(Name, Linkage, S);
    } else if (matchGuardGlobal(Line, Name, Linkage)) {
      if (!splitHasAny(Linkage, DeclarationLinkages))
        classify(Name, Linkage, S);
    }
  }
}

/// read_counts(text), canary checks aside; and needs_codegen(text).
void countLines(ArrayRef<StringRef> Lines, ModuleSummary &S) {
  StringSet<> ProtectorGroups;
  for (StringRef Line : Lines) {
    StringRef Id, Body;
    if (matchAttributeGroup(Line, Id, Body) &&
        splitHasAny(Body, ProtectorAttributes)) {
      ProtectorGroups.insert(Id);
      S.NeedsCodegen = true;
    }
  }
  HardeningCounts &Counts = S.Hardening;
  StringMap<HardeningCounts> Own; // function -> the items of its own body
  StringMap<StringSet<>> Called;  // function -> what its body calls
  StringMap<StringRef> Thunks;    // function -> the function it only calls
  StringRef Name;
  std::vector<StringRef> Body;
  SmallVector<StringRef, 8> Arguments;
  bool Inside = false;
  for (StringRef Line : Lines) {
    if (Inside) {
      if (Line.starts_with("}")) {
        HardeningCounts &Items = Own[Name];
        Items = HardeningCounts();
        countFunction(Arguments, Body, Items, Called[Name]);
        if (std::optional<StringRef> Target = thunkTarget(Body))
          Thunks[Name] = *Target;
        Inside = false;
      } else if (Line.contains(';') && !Line.contains('"')) {
        Body.push_back(pyRstrip(Line.split(';').first));
      } else {
        Body.push_back(Line);
      }
      continue;
    }
    StringRef Args, Attributes;
    if (!matchSecurityDefine(Line, Name, Args, Attributes))
      continue;
    Inside = true;
    Body.clear();
    Arguments.clear();
    findArguments(Args, Arguments);
    SmallVector<StringRef, 4> Refs;
    findAttributeRefs(Attributes, Refs);
    if (splitHasAny(Attributes, ProtectorAttributes) ||
        llvm::any_of(Refs,
                     [&](StringRef R) { return ProtectorGroups.contains(R); }))
      ++Counts.ProtectedFunctions;
  }
  StringMap<size_t> Callers;
  for (const auto &Entry : Thunks)
    ++Callers[Entry.second];
  StringMap<size_t> Uses;
  if (!Thunks.empty())
    Uses = mentions(Lines);
  StringSet<> Shared; // more uses than its definition and its thunks' calls
  for (const auto &Entry : Callers)
    if (Own.count(Entry.getKey()) &&
        Uses.lookup(Entry.getKey()) > Entry.second + 1)
      Shared.insert(Entry.getKey());
  for (const auto &Entry : Own) {
    // The shared functions a thunk's call reaches, thunks of thunks
    // followed, not back to the thunk itself.
    StringRef Function = Entry.getKey();
    auto Target = Thunks.find(Function);
    SmallVector<StringRef, 4> Reached;
    if (Target != Thunks.end())
      Reached = thunkChain(Target->second, Thunks, [&](StringRef F) {
        return F != Function && Shared.contains(F);
      });
    if (!Reached.empty()) {
      ThunkCredit Credit{Function.str(), Target->second.str(),
                         HardeningCounts()};
      for (StringRef Callee : Reached)
        addBodyItems(Credit.Items, Own.find(Callee)->second);
      S.Thunks.push_back(std::move(Credit));
    }
    addBodyItems(Counts, Entry.second);
  }
  llvm::sort(S.Thunks, [](const ThunkCredit &A, const ThunkCredit &B) {
    return A.Function < B.Function;
  });
  for (const auto &Entry : Called)
    for (const auto &Callee : Entry.second)
      for (StringRef Reached :
           thunkChain(Callee.getKey(), Thunks,
                      [&](StringRef F) { return Own.count(F) > 0; }))
        S.Calls.emplace(Entry.getKey().str(), Reached.str());
}

/// ModuleHardening.against: `S`'s counts with each thunk credited whose
/// function did not call its callee in `Reference`.
HardeningCounts against(const ModuleSummary &S,
                        const ModuleSummary &Reference) {
  HardeningCounts Total = S.Hardening;
  for (const ThunkCredit &Thunk : S.Thunks)
    if (!Reference.Calls.count({Thunk.Function, Thunk.Callee}))
      addBodyItems(Total, Thunk.Items);
  return Total;
}

std::string names(const std::vector<std::string> &Names, size_t Shown = 5) {
  std::string Out;
  for (size_t I = 0; I < Names.size() && I < Shown; ++I)
    Out += (I ? ", " : "") + Names[I];
  if (Names.size() > Shown)
    Out += " and " + std::to_string(Names.size() - Shown) + " more";
  return Out;
}

std::vector<std::string> difference(const std::set<std::string> &A,
                                    const std::set<std::string> &B) {
  std::vector<std::string> Out;
  std::set_difference(A.begin(), A.end(), B.begin(), B.end(),
                      std::back_inserter(Out));
  return Out;
}

/// The kinds in Python's order, with their names.
struct Kind {
  const char *Field;
  const char *Singular;
  uint64_t HardeningCounts::*Count;
};
constexpr Kind Kinds[] = {
    {"clearing_writes", "clearing write", &HardeningCounts::ClearingWrites},
    {"clearing_calls", "clearing call", &HardeningCounts::ClearingCalls},
    {"volatile_accesses", "volatile access",
     &HardeningCounts::VolatileAccesses},
    {"protected_functions", "stack-protected function",
     &HardeningCounts::ProtectedFunctions},
    {"canary_checks", "stack canary check", &HardeningCounts::CanaryChecks},
    {"fortified_calls", "fortified call", &HardeningCounts::FortifiedCalls},
    {"overflow_checks", "overflow/bounds check",
     &HardeningCounts::OverflowChecks},
};

} // namespace

ModuleSummary summarizeText(StringRef Text) {
  std::vector<StringRef> Lines;
  forEachLine(Text, [&](StringRef Line) { Lines.push_back(Line); });
  ModuleSummary S;
  summarizeLines(Lines, S);
  countLines(Lines, S);
  return S;
}

uint64_t countCanaries(StringRef Assembly) {
  uint64_t Count = 0;
  forEachLine(Assembly, [&](StringRef Line) {
    // _CANARY_RE, `^\s*[a-z][\w.]*\s.*\b__stack_chk_fail\b`; a directive
    // (`.` first) cannot start with [a-z].
    size_t P = skipSpaces(Line, 0);
    if (P >= Line.size() || !(Line[P] >= 'a' && Line[P] <= 'z'))
      return;
    size_t Q = P + 1;
    while (Q < Line.size() && (isWordChar(Line[Q]) || Line[Q] == '.'))
      ++Q;
    if (Q >= Line.size() || !isPySpace(Line[Q]))
      return;
    StringRef Symbol = "__stack_chk_fail";
    for (size_t F = Line.find(Symbol, Q + 1); F != NPos;
         F = Line.find(Symbol, F + 1))
      if (boundaryBefore(Line, F) && wordAt(Line, F, Symbol)) {
        ++Count;
        return;
      }
  });
  return Count;
}

Expected<uint64_t> canaryChecks(TargetMachine &TM, Module &M) {
  Expected<SmallString<0>> Assembly =
      emit(TM, M, CodeGenFileType::AssemblyFile);
  if (!Assembly)
    return Assembly.takeError();
  return countCanaries(*Assembly);
}

Expected<ModuleSummary> summarize(const Module &M, TargetMachine *TM) {
  ModuleSummary S = summarizeText(moduleText(M));
  if (!S.NeedsCodegen || !TM)
    return S;
  std::unique_ptr<Module> Clone = CloneModule(M);
  Expected<uint64_t> Canaries = canaryChecks(*TM, *Clone);
  if (!Canaries)
    return Canaries.takeError();
  S.Hardening.CanaryChecks = *Canaries;
  return S;
}

Expected<ModuleSummary> summarizeSource(const Module &M) {
  std::unique_ptr<Module> Clone = CloneModule(M);
  runOnEveryFunction(*Clone, PromotePass());
  return summarize(*Clone, /*TM=*/nullptr);
}

std::vector<std::string> suspiciousChanges(const ModuleSummary &Source,
                                           const ModuleSummary &Reference,
                                           const ModuleSummary &Candidate) {
  std::vector<std::string> Reasons;
  std::vector<std::string> Missing =
      difference(Source.Required, Candidate.Exported);
  if (!Missing.empty())
    Reasons.push_back("exported definitions removed: " + names(Missing));
  std::vector<std::string> NotAtOz =
      difference(Candidate.UnreachableBodies, Reference.UnreachableBodies);
  std::vector<std::string> Emptied =
      difference(std::set<std::string>(NotAtOz.begin(), NotAtOz.end()),
                 Source.UnreachableBodies);
  if (!Emptied.empty())
    Reasons.push_back("function bodies reduced to unreachable: " +
                      names(Emptied));
  if (Candidate.UBMarkers > std::max(Reference.UBMarkers, Source.UBMarkers))
    Reasons.push_back(std::to_string(Candidate.UBMarkers) +
                      " stores to null/poison (code proven undefined), -Oz "
                      "has " +
                      std::to_string(Reference.UBMarkers));
  std::string Removed;
  HardeningCounts Credited = against(Candidate, Reference);
  for (const Kind &K : Kinds) {
    if (K.Count == &HardeningCounts::ProtectedFunctions)
      continue; // shown, not compared (security_guard.COMPARED_KINDS)
    uint64_t Ref = Reference.Hardening.*K.Count;
    uint64_t Cand = Credited.*K.Count;
    if (Cand >= Ref)
      continue;
    uint64_t Fewer = Ref - Cand;
    Removed += (Removed.empty() ? "" : ", ") + std::to_string(Fewer) + " " +
               K.Singular + (Fewer == 1 ? "" : "s");
  }
  if (!Removed.empty())
    Reasons.push_back("security-relevant code removed relative to -Oz: " +
                      Removed);
  return Reasons;
}

json::Value toJSON(const ModuleSummary &S) {
  auto List = [](const std::set<std::string> &Names) {
    json::Array Out;
    for (const std::string &N : Names)
      Out.push_back(N);
    return Out;
  };
  auto Counts = [](const HardeningCounts &C) {
    json::Object Out;
    for (const Kind &K : Kinds)
      Out[K.Field] = C.*K.Count;
    return Out;
  };
  json::Array Thunks, Calls;
  for (const ThunkCredit &T : S.Thunks)
    Thunks.push_back(json::Array{T.Function, T.Callee, Counts(T.Items)});
  for (const auto &[Caller, Callee] : S.Calls)
    Calls.push_back(json::Array{Caller, Callee});
  json::Object Hardening{{"own", Counts(S.Hardening)},
                         {"thunks", std::move(Thunks)},
                         {"calls", std::move(Calls)}};
  return json::Object{{"required", List(S.Required)},
                      {"exported", List(S.Exported)},
                      {"unreachable_bodies", List(S.UnreachableBodies)},
                      {"ub_markers", S.UBMarkers},
                      {"hardening", std::move(Hardening)},
                      {"needs_codegen", S.NeedsCodegen}};
}

std::vector<std::string> UnitGuards::check(const Module &Candidate) {
  if (!Ready) {
    Ready = true;
    if (Expected<ModuleSummary> S = summarizeSource(Source))
      SourceSummary = std::move(*S);
    else
      Failure =
          "cannot read the module for the guards: " + toString(S.takeError());
    if (Failure.empty()) {
      if (Expected<ModuleSummary> R = summarize(Reference, &TM))
        ReferenceSummary = std::move(*R);
      else
        Failure = "cannot read -Oz's output for the guards: " +
                  toString(R.takeError());
    }
  }
  if (!Failure.empty())
    return {Failure};
  Expected<ModuleSummary> C = summarize(Candidate, &TM);
  if (!C)
    return {"cannot read the list's output for the guards: " +
            toString(C.takeError())};
  return suspiciousChanges(SourceSummary, ReferenceSummary, *C);
}

PreservedAnalyses PrintGuardsPass::run(Module &M, ModuleAnalysisManager &) {
  json::Value Out = nullptr;
  Expected<std::unique_ptr<TargetMachine>> TM = targetMachineFor(M);
  if (!TM) {
    // Only the canary checks need it.
    std::string Why = toString(TM.takeError());
    ModuleSummary S = summarizeText(moduleText(M));
    Out =
        S.NeedsCodegen ? json::Value(json::Object{{"error", Why}}) : toJSON(S);
  } else if (Expected<ModuleSummary> S = summarize(M, TM->get())) {
    Out = toJSON(*S);
  } else {
    Out = json::Object{{"error", toString(S.takeError())}};
  }
  outs() << Out << "\n";
  return PreservedAnalyses::all();
}

} // namespace stitchopt
