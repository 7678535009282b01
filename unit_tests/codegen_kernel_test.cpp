// compile_kernel as a whole: fused bodies, several outputs, determinism,
// device capabilities, vectorised elementwise kernels and malformed kernels.
#include <gtest/gtest.h>

#include "codegen_testing.h"

namespace nxv::codegen {
namespace {

using ir::DType;
using cgtest::count;
using cgtest::KernelBuilder;

ir::Graph diamond() {
  KernelBuilder k;
  auto x = k.param(DType::F32, {16, 8});
  auto two = k.add("constant", {}, DType::F32, {}, {{"value", 2.0}});
  auto a = k.add("multiply", {x, two}, DType::F32, {16, 8});
  auto b = k.add("exp", {a}, DType::F32, {16, 8});
  auto c = k.add("sqrt", {a}, DType::F32, {16, 8});
  auto d = k.add("add", {b, c}, DType::F32, {16, 8});
  return k.finish({d, a});
}

TEST(CodegenKernel, DiamondIsComputedOncePerElement) {
  auto kb = cgtest::compile(diamond());
  auto text = disassemble(kb.spirv);
  EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "");
  EXPECT_EQ(count(text, "OpFMul"), 1u) << text;  // shared by exp, sqrt and the second output
  EXPECT_EQ(count(text, "OpLoad %float"), 1u) << text;
  EXPECT_EQ(count(text, "OpStore"), 2u);
  ASSERT_EQ(kb.bindings.size(), 3u);
  EXPECT_EQ(kb.bindings[0].kind, Binding::Kind::Input);
  EXPECT_EQ(kb.bindings[1].kind, Binding::Kind::Output);
  EXPECT_EQ(kb.bindings[2].index, 1);
}

// Complex arithmetic as Nx.Vulkan.Complex lowers it: a value of shape s is f32[s..., 2];
// each step reads both parts of its input (a slice of the last axis, reshaped to s) and
// packs new ones (reshaped to s..., 1, concatenated). Each part of each step is computed
// once per element, the concatenate reading only the part its constant position names,
// and the reshapes keep the index's dims: an index linearised and split again gets new
// ids, and where a value is then read along several paths (an unrolled factorisation's
// rows and columns), each path recomputes its whole cone (a 3x3 complex LU made 17 MB of
// SPIR-V).
TEST(CodegenKernel, StackedPartViewsAreComputedOncePerElement) {
  KernelBuilder k;
  const ir::Shape s{4, 3}, s1{4, 3, 1}, layout{4, 3, 2};
  auto z = k.param(DType::F32, layout);
  auto part = [&](int64_t p, int64_t v) {
    auto sl = k.add("slice", {v}, DType::F32, s1,
                    {{"start", {0, 0, p}}, {"lengths", {4, 3, 1}}, {"strides", {1, 1, 1}}});
    return k.add("reshape", {sl}, DType::F32, s);
  };
  for (int step = 0; step < 12; ++step) {  // z * z: (re^2 - im^2, 2 re im)
    auto re = part(0, z), im = part(1, z);
    auto re2 = k.add("subtract", {k.add("multiply", {re, re}, DType::F32, s), k.add("multiply", {im, im}, DType::F32, s)},
                     DType::F32, s);
    auto im2 = k.add("add", {k.add("multiply", {re, im}, DType::F32, s), k.add("multiply", {im, re}, DType::F32, s)},
                     DType::F32, s);
    z = k.add("concatenate", {k.add("reshape", {re2}, DType::F32, s1), k.add("reshape", {im2}, DType::F32, s1)},
              DType::F32, layout, {{"axis", 2}});
  }
  auto kb = cgtest::compile(k.finish({z}));
  auto text = disassemble(kb.spirv);
  EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "");
  EXPECT_EQ(count(text, "OpLoad %float"), 2u);  // the input's two parts
  EXPECT_EQ(count(text, "OpFSub"), 12u);        // one real part per step
  // Only the invocation's own position is split into dims; a reshape that linearised the
  // index would split it again at every step.
  EXPECT_LE(count(text, "OpUDiv"), 2u) << text;
}

