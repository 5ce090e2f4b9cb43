//===- InterpreterStepper.cpp - Case replay on the interpreter ------------===//

#include "InterpreterStepper.h"

#include "optgen/Interpreter/Interpreter.h"
#include "optgen/runtime/CaseReplay.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/Planner.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace optgen;
using optgen::runtime::Error;

namespace {

class InterpreterStepper : public runtime::Stepper {
public:
  explicit InterpreterStepper(OptimizerOp optimizer) : optimizer(optimizer) {
    for (GroupOp group : optimizer.getBlock().getOps<GroupOp>())
      groups.push_back({group.getSymName().str(), rule(group.getRule().str()),
                        group, interp::groupHypers(group)});
    for (OnNonFiniteOp policy : optimizer.getBlock().getOps<OnNonFiniteOp>())
      skip = policy.getPolicy() == NonFinitePolicy::skip;
  }

  /// As the runtime skips (NonFinitePolicy::Skip): a step in which any
  /// gradient holds a NaN or an Inf changes nothing, and is counted.
  void skipNonFinite() override { skip = true; }
  int64_t skippedSteps() const override { return skip ? skipped : -1; }

  void addGroup(const std::string &name, const std::string &ruleName) override {
    for (const Group &g : groups)
      if (g.name == name)
        throw Error("group '" + name + "' exists already");
    groups.push_back({name, rule(ruleName), GroupOp(), {}});
  }

  void setHyper(const std::string &group, const std::string &name,
                const std::vector<double> &values) override {
    Group &g = find(group);
    HyperOp hyper = g.rule.lookupHyper(name);
    if (!hyper) {
      // As the runtime says it (OptimizerFront::setHyper).
      std::string known;
      for (HyperOp declared : g.rule.getBlock().getOps<HyperOp>())
        known += (known.empty() ? "" : ", ") + declared.getName().str();
      throw Error("group '" + group + "' (rule '" +
                  g.rule.getSymName().str() + "') has no hyperparameter '" +
                  name + "'" +
                  (known.empty() ? "; the rule has none"
                                 : "; its hyperparameters are " + known));
    }
    auto tuple = dyn_cast<TupleType>(hyper.getType());
    size_t size = tuple ? tuple.size() : 1;
    if (values.size() != size)
      throw Error("hyperparameter '" + name + "' takes " +
                  std::to_string(size) + " values, not " +
                  std::to_string(values.size()));
    // An f32 hyperparameter holds an f32, as in compiled code and as the
    // spec's own values (f32 attributes) are: a case's 0.9 is 0.899999976.
    auto asDeclared = [](Type type, double value) {
      return type.isF32() ? static_cast<double>(static_cast<float>(value))
                          : value;
    };
    if (tuple) {
      std::vector<double> members;
      for (auto [type, value] : llvm::zip(tuple.getTypes(), values))
        members.push_back(asDeclared(type, value));
      g.hypers[name] = members;
    } else if (hyper.getType().isInteger(64)) {
      g.hypers[name] = static_cast<int64_t>(values[0]);
    } else {
      g.hypers[name] = asDeclared(hyper.getType(), values[0]);
    }
  }

  void addParameter(const std::string &name, runtime::TensorView param,
                    runtime::TensorView grad,
                    const std::string &group) override {
    if (!group.empty())
      (void)find(group);
    params.push_back({name, param, grad, group, {}});
  }

