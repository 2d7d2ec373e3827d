//===- target_data.cpp - Keep offloaded data on the device across a loop --===//

#include "target_data.h"
#include "standalone_pass.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/MemoryLocation.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/PostDominators.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/OffloadBinary.h"
#include "llvm/Transforms/Scalar/SROA.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"

#include <optional>

using namespace llvm;

namespace stitchopt {
namespace {

constexpr const char *PassName = "stitchopt-hoist-target-data";

// OpenMP's map-type bits (llvm/Frontend/OpenMP/OMPConstants.h).
constexpr uint64_t MapTo = 0x01, MapFrom = 0x02, MapTargetParam = 0x20,
                   MapPrivate = 0x80, MapLiteral = 0x100, MapImplicit = 0x200,
                   MapClose = 0x400;
// Map types whose copies follow the reference count alone: anything else
// (always, delete, present, members, pointer-and-object, ...) is left alone.
constexpr uint64_t PlainMapBits =
    MapTo | MapFrom | MapTargetParam | MapImplicit | MapClose;
// Items that map memory through a pointer stored elsewhere: a loop with one
// is left alone (what they map is not what their base pointer shows).
constexpr uint64_t MapPtrAndObj = 0x10, MapMemberOf = 0xffff000000000000ULL;

// Fields of __tgt_kernel_arguments (LLVM 19: version 3, 64-bit pointers).
constexpr uint64_t ArgsNumArgs = 4, ArgsBasePtrs = 8, ArgsPtrs = 16,
                   ArgsSizes = 24, ArgsMapTypes = 32, ArgsMapNames = 40,
                   ArgsMappers = 48;

struct MapItem {
  Value *Base = nullptr;  // the base-pointer array's entry
  Value *Begin = nullptr; // the pointer array's entry
  Value *Size = nullptr;  // its bytes (a constant, or computed at run time)
  uint64_t Flags = 0;
  int Param = -1; // which of the kernel's captured parameters it is
  std::string Name; // its source text (`a[0:n]`), where debug info has it
};

/// One `__tgt_target_kernel` call and the map list the front end wrote for it.
struct Launch {
  CallInst *Call = nullptr;
  ConstantInt *Device = nullptr;
  std::string Kernel; // the device kernel's name
  SmallVector<MapItem, 8> Items;
  /// First block of the host fallback (the region run on the host when the
  /// launch fails), when the usual `icmp` on the result leads to one.
  BasicBlock *Fallback = nullptr;
};

/// Entry `Index` of a constant i64 array (the front end's `.offload_sizes`
/// and `.offload_maptypes`).
std::optional<uint64_t> constantEntry(Value *Array, unsigned Index) {
  auto *Global = dyn_cast<GlobalVariable>(Array->stripPointerCasts());
  if (!Global || !Global->isConstant() || !Global->hasDefinitiveInitializer())
    return std::nullopt;
  Constant *Init = Global->getInitializer();
  if (auto *Data = dyn_cast<ConstantDataArray>(Init))
    if (Data->getElementType()->isIntegerTy(64) &&
        Index < Data->getNumElements())
      return Data->getElementAsInteger(Index);
  if (auto *Zero = dyn_cast<ConstantAggregateZero>(Init))
    if (Index < Zero->getElementCount().getFixedValue())
      return 0;
  return std::nullopt;
}

/// The source text of map item `Index` (`a[0:n]`) from the front end's
/// `.offload_mapnames` (emitted with debug info; entries read
/// `;text;file;line;column;;`); empty where there is none.
std::string mapName(Value *Names, unsigned Index) {
  auto *Global = dyn_cast_or_null<GlobalVariable>(
      Names ? Names->stripPointerCasts() : nullptr);
  if (!Global || !Global->isConstant() || !Global->hasDefinitiveInitializer())
    return "";
  auto *Entries = dyn_cast<ConstantArray>(Global->getInitializer());
  if (!Entries || Index >= Entries->getNumOperands())
    return "";
  auto *Text = dyn_cast<GlobalVariable>(
      Entries->getOperand(Index)->stripPointerCasts());
  auto *Data = Text && Text->hasDefinitiveInitializer()
                   ? dyn_cast<ConstantDataArray>(Text->getInitializer())
                   : nullptr;
  if (!Data || !Data->isCString())
    return "";
  StringRef Fields = Data->getAsCString();
  if (!Fields.consume_front(";"))
    return "";
  StringRef Source = Fields.split(';').first;
  return Source == "unknown" ? "" : Source.str(); // (clang's text for none)
}

/// The value last stored at `Base`+`Offset` (`Bytes` wide) before `Before` in
/// its block: the front end fills the kernel-argument struct and the offload
/// arrays (allocas) just before each launch. A zeroing memset reads as null;
/// anything else (no store, a partial overlap) is unknown.
Value *storedBefore(Value *Base, uint64_t Offset, uint64_t Bytes,
                    Instruction *Before, Type *Ty, const DataLayout &DL) {
  for (Instruction *I = Before->getPrevNode(); I; I = I->getPrevNode()) {
    Value *Ptr = nullptr;
    std::optional<uint64_t> Width;
    if (auto *Store = dyn_cast<StoreInst>(I)) {
      Ptr = Store->getPointerOperand();
      Width = DL.getTypeStoreSize(Store->getValueOperand()->getType());
    } else if (auto *Mem = dyn_cast<MemIntrinsic>(I)) {
      Ptr = Mem->getDest();
      if (auto *Length = dyn_cast<ConstantInt>(Mem->getLength()))
        Width = Length->getZExtValue();
    } else {
      continue;
    }
    if (getUnderlyingObject(Ptr) != Base)
      continue;
    APInt Start(DL.getIndexTypeSizeInBits(Ptr->getType()), 0);
    if (Ptr->stripAndAccumulateConstantOffsets(DL, Start, true) != Base ||
        !Width || Start.isNegative())
      return nullptr;
    uint64_t From = Start.getZExtValue(), To = From + *Width;
    if (To <= Offset || Offset + Bytes <= From)
      continue;
    if (auto *Store = dyn_cast<StoreInst>(I))
      return From == Offset && *Width == Bytes ? Store->getValueOperand()
                                               : nullptr;
    if (From > Offset || To < Offset + Bytes)
      return nullptr;
    if (auto *Set = dyn_cast<MemSetInst>(I)) {
      auto *Byte = dyn_cast<ConstantInt>(Set->getValue());
      return Byte && Byte->isZero() ? Constant::getNullValue(Ty) : nullptr;
    }
    // The front end copies the constant part of a sizes array that is
    // partly computed at run time from a constant array.
    auto *Copy = dyn_cast<MemTransferInst>(I);
    if (!Copy || !Ty->isIntegerTy(64) || (Offset - From) % 8 != 0)
      return nullptr;
    if (std::optional<uint64_t> Entry =
            constantEntry(Copy->getSource(), (Offset - From) / 8))
      return ConstantInt::get(Ty, *Entry);
    return nullptr;
  }
  return nullptr;
}

BasicBlock *fallbackOf(CallInst *Call) {
  for (User *U : Call->users()) {
    auto *Cmp = dyn_cast<ICmpInst>(U);
    auto *Zero = Cmp ? dyn_cast<ConstantInt>(Cmp->getOperand(1)) : nullptr;
    if (!Zero || !Zero->isZero() || Cmp->getOperand(0) != Call ||
        !Cmp->isEquality())
      continue;
    for (User *V : Cmp->users()) {
      auto *Branch = dyn_cast<BranchInst>(V);
      if (!Branch || !Branch->isConditional() ||
          Branch->getParent() != Call->getParent() ||
          Branch->getSuccessor(0) == Branch->getSuccessor(1))
        continue;
      return Branch->getSuccessor(
          Cmp->getPredicate() == ICmpInst::ICMP_EQ ? 1 : 0);
    }
  }
  return nullptr;
}

std::optional<Launch> readLaunch(CallInst *Call, const DataLayout &DL) {
  Launch L;
  L.Call = Call;
  L.Device = dyn_cast<ConstantInt>(Call->getArgOperand(1));
  Value *Args = Call->getArgOperand(5);
  auto *Region =
      dyn_cast<GlobalVariable>(Call->getArgOperand(4)->stripPointerCasts());
  StringRef RegionName = Region ? Region->getName() : "";
  if (!L.Device || !isa<AllocaInst>(Args) ||
      !RegionName.consume_front(".") ||
      !RegionName.consume_back(".region_id"))
    return std::nullopt;
  L.Kernel = RegionName.str();
  LLVMContext &Ctx = Call->getContext();
  Type *Ptr = PointerType::get(Ctx, 0), *I64 = Type::getInt64Ty(Ctx);
  auto *NumArgs = dyn_cast_or_null<ConstantInt>(
      storedBefore(Args, ArgsNumArgs, 4, Call, Type::getInt32Ty(Ctx), DL));
  Value *BasePtrs = storedBefore(Args, ArgsBasePtrs, 8, Call, Ptr, DL);
  Value *Ptrs = storedBefore(Args, ArgsPtrs, 8, Call, Ptr, DL);
  Value *Sizes = storedBefore(Args, ArgsSizes, 8, Call, Ptr, DL);
  Value *MapTypes = storedBefore(Args, ArgsMapTypes, 8, Call, Ptr, DL);
  Value *Mappers = storedBefore(Args, ArgsMappers, 8, Call, Ptr, DL);
  Value *MapNames = storedBefore(Args, ArgsMapNames, 8, Call, Ptr, DL);
  if (!NumArgs || !BasePtrs || !Ptrs || !Sizes || !MapTypes || !Mappers ||
      !isa<ConstantPointerNull>(Mappers))
    return std::nullopt;
  int Params = 0;
  for (unsigned I = 0, N = NumArgs->getZExtValue(); I < N; ++I) {
    MapItem Item;
    std::optional<uint64_t> Flags = constantEntry(MapTypes, I);
    if (!Flags)
      return std::nullopt;
    Item.Flags = *Flags;
    Item.Name = mapName(MapNames, I);
    if (Item.Flags & MapTargetParam)
      Item.Param = Params++;
    Item.Base = storedBefore(BasePtrs, 8 * I, 8, Call, Ptr, DL);
    Item.Begin = storedBefore(Ptrs, 8 * I, 8, Call, Ptr, DL);
    if (!Item.Base || !Item.Begin)
      return std::nullopt;
    if (std::optional<uint64_t> Known = constantEntry(Sizes, I))
      Item.Size = ConstantInt::get(I64, *Known);
    else
      Item.Size = storedBefore(Sizes, 8 * I, 8, Call, I64, DL);
    L.Items.push_back(Item);
  }
  L.Fallback = fallbackOf(Call);
  return L;
}

bool isOffloadCall(const Instruction &I) {
  auto *Call = dyn_cast<CallBase>(&I);
  Function *Callee = Call ? Call->getCalledFunction() : nullptr;
  return Callee && Callee->getName().starts_with("__tgt_");
}

bool isLaunch(const Instruction &I) {
  auto *Call = dyn_cast<CallInst>(&I);
  Function *Callee = Call ? Call->getCalledFunction() : nullptr;
  return Callee && Callee->getName() == "__tgt_target_kernel" &&
         Call->arg_size() == 6;
}

/// Whether code that receives `Ptr` may write through it. Follows the pointer
/// through address arithmetic, into the outlined functions that
/// __kmpc_fork_teams and __kmpc_fork_call run, and into defined callees;
/// stops early where the front end or function-attrs proved it read-only.
class WriteWalk {
public:
  bool throughCallArgument(const CallBase &Call, unsigned ArgNo) {
    if (Call.onlyReadsMemory(ArgNo) && Call.doesNotCapture(ArgNo))
      return false; // (FunctionAttrs' readonly alone ignores returns)
    const Function *Callee = Call.getCalledFunction();
    if (!Callee)
      return true;
    if (Callee->getName() == "__kmpc_fork_call" ||
        Callee->getName() == "__kmpc_fork_teams") {
      // (loc, argc, microtask, args...): args reach the microtask after its
      // two thread-id parameters.
      auto *Outlined = dyn_cast<Function>(
          Call.getArgOperand(2)->stripPointerCasts());
      if (ArgNo < 3 || !Outlined || Outlined->isDeclaration() ||
          ArgNo - 1 >= Outlined->arg_size())
        return true;
      return through(Outlined->getArg(ArgNo - 1));
    }
    if (Callee->isDeclaration() || Callee->isInterposable() ||
        ArgNo >= Callee->arg_size())
      return true;
    return through(Callee->getArg(ArgNo));
  }

