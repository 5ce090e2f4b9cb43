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
    the tensor work, so it does not split kernels. Matrix products,
    transposes and control flow stay outside kernels; a value a reduction
    computes is used only after the kernel that computes it.
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
    shape, named `RULE_D0xD1`, points the bucket at it, and infers the
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
    with f32 payloads.
  }];
  let options = [
    Option<"worldSize", "world-size", "int", /*default=*/"1",
           "The number of ranks">,
  ];
  let dependentDialects = ["optgen::OptgenDialect"];
}

def ScheduleCollectives : Pass<"optgen-schedule-collectives", "optgen::OptimizerOp"> {
  let summary = "Order a distributed step in three phases";
  let description = [{
    Reorders each `optgen.schedule` so that communication overlaps
    computation: after the units, every reduction is launched first; then,
    unit by unit, its wait, its update and the launch of its gather; last,
    the waits for the gathers.
  }];
  let dependentDialects = ["optgen::OptgenDialect"];
}

#endif // OPTGEN_PASSES_TD
