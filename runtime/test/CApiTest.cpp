//===- CApiTest.cpp - The C ABI over generated optimizers -----------------===//
//
// The C ABI (CApi.h) against the C++ front it wraps: the same steps give
// the same bits; errors come back as a status and a message, never as an
// exception; a caller's collectives (here C callbacks over in-process
// ranks) run the distributed step, which ends with one rank's bits; memory
// moved between steps (rebind) and state exported at N ranks and imported
// at M continue exactly where the run was.
//
//===----------------------------------------------------------------------===//

#include "DistributedScenario.h"
#include "InProcessRanks.h"

#include "optgen/runtime/CApi.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/InProcessCommunicator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace optgen::runtime;
using namespace optgen::runtime::test;

namespace {

/// What a generated optimizer's `optgen_new_NAME` is.
void *newMixed() {
  return static_cast<OptimizerFront *>(new Optimizer(spec()));
}

/// The C ABI's view of a test parameter's value or gradient.
struct CTensor {
  optgen_tensor tensor;
  std::vector<int64_t> shape;
  CTensor(void *data, DType dtype, std::vector<int64_t> extents)
      : shape(std::move(extents)) {
    tensor = {data, static_cast<int32_t>(dtype), OPTGEN_HOST,
              static_cast<int32_t>(shape.size()), shape.data()};
  }
};

#define ASSERT_OK(call) ASSERT_EQ((call), OPTGEN_OK) << optgen_last_error()

/// The collectives table over one in-process rank (CallbackCommunicator's
/// caller): each request is the communicator's own.
struct InProcessTable {
  Communicator *communicator;
  std::string error;
  bool failGathers = false;

  static InProcessTable &of(void *context) {
    return *static_cast<InProcessTable *>(context);
  }
  template <typename F> static int launch(void *context, void **request, F f) {
    InProcessTable &self = of(context);
    try {
      *request = new RequestPtr(f(*self.communicator));
      return 0;
    } catch (const std::exception &e) {
      self.error = e.what();
      return 1;
    }
  }
  static std::vector<int64_t> countsOf(void *context, const int64_t *counts) {
    return {counts, counts + of(context).communicator->size()};
  }

  optgen_collectives table() {
    optgen_collectives t{};
    t.context = this;
    t.rank = communicator->rank();
    t.size = communicator->size();
    t.all_reduce_mean = [](void *context, void *data, int64_t count,
                           int32_t dtype, void **request) {
      return launch(context, request, [&](Communicator &c) {
        return c.allReduceMean(data, count, static_cast<DType>(dtype));
      });
    };
    t.reduce_scatter_mean = [](void *context, const void *send, void *recv,
                               const int64_t *counts, int32_t dtype,
                               void **request) {
      return launch(context, request, [&](Communicator &c) {
        return c.reduceScatterMean(send, recv, countsOf(context, counts),
                                   static_cast<DType>(dtype));
      });
    };
    t.all_gather = [](void *context, const void *send, void *recv,
                      const int64_t *counts, int32_t dtype, void **request) {
      if (of(context).failGathers) {
        of(context).error = "the network is down";
        return 1;
      }
      return launch(context, request, [&](Communicator &c) {
        return c.allGather(send, recv, countsOf(context, counts),
                           static_cast<DType>(dtype));
      });
    };
    t.wait = [](void *context, void *request) {
      std::unique_ptr<RequestPtr> pending(static_cast<RequestPtr *>(request));
      try {
        (*pending)->wait();
        return 0;
      } catch (const std::exception &e) {
        of(context).error = e.what();
        return 1;
      }
    };
    t.last_error = [](void *context) { return of(context).error.c_str(); };
    return t;
  }
};

/// One rank of a run through the C ABI: its optimizer, its model and its
/// collectives.
struct CRank {
  optgen_optimizer *optimizer = nullptr;
  std::vector<Param> params = model(DType::F32);
  InProcessTable table{nullptr, "", false};
  ~CRank() { optgen_optimizer_destroy(optimizer); }