  bool through(const Value *Ptr) {
    if (!Seen.insert(Ptr).second)
      return false;
    if (auto *Arg = dyn_cast<Argument>(Ptr))
      if (Arg->onlyReadsMemory() && Arg->hasNoCaptureAttr())
        return false;
    for (const Use &U : Ptr->uses()) {
      const User *Usr = U.getUser();
      if (isa<LoadInst>(Usr) || isa<ICmpInst>(Usr))
        continue;
      if (isa<GetElementPtrInst>(Usr) || isa<BitCastInst>(Usr) ||
          isa<AddrSpaceCastInst>(Usr) || isa<PHINode>(Usr) ||
          isa<SelectInst>(Usr)) {
        if (through(Usr))
          return true;
        continue;
      }
      if (auto *Store = dyn_cast<StoreInst>(Usr)) {
        if (Store->getPointerOperand() == Ptr || Store->isVolatile() ||
            throughArgumentArray(*Store))
          return true; // a write through it, or an escape
        continue;
      }
      auto *Call = dyn_cast<CallBase>(Usr);
      if (!Call || !Call->isArgOperand(&U) ||
          throughCallArgument(*Call, Call->getArgOperandNo(&U)))
        return true; // an escape, ...
    }
    return false;
  }

  /// Whether a pointer `Store` puts in a slot of a parallel region's argument
  /// array (NVPTX's `__kmpc_parallel_51(..., fn, wrapper, args, n)`) may be
  /// written through by the outlined function, which receives slot i as its
  /// parameter i + 2; true for a store anywhere else.
  bool throughArgumentArray(const StoreInst &Store) {
    const DataLayout &DL = Store.getModule()->getDataLayout();
    APInt Offset(DL.getIndexTypeSizeInBits(Store.getPointerOperandType()), 0);
    auto *Array = dyn_cast<AllocaInst>(
        Store.getPointerOperand()->stripAndAccumulateConstantOffsets(
            DL, Offset, /*AllowNonInbounds=*/true));
    auto *Slots = Array ? dyn_cast<ArrayType>(Array->getAllocatedType())
                        : nullptr;
    if (!Slots || !Slots->getElementType()->isPointerTy())
      return true;
    uint64_t Width = DL.getTypeAllocSize(Slots->getElementType());
    if (Offset.isNegative() || Offset.urem(Width) != 0 ||
        DL.getTypeStoreSize(Store.getValueOperand()->getType()) != Width)
      return true;
    unsigned Slot = Offset.getZExtValue() / Width;
    SmallVector<const Function *, 2> Outlined;
    SmallVector<const Value *, 8> Addresses = {Array};
    while (!Addresses.empty()) {
      const Value *Address = Addresses.pop_back_val();
      for (const Use &U : Address->uses()) {
        const User *Usr = U.getUser();
        if (isa<GetElementPtrInst>(Usr) || isa<AddrSpaceCastInst>(Usr)) {
          Addresses.push_back(Usr);
        } else if (auto *Other = dyn_cast<StoreInst>(Usr)) {
          if (Other->getValueOperand() == Address)
            return true; // the array's address escapes
        } else if (auto *Call = dyn_cast<CallBase>(Usr)) {
          const Function *Callee = Call->getCalledFunction();
          if (Callee && Callee->isIntrinsic() &&
              (Callee->getIntrinsicID() == Intrinsic::lifetime_start ||
               Callee->getIntrinsicID() == Intrinsic::lifetime_end))
            continue;
          auto *Fn = Call->arg_size() == 9
                         ? dyn_cast<Function>(
                               Call->getArgOperand(5)->stripPointerCasts())
                         : nullptr;
          // The runtime hands `Fn` the array from its start: a call given an
          // address inside it would shift every slot.
          APInt Start(DL.getIndexTypeSizeInBits(Address->getType()), 0);
          if (!Callee || Callee->getName() != "__kmpc_parallel_51" ||
              U.getOperandNo() != 7 ||
              Address->stripAndAccumulateConstantOffsets(DL, Start, true) !=
                  Array ||
              !Start.isZero() || !Fn || Fn->isDeclaration() ||
              Slot + 2 >= Fn->arg_size() ||
              !Fn->getArg(Slot + 2)->getType()->isPointerTy())
            return true;
          Outlined.push_back(Fn);
        } else {
          return true; // read back, compared, ...: not only an argument array
        }
      }
    }
    return Outlined.empty() ||
           llvm::any_of(Outlined, [&](const Function *Fn) {
             return through(Fn->getArg(Slot + 2));
           });
  }

private:
  SmallPtrSet<const Value *, 32> Seen;
};

/// The device code a host module carries (clang embeds each offload target's
/// module in `.llvm.offloading`): what a kernel does with its parameters is
/// read there, device-only paths included (`omp_is_initial_device()`,
/// `declare variant`, `#ifdef __NVPTX__`), never guessed from the host's
/// fallback. Images are read once, with SROA run so that parameters flow as
/// values rather than through the front end's stack slots.
class DeviceCode {
public:
  explicit DeviceCode(Module &Host) {
    for (GlobalVariable &G : Host.globals()) {
      if (G.getSection() != ".llvm.offloading" || !G.hasInitializer())
        continue;
      auto *Bytes = dyn_cast<ConstantDataSequential>(G.getInitializer());
      if (!Bytes) {
        Unreadable = "an embedded offload object is not a byte array";
        continue;
      }
      StringRef Rest = Bytes->getRawDataValues();
      while (!Rest.empty() && Unreadable.empty()) {
        auto Binary =
            object::OffloadBinary::create(MemoryBufferRef(Rest, "offload"));
        if (!Binary) {
          consumeError(Binary.takeError());
          Unreadable = "an embedded offload object cannot be read";
          break;
        }
        read((*Binary)->getImage());
        uint64_t Size = (*Binary)->getSize();
        Rest = Size < Rest.size() ? Rest.drop_front(alignTo(Size, 8)) : "";
      }
    }
  }

