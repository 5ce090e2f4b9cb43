//===- CApi.cpp - A C ABI over generated optimizers -----------------------===//
//
// Every function catches what the runtime throws and turns it into a status
// and a thread-local message: no exception crosses the boundary.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/CApi.h"

#include "optgen/runtime/CallbackCommunicator.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/Json.h"
#include "optgen/runtime/OptimizerFront.h"

#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

using namespace optgen::runtime;

struct optgen_optimizer {
  std::unique_ptr<OptimizerFront> front;
  /// What the last function returning a string returned.
  std::string text;
};

struct optgen_checkpoint {
  std::map<std::string, std::string> metadata;
  /// Exported: the tensors, which `views` point into. To import: empty.
  std::map<std::string, Tensor> owned;
  std::map<std::string, TensorView> views;
  std::string text;
};

namespace {

thread_local std::string lastError;

/// Runs `body`, turning an exception into OPTGEN_ERROR and its message.
template <typename Body> int guarded(Body &&body) {
  try {
    lastError.clear();
    body();
    return OPTGEN_OK;
  } catch (const std::exception &error) {
    lastError = error.what();
  } catch (...) {
    lastError = "an unknown exception";
  }
  return OPTGEN_ERROR;
}

/// The handles of each kind that are alive: created and not destroyed. A
/// handle is looked up here before it is used, so that one destroyed
/// already (a double destroy, a use after destroy), one of another kind or
/// one optgen never made is an error rather than a crash. (A magic word in
/// the handle would be read from freed memory, itself a use after free; a
/// handle freed and made anew at the same address cannot be told apart.)
template <typename T> struct LiveHandles {
  std::mutex mutex;
  std::unordered_set<const T *> handles;
  static LiveHandles &get() {
    static LiveHandles live;
    return live;
  }
  static void add(const T *handle) {
    std::lock_guard<std::mutex> lock(get().mutex);
    get().handles.insert(handle);
  }
  /// Whether `handle` was alive (it is not any more).
  static bool remove(const T *handle) {
    std::lock_guard<std::mutex> lock(get().mutex);
    return get().handles.erase(handle) > 0;
  }
  static bool contains(const T *handle) {
    std::lock_guard<std::mutex> lock(get().mutex);
    return get().handles.count(handle) > 0;
  }
};

const char *kindOf(const optgen_optimizer *) { return "optimizer"; }
const char *kindOf(const optgen_checkpoint *) { return "checkpoint"; }

/// Why a handle that is not null is not live.
template <typename T> std::string notLive(const T *handle) {
  return std::string("the ") + kindOf(handle) + " handle is not a live " +
         kindOf(handle) + ": it was destroyed already, or optgen never made it";
}

template <typename T> T &checked(T *handle, const char *what) {
  if (!handle)
    throw Error(std::string(what) + " is null");
  return *handle;
}

/// `handle`, once it is known to be a live one of its kind.
template <typename T> T &live(T *handle) {
  if (!handle)
    throw Error(std::string("the ") + kindOf(handle) + " is null");
  if (!LiveHandles<std::remove_const_t<T>>::contains(handle))
    throw Error(notLive(handle));
  return *handle;
}

/// Destroys a live handle; any other is the thread's last error (these
/// functions return nothing). Null is nothing to destroy, as for free().
template <typename T> void destroy(T *handle) {
  lastError.clear();
  if (!handle)
    return;
  if (!LiveHandles<T>::remove(handle)) {
    lastError = notLive(handle);
    return;
  }
  delete handle;
}

std::string text(const char *string, const char *what) {
  if (!string)
    throw Error(std::string(what) + " is null");
  return string;
}

TensorView viewOf(const optgen_tensor *tensor, const std::string &what) {
  if (!tensor)
    throw Error(what + " is null");
  if (tensor->dtype < OPTGEN_F32 || tensor->dtype > OPTGEN_I64)
    throw Error(what + " has dtype " + std::to_string(tensor->dtype) +
                ", which is none of the C ABI's (OPTGEN_F32 ... OPTGEN_I64)");
  if (tensor->device != OPTGEN_HOST && tensor->device != OPTGEN_CUDA)
    throw Error(what + " is on device " + std::to_string(tensor->device) +
                ", neither OPTGEN_HOST nor OPTGEN_CUDA");
  if (tensor->ndim < 0 || (tensor->ndim > 0 && !tensor->shape))
    throw Error(what + " has no shape");
  TensorView view;
  view.data = tensor->data;
  view.dtype = static_cast<DType>(tensor->dtype);
  view.device = static_cast<Device>(tensor->device);
  view.shape.assign(tensor->shape, tensor->shape + tensor->ndim);
  std::optional<int64_t> bytes = checkedByteSize(view.dtype, view.shape);
  if (!bytes)
    throw Error(what + " has shape " + formatShape(view.shape) +
                ", which is no tensor's");
  // Only a tensor without elements may have no memory.
  if (!view.data && *bytes > 0)
    throw Error(what + " has shape " + formatShape(view.shape) +
                " but no memory (its data is null)");
  return view;
}

/// The `count` values of hyperparameter `name` a caller gives.
std::vector<double> givenValues(const char *name, const double *values,
                                int64_t count) {
  if (count < 0 || (count > 0 && !values))
    throw Error("hyperparameter '" + text(name, "the name") +
                "' is given no values");
  return std::vector<double>(values, values + count);
}

optgen_tensor tensorOf(const TensorView &view) {
  return {view.data, static_cast<int32_t>(view.dtype),
          static_cast<int32_t>(view.device),
          static_cast<int32_t>(view.shape.size()), view.shape.data()};
}

std::string specJson(const OptimizerSpec &spec) {
  JsonArray rules, groups;
  for (const RuleSpec &rule : spec.rules) {
    JsonArray hypers, states;
    for (const HyperSpec &hyper : rule.hypers) {
      JsonValue defaults = nullptr;
      if (hyper.hasDefault) {
        JsonArray values;
        for (double v : hyper.defaults)
          values.push_back(v);
        defaults = std::move(values);
      }
      hypers.push_back(JsonObject{{"name", hyper.name},
                                  {"size", hyper.size},
                                  {"int", hyper.isInt},
                                  {"default", std::move(defaults)}});
    }
    for (const char *state : rule.states)
      states.push_back(state);
    rules.push_back(JsonObject{{"name", rule.name},
                               {"rank", rule.rank},
                               {"elementwise", rule.elementwise},
                               {"states", std::move(states)},
                               {"hypers", std::move(hypers)}});
  }
  for (const GroupSpec &group : spec.groups) {
    JsonArray patterns;
    for (const char *pattern : group.patterns)
      patterns.push_back(pattern);
    JsonObject settings;
    for (const auto &[name, values] : group.settings) {
      JsonArray list;
      for (double v : values)
        list.push_back(v);
      settings.emplace_back(name, std::move(list));
    }
    groups.push_back(JsonObject{{"name", group.name},
                                {"rule", spec.rules.at(group.rule).name},
                                {"patterns", std::move(patterns)},
                                {"where", group.where != nullptr},
                                {"settings", std::move(settings)}});
  }
  return writeJson(JsonObject{
      {"name", spec.name},
      {"distribution",
       spec.distribution == Distribution::Zero2 ? "zero2" : "none"},
      {"rules", std::move(rules)},
      {"groups", std::move(groups)}});
}

} // namespace