  void finalize() override {
    std::vector<runtime::ParamDesc> descs;
    for (const Param &p : params)
      descs.push_back({p.name, p.param.shape, p.group});
    std::vector<runtime::GroupDesc> descGroups;
    for (Group &g : groups) {
      runtime::GroupDesc desc;
      desc.name = g.name;
      desc.rule = g.rule.getSymName().str();
      auto type = cast<SymbolicTensorType>(g.rule.getParam().getType());
      desc.rank = type.getAnyRank() ? -1 : static_cast<int>(type.getRank());
      if (g.op) {
        for (Attribute pattern : g.op.getPatterns())
          desc.patterns.push_back(cast<StringAttr>(pattern).str());
        if (!g.op.getPredicate().empty()) {
          GroupOp op = g.op;
          desc.where = [op](const std::vector<int64_t> &shape) mutable {
            FailureOr<bool> accepted = interp::evaluateWhere(op, shape);
            if (failed(accepted))
              throw Error("the 'where' of group '" + op.getSymName().str() +
                          "' failed");
            return *accepted;
          };
        }
      }
      descGroups.push_back(std::move(desc));
    }
    plan = runtime::planStep(descs, descGroups);
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].state.shape = params[i].param.shape;
      params[i].state.param = runtime::toDoubleVector(params[i].param);
    }
  }

  void step() override {
    // The globals first, from every parameter and gradient before any
    // update; a skipped step's too, as the runtime reports them.
    std::vector<interp::Value> values, gradients;
    Type f32 = Float32Type::get(optimizer.getContext());
    for (const Param &p : params) {
      values.push_back(
          interp::Value::tensor(p.state.shape, p.state.param, f32));
      gradients.push_back(interp::Value::tensor(
          p.state.shape, runtime::toDoubleVector(p.grad), f32));
    }
    std::vector<interp::GlobalInput> inputs;
    for (const runtime::Bucket &bucket : plan.buckets)
      for (size_t index : bucket.params)
        inputs.push_back({&values[index], &gradients[index]});
    FailureOr<interp::GlobalMap> computed =
        interp::evaluateGlobals(optimizer, inputs);
    if (failed(computed))
      throw Error("the interpreter failed on the globals of optimizer '" +
                  optimizer.getSymName().str() + "'");
    globals = std::move(*computed);
    if (skip)
      for (const interp::Value &gradient : gradients)
        for (double g : gradient.data)
          if (!std::isfinite(g)) {
            ++skipped;
            return;
          }
    for (const runtime::Bucket &bucket : plan.buckets) {
      Group &g = groups[bucket.group];
      for (size_t index : bucket.params) {
        Param &p = params[index];
        const std::vector<double> &grad = gradients[index].data;
        if (failed(interp::stepRule(g.rule, p.state, grad, g.hypers,
                                    globals)))
          throw Error("the interpreter failed on parameter '" + p.name +
                      "' (rule '" + g.rule.getSymName().str() + "')");
        for (size_t k = 0; k < p.state.param.size(); ++k)
          runtime::writeDouble(p.param, static_cast<int64_t>(k),
                               p.state.param[k]);
      }
    }
  }

  std::vector<std::pair<std::string, double>> globalValues() const override {
    std::vector<std::pair<std::string, double>> ordered;
    OptimizerOp spec = optimizer; // ops are handles: reading needs no const
    for (GlobalOp global : spec.getBlock().getOps<GlobalOp>())
      ordered.emplace_back(global.getSymName().str(),
                           globals.lookup(global.getSymName()));
    return ordered;
  }

private:
  struct Group {
    std::string name;
    RuleOp rule;
    GroupOp op; ///< null for groups a case adds
    interp::HyperMap hypers;
  };
  struct Param {
    std::string name;
    runtime::TensorView param, grad;
    std::string group;
    interp::ParamState state;
  };

  RuleOp rule(const std::string &name) {
    for (RuleOp r : optimizer.getBlock().getOps<RuleOp>())
      if (r.getSymName() == name)
        return r;
    throw Error("optimizer '" + optimizer.getSymName().str() +
                "' has no rule '" + name + "'");
  }
  Group &find(const std::string &name) {
    for (Group &g : groups)
      if (g.name == name)
        return g;
    throw Error("no group '" + name + "'");
  }

  OptimizerOp optimizer;
  std::vector<Group> groups;
  std::vector<Param> params;
  runtime::Plan plan;
  /// The last step's globals.
  interp::GlobalMap globals;
  bool skip = false;
  int64_t skipped = 0;
};

} // namespace

int optgen::runCaseOnInterpreter(OptimizerOp optimizer,
                                 const std::string &casePath,
                                 const std::string &outPath,
                                 const std::string &reportPath, int repeat,
                                 bool skipNonFinite, double tolerance) {
  runtime::CaseOptions options;
  options.skipNonFinite = skipNonFinite;
  options.tolerance = tolerance;
  options.casePath = casePath;
  options.outPath = outPath;
  options.reportPath = reportPath;
  options.target = "interpreter";
  options.repeat = repeat;
  return runtime::runCase(
      [&] {
        return std::unique_ptr<runtime::Stepper>(
            std::make_unique<InterpreterStepper>(optimizer));
      },
      options);
}