  /// Why some device image may write through parameter `Param` (counted
  /// among the captured ones) of kernel `Kernel`: empty when none does, else
  /// what was found or could not be known.
  std::string mayWrite(StringRef Kernel, int Param, unsigned CapturedParams) {
    if (!Unreadable.empty())
      return Unreadable;
    if (Images.empty())
      return "the module embeds no device code";
    if (Param < 0)
      return "it is not a kernel parameter";
    for (const std::unique_ptr<Module> &Image : Images) {
      Function *Entry = Image->getFunction(Kernel);
      if (!Entry || Entry->isDeclaration())
        return "its kernel is not in the device code";
      // LLVM 19's kernels take the dynamic-memory pointer first.
      unsigned First = Entry->arg_size() - CapturedParams;
      if (Entry->arg_size() < CapturedParams || First > 1)
        return "its kernel's parameters are not the map list's";
      if (WriteWalk().through(Entry->getArg(First + Param)))
        return "its kernel may write it";
    }
    return "";
  }

private:
  LLVMContext Context;
  std::vector<std::unique_ptr<Module>> Images;
  std::string Unreadable; // why the device code cannot be read, if it cannot

  void read(StringRef Image) {
    Expected<std::unique_ptr<Module>> Parsed =
        parseBitcodeFile(MemoryBufferRef(Image, "device"), Context);
    if (!Parsed) {
      consumeError(Parsed.takeError());
      Unreadable = "the device code is a compiled object, not LLVM bitcode "
                   "(build with -foffload-lto)";
      return;
    }
    runOnEveryFunction(**Parsed, SROAPass(SROAOptions::PreserveCFG));
    Images.push_back(std::move(*Parsed));
  }
};

/// Whether `Call` is a C math function: it writes errno at most (why LLVM 19
/// says `memory(write)`), never memory a program maps.
bool isMathCall(const CallBase &Call, const TargetLibraryInfo &TLI) {
  LibFunc Func;
  const Function *Callee = Call.getCalledFunction();
  if (!Callee || !Callee->isDeclaration() || Call.isNoBuiltin() ||
      !TLI.getLibFunc(Call, Func))
    return false;
  switch (Func) {
  case LibFunc_sqrt: case LibFunc_sqrtf: case LibFunc_exp: case LibFunc_expf:
  case LibFunc_exp2: case LibFunc_exp2f: case LibFunc_log: case LibFunc_logf:
  case LibFunc_log2: case LibFunc_log2f: case LibFunc_log10:
  case LibFunc_log10f: case LibFunc_pow: case LibFunc_powf: case LibFunc_sin:
  case LibFunc_sinf: case LibFunc_cos: case LibFunc_cosf: case LibFunc_tan:
  case LibFunc_tanf: case LibFunc_atan: case LibFunc_atanf:
  case LibFunc_atan2: case LibFunc_atan2f: case LibFunc_fmod:
  case LibFunc_fmodf:
    return true;
  default:
    return false;
  }
}

/// Whether `G` has a device twin of its own (`declare target`): its offload
/// entry names it, and maps of it follow other rules.
bool isDeclareTarget(const GlobalVariable &G) {
  for (const User *Usr : G.users())
    if (auto *C = dyn_cast<Constant>(Usr))
      for (const User *Outer : C->users())
        if (auto *Entry = dyn_cast<GlobalVariable>(Outer))
          if (Entry->getSection() == "omp_offloading_entries")
            return true;
  return false;
}

/// Memory a loop's launches map that can stay on the device across it.
struct Kept {
  Value *Base = nullptr; // a global, an argument, an allocation, ...
  Value *Size = nullptr; // loop-invariant bytes
  std::string Name;      // how the source names it, for remarks
  bool To = false, From = false;
  unsigned Copies = 0; // what the launches that always run copy of it, once
  SmallVector<const Launch *, 4> WithoutFrom; // launches mapping it to/alloc