extern "C" {

int32_t optgen_capi_version(void) { return OPTGEN_CAPI_VERSION; }

const char *optgen_last_error(void) { return lastError.c_str(); }

int optgen_optimizer_create(optgen_factory factory, optgen_optimizer **out) {
  return guarded([&] {
    checked(out, "the handle's address");
    *out = nullptr;
    if (!factory)
      throw Error("the factory is null");
    auto optimizer = std::make_unique<optgen_optimizer>();
    optimizer->front.reset(static_cast<OptimizerFront *>(factory()));
    if (!optimizer->front)
      throw Error("the factory made no optimizer");
    LiveHandles<optgen_optimizer>::add(optimizer.get());
    *out = optimizer.release();
  });
}

void optgen_optimizer_destroy(optgen_optimizer *optimizer) {
  destroy(optimizer);
}

int optgen_spec_json(optgen_optimizer *optimizer, const char **json) {
  return guarded([&] {
    optgen_optimizer &o = live(optimizer);
    o.text = specJson(o.front->spec());
    checked(json, "the result's address") = o.text.c_str();
  });
}

int optgen_add_group(optgen_optimizer *optimizer, const char *name,
                     const char *rule) {
  return guarded([&] {
    live(optimizer)
        .front->addGroup(text(name, "the group's name"),
                         text(rule, "the group's rule"));
  });
}

int optgen_add_parameter(optgen_optimizer *optimizer, const char *name,
                         const optgen_tensor *param, const optgen_tensor *grad,
                         const char *group) {
  return guarded([&] {
    optgen_optimizer &o = live(optimizer);
    std::string paramName = text(name, "the parameter's name");
    TensorView p = viewOf(param, "parameter '" + paramName + "'");
    TensorView g = viewOf(grad, "the gradient of '" + paramName + "'");
    if (group && *group)
      o.front->addParameter(paramName, std::move(p), std::move(g), group);
    else
      o.front->addParameter(paramName, std::move(p), std::move(g));
  });
}

int optgen_set_collectives(optgen_optimizer *optimizer,
                           const optgen_collectives *collectives) {
  return guarded([&] {
    live(optimizer)
        .front->setCommunicator(makeCallbackCommunicator(
            checked(collectives, "the collectives table")));
  });
}

int optgen_skip_nonfinite(optgen_optimizer *optimizer) {
  return guarded([&] {
    live(optimizer)
        .front->setNonFinitePolicy(NonFinitePolicy::Skip);
  });
}

int optgen_finalize(optgen_optimizer *optimizer) {
  return guarded([&] { live(optimizer).front->finalize(); });
}

int optgen_set_hyper(optgen_optimizer *optimizer, const char *group,
                     const char *name, const double *values, int64_t count) {
  return guarded([&] {
    live(optimizer).front->setHyper(text(group, "the group"),
                                    text(name, "the name"),
                                    givenValues(name, values, count));
  });
}

int optgen_check_hyper(optgen_optimizer *optimizer, const char *group,
                       const char *name, const double *values, int64_t count) {
  return guarded([&] {
    live(optimizer).front->checkHyper(text(group, "the group"),
                                      text(name, "the name"),
                                      givenValues(name, values, count));
  });
}

int optgen_get_hyper(optgen_optimizer *optimizer, const char *group,
                     const char *name, double *values, int64_t capacity,
                     int64_t *count) {
  return guarded([&] {
    std::vector<double> found =
        live(optimizer)
            .front->hyperValues(text(group, "the group"),
                                text(name, "the name"));
    checked(count, "the count's address") =
        static_cast<int64_t>(found.size());
    if (capacity > 0 && !values)
      throw Error("the values' address is null");
    for (size_t i = 0; i < found.size() && static_cast<int64_t>(i) < capacity;
         ++i)
      values[i] = found[i];
  });
}

int optgen_rebind(optgen_optimizer *optimizer, const char *name,
                  const optgen_tensor *param, const optgen_tensor *grad) {
  return guarded([&] {
    std::string paramName = text(name, "the parameter's name");
    live(optimizer)
        .front->rebind(paramName,
                       viewOf(param, "parameter '" + paramName + "'"),
                       viewOf(grad, "the gradient of '" + paramName + "'"));
  });
}

int optgen_step(optgen_optimizer *optimizer) {
  return guarded([&] { live(optimizer).front->step(); });
}

int optgen_group_of(optgen_optimizer *optimizer, const char *param,
                    const char **group) {
  return guarded([&] {
    optgen_optimizer &o = live(optimizer);
    o.text = o.front->groupOf(text(param, "the parameter's name"));
    checked(group, "the result's address") = o.text.c_str();
  });
}

int optgen_step_count(optgen_optimizer *optimizer, const char *param,
                      int64_t *steps) {
  return guarded([&] {
    checked(steps, "the result's address") =
        live(optimizer)
            .front->stepCount(text(param, "the parameter's name"));
  });
}

int optgen_skipped_steps(optgen_optimizer *optimizer, int64_t *steps) {
  return guarded([&] {
    checked(steps, "the result's address") =
        live(optimizer).front->skippedSteps();
  });
}

int optgen_global_value(optgen_optimizer *optimizer, const char *name,
                        double *value) {
  return guarded([&] {
    checked(value, "the result's address") =
        live(optimizer)
            .front->globalValue(text(name, "the global's name"));
  });
}

int optgen_state_bytes(optgen_optimizer *optimizer, int64_t *bytes) {
  return guarded([&] {
    checked(bytes, "the result's address") =
        live(optimizer).front->stateBytes();
  });
}

int optgen_describe_plan(optgen_optimizer *optimizer, const char **plan) {
  return guarded([&] {
    optgen_optimizer &o = live(optimizer);
    o.text = o.front->describePlan();
    checked(plan, "the result's address") = o.text.c_str();
  });
}

int optgen_save_state(optgen_optimizer *optimizer, const char *path) {
  return guarded([&] {
    live(optimizer)
        .front->saveState(text(path, "the path"));
  });
}

int optgen_load_state(optgen_optimizer *optimizer, const char *path) {
  return guarded([&] {
    live(optimizer)
        .front->loadState(text(path, "the path"));
  });
}

int optgen_export_state(optgen_optimizer *optimizer, optgen_checkpoint **out) {
  return guarded([&] {
    checked(out, "the checkpoint's address");
    *out = nullptr;
    OptimizerFront::Checkpoint exported =
        live(optimizer).front->exportState();
    auto checkpoint = std::make_unique<optgen_checkpoint>();
    checkpoint->metadata = std::move(exported.metadata);
    checkpoint->owned = std::move(exported.tensors);
    for (auto &[name, tensor] : checkpoint->owned)
      checkpoint->views.emplace(name, tensor.view());
    LiveHandles<optgen_checkpoint>::add(checkpoint.get());
    *out = checkpoint.release();
  });
}

int optgen_import_state(optgen_optimizer *optimizer,
                        const optgen_checkpoint *checkpoint,
                        const char *source) {
  return guarded([&] {
    const optgen_checkpoint &c = live(checkpoint);
    live(optimizer)
        .front->importState(c.metadata, c.views,
                            source && *source ? source : "the checkpoint");
  });
}

optgen_checkpoint *optgen_checkpoint_create(void) {
  auto *checkpoint = new optgen_checkpoint();
  LiveHandles<optgen_checkpoint>::add(checkpoint);
  return checkpoint;
}

void optgen_checkpoint_destroy(optgen_checkpoint *checkpoint) {
  destroy(checkpoint);
}

int optgen_checkpoint_metadata(optgen_checkpoint *checkpoint,
                               const char **json) {
  return guarded([&] {
    optgen_checkpoint &c = live(checkpoint);
    JsonObject object;
    for (const auto &[key, value] : c.metadata)
      object.emplace_back(key, value);
    c.text = writeJson(std::move(object));
    checked(json, "the result's address") = c.text.c_str();
  });
}

int optgen_checkpoint_set_metadata(optgen_checkpoint *checkpoint,
                                   const char *json) {
  return guarded([&] {
    optgen_checkpoint &c = live(checkpoint);
    JsonValue object =
        parseJson(text(json, "the metadata"), "the checkpoint's metadata");
    if (!object.isObject())
      throw Error("the checkpoint's metadata is not a JSON object");
    std::map<std::string, std::string> metadata;
    for (const auto &[key, value] : object.asObject()) {
      if (!value.isString())
        throw Error("the checkpoint's metadata '" + key +
                    "' is not a string");
      metadata[key] = value.asString();
    }
    c.metadata = std::move(metadata);
  });
}

int64_t optgen_checkpoint_tensor_count(const optgen_checkpoint *checkpoint) {
  int64_t count = -1;
  guarded([&] { count = static_cast<int64_t>(live(checkpoint).views.size()); });
  return count;
}

int optgen_checkpoint_tensor(const optgen_checkpoint *checkpoint,
                             int64_t index, const char **name,
                             optgen_tensor *tensor) {
  return guarded([&] {
    const optgen_checkpoint &c = live(checkpoint);
    if (index < 0 || index >= static_cast<int64_t>(c.views.size()))
      throw Error("the checkpoint has " + std::to_string(c.views.size()) +
                  " tensors, not one at " + std::to_string(index));
    auto it = std::next(c.views.begin(), index);
    checked(name, "the name's address") = it->first.c_str();
    checked(tensor, "the tensor's address") = tensorOf(it->second);
  });
}

int optgen_checkpoint_add_tensor(optgen_checkpoint *checkpoint,
                                 const char *name,
                                 const optgen_tensor *tensor) {
  return guarded([&] {
    optgen_checkpoint &c = live(checkpoint);
    std::string tensorName = text(name, "the tensor's name");
    if (!c.owned.empty())
      throw Error("tensors are added to a checkpoint to import, not to an "
                  "exported one");
    if (!c.views
             .emplace(tensorName,
                      viewOf(tensor, "tensor '" + tensorName + "'"))
             .second)
      throw Error("the checkpoint has tensor '" + tensorName + "' already");
  });
}

} // extern "C"