TEST(CodegenKernel, GlslViewOfEveryStorageTypeAndCooperativeReduction) {
  KernelBuilder k;
  auto a = k.param(DType::U8, {4, 300});
  auto b = k.param(DType::BF16, {4, 300});
  auto c = k.param(DType::F64, {4, 300});
  auto s = k.add("sum", {k.add("as_type", {a}, DType::F32, {4, 300})}, DType::F32, {4}, {{"axes", {1}}});
  auto m = k.add("reduce_max", {b}, DType::BF16, {4}, {{"axes", {1}}});
  auto p = k.add("product", {c}, DType::F64, {4}, {{"axes", {1}}});
  auto glsl = to_glsl(cgtest::compile(k.finish({s, m, p}, "reduce")).spirv);
  EXPECT_NE(glsl.find("barrier()"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("uint8_t"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("double"), std::string::npos) << glsl;
}

TEST(CodegenKernel, Deterministic) {
  auto a = cgtest::compile(diamond());
  auto b = cgtest::compile(diamond());
  EXPECT_EQ(a.spirv, b.spirv);
}

TEST(CodegenKernel, OutputsOfDifferentSizesAreGuarded) {
  KernelBuilder k;
  auto x = k.param(DType::S32, {10});
  auto s = k.add("sum", {x}, DType::S64, {}, {{"axes", nullptr}, {"keep_axes", false}});
  auto n = k.add("negate", {x}, DType::S32, {10});
  auto kb = cgtest::compile(k.finish({n, s}));
  EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "");
  EXPECT_EQ(count(disassemble(kb.spirv), "OpSelectionMerge"), 1u);
}

TEST(CodegenKernel, OutputThatIsAParameterAndEmptyTensors) {
  KernelBuilder k;
  auto x = k.param(DType::F16, {3});
  auto e = k.param(DType::F32, {0, 4});
  auto y = k.add("exp", {e}, DType::F32, {0, 4});
  auto kb = cgtest::compile(k.finish({x, y}));
  EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "");
}

TEST(CodegenKernel, LaunchCoversTheOutputWithinDeviceLimits) {
  auto caps = generic_caps();
  caps.max_workgroup_invocations = 32;
  caps.max_workgroup_count_x = 7;
  KernelBuilder k;
  auto x = k.param(DType::F32, {100000});
  auto kb = cgtest::compile(k.finish({k.add("negate", {x}, DType::F32, {100000})}), caps);
  EXPECT_LE(kb.workgroup_size[0], 32u);
  EXPECT_LE(kb.group_count[0], 7u);
  EXPECT_GE(kb.group_count[0], 1u);
  EXPECT_EQ(kb.name, "k1_negate");
}

TEST(CodegenKernel, MissingDeviceFeaturesAreNamed) {
  auto caps = generic_caps();
  caps.name = "llvmpipe";
  caps.float64 = false;
  {
    KernelBuilder k;
    auto x = k.param(DType::F32, {4});
    auto y = k.add("as_type", {x}, DType::F64, {4});
    auto g = k.finish({k.add("add", {y, y}, DType::F64, {4})});
    try {
      cgtest::compile(g, caps);
      FAIL() << "expected an IrError";
    } catch (const ir::IrError& e) {
      EXPECT_EQ(std::string(e.what()), "node 101 (as_type): f64 needs the device's shaderFloat64 feature, which llvmpipe lacks");
    }
  }
  caps = generic_caps();
  caps.int64 = false;
  KernelBuilder k;
  auto x = k.param(DType::S32, {4});
  auto g = k.finish({k.add("sum", {x}, DType::S64, {}, {{"axes", nullptr}})});
  EXPECT_THROW(cgtest::compile(g, caps), ir::IrError);
}

// Without 8/16-bit storage, narrow tensors are packed in 32-bit words: the module declares
// neither storage capability, and stores are atomic (neighbours share a word).
TEST(CodegenKernel, NarrowTensorsArePackedWithoutNarrowStorage) {
  for (DType t : {DType::U8, DType::S8, DType::F16, DType::BF16, DType::S16}) {
    auto caps = generic_caps();
    caps.storage_buffer_8bit = caps.storage_buffer_16bit = false;
    KernelBuilder k;
    auto p = k.param(t, {5});
    auto kb = cgtest::compile(k.finish({k.add("negate", {p}, t, {5})}), caps);
    EXPECT_EQ(validate(kb.spirv, caps.api_version), "") << ir::dtype_name(t);
    const std::string text = disassemble(kb.spirv);
    EXPECT_EQ(text.find("StorageBuffer8BitAccess"), std::string::npos) << ir::dtype_name(t);
    EXPECT_EQ(text.find("StorageBuffer16BitAccess"), std::string::npos) << ir::dtype_name(t);
    EXPECT_NE(text.find("OpAtomicAnd"), std::string::npos) << ir::dtype_name(t);
    EXPECT_NE(text.find("OpAtomicOr"), std::string::npos) << ir::dtype_name(t);
  }
}

