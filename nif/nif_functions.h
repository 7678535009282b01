// The NIF entry points, grouped by what they act on. Each decodes its arguments,
// calls the runtime and encodes the result; every failure is an error tuple.
#pragma once

#include <erl_nif.h>

namespace nxv::nif {

// devices.cpp
ERL_NIF_TERM list_devices(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM open_device(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM device_info(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM bytes_in_use(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM trim(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);

// buffers.cpp
ERL_NIF_TERM upload(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM download(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM buffer_info(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM free_buffer(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);

// cells.cpp
ERL_NIF_TERM cell_new(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM cell_get(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM cell_put(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM cell_put_if(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM cell_field(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);

// executables.cpp
ERL_NIF_TERM compile(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM executable_info(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM kernel_sources(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM run(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM run_spirv(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);

// explore.cpp
ERL_NIF_TERM explore(ErlNifEnv* env, int argc, const ERL_NIF_TERM argv[]);

}  // namespace nxv::nif
