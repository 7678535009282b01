// nxv: the compiler explorer and runner.
//   nxv devices [--profile NAME] [--target T]
//   nxv explore GRAPH.json [--passes=a,b] [--stage=input|passes|spirv|glsl|all] [--kernel=NAME]
//   nxv run GRAPH.json [--passes=a,b] [--inputs FILE] [--outputs FILE] [--seed N] [--repeat N] [--device SEL]
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "ir/check.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "ir/printer.h"
#include "passes/pass.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"

using namespace nxv;

namespace {

struct Args {
  std::string cmd, file, stage = "all", kernel, device, target, passes, inputs, outputs, profile, emulate;
  codegen::Precision precision = codegen::Precision::Highest;
  bool check = false;
  ir::Tolerance tolerance;
  uint64_t seed = 0;
  int repeat = 1;
  bool host_loops = false;
};

const char* kUsage =
    "usage: nxv devices [--profile=NAME|FILE.json] [--target=generic|nvidia|amd|lavapipe]\n"
    "       nxv explore GRAPH.json [--passes=a,b,c] [--stage=input|passes|kernels|spirv|glsl|all] [--kernel=NAME]\n"
    "                [--device=SEL | --target=generic|nvidia|amd|lavapipe] [--profile=NAME|FILE.json]\n"
    "                [--emulate=auto|none|f64|i64|f64,i64] [--precision=highest|high|default]\n"
    "       nxv run GRAPH.json [--passes=a,b,c] [--inputs=FILE] [--outputs=FILE] [--check] [--seed=N] [--repeat=N]\n"
    "                [--rtol=R] [--atol=A] [--device=SEL] [--profile=NAME|FILE.json] [--emulate=...] [--host-loops]\n"
    "                [--precision=highest|high|default] [--target=nvidia|amd]\n"
    "\n"
    "  devices   the Vulkan devices found, in the order the runtime prefers them\n"
    "  explore   the IR as read, after each pass, each kernel's launch, SPIR-V and a GLSL view;\n"
    "            for a device's kernels (--device) or a vendor's without one (--target)\n"
    "  run       compiles and runs on a device; inputs from FILE (a JSON array of\n"
    "            {\"type\", \"shape\", \"data\"} tensors) or seeded random; --outputs writes\n"
    "            the results in the same form; --check compares them with the reference\n"
    "            interpreter (Nx semantics) and fails on a difference beyond --rtol relative\n"
    "            plus --atol absolute (default 1e-5 and 1e-6; 16-bit floats at least 1e-2\n"
    "            each): long f32 sums summed in another order through several layers can\n"
    "            need more\n"
    "  --passes  the pass pipeline to run instead of the default one (e.g. without\n"
    "            constant-fold, to run what the driver would otherwise never see)\n"
    "  --device  index or name substring (default: $NXV_DEVICE, else the first device)\n"
    "  --profile  a device profile (docs/portability.md; default: $NXV_PROFILE): the device as\n"
    "            restricted to it, and what it cannot meet; with --target and no device (explore,\n"
    "            devices), the device the profile models, for output independent of the machine\n"
    "  --emulate  which 64-bit types kernels compute in software on 32-bit words (default:\n"
    "            $NXV_EMULATE, else auto: those the device or profile lacks); f64, i64: those\n"
    "            as well; none: none (a missing type is then an error)\n"
    "  --precision  how f32 dots may compute on bf16 cooperative matrices: highest (exact f32,\n"
    "            the default), high (bf16 x3, about 16 bits), default (bf16, 8 bits); ignored\n"
    "            on devices without them\n"
    "  --host-loops  drives loops that hold loops or conds from the host, as before serial\n"
    "            loops (codegen/serial_loop.h), to compare the two\n"
    "  --target  (run) generates the code a vendor's devices get (launch shapes, tiling, f16\n"
    "            conversions) and runs it on this device: a GPU's code path on lavapipe\n";

// A tolerance flag's value: a finite number, 0 or more.
double tolerance(const std::string& text, const char* flag) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || !std::isfinite(v) || v < 0)
    throw std::invalid_argument(std::string(flag) + " needs a number, 0 or more; got '" + text + "'");
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto opt = [&](const char* name, std::string& dst) {
      std::string p = std::string("--") + name + "=";
      if (s.rfind(p, 0) == 0) return dst = s.substr(p.size()), true;
      if (s == std::string("--") + name && i + 1 < argc) return dst = argv[++i], true;
      return false;
    };
    std::string num;
    if (s == "--check") {
      a.check = true;
    } else if (s == "--host-loops") {
      a.host_loops = true;
    } else if (s == "--help" || s == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (opt("stage", a.stage) || opt("kernel", a.kernel) || opt("device", a.device) || opt("target", a.target) ||
               opt("passes", a.passes) || opt("profile", a.profile) || opt("emulate", a.emulate) ||
               opt("inputs", a.inputs) || opt("outputs", a.outputs)) {
    } else if (opt("precision", num)) {
      a.precision = codegen::parse_precision(num);
    } else if (opt("rtol", num)) {
      a.tolerance.relative = tolerance(num, "--rtol");
    } else if (opt("atol", num)) {
      a.tolerance.absolute = tolerance(num, "--atol");
    } else if (opt("seed", num)) {
      a.seed = std::stoull(num);
    } else if (opt("repeat", num)) {
      a.repeat = std::max(1, std::stoi(num));
    } else if (s.rfind("--", 0) == 0) {
      throw std::invalid_argument("unknown option " + s);
    } else if (a.cmd.empty()) {
      a.cmd = s;
    } else if (a.file.empty()) {
      a.file = s;
    } else {
      throw std::invalid_argument("unexpected argument " + s);
    }
  }
  if (a.cmd.empty()) throw std::invalid_argument("no command given\n" + std::string(kUsage));
  if ((a.cmd == "explore" || a.cmd == "run") && a.file.empty()) throw std::invalid_argument(a.cmd + " needs GRAPH.json");
  return a;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (size_t b = 0; b < s.size();) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

