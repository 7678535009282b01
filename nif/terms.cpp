#include "nif/terms.h"

#include <cstring>
#include <new>

#include "runtime/runtime.h"

namespace nxv::nif {

ERL_NIF_TERM atom(ErlNifEnv* env, const char* name) {
  ERL_NIF_TERM a;
  if (enif_make_existing_atom(env, name, &a, ERL_NIF_LATIN1)) return a;
  return enif_make_atom(env, name);
}

ERL_NIF_TERM ok(ErlNifEnv* env, ERL_NIF_TERM value) { return enif_make_tuple2(env, atom(env, "ok"), value); }

ERL_NIF_TERM binary(ErlNifEnv* env, const std::string& s) {
  ERL_NIF_TERM term;
  unsigned char* data = enif_make_new_binary(env, s.size(), &term);
  if (!s.empty()) std::memcpy(data, s.data(), s.size());
  return term;
}

ERL_NIF_TERM error(ErlNifEnv* env, const char* kind, const std::string& message) {
  return enif_make_tuple2(env, atom(env, "error"), enif_make_tuple2(env, atom(env, kind), binary(env, message)));
}

ERL_NIF_TERM error_from_current_exception(ErlNifEnv* env) {
  try {
    throw;
  } catch (const BadArg& e) {
    return error(env, "badarg", e.what());
  } catch (const ir::IrError& e) {
    return error(env, "ir_error", e.what());
  } catch (const runtime::Error& e) {
    return error(env, runtime::error_kind_name(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return error(env, "out_of_memory", "host memory allocation failed");
  } catch (const std::exception& e) {
    return error(env, "exception", e.what());
  } catch (...) {
    return error(env, "exception", "unknown C++ exception");
  }
}

std::string get_string(ErlNifEnv* env, ERL_NIF_TERM term, const char* what) {
  ErlNifBinary bin;
  if (enif_inspect_binary(env, term, &bin) || enif_inspect_iolist_as_binary(env, term, &bin))
    return std::string(reinterpret_cast<const char*>(bin.data), bin.size);
  throw BadArg(std::string(what) + ": expected a string");
}

uint64_t get_u64(ErlNifEnv* env, ERL_NIF_TERM term, const char* what) {
  ErlNifUInt64 v;
  if (!enif_get_uint64(env, term, &v)) throw BadArg(std::string(what) + ": expected a non-negative integer");
  return v;
}

std::vector<ERL_NIF_TERM> get_list(ErlNifEnv* env, ERL_NIF_TERM term, const char* what) {
  unsigned len;
  if (!enif_get_list_length(env, term, &len)) throw BadArg(std::string(what) + ": expected a list");
  std::vector<ERL_NIF_TERM> items;
  items.reserve(len);
  ERL_NIF_TERM head, tail = term;
  while (enif_get_list_cell(env, tail, &head, &tail)) items.push_back(head);
  return items;
}

ErlNifBinary get_binary(ErlNifEnv* env, ERL_NIF_TERM term, const char* what) {
  ErlNifBinary bin;
  if (!enif_inspect_binary(env, term, &bin)) throw BadArg(std::string(what) + ": expected a binary");
  return bin;
}

ir::TensorType get_tensor_type(ErlNifEnv* env, ERL_NIF_TERM type, ERL_NIF_TERM shape, const char* what) {
  ir::TensorType t;
  try {
    t.dtype = ir::parse_dtype(get_string(env, type, what));
  } catch (const ir::IrError& e) {
    throw BadArg(std::string(what) + ": " + e.what());
  }
  for (ERL_NIF_TERM dim : get_list(env, shape, (std::string(what) + ": shape").c_str())) {
    ErlNifSInt64 d;
    if (!enif_get_int64(env, dim, &d) || d < 0)
      throw BadArg(std::string(what) + ": shape must be a list of non-negative integers");
    t.shape.push_back(d);
  }
  // Element and byte counts are int64 everywhere past this point: a shape whose byte size
  // overflows would otherwise wrap to a small size that a short binary matches.
  int64_t bytes = ir::dtype_bytes(t.dtype);
  for (int64_t d : t.shape)
    if (__builtin_mul_overflow(bytes, d, &bytes))
      throw BadArg(std::string(what) + ": " + ir::to_string(t) + " is too large: its byte size overflows 64 bits");
  return t;
}

ERL_NIF_TERM make_tensor_type(ErlNifEnv* env, const ir::TensorType& t) {
  std::vector<ERL_NIF_TERM> dims;
  for (int64_t d : t.shape) dims.push_back(enif_make_int64(env, d));
  return enif_make_tuple2(env, binary(env, ir::dtype_name(t.dtype)),
                          enif_make_list_from_array(env, dims.data(), static_cast<unsigned>(dims.size())));
}

ERL_NIF_TERM make_map(ErlNifEnv* env, const std::vector<std::pair<const char*, ERL_NIF_TERM>>& entries) {
  std::vector<ERL_NIF_TERM> keys, values;
  for (const auto& [k, v] : entries) {
    keys.push_back(atom(env, k));
    values.push_back(v);
  }
  ERL_NIF_TERM map;
  enif_make_map_from_arrays(env, keys.data(), values.data(), keys.size(), &map);
  return map;
}

}  // namespace nxv::nif