  MemoryLocation where() const {
    auto *Bytes = dyn_cast<ConstantInt>(Size);
    return MemoryLocation(Base, Bytes ? LocationSize::precise(Bytes->getZExtValue())
                                      : LocationSize::afterPointer());
  }
};

/// What a straight run's launches that always run copy of an array, for a
/// remark.
std::string copiesText(unsigned Copies) {
  switch (Copies) {
  case 0:
    return "the launches that map it may not run";
  case 1:
    return "its launches copy it once";
  case 2:
    return "its launches copy it twice";
  default:
    return "its launches copy it " + std::to_string(Copies) + " times";
  }
}

bool sameSize(Value *A, Value *B) {
  auto *ConstA = dyn_cast<ConstantInt>(A), *ConstB = dyn_cast<ConstantInt>(B);
  return A == B || (ConstA && ConstB && ConstA->getValue() == ConstB->getValue());
}

/// A name for memory the front end gave no source text: a global's (C++
/// names demangled), else the IR's.
std::string nameOf(const Value *V) {
  if (!V->hasName())
    return "(unnamed)";
  return isa<GlobalValue>(V) ? demangle(V->getName()) : V->getName().str();
}

/// Where code inlined into a function was inlined (the call site's line in
/// the function's own source): what a remark about that function should name.
DebugLoc outermost(const DebugLoc &Loc) {
  const DILocation *At = Loc.get();
  if (!At)
    return Loc;
  while (const DILocation *Outer = At->getInlinedAt())
    At = Outer;
  return DebugLoc(At);
}

/// Why host code `I` in a span keeps `Name`'s copies per launch: what it does
/// to it and where (`Access`: what alias analysis allows it).
std::string hostAccess(const Instruction &I, ModRefInfo Access, StringRef Name,
                       StringRef Kind) {
  const char *Verb = isModSet(Access) && isRefSet(Access) ? "read or write"
                     : isModSet(Access)                   ? "write"
                                                          : "read";
  std::string
      Who; // what the source wrote there, where it is not a plain access
  if (auto *Call = dyn_cast<CallBase>(&I); Call && !isa<MemIntrinsic>(I)) {
    const Function *Callee = Call->getCalledFunction();
    StringRef Named = Callee ? Callee->getName() : "";
    if (Call->isInlineAsm())
      Who = "inline assembly";
    else if (Named == "__kmpc_fork_call" || Named == "__kmpc_fork_teams")
      Who = "a host parallel region";
    else
      Who = Callee ? "a call to " + demangle(Named) : "an indirect call";
  }
  std::string Why = Who.empty() ? "the host may " + std::string(Verb) + " " +
                                      Name.str() + " in the " + Kind.str()
                                : Who + " in the " + Kind.str() + " may " +
                                      Verb + " " + Name.str();
  if (DebugLoc Loc = outermost(I.getDebugLoc()); Loc && Loc.getLine())
    Why += " (line " + std::to_string(Loc.getLine()) + ")";
  return Why;
}

/// Code a data region can wrap: a loop (from its preheader to its exits), or
/// a straight run of launches outside loops (from the first launch's block to
/// the block where the last one's host fallback rejoins).
struct Span {
  SmallVector<BasicBlock *, 16> Blocks;
  Instruction *Begin = nullptr;       // the data region starts before it
  SmallVector<Instruction *, 4> Ends; // and ends before each of these
  DebugLoc Where;
  BasicBlock *Anchor = nullptr; // where remarks point
  bool Straight = false; // a run of launches, not a loop: each at most once

