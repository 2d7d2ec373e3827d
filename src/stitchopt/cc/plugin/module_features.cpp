//===- module_features.cpp - The model's representations in C++ ------===//
//
// autophase and histogram: the Python side counts them from the module's text
// as `llvm-dis` prints it (src/stitchopt/features/irtext.py, autophase.py,
// histogram.py). So does this file: it prints the module with the same
// AsmWriter and scans the lines with hand-written equivalents of the Python
// regular expressions. Reading the same text is what makes the values equal bit
// for bit, the text parser's approximations included (global sizes, types read
// from text, which integers count as operands); a semantic re-implementation
// would differ wherever those approximations do. Each matcher below names the
// Python pattern it reproduces, backtracking included.
//
// func_properties: LLVM's FunctionPropertiesInfo of each defined function, as
// `opt -passes='print<func-properties>' -enable-detailed-function-properties`
// prints it, summed per module by name (func_properties.py).
//
//===----------------------------------------------------------------------===//

#include "module_features.h"

#include "text_lines.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/FunctionPropertiesAnalysis.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalValue.h"
#include "llvm/IR/Instruction.h"
#include "llvm/IR/Metadata.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>

using namespace llvm;

namespace stitchopt {
namespace {

constexpr size_t NPos = StringRef::npos;

//===----------------------------------------------------------------------===//
// Tables (irtext.py, autophase.py, histogram.py, func_properties.py)
//===----------------------------------------------------------------------===//

// irtext.OPCODES: every LLVM 19 opcode as the printer spells it.
// clang-format off
constexpr StringLiteral Opcodes[] = {
    "ret", "br", "switch", "indirectbr", "invoke", "resume", "unreachable",
    "cleanupret", "catchret", "catchswitch", "callbr", "fneg", "add", "fadd",
    "sub", "fsub", "mul", "fmul", "udiv", "sdiv", "fdiv", "urem", "srem",
    "frem", "shl", "lshr", "ashr", "and", "or", "xor", "alloca", "load",
    "store", "getelementptr", "fence", "cmpxchg", "atomicrmw", "trunc", "zext",
    "sext", "fptoui", "fptosi", "uitofp", "sitofp", "fptrunc", "fpext",
    "ptrtoint", "inttoptr", "bitcast", "addrspacecast", "cleanuppad",
    "catchpad", "icmp", "fcmp", "phi", "call", "select", "va_arg",
    "extractelement", "insertelement", "shufflevector", "extractvalue",
    "insertvalue", "landingpad", "freeze"};
// clang-format on
constexpr size_t NumOpcodes = std::size(Opcodes);

constexpr StringLiteral TerminatorOps[] = {
    "ret",         "br",         "switch",   "indirectbr",  "invoke", "resume",
    "unreachable", "cleanupret", "catchret", "catchswitch", "callbr"};
constexpr StringLiteral BinaryOps[] = {
    "add",  "fadd", "sub",  "fsub", "mul",  "fmul", "udiv", "sdiv", "fdiv",
    "urem", "srem", "frem", "shl",  "lshr", "ashr", "and",  "or",   "xor"};
constexpr StringLiteral CastOps[] = {
    "trunc",    "zext",    "sext",         "fptoui", "fptosi",
    "uitofp",   "sitofp",  "fptrunc",      "fpext",  "ptrtoint",
    "inttoptr", "bitcast", "addrspacecast"};

// clang-format off
constexpr StringLiteral AutophaseNames[] = {
    "BBNumArgsHi", "BBNumArgsLo", "onePred", "onePredOneSuc", "onePredTwoSuc",
    "oneSuccessor", "twoPred", "twoPredOneSuc", "twoEach", "twoSuccessor",
    "morePreds", "BB03Phi", "BBHiPhi", "BBNoPhi", "BeginPhi", "BranchCount",
    "returnInt", "CriticalCount", "NumEdges", "const32Bit", "const64Bit",
    "numConstZeroes", "numConstOnes", "UncondBranches", "binaryConstArg",
    "NumAShrInst", "NumAddInst", "NumAllocaInst", "NumAndInst", "BlockMid",
    "BlockLow", "NumBitCastInst", "NumBrInst", "NumCallInst",
    "NumGetElementPtrInst", "NumICmpInst", "NumLShrInst", "NumLoadInst",
    "NumMulInst", "NumOrInst", "NumPHIInst", "NumRetInst", "NumSExtInst",
    "NumSelectInst", "NumShlInst", "NumStoreInst", "NumSubInst", "NumTruncInst",
    "NumXorInst", "NumZExtInst", "TotalBlocks", "TotalInsts", "TotalMemInst",
    "TotalFuncs", "ArgsPhi", "testUnary"};
// clang-format on

// autophase._OPCODE_FEATURES.
constexpr std::pair<StringLiteral, StringLiteral> OpcodeFeatures[] = {
    {"NumAShrInst", "ashr"},       {"NumAddInst", "add"},
    {"NumAllocaInst", "alloca"},   {"NumAndInst", "and"},
    {"NumBitCastInst", "bitcast"}, {"NumBrInst", "br"},
    {"NumCallInst", "call"},       {"NumGetElementPtrInst", "getelementptr"},
    {"NumICmpInst", "icmp"},       {"NumLShrInst", "lshr"},
    {"NumLoadInst", "load"},       {"NumMulInst", "mul"},
    {"NumOrInst", "or"},           {"NumPHIInst", "phi"},
    {"NumRetInst", "ret"},         {"NumSExtInst", "sext"},
    {"NumSelectInst", "select"},   {"NumShlInst", "shl"},
    {"NumStoreInst", "store"},     {"NumSubInst", "sub"},
    {"NumTruncInst", "trunc"},     {"NumXorInst", "xor"},
    {"NumZExtInst", "zext"}};
// Not freeze: UnaryInstruction::classof leaves it out (autophase.py).
constexpr StringLiteral UnaryInstructions[] = {
    "fneg",     "alloca",  "load",         "va_arg", "extractvalue",
    "trunc",    "zext",    "sext",         "fptoui", "fptosi",
    "uitofp",   "sitofp",  "fptrunc",      "fpext",  "ptrtoint",
    "inttoptr", "bitcast", "addrspacecast"};
constexpr StringLiteral MemoryInstructions[] = {
    "getelementptr", "load", "store", "call", "invoke", "alloca"};

constexpr StringLiteral TypeBins[] = {
    "i1",     "i8",      "i16",    "i32",       "i64",  "int_other", "float",
    "double", "pointer", "vector", "aggregate", "void", "other"};
enum TypeBin {
  BinI1,
  BinI8,
  BinI16,
  BinI32,
  BinI64,
  BinIntOther,
  BinFloat,
  BinDouble,
  BinPointer,
  BinVector,
  BinAggregate,
  BinVoid,
  BinOther
};
constexpr StringLiteral ModuleCounts[] = {
    "defined_functions", "declared_functions",  "global_variables",
    "string_constants",  "constant_data_bytes", "variable_data_bytes"};

struct PropertyField {
  StringLiteral Name;
  int64_t FunctionPropertiesInfo::*Member;
};
#define STITCHOPT_PROPERTY(NAME) {#NAME, &FunctionPropertiesInfo::NAME}
// func_properties.FUNCTION_FEATURES: print<func-properties>'s order in LLVM 19.
const PropertyField PropertyFields[] = {
    STITCHOPT_PROPERTY(BasicBlockCount),
    STITCHOPT_PROPERTY(BlocksReachedFromConditionalInstruction),
    STITCHOPT_PROPERTY(Uses),
    STITCHOPT_PROPERTY(DirectCallsToDefinedFunctions),
    STITCHOPT_PROPERTY(LoadInstCount),
    STITCHOPT_PROPERTY(StoreInstCount),
    STITCHOPT_PROPERTY(MaxLoopDepth),
    STITCHOPT_PROPERTY(TopLevelLoopCount),
    STITCHOPT_PROPERTY(TotalInstructionCount),
    STITCHOPT_PROPERTY(BasicBlocksWithSingleSuccessor),
    STITCHOPT_PROPERTY(BasicBlocksWithTwoSuccessors),
    STITCHOPT_PROPERTY(BasicBlocksWithMoreThanTwoSuccessors),
    STITCHOPT_PROPERTY(BasicBlocksWithSinglePredecessor),
    STITCHOPT_PROPERTY(BasicBlocksWithTwoPredecessors),
    STITCHOPT_PROPERTY(BasicBlocksWithMoreThanTwoPredecessors),
    STITCHOPT_PROPERTY(BigBasicBlocks),
    STITCHOPT_PROPERTY(MediumBasicBlocks),
    STITCHOPT_PROPERTY(SmallBasicBlocks),
    STITCHOPT_PROPERTY(CastInstructionCount),
    STITCHOPT_PROPERTY(FloatingPointInstructionCount),
    STITCHOPT_PROPERTY(IntegerInstructionCount),
    STITCHOPT_PROPERTY(ConstantIntOperandCount),
    STITCHOPT_PROPERTY(ConstantFPOperandCount),
    STITCHOPT_PROPERTY(ConstantOperandCount),
    STITCHOPT_PROPERTY(InstructionOperandCount),
    STITCHOPT_PROPERTY(BasicBlockOperandCount),
    STITCHOPT_PROPERTY(GlobalValueOperandCount),
    STITCHOPT_PROPERTY(InlineAsmOperandCount),
    STITCHOPT_PROPERTY(ArgumentOperandCount),
    STITCHOPT_PROPERTY(UnknownOperandCount),
    STITCHOPT_PROPERTY(CriticalEdgeCount),
    STITCHOPT_PROPERTY(ControlFlowEdgeCount),
    STITCHOPT_PROPERTY(UnconditionalBranchCount),
    STITCHOPT_PROPERTY(IntrinsicCount),
    STITCHOPT_PROPERTY(DirectCallCount),
    STITCHOPT_PROPERTY(IndirectCallCount),
    STITCHOPT_PROPERTY(CallReturnsIntegerCount),
    STITCHOPT_PROPERTY(CallReturnsFloatCount),
    STITCHOPT_PROPERTY(CallReturnsPointerCount),
    STITCHOPT_PROPERTY(CallReturnsVectorIntCount),
    STITCHOPT_PROPERTY(CallReturnsVectorFloatCount),
    STITCHOPT_PROPERTY(CallReturnsVectorPointerCount),
    STITCHOPT_PROPERTY(CallWithManyArgumentsCount),
    STITCHOPT_PROPERTY(CallWithPointerArgumentCount),
};
#undef STITCHOPT_PROPERTY
// func_properties.MAX_FEATURES: indices into PropertyFields.
constexpr size_t MaxPropertyFields[] = {0, 8, 6};

template <size_t N> bool isOneOf(StringRef S, const StringLiteral (&Set)[N]) {
  return llvm::is_contained(Set, S);
}

bool isAnyOf(StringRef S, std::initializer_list<StringRef> Set) {
  return llvm::is_contained(Set, S);
}

int opcodeIndex(StringRef Op) {
  // Built once; thread-safe as a function-local static.
  static const StringMap<int> Index = [] {
    StringMap<int> Map;
    for (size_t I = 0; I < NumOpcodes; ++I)
      Map[Opcodes[I]] = static_cast<int>(I);
    return Map;
  }();
  auto It = Index.find(Op);
  return It == Index.end() ? -1 : It->second;
}

//===----------------------------------------------------------------------===//
// Character classes of Python's `re` on the printer's ASCII text
//===----------------------------------------------------------------------===//

bool isWordChar(char C) { return isAlnum(C) || C == '_'; } // \w
bool isNameChar(char C) {                                  // [-\w$.]
  return isWordChar(C) || C == '-' || C == '$' || C == '.';
}
bool isLowerOrUnderscore(char C) { return isLower(C) || C == '_'; } // [a-z_]
// \s and str.strip(): ASCII whitespace plus the information separators.
bool isPySpace(char C) {
  return C == ' ' || (C >= '\t' && C <= '\r') || (C >= '\x1c' && C <= '\x1f');
}
// The lookbehind (?<![\w%@.$\"-]) of autophase._NOT_IN_NAME.
bool notInName(StringRef S, size_t Pos) {
  if (Pos == 0)
    return true;
  char C = S[Pos - 1];
  return !(isNameChar(C) || C == '%' || C == '@' || C == '"');
}

StringRef pyStrip(StringRef S) {
  while (!S.empty() && isPySpace(S.front()))
    S = S.drop_front();
  while (!S.empty() && isPySpace(S.back()))
    S = S.drop_back();
  return S;
}

bool isAllDigits(StringRef S) { // str.isdigit()
  return !S.empty() && llvm::all_of(S, isDigit);
}

// int(S) of a digit string; saturates where Python's integers would not.
uint64_t parseCount(StringRef Digits) {
  uint64_t Value = 0;
  for (char C : Digits) {
    bool Overflow = false;
    Value = SaturatingMultiplyAdd<uint64_t>(Value, 10, uint64_t(C - '0'),
                                            &Overflow);
    if (Overflow)
      return UINT64_MAX;
  }
  return Value;
}

size_t digitsEnd(StringRef S, size_t Pos) { // \d* from Pos
  while (Pos < S.size() && isDigit(S[Pos]))
    ++Pos;
  return Pos;
}


//===----------------------------------------------------------------------===//
// irtext.py
//===----------------------------------------------------------------------===//

/// irtext.NAME at Pos: `"(?:[^"\\]|\\.)*"` or `[-\w$.]+`; its end or NPos.
size_t matchName(StringRef S, size_t Pos) {
  if (Pos >= S.size())
    return NPos;
  if (S[Pos] == '"') {
    for (size_t I = Pos + 1; I < S.size(); ++I) {
      if (S[I] == '"')
        return I + 1;
      if (S[I] == '\\') {
        if (I + 1 >= S.size() || S[I + 1] == '\n')
          return NPos;
        ++I;
      }
    }
    return NPos;
  }
  size_t I = Pos;
  while (I < S.size() && isNameChar(S[I]))
    ++I;
  return I == Pos ? NPos : I;
}

/// irtext.INSTRUCTION_RE.match: the opcode word and where it ends.
bool matchInstruction(StringRef Line, StringRef &Op, size_t &End) {
  if (!Line.starts_with("  "))
    return false;
  size_t P = 2;
  if (P < Line.size() && Line[P] == '%') {
    size_t NameEnd = matchName(Line, P + 1);
    if (NameEnd != NPos && startsWithAt(Line, NameEnd, " = "))
      P = NameEnd + 3;
  }
  auto WordEnd = [&](size_t From) {
    while (From < Line.size() && isLowerOrUnderscore(Line[From]))
      ++From;
    return From;
  };
  for (StringRef Marker : {"tail ", "musttail ", "notail "}) {
    if (!startsWithAt(Line, P, Marker))
      continue;
    size_t Start = P + Marker.size(), E = WordEnd(Start);
    if (E > Start) {
      Op = Line.slice(Start, E);
      End = E;
      return true;
    }
    break; // Backtrack: the marker itself is the word.
  }
  size_t E = WordEnd(P);
  if (E == P)
    return false;
  Op = Line.slice(P, E);
  End = E;
  return true;
}

/// irtext.LABEL_DEF_RE.match: the label a line defines.
bool matchLabelDef(StringRef Line, StringRef &Name) {
  size_t E = matchName(Line, 0);
  if (E == NPos || E >= Line.size() || Line[E] != ':')
    return false;
  Name = Line.take_front(E);
  return true;
}

/// irtext.LABEL_REF_RE.findall: the names after each `label %`.
void findLabelRefs(StringRef S, SmallVectorImpl<StringRef> &Out) {
  for (size_t I = S.find("label %"); I != NPos; I = S.find("label %", I)) {
    size_t E = matchName(S, I + 7);
    if (E == NPos) {
      ++I;
      continue;
    }
    Out.push_back(S.slice(I + 7, E));
    I = E;
  }
}

/// irtext._SCALAR_TYPE_RE.match: the end of a scalar type at Pos, or NPos.
size_t matchScalarType(StringRef S, size_t Pos) {
  if (Pos >= S.size())
    return NPos;
  // (?![-\w$.]) after each alternative.
  auto Ends = [&](size_t E) { return E >= S.size() || !isNameChar(S[E]); };
  if (S[Pos] == 'i') {
    size_t E = digitsEnd(S, Pos + 1);
    if (E > Pos + 1 && Ends(E))
      return E;
  }
  if (startsWithAt(S, Pos, "ptr")) {
    size_t E = Pos + 3;
    if (startsWithAt(S, E, " addrspace(")) {
      size_t D = digitsEnd(S, E + 11);
      if (D > E + 11 && D < S.size() && S[D] == ')' && Ends(D + 1))
        return D + 1;
    }
    if (Ends(E))
      return E;
  }
  for (StringRef Keyword :
       {"void", "half", "bfloat", "float", "double", "x86_fp80", "fp128",
        "ppc_fp128", "x86_amx", "label", "token", "metadata"}) {
    if (startsWithAt(S, Pos, Keyword) && Ends(Pos + Keyword.size()))
      return Pos + Keyword.size();
  }
  if (S[Pos] == '%') {
    size_t E = matchName(S, Pos + 1);
    if (E != NPos && Ends(E))
      return E;
  }
  if (startsWithAt(S, Pos, "target(\"")) {
    size_t Quote = S.find('"', Pos + 8);
    if (Quote != NPos) {
      size_t Close = S.find(')', Quote + 1);
      if (Close != NPos && Ends(Close + 1))
        return Close + 1;
    }
  }
  return NPos;
}

bool isOpenBracket(char C) { return C == '<' || C == '[' || C == '{'; }
bool isCloseBracket(char C) { return C == '>' || C == ']' || C == '}'; }

/// irtext.read_type: the end of the type at Pos, or Pos when none starts there.
size_t readType(StringRef S, size_t Pos) {
  if (Pos < S.size() && isOpenBracket(S[Pos])) {
    int Depth = 0;
    for (size_t I = Pos; I < S.size(); ++I) {
      if (isOpenBracket(S[I])) {
        ++Depth;
      } else if (isCloseBracket(S[I])) {
        if (--Depth == 0)
          return I + 1;
      }
    }
    return Pos;
  }
  size_t E = matchScalarType(S, Pos);
  return E == NPos ? Pos : E;
}

StringRef typeAt(StringRef S, size_t Pos) { // histogram._type_at
  if (Pos > S.size())
    return StringRef();
  return S.slice(Pos, readType(S, Pos));
}

/// irtext.split_fields: `a, {b, c}, d` split at its top-level commas.
void splitFields(StringRef Body, SmallVectorImpl<StringRef> &Fields) {
  int Depth = 0;
  size_t Start = 0;
  for (size_t I = 0; I < Body.size(); ++I) {
    char C = Body[I];
    if (isOpenBracket(C) || C == '(') {
      ++Depth;
    } else if (isCloseBracket(C) || C == ')') {
      --Depth;
    } else if (C == ',' && Depth == 0) {
      Fields.push_back(pyStrip(Body.slice(Start, I)));
      Start = I + 1;
    }
  }
  StringRef Tail = pyStrip(Body.substr(Start));
  if (!Tail.empty())
    Fields.push_back(Tail);
}

StringRef pySliceInner(StringRef S) { // S[1:-1]
  return S.size() < 2 ? StringRef() : S.slice(1, S.size() - 1);
}

enum class AggregateKind { None, Struct, Array, Vector };
struct AggregateParts {
  AggregateKind Kind = AggregateKind::None;
  uint64_t Count = 0;
  SmallVector<StringRef, 8> Elements;
};

/// irtext.aggregate_parts.
AggregateParts aggregateParts(StringRef Type) {
  AggregateParts Parts;
  if (Type.starts_with("<{") || Type.starts_with("{")) {
    splitFields(pySliceInner(Type.trim("<>")), Parts.Elements);
    Parts.Kind = AggregateKind::Struct;
    Parts.Count = Parts.Elements.size();
    return Parts;
  }
  // Python's `type_text[:1] in "[<"` also holds for "", which then fails below.
  if (Type.empty() || Type[0] == '[' || Type[0] == '<') {
    auto [Count, Element] = pySliceInner(Type).split(" x ");
    Count = pyStrip(Count);
    if (isAllDigits(Count)) {
      Parts.Kind =
          Type[0] == '[' ? AggregateKind::Array : AggregateKind::Vector;
      Parts.Count = parseCount(Count);
      Parts.Elements.push_back(pyStrip(Element));
    }
  }
  return Parts;
}

//===----------------------------------------------------------------------===//
// autophase.py
//===----------------------------------------------------------------------===//

/// The integer constants counted so far; only these four sums are reported.
struct ConstantTally {
  int64_t Bits32 = 0, Bits64 = 0, Zeroes = 0, Ones = 0;
  void add(StringRef Width, StringRef Value) {
    Bits32 += Width == "32";
    Bits64 += Width == "64";
    Ones += Value == "1" || Value == "true";
    Zeroes += Value == "0" || Value == "false";
  }
};

/// autophase._INT_LITERAL `(-?\d+|true|false)` at Pos: its end, or NPos.
size_t matchIntLiteral(StringRef S, size_t Pos) {
  size_t D = Pos < S.size() && S[Pos] == '-' ? Pos + 1 : Pos;
  size_t E = digitsEnd(S, D);
  if (E > D)
    return E;
  for (StringRef Word : {"true", "false"})
    if (startsWithAt(S, Pos, Word))
      return Pos + Word.size();
  return NPos;
}

bool wordBoundaryAfter(StringRef S, size_t E) { // \b after a word character
  return E >= S.size() || !isWordChar(S[E]);
}

/// autophase._TYPED_INT_RE at Pos: `i32 5`, `i32 noundef 5`, `i1 zeroext true`.
bool matchTypedInt(StringRef S, size_t Pos, StringRef &Width, StringRef &Value,
                   size_t &End) {
  if (S[Pos] != 'i' || !notInName(S, Pos))
    return false;
  size_t D = digitsEnd(S, Pos + 1);
  if (D == Pos + 1 || D >= S.size() || S[D] != ' ')
    return false;
  size_t P = D + 1;
  bool Progress = true;
  while (Progress) {
    Progress = false;
    for (StringRef Attr : {"noundef ", "signext ", "zeroext ", "inreg ",
                           "returned ", "immarg ", "allocalign "}) {
      if (startsWithAt(S, P, Attr)) {
        P += Attr.size();
        Progress = true;
        break;
      }
    }
  }
  // Each literal alternative ends at a word character, so \b is a test, and
  // backtracking into a shorter literal or fewer attributes cannot succeed.
  size_t E = matchIntLiteral(S, P);
  if (E == NPos || !wordBoundaryAfter(S, E))
    return false;
  Width = S.slice(Pos + 1, D);
  Value = S.slice(P, E);
  End = E;
  return true;
}

template <typename CallbackT> void forEachTypedInt(StringRef S, CallbackT Fn) {
  for (size_t I = 0; I < S.size();) {
    StringRef Width, Value;
    size_t End;
    if (matchTypedInt(S, I, Width, Value, End)) {
      Fn(Width, Value);
      I = End;
    } else {
      ++I;
    }
  }
}

/// autophase._STRING_RE.sub('""', S).
std::string replaceStrings(StringRef S) {
  std::string Out;
  for (size_t I = 0; I < S.size();) {
    size_t E = S[I] == '"' ? matchName(S, I) : NPos;
    if (E != NPos) {
      Out += "\"\"";
      I = E;
    } else {
      Out += S[I++];
    }
  }
  return Out;
}

/// autophase._NON_OPERAND_RE.sub("", S): range(...) attributes and
/// `metadata iN value` arguments.
std::string removeNonOperands(StringRef S) {
  std::string Out;
  for (size_t I = 0; I < S.size();) {
    if (notInName(S, I)) {
      if (startsWithAt(S, I, "range(")) {
        size_t Close = S.find(')', I + 6);
        if (Close != NPos) {
          I = Close + 1;
          continue;
        }
      }
      if (startsWithAt(S, I, "metadata i")) {
        size_t D = digitsEnd(S, I + 10);
        if (D > I + 10 && D + 1 < S.size() && S[D] == ' ' &&
            !isPySpace(S[D + 1])) {
          size_t E = D + 1;
          while (E < S.size() && !isPySpace(S[E]))
            ++E;
          I = E;
          continue;
        }
      }
    }
    Out += S[I++];
  }
  return Out;
}

// The keywords of autophase._CONSTEXPR_START_RE, in its alternation order.
constexpr StringLiteral ConstexprKeywords[] = {
    "getelementptr", "bitcast",      "ptrtoint", "inttoptr",
    "addrspacecast", "trunc",        "zext",     "sext",
    "fptrunc",       "fpext",        "fptoui",   "fptosi",
    "uitofp",        "sitofp",       "add",      "sub",
    "mul",           "shl",          "lshr",     "ashr",
    "and",           "or",           "xor",      "udiv",
    "sdiv",          "urem",         "srem",     "fneg",
    "icmp",          "fcmp",         "select",   "extractelement",
    "insertelement", "shufflevector"};

/// `(?: [a-z]+| inrange\([^)]*\))* \(` at Pos: the position of the `(`, or
/// NPos. A word followed directly by `(` can only continue as `inrange(...)`.
size_t matchConstexprTail(StringRef S, size_t Pos) {
  while (Pos < S.size() && S[Pos] == ' ') {
    if (Pos + 1 < S.size() && S[Pos + 1] == '(')
      return Pos + 1;
    size_t E = Pos + 1;
    while (E < S.size() && isLower(S[E]))
      ++E;
    if (E == Pos + 1)
      return NPos;
    if (E < S.size() && S[E] == '(') {
      if (S.slice(Pos + 1, E) != "inrange")
        return NPos;
      size_t Close = S.find(')', E + 1);
      if (Close == NPos)
        return NPos;
      E = Close + 1;
    }
    Pos = E;
  }
  return NPos;
}

/// autophase._CONSTEXPR_START_RE.search: where a constant expression starts and
/// where its `(` is.
bool findConstexpr(StringRef S, size_t &Start, size_t &Paren) {
  for (size_t I = 0; I < S.size(); ++I) {
    if (!isLower(S[I]) || !notInName(S, I))
      continue;
    for (StringRef Keyword : ConstexprKeywords) {
      if (!startsWithAt(S, I, Keyword))
        continue;
      size_t P = matchConstexprTail(S, I + Keyword.size());
      if (P != NPos) {
        Start = I;
        Paren = P;
        return true;
      }
    }
  }
  return false;
}

/// autophase._strip_constexprs: each constant expression becomes `@c`.
std::string stripConstexprs(std::string Text) {
  size_t Start, Paren;
  while (findConstexpr(Text, Start, Paren)) {
    size_t End = Text.size();
    int Depth = 0;
    for (size_t I = Paren; I < Text.size(); ++I) {
      if (Text[I] == '(') {
        ++Depth;
      } else if (Text[I] == ')' && --Depth == 0) {
        End = I + 1;
        break;
      }
    }
    Text.replace(Start, End - Start, "@c");
  }
  return Text;
}

/// One pass of autophase._AGGREGATE_RE.sub("", S): innermost <...>, {...} and
/// [...] groups without brackets inside.
std::string removeInnermostAggregates(StringRef S) {
  std::string Out;
  for (size_t I = 0; I < S.size();) {
    char C = S[I];
    if (isOpenBracket(C)) {
      size_t J = S.find_first_of("<>[]{}", I + 1);
      char Close = C == '<' ? '>' : C == '[' ? ']' : '}';
      if (J != NPos && S[J] == Close) {
        I = J + 1;
        continue;
      }
    }
    Out += C;
    ++I;
  }
  return Out;
}

/// autophase.typed_int_operands, added to Tally.
void addTypedIntOperands(StringRef Rest, ConstantTally &Tally) {
  bool Found = false;
  forEachTypedInt(Rest, [&](StringRef, StringRef) { Found = true; });
  if (!Found)
    return;
  std::string Text = Rest.str();
  if (Text.find('"') != std::string::npos)
    Text = replaceStrings(Text);
  if (Text.find("range(") != std::string::npos ||
      Text.find("metadata ") != std::string::npos)
    Text = removeNonOperands(Text);
  if (Text.find('(') != std::string::npos)
    Text = stripConstexprs(std::move(Text));
  if (Text.find_first_of("<[{") != std::string::npos) {
    for (std::string Previous; Previous != Text;) {
      Previous = Text;
      Text = removeInnermostAggregates(Previous);
    }
  }
  forEachTypedInt(
      Text, [&](StringRef Width, StringRef Value) { Tally.add(Width, Value); });
}

/// The shared tail of autophase._BINOP_RE and _ICMP_RE after the leading
/// words: `(<[^>]*>|\S+) ([^,]+), ([^,]+)` at Pos.
bool matchTypedOperands(StringRef S, size_t Pos, StringRef &Type,
                        StringRef &First, StringRef &Second) {
  auto Operands = [&](size_t TypeEnd) {
    if (TypeEnd >= S.size() || S[TypeEnd] != ' ')
      return false;
    size_t Start = TypeEnd + 1, Comma = S.find(',', Start);
    if (Comma == NPos || Comma == Start || Comma + 2 >= S.size() ||
        S[Comma + 1] != ' ' || S[Comma + 2] == ',')
      return false;
    Type = S.slice(Pos, TypeEnd);
    First = S.slice(Start, Comma);
    Second = S.slice(Comma + 2, S.find(',', Comma + 2));
    return true;
  };
  if (Pos < S.size() && S[Pos] == '<') {
    size_t Close = S.find('>', Pos + 1);
    if (Close != NPos && Operands(Close + 1))
      return true;
  }
  size_t E = Pos;
  while (E < S.size() && !isPySpace(S[E]))
    ++E;
  return E > Pos && Operands(E);
}

/// autophase._BINOP_RE.match: ` (flag )*TYPE A, B`.
bool matchBinop(StringRef Rest, StringRef &Type, StringRef &First,
                StringRef &Second) {
  if (Rest.empty() || Rest[0] != ' ')
    return false;
  SmallVector<size_t, 4> Starts = {1};
  for (bool Progress = true; Progress;) {
    Progress = false;
    for (StringRef Flag :
         {"nuw ", "nsw ", "exact ", "disjoint ", "nnan ", "ninf ", "nsz ",
          "arcp ", "contract ", "afn ", "reassoc ", "fast "}) {
      if (startsWithAt(Rest, Starts.back(), Flag)) {
        Starts.push_back(Starts.back() + Flag.size());
        Progress = true;
        break;
      }
    }
  }
  // Greedy flags first, then fewer, as the regex backtracks.
  for (size_t Pos : llvm::reverse(Starts))
    if (matchTypedOperands(Rest, Pos, Type, First, Second))
      return true;
  return false;
}

/// autophase._ICMP_RE.match: ` PRED TYPE A, B`.
bool matchIcmp(StringRef Rest, StringRef &Type, StringRef &First,
               StringRef &Second) {
  if (Rest.empty() || Rest[0] != ' ')
    return false;
  size_t E = 1;
  while (E < Rest.size() && isLower(Rest[E]))
    ++E;
  if (E == 1 || E >= Rest.size() || Rest[E] != ' ')
    return false;
  return matchTypedOperands(Rest, E + 1, Type, First, Second);
}

/// autophase._CALL_RETURNS_INT_RE.match:
/// ` (?:[\w.]+(?:\([^)]*\))? )*?i\d+ (?:\([^)]*\) )?@`.
bool callReturnsInt(StringRef Rest) {
  if (Rest.empty() || Rest[0] != ' ')
    return false;
  auto TailAt = [&](size_t P) {
    if (P >= Rest.size() || Rest[P] != 'i')
      return false;
    size_t D = digitsEnd(Rest, P + 1);
    if (D == P + 1 || D >= Rest.size() || Rest[D] != ' ')
      return false;
    size_t After = D + 1;
    if (After < Rest.size() && Rest[After] == '(') {
      size_t Close = Rest.find(')', After + 1);
      if (Close != NPos && startsWithAt(Rest, Close + 1, " @"))
        return true;
    }
    return After < Rest.size() && Rest[After] == '@';
  };
  // Lazy: try the tail before each further word.
  for (size_t P = 1;;) {
    if (TailAt(P))
      return true;
    size_t E = P;
    while (E < Rest.size() && (isWordChar(Rest[E]) || Rest[E] == '.'))
      ++E;
    if (E == P || E >= Rest.size())
      return false;
    if (Rest[E] == '(') {
      size_t Close = Rest.find(')', E + 1);
      if (Close == NPos || !startsWithAt(Rest, Close + 1, " "))
        return false;
      P = Close + 2;
    } else if (Rest[E] == ' ') {
      P = E + 1;
    } else {
      return false;
    }
  }
}

/// autophase._PHI_INT_TYPE_RE.match: ` i(\d+) \[`; the width or "".
StringRef phiIntWidth(StringRef Rest) {
  if (!Rest.starts_with(" i"))
    return StringRef();
  size_t D = digitsEnd(Rest, 2);
  if (D == 2 || !startsWithAt(Rest, D, " ["))
    return StringRef();
  return Rest.slice(2, D);
}

/// autophase._PHI_INT_VALUE_RE.findall: `\[ (-?\d+|true|false), `.
template <typename CallbackT>
void forEachPhiIntValue(StringRef Rest, CallbackT Fn) {
  for (size_t I = Rest.find("[ "); I != NPos; I = Rest.find("[ ", I)) {
    size_t E = matchIntLiteral(Rest, I + 2);
    if (E != NPos && startsWithAt(Rest, E, ", ")) {
      Fn(Rest.slice(I + 2, E));
      I = E + 2;
    } else {
      ++I;
    }
  }
}

/// autophase._ALLOCA_SIZE_RE.search: `, i\d+ (?:%|-?\d)`.
bool hasAllocaSize(StringRef Rest) {
  for (size_t I = Rest.find(", i"); I != NPos; I = Rest.find(", i", I + 1)) {
    size_t D = digitsEnd(Rest, I + 3);
    if (D == I + 3 || D + 1 >= Rest.size() || Rest[D] != ' ')
      continue;
    char C = Rest[D + 1];
    if (C == '%' || isDigit(C) ||
        (C == '-' && D + 2 < Rest.size() && isDigit(Rest[D + 2])))
      return true;
  }
  return false;
}

struct AutophaseBlock {
  StringRef Name;
  bool Named = false;
  int64_t Size = 0, Phis = 0, PhiArgs = 0;
  bool BeginsWithPhi = false;
  SmallVector<StringRef, 2> Successors;
};

/// autophase.autophase_counts, one line at a time.
class AutophaseCounter {
public:
  void line(StringRef Line);
  void append(std::vector<double> &Out) const;

private:
  void finishFunction();