void print_caps(const std::string& head, const codegen::DeviceCaps& c) {
  std::string coop = c.cooperative_matrix_shapes.empty() ? "none" : "";
  for (const auto& s : c.cooperative_matrix_shapes) coop += (coop.empty() ? "" : ",") + codegen::to_string(s);
  std::printf("%s f64=%d int64=%d int16=%d int8=%d f16=%d storage8=%d storage16=%d subgroup=%u subgroup_arith=%d "
              "subgroup_shuffle=%d subgroup_ballot=%d subgroup_ext=%d coop_matrix=%s denorms_f32=%s denorms_f64=%s "
              "f16_round_even=%d f16_inf_nan=%d denorms_f16=%s%s\n",
              head.c_str(), c.float64, c.int64, c.int16, c.int8, c.float16, c.storage_buffer_8bit, c.storage_buffer_16bit,
              c.subgroup_size, c.subgroup_arithmetic, c.subgroup_shuffle, c.subgroup_ballot, c.subgroup_extended_types,
              coop.c_str(),
              c.preserve_denorms_f32 ? "kept" : "flushed", c.preserve_denorms_f64 ? "kept" : "flushed", c.round_to_even_f16,
              c.preserve_signed_zero_inf_nan_f16, c.preserve_denorms_f16 ? "kept" : "flushed",
              c.denorms_independent ? "" : " (denormal modes not independent)");
  std::printf("   limits: api=%u.%u shared=%u invocations=%u groups_x=%u storage_buffers=%u storage_range=%llu "
              "allocation=%llu push_constants=%u texels=%u compute_units=%s\n",
              c.api_version >> 22, (c.api_version >> 12) & 0x3ff, c.max_shared_memory_bytes, c.max_workgroup_invocations,
              c.max_workgroup_count_x, c.max_storage_buffers, (unsigned long long)c.max_storage_buffer_range,
              (unsigned long long)c.max_memory_allocation_bytes, c.max_push_constant_bytes, c.max_texel_buffer_elements,
              c.compute_units ? std::to_string(c.compute_units).c_str() : "unknown");
}

void print_profile_notes(const runtime::Profile& p, const codegen::DeviceCaps& restricted, const codegen::DeviceCaps& full,
                         const std::vector<std::string>& unmet) {
  for (const auto& u : unmet) std::printf("   cannot meet: %s\n", u.c_str());
  for (const auto& c : runtime::profile_costs(restricted, full)) std::printf("   cost: %s\n", c.c_str());
  for (const auto& i : p.ignored) std::printf("   not used by nx_vulkan: %s\n", i.c_str());
}

// With a profile and --target: the device the profile models, independent of the machine.
int devices(const Args& a) {
  const std::string spec = !a.profile.empty() ? a.profile : std::getenv("NXV_PROFILE") ? std::getenv("NXV_PROFILE") : "";
  if (spec.empty()) {
    for (const auto& d : runtime::list_devices())
      print_caps(std::to_string(d.index) + ": " + d.name + " (" + d.type + ", " + d.driver + ")", d.caps);
    return 0;
  }
  const runtime::Profile p = runtime::load_profile(spec);
  std::printf("profile %s (%s)\n", p.name.c_str(), p.file.c_str());
  if (!a.target.empty()) {
    const codegen::DeviceCaps base = codegen::target_caps(a.target), m = runtime::model_profile(p, base);
    print_caps("target " + a.target + " as " + p.name + ":", m);
    print_profile_notes(p, m, base, {});
    return 0;
  }
  for (auto d : runtime::list_devices()) {
    const codegen::DeviceCaps full = d.caps;
    runtime::restrict_device(d, p);
    print_caps(std::to_string(d.index) + ": " + d.name + " (" + d.type + ", " + d.driver + ") as " + p.name + ":", d.caps);
    print_profile_notes(p, d.caps, full, d.unmet);
  }
  return 0;
}

