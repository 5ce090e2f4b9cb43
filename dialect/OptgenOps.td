//===- OptgenOps.td - Operations of the optgen dialect ---------*- tablegen -*-===//

#ifndef OPTGEN_OPS_TD
#define OPTGEN_OPS_TD

include "OptgenBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

class Optgen_Op<string mnemonic, list<Trait> traits = []>
    : Op<Optgen_Dialect, mnemonic, traits>;

// Result types come from the type rules; a result may keep a `?` where the
// rules now know the size (shape inference refines it), or the reverse.
defvar Optgen_InferType = InferTypeOpAdaptorWithIsCompatible;

//===----------------------------------------------------------------------===//
// Structure: optimizer, rule, group, distribute
//===----------------------------------------------------------------------===//

def Optgen_OptimizerOp : Optgen_Op<"optimizer", [
    SymbolTable, Symbol, NoTerminator, SingleBlock, IsolatedFromAbove,
    NoRegionArguments]> {
  let summary = "a whole optimizer spec";
  let description = [{
    Holds the rules, groups and the distribution strategy of one spec. Rules
    and groups are symbols in it; groups refer to rules by name.

    Example:
    ```mlir
    optgen.optimizer @sgd {
      optgen.rule @sgd inputs ["p", "g"] { ... }
      optgen.group @all = @sgd match ["*"] {lr = 1.0e-01 : f32}
      optgen.distribute none
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBlock() { return getBody().front(); }
  }];
}

def Optgen_RuleOp : Optgen_Op<"rule", [
    Symbol, IsolatedFromAbove, HasParent<"OptimizerOp">, SingleBlock,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "the math of one step for one parameter";
  let description = [{
    The body reads the parameter and its gradient (the two block arguments,
    named by `inputs`), declares hyperparameters (`optgen.hyper`) and state
    (`optgen.state`), computes with value semantics, and ends with
    `optgen.update`, which gives the parameter's and every state's new value.
    The parameter's type fixes what the rule accepts: `*` any rank,
    `[m, n]` matrices, `[n]` vectors.

    Example:
    ```mlir
    optgen.rule @sgd inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %lr = optgen.hyper "lr" : f32
      %0 = optgen.mul %lr, %g : f32, !optgen.tensor<*, f32>
      %1 = optgen.sub %p, %0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      optgen.update %1 : !optgen.tensor<*, f32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$inputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name `inputs` $inputs attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBlock() { return getBody().front(); }
    ::mlir::BlockArgument getParam() { return getBlock().getArgument(0); }
    ::mlir::BlockArgument getGrad() { return getBlock().getArgument(1); }
    /// The hyperparameter declared as `name`, or null.
    HyperOp lookupHyper(::llvm::StringRef name);
    /// Every hyperparameter has an offset or none has; no two overlap.
    ::mlir::LogicalResult verifyHyperOffsets();
  }];
}

// Hyperparameter and state declarations are the rule's interface (the
// tables the runtime keeps): not Pure, so that an unused one stays.
def Optgen_HyperOp : Optgen_Op<"hyper", [
    HasParent<"RuleOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "a hyperparameter of the rule";
  let description = [{
    A value the training code sets per group and may change between steps
    (a learning-rate schedule, a momentum warm-up). Its type is `f32` (a
    float), `i64` (an int) or a tuple of those. Groups that do not set it get
    `default`; a hyperparameter without a default must be set by every group
    that uses the rule.

    Example:
    ```mlir
    %lr = optgen.hyper "lr" : f32
    %betas = optgen.hyper "betas" default([8.000000e-01 : f32, 9.500000e-01 : f32]) : tuple<f32, f32>
    %ns_steps = optgen.hyper "ns_steps" default(5 : i64) : i64
    ```

    `offset`, set by `optgen-assign-hyper-offsets`, is where the value (a
    tuple: its first element) sits among the doubles the runtime passes a
    step for the group: the layout that generated code and runtime share.
    In a rule, either every hyperparameter has one or none has, and their
    ranges do not overlap.
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<AnyAttr>:$default_value,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$offset);
  let results = (outs Optgen_HyperType:$result);
  let assemblyFormat = "$name (`default` `(` $default_value^ `)`)? attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// How many values it holds: 1, or the size of its tuple.
    int64_t getWidth();
  }];
}

