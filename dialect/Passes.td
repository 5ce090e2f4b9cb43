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

#endif // OPTGEN_PASSES_TD