  bool InFunction = false;
  StringRef Current; // The opcode whose continuation lines may follow.
  std::vector<AutophaseBlock> Blocks;
  std::array<int64_t, NumOpcodes> Ops{};
  ConstantTally Constants;
  StringMap<int64_t> Counts;
};

void AutophaseCounter::line(StringRef Line) {
  if (!InFunction) {
    if (Line.starts_with("define ")) {
      InFunction = true;
      Blocks.assign(1, AutophaseBlock());
      Current = StringRef();
      ++Counts["TotalFuncs"];
    }
    return;
  }
  StringRef Op;
  size_t OpEnd;
  if (!matchInstruction(Line, Op, OpEnd)) {
    StringRef Label;
    if (Line.starts_with("  ")) { // A continuation line or a debug record.
      if (isOneOf(Current, TerminatorOps)) {
        findLabelRefs(Line, Blocks.back().Successors);
        if (Current == "switch")
          forEachTypedInt(Line, [&](StringRef Width, StringRef Value) {
            Constants.add(Width, Value);
          });
      }
    } else if (Line.starts_with("}")) {
      finishFunction();
      InFunction = false;
    } else if (matchLabelDef(Line, Label)) {
      if (Blocks.size() == 1 && Blocks[0].Size == 0) {
        Blocks[0].Name = Label;
        Blocks[0].Named = true;
      } else {
        Blocks.emplace_back();
        Blocks.back().Name = Label;
        Blocks.back().Named = true;
      }
    }
    return;
  }
  Current = Op;
  int Index = opcodeIndex(Op);
  if (Index < 0) {
    Current = StringRef();
    return;
  }
  AutophaseBlock &Block = Blocks.back();
  ++Block.Size;
  ++Ops[Index];
  StringRef Rest = Line.substr(OpEnd);
  if (Op == "phi") {
    Block.BeginsWithPhi |= Block.Size == 1;
    ++Block.Phis;
    for (size_t I = Rest.find("[ "); I != NPos; I = Rest.find("[ ", I + 2))
      ++Block.PhiArgs;
    StringRef Width = phiIntWidth(Rest);
    if (!Width.empty())
      forEachPhiIntValue(Rest,
                         [&](StringRef Value) { Constants.add(Width, Value); });
  } else if (isOneOf(Op, BinaryOps) || Op == "icmp") {
    std::string Stripped;
    if (Rest.contains('(')) {
      Stripped = stripConstexprs(Rest.str());
      Rest = Stripped;
    }
    StringRef Type, First, Second;
    bool Parsed = Op == "icmp" ? matchIcmp(Rest, Type, First, Second)
                               : matchBinop(Rest, Type, First, Second);
    if (Parsed) {
      First = pyStrip(First);
      Second = pyStrip(Second);
      if (Op != "icmp" && (!First.starts_with("%") || !Second.starts_with("%")))
        ++Counts["binaryConstArg"];
      if (Type.size() > 1 && Type[0] == 'i' && isAllDigits(Type.drop_front())) {
        StringRef Width = Type.drop_front();
        for (StringRef Value : {First, Second})
          if (!Value.empty() && matchIntLiteral(Value, 0) == Value.size())
            Constants.add(Width, Value);
      }
    }
  } else {
    addTypedIntOperands(Rest, Constants);
    if (isOneOf(Op, TerminatorOps)) {
      findLabelRefs(Rest, Block.Successors);
      Counts["UncondBranches"] += Op == "br" && Rest.starts_with(" label ");
    } else if (Op == "alloca" && !hasAllocaSize(Rest)) {
      Constants.add("32", "1"); // The implicit array size operand.
    } else if (Op == "call" && callReturnsInt(Rest)) {
      ++Counts["returnInt"];
    }
  }
}

void AutophaseCounter::finishFunction() {
  StringMap<int64_t> Preds;
  for (const AutophaseBlock &B : Blocks)
    for (StringRef S : B.Successors)
      ++Preds[S];
  for (const AutophaseBlock &B : Blocks) {
    int64_t Succ = B.Successors.size();
    int64_t Pred = B.Named ? Preds.lookup(B.Name) : 0;
    int64_t Critical = 0;
    if (Succ > 1)
      for (StringRef S : B.Successors)
        Critical += Preds.lookup(S) > 1;
    ++Counts["TotalBlocks"];
    Counts["NumEdges"] += Succ;
    Counts["CriticalCount"] += Critical;
    Counts["oneSuccessor"] += Succ == 1;
    Counts["twoSuccessor"] += Succ == 2;
    Counts["onePred"] += Pred == 1;
    Counts["twoPred"] += Pred == 2;
    Counts["morePreds"] += Pred > 2;
    Counts["onePredOneSuc"] += Pred == 1 && Succ == 1;
    Counts["twoPredOneSuc"] += Pred == 2 && Succ == 1;
    Counts["onePredTwoSuc"] += Pred == 1 && Succ == 2;
    Counts["twoEach"] += Pred == 2 && Succ == 2;
    Counts["BBNoPhi"] += B.Phis == 0;
    Counts["BB03Phi"] += B.Phis > 0 && B.Phis <= 3;
    Counts["BBHiPhi"] += B.Phis > 3;
    Counts["BBNumArgsHi"] += B.PhiArgs > 5;
    Counts["BBNumArgsLo"] += B.PhiArgs >= 1 && B.PhiArgs <= 5;
    Counts["BlockLow"] += B.Size < 15;
    Counts["BlockMid"] += B.Size >= 15 && B.Size <= 500;
    Counts["BeginPhi"] += B.BeginsWithPhi;
    Counts["ArgsPhi"] += B.PhiArgs;
  }
  Blocks.clear();
}

void AutophaseCounter::append(std::vector<double> &Out) const {
  StringMap<int64_t> All = Counts;
  All["const32Bit"] = Constants.Bits32;
  All["const64Bit"] = Constants.Bits64;
  All["numConstZeroes"] = Constants.Zeroes;
  All["numConstOnes"] = Constants.Ones;
  auto OpCount = [&](StringRef Op) { return Ops[opcodeIndex(Op)]; };
  for (const auto &[Feature, Op] : OpcodeFeatures)
    All[Feature] = OpCount(Op);
  All["BranchCount"] = OpCount("br");
  int64_t Total = 0, Memory = 0, Unary = 0;
  for (int64_t Count : Ops)
    Total += Count;
  for (StringRef Op : MemoryInstructions)
    Memory += OpCount(Op);
  for (StringRef Op : UnaryInstructions)
    Unary += OpCount(Op);
  All["TotalInsts"] = Total;
  All["TotalMemInst"] = Memory;
  All["testUnary"] = Unary;
  for (StringRef Name : AutophaseNames)
    Out.push_back(static_cast<double>(All.lookup(Name)));
}

//===----------------------------------------------------------------------===//
// histogram.py
//===----------------------------------------------------------------------===//

/// histogram._skip_flags: the index of the space before the first non-flag.
/// _FLAGS_RE has no boundary after the flag: " nswx" skips " nsw".
size_t skipFlags(StringRef Rest) {
  size_t Pos = 0;
  for (bool Progress = true; Progress;) {
    Progress = false;
    if (Pos >= Rest.size() || Rest[Pos] != ' ')
      break;
    for (StringRef Flag : {"nuw", "nsw", "exact", "disjoint", "inbounds",
                           "nusw", "nnan", "ninf", "nsz", "arcp", "contract",
                           "afn", "reassoc", "fast", "atomic", "volatile"}) {
      if (startsWithAt(Rest, Pos + 1, Flag)) {
        Pos += 1 + Flag.size();
        Progress = true;
        break;
      }
    }
  }
  return Pos;
}

/// histogram._WORD_RE.match: `[a-z_][\w.]*(?:\([^)]*\))?(?: \d+)?`.
size_t matchAttributeWord(StringRef S, size_t Pos) {
  if (Pos >= S.size() || !isLowerOrUnderscore(S[Pos]))
    return NPos;
  size_t E = Pos + 1;
  while (E < S.size() && (isWordChar(S[E]) || S[E] == '.'))
    ++E;
  if (E < S.size() && S[E] == '(') {
    size_t Close = S.find(')', E + 1);
    if (Close != NPos)
      E = Close + 1;
  }
  if (E + 1 < S.size() && S[E] == ' ' && isDigit(S[E + 1]))
    E = digitsEnd(S, E + 1);
  return E;
}

/// histogram._call_return_type: the first type after flags, calling convention
/// and return attributes.
StringRef callReturnType(StringRef Rest) {
  for (size_t Pos = 1; Pos < Rest.size();) {
    size_t End = readType(Rest, Pos);
    if (End > Pos)
      return Rest.slice(Pos, End);
    size_t Word = matchAttributeWord(Rest, Pos);
    if (Word == NPos)
      return StringRef();
    Pos = Word + 1;
  }
  return StringRef();
}

/// histogram._INDICES_RE.search: `((?:, \d+)+)(?:, !|$)`; the indices.
bool findIndices(StringRef Rest, SmallVectorImpl<uint64_t> &Indices) {
  for (size_t I = Rest.find(", "); I != NPos; I = Rest.find(", ", I + 1)) {
    SmallVector<uint64_t, 4> Found;
    size_t P = I;
    while (startsWithAt(Rest, P, ", ")) {
      size_t D = digitsEnd(Rest, P + 2);
      if (D == P + 2)
        break;
      Found.push_back(parseCount(Rest.slice(P + 2, D)));
      P = D;
    }
    if (!Found.empty() && (P == Rest.size() || startsWithAt(Rest, P, ", !"))) {
      Indices.append(Found.begin(), Found.end());
      return true;
    }
  }
  return false;
}

using NamedTypes = StringMap<StringRef>;

StringRef resolveNamed(const NamedTypes &Named, StringRef Type) {
  auto It = Named.find(Type);
  return It == Named.end() ? Type : It->second;
}

/// histogram._element_type: the type extractvalue reaches through Indices.
StringRef elementType(StringRef Aggregate, ArrayRef<uint64_t> Indices,
                      const NamedTypes &Named) {
  StringRef Current = Aggregate;
  for (uint64_t Index : Indices) {
    AggregateParts Parts = aggregateParts(resolveNamed(Named, Current));
    // Python would raise IndexError on an empty list; valid IR has none.
    if (Parts.Kind == AggregateKind::None || Parts.Elements.empty())
      return StringRef();
    bool Field =
        Parts.Kind == AggregateKind::Struct && Index < Parts.Elements.size();
    Current = Parts.Elements[Field ? Index : 0];
  }
  return Current;
}

/// histogram.result_type: the type an instruction produces, as written.
StringRef resultType(StringRef Op, StringRef Rest, const NamedTypes &Named) {
  if (isAnyOf(Op, {"ret", "br", "switch", "indirectbr", "resume", "unreachable",
                   "cleanupret", "catchret", "store", "fence"}))
    return "void";
  if (Op == "alloca")
    return "ptr";
  if (Op == "icmp" || Op == "fcmp") {
    size_t Space = Rest.find(' ', skipFlags(Rest) + 1); // type . predicate
    StringRef Operand = typeAt(Rest, Space == NPos ? 0 : Space + 1);
    return Operand.starts_with("<") ? Operand : StringRef("i1");
  }
  if (isOneOf(Op, CastOps)) {
    size_t To = Rest.rfind(" to ");
    return typeAt(Rest, To == NPos ? 3 : To + 4);
  }
  if (Op == "call" || Op == "invoke" || Op == "callbr")
    return callReturnType(Rest);
  if (Op == "cmpxchg")
    return "{}"; // A { value, i1 } pair.
  if (Op == "cleanuppad" || Op == "catchpad" || Op == "catchswitch")
    return "token";
  if (Op == "insertelement" || Op == "shufflevector")
    return "<>";
  if (Op == "select" || Op == "va_arg" || Op == "atomicrmw") {
    size_t Comma = Rest.find(", ");
    return typeAt(Rest, Comma == NPos ? 1 : Comma + 2);
  }
  size_t Start = skipFlags(Rest) + 1;
  if (Op == "getelementptr") // A vector of pointers when an operand is one.
    return Rest.substr(readType(Rest, Start)).contains(", <") ? "<ptr>" : "ptr";
  if (isOneOf(Op, BinaryOps) ||
      isAnyOf(Op,
              {"fneg", "freeze", "phi", "landingpad", "insertvalue", "load"}))
    return typeAt(Rest, Start);
  if (Op == "extractelement") {
    AggregateParts Parts = aggregateParts(typeAt(Rest, Start));
    if (Parts.Kind == AggregateKind::None || Parts.Elements.empty())
      return StringRef();
    return Parts.Elements[0];
  }
  if (Op == "extractvalue") {
    SmallVector<uint64_t, 4> Indices;
    if (!findIndices(Rest, Indices))
      return StringRef();
    return elementType(typeAt(Rest, Start), Indices, Named);
  }
  return StringRef();
}

/// histogram.type_bin.
TypeBin typeBin(StringRef Type) {
  if (Type.size() > 1 && Type[0] == 'i' && isAllDigits(Type.drop_front())) {
    StringRef Bits = Type.drop_front();
    if (Bits == "1")
      return BinI1;
    if (Bits == "8")
      return BinI8;
    if (Bits == "16")
      return BinI16;
    if (Bits == "32")
      return BinI32;
    if (Bits == "64")
      return BinI64;
    return BinIntOther;
  }
  if (Type.starts_with("ptr"))
    return BinPointer;
  if (Type == "float")
    return BinFloat;
  if (Type == "double")
    return BinDouble;
  if (Type == "void")
    return BinVoid;
  if (Type.starts_with("<{"))
    return BinAggregate;
  if (Type.starts_with("<"))
    return BinVector;
  if (Type.starts_with("{") || Type.starts_with("[") || Type.starts_with("%"))
    return BinAggregate;
  return BinOther;
}

/// histogram.type_size: approximate bytes of one value of the type.
class TypeSizer {
public:
  explicit TypeSizer(const NamedTypes &Named) : Named(Named) {}
  uint64_t size(StringRef Type, unsigned Depth = 0);

private:
  const NamedTypes &Named;
  // Python recomputes shared subtypes; remembering them by (type, depth) gives
  // the same numbers without exponential time on deeply shared types.
  std::map<std::pair<std::string, unsigned>, uint64_t> Memo;
};

uint64_t TypeSizer::size(StringRef Written, unsigned Depth) {
  StringRef Type = resolveNamed(Named, Written);
  if (Depth > 32 || Type.empty())
    return 0;
  if (Type.size() > 1 && Type[0] == 'i' && isAllDigits(Type.drop_front())) {
    uint64_t Bits = parseCount(Type.drop_front());
    return Bits == UINT64_MAX ? Bits : (Bits + 7) / 8;
  }
  if (Type.starts_with("ptr"))
    return 8;
  for (auto [Name, Bytes] : {std::pair<StringRef, uint64_t>{"half", 2},
                             {"bfloat", 2},
                             {"float", 4},
                             {"double", 8},
                             {"x86_fp80", 10},
                             {"fp128", 16},
                             {"ppc_fp128", 16}})
    if (Type == Name)
      return Bytes;
  auto Key = std::make_pair(Written.str(), Depth);
  auto Known = Memo.find(Key);
  if (Known != Memo.end())
    return Known->second;
  AggregateParts Parts = aggregateParts(Type);
  uint64_t Bytes = 0;
  if (Parts.Kind == AggregateKind::Struct) {
    for (StringRef Element : Parts.Elements)
      Bytes = SaturatingAdd(Bytes, size(Element, Depth + 1));
  } else if (Parts.Kind != AggregateKind::None) {
    Bytes = SaturatingMultiply(Parts.Count, size(Parts.Elements[0], Depth + 1));
  }
  Memo[Key] = Bytes;
  return Bytes;
}

/// histogram.histogram_counts, one line at a time.
class HistogramCounter {
public:
  void line(StringRef Line);
  void append(std::vector<double> &Out) const;

private:
  void global(StringRef Line);