  void create(Communicator *communicator) {
    ASSERT_OK(optgen_optimizer_create(newMixed, &optimizer));
    if (communicator) {
      table.communicator = communicator;
      optgen_collectives collectives = table.table();
      ASSERT_OK(optgen_set_collectives(optimizer, &collectives));
    }
    for (Param &p : params) {
      CTensor value(p.value.data(), DType::F32, p.shape);
      CTensor grad(p.grad.data(), DType::F32, p.shape);
      ASSERT_OK(optgen_add_parameter(optimizer, p.name.c_str(), &value.tensor,
                                     &grad.tensor, nullptr));
    }
  }
};

/// The model after `steps` steps of one C++ optimizer (the reference).
std::vector<Param> steppedAlone(int steps) {
  std::vector<Param> alone = model(DType::F32);
  Optimizer reference(spec());
  addAll(reference, alone, DType::F32);
  reference.finalize();
  for (int s = 0; s < steps; ++s) {
    setGrads(alone, DType::F32, s, 0.0f);
    reference.step();
  }
  return alone;
}

TEST(CApiTest, StepsAsTheFrontDoes) {
  CRank rank;
  rank.create(nullptr);
  ASSERT_OK(optgen_finalize(rank.optimizer));
  double lr = 0.125;
  ASSERT_OK(optgen_set_hyper(rank.optimizer, "rest", "lr", &lr, 1));
  for (int s = 0; s < 3; ++s) {
    setGrads(rank.params, DType::F32, s, 0.0f);
    ASSERT_OK(optgen_step(rank.optimizer));
  }
  std::vector<Param> alone = model(DType::F32);
  Optimizer reference(spec());
  addAll(reference, alone, DType::F32);
  reference.finalize();
  reference.setHyper("rest", "lr", lr);
  for (int s = 0; s < 3; ++s) {
    setGrads(alone, DType::F32, s, 0.0f);
    reference.step();
  }
  for (size_t p = 0; p < alone.size(); ++p)
    EXPECT_TRUE(rank.params[p].value == alone[p].value) << alone[p].name;

  const char *group = nullptr;
  ASSERT_OK(optgen_group_of(rank.optimizer, "w0", &group));
  EXPECT_STREQ(group, "matrices");
  int64_t steps = 0;
  ASSERT_OK(optgen_step_count(rank.optimizer, "bias", &steps));
  EXPECT_EQ(steps, 3);
  double values[2] = {0, 0};
  int64_t count = 0;
  ASSERT_OK(optgen_get_hyper(rank.optimizer, "rest", "lr", values, 2, &count));
  EXPECT_EQ(count, 1);
  EXPECT_EQ(values[0], lr);
  const char *json = nullptr;
  ASSERT_OK(optgen_spec_json(rank.optimizer, &json));
  EXPECT_NE(std::string(json).find(
                R"({"name":"rest","rule":"sgd","patterns":["*"],"where":false)"),
            std::string::npos)
      << json;
}

TEST(CApiTest, ErrorsAreStatusesWithMessages) {
  optgen_optimizer *optimizer = nullptr;
  ASSERT_OK(optgen_optimizer_create(newMixed, &optimizer));
  EXPECT_EQ(optgen_step(optimizer), OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(), "step() before finalize()");

  std::vector<float> w(4), g(4);
  CTensor value(w.data(), DType::F32, {2, 2});
  CTensor grad(g.data(), DType::F32, {2, 2});
  value.tensor.dtype = 9;
  EXPECT_EQ(optgen_add_parameter(optimizer, "w0", &value.tensor, &grad.tensor,
                                 nullptr),
            OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(),
               "parameter 'w0' has dtype 9, which is none of the C ABI's "
               "(OPTGEN_F32 ... OPTGEN_I64)");
  value.tensor.dtype = OPTGEN_F32;
  EXPECT_EQ(optgen_add_parameter(optimizer, "w0", &value.tensor, &grad.tensor,
                                 "nope"),
            OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(), "optimizer 'mixed' has no group 'nope'");
  double lr = 1;
  EXPECT_EQ(optgen_set_hyper(optimizer, "rest", "beta", &lr, 1), OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(),
               "group 'rest' (rule 'sgd') has no hyperparameter 'beta'; its "
               "hyperparameters are lr");
  double norm = 0;
  EXPECT_EQ(optgen_global_value(optimizer, "grad_norm", &norm), OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(),
               "optimizer 'mixed' has no global 'grad_norm'; it has none");
  // A success clears the message.
  ASSERT_OK(optgen_set_hyper(optimizer, "rest", "lr", &lr, 1));
  EXPECT_STREQ(optgen_last_error(), "");
  optgen_optimizer_destroy(optimizer);
  EXPECT_EQ(optgen_optimizer_create(nullptr, &optimizer), OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(), "the factory is null");
  EXPECT_EQ(optimizer, nullptr);
}

TEST(CApiTest, HandlesAndMemoryAreChecked) {
  optgen_optimizer *optimizer = nullptr;
  ASSERT_OK(optgen_optimizer_create(newMixed, &optimizer));
  // A tensor with elements and no memory (which a step, or an import,
  // would have read at address 0).
  std::vector<float> g(4);
  CTensor nowhere(nullptr, DType::F32, {2, 2});
  CTensor grad(g.data(), DType::F32, {2, 2});
  EXPECT_EQ(optgen_add_parameter(optimizer, "w0", &nowhere.tensor,
                                 &grad.tensor, nullptr),
            OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(), "parameter 'w0' has shape [2, 2] but no "
                                    "memory (its data is null)");
  optgen_checkpoint *checkpoint = optgen_checkpoint_create();
  EXPECT_EQ(optgen_checkpoint_add_tensor(checkpoint, "state/w0/m",
                                         &nowhere.tensor),
            OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(), "tensor 'state/w0/m' has shape [2, 2] but "
                                    "no memory (its data is null)");
  // Without elements, no memory is needed.
  CTensor empty(nullptr, DType::F32, {0, 2});
  ASSERT_OK(optgen_checkpoint_add_tensor(checkpoint, "state/w0/v",
                                         &empty.tensor));

  // A handle of the other kind, and handles destroyed already: errors,
  // not crashes (as a double free or a use after free would be).
  EXPECT_EQ(optgen_step(reinterpret_cast<optgen_optimizer *>(checkpoint)),
            OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(),
               "the optimizer handle is not a live optimizer: it was "
               "destroyed already, or optgen never made it");
  optgen_checkpoint_destroy(checkpoint);
  EXPECT_STREQ(optgen_last_error(), "");
  optgen_checkpoint_destroy(checkpoint);
  EXPECT_STREQ(optgen_last_error(),
               "the checkpoint handle is not a live checkpoint: it was "
               "destroyed already, or optgen never made it");
  EXPECT_EQ(optgen_checkpoint_tensor_count(checkpoint), -1);
  EXPECT_EQ(optgen_checkpoint_add_tensor(checkpoint, "state/w0/v",
                                         &empty.tensor),
            OPTGEN_ERROR);
  optgen_optimizer_destroy(optimizer);
  EXPECT_EQ(optgen_step(optimizer), OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(),
               "the optimizer handle is not a live optimizer: it was "
               "destroyed already, or optgen never made it");
  optgen_optimizer_destroy(optimizer);
  EXPECT_STREQ(optgen_last_error(),
               "the optimizer handle is not a live optimizer: it was "
               "destroyed already, or optgen never made it");
  optgen_optimizer_destroy(nullptr);
  EXPECT_STREQ(optgen_last_error(), "");
}

TEST(CApiTest, RebindingEveryStepEndsWhereFixedMemoryDoes) {
  CRank rank;
  rank.create(nullptr);
  ASSERT_OK(optgen_finalize(rank.optimizer));
  for (int s = 0; s < 3; ++s) {
    // Every step, the values and the gradients in memory of their own, as
    // PyTorch's .grad after zero_grad(set_to_none=True).
    setGrads(rank.params, DType::F32, s, 0.0f);
    for (Param &p : rank.params) {
      std::vector<unsigned char> value = p.value, grad = p.grad;
      p.value.swap(value);
      p.grad.swap(grad);
      CTensor v(p.value.data(), DType::F32, p.shape);
      CTensor g(p.grad.data(), DType::F32, p.shape);
      ASSERT_OK(
          optgen_rebind(rank.optimizer, p.name.c_str(), &v.tensor, &g.tensor));
    }
    ASSERT_OK(optgen_step(rank.optimizer));
  }
  std::vector<Param> alone = steppedAlone(3);
  for (size_t p = 0; p < alone.size(); ++p)
    EXPECT_TRUE(rank.params[p].value == alone[p].value) << alone[p].name;

  Param &w = rank.params[0];
  CTensor wrong(w.value.data(), DType::F32, {w.shape[1], w.shape[0]});
  CTensor grad(w.grad.data(), DType::F32, w.shape);
  EXPECT_EQ(optgen_rebind(rank.optimizer, "w0", &wrong.tensor, &grad.tensor),
            OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(),
               "parameter 'w0' moves to F32 [12, 8] in host memory, but it "
               "was registered as F32 [8, 12] in host memory");
}

class CApiRanks : public testing::TestWithParam<int> {};

TEST_P(CApiRanks, TheCallersCollectivesRunTheDistributedStep) {
  int size = GetParam();
  std::vector<CRank> ranks(static_cast<size_t>(size));
  std::vector<std::string> errors = onRanks(size, [&](int r, Communicator &c) {
    CRank &rank = ranks[r];
    rank.create(&c);
    if (optgen_finalize(rank.optimizer) != OPTGEN_OK)
      throw Error(optgen_last_error());
    for (int s = 0; s < 3; ++s) {
      setGrads(rank.params, DType::F32, s, rankOffset(r, size));
      if (optgen_step(rank.optimizer) != OPTGEN_OK)
        throw Error(optgen_last_error());
    }
  });
  std::vector<Param> alone = steppedAlone(3);
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    for (size_t p = 0; p < alone.size(); ++p)
      EXPECT_TRUE(ranks[r].params[p].value == alone[p].value)
          << "'" << alone[p].name << "' on rank " << r
          << " differs from one rank's";
  }
}