  /// What remarks call it.
  const char *kind() const { return Straight ? "run of launches" : "loop"; }

  bool contains(const BasicBlock *BB) const {
    return llvm::is_contained(Blocks, BB);
  }

  /// Whether `I` runs inside the data region: in its blocks, and not before
  /// where it begins (a straight run begins at its first launch, after the
  /// code its block holds before it).
  bool covers(const Instruction &I) const {
    return contains(I.getParent()) &&
           !(I.getParent() == Begin->getParent() && I.comesBefore(Begin));
  }
};

class LoopHoister {
public:
  LoopHoister(Function &F, FunctionAnalysisManager &FAM,
              std::vector<std::optional<Launch>> &Launches, DeviceCode &Device)
      : F(F), Device(Device), LI(FAM.getResult<LoopAnalysis>(F)),
        DT(FAM.getResult<DominatorTreeAnalysis>(F)),
        AA(FAM.getResult<AAManager>(F)),
        TLI(FAM.getResult<TargetLibraryAnalysis>(F)),
        ORE(FAM.getResult<OptimizationRemarkEmitterAnalysis>(F)),
        Launches(Launches) {}

  bool run() {
    bool Changed = false;
    SmallVector<Loop *, 8> TopLevel(LI.begin(), LI.end());
    for (Loop *L : TopLevel)
      Changed |= visit(*L, {});
    SmallVector<const Launch *, 8> Outside;
    for (const auto &Site : Launches)
      if (Site && !LI.getLoopFor(Site->Call->getParent()))
        Outside.push_back(&*Site);
    SmallPtrSet<Value *, 8> Kept;
    if (std::optional<Span> Straight = straightRun(Outside))
      Changed |= hoist(*Straight, Kept);
    // Then each target region's launches alone, for what the whole run could
    // not keep: the launches of one region outside loops are mostly a loop
    // the optimizer unrolled, and host code between two such loops must not
    // keep each loop's own data per launch.
    MapVector<StringRef, SmallVector<const Launch *, 4>> ByRegion;
    for (const Launch *Site : Outside)
      ByRegion[Site->Kernel].push_back(Site);
    if (ByRegion.size() > 1)
      for (auto &[Region, Group] : ByRegion)
        if (std::optional<Span> Straight = straightRun(Group)) {
          SmallPtrSet<Value *, 8> Enclosing = Kept; // (not its siblings')
          Changed |= hoist(*Straight, Enclosing);
        }
    return Changed;
  }

private:
  Function &F;
  DeviceCode &Device;
  LoopInfo &LI;
  DominatorTree &DT;
  AAResults &AA;
  TargetLibraryInfo &TLI;
  OptimizationRemarkEmitter &ORE;
  std::vector<std::optional<Launch>> &Launches;

  /// Tries `L`, then its inner loops for what `L` could not keep.
  bool visit(Loop &L, SmallPtrSet<Value *, 8> Outer) {
    bool Changed = simplifyLoop(&L, &DT, &LI, nullptr, nullptr, nullptr,
                                false);
    if (std::optional<Span> Around = loopSpan(L))
      Changed |= hoist(*Around, Outer);
    for (Loop *Inner : L.getSubLoops())
      Changed |= visit(*Inner, Outer);
    return Changed;
  }

  /// Keeps what `S` allows on the device; adds it to `Outer`.
  bool hoist(Span &S, SmallPtrSet<Value *, 8> &Outer) {
    std::optional<SmallVector<Kept, 8>> Found = keepable(S, Outer);
    if (!Found || Found->empty())
      return false;
    emit(S, *Found);
    for (const Kept &K : *Found)
      Outer.insert(K.Base);
    return true;
  }

  std::optional<Span> loopSpan(Loop &L) {
    SmallVector<BasicBlock *, 4> Exits;
    L.getUniqueExitBlocks(Exits);
    if (!L.getLoopPreheader() || !L.hasDedicatedExits() ||
        llvm::any_of(Exits, [](BasicBlock *BB) { return BB->isEHPad(); }))
      return std::nullopt;
    Span S;
    S.Blocks.assign(L.block_begin(), L.block_end());
    S.Begin = L.getLoopPreheader()->getTerminator();
    for (BasicBlock *Exit : Exits)
      S.Ends.push_back(&*Exit->getFirstInsertionPt());
    S.Where = L.getStartLoc();
    S.Anchor = L.getHeader();
    return S;
  }