  NamedTypes Named;
  std::array<int64_t, NumOpcodes> Ops{};
  std::array<int64_t, std::size(TypeBins)> Bins{};
  int64_t Defined = 0, Declared = 0, Globals = 0, Strings = 0;
  uint64_t ConstantBytes = 0, VariableBytes = 0;
};

// `llvm-dis` removes these declarations
// (Module::removeDebugIntrinsicDeclarations) before printing; a module in
// memory may still have them.
bool declaresDebugIntrinsic(StringRef Line) {
  for (StringRef Name : {"@llvm.dbg.declare(", "@llvm.dbg.value(",
                         "@llvm.dbg.assign(", "@llvm.dbg.label("})
    if (Line.contains(Name))
      return true;
  return false;
}

void HistogramCounter::line(StringRef Line) {
  if (Line.empty())
    return;
  char First = Line[0];
  if (First == ' ') {
    StringRef Op;
    size_t OpEnd;
    if (matchInstruction(Line, Op, OpEnd)) {
      int Index = opcodeIndex(Op);
      if (Index >= 0) {
        ++Ops[Index];
        ++Bins[typeBin(resultType(Op, Line.substr(OpEnd), Named))];
      }
    }
  } else if (First == '@') {
    global(Line);
  } else if (First == '%') {
    // irtext.NAMED_TYPE_DEF_RE: `%NAME = type BODY`.
    size_t E = matchName(Line, 1);
    if (E != NPos && startsWithAt(Line, E, " = type ")) {
      StringRef Body = Line.substr(E + 8);
      Named[Line.take_front(E)] = Body == "opaque" ? StringRef() : Body;
    }
  } else if (Line.starts_with("define ")) {
    ++Defined;
  } else if (Line.starts_with("declare ")) {
    Declared += !declaresDebugIntrinsic(Line);
  }
}

/// histogram._count_global with _GLOBAL_RE:
/// `@NAME = ((?:[a-z_]+(?:\(\w+\))? )*?)(global|constant) `.
void HistogramCounter::global(StringRef Line) {
  size_t E = matchName(Line, 1);
  if (E == NPos || !startsWithAt(Line, E, " = "))
    return;
  size_t WordsStart = E + 3, P = WordsStart;
  bool IsConstant = false;
  size_t KindStart = NPos, KindEnd = NPos;
  while (KindEnd == NPos) {
    if (startsWithAt(Line, P, "global ")) {
      KindStart = P;
      KindEnd = P + 7;
    } else if (startsWithAt(Line, P, "constant ")) {
      IsConstant = true;
      KindStart = P;
      KindEnd = P + 9;
    } else {
      size_t W = P;
      while (W < Line.size() && isLowerOrUnderscore(Line[W]))
        ++W;
      if (W == P || W >= Line.size())
        return; // An alias or ifunc.
      if (Line[W] == '(') {
        size_t Inner = W + 1;
        while (Inner < Line.size() && isWordChar(Line[Inner]))
          ++Inner;
        if (Inner == W + 1 || !startsWithAt(Line, Inner, ") "))
          return;
        P = Inner + 2;
      } else if (Line[W] == ' ') {
        P = W + 1;
      } else {
        return;
      }
    }
  }
  ++Globals;
  SmallVector<StringRef, 4> Words;
  Line.slice(WordsStart, KindStart).split(Words, ' ', -1, false);
  if (llvm::any_of(Words, [](StringRef Word) {
        return Word == "external" || Word == "extern_weak";
      }))
    return;
  StringRef ValueType = typeAt(Line, KindEnd);
  if (startsWithAt(Line, KindEnd + ValueType.size() + 1, "c\""))
    ++Strings;
  TypeSizer Sizer(Named);
  uint64_t &Bytes = IsConstant ? ConstantBytes : VariableBytes;
  Bytes = SaturatingAdd(Bytes, Sizer.size(ValueType));
}

void HistogramCounter::append(std::vector<double> &Out) const {
  for (int64_t Count : Ops)
    Out.push_back(static_cast<double>(Count));
  for (int64_t Count : Bins)
    Out.push_back(static_cast<double>(Count));
  for (double Value :
       {static_cast<double>(Defined), static_cast<double>(Declared),
        static_cast<double>(Globals), static_cast<double>(Strings),
        static_cast<double>(ConstantBytes), static_cast<double>(VariableBytes)})
    Out.push_back(Value);
}

//===----------------------------------------------------------------------===//
// The module's text, and the text representations
//===----------------------------------------------------------------------===//

/// The module as `llvm-dis` prints it: the same printer, no use-list order.
std::string moduleText(const Module &M) {
  std::string Text;
  raw_string_ostream OS(Text);
  M.print(OS, /*AAW=*/nullptr);
  OS.flush();
  return Text;
}

void autophaseFromText(StringRef Text, std::vector<double> &Out) {
  AutophaseCounter Counter;
  forEachLine(Text, [&](StringRef Line) { Counter.line(Line); });
  Counter.append(Out);
}

void histogramFromText(StringRef Text, std::vector<double> &Out) {
  HistogramCounter Counter;
  forEachLine(Text, [&](StringRef Line) { Counter.line(Line); });
  Counter.append(Out);
}

//===----------------------------------------------------------------------===//
// func_properties.py
//===----------------------------------------------------------------------===//

/// Sets `-enable-detailed-function-properties` once per process, through the
/// option registry: LLVM declares the variable in no header, and a plugin must
/// not fail to load where it is not exported.
bool enableDetailedFunctionProperties() {
  static std::once_flag Once;
  static bool Enabled = false;
  std::call_once(Once, [] {
    StringMap<cl::Option *> &Options = cl::getRegisteredOptions();
    auto It = Options.find("enable-detailed-function-properties");
    if (It == Options.end() || !It->second)
      return;
    // The option's own parser reads "true", as for `-mllvm -enable-...`: no
    // RTTI needed, and a failure is reported (true), never fatal.
    Enabled = !It->second->addOccurrence(0, It->getKey(), "true");
  });
  return Enabled;
}

/// Whether a bitcode round trip keeps this user of a function: instructions,
/// globals, and constants that reach one or that metadata refers to. A module
/// in memory may still hold dead constants; `opt` on the Python side counts
/// uses in a module read back from bitcode, which has none.
bool survivesBitcode(const User *U, unsigned Depth = 0) {
  const auto *C = dyn_cast<Constant>(U);
  // Past a nesting no real constant reaches, count the use as LLVM does.
  if (!C || isa<GlobalValue>(C) || Depth > 256)
    return true;
  // The lookup only reads the metadata map; it takes a mutable value.
  if (ValueAsMetadata::getIfExists(const_cast<Constant *>(C)))
    return true;
  return llvm::any_of(C->users(), [&](const User *Next) {
    return survivesBitcode(Next, Depth + 1);
  });
}

/// getUses of LLVM's analysis, counting only uses that survive bitcode.
int64_t functionUses(const Function &F) {
  int64_t Live = llvm::count_if(
      F.uses(), [](const Use &U) { return survivesBitcode(U.getUser()); });
  return (F.hasLocalLinkage() ? 0 : 1) + Live;
}

bool hasTerminators(const Function &F) {
  return llvm::all_of(
      F, [](const BasicBlock &BB) { return BB.getTerminator() != nullptr; });
}

/// Whether the Python side reads this name back as it is: it decodes the
/// printer's output as UTF-8 (invalid bytes replaced) and splits it with
/// str.splitlines, so a name that is not UTF-8 or holds a line break Python
/// recognizes would be merged with another or lost there.
bool readsBackInPython(StringRef Name) {
  if (!json::isUTF8(Name))
    return false;
  static constexpr StringLiteral Breaks[] = {
      "\n",   "\r",   "\v",       "\f",           "\x1c",
      "\x1d", "\x1e", "\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9"};
  return llvm::none_of(Breaks,
                       [&](StringRef Break) { return Name.contains(Break); });
}

bool appendFunctionProperties(const Module &M, std::vector<double> &Out) {
  for (const Function &F : M) {
    if (F.isDeclaration())
      continue;
    if (!hasTerminators(F))
      return false; // The analysis would dereference a missing terminator.
    if (!readsBackInPython(F.getName()))
      return false; // The model's features are Python's; no guess here.
  }
  if (!enableDetailedFunctionProperties())
    return false;
  // The Python side keys the printer's output by function name: unnamed
  // functions all print as '' and the last one's values stand for them.
  StringMap<FunctionPropertiesInfo> ByName;
  for (const Function &F : M) {
    if (F.isDeclaration()) // The function pass adaptor skips declarations.
      continue;
    // DominatorTree takes a mutable function but only reads it.
    DominatorTree DT(const_cast<Function &>(F));
    LoopInfo LI(DT);
    FunctionPropertiesInfo Info =
        FunctionPropertiesInfo::getFunctionPropertiesInfo(F, DT, LI);
    Info.Uses = functionUses(F);
    ByName[F.getName()] = Info;
  }
  for (const PropertyField &Field : PropertyFields) {
    int64_t Sum = 0;
    for (const auto &Entry : ByName)
      Sum += Entry.second.*Field.Member;
    Out.push_back(static_cast<double>(Sum));
  }
  Out.push_back(static_cast<double>(ByName.size()));
  for (size_t Index : MaxPropertyFields) {
    int64_t Max = 0;
    for (const auto &Entry : ByName)
      Max = std::max(Max, Entry.second.*PropertyFields[Index].Member);
    Out.push_back(static_cast<double>(Max));
  }
  return true;
}

} // namespace

bool ModuleFeatures::append(StringRef Name, int Version,
                            std::vector<double> &Out) {
  if (Version != 1)
    return false;
  bool Autophase = Name == "autophase";
  if (Autophase || Name == "histogram") {
    if (Autophase)
      autophaseFromText(text(), Out);
    else
      histogramFromText(text(), Out);
    return true;
  }
  if (Name == "func_properties")
    return appendFunctionProperties(M, Out);
  return false;
}

StringRef ModuleFeatures::text() {
  if (!Printed) {
    Text = moduleText(M);
    Printed = true;
  }
  return Text;
}

// What clang's front end writes only for C++ (functions `mustprogress` from
// C++11 on; its type-based alias analysis root) and only for C (that root's
// name for C), as frontend.py's `ir_language` reads the same text.
StringRef ModuleFeatures::language() {
  StringRef IR = text();
  bool MustProgress = false;
  forEachLine(IR, [&](StringRef Line) {
    MustProgress |= Line.starts_with("attributes #") &&
                    (Line.contains(" mustprogress ") ||
                     Line.contains(" mustprogress}"));
  });
  if (MustProgress || IR.contains("!\"Simple C++ TBAA\""))
    return "c++";
  return IR.contains("!\"Simple C/C++ TBAA\"") ? "c" : "";
}

bool appendFeatures(StringRef Name, int Version, const Module &M,
                    std::vector<double> &Out) {
  return ModuleFeatures(M).append(Name, Version, Out);
}

std::vector<std::string> featureNames(StringRef Name, int Version) {
  std::vector<std::string> Names;
  if (Version != 1)
    return Names;
  if (Name == "autophase") {
    for (StringRef Feature : AutophaseNames)
      Names.push_back(Feature.str());
  } else if (Name == "histogram") {
    for (StringRef Op : Opcodes)
      Names.push_back(("op_" + Op).str());
    for (StringRef Bin : TypeBins)
      Names.push_back(("type_" + Bin).str());
    for (StringRef Count : ModuleCounts)
      Names.push_back(("module_" + Count).str());
  } else if (Name == "func_properties") {
    for (const PropertyField &Field : PropertyFields)
      Names.push_back(Field.Name.str());
    Names.push_back("num_functions");
    for (size_t Index : MaxPropertyFields)
      Names.push_back(("max_" + PropertyFields[Index].Name).str());
  }
  return Names;
}

} // namespace stitchopt
