//===- Passes.td - Passes of optgen ---------------------------*- tablegen -*-===//

#ifndef OPTGEN_PASSES_TD
#define OPTGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseKernels : Pass<"optgen-fuse-kernels", "optgen::RuleOp"> {
  let summary = "Fuse elementwise chains and their reductions into kernels";
  let description = [{
    Within each rule, forms `optgen.kernel` ops: maximal runs of elementwise
    tensor ops over one iteration space, together with the reductions of
    values they compute, so that a kernel reads each input once and writes
    each result once (one AdamW step reads p, g, m, v and writes p, m, v).
    Scalar math that does not depend on tensor data is first hoisted above
    the tensor work, so it does not split kernels; scalar math on a
    reduction inside a run that nothing in the run reads moves after the
    kernel rather than ending it (a norm's scaling does not keep the row
    norms of the same values out of the kernel). Matrix products,
    transposes and control flow stay outside kernels; a value a reduction
    computes is used only after the kernel that computes it.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def LowerMatmuls : Pass<"optgen-lower-matmuls", "optgen::RuleOp"> {
  let summary = "Turn matrix products into gemms that read transposes in place";
  let description = [{
    Replaces each `optgen.matmul` by an `optgen.gemm` whose operands that
    were `optgen.transpose`s are read through the gemm's transpose flags,
    as a BLAS reads them, and erases the transposes nothing else uses: no
    transposed copy is made for a product.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def FoldGemmAccumulate : Pass<"optgen-fold-gemm-accumulate", "optgen::RuleOp"> {
  let summary = "Fold scaled sums with a product into the gemm's alpha and beta";
  let description = [{
    Rewrites `s * (A @ B) + t * C` (either order, either scale absent, and
    `-` for a negated scale) into one `optgen.gemm` with `alpha = s`,
    accumulating `C` with `beta = t`, when the product has no other use,
    `C` has the result's shape and element type, and the scales are float
    scalars: Polar Express's `b * A + c * (A @ A)` and `a * X + X @ B` each
    become one product instead of a product and a pass over its result.
    The sum is then rounded once, as cuBLAS's epilogue does.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def MarkSymmetric : Pass<"optgen-mark-symmetric", "optgen::RuleOp"> {
  let summary = "Mark products whose result is symmetric, so half is computed";
  let description = [{
    Marks `symmetric` each gemm that computes `X^T @ X` or `X @ X^T`, and
    each `A @ A` of a symmetric `A` (rewritten as `A @ A^T`, which it
    equals), when its accumulated `c`, if any, is symmetric too. A value is
    symmetric when a marked gemm computes it, or when elementwise math
    computes it from symmetric tensors and scalars. Targets compute a
    marked product's upper triangle (syrk) and mirror it: half the
    multiply-adds. Products whose result is smaller than `min-size` rows
    are left unmarked, where a full product is faster.
  }];
  let options = [
    Option<"minSize", "min-size", "int64_t", /*default=*/"0",
           "Mark only results of at least this many rows (concrete shapes)">,
  ];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def SetTarget : Pass<"optgen-set-target", "mlir::ModuleOp"> {
  let summary = "Put the target's description on the module";
  let description = [{
    Sets the module's `optgen.target` to the description of the target
    `target` names (`cpu`, `cuda`: the catalogue in TargetDescription.cpp),
    which every pass and printer after it reads: the accumulator type, how
    16-bit temporaries are stored, launch constants, what the target
    supports. Without `target`, a module that has a description keeps it
    and one without gets the CPU's. A module already described for another
    target is an error, and so is what the target cannot generate, at its
    op: a schedule with shard groups on a target without `shard_groups`,
    `on_nonfinite skip` on one without `skip_nonfinite`.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "The target: cpu or cuda (empty: the module's, else cpu)">,
  ];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def SetAccumulators : Pass<"optgen-set-accumulators"> {
  let summary = "Name the type every reduction accumulates in";
  let description = [{
    Sets `accumulator` on each `optgen.reduce` and `optgen.reduce_params`
    (a global's partials) that has none, in the op it runs on (a rule or a
    global), so that what printed code accumulates in is decided here, not
    by a printer: the target description's `accumulator`, f32 (the
    dialect's semantics, what GPUs use) or f64 (the CPU target's choice: on
    the CPU a wider sum costs little and stays closer to the fp64
    reference).
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def AssignHyperOffsets : Pass<"optgen-assign-hyper-offsets", "optgen::RuleOp"> {
  let summary = "Lay out a rule's hyperparameters for the runtime";
  let description = [{
    Sets `offset` on every `optgen.hyper` of a rule that has none: the
    hyperparameters in declaration order, a tuple taking one double per
    element. The runtime keeps a group's values in that array and passes it
    to each step; the printers read the offsets from here and print them
    into the rule's table, which is the runtime's only source of the layout.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def AssignDeviceScalars : Pass<"optgen-assign-device-scalars", "optgen::RuleOp"> {
  let summary = "Give a device target's kernel scalars and partial sums memory";
  let description = [{
    For targets whose kernels run on a device (the target description's
    `kind`; on a host it changes nothing): every scalar result of an
    `optgen.kernel` (a reduction's value, read by later kernels) gets a
    workspace slot of one element instead of `unit`, and every full
    reduction inside a kernel gets a slot of the target's
    `reduction_blocks` elements of its accumulator type, one per block of
    the kernel's launch, which a second pass sums in a fixed order: results
    do not depend on scheduling. Runs after `optgen-assign-buffers`; the
    slots are added to the rule's `optgen.workspace`, after its tensor
    slots.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def PlaceScalars : Pass<"optgen-place-scalars", "optgen::RuleOp"> {
  let summary = "Decide which scalars a device target's host computes";
  let description = [{
    On a device target (the target description's `kind`; on a host it
    changes nothing) marks `optgen.on_host` the scalars outside kernels
    that the host decides launches by (table loops' counts, branch
    conditions, the scales of matrix products, reduction and state axes
    that are not constants) and every scalar they are computed from; the
    others are computed on the device, in the prologue of each kernel that
    reads them, so that a step captured as a CUDA graph sees new values.
    A value the host needs that the device computes (the step count, a
    kernel's result, a global) is an error at its op, and so is a float
    hyperparameter (a captured graph would keep the value it had; integer
    hyperparameters make the executor capture again).
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def SplitLaunches : Pass<"optgen-split-launches", "optgen::RuleOp"> {
  let summary = "Split a device target's kernels into the launches that run them";
  let description = [{
    On a device target (on a host it changes nothing) rewrites each
    `optgen.kernel` into `optgen.launch` ops, each with the slice of the
    body its results need: one `rows` or `cols` launch for the reductions
    along a constant axis (normalised: one value per row, or per column of a
    matrix), one `lines` launch per axis only the host knows, a `space`
    launch for the tensors the kernel stores and its full reductions'
    partial sums, and a `finish` launch that combines those. The row and
    column launches run first: each recomputes its slice from the kernel's
    inputs, which the space launch may update in place, and the launch
    verifier rejects the other order. Each new parameter or state the
    update takes from other memory than its own is copied there by a
    kernel of one `store` launch, before the update, which then takes the
    copy.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def AssignLaunchShapes : Pass<"optgen-assign-launch-shapes", "optgen::RuleOp"> {
  let summary = "Decide the grid and blocks of every launch";
  let description = [{
    Sets `shape` (`#optgen.launch_shape`) on each `optgen.launch` from the
    target description: its threads per block; a block per row, a thread
    per column or one block per member as its kind says; and for a launch
    over the elements, blocks sized from the member's elements at most the
    description's `max_blocks_per_member` (an elementwise rule's kernels
    moving `vector_width` elements per thread and pass), or, with full
    reductions, at most the blocks their partial-sums slots hold (the
    description's `reduction_blocks`): a small tensor's reduction runs the
    few blocks it fills, and its finish combines only those.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def AssignBuffers : Pass<"optgen-assign-buffers", "optgen::RuleOp"> {
  let summary = "Decide the memory of every tensor value of a rule";
  let description = [{
    Gives every op that makes a tensor an `optgen.buffers` attribute (one
    `#optgen.buffer` per result) and the rule an `optgen.workspace`
    attribute (the shape and storage type of each workspace slot), so that
    a printer allocates nothing and decides nothing: the runtime allocates
    the workspace once, before the first step, and every temporary of a
    step lives in a slot of it.

    - A kernel writes a result into one of its inputs when that input has
      the result's exact shape, is not the gradient, and is not read after
      the kernel: a temporary, or the parameter's or a state's memory when
      the result is the value the update stores there (an AdamW step writes
      p, m and v in place).
    - A gemm writes into its accumulated `c` when `c` is a temporary read by
      nothing after it and is neither multiplied operand.
    - A table loop's carried value has a slot for the whole loop, its
      initial value's own when that is a temporary read by nothing after.
      When the body makes the next value in another workspace slot of the
      same type (extents known), the loop is double buffered: its
      `optgen.next_buffers` names that slot, and the two slots trade places
      at the end of each iteration instead of a copy.
    - An `if`'s result has a slot; a value a branch makes and yields is made
      in it (when it fits exactly), so that the branch copies nothing.
    - Everything else takes a free workspace slot of its exact shape and
      storage type, or a new one: a slot is free once the last value in it
      is dead (values inside a loop body are dead at the end of the
      iteration that made them).
    - A reduction along an axis inside a kernel gets a slot for its
      accumulator, of the accumulator's type (`optgen-set-accumulators`).
    Tensor values are stored as f32 whatever their element type (bf16 and
    f16 values held rounded), or, where the target description's `storage`
    is `narrow` (device targets, whose products read 16-bit matrices on
    tensor cores), bf16 and f16 values as their own type: half the memory
    traffic, and matrix products of the dtypes the spec names. A value is written over an input, or into
    a reserved slot, only where the storage types agree. Accumulators are
    stored as their type.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def BindParams : Pass<"optgen-bind-params", "optgen::OptimizerOp"> {
  let summary = "Bind each known parameter to its group";
  let description = [{
    For parameters known at compile time (`optgen.param`, from `optgen
    compile --shapes`), runs the planner the runtime runs, so both bind
    alike: a parameter belongs to the first group one of whose patterns
    matches its name and whose `where` accepts its shape. A parameter no
    group matches, or matched by a group whose rule takes another rank, is
    an error naming it.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def Bucket : Pass<"optgen-bucket", "optgen::OptimizerOp"> {
  let summary = "Bucket the same-shape parameters of each group";
  let description = [{
    Groups the bound parameters of each group by shape into `optgen.bucket`
    ops, the units a step runs (the planner's buckets): a group may hold any
    mix of shapes, and each shape is stepped together.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def SpecializeShapes : Pass<"optgen-specialize-shapes", "optgen::OptimizerOp"> {
  let summary = "Copy each bucket's rule with the bucket's shape";
  let description = [{
    For each `optgen.bucket`, makes (once per rule and shape) a copy of the
    group's rule whose parameter and gradient have the bucket's concrete
    shape, named `RULE_D0xD1` and marked `optgen.specializes = @RULE` (what
    holds for the rule for any shape, such as being elementwise, holds for
    the copy), points the bucket at it, and infers the
    copy's types (as `optgen-infer-shapes` does); canonicalization then
    folds its shape queries to constants and its compile-time `if`s to one
    branch.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def InferShapes : Pass<"optgen-infer-shapes", "optgen::RuleOp"> {
  let summary = "Recompute every value's shape and dtype from its operands";
  let description = [{
    Walks a rule in order and gives each op the result types the dialect's
    type rules infer from its current operands (states from the tensor they
    are shaped like, casts keeping their element type, `if` and loop results
    from what they yield). After specialisation and folding, `?` dimensions
    become known and shape errors that only concrete sizes reveal are
    reported at the spec line that causes them.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def PlanShards : Pass<"optgen-plan-shards", "optgen::OptimizerOp"> {
  let summary = "Plan the ZeRO-2 step of known parameters over N ranks";
  let description = [{
    For an optimizer that distributes zero2, with bucketed parameters,
    writes the step on `world-size` ranks as an `optgen.schedule`: one
    `optgen.unit` per unit of the runtime's sharding planner (the small
    tensors, the elementwise rules' packed parameters, each bucket of owned
    matrices) carrying exactly what the planner decided (packing order and
    offsets, each parameter's rule, owners, counts per rank), then for each
    unit its reduction, wait, update and gather, one unit after the other,
    with f32 payloads. With globals, each unit's reduction, wait and
    partials come first, then the partials' gather (on more than one
    rank), its wait and the globals' finish, then each unit's update and
    gather. With shard groups smaller than the world (the
    option, or the distribution's `shard_group`), the schedule's
    `group_size` says so and the units are planned for a group.
  }];
  let options = [
    Option<"worldSize", "world-size", "int", /*default=*/"1",
           "The number of ranks">,
    Option<"shardGroup", "shard-group", "int", /*default=*/"0",
           "Shard within groups of this many ranks (hybrid sharding; 0: "
           "the distribution's shard_group, or every rank)">,
  ];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def ScheduleCollectives : Pass<"optgen-schedule-collectives", "optgen::OptimizerOp"> {
  let summary = "Order a distributed step in three phases";
  let description = [{
    Reorders each `optgen.schedule` so that communication overlaps
    computation: after the units, every reduction is launched first; then, unit by unit, its wait, its update and the launch of its gather; last,
    the waits for the gathers. With globals, the units' waits come with
    their partials, and the partials' gather, its wait and the finish
    before the first update.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

#endif // OPTGEN_PASSES_TD
