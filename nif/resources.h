// The NIF's resource types. Each resource holds a pointer to a C++ object that
// owns shared_ptrs into the runtime; the BEAM's destructor callback deletes it
// when the last term referring to it is garbage-collected.
#pragma once

#include <erl_nif.h>

#include <memory>
#include <mutex>
#include <string>

#include "nif/terms.h"
#include "runtime/runtime.h"

namespace nxv::nif {

struct DeviceResource {
  static constexpr const char* kName = "device";
  std::shared_ptr<runtime::Device> device;
};

struct ExecutableResource {
  static constexpr const char* kName = "executable";
  std::shared_ptr<runtime::Executable> executable;
};

// A buffer may be freed explicitly (Nx.backend_deallocate) while other processes
// still hold the term, hence the lock and the "freed" state.
class BufferResource {
 public:
  static constexpr const char* kName = "buffer";
  BufferResource(std::shared_ptr<runtime::Device> device, runtime::BufferPtr buffer)
      : device_(std::move(device)), type_(buffer->type()), buffer_(std::move(buffer)) {}
  // Throws BadArg once freed.
  runtime::BufferPtr get() const;
  // False when it was already freed.
  bool free();
  const std::shared_ptr<runtime::Device>& device() const { return device_; }
  const ir::TensorType& type() const { return type_; }

 private:
  std::shared_ptr<runtime::Device> device_;
  ir::TensorType type_;
  mutable std::mutex mu_;
  runtime::BufferPtr buffer_;
};

// A mutable slot holding one Erlang term in an environment of its own: Nx.Vulkan.Backend's
// lazy tensors keep their pending expression here, then the buffer a flush computed for
// it, so that the expression (and the tensors it refers to) is released once computed.
// The term, and any resource it refers to, lives until it is replaced or the cell is
// garbage-collected.
class CellResource {
 public:
  static constexpr const char* kName = "cell";
  CellResource() : env_(enif_alloc_env()) {}
  ~CellResource() { enif_free_env(env_); }
  CellResource(const CellResource&) = delete;
  CellResource& operator=(const CellResource&) = delete;
  // A copy of the term, made in `env`.
  ERL_NIF_TERM get(ErlNifEnv* env) const;
  void put(ERL_NIF_TERM term);
  // Replaces the term only while it is a tuple whose first element is `tag` (compared as
  // terms); whether it did.
  bool put_if(ErlNifEnv* env, ERL_NIF_TERM tag, ERL_NIF_TERM term);
  // A copy, made in `env`, of element `index` of the term while it is a tuple whose first
  // element is `tag` and that has such an element; 0 otherwise. The rest of the term is not
  // copied (a pending expression holds closures and tensors).
  ERL_NIF_TERM field(ErlNifEnv* env, ERL_NIF_TERM tag, int index) const;

 private:
  mutable std::mutex mu_;
  ErlNifEnv* env_;
  ERL_NIF_TERM term_ = 0;
};

// Registers the resource types; called from the NIF's load callback.
bool open_resource_types(ErlNifEnv* env);

template <class T>
inline ErlNifResourceType* resource_type = nullptr;

// Hands `object` to the BEAM and returns its term.
template <class T>
ERL_NIF_TERM make_resource(ErlNifEnv* env, std::unique_ptr<T> object) {
  auto** slot = static_cast<T**>(enif_alloc_resource(resource_type<T>, sizeof(T*)));
  if (!slot) throw std::bad_alloc();
  *slot = object.release();
  ERL_NIF_TERM term = enif_make_resource(env, slot);
  enif_release_resource(slot);
  return term;
}

// Null when `term` is not a resource of type T.
template <class T>
T* find_resource(ErlNifEnv* env, ERL_NIF_TERM term) {
  void* slot = nullptr;
  if (!enif_get_resource(env, term, resource_type<T>, &slot)) return nullptr;
  return *static_cast<T**>(slot);
}

// Throws BadArg naming `what` when `term` is not a resource of type T.
template <class T>
T& get_resource(ErlNifEnv* env, ERL_NIF_TERM term, const char* what) {
  T* object = find_resource<T>(env, term);
  if (!object) throw BadArg(std::string(what) + ": expected a " + T::kName + " reference");
  return *object;
}

}  // namespace nxv::nif
