// Decoding and encoding of Erlang terms for the NIF, and the one place where C++
// exceptions become `{:error, {kind, message}}` terms.
#pragma once

#include <erl_nif.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace nxv::nif {

// A malformed argument; becomes {:error, {:badarg, message}}.
class BadArg : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

ERL_NIF_TERM atom(ErlNifEnv* env, const char* name);
ERL_NIF_TERM ok(ErlNifEnv* env, ERL_NIF_TERM value);
ERL_NIF_TERM error(ErlNifEnv* env, const char* kind, const std::string& message);
ERL_NIF_TERM binary(ErlNifEnv* env, const std::string& s);

// Runs `body`; any exception is returned as an error tuple, so nothing escapes into the VM.
template <class F>
ERL_NIF_TERM guarded(ErlNifEnv* env, F&& body);
ERL_NIF_TERM error_from_current_exception(ErlNifEnv* env);

// Throw BadArg naming `what` when the term does not decode.
std::string get_string(ErlNifEnv* env, ERL_NIF_TERM term, const char* what);  // binary or charlist
uint64_t get_u64(ErlNifEnv* env, ERL_NIF_TERM term, const char* what);
std::vector<ERL_NIF_TERM> get_list(ErlNifEnv* env, ERL_NIF_TERM term, const char* what);
ErlNifBinary get_binary(ErlNifEnv* env, ERL_NIF_TERM term, const char* what);
ir::TensorType get_tensor_type(ErlNifEnv* env, ERL_NIF_TERM type, ERL_NIF_TERM shape, const char* what);

// {type_string, shape_list}
ERL_NIF_TERM make_tensor_type(ErlNifEnv* env, const ir::TensorType& t);

// A map from atom keys to the given values.
ERL_NIF_TERM make_map(ErlNifEnv* env, const std::vector<std::pair<const char*, ERL_NIF_TERM>>& entries);

template <class F>
ERL_NIF_TERM guarded(ErlNifEnv* env, F&& body) {
  try {
    return body();
  } catch (...) {
    return error_from_current_exception(env);
  }
}

}  // namespace nxv::nif