def Optgen_StateOp : Optgen_Op<"state", [AttrSizedOperandSegments,
    HasParent<"RuleOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "optimizer state carried from one step to the next";
  let description = [{
    The value of the state at the start of the step; it starts at zero before
    the first step. Shaped like `like` (the parameter), or like it reduced
    along `axis` to size 1 (a factored moment), or a scalar when `like` is
    absent. The element type is the state's storage dtype. `optgen.update`
    gives the value kept for the next step.

    Example:
    ```mlir
    %m = optgen.state "m" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32>
    %r = optgen.state "r" like %p : !optgen.tensor<[m, n], f32> reduced %c1 -> !optgen.tensor<[m, 1], f32>
    %s = optgen.state "count" -> f32
    ```
  }];
  let arguments = (ins StrAttr:$name, Optional<Optgen_AnyTensor>:$like,
                       Optional<I64>:$axis);
  let results = (outs Optgen_Value:$result);
  let assemblyFormat = [{
    $name (`like` $like^ `:` qualified(type($like)))? (`reduced` $axis^)? attr-dict `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Optgen_StepOp : Optgen_Op<"step", [Pure]> {
  let summary = "the parameter's step count, 1 at the first step";
  let description = [{
    Counts the steps this parameter has taken, including the current one.

    Example:
    ```mlir
    %t = optgen.step : i64
    ```
  }];
  let results = (outs I64:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def Optgen_UpdateOp : Optgen_Op<"update", [
    Terminator, HasParent<"RuleOp">, Pure]> {
  let summary = "the new parameter and state values of a rule";
  let description = [{
    Ends a rule. `param` is the parameter after the step; `states` are the
    new values of the rule's `optgen.state` declarations, in their order.
    Each has exactly its declaration's type.

    Example:
    ```mlir
    optgen.update %p1 state(%m1, %v1 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    ```
  }];
  let arguments = (ins Optgen_AnyTensor:$param, Variadic<Optgen_Value>:$states);
  let assemblyFormat = [{
    $param (`state` `(` $states^ `:` qualified(type($states)) `)`)? attr-dict `:` qualified(type($param))
  }];
  let hasVerifier = 1;
}

def Optgen_GroupOp : Optgen_Op<"group", [
    Symbol, IsolatedFromAbove, HasParent<"OptimizerOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "parameters a rule updates, and with which hyperparameters";
  let description = [{
    A parameter belongs to the first group (in spec order) that one of whose
    glob `patterns` matches its name (`*` any run of characters, `?` one
    character, `[abc]` a class) and whose `where` region, if any, yields true
    for its shape. `settings` give hyperparameter values of the rule; the
    rule's defaults fill in the rest.

    Example:
    ```mlir
    optgen.group @matrices = @muon match ["transformer.h.*"] {lr = 2.000000e-02 : f32} where {
    ^bb0(%param: !optgen.tensor<*, f32>):
      %n = optgen.ndim %param : !optgen.tensor<*, f32>
      %c2 = optgen.constant 2 : i64
      %ok = optgen.cmp eq, %n, %c2 : i64, i64
      optgen.yield %ok : i1
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefAttr:$rule,
                       StrArrayAttr:$patterns, DictionaryAttr:$settings);
  let regions = (region MaxSizedRegion<1>:$predicate);
  let assemblyFormat = [{
    $sym_name `=` $rule `match` $patterns $settings attr-dict-with-keyword
    (`where` $predicate^)?
  }];
  let hasRegionVerifier = 1;
}

def Optgen_DistributeOp : Optgen_Op<"distribute", [HasParent<"OptimizerOp">]> {
  let summary = "how a step is distributed over ranks";
  let description = [{
    `none`: every rank runs the whole step on its own gradients. `zero2`:
    gradients are averaged over ranks; tensors with fewer than `small_numel`
    elements are all-reduced and updated everywhere; the rest are
    reduce-scattered, updated by the rank that owns them (which alone keeps
    their state) and all-gathered.

    `shard_group` (zero2, optional): shard within groups of that many
    consecutive ranks and average across the groups (hybrid sharding, as
    HSDP does); it must divide the world size. Without it the ranks form
    one group.

    Example:
    ```mlir
    optgen.distribute zero2 {small_numel = 1024 : i64}
    optgen.distribute zero2 {shard_group = 8 : i64, small_numel = 1024 : i64}
    ```
  }];
  let arguments = (ins Optgen_DistributeStrategy:$strategy,
                       OptionalAttr<I64Attr>:$small_numel,
                       OptionalAttr<I64Attr>:$shard_group);
  let assemblyFormat = "$strategy attr-dict";
  let hasVerifier = 1;
}

def Optgen_OnNonFiniteOp : Optgen_Op<"on_nonfinite", [HasParent<"OptimizerOp">]> {
  let summary = "what a step does when a gradient is not finite";
  let description = [{
    `propagate` (what an optimizer without this op does): the step runs on
    whatever the gradients hold, so a NaN or Inf reaches the parameters and
    state it touches. `skip`: a step in which any gradient of any parameter,
    on any rank, holds a NaN or an Inf changes no parameter and no state,
    and is counted (as AMP's GradScaler skips); the printers set the
    runtime's `OptimizerSpec::onNonFinite`, and the executor checks the
    gradients in a pass it makes anyway.

    Example:
    ```mlir
    optgen.on_nonfinite skip
    ```
  }];
  let arguments = (ins Optgen_NonFinitePolicy:$policy);
  let assemblyFormat = "$policy attr-dict";
}

def Optgen_GlobalOp : Optgen_Op<"global", [
    Symbol, IsolatedFromAbove, HasParent<"OptimizerOp">, SingleBlock,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "a value of the whole step, reduced across every parameter";
  let description = [{
    A scalar that every rule may read (`optgen.global_value`), computed once
    per step from every parameter of the step and its gradient, as the
    rules see them (in a distributed step, the gradient averaged over the
    ranks). The two block arguments, named by `inputs`, stand for each
    parameter and its gradient: f32 tensors of any shape. Math on them is
    elementwise (no shape query, no reduction of one parameter), so that
    any part of a parameter contributes on its own; `optgen.reduce_params`
    reduces such a tensor over every element of every parameter to a
    scalar, and scalar math on those reductions and constants gives the
    value the body yields, one f32.

    A step with globals runs in two phases: first every parameter's
    contribution to each `optgen.reduce_params` (its partial), the partials
    combined (over ranks in rank order) and the globals finished, the same
    on every rank; then the rules' updates, which read them.

    Example:
    ```mlir
    optgen.global @grad_norm inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %1 = optgen.reduce_params sum %0 : !optgen.tensor<*, f32>
      %2 = optgen.sqrt %1 : f32
      optgen.yield %2 : f32
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$inputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name `inputs` $inputs attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBlock() { return getBody().front(); }
    /// The value the body yields.
    ::mlir::Value getResult();
  }];
}

def Optgen_ReduceParamsOp : Optgen_Op<"reduce_params", [Pure,
    HasParent<"GlobalOp">, InferTypeOpAdaptor]> {
  let summary = "sum or maximum over every element of every parameter";
  let description = [{
    Reduces a tensor computed elementwise from a global's parameter and
    gradient over every element of every parameter of the step: `sum` or
    `max` (the identity, with no element, is 0 or -infinity). The result is
    a scalar of the input's element type, rounded once from the
    accumulator. Each parameter's part (or a rank's part of it) is a
    partial reduction; partials combine in a fixed order (parameters in the
    step's order, then ranks in rank order), so every rank gets the same
    bits. `accumulator`, set by `optgen-set-accumulators`, names the type
    the partials are kept in (f64 on the CPU).

    Example:
    ```mlir
    %sum = optgen.reduce_params sum %0 : !optgen.tensor<*, f32>
    %peak = optgen.reduce_params max %1 {accumulator = f64} : !optgen.tensor<*, f32>
    ```
  }];
  let arguments = (ins Optgen_ReduceKind:$kind, Optgen_AnyTensor:$input,
                       OptionalAttr<TypeAttr>:$accumulator);
  let results = (outs Optgen_Float:$result);
  let assemblyFormat = "$kind $input attr-dict `:` qualified(type($input))";
  let hasVerifier = 1;
}

def Optgen_GlobalValueOp : Optgen_Op<"global_value", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "the value of a global in this step";
  let description = [{
    Reads the value `optgen.global` computed for the current step, an f32
    scalar, in a rule.

    Example:
    ```mlir
    %grad_norm = optgen.global_value @grad_norm : f32
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$global);
  let results = (outs F32:$result);
  let assemblyFormat = "$global attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Optgen_YieldOp : Optgen_Op<"yield", [
    Terminator, Pure, ReturnLike,
    ParentOneOf<["IfOp", "ForTableOp", "GroupOp", "KernelOp", "LaunchOp",
                 "GlobalOp"]>]> {
  let summary = "the values a region gives back";
  let description = [{
    Ends the regions of `optgen.if` and `optgen.for_table` (their results or
    loop-carried values), of `optgen.kernel` and `optgen.launch` (their
    results), of a group's `where` region (one `i1`) and of an
    `optgen.global` (its value, f32).

    Example:
    ```mlir
    optgen.yield %x : !optgen.tensor<[m, n], bf16>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ /* nothing */ }]>];
  let assemblyFormat = "($values^ `:` qualified(type($values)))? attr-dict";
}

//===----------------------------------------------------------------------===//
// Constants, hyperparameter tuples, shape queries
//===----------------------------------------------------------------------===//

def Optgen_ConstantOp : Optgen_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a scalar constant";
  let description = [{
    Example:
    ```mlir
    %eps = optgen.constant 1.000000e-08 : f32
    %two = optgen.constant 2 : i64
    %yes = optgen.constant true
    ```
  }];
  let arguments = (ins TypedAttrInterface:$value);
  let results = (outs Optgen_Scalar:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

def Optgen_TupleGetOp : Optgen_Op<"tuple_get", [Pure, InferTypeOpAdaptor]> {
  let summary = "one element of a tuple hyperparameter";
  let description = [{
    Example:
    ```mlir
    %beta1 = optgen.tuple_get %betas[0] : tuple<f32, f32>
    ```
  }];
  let arguments = (ins AnyTuple:$tuple, I64Attr:$index);
  let results = (outs Optgen_Scalar:$result);
  let assemblyFormat = "$tuple `[` $index `]` attr-dict `:` qualified(type($tuple))";
}

class Optgen_ShapeQueryOp<string mnemonic, string what> : Optgen_Op<mnemonic, [Pure]> {
  let summary = what;
  let results = (outs I64:$result);
  let hasFolder = 1;
  // Asks the earliest value known to have the same shape, so that shape
  // queries do not tie scalar math to the tensor work that follows them.
  let hasCanonicalizeMethod = 1;
}

def Optgen_DimOp : Optgen_ShapeQueryOp<"dim", "the size of a tensor along an axis"> {
  let description = [{
    The size along `axis` (negative counts from the last axis). Known at
    compile time once shapes are bound, so conditions on it may choose code.

    Example:
    ```mlir
    %rows = optgen.dim %p, %c0 : !optgen.tensor<[m, n], f32>
    ```
  }];
  let arguments = (ins Optgen_AnyTensor:$input, I64:$axis);
  let assemblyFormat = "$input `,` $axis attr-dict `:` qualified(type($input))";
  let hasVerifier = 1;
}

def Optgen_NDimOp : Optgen_ShapeQueryOp<"ndim", "the rank of a tensor"> {
  let description = [{
    Example:
    ```mlir
    %rank = optgen.ndim %param : !optgen.tensor<*, f32>
    ```
  }];
  let arguments = (ins Optgen_AnyTensor:$input);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input))";
}

def Optgen_NumelOp : Optgen_ShapeQueryOp<"numel", "the number of elements of a tensor"> {
  let description = [{
    Example:
    ```mlir
    %n = optgen.numel %param : !optgen.tensor<*, f32>
    ```
  }];
  let arguments = (ins Optgen_AnyTensor:$input);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input))";
}

//===----------------------------------------------------------------------===//
// Elementwise math
//===----------------------------------------------------------------------===//

// Operands may mix tensors and scalars. Float literals (f64) are weak and
// take the type of what they meet. Shapes broadcast (right-aligned; a
// dimension of 1 stretches); the element type is the widest float among the
// tensor operands (a scalar never widens a tensor, as in PyTorch), and bf16
// with f16 gives f32. Every result is rounded to its element type.
class Optgen_ElementwiseOp<string mnemonic, list<Trait> traits = []>
    : Optgen_Op<mnemonic, !listconcat(traits, [Pure, Optgen_InferType,
                                               Optgen_ElementwiseMath])>;

class Optgen_BinaryOp<string mnemonic, string what, string sample>
    : Optgen_ElementwiseOp<mnemonic> {
  let summary = what;
  let description = "Elementwise, with broadcasting and promotion.\n\n"
    # "Example:\n```mlir\n" # sample # "\n```\n";
  let arguments = (ins Optgen_Value:$lhs, Optgen_Value:$rhs);
  let results = (outs Optgen_Value:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs))";
}

def Optgen_AddOp : Optgen_BinaryOp<"add", "addition",
  "%0 = optgen.add %m, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>">;
def Optgen_SubOp : Optgen_BinaryOp<"sub", "subtraction",
  "%0 = optgen.sub %one, %beta1 : i64, f32">;
def Optgen_MulOp : Optgen_BinaryOp<"mul", "multiplication",
  "%0 = optgen.mul %x, %scale : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, 1], bf16>">;
def Optgen_DivOp : Optgen_BinaryOp<"div", "division (ints divide to a float)",
  "%0 = optgen.div %rows, %cols : i64, i64">;
def Optgen_PowOp : Optgen_BinaryOp<"pow", "power",
  "%0 = optgen.pow %beta1, %t : f32, i64">;
def Optgen_ModOp : Optgen_BinaryOp<"mod",
  "remainder with the divisor's sign (Python's `%`, torch.remainder)",
  "%0 = optgen.mod %step, %every : i64, i64"> {
  let description = [{
    Elementwise, with broadcasting and promotion: `lhs - rhs *
    floor(lhs / rhs)`, computed exactly; the result is 0 or has the sign of
    `rhs`, as Python's `%` gives (`-7 % 3` is 2). Ints give an int; an int
    modulo 0 is `lhs`, so that `lhs == rhs * floordiv(lhs, rhs) + lhs % rhs`
    holds for every int. Floats give a float; a float modulo 0 is NaN.

    Example:
    ```mlir
    %0 = optgen.mod %step, %every : i64, i64
    ```
  }];
}
def Optgen_FloorDivOp : Optgen_BinaryOp<"floordiv",
  "division rounded down (Python's `//`, torch.floor_divide)",
  "%0 = optgen.floordiv %step, %every : i64, i64"> {
  let description = [{
    Elementwise, with broadcasting and promotion: `floor(lhs / rhs)`, as
    Python's `//` gives (`-7 // 2` is -4). Ints give an int, exactly; an int
    divided by 0 gives 0. Floats give a float (a whole number), computed as
    torch.floor_divide does; a float divided by 0 gives `lhs / 0` (an
    infinity or NaN).

    Example:
    ```mlir
    %0 = optgen.floordiv %step, %every : i64, i64
    ```
  }];
}
def Optgen_MinOp : Optgen_BinaryOp<"min", "the smaller of two values",
  "%0 = optgen.min %v, %cap : !optgen.tensor<*, f32>, f32">;
def Optgen_MaxOp : Optgen_BinaryOp<"max", "the larger of two values",
  "%0 = optgen.max %v, %eps : !optgen.tensor<[m, 1], f32>, f32">;
def Optgen_AndOp : Optgen_BinaryOp<"and", "logical and of conditions or masks",
  "%0 = optgen.and %a, %b : i1, i1">;
def Optgen_OrOp : Optgen_BinaryOp<"or", "logical or of conditions or masks",
  "%0 = optgen.or %a, %b : i1, i1">;

def Optgen_CmpOp : Optgen_ElementwiseOp<"cmp"> {
  let summary = "comparison giving a mask";
  let description = [{
    Compares after promotion; the result is `i1` shaped as the broadcast of
    the operands (a mask when either is a tensor).

    Example:
    ```mlir
    %mask = optgen.cmp ge, %xp, %zero : !optgen.tensor<[m, n], f32>, f32
    ```
  }];
  let arguments = (ins Optgen_CmpPredicate:$predicate, Optgen_Value:$lhs,
                       Optgen_Value:$rhs);
  let results = (outs Optgen_Value:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs))";
  let hasFolder = 1;
}

class Optgen_UnaryOp<string mnemonic, string what, string sample>
    : Optgen_ElementwiseOp<mnemonic> {
  let summary = what;
  let description = "Elementwise; ints become floats where the math needs it.\n\n"
    # "Example:\n```mlir\n" # sample # "\n```\n";
  let arguments = (ins Optgen_Value:$input);
  let results = (outs Optgen_Value:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input))";
}

def Optgen_NegOp : Optgen_UnaryOp<"neg", "negation",
  "%0 = optgen.neg %g : !optgen.tensor<*, f32>">;
def Optgen_NotOp : Optgen_UnaryOp<"not", "logical negation of a condition or mask",
  "%0 = optgen.not %mask : !optgen.tensor<*, i1>">;
def Optgen_SqrtOp : Optgen_UnaryOp<"sqrt", "square root",
  "%0 = optgen.sqrt %v : !optgen.tensor<*, f32>">;
def Optgen_RsqrtOp : Optgen_UnaryOp<"rsqrt", "reciprocal square root",
  "%0 = optgen.rsqrt %v : !optgen.tensor<[m, 1], f32>">;
def Optgen_AbsOp : Optgen_UnaryOp<"abs", "absolute value",
  "%0 = optgen.abs %g : !optgen.tensor<*, f32>">;
def Optgen_SignOp : Optgen_UnaryOp<"sign", "-1, 0 or 1 by the sign of the input",
  "%0 = optgen.sign %u : !optgen.tensor<*, f32>">;
def Optgen_FloorOp : Optgen_UnaryOp<"floor", "the largest integer not above the input (an int stays itself)",
  "%0 = optgen.floor %x : f32">;
def Optgen_ExpOp : Optgen_UnaryOp<"exp", "natural exponential",
  "%0 = optgen.exp %x : f32">;
def Optgen_LogOp : Optgen_UnaryOp<"log", "natural logarithm",
  "%0 = optgen.log %x : !optgen.tensor<*, f32>">;

def Optgen_LerpOp : Optgen_ElementwiseOp<"lerp"> {
  let summary = "linear interpolation: start + weight * (end - start)";
  let description = [{
    Example:
    ```mlir
    %m1 = optgen.lerp %m, %g, %w : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
    ```
  }];
  let arguments = (ins Optgen_Value:$start, Optgen_Value:$end,
                       Optgen_Value:$weight);
  let results = (outs Optgen_Value:$result);
  let assemblyFormat = [{
    $start `,` $end `,` $weight attr-dict `:` qualified(type($start)) `,` qualified(type($end)) `,` qualified(type($weight))
  }];
}

def Optgen_ClampOp : Optgen_ElementwiseOp<"clamp"> {
  let summary = "min(max(input, low), high)";
  let description = [{
    Example:
    ```mlir
    %0 = optgen.clamp %u, %lo, %hi : !optgen.tensor<*, f32>, f32, f32
    ```
  }];
  let arguments = (ins Optgen_Value:$input, Optgen_Value:$low,
                       Optgen_Value:$high);
  let results = (outs Optgen_Value:$result);
  let assemblyFormat = [{
    $input `,` $low `,` $high attr-dict `:` qualified(type($input)) `,` qualified(type($low)) `,` qualified(type($high))
  }];
}

def Optgen_SelectOp : Optgen_ElementwiseOp<"select"> {
  let summary = "choice by a condition or mask";
  let description = [{
    Elementwise `condition ? on_true : on_false`; `condition` is `i1` (a
    scalar or a mask).

    Example:
    ```mlir
    %axis = optgen.select %tall, %c1, %c0 : i1, i64, i64
    ```
  }];
  let arguments = (ins Optgen_Value:$condition, Optgen_Value:$on_true,
                       Optgen_Value:$on_false);
  let results = (outs Optgen_Value:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` qualified(type($condition)) `,` qualified(type($on_true)) `,` qualified(type($on_false))
  }];
  let hasFolder = 1;
}

def Optgen_CastOp : Optgen_Op<"cast", [Pure, Optgen_ElementwiseMath]> {
  let summary = "conversion to another dtype";
  let description = [{
    Converts a tensor's elements or a scalar to another type. Floats round to
    nearest even (so `bf16` matches the hardware conversion); `i1` gives 0 or
    1. A tensor's shape may also be refined or relaxed where a `?` dimension
    stands, never changed.

    Example:
    ```mlir
    %x = optgen.cast %u : !optgen.tensor<[m, n], f32> to !optgen.tensor<[m, n], bf16>
    ```
  }];
  let arguments = (ins Optgen_Value:$input);
  let results = (outs Optgen_Value:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `to` qualified(type($result))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and linear algebra
//===----------------------------------------------------------------------===//

def Optgen_ReduceOp : Optgen_Op<"reduce", [Pure, Optgen_InferType]> {
  let summary = "sum, mean, Frobenius norm or maximum";
  let description = [{
    Without `axis`: over the whole tensor, giving a scalar. With `axis`:
    along that axis, keeping it with size 1. The axis may be computed from
    shapes; until shapes are bound every dimension it could name is `?`.
    Accumulates in f32, or wider, whatever the element type: the
    executable IR names the accumulator (`accumulator = f64`, set by
    `optgen-set-accumulators` for the target), and printers accumulate in
    exactly that type.

    Example:
    ```mlir
    %n = optgen.reduce norm %x : !optgen.tensor<[m, n], bf16>
    %v = optgen.reduce mean %x2 along %c1 : !optgen.tensor<[m, n], f32>
    ```
  }];
  let arguments = (ins Optgen_ReduceKind:$kind, Optgen_AnyTensor:$input,
                       Optional<I64>:$axis,
                       OptionalAttr<TypeAttr>:$accumulator);
  let results = (outs Optgen_Value:$result);
  let assemblyFormat = "$kind $input (`along` $axis^)? attr-dict `:` qualified(type($input))";
}

def Optgen_MatmulOp : Optgen_Op<"matmul", [Pure, Optgen_InferType]> {
  let summary = "matrix product";
  let description = [{
    `[a, b] x [b, c] -> [a, c]`; inputs are rounded to their element type,
    products accumulate in f32, and the result is rounded to the promoted
    element type (as cuBLAS does for bf16).

    Example:
    ```mlir
    %A = optgen.matmul %xt, %x : !optgen.tensor<[n, m], bf16>, !optgen.tensor<[m, n], bf16>
    ```
  }];
  let arguments = (ins Optgen_AnyTensor:$lhs, Optgen_AnyTensor:$rhs);
  let results = (outs Optgen_AnyTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs))";
}

def Optgen_TransposeOp : Optgen_Op<"transpose", [Pure, Optgen_InferType]> {
  let summary = "matrix transpose";
  let description = [{
    Example:
    ```mlir
    %xt = optgen.transpose %x : !optgen.tensor<[m, n], bf16>
    ```
  }];
  let arguments = (ins Optgen_AnyTensor:$input);
  let results = (outs Optgen_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input))";
}

def Optgen_GemmOp : Optgen_Op<"gemm", [Pure, AttrSizedOperandSegments]> {
  let summary = "matrix product as a BLAS computes it: alpha * op(a) @ op(b) + beta * c";
  let description = [{
    The executable form of `optgen.matmul`, made by the lowering passes:
    `op(x)` is `x` or, with `transpose_a` / `transpose_b`, its transpose,
    read in place (no transposed copy); `alpha` (default 1) scales the
    product; an accumulated `c` (the result's shape and element type) is
    added scaled by `beta`, so `a * x + x @ B` is one product rather than a
    product and an elementwise pass. Inputs are read in their element
    types, products and the sum accumulate in f32, and the result is
    rounded once to its element type (as cuBLAS does for bf16).

    `symmetric` states that the product is `op(a) @ op(a)^T` (the same
    operand, exactly one side transposed) and that `c`, if any, is
    symmetric: the result is symmetric, and a target may compute one
    triangle (syrk) and mirror it.

    Example:
    ```mlir
    %A = optgen.gemm %x transposed, %x symmetric : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[n, n], f32>
    %B = optgen.gemm %A, %A transposed scaled %c : f32 plus %A : !optgen.tensor<[n, n], f32> scaled %b : f32 symmetric : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
    %y = optgen.gemm %x, %B plus %x : !optgen.tensor<[m, n], f32> scaled %a : f32 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[m, n], f32>
    ```
  }];
  let arguments = (ins Optgen_AnyTensor:$a, Optgen_AnyTensor:$b,
                       Optional<Optgen_Scalar>:$alpha,
                       Optional<Optgen_AnyTensor>:$c,
                       Optional<Optgen_Scalar>:$beta,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       UnitAttr:$symmetric);
  let results = (outs Optgen_AnyTensor:$result);
  let assemblyFormat = [{
    $a (`transposed` $transpose_a^)? `,` $b (`transposed` $transpose_b^)?
    (`scaled` $alpha^ `:` type($alpha))?
    (`plus` $c^ `:` qualified(type($c)) `scaled` $beta `:` type($beta))?
    (`symmetric` $symmetric^)? attr-dict `:` qualified(type($a)) `,`
    qualified(type($b)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compile-time control flow
//===----------------------------------------------------------------------===//

def Optgen_IfOp : Optgen_Op<"if", [
    RecursiveMemoryEffects, NoRegionArguments,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a choice made at compile time";
  let description = [{
    Runs `then` or `else` as `condition`, which must depend only on shapes
    and constants, so that once shapes are bound exactly one branch remains.
    Both regions yield values of the result types.

    Example:
    ```mlir
    %r = optgen.if %tall -> (!optgen.tensor<[m, n], bf16>) {
      ...
      optgen.yield %a : !optgen.tensor<[m, n], bf16>
    } else {
      ...
      optgen.yield %b : !optgen.tensor<[m, n], bf16>
    }
    ```
  }];
  let arguments = (ins I1:$condition);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$thenRegion, SizedRegion<1>:$elseRegion);
  let assemblyFormat = [{
    $condition (`->` `(` qualified(type($results))^ `)`)? $thenRegion `else` $elseRegion attr-dict
  }];
  let hasVerifier = 1;
  let hasCanonicalizeMethod = 1;
}

def Optgen_ForTableOp : Optgen_Op<"for_table", [
    RecursiveMemoryEffects, SingleBlock]> {
  let summary = "a loop over the rows of a constant table";
  let description = [{
    Runs the body once per row of `table` (a 2-D constant: rows x values),
    at most `count` times, in order. The body's first block arguments are the
    row's values (as f32), the rest the loop-carried values, initially
    `inits`; it yields their next values, and the op's results are their
    values after the last iteration. `count` may be a hyperparameter
    (Polar Express runs `ns_steps` of its 5 rows).

    In an executable rule (`optgen-assign-buffers`) a loop may carry
    `optgen.next_buffers`: per carried value, `unit` or the workspace slot
    the body makes the next value in, which trades places with the carried
    value's slot at the end of each iteration (double buffering, no copy).

    Example:
    ```mlir
    %x1 = optgen.for_table %ns_steps over dense<[[3.4445, -4.775, 2.0315]]> : tensor<1x3xf64>
        iter %x0 : !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, n], bf16> {
    ^bb0(%a: f32, %b: f32, %c: f32, %x: !optgen.tensor<[m, n], bf16>):
      ...
      optgen.yield %xn : !optgen.tensor<[m, n], bf16>
    }
    ```
  }];
  let arguments = (ins I64:$count, F64ElementsAttr:$table,
                       Variadic<AnyType>:$inits);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $count `over` $table (`iter` $inits^ `:` qualified(type($inits)) `->` qualified(type($results)))?
    attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getRowLength() {
      return ::llvm::cast<::mlir::ShapedType>(getTable().getType()).getDimSize(1);
    }
  }];
}

//===----------------------------------------------------------------------===//
// The plan: parameters known at compile time
//===----------------------------------------------------------------------===//

def Optgen_ParamOp : Optgen_Op<"param", [HasParent<"OptimizerOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a parameter of the model, known at compile time";
  let description = [{
    A parameter whose name and shape are known when the spec is compiled
    (`optgen compile --shapes model.safetensors`), so that the plan is fixed
    in the generated code. `optgen-bind-params` sets `group` to the group it
    belongs to.

    Example:
    ```mlir
    optgen.param "transformer.h.0.attn.c_q.weight" [768, 768] -> @matrices
    ```
  }];
  let arguments = (ins StrAttr:$name, DenseI64ArrayAttr:$shape,
                       OptionalAttr<FlatSymbolRefAttr>:$group);
  let assemblyFormat = "$name $shape (`->` $group^)? attr-dict";
}

def Optgen_BucketOp : Optgen_Op<"bucket", [HasParent<"OptimizerOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "same-shape parameters of a group, stepped together";
  let description = [{
    The parameters of one group that share a shape, in registration order:
    the unit a step runs (a K x m x n stack for a matrix rule). Made by
    `optgen-bucket` from bound parameters; `optgen-specialize-shapes` sets
    `rule` to a copy of the group's rule specialised to the shape.

    Example:
    ```mlir
    optgen.bucket @matrices [768, 768] ["transformer.h.0.attn.c_q.weight", "transformer.h.0.attn.c_k.weight"]
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$group, DenseI64ArrayAttr:$shape,
                       StrArrayAttr:$params, OptionalAttr<FlatSymbolRefAttr>:$rule);
  let assemblyFormat = "$group $shape $params (`rule` $rule^)? attr-dict";
}

//===----------------------------------------------------------------------===//
// The distributed step
//===----------------------------------------------------------------------===//

def Optgen_ScheduleOp : Optgen_Op<"schedule", [HasParent<"OptimizerOp">,
    NoTerminator, SingleBlock, NoRegionArguments]> {
  let summary = "a distributed step, complete per rank";
  let description = [{
    One step on `world_size` ranks, as `optgen-plan-shards` writes it from
    the runtime's sharding planner: first the units (`optgen.unit`: which
    parameters are packed together, where each lies in the packed buffer,
    which rule updates it, and what each rank receives, updates and
    gives), then the program every rank runs over them: collectives that
    return tokens, the waits on the tokens, and the updates (`optgen.compute`)
    of each rank's part. A rank reads its part of a unit from the counts:
    rank r holds elements [sum(counts[0..r)), sum(counts[0..r])) of the
    packed buffer. `optgen-schedule-collectives` orders the program in three
    phases: every reduction launched, then per unit its wait, update and
    gather, then the gathers' waits. When the optimizer has globals, every
    update waits for them: each unit's `optgen.partials` (after its
    reduction's wait), on more than one rank `optgen.gather_partials` and
    its wait, and `optgen.finish_globals` come before the first
    `optgen.compute`.

    With `group_size` G (hybrid sharding, as HSDP does; it divides the
    world size), the ranks form groups of G consecutive ranks, and each
    group shares the units out as a step on G ranks would: `counts` and
    `owners` give the G positions in a group, and rank r takes the part of
    position r mod G. A `reduce_scatter` then averages within the group and
    the part across the groups (the ranks of one position), an
    `all_gather` gathers within the group; an `all_reduce` spans every
    rank. Without `group_size` the ranks form one group.

    The verifier checks that the program is complete: a small unit is
    all-reduced, waited for and computed; any other unit is reduce-scattered,
    waited for, computed, all-gathered and waited for, in that order; every collective is waited for exactly once, and no parameter is in two units;
    with globals, that every unit's partials come before their gather and
    the finish, and the finish before every update.

    Example:
    ```mlir
    optgen.schedule world_size 2 {
      %small = optgen.unit small ["resid_lambdas"] offsets [0] rules [@adamw_3] counts [3]
      %owned = optgen.unit owned ["h.0.w", "h.1.w"] offsets [0, 4096] rules [@muon_64x64, @muon_64x64] owners [0, 1] counts [4096, 4096]
      %0 = optgen.all_reduce %small payload f32
      %1 = optgen.reduce_scatter %owned payload f32
      optgen.wait %0
      optgen.compute %small
      optgen.wait %1
      optgen.compute %owned
      %2 = optgen.all_gather %owned payload f32
      optgen.wait %2
    }
    optgen.schedule world_size 8 group_size 2 {
      %owned = optgen.unit owned ["h.0.w", "h.1.w"] offsets [0, 4096] rules [@muon_64x64, @muon_64x64] owners [0, 1] counts [4096, 4096]
      ...
    }
    ```
  }];
  let arguments = (ins I64Attr:$world_size, OptionalAttr<I64Attr>:$group_size);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `world_size` $world_size (`group_size` $group_size^)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBlock() { return getBody().front(); }
    /// The ranks of a shard group: `group_size`, or every rank.
    uint64_t getShardGroupSize() {
      return getGroupSize() ? *getGroupSize() : getWorldSize();
    }
    /// Whether the ranks form several shard groups (hybrid sharding).
    bool hasShardGroups() { return getShardGroupSize() < getWorldSize(); }
  }];
}

def Optgen_UnitOp : Optgen_Op<"unit", [HasParent<"ScheduleOp">, Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "parameters packed into one buffer and shared out over ranks";
  let description = [{
    One unit of the runtime's sharding planner (`ShardUnit` in
    runtime/Sharding.h), exactly as it decided it. `params` are the
    `optgen.param`s in the order their data is packed; `offsets` gives where
    each starts in the packed buffer (in elements; each follows the one
    before); `rules` the rule that updates each (its bucket's specialised
    rule). `kind` says how the unit is shared out:

    - `small`: tensors under the distribution's `small_numel`; their
      gradients are all-reduced and every rank updates all of them.
      `counts` has one entry, the packed total.
    - `flat`: parameters of elementwise rules, split by element: rank r
      (the position r in a shard group: see `optgen.schedule`)
      receives, updates and gives `counts[r]` elements of the packed buffer
      (equal parts; the last padded), whatever the parameters' boundaries.
    - `owned`: matrices updated whole by their `owners` (parallel to
      `params`), packed by owner, so that `counts[r]` is the size of the
      matrices rank r owns.
    - `local`: a bucket stepped where it is, from the rank's own gradients:
      no packing and no collective (`counts` is empty). A rank alone runs
      its step as local units, one per bucket.

    Example:
    ```mlir
    %flat = optgen.unit flat ["lm_head.weight", "transformer.wte.weight"] offsets [0, 1024] rules [@adamw_64x16, @adamw_64x16] counts [1024, 1024]
    ```
  }];
  let arguments = (ins Optgen_UnitKind:$kind, StrArrayAttr:$params,
                       DenseI64ArrayAttr:$offsets,
                       FlatSymbolRefArrayAttr:$rules,
                       OptionalAttr<DenseI32ArrayAttr>:$owners,
                       DenseI64ArrayAttr:$counts);
  let results = (outs Optgen_UnitType:$unit);
  let assemblyFormat = [{
    $kind $params `offsets` $offsets `rules` $rules (`owners` $owners^)?
    `counts` $counts attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The elements of the packed buffer, padding included.
    int64_t getPackedElements();
  }];
}

class Optgen_CollectiveOp<string mnemonic>
    : Optgen_Op<mnemonic, [HasParent<"ScheduleOp">]> {
  let arguments = (ins Optgen_UnitType:$unit, TypeAttrOf<Optgen_Float>:$payload);
  let results = (outs Optgen_TokenType:$token);
  let assemblyFormat = "$unit `payload` $payload attr-dict";
  let hasVerifier = 1;
}

def Optgen_AllReduceOp : Optgen_CollectiveOp<"all_reduce"> {
  let summary = "average a small unit's packed gradients over the ranks";
  let description = [{
    Launches the mean over ranks of the gradients of a `small` unit, packed
    in its order, as `payload` elements; every rank receives all of them.
    The buffer may be used after the `optgen.wait` on the token.

    Example:
    ```mlir
    %0 = optgen.all_reduce %small payload f32
    ```
  }];
}

def Optgen_ReduceScatterOp : Optgen_CollectiveOp<"reduce_scatter"> {
  let summary = "average a unit's packed gradients and give each rank its part";
  let description = [{
    Launches the mean over ranks of the gradients of a `flat` or `owned`
    unit, packed in its order (zero padded), as `payload` elements; rank r
    receives `counts[r]` elements, its part.

    Example:
    ```mlir
    %1 = optgen.reduce_scatter %owned payload f32
    ```
  }];
}

def Optgen_AllGatherOp : Optgen_CollectiveOp<"all_gather"> {
  let summary = "share every rank's updated part of a unit's parameters";
  let description = [{
    The counterpart of the unit's reduce-scatter: each rank gives its
    `counts[r]` updated elements and every rank ends with the whole packed
    buffer of parameters.

    Example:
    ```mlir
    %2 = optgen.all_gather %owned payload f32
    ```
  }];
}

def Optgen_PartialsOp : Optgen_Op<"partials", [HasParent<"ScheduleOp">]> {
  let summary = "this rank's part of a unit's contribution to the globals";
  let description = [{
    Adds what this rank holds of the unit (what its `optgen.compute` would
    update) to each partial reduction of the optimizer's globals
    (`optgen.reduce_params`), from the gradient its reduction gave, before
    any update; each element is counted once: a small unit, which every
    rank updates, is counted by the first rank of each shard group. A
    local unit contributes its own gradients.

    Example:
    ```mlir
    optgen.partials %flat
    ```
  }];
  let arguments = (ins Optgen_UnitType:$unit);
  let assemblyFormat = "$unit attr-dict";
}

def Optgen_GatherPartialsOp : Optgen_Op<"gather_partials", [HasParent<"ScheduleOp">]> {
  let summary = "share every rank's partial reductions of the globals";
  let description = [{
    Launches the all-gather, within the rank's shard group (every rank
    without shard groups), of each rank's partials, one f64 per
    `optgen.reduce_params` of the optimizer, once every unit's partials
    are in. Every group holds the same averaged gradients, so each group's
    partials make the same globals.

    Example:
    ```mlir
    %3 = optgen.gather_partials
    ```
  }];
  let results = (outs Optgen_TokenType:$token);
  let assemblyFormat = "attr-dict";
}

