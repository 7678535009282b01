// run_spirv: a module built elsewhere (the fixture is the kind of leapfrog shader eXMC
// synthesises) runs against a plain C++ leapfrog, and every mismatch between the module and
// what it is given is an error that names it, never a driver crash.
#include <gtest/gtest.h>
#include <spirv-tools/libspirv.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/runtime.h"
#include "test_graphs.h"

namespace nxv::runtime {
namespace {

std::vector<uint32_t> assemble(const std::string& fixture) {
  std::ifstream f(test_data_path("spirv/" + fixture));
  std::stringstream text;
  text << f.rdbuf();
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  std::vector<uint32_t> words;
  EXPECT_TRUE(tools.Assemble(text.str(), &words)) << fixture;
  return words;
}

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<double> doubles(Device& dev, const Buffer& b) {
  std::vector<double> v(b.bytes() / 8);
  dev.download(b, v.data(), b.bytes());
  return v;
}

struct Model {
  uint32_t d;
  double mu, sigma;
  std::vector<double> obs, inv_mass;
};

// The fixture's push block: K, n_obs, d, pad, then eps, mu, sigma as f64.
std::vector<uint8_t> push_block(uint32_t k, const Model& m, double eps) {
  std::vector<uint8_t> b(40);
  uint32_t head[4] = {k, uint32_t(m.obs.size()), m.d, 0};
  double tail[3] = {eps, m.mu, m.sigma};
  std::memcpy(b.data(), head, 16);
  std::memcpy(b.data() + 16, tail, 24);
  return b;
}

double grad_at(const Model& m, uint32_t i, double q) {
  double g = -(q - m.mu) / (m.sigma * m.sigma);
  for (size_t j = i; j < m.obs.size(); j += m.d) g += m.obs[j] - q;
  return g;
}

double logp_at(const Model& m, uint32_t i, double q) {
  const double half_log_2pi = 0.91893853320467274178;
  double z = (q - m.mu) / m.sigma;
  double lp = -0.5 * z * z - std::log(float(m.sigma)) - half_log_2pi;  // the shader logs in f32
  for (size_t j = i; j < m.obs.size(); j += m.d) lp += -0.5 * (m.obs[j] - q) * (m.obs[j] - q) - half_log_2pi;
  return lp;
}

class RunSpirv : public ::testing::Test {
 protected:
  void SetUp() override {
    RuntimeOptions opts;
    opts.robust_buffer_access = true;  // needed where the device cannot bounds-check one pipeline (lavapipe)
    dev = Device::open(opts);
    if (!dev->info().caps.float64) GTEST_SKIP() << dev->info().name << " has no f64";
    module = assemble("leapfrog_normal_f64.spvasm");
  }
  BufferPtr f64s(const std::vector<double>& v) {
    return dev->upload({ir::DType::F64, {int64_t(v.size())}}, v.data(), v.size() * 8);
  }
  std::shared_ptr<Device> dev;
  std::vector<uint32_t> module;
  Model m{5, 0.5, 2.0, {1.0, -0.5, 2.0, 0.25, 1.5, 3.0, -1.0}, {1.0, 0.5, 2.0, 1.5, 0.75}};
  std::vector<double> q0{0.1, -0.2, 0.3, 1.0, -1.5}, p0{0.5, -0.25, 1.0, 0.0, 2.0};
  std::vector<ir::TensorType> chain_types(uint32_t k) {
    ir::TensorType qd{ir::DType::F64, {int64_t(k * m.d)}};
    return {qd, qd, qd, {ir::DType::F64, {int64_t(k)}}};
  }
};

TEST_F(RunSpirv, LeapfrogChainMatchesAPlainLeapfrog) {
  const uint32_t k = 12;
  const double eps = -0.05;  // a backward trajectory, as NUTS builds them
  std::vector<double> extras = m.obs;
  extras.insert(extras.end(), m.inv_mass.begin(), m.inv_mass.end());
  SpirvLaunch launch{push_block(k, m, eps), {1, 1, 1}};
  RunStats stats;
  auto out = run_spirv(dev, module, {f64s(q0), f64s(p0), f64s(extras)}, chain_types(k), launch, &stats);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(stats.dispatches, 1);
  auto q = doubles(*dev, *out[0]), p = doubles(*dev, *out[1]), g = doubles(*dev, *out[2]), lp = doubles(*dev, *out[3]);
  std::vector<double> qi = q0, pi = p0;
  for (uint32_t step = 0; step < k; ++step) {
    double logp = 0;
    for (uint32_t i = 0; i < m.d; ++i) {
      double half = pi[i] + 0.5 * eps * grad_at(m, i, qi[i]);
      qi[i] += eps * m.inv_mass[i] * half;
      double gn = grad_at(m, i, qi[i]);
      pi[i] = half + 0.5 * eps * gn;
      logp += logp_at(m, i, qi[i]);
      // Same operations in the same order, but a driver may contract to FMAs.
      EXPECT_NEAR(q[step * m.d + i], qi[i], 1e-12 * (1 + std::fabs(qi[i]))) << "q at step " << step << ", " << i;
      EXPECT_NEAR(p[step * m.d + i], pi[i], 1e-12 * (1 + std::fabs(pi[i]))) << "p at step " << step << ", " << i;
      EXPECT_NEAR(g[step * m.d + i], gn, 1e-12 * (1 + std::fabs(gn))) << "grad at step " << step << ", " << i;
    }
    // The shader's f32 log(sigma) may differ from std::log's by an ulp of a float.
    EXPECT_NEAR(lp[step], logp, 1e-6 * (1 + std::fabs(logp))) << "logp at step " << step;
  }
}

TEST_F(RunSpirv, MismatchesAreErrorsNamingThem) {
  std::vector<double> extras = m.obs;
  extras.insert(extras.end(), m.inv_mass.begin(), m.inv_mass.end());
  std::vector<BufferPtr> in{f64s(q0), f64s(p0), f64s(extras)};
  auto expect_error = [&](const std::vector<uint32_t>& spirv, const std::vector<BufferPtr>& inputs,
                          const std::vector<ir::TensorType>& outputs, const SpirvLaunch& launch, const std::string& says) {
    try {
      run_spirv(dev, spirv, inputs, outputs, launch);
      ADD_FAILURE() << "no error; expected one saying: " << says;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  const SpirvLaunch ok{push_block(4, m, 0.1), {1, 1, 1}};
  auto three_outputs = chain_types(4);
  three_outputs.pop_back();
  expect_error(module, in, three_outputs, ok, "binding 6 but is given 6 buffers");
  expect_error(module, in, chain_types(4), {std::vector<uint8_t>(16), {1, 1, 1}}, "push-constant block is 40 bytes, 16 given");
  expect_error(module, in, chain_types(4), {std::vector<uint8_t>(132), {1, 1, 1}}, "at most 128");
  expect_error(module, in, chain_types(4), {ok.push_constants, {0, 1, 1}}, "group count 0 in dimension 0");
  expect_error(std::vector<uint32_t>(module.begin(), module.begin() + module.size() / 2), in, chain_types(4), ok,
               "does not pass SPIR-V validation");
  std::vector<uint32_t> other_name;
  ASSERT_TRUE(spvtools::SpirvTools(SPV_ENV_VULKAN_1_2)
                  .Assemble(R"(OpCapability Shader
                               OpMemoryModel Logical GLSL450
                               OpEntryPoint GLCompute %f "other"
                               OpExecutionMode %f LocalSize 1 1 1
                       %void = OpTypeVoid
                         %fn = OpTypeFunction %void
                          %f = OpFunction %void None %fn
                          %l = OpLabel
                               OpReturn
                               OpFunctionEnd)",
                            &other_name));
  expect_error(other_name, in, chain_types(4), ok, "no GLCompute entry point named \"main\"");
}

// Modules from elsewhere are not emulated: on a device without f64 (a profile's, here) the
// f64 shader is refused up front, naming the capability and the feature it needs.
TEST(RunSpirvWithoutF64, TheModuleIsRefusedNamingTheFeature) {
  RuntimeOptions opts;
  opts.robust_buffer_access = true;
  opts.profile = "vulkan-minimum";
  auto dev = Device::open(opts);
  ASSERT_FALSE(dev->info().caps.float64);
  Model m{5, 0.5, 2.0, {1.0, -0.5, 2.0, 0.25, 1.5, 3.0, -1.0}, {1.0, 0.5, 2.0, 1.5, 0.75}};
  std::vector<BufferPtr> in;
  for (size_t n : {size_t(m.d), size_t(m.d), m.obs.size() + m.d}) {
    std::vector<double> zeros(n);
    in.push_back(dev->upload({ir::DType::F64, {int64_t(n)}}, zeros.data(), n * 8));
  }
  ir::TensorType qd{ir::DType::F64, {int64_t(4 * m.d)}};
  try {
    run_spirv(dev, assemble("leapfrog_normal_f64.spvasm"), in, {qd, qd, qd, {ir::DType::F64, {4}}},
              {push_block(4, m, 0.1), {1, 1, 1}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("capability 10 (the device's shaderFloat64)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nxv::runtime