  /// Launches outside loops (`Outside`), from the first to the last, when one
  /// dominates all and the other's rejoin block post-dominates all: code a
  /// loop the optimizer fully unrolled looks like this.
  std::optional<Span> straightRun(ArrayRef<const Launch *> Outside) {
    if (Outside.size() < 2)
      return std::nullopt;
    PostDominatorTree PDT(F);
    // Where everything after the launches meets: the nearest common
    // post-dominator of both ways out of every launch (its fallback and the
    // success path).
    BasicBlock *End = nullptr;
    const Launch *First = nullptr;
    for (const Launch *Site : Outside) {
      BasicBlock *BB = Site->Call->getParent();
      for (BasicBlock *Next : successors(BB)) {
        End = End ? PDT.findNearestCommonDominator(End, Next) : Next;
        if (!End)
          return std::nullopt;
      }
      if (llvm::all_of(Outside, [&](const Launch *Other) {
            return Other == Site || DT.dominates(Site->Call, Other->Call);
          }))
        First = Site;
    }
    BasicBlock *Start = First ? First->Call->getParent() : nullptr;
    // Both ends must run once per run: on no cycle (LoopInfo misses
    // irreducible ones), and the end only after the start.
    if (!Start || !DT.dominates(Start, End) || onCycle(Start) ||
        onCycle(End))
      return std::nullopt;
    Span S;
    for (BasicBlock &BB : F)
      if (&BB != End && DT.dominates(Start, &BB) &&
          PDT.dominates(End, &BB)) {
        if (LI.getLoopFor(&BB))
          return std::nullopt; // a loop in between: its own span
        S.Blocks.push_back(&BB);
      }
    S.Begin = First->Call;
    S.Ends.push_back(&*End->getFirstInsertionPt());
    S.Where = locationOf(*First);
    S.Anchor = Start;
    S.Straight = true;
    return S;
  }

  /// Where a launch is in the source: the front end leaves the call itself
  /// without a location, but its host fallback has the region's.
  static DebugLoc locationOf(const Launch &Site) {
    if (DebugLoc Loc = outermost(Site.Call->getDebugLoc());
        Loc && Loc.getLine())
      return Loc;
    if (Site.Fallback)
      for (const Instruction &I : *Site.Fallback)
        if (DebugLoc Loc = outermost(I.getDebugLoc()); Loc && Loc.getLine())
          return Loc;
    return DebugLoc();
  }

  static bool onCycle(BasicBlock *BB) {
    SmallVector<BasicBlock *, 4> Next(successors(BB));
    return !Next.empty() && // (the search pops before it looks)
           isPotentiallyReachableFromMany(Next, BB, nullptr, nullptr, nullptr);
  }

  /// Whether `V` is the same all through `S` (defined before it starts).
  bool invariant(const Span &S, Value *V) const {
    auto *I = dyn_cast<Instruction>(V);
    return !I || (!S.covers(*I) && DT.dominates(I, S.Begin));
  }

  void missed(const Span &S, const Twine &Why) {
    ORE.emit([&] {
      return OptimizationRemarkMissed(PassName, "NotHoisted", S.Where,
                                      S.Anchor)
             << "target data stays per launch: " << Why.str();
    });
  }

  bool inFallback(const Launch &Site, const BasicBlock *BB) const {
    return Site.Fallback &&
           DT.dominates(BasicBlockEdge(Site.Call->getParent(), Site.Fallback),
                        BB);
  }

  /// Why `Site`'s kernel may write the memory `K` maps, where `Site` maps it
  /// without `from` (so that the original program drops the write); empty
  /// when it provably does not.
  std::string deviceMayWrite(const Launch &Site, const Kept &K) {
    unsigned Captured = llvm::count_if(Site.Items, [](const MapItem &Item) {
      return Item.Flags & MapTargetParam;
    });
    for (const MapItem &Item : Site.Items)
      if (Item.Base->stripPointerCasts() == K.Base && !(Item.Flags & MapFrom))
        if (std::string Why = Device.mayWrite(Site.Kernel, Item.Param, Captured);
            !Why.empty())
          return Why;
    return "";
  }

  /// Whether `Item` maps `Base` (a literal or private item passes a value).
  static bool maps(const MapItem &Item, const Value *Base) {
    return Item.Base->stripPointerCasts() == Base &&
           !(Item.Flags & (MapLiteral | MapPrivate));
  }

  /// Whether a straight run need not copy `K` in: the first of its launches
  /// to map K (it dominates the others) always runs and maps K `from`
  /// without `to`, so it starts from device memory the host never wrote, in
  /// the original program too. (An `alloc` first launch leaves the host's
  /// values for a later `to`; one that may not run leaves them for the
  /// region's end.)
  bool needsNoCopyIn(ArrayRef<const Launch *> Inside, const Kept &K,
                     function_ref<bool(const Launch &)> AlwaysRuns) {
    const Launch *First = firstMapping(Inside, K.Base);
    if (!First)
      return false;
    uint64_t Flags = 0;
    for (const MapItem &Item : First->Items)
      if (maps(Item, K.Base))
        Flags |= Item.Flags;
    return !(Flags & MapTo) && (Flags & MapFrom) && AlwaysRuns(*First);
  }

  /// The launch of `Inside` that maps `Base` before every other that does
  /// (its call dominates theirs); null where none does.
  const Launch *firstMapping(ArrayRef<const Launch *> Inside,
                             const Value *Base) const {
    SmallVector<const Launch *, 4> Mapping;
    for (const Launch *Site : Inside)
      if (llvm::any_of(Site->Items, [&](const MapItem &Item) {
            return maps(Item, Base);
          }))
        Mapping.push_back(Site);
    for (const Launch *Site : Mapping)
      if (llvm::all_of(Mapping, [&](const Launch *Other) {
            return Other == Site || DT.dominates(Site->Call, Other->Call);
          }))
        return Site;
    return nullptr;
  }

  /// Why `Item` (of base `Base`) cannot be kept across `S` whatever the
  /// host does, as the end of a sentence about it; null where it can.
  const char *unkeepable(const Span &S, const MapItem &Item,
                         Value *Base) const {
    auto *G = dyn_cast<GlobalVariable>(Base);
    if (Item.Begin->stripPointerCasts() != Base)
      return " is mapped from an offset (a section not at its start)";
    if (!Item.Size)
      return "'s size is not known";
    if (!invariant(S, Base))
      return "'s address may change between its launches";
    if (!invariant(S, Item.Size))
      return "'s size may change between its launches";
    if (Item.Flags & ~PlainMapBits)
      return " has a map type other than to, from, tofrom or alloc";
    if (G && isDeclareTarget(*G))
      return " is declare target (it has a device copy of its own)";
    return nullptr;
  }