DeviceCaps nvidia_caps() {
  auto caps = generic_caps();
  caps.vendor_id = pci_vendor_id(Vendor::Nvidia);
  return caps;
}

// As for NVIDIA, x + y over 1024 f32 is one 16-byte load per argument and one store per
// position, no scalar access left; the generic target keeps scalar code.
TEST(CodegenKernel, ElementwiseKernelsReadAndWriteVectors) {
  KernelBuilder k;
  auto x = k.param(DType::F32, {1024}), y = k.param(DType::F32, {1024});
  auto g = k.finish({k.add("add", {x, y}, DType::F32, {1024})});
  auto kb = cgtest::compile(g, nvidia_caps());
  auto text = disassemble(kb.spirv);
  EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "");
  EXPECT_EQ(count(text, "OpLoad %v4float"), 2u) << text;
  EXPECT_EQ(count(text, "OpLoad %float"), 0u) << text;
  EXPECT_EQ(count(text, "OpStore"), 1u) << text;
  EXPECT_EQ(count(text, "OpFAdd %float"), 4u) << text;
  EXPECT_EQ(count(disassemble(cgtest::compile(g).spirv), "v4float"), 0u);
}

// Results of one size but different shapes are vectors alike (one a reshape of the other).
TEST(CodegenKernel, ResultsOfOneSizeAndTwoShapesAreVectorised) {
  KernelBuilder k;
  auto x = k.param(DType::S32, {32, 32});
  auto n = k.add("negate", {x}, DType::S32, {32, 32});
  auto kb = cgtest::compile(k.finish({n, k.add("reshape", {n}, DType::S32, {1024})}), nvidia_caps());
  auto text = disassemble(kb.spirv);
  EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "") << text;
  EXPECT_EQ(count(text, "OpLoad %v4uint"), 1u) << text;
  EXPECT_EQ(count(text, "OpStore"), 2u) << text;
}

// Where lanes could not share an invocation's code, or vectors would need repacking, the
// kernel stays scalar: results of different sizes, a reduction, 16- and 8-bit buffers, a
// transpose visited in tiles.
TEST(CodegenKernel, KernelsThatCannotBeVectorisedStayScalar) {
  std::vector<ir::Graph> graphs;
  {
    KernelBuilder k;
    auto x = k.param(DType::F32, {8, 4});
    auto sum = k.add("sum", {x}, DType::F32, {8}, {{"axes", {1}}});
    graphs.push_back(k.finish({k.add("negate", {x}, DType::F32, {8, 4}), sum}));
  }
  {
    KernelBuilder k;
    auto x = k.param(DType::F32, {8, 4});
    graphs.push_back(k.finish({k.add("sum", {x}, DType::F32, {8}, {{"axes", {1}}})}, "reduce"));
  }
  {
    KernelBuilder k;
    auto x = k.param(DType::F16, {64});
    graphs.push_back(k.finish({k.add("add", {x, x}, DType::F16, {64})}));
  }
  {
    KernelBuilder k;
    auto x = k.param(DType::F32, {64});
    graphs.push_back(k.finish({k.add("greater", {x, x}, DType::U8, {64})}));
  }
  {
    KernelBuilder k;
    auto x = k.param(DType::F32, {64, 64});
    auto t = k.add("transpose", {x}, DType::F32, {64, 64}, {{"axes", {1, 0}}});
    graphs.push_back(k.finish({k.add("add", {t, x}, DType::F32, {64, 64})}));
  }
  for (const auto& g : graphs) {
    auto kb = cgtest::compile(g, nvidia_caps());
    auto text = disassemble(kb.spirv);
    EXPECT_EQ(validate(kb.spirv, generic_caps().api_version), "") << text;
    EXPECT_EQ(count(text, "OpTypeVector %float"), 0u) << text;
    EXPECT_EQ(count(text, "OpTypeVector %ushort"), 0u) << text;
    EXPECT_EQ(count(text, "OpTypeVector %uchar"), 0u) << text;
  }
}

DeviceCaps lavapipe_caps() {
  auto caps = generic_caps();
  caps.name = "llvmpipe";
  caps.vendor_id = pci_vendor_id(Vendor::Lavapipe);
  caps.max_workgroup_invocations = 1024;
  caps.max_loop_steps = 65535;
  return caps;
}

