// The library's function table. Anything that talks to the device or compiles
// runs on a dirty scheduler so that normal schedulers are never blocked.
#include <erl_nif.h>

#include "nif/nif_functions.h"
#include "nif/resources.h"

namespace {
using namespace nxv::nif;

constexpr unsigned kCpu = ERL_NIF_DIRTY_JOB_CPU_BOUND;
constexpr unsigned kIo = ERL_NIF_DIRTY_JOB_IO_BOUND;

ErlNifFunc nif_functions[] = {
    {"list_devices", 0, list_devices, kIo},
    {"open_device", 6, open_device, kIo},
    {"device_info", 1, device_info, 0},
    {"bytes_in_use", 1, bytes_in_use, 0},
    {"trim", 1, trim, kIo},
    {"compile", 5, compile, kCpu},
    {"executable_info", 1, executable_info, 0},
    {"kernel_sources", 2, kernel_sources, kCpu},
    {"run", 3, run, kIo},
    {"run_spirv", 7, run_spirv, kIo},
    {"explore", 5, explore, kCpu},
    {"upload", 4, upload, kIo},
    {"download", 1, download, kIo},
    {"buffer_info", 1, buffer_info, 0},
    {"free", 1, free_buffer, 0},
    {"cell_new", 1, cell_new, 0},
    {"cell_get", 1, cell_get, 0},
    {"cell_put", 2, cell_put, 0},
    {"cell_put_if", 3, cell_put_if, 0},
    {"cell_field", 3, cell_field, 0},
};

int load(ErlNifEnv* env, void**, ERL_NIF_TERM) { return open_resource_types(env) ? 0 : 1; }
int upgrade(ErlNifEnv* env, void**, void**, ERL_NIF_TERM) { return open_resource_types(env) ? 0 : 1; }
}  // namespace

ERL_NIF_INIT(Elixir.Nx.Vulkan.Native, nif_functions, load, nullptr, upgrade, nullptr)