  /// The memory `S` can keep on the device (none: nothing to do or not
  /// provably the same program; std::nullopt: no launch in `S`).
  std::optional<SmallVector<Kept, 8>>
  keepable(const Span &S, const SmallPtrSet<Value *, 8> &Outer) {
    SmallVector<const Launch *, 8> Inside;
    for (BasicBlock *BB : S.Blocks)
      for (Instruction &I : *BB) {
        if (!isOffloadCall(I) || !S.covers(I))
          continue;
        auto Found = llvm::find_if(Launches, [&](const auto &Site) {
          return Site && Site->Call == &I;
        });
        if (Found == Launches.end()) {
          missed(S, isLaunch(I) ? "a launch whose map list is not the "
                                  "front end's"
                                : "other offload calls (target data, update, "
                                  "nowait) are in between");
          return SmallVector<Kept, 8>();
        }
        Inside.push_back(&**Found);
      }
    if (Inside.empty())
      return std::nullopt;
    for (BasicBlock *BB : S.Blocks)
      for (Instruction &I : *BB)
        if (I.mayThrow() && !isLaunch(I) && S.covers(I)) {
          missed(S, "the code may throw (an unwind would skip the end of "
                    "the data region)");
          return SmallVector<Kept, 8>();
        }
    for (const Launch *Site : Inside)
      if (Site->Device->getValue() != Inside.front()->Device->getValue()) {
        missed(S, "launches on different devices");
        return SmallVector<Kept, 8>();
      }

    // A straight run's launches run at most once each: those whose block
    // post-dominates the run's start always do.
    std::optional<PostDominatorTree> PDT;
    if (S.Straight)
      PDT.emplace(F);
    auto AlwaysRuns = [&](const Launch &Site) {
      return PDT->dominates(Site.Call->getParent(), S.Begin->getParent());
    };
    MapVector<Value *, Kept> Candidates;
    SmallPtrSet<Value *, 8> Refused;
    MapVector<Value *, std::string> Unkept; // why, where a map item says it
    // Where every item that maps memory points: its base and its section.
    SmallVector<std::pair<const MapItem *, Value *>, 16> Mapped;
    // What launches copy from the host into private device memory
    // (firstprivate): a host read of it at each launch.
    SmallVector<Value *, 4> Copied;
    for (const Launch *Site : Inside)
      for (const MapItem &Item : Site->Items) {
        if ((Item.Flags & MapPrivate) && (Item.Flags & MapTo) &&
            !(Item.Flags & MapLiteral)) {
          if (!Item.Begin->getType()->isPointerTy()) {
            missed(S, "a firstprivate item that is not a pointer");
            return SmallVector<Kept, 8>();
          }
          Copied.push_back(Item.Begin->stripPointerCasts());
        }
        if (Item.Flags & (MapLiteral | MapPrivate))
          continue; // passed by value or private: nothing mapped
        if (!Item.Base->getType()->isPointerTy() ||
            !Item.Begin->getType()->isPointerTy()) {
          missed(S, "a map item that is not a pointer");
          return SmallVector<Kept, 8>();
        }
        if (Item.Flags & (MapPtrAndObj | MapMemberOf)) {
          missed(S, "a map item reaches memory through a stored pointer or "
                    "a struct member");
          return SmallVector<Kept, 8>();
        }
        Value *Base = Item.Base->stripPointerCasts();
        Mapped.push_back({&Item, Base});
        if (Outer.contains(Base)) { // kept by the enclosing region already
          Refused.insert(Base);
          continue;
        }
        if (const char *Why = unkeepable(S, Item, Base)) {
          Refused.insert(Base);
          Unkept.try_emplace(
              Base, (Twine(Item.Name.empty() ? nameOf(Base) : Item.Name) + Why)
                        .str());
          continue;
        }
        auto [Entry, New] = Candidates.try_emplace(Base);
        Kept &K = Entry->second;
        if (New) {
          K.Base = Base;
          K.Size = Item.Size;
          K.Name = Item.Name.empty() ? nameOf(Base) : Item.Name;
        } else if (!sameSize(K.Size, Item.Size)) {
          Refused.insert(Base);
        }
        K.To |= (Item.Flags & (MapTo | MapFrom)) != 0;
        K.From |= (Item.Flags & MapFrom) != 0;
        if (S.Straight && AlwaysRuns(*Site))
          K.Copies +=
              ((Item.Flags & MapTo) != 0) + ((Item.Flags & MapFrom) != 0);
        if (!(Item.Flags & MapFrom))
          K.WithoutFrom.push_back(Site);
      }

    SmallVector<Kept, 8> Result;
    std::string Reasons;
    for (auto &[Base, K] : Candidates) {
      if (Refused.contains(Base))
        continue;
      std::string Reason;
      for (Value *Private : Copied)
        if (!AA.isNoAlias(MemoryLocation::getBeforeOrAfter(Private),
                          K.where()))
          Reason = ("a launch copies " + Twine(K.Name) +
                    " from the host (firstprivate)")
                       .str();
      for (auto [Item, ItemBase] : Mapped) {
        if (ItemBase == Base)
          continue; // K's own maps (all whole: else K was refused)
        for (Value *Other : {ItemBase, Item->Begin->stripPointerCasts()})
          if (!AA.isNoAlias(MemoryLocation::getBeforeOrAfter(Other),
                            K.where()))
            Reason = ("another map item may alias " + Twine(K.Name)).str();
      }
      for (BasicBlock *BB : S.Blocks) {
        if (!Reason.empty() ||
            llvm::any_of(Inside, [&](const Launch *Site) {
              return inFallback(*Site, BB);
            }))
          continue;
        for (Instruction &I : *BB) {
          if (!S.covers(I) || !I.mayReadOrWriteMemory() || isLaunch(I) ||
              (isa<CallBase>(I) && isMathCall(cast<CallBase>(I), TLI)))
            continue;
          if (ModRefInfo Access = AA.getModRefInfo(&I, K.where());
              isModOrRefSet(Access)) {
            Reason = hostAccess(I, Access, K.Name, S.kind());
            break;
          }
        }
      }
      for (const Launch *Site : K.WithoutFrom) {
        if (!Reason.empty())
          break;
        if (std::string Why = deviceMayWrite(*Site, K); !Why.empty())
          Reason = ("a launch maps " + Twine(K.Name) +
                    " without `from` and may write it: " + Why)
                       .str();
      }
      if (S.Straight && K.To && needsNoCopyIn(Inside, K, AlwaysRuns))
        K.To = false;
      // A run's launches run at most once each: a region that copies K as
      // often as those that always run do saves nothing. A loop's launches
      // copy once an iteration.
      if (Reason.empty() && S.Straight &&
          unsigned(K.To) + unsigned(K.From) >= K.Copies)
        Reason = ("keeping " + Twine(K.Name) + " would save no copy (" +
                  copiesText(K.Copies) + ")")
                     .str();
      if (Reason.empty())
        Result.push_back(K);
      else
        Reasons += (Reasons.empty() ? "" : "; ") + Reason;
    }
    if (Reasons.empty() && Result.empty())
      for (const auto &[Base, Why] : Unkept)
        Reasons += (Reasons.empty() ? "" : "; ") + Why;
    if (!Reasons.empty() || Result.empty())
      missed(S, Reasons.empty() ? "nothing is mapped whole at an address "
                                  "and size that do not change"
                                : Reasons);
    return Result;
  }