int explore(const Args& a) {
  ir::Graph g = ir::read_graph_file(a.file);
  bool all = a.stage == "all";
  if (all || a.stage == "input") std::printf("// ----- input -----\n%s", ir::print_graph(g).c_str());
  // Without --device the generic target keeps the output independent of the machine.
  codegen::DeviceCaps caps = a.device.empty() ? codegen::target_caps(a.target.empty() ? "generic" : a.target) : [&] {
    runtime::RuntimeOptions o;
    o.device = a.device;
    o.profile = a.profile;
    o.emulate = a.emulate;
    return runtime::Device::open(o)->info().caps;
  }();
  if (a.device.empty() && !a.profile.empty()) caps = runtime::model_profile(runtime::load_profile(a.profile), caps);
  if (a.device.empty()) runtime::apply_emulation(caps, a.emulate);
  caps.f32_products = a.precision;
  passes::PassManager pm(a.passes.empty() ? passes::default_pipeline() : split(a.passes), codegen::kernel_bounds(caps));
  pm.set_observer([&](const std::string& pass, const ir::Graph& after) {
    if (all || a.stage == "passes") std::printf("// ----- after %s -----\n%s", pass.c_str(), ir::print_graph(after).c_str());
  });
  pm.run(g);
  int dispatches = 0;
  for (const auto& n : g.nodes) {
    if (n.op != "kernel") continue;
    ++dispatches;
    auto k = codegen::compile_kernel(n, g, caps);
    if (!a.kernel.empty() && k.name != a.kernel) continue;
    if (all || a.stage == "kernels" || a.stage == "spirv" || a.stage == "glsl") {
      std::printf("// ----- kernel %s: fuses", k.name.c_str());
      for (auto id : k.fused_nodes) std::printf(" %%%lld", static_cast<long long>(id));
      std::printf(" -----\n//   launch: %s\n", k.launch.c_str());
      if (n.attrs.contains("reads"))
        for (const auto& [id, why] : n.attrs["reads"].items())
          std::printf("//   reads %%%s from a buffer: %s\n", id.c_str(), why.get<std::string>().c_str());
      const passes::Estimate cost = passes::estimate_kernel(n);
      std::printf("//   cost: %.0f instructions of work per element, duplication %.2fx, %.0f instructions, %.0f loop steps per element\n",
                  cost.work, cost.duplication(), cost.code, cost.loop_steps);
    }
    if (all || a.stage == "spirv") {
      std::string err = codegen::validate(k.spirv, caps.api_version);
      std::printf("%s// validation: %s\n", codegen::disassemble(k.spirv).c_str(), err.empty() ? "ok" : err.c_str());
    }
    if (all || a.stage == "glsl") std::printf("%s", codegen::to_glsl(k.spirv).c_str());
  }
  std::printf("// dispatches: %d\n", dispatches);
  return 0;
}

// Seeded inputs in [-1, 1) for floats and [0, 16) for integers.
ir::Literal random_literal(const ir::TensorType& t, std::mt19937_64& rng) {
  ir::Literal lit{t, std::vector<uint8_t>(t.byte_size())};
  std::uniform_real_distribution<double> d(-1, 1);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    ir::Scalar v;
    if (ir::is_float(t.dtype)) v.f = d(rng);
    else v.i = int64_t(rng() % 16), v.is_integer = true;
    ir::set_element(lit, i, v);
  }
  return lit;
}

std::vector<ir::Literal> random_inputs(const std::vector<ir::TensorType>& types, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ir::Literal> inputs;
  for (const auto& t : types) {
    try {
      inputs.push_back(random_literal(t, rng));
    } catch (const std::bad_alloc&) {
      throw std::runtime_error("out of host memory for input " + std::to_string(inputs.size()) + " " + ir::to_string(t) +
                               " (" + std::to_string(t.byte_size()) + " bytes)");
    }
  }
  return inputs;
}

