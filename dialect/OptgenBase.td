//===- OptgenBase.td - The optgen dialect, its types and enums -*- tablegen -*-===//
//
// The dialect in which optgen represents an optimizer spec: rules (the math of
// one parameter's update), groups (which parameters a rule updates, with which
// hyperparameters) and the distribution strategy.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_BASE_TD
#define OPTGEN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Optgen_Dialect : Dialect {
  let name = "optgen";
  let cppNamespace = "::optgen";
  let summary = "Optimizer steps: update rules, parameter groups, distribution";
  let description = [{
    An `optgen.optimizer` holds the whole of a spec. Each `optgen.rule` is the
    value-semantic math of one step for one parameter: it reads the parameter,
    its gradient, hyperparameters, optimizer state and the step count, and
    ends in `optgen.update` with the new parameter and state values. Tensors
    carry symbolic shapes (`!optgen.tensor<[m, n], f32>`) so that shape errors
    are found before any parameter is bound. Each `optgen.group` binds the
    parameters whose names match its glob patterns (and whose shapes satisfy
    its `where` region) to a rule, with hyperparameter values.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // The dialect's attributes on ops of their own and of others: each is
  // `optgen.NAME` (the helper's getNameStr()), verified in
  // verifyOperationAttribute.
  let discardableAttrs = (ins
    // The memory of each result of a kernel, gemm, loop, branch or reduction
    // along an axis (#optgen.buffer or unit), by optgen-assign-buffers and
    // optgen-assign-device-scalars.
    "::mlir::ArrayAttr":$buffers,
    // A rule's workspace slots (#optgen.slot), by optgen-assign-buffers.
    "::mlir::ArrayAttr":$workspace,
    // Where a double-buffered table loop writes its next values.
    "::mlir::ArrayAttr":$next_buffers,
    // The rule a shape-specialised rule is a copy of.
    "::mlir::FlatSymbolRefAttr":$specializes,
    // A scalar a device target's host computes (optgen-place-scalars).
    "::mlir::UnitAttr":$on_host,
    // The fingerprint of an optimizer's math (mathFingerprint()).
    "::mlir::StringAttr":$math
  );
  let hasOperationAttrVerify = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    void registerTypes();
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

class Optgen_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Optgen_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Optgen_TensorType : Optgen_Type<"SymbolicTensor", "tensor"> {
  let summary = "a tensor with a symbolic shape";
  let description = [{
    A tensor whose dimensions are known symbolically. Each dimension is a
    static size (`1`, `3`), a named size that a parameter binds later (`m`,
    `n`: two different names may still turn out equal, but the same name is
    always the same size), or `?`, a size that depends on a choice made only
    when shapes are bound. `*` stands for the whole shape of the rule's
    parameter when its rank is not fixed: a rule written for parameters of
    any rank works on `*` tensors elementwise.

    The element type is `f32`, `bf16`, `f16`, or `i1` for masks.

    Example:
    ```mlir
    !optgen.tensor<[m, n], bf16>
    !optgen.tensor<[m, 1], f32>
    !optgen.tensor<*, f32>
    ```
  }];
  let parameters = (ins
    OptionalArrayRefParameter<"::mlir::Attribute",
      "dimensions: IntegerAttr (static), StringAttr (named) or UnitAttr (?)">:$dims,
    "::mlir::Type":$elementType,
    "bool":$anyRank
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilderWithInferredContext<(ins "::llvm::ArrayRef<::mlir::Attribute>":$dims,
                                        "::mlir::Type":$elementType), [{
      return $_get(elementType.getContext(), dims, elementType, false);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The shape of the parameter, whatever its rank.
    static SymbolicTensorType getUnranked(::mlir::Type elementType) {
      return get(elementType.getContext(), {}, elementType, true);
    }
    bool isRanked() const { return !getAnyRank(); }
    int64_t getRank() const { return getDims().size(); }
    /// The same shape with another element type.
    SymbolicTensorType withElementType(::mlir::Type elementType) const {
      return get(getContext(), getDims(), elementType, getAnyRank());
    }
  }];
}

def Optgen_TokenType : Optgen_Type<"Token", "token"> {
  let summary = "a collective in flight";
  let description = [{
    The result of a non-blocking collective (`optgen.all_reduce`,
    `optgen.reduce_scatter`, `optgen.all_gather`). Its buffers may be used
    only after the `optgen.wait` on it.

    Example:
    ```mlir
    %reduced = optgen.reduce_scatter %flat payload f32
    optgen.wait %reduced
    ```
  }];
}

def Optgen_UnitType : Optgen_Type<"Unit", "unit"> {
  let summary = "a unit of a distributed step";
  let description = [{
    The result of `optgen.unit`: parameters packed into one buffer, which
    the collectives and `optgen.compute` of a schedule work on.
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Optgen_ReduceSum  : I32EnumAttrCase<"sum", 0>;
def Optgen_ReduceMean : I32EnumAttrCase<"mean", 1>;
def Optgen_ReduceNorm : I32EnumAttrCase<"norm", 2>;
def Optgen_ReduceMax  : I32EnumAttrCase<"max", 3>;
def Optgen_ReduceKind : I32EnumAttr<"ReduceKind", "kind of reduction",
    [Optgen_ReduceSum, Optgen_ReduceMean, Optgen_ReduceNorm, Optgen_ReduceMax]> {
  let cppNamespace = "::optgen";
}

def Optgen_LaunchSpace  : I32EnumAttrCase<"space", 0>;
def Optgen_LaunchRows   : I32EnumAttrCase<"rows", 1>;
def Optgen_LaunchCols   : I32EnumAttrCase<"cols", 2>;
def Optgen_LaunchLines  : I32EnumAttrCase<"lines", 3>;
def Optgen_LaunchFinish : I32EnumAttrCase<"finish", 4>;
def Optgen_LaunchStore  : I32EnumAttrCase<"store", 5>;
def Optgen_LaunchKind : I32EnumAttr<"LaunchKind",
    "which elements one launch of a device kernel visits",
    [Optgen_LaunchSpace, Optgen_LaunchRows, Optgen_LaunchCols,
     Optgen_LaunchLines, Optgen_LaunchFinish, Optgen_LaunchStore]> {
  let cppNamespace = "::optgen";
}

def Optgen_CmpLt : I32EnumAttrCase<"lt", 0>;
def Optgen_CmpLe : I32EnumAttrCase<"le", 1>;
def Optgen_CmpGt : I32EnumAttrCase<"gt", 2>;
def Optgen_CmpGe : I32EnumAttrCase<"ge", 3>;
def Optgen_CmpEq : I32EnumAttrCase<"eq", 4>;
def Optgen_CmpNe : I32EnumAttrCase<"ne", 5>;
def Optgen_CmpPredicate : I32EnumAttr<"CmpPredicate", "comparison",
    [Optgen_CmpLt, Optgen_CmpLe, Optgen_CmpGt, Optgen_CmpGe, Optgen_CmpEq,
     Optgen_CmpNe]> {
  let cppNamespace = "::optgen";
}

def Optgen_BufferParam     : I32EnumAttrCase<"param", 0>;
def Optgen_BufferGrad      : I32EnumAttrCase<"grad", 1>;
def Optgen_BufferState     : I32EnumAttrCase<"state", 2>;
def Optgen_BufferWorkspace : I32EnumAttrCase<"workspace", 3>;
def Optgen_BufferKind : I32EnumAttr<"BufferKind",
    "the memory a tensor value of an executable rule lives in",
    [Optgen_BufferParam, Optgen_BufferGrad, Optgen_BufferState,
     Optgen_BufferWorkspace]> {
  let cppNamespace = "::optgen";
}

def Optgen_BufferAttr : AttrDef<Optgen_Dialect, "Buffer"> {
  let mnemonic = "buffer";
  let summary = "where a tensor value of an executable rule lives";
  let description = [{
    Set by `optgen-assign-buffers` on every op that makes a tensor (one per
    result): the parameter's memory (`param`), the gradient's (`grad`, read
    only), state `index` of the rule (`state`), or workspace slot `index`
    (`workspace`, whose shape the rule's `workspace` attribute gives). Two
    values with the same buffer share memory: a kernel that writes its
    result into an input's buffer works in place.

    Example: `#optgen.buffer<workspace, 2>`, `#optgen.buffer<state, 0>`.
  }];
  let parameters = (ins EnumParameter<Optgen_BufferKind>:$kind,
                        "int64_t":$index);
  let assemblyFormat = "`<` $kind `,` $index `>`";
}

def Optgen_SlotAttr : AttrDef<Optgen_Dialect, "Slot"> {
  let mnemonic = "slot";
  let summary = "a workspace slot of an executable rule";
  let description = [{
    An entry of a rule's `optgen.workspace` (set by `optgen-assign-buffers`):
    the extent of the values the slot holds, with the rule's symbols, and
    the type each element is stored as: `f32` for tensors (bf16 and f16
    values held rounded), `bf16` or `f16` for tensors of that type on
    targets with narrow storage (the target description's), or an
    accumulator's type. The runtime sizes the workspace from these for
    each parameter's shape.

    Example: `#optgen.slot<[m, 1], f64>`, `#optgen.slot<*, f32>`,
    `#optgen.slot<[m, n], bf16>`.
  }];
  let parameters = (ins "::optgen::SymbolicTensorType":$shape,
                        "::mlir::Type":$storage);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Optgen_GridElements     : I32EnumAttrCase<"elements", 0>;
def Optgen_GridRows         : I32EnumAttrCase<"rows", 1>;
def Optgen_GridColumnBlocks : I32EnumAttrCase<"column_blocks", 2>;
def Optgen_GridLines        : I32EnumAttrCase<"lines", 3>;
def Optgen_GridMembers      : I32EnumAttrCase<"members", 4>;
def Optgen_GridKind : I32EnumAttr<"GridKind",
    "how many blocks a launch runs per member",
    [Optgen_GridElements, Optgen_GridRows, Optgen_GridColumnBlocks,
     Optgen_GridLines, Optgen_GridMembers]> {
  let cppNamespace = "::optgen";
}

def Optgen_LaunchShapeAttr : AttrDef<Optgen_Dialect, "LaunchShape"> {
  let mnemonic = "launch_shape";
  let summary = "the grid and blocks of one launch";
  let description = [{
    Set on each `optgen.launch` by `optgen-assign-launch-shapes` from the
    target description: `threads` per block, and per member a grid of
    - `elements`: grid-stride blocks, as many as the member's elements
      need at `per_thread` elements per thread and per pass (a vector
      width), at least one and at most `max_blocks`; a space launch's full
      reductions leave one partial sum per block, so its `max_blocks` is
      what their partial-sums slots hold, and its finish combines as many
      as ran;
    - `rows`: a block per row; `column_blocks`: a thread per column;
      `lines`: one of those two, as the launch's axis says at run time;
    - `members`: one block.

    Example: `#optgen.launch_shape<threads = 256, grid = elements,
    max_blocks = 128, per_thread = 1>`,
    `#optgen.launch_shape<threads = 256, grid = rows>`.
  }];
  let parameters = (ins "int64_t":$threads,
                        EnumParameter<Optgen_GridKind>:$grid,
                        DefaultValuedParameter<"int64_t", "0">:$max_blocks,
                        DefaultValuedParameter<"int64_t", "1">:$per_thread);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Optgen_NonFinitePropagate : I32EnumAttrCase<"propagate", 0>;
def Optgen_NonFiniteSkip      : I32EnumAttrCase<"skip", 1>;
def Optgen_NonFinitePolicy : I32EnumAttr<"NonFinitePolicy",
    "what a step does when a gradient holds NaN or Inf",
    [Optgen_NonFinitePropagate, Optgen_NonFiniteSkip]> {
  let cppNamespace = "::optgen";
}

def Optgen_DistributeNone  : I32EnumAttrCase<"none", 0>;
def Optgen_DistributeZero2 : I32EnumAttrCase<"zero2", 1>;
def Optgen_DistributeStrategy : I32EnumAttr<"DistributeStrategy",
    "how a step is distributed over ranks",
    [Optgen_DistributeNone, Optgen_DistributeZero2]> {
  let cppNamespace = "::optgen";
}

def Optgen_UnitSmall : I32EnumAttrCase<"small", 0>;
def Optgen_UnitFlat  : I32EnumAttrCase<"flat", 1>;
def Optgen_UnitOwned : I32EnumAttrCase<"owned", 2>;
def Optgen_UnitLocal : I32EnumAttrCase<"local", 3>;
def Optgen_UnitKind : I32EnumAttr<"UnitKind",
    "how a unit of a distributed step is shared out over ranks",
    [Optgen_UnitSmall, Optgen_UnitFlat, Optgen_UnitOwned, Optgen_UnitLocal]> {
  let cppNamespace = "::optgen";
}

//===----------------------------------------------------------------------===//
// The target description
//===----------------------------------------------------------------------===//

def Optgen_TargetHost   : I32EnumAttrCase<"host", 0>;
def Optgen_TargetDevice : I32EnumAttrCase<"device", 1>;
def Optgen_TargetKind : I32EnumAttr<"TargetKind",
    "where a target's kernels run",
    [Optgen_TargetHost, Optgen_TargetDevice]> {
  let cppNamespace = "::optgen";
}

def Optgen_StorageWide   : I32EnumAttrCase<"wide", 0>;
def Optgen_StorageNarrow : I32EnumAttrCase<"narrow", 1>;
def Optgen_TargetStorage : I32EnumAttr<"TargetStorage",
    "how a target stores bf16 and f16 temporaries",
    [Optgen_StorageWide, Optgen_StorageNarrow]> {
  let cppNamespace = "::optgen";
}

def Optgen_FeatureNone        : I32BitEnumAttrCaseNone<"none">;
def Optgen_FeatureShardGroups : I32BitEnumAttrCaseBit<"shard_groups", 0>;
def Optgen_FeatureSkipNonFinite : I32BitEnumAttrCaseBit<"skip_nonfinite", 1>;
def Optgen_TargetFeatures : I32BitEnumAttr<"TargetFeatures",
    "what a target generates beyond every target's common ground",
    [Optgen_FeatureNone, Optgen_FeatureShardGroups,
     Optgen_FeatureSkipNonFinite]> {
  let cppNamespace = "::optgen";
  let separator = " | ";
}

def Optgen_TargetAttr : AttrDef<Optgen_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "what the code is generated for, as passes and printers read it";
  let description = [{
    The module attribute `optgen.target`, set once (by `optgen-set-target`,
    the first pass of `optgen-lower-to-executable`, from the catalogue of
    known targets in TargetDescription.cpp) and read by every pass and
    printer after it, so that no pass or printer names a target or holds
    a target's constant:

    - `name`: the target as `--target` spells it; the runtime component
      its code links and the banner of its files say it.
    - `kind`: `host` (the CPU: OpenMP loops over host memory) or `device`
      (a GPU: kernels and their launches, scalars and partial sums in
      device memory).
    - `accumulator`: the type reductions accumulate in (f32 or f64).
    - `storage`: `wide` holds bf16 and f16 temporaries in f32, `narrow`
      as their own type.
    - device only: `threads_per_block` of every kernel, `vector_width`
      (f32 elements a thread moves per access), `max_blocks_per_member` of
      a grid-stride launch, `reduction_blocks` (the fixed number of blocks
      and partial sums of a full reduction, so that its result does not
      depend on scheduling), and `arch`, the compute capability code is
      built for when the build does not say.
    - host only: `max_loop_versions`, how many unit-stride versions of a
      loop nest the printer may make for the broadcasts a parameter's shape
      decides (a power of two: one version per combination of run-time
      tests), and `parallel_elements`, the elements from which a kernel's
      loop runs on OpenMP's threads (fewer: one thread, no fork).
    - `supports`: what it generates beyond every target's common ground
      (`shard_groups`: hybrid sharding's step; `skip_nonfinite`: steps
      skipped on non-finite gradients, `on_nonfinite skip`).

    Parameters that do not apply are left out (0 or `none`).

    Example: `#optgen.target<name = "cpu", kind = host, accumulator = f64,
    max_loop_versions = 8, parallel_elements = 65536,
    supports = "shard_groups | skip_nonfinite">`.
  }];
  let parameters = (ins
    StringRefParameter<"the target's name">:$name,
    EnumParameter<Optgen_TargetKind>:$kind,
    "::mlir::Type":$accumulator,
    DefaultValuedParameter<"::optgen::TargetStorage",
                           "::optgen::TargetStorage::wide">:$storage,
    DefaultValuedParameter<"int64_t", "0">:$threads_per_block,
    DefaultValuedParameter<"int64_t", "0">:$vector_width,
    DefaultValuedParameter<"int64_t", "0">:$max_blocks_per_member,
    DefaultValuedParameter<"int64_t", "0">:$reduction_blocks,
    DefaultValuedParameter<"int64_t", "0">:$arch,
    DefaultValuedParameter<"int64_t", "0">:$max_loop_versions,
    DefaultValuedParameter<"int64_t", "0">:$parallel_elements,
    DefaultValuedParameter<"::optgen::TargetFeatures",
                           "::optgen::TargetFeatures::none">:$supports);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isDevice() const { return getKind() == ::optgen::TargetKind::device; }
    bool hasNarrowStorage() const {
      return getStorage() == ::optgen::TargetStorage::narrow;
    }
    bool supports(::optgen::TargetFeatures feature) const {
      return ::optgen::bitEnumContainsAll(getSupports(), feature);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Traits
//===----------------------------------------------------------------------===//

/// Each result element depends only on the operands' elements at the same
/// (broadcast) position: such ops fuse into kernels.
def Optgen_ElementwiseMath : NativeOpTrait<"ElementwiseMath"> {
  let cppNamespace = "::optgen";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Optgen_AnyTensor : Type<CPred<"::llvm::isa<::optgen::SymbolicTensorType>($_self)">,
                            "optgen tensor", "::optgen::SymbolicTensorType">;
def Optgen_Float : AnyTypeOf<[F32, BF16, F16]>;
/// f64 is the type of float literals only: weak, it takes the type of what
/// it meets (`x_bf16 * 1.01` is bf16), as Python numbers do in PyTorch.
def Optgen_Scalar : AnyTypeOf<[F32, BF16, F16, F64, I64, I1]>;
/// Elementwise ops take any mix of tensors and scalars.
def Optgen_Value : AnyTypeOf<[Optgen_AnyTensor, Optgen_Scalar]>;
def Optgen_HyperType : AnyTypeOf<[F32, I64, AnyTuple]>;

#endif // OPTGEN_BASE_TD