  /// Wraps `S` in a data region mapping `Items`.
  void emit(const Span &S, ArrayRef<Kept> Items) {
    const Launch *Any = nullptr;
    for (const auto &Site : Launches)
      if (Site && S.contains(Site->Call->getParent()))
        Any = &*Site;

    Module &M = *F.getParent();
    LLVMContext &Ctx = M.getContext();
    Type *Ptr = PointerType::get(Ctx, 0), *I64 = Type::getInt64Ty(Ctx);
    ArrayType *Slots = ArrayType::get(Ptr, Items.size());
    ArrayType *Words = ArrayType::get(I64, Items.size());
    SmallVector<uint64_t, 8> ConstantSizes, Types;
    for (const Kept &K : Items) {
      if (auto *Bytes = dyn_cast<ConstantInt>(K.Size))
        ConstantSizes.push_back(Bytes->getZExtValue());
      Types.push_back((K.To ? MapTo : 0) | (K.From ? MapFrom : 0));
    }
    // The front end's names, and its order (sizes, then map types), so that
    // readers of host IR (`stitchopt gpu transfers`) see one more construct.
    auto Array = [&](ArrayRef<uint64_t> Values, const char *Name) {
      auto *Init = ConstantDataArray::get(Ctx, Values);
      auto *Global = new GlobalVariable(
          M, Init->getType(), true, GlobalValue::PrivateLinkage, Init, Name);
      Global->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
      return Global;
    };
    bool SizesKnown = ConstantSizes.size() == Items.size();
    Value *Sizes = SizesKnown
                       ? Array(ConstantSizes, ".offload_sizes.stitchopt")
                       : nullptr;
    GlobalVariable *TypeArray = Array(Types, ".offload_maptypes.stitchopt");

    IRBuilder<> Entry(&*F.getEntryBlock().getFirstInsertionPt());
    AllocaInst *Bases = Entry.CreateAlloca(Slots, nullptr, "stitchopt.bases");
    AllocaInst *Begins =
        Entry.CreateAlloca(Slots, nullptr, "stitchopt.begins");
    if (!SizesKnown)
      Sizes = Entry.CreateAlloca(Words, nullptr, "stitchopt.sizes");
    IRBuilder<> Before(S.Begin);
    for (auto [Index, K] : llvm::enumerate(Items)) {
      for (AllocaInst *Array : {Bases, Begins})
        Before.CreateStore(
            K.Base, Before.CreateConstInBoundsGEP2_64(Slots, Array, 0, Index));
      if (!SizesKnown)
        Before.CreateStore(
            Before.CreateZExtOrTrunc(K.Size, I64),
            Before.CreateConstInBoundsGEP2_64(Words, Sizes, 0, Index));
    }
    FunctionType *MapperType = FunctionType::get(
        Type::getVoidTy(Ctx),
        {Ptr, I64, Type::getInt32Ty(Ctx), Ptr, Ptr, Ptr, Ptr, Ptr, Ptr},
        false);
    Value *Args[] = {Any->Call->getArgOperand(0),
                     Any->Device,
                     ConstantInt::get(Type::getInt32Ty(Ctx), Items.size()),
                     Bases,
                     Begins,
                     Sizes,
                     TypeArray,
                     ConstantPointerNull::get(PointerType::get(Ctx, 0)),
                     ConstantPointerNull::get(PointerType::get(Ctx, 0))};
    Before.CreateCall(
        M.getOrInsertFunction("__tgt_target_data_begin_mapper", MapperType),
        Args);
    for (Instruction *End : S.Ends) {
      IRBuilder<> After(End);
      After.CreateCall(
          M.getOrInsertFunction("__tgt_target_data_end_mapper", MapperType),
          Args);
    }
    ORE.emit([&] {
      OptimizationRemark Remark(PassName, "Hoisted", S.Where, S.Anchor);
      Remark << "kept " << ore::NV("Arrays", unsigned(Items.size()))
             << " mapped array(s) on the device across the " << S.kind()
             << ":";
      for (const Kept &K : Items)
        Remark << " " << K.Name;
      return Remark;
    });
  }
};

} // namespace

PreservedAnalyses HoistTargetDataPass::run(Module &M,
                                           ModuleAnalysisManager &MAM) {
  Function *Kernel = M.getFunction("__tgt_target_kernel");
  // Once per module: a second run (a ThinLTO backend after the compile, a
  // list naming it twice) would nest data regions to no effect.
  if (!Kernel || M.getNamedGlobal(".offload_maptypes.stitchopt"))
    return PreservedAnalyses::all();
  FunctionAnalysisManager &FAM =
      MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
  bool Changed = false;
  std::optional<DeviceCode> Device;
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    std::vector<std::optional<Launch>> Launches;
    for (Instruction &I : instructions(F))
      if (isLaunch(I))
        Launches.push_back(
            readLaunch(cast<CallInst>(&I), M.getDataLayout()));
    if (Launches.empty())
      continue;
    if (!Device)
      Device.emplace(M);
    if (LoopHoister(F, FAM, Launches, *Device).run()) {
      Changed = true;
      FAM.invalidate(F, PreservedAnalyses::none());
    }
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

} // namespace stitchopt