std::vector<ir::Literal> read_inputs(const std::string& path, const std::vector<ir::TensorType>& types) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << f.rdbuf();
  nlohmann::json j;
  try {
    j = ir::parse_json(text.str());
  } catch (const ir::IrError& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  if (!j.is_array()) throw std::runtime_error(path + ": expected a JSON array of tensors");
  if (j.size() != types.size())
    throw std::runtime_error(path + ": the graph takes " + std::to_string(types.size()) + " inputs, the file has " +
                             std::to_string(j.size()));
  std::vector<ir::Literal> inputs;
  for (size_t i = 0; i < j.size(); ++i) {
    try {
      inputs.push_back(ir::literal_from_json(j[i]));
    } catch (const ir::IrError& e) {
      throw std::runtime_error(path + ": input " + std::to_string(i) + ": " + e.what());
    }
    if (inputs.back().type != types[i])
      throw std::runtime_error(path + ": input " + std::to_string(i) + " is " + ir::to_string(inputs.back().type) +
                               ", parameter " + std::to_string(i) + " is " + ir::to_string(types[i]));
  }
  return inputs;
}

std::string format(const ir::Literal& l) {
  std::string s = ir::to_string(l.type) + " [";
  int64_t n = std::min<int64_t>(l.type.num_elements(), 8);
  for (int64_t i = 0; i < n; ++i) {
    char buf[64];
    if (ir::is_float(l.type.dtype)) std::snprintf(buf, sizeof buf, "%g", ir::get_f64(l, i));
    else if (l.type.dtype == ir::DType::U64) std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)ir::get_i64(l, i));
    else std::snprintf(buf, sizeof buf, "%lld", (long long)ir::get_i64(l, i));
    s += (i ? ", " : "") + std::string(buf);
  }
  return s + (l.type.num_elements() > n ? ", ...]" : "]");
}

int run(const Args& a) {
  ir::Graph g = ir::read_graph_file(a.file);
  runtime::RuntimeOptions o;
  o.device = a.device;
  o.profile = a.profile;
  o.emulate = a.emulate;
  auto dev = runtime::Device::open(o);
  std::printf("device: %s (%s)%s\n", dev->info().name.c_str(), dev->info().type.c_str(),
              dev->info().profile.empty() ? "" : (" as profile " + dev->info().profile).c_str());
  for (const auto& u : dev->info().unmet) std::printf("profile: cannot meet %s\n", u.c_str());
  auto t0 = std::chrono::steady_clock::now();
  runtime::CompileOptions copts;
  copts.serial_loops = !a.host_loops;
  copts.precision = a.precision;
  copts.pipeline = split(a.passes);
  if (!a.target.empty()) copts.as_vendor = codegen::target_caps(a.target).vendor_id;
  auto exe = runtime::Executable::compile(dev, g, copts);
  double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("compiled %zu kernels in %.1f ms\n", exe->kernels().size(), compile_ms);
  std::vector<ir::Literal> inputs = a.inputs.empty() ? random_inputs(exe->input_types(), a.seed)
                                                     : read_inputs(a.inputs, exe->input_types());
  std::vector<ir::Literal> outs;
  runtime::RunStats st;
  double best_device_ms = 0;
  for (int i = 0; i < a.repeat; ++i) {
    st = runtime::RunStats{};
    outs = exe->run_host(inputs, &st);
    best_device_ms = i == 0 ? st.device_ms : std::min(best_device_ms, st.device_ms);
    // A driver may compile its pipelines on their first dispatch (lavapipe's LLVM does).
    if (i == 0 && a.repeat > 1)
      std::printf("first run: wall %.3f ms, device %.3f ms (with what the driver compiles on first use)\n", st.wall_ms,
                  st.device_ms);
  }
  std::printf("run: %d dispatches in %d submit, wall %.3f ms, device %.3f ms\n", st.dispatches, st.submits, st.wall_ms,
              st.device_ms);
  if (a.repeat > 1) std::printf("best device time of %d runs: %.4f ms\n", a.repeat, best_device_ms);
  for (size_t i = 0; i < inputs.size(); ++i) std::printf("input %zu: %s\n", i, format(inputs[i]).c_str());
  for (size_t i = 0; i < outs.size(); ++i) std::printf("output %zu: %s\n", i, format(outs[i]).c_str());
  if (a.check) {
    std::string diff = ir::check_outputs(ir::interpret(g, inputs), outs, a.tolerance);
    if (!diff.empty()) throw std::runtime_error("check: " + diff);
    std::printf("check: all outputs match the reference interpreter\n");
  }
  if (!a.outputs.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& o : outs) j.push_back(ir::literal_to_json(o));
    std::ofstream f(a.outputs);
    if (!(f << j.dump() << "\n")) throw std::runtime_error("cannot write " + a.outputs);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  if (a.cmd == "devices") return devices(a);
  if (a.cmd == "explore") return explore(a);
  if (a.cmd == "run") return run(a);
  throw std::invalid_argument("unknown command '" + a.cmd + "'\n" + kUsage);
} catch (const std::bad_alloc&) {  // where no caller named what it was allocating
  std::fprintf(stderr, "nxv: error: out of host memory\n");
  return 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "nxv: error: %s\n", e.what());
  return 1;
}