def Optgen_FinishGlobalsOp : Optgen_Op<"finish_globals", [HasParent<"ScheduleOp">]> {
  let summary = "combine the partials and compute every global";
  let description = [{
    Combines the gathered partials in rank order (a sum adds them, a
    maximum takes the largest), so that every rank has the same bits, and
    computes each global's value from them; every `optgen.compute` after it
    reads those values. In a step of local units alone it combines this
    rank's partials, with nothing to gather.

    Example:
    ```mlir
    optgen.finish_globals
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Optgen_WaitOp : Optgen_Op<"wait", [HasParent<"ScheduleOp">]> {
  let summary = "wait for a collective to complete";
  let description = [{
    Example:
    ```mlir
    optgen.wait %1
    ```
  }];
  let arguments = (ins Optgen_TokenType:$token);
  let assemblyFormat = "$token attr-dict";
}

def Optgen_ComputeOp : Optgen_Op<"compute", [HasParent<"ScheduleOp">]> {
  let summary = "update this rank's part of a unit";
  let description = [{
    Runs each parameter's rule on this rank's part of the unit (all of a
    small unit; the elements of its part of a flat unit; the matrices it
    owns of an owned unit), with the averaged gradients its reduction gave.

    Example:
    ```mlir
    optgen.compute %owned
    ```
  }];
  let arguments = (ins Optgen_UnitType:$unit);
  let assemblyFormat = "$unit attr-dict";
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def Optgen_KernelOp : Optgen_Op<"kernel", [
    RecursiveMemoryEffects, SingleBlockImplicitTerminator<"YieldOp">,
    NoRegionArguments]> {
  let summary = "elementwise ops and reductions fused into one loop";
  let description = [{
    The ops of the body run as one loop over the kernel's iteration space,
    each element read once and each result written once: every tensor in the
    body broadcasts to that space, and reductions accumulate over it. The
    body reads values from above (tensors and scalars); it yields the kernel's
    results, which may be tensors of the space (or broadcast-reduced shapes)
    and reduction results. `optgen-fuse-kernels` forms kernels; the emitters
    print each as a loop nest.

    On a device target `optgen-split-launches` rewrites the body into the
    `optgen.launch` ops that run it (the kernel's launch form): then the body
    holds only launches, in the order they run, and yields their results.

    Example:
    ```mlir
    %p1, %m1 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
      %0 = optgen.lerp %m, %g, %w : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %1 = optgen.mul %lr, %0 : f32, !optgen.tensor<*, f32>
      %2 = optgen.sub %p, %1 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      optgen.yield %2, %0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
    }
    ```
  }];
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "(`->` `(` type($results)^ `)`)? $body attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The shape every tensor of the body broadcasts to.
    SymbolicTensorType getIterationSpace();
    /// Whether the body is split into optgen.launch ops.
    bool isSplitIntoLaunches();
  }];
}

def Optgen_LaunchOp : Optgen_Op<"launch", [
    RecursiveMemoryEffects, SingleBlockImplicitTerminator<"YieldOp">,
    NoRegionArguments, HasParent<"KernelOp">]> {
  let summary = "one launch of a device kernel: which elements it visits and what it computes";
  let description = [{
    A device runs a kernel as launches, one after the other: each visits the
    kernel's space in its own way and computes a slice of the kernel's body
    (the ops its results need, cloned). Its results go to the memory its
    `optgen.buffers` names. `kind` says which elements a launch visits:

    - `space`: every element of the kernel's space. It stores the tensors
      it yields, and a full reduction it yields as one partial value per
      block of the launch, in the reduction's partial-sums slot.
    - `rows`, `cols`: one reduced value per row (a reduction along the last
      axis) or per column (along the first of two); `lines along %axis`:
      one of those two, as the host's axis says at run time.
    - `finish`: per member, the partial values of the full reductions it
      yields (results of the kernel's `space` launch), combined in a fixed
      order into each reduction's value.
    - `store`: copies the tensor it yields from its memory to where the
      rule's update keeps it.

    `shape` (`optgen-assign-launch-shapes`) is its grid and blocks.

    The verifier rejects a launch that reads memory an earlier launch of its
    kernel writes: the kernel's body reads its inputs as they were before the
    kernel, and a launch after the one updating them in place would read the
    new values (nanochat's Muon on CUDA computed its row norms from a
    momentum buffer that the space launch had already updated).

    Example:
    ```mlir
    %r, %m1 = optgen.kernel -> (!optgen.tensor<[m, 1], f32>, !optgen.tensor<[m, n], f32>) {
      %rows = optgen.launch rows -> (!optgen.tensor<[m, 1], f32>) {
        %0 = optgen.lerp %m, %g, %w : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
        %1 = optgen.reduce norm %0 along %c1 : !optgen.tensor<[m, n], f32>
        optgen.yield %1 : !optgen.tensor<[m, 1], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      %space = optgen.launch space -> (!optgen.tensor<[m, n], f32>) {
        %0 = optgen.lerp %m, %g, %w : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
        optgen.yield %0 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<state, 0>]}
      optgen.yield %rows, %space : !optgen.tensor<[m, 1], f32>, !optgen.tensor<[m, n], f32>
    } {optgen.buffers = [#optgen.buffer<workspace, 1>, #optgen.buffer<state, 0>]}
    ```
  }];
  let arguments = (ins Optgen_LaunchKind:$kind, Optional<I64>:$axis,
                       OptionalAttr<Optgen_LaunchShapeAttr>:$shape);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$kind (`along` $axis^)? (`->` `(` type($results)^ `)`)? $body attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The kernel this launch is one of.
    KernelOp getKernel() { return ::mlir::cast<KernelOp>((*this)->getParentOp()); }
  }];
}

#endif // OPTGEN_OPS_TD