TEST_P(CApiRanks, StateExportedAtNRanksImportsAtOneAndAtThree) {
  int size = GetParam();
  // Two steps at N ranks, exported on every rank.
  std::vector<CRank> ranks(static_cast<size_t>(size));
  std::vector<optgen_checkpoint *> exported(static_cast<size_t>(size));
  std::vector<std::string> errors = onRanks(size, [&](int r, Communicator &c) {
    CRank &rank = ranks[r];
    rank.create(&c);
    if (optgen_finalize(rank.optimizer) != OPTGEN_OK)
      throw Error(optgen_last_error());
    for (int s = 0; s < 2; ++s) {
      setGrads(rank.params, DType::F32, s, rankOffset(r, size));
      if (optgen_step(rank.optimizer) != OPTGEN_OK)
        throw Error(optgen_last_error());
    }
    if (optgen_export_state(rank.optimizer, &exported[r]) != OPTGEN_OK)
      throw Error(optgen_last_error());
  });
  for (int r = 0; r < size; ++r)
    ASSERT_EQ(errors[r], "") << "rank " << r;
  // Every rank holds all of it, the same.
  for (int r = 1; r < size; ++r) {
    ASSERT_EQ(optgen_checkpoint_tensor_count(exported[r]),
              optgen_checkpoint_tensor_count(exported[0]));
    for (int64_t t = 0; t < optgen_checkpoint_tensor_count(exported[0]); ++t) {
      const char *a = nullptr, *b = nullptr;
      optgen_tensor x{}, y{};
      ASSERT_OK(optgen_checkpoint_tensor(exported[0], t, &a, &x));
      ASSERT_OK(optgen_checkpoint_tensor(exported[r], t, &b, &y));
      ASSERT_STREQ(a, b);
      TensorView vx{x.data, static_cast<DType>(x.dtype), {x.shape, x.shape + x.ndim}};
      TensorView vy{y.data, static_cast<DType>(y.dtype), {y.shape, y.shape + y.ndim}};
      ASSERT_EQ(vx.shape, vy.shape) << a;
      EXPECT_EQ(std::memcmp(x.data, y.data, vx.byteSize()), 0) << a;
    }
  }

  // As a program keeps it: the metadata as JSON, the tensors copied out.
  const char *json = nullptr;
  ASSERT_OK(optgen_checkpoint_metadata(exported[0], &json));
  std::string metadata = json;
  std::vector<std::string> names;
  std::vector<Tensor> copies;
  for (int64_t t = 0; t < optgen_checkpoint_tensor_count(exported[0]); ++t) {
    const char *name = nullptr;
    optgen_tensor x{};
    ASSERT_OK(optgen_checkpoint_tensor(exported[0], t, &name, &x));
    names.push_back(name);
    copies.push_back(Tensor::copyOf(
        {x.data, static_cast<DType>(x.dtype), {x.shape, x.shape + x.ndim}}));
  }
  for (optgen_checkpoint *checkpoint : exported)
    optgen_checkpoint_destroy(checkpoint);

  std::vector<Param> alone = steppedAlone(4);
  for (int resumed : {1, 3}) {
    std::vector<CRank> later(static_cast<size_t>(resumed));
    errors = onRanks(resumed, [&](int r, Communicator &c) {
      CRank &rank = later[r];
      // The parameters as they were after two steps.
      rank.params = ranks[0].params;
      for (Param &p : rank.params)
        std::fill(p.grad.begin(), p.grad.end(), 0);
      rank.create(&c);
      if (optgen_finalize(rank.optimizer) != OPTGEN_OK)
        throw Error(optgen_last_error());
      optgen_checkpoint *checkpoint = optgen_checkpoint_create();
      std::vector<CTensor> views;
      views.reserve(copies.size());
      bool ok = optgen_checkpoint_set_metadata(checkpoint, metadata.c_str()) ==
                OPTGEN_OK;
      for (size_t t = 0; ok && t < copies.size(); ++t) {
        views.emplace_back(copies[t].bytes.data(), copies[t].dtype,
                           copies[t].shape);
        ok = optgen_checkpoint_add_tensor(checkpoint, names[t].c_str(),
                                          &views.back().tensor) == OPTGEN_OK;
      }
      ok = ok && optgen_import_state(rank.optimizer, checkpoint,
                                     "the state dict") == OPTGEN_OK;
      optgen_checkpoint_destroy(checkpoint);
      if (!ok)
        throw Error(optgen_last_error());
      for (int s = 2; s < 4; ++s) {
        setGrads(rank.params, DType::F32, s, rankOffset(r, resumed));
        if (optgen_step(rank.optimizer) != OPTGEN_OK)
          throw Error(optgen_last_error());
      }
    });
    for (int r = 0; r < resumed; ++r) {
      EXPECT_EQ(errors[r], "") << resumed << " ranks, rank " << r;
      for (size_t p = 0; p < alone.size(); ++p)
        EXPECT_TRUE(later[r].params[p].value == alone[p].value)
            << "'" << alone[p].name << "', saved at " << size
            << " ranks, resumed at " << resumed << ", rank " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CApiRanks, testing::Values(1, 2, 3),
                         [](const testing::TestParamInfo<int> &info) {
                           return "N" + std::to_string(info.param);
                         });

TEST(CApiTest, ACollectiveThatFailsSaysWhyOnEveryRank) {
  std::vector<CRank> ranks(2);
  std::vector<std::string> errors = onRanks(2, [&](int r, Communicator &c) {
    CRank &rank = ranks[r];
    rank.create(&c);
    rank.table.failGathers = true; // finalize()'s agreement gathers
    if (optgen_finalize(rank.optimizer) != OPTGEN_OK)
      throw Error(optgen_last_error());
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(errors[r].find("the caller's all_gather failed: the network is "
                             "down"),
              std::string::npos)
        << "rank " << r << ": " << errors[r];
}

TEST(CApiTest, AnImportedStateIsCheckedAsAFileIs) {
  CRank rank;
  rank.create(nullptr);
  ASSERT_OK(optgen_finalize(rank.optimizer));
  setGrads(rank.params, DType::F32, 0, 0.0f);
  ASSERT_OK(optgen_step(rank.optimizer));
  optgen_checkpoint *exported = nullptr;
  ASSERT_OK(optgen_export_state(rank.optimizer, &exported));
  const char *json = nullptr;
  ASSERT_OK(optgen_checkpoint_metadata(exported, &json));
  // A checkpoint that lacks one state tensor.
  optgen_checkpoint *partial = optgen_checkpoint_create();
  ASSERT_OK(optgen_checkpoint_set_metadata(partial, json));
  for (int64_t t = 0; t < optgen_checkpoint_tensor_count(exported); ++t) {
    const char *name = nullptr;
    optgen_tensor x{};
    ASSERT_OK(optgen_checkpoint_tensor(exported, t, &name, &x));
    if (std::string(name) != "state/bias/m") {
      ASSERT_OK(optgen_checkpoint_add_tensor(partial, name, &x));
    }
  }
  // The checksum covers every tensor: a checkpoint without one of them,
  // or with one bit of one changed, no longer holds what it says.
  EXPECT_EQ(optgen_import_state(rank.optimizer, partial, "the state dict"),
            OPTGEN_ERROR);
  EXPECT_EQ(std::string(optgen_last_error())
                .rfind("the state dict is refused: it is corrupted: it says "
                       "its checksum is '",
                       0),
            0u)
      << optgen_last_error();
  optgen_tensor first{};
  const char *firstName = nullptr;
  ASSERT_OK(optgen_checkpoint_tensor(exported, 0, &firstName, &first));
  static_cast<unsigned char *>(first.data)[0] ^= 1;
  EXPECT_EQ(optgen_import_state(rank.optimizer, exported, "the state dict"),
            OPTGEN_ERROR);
  EXPECT_EQ(std::string(optgen_last_error())
                .rfind("the state dict is refused: it is corrupted", 0),
            0u)
      << optgen_last_error();
  static_cast<unsigned char *>(first.data)[0] ^= 1;
  ASSERT_OK(optgen_import_state(rank.optimizer, exported, "the state dict"));
  EXPECT_EQ(optgen_checkpoint_set_metadata(partial, "[1]"), OPTGEN_ERROR);
  EXPECT_STREQ(optgen_last_error(),
               "the checkpoint's metadata is not a JSON object");
  optgen_checkpoint_destroy(partial);
  optgen_checkpoint_destroy(exported);
}

} // namespace
