#include <cstdio>

#include "runtime/vk_util.h"

namespace nxv::runtime {

const char* error_kind_name(Error::Kind k) {
  switch (k) {
    case Error::Kind::OutOfMemory: return "out_of_memory";
    case Error::Kind::DeviceLost: return "device_lost";
    case Error::Kind::Timeout: return "timeout";
    case Error::Kind::Unsupported: return "unsupported";
    case Error::Kind::InvalidArgument: return "invalid_argument";
    case Error::Kind::NoDevice: return "no_device";
    case Error::Kind::Vulkan: return "vulkan";
  }
  return "unknown";
}

void vk_check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return;
  std::string msg = std::string(what) + " failed (VkResult " + std::to_string(static_cast<int>(r)) + ")";
  switch (r) {
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      throw Error(Error::Kind::OutOfMemory, msg + ": out of memory");
    case VK_ERROR_DEVICE_LOST: throw Error(Error::Kind::DeviceLost, msg + ": device lost");
    case VK_TIMEOUT: throw Error(Error::Kind::Timeout, msg + ": timed out");
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_INITIALIZATION_FAILED: throw Error(Error::Kind::NoDevice, msg + ": no usable Vulkan driver");
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT: throw Error(Error::Kind::Unsupported, msg);
    default: throw Error(Error::Kind::Vulkan, msg);
  }
}

std::string content_hash(const void* data, size_t bytes, const std::string& salt) {
  auto fnv = [&](uint64_t h) {
    auto mix = [&h](const unsigned char* p, size_t n) {
      for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    };
    mix(reinterpret_cast<const unsigned char*>(salt.data()), salt.size());
    mix(static_cast<const unsigned char*>(data), bytes);
    return h;
  };
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(fnv(0xcbf29ce484222325ull)),
                static_cast<unsigned long long>(fnv(0x84222325cbf29ce4ull)));
  return buf;
}

std::vector<HostTensor> Executable::run_host(const std::vector<HostTensor>& inputs, RunStats* stats) {
  auto dev = device();
  std::vector<BufferPtr> bufs;
  for (const auto& in : inputs) bufs.push_back(dev->upload(in.type, in.data.data(), in.data.size()));
  auto outs = run(bufs, stats);
  std::vector<HostTensor> result;
  for (const auto& o : outs) {
    HostTensor h{o->type(), {}};
    try {
      h.data.resize(o->bytes());
    } catch (const std::bad_alloc&) {
      throw Error(Error::Kind::OutOfMemory, "out of host memory for output " + std::to_string(result.size()) + " " +
                                                ir::to_string(o->type()) + " (" + std::to_string(o->bytes()) + " bytes)");
    }
    dev->download(*o, h.data.data(), h.data.size());
    result.push_back(std::move(h));
  }
  return result;
}

}  // namespace nxv::runtime
