// The optimizer optgen generates from momentum.opt, in a program of its
// own: it minimises the quadratic loss
//
//   L(w) = sum over parameters and elements of 0.5 * c * (w - t)^2
//
// (gradient c * (w - t)) over three parameters, and fails unless the loss
// falls and every parameter ends where the same steps, computed here in
// double precision, put it.
//
//   consumer [--lr LR] [--beta BETA] [--steps N]
//
// LR and BETA are what the reference assumes the spec's hyperparameters
// are (momentum.opt: 0.1 and 0.9): the optimizer itself keeps the spec's.

#include "consumer_momentum.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

struct Parameter {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> value, grad, target;
  float curvature;
};

double loss(const std::vector<Parameter> &parameters) {
  double sum = 0;
  for (const Parameter &p : parameters)
    for (size_t i = 0; i < p.value.size(); ++i) {
      double d = double(p.value[i]) - p.target[i];
      sum += 0.5 * p.curvature * d * d;
    }
  return sum;
}

} // namespace

int main(int argc, char **argv) {
  double lr = 0.1, beta = 0.9;
  int steps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--lr"))
      lr = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--beta"))
      beta = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps"))
      steps = std::atoi(argv[i + 1]);
  }

  std::vector<Parameter> parameters = {
      {"layer.weight", {8, 4}, {}, {}, {}, 1.0f},
      {"layer.bias", {8}, {}, {}, {}, 2.0f},
      {"scale", {1}, {}, {}, {}, 0.5f}};
  for (Parameter &p : parameters) {
    int64_t n = 1;
    for (int64_t d : p.shape)
      n *= d;
    for (int64_t i = 0; i < n; ++i) {
      p.value.push_back(std::sin(0.7 * i + p.curvature));
      p.target.push_back(std::cos(0.3 * i));
    }
    p.grad.assign(n, 0.0f);
  }
  // The reference: the spec's steps in double precision.
  std::vector<std::vector<double>> reference, buffer;
  for (const Parameter &p : parameters) {
    reference.emplace_back(p.value.begin(), p.value.end());
    buffer.emplace_back(p.value.size(), 0.0);
  }

  try {
    optgen_generated::consumer_momentum optimizer;
    for (Parameter &p : parameters)
      optimizer.addParameter(
          p.name, {p.value.data(), optgen::runtime::DType::F32, p.shape},
          {p.grad.data(), optgen::runtime::DType::F32, p.shape});
    optimizer.finalize();
    double before = loss(parameters);
    for (int step = 0; step < steps; ++step) {
      for (size_t k = 0; k < parameters.size(); ++k) {
        Parameter &p = parameters[k];
        for (size_t i = 0; i < p.value.size(); ++i) {
          p.grad[i] = p.curvature * (p.value[i] - p.target[i]);
          double g = p.curvature * (reference[k][i] - p.target[i]);
          buffer[k][i] = beta * buffer[k][i] + g;
          reference[k][i] -= lr * buffer[k][i];
        }
      }
      optimizer.step();
    }
    double after = loss(parameters);
    double worst = 0;
    for (size_t k = 0; k < parameters.size(); ++k)
      for (size_t i = 0; i < parameters[k].value.size(); ++i)
        worst = std::fmax(worst,
                          std::fabs(parameters[k].value[i] - reference[k][i]));
    std::printf("loss %.6f -> %.6f after %d steps; largest difference from "
                "the reference (lr %g, beta %g): %.3g\n",
                before, after, steps, lr, beta, worst);
    if (!(after < 0.5 * before)) {
      std::fprintf(stderr, "consumer: the loss did not fall by half\n");
      return 1;
    }
    if (!(worst < 1e-4)) {
      std::fprintf(stderr, "consumer: the optimizer's parameters are not the "
                           "reference's\n");
      return 1;
    }
  } catch (const std::exception &error) {
    std::fprintf(stderr, "consumer: %s\n", error.what());
    return 1;
  }
  return 0;
}