// lavapipe ends all loops of an invocation after 65535 steps (DeviceCaps::max_loop_steps).
// A 1024x256 . 256x1024 dot takes 257 steps per element (and one of the element loop): on
// lavapipe's usual 64 groups of 64, 256 elements per invocation would take 66049; the launch
// gets enough groups for each invocation to stay below.
TEST(CodegenKernel, MoreGroupsKeepEachInvocationWithinTheLoopLimit) {
  KernelBuilder k;
  auto a = k.param(DType::F32, {1024, 256}), b = k.param(DType::F32, {256, 1024});
  auto dot = k.add("dot", {a, b}, DType::F32, {1024, 1024},
                   {{"contract_axes1", {1}}, {"contract_axes2", {0}}, {"batch_axes1", nlohmann::json::array()},
                    {"batch_axes2", nlohmann::json::array()}});
  auto kb = cgtest::compile(k.finish({dot}), lavapipe_caps());
  const uint64_t invocations = uint64_t(kb.workgroup_size[0]) * kb.group_count[0];
  const uint64_t trips = (1024 * 1024 + invocations - 1) / invocations;
  EXPECT_GT(kb.group_count[0], 64u);
  EXPECT_LE(trips * 258 + 1, 65535u);
}

// One row's sum of 100000 elements alone exceeds the limit: the launch becomes cooperative,
// a workgroup per row, each invocation folding 1 element in 1024.
TEST(CodegenKernel, ALongReductionIsSplitOverAWorkgroupWithinTheLoopLimit) {
  KernelBuilder k;
  auto x = k.param(DType::F32, {32, 100000});
  auto kb = cgtest::compile(k.finish({k.add("sum", {x}, DType::F32, {32}, {{"axes", {1}}})}, "reduce"), lavapipe_caps());
  EXPECT_EQ(kb.workgroup_size[0], 1024u);
  EXPECT_EQ(kb.group_count[0], 32u);
  EXPECT_GT(count(disassemble(kb.spirv), "OpControlBarrier"), 0u);
}

// Where each of 40000 updates of an indexed_put recomputes a 70000-long sum, no launch keeps
// an invocation within the limit (a workgroup of 1024 still leaves each invocation 40 updates): a clear error rather than results the driver cuts short.
TEST(CodegenKernel, KernelsBeyondTheLoopLimitAreAnError) {
  KernelBuilder k;
  auto x = k.param(DType::F32, {70000, 2});
  auto idx = k.param(DType::S32, {40000, 2});
  auto colsum = k.add("sum", {x}, DType::F32, {2}, {{"axes", {0}}});
  auto d = k.add("subtract", {x, colsum}, DType::F32, {70000, 2});
  auto upd = k.add("gather", {d, idx}, DType::F32, {40000}, {{"axes", {0, 1}}});
  auto g = k.finish({k.add("indexed_put", {x, idx, upd}, DType::F32, {70000, 2}, {{"axes", {0, 1}}})}, "indexed");
  EXPECT_NO_THROW(cgtest::compile(g));  // no limit on other devices
  try {
    cgtest::compile(g, lavapipe_caps());
    FAIL() << "expected an IrError";
  } catch (const ir::IrError& e) {
    EXPECT_NE(std::string(e.what()).find("(kernel): k2_indexed_put: one position takes "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("llvmpipe ends a shader's loops after 65535 steps"), std::string::npos) << e.what();
  }
}

TEST(CodegenKernel, MalformedKernelsAreRejectedWithTheNode) {
  KernelBuilder k;
  auto x = k.param(DType::F32, {4});
  auto g = k.finish({k.add("exp", {x}, DType::F32, {4})});
  ir::Node kernel = cgtest::kernel_of(g);
  kernel.results[0].dtype = DType::F16;
  EXPECT_THROW(compile_kernel(kernel, g, generic_caps()), ir::IrError);
  kernel = cgtest::kernel_of(g);
  kernel.regions.clear();
  EXPECT_THROW(compile_kernel(kernel, g, generic_caps()), ir::IrError);
  kernel = cgtest::kernel_of(g);
  kernel.op = "exp";
  EXPECT_THROW(compile_kernel(kernel, g, generic_caps()), ir::IrError);

  KernelBuilder u;
  auto p = u.param(DType::F32, {4});
  auto g3 = u.finish({u.add("fft", {p}, DType::F32, {4})});
  try {
    cgtest::compile(g3);
    FAIL();
  } catch (const ir::IrError& e) {
    EXPECT_EQ(std::string(e.what()), "node 101 (fft): op not supported inside a kernel body");
  }
}

}  // namespace
}  // namespace nxv::codegen
