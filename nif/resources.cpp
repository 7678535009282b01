#include "nif/resources.h"

namespace nxv::nif {

namespace {
template <class T>
void destroy(ErlNifEnv*, void* slot) {
  delete *static_cast<T**>(slot);
}

template <class T>
bool open_type(ErlNifEnv* env, const char* name) {
  auto flags = static_cast<ErlNifResourceFlags>(ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER);
  resource_type<T> = enif_open_resource_type(env, nullptr, name, destroy<T>, flags, nullptr);
  return resource_type<T> != nullptr;
}
}  // namespace

bool open_resource_types(ErlNifEnv* env) {
  return open_type<DeviceResource>(env, "nxv_device") && open_type<ExecutableResource>(env, "nxv_executable") &&
         open_type<BufferResource>(env, "nxv_buffer") && open_type<CellResource>(env, "nxv_cell");
}

runtime::BufferPtr BufferResource::get() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!buffer_) throw BadArg("the buffer was already freed");
  return buffer_;
}

bool BufferResource::free() {
  std::lock_guard<std::mutex> lock(mu_);
  bool was_live = buffer_ != nullptr;
  buffer_.reset();
  return was_live;
}

ERL_NIF_TERM CellResource::get(ErlNifEnv* env) const {
  std::lock_guard<std::mutex> lock(mu_);
  return enif_make_copy(env, term_);
}

void CellResource::put(ERL_NIF_TERM term) {
  std::lock_guard<std::mutex> lock(mu_);
  enif_clear_env(env_);
  term_ = enif_make_copy(env_, term);
}

namespace {
// The elements of `term` while it is a tuple whose first element is `tag`, else null.
const ERL_NIF_TERM* tagged(ErlNifEnv* env, ERL_NIF_TERM term, ERL_NIF_TERM tag, int* arity) {
  const ERL_NIF_TERM* elements = nullptr;
  if (!enif_get_tuple(env, term, arity, &elements) || *arity < 1 || enif_compare(elements[0], tag) != 0) return nullptr;
  return elements;
}
}  // namespace

ERL_NIF_TERM CellResource::field(ErlNifEnv* env, ERL_NIF_TERM tag, int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  int arity = 0;
  const ERL_NIF_TERM* elements = tagged(env_, term_, tag, &arity);
  if (!elements || index < 0 || index >= arity) return 0;
  return enif_make_copy(env, elements[index]);
}

bool CellResource::put_if(ErlNifEnv* env, ERL_NIF_TERM tag, ERL_NIF_TERM term) {
  std::lock_guard<std::mutex> lock(mu_);
  int arity = 0;
  if (!tagged(env_, term_, tag, &arity)) return false;
  (void)env;
  enif_clear_env(env_);
  term_ = enif_make_copy(env_, term);
  return true;
}

}  // namespace nxv::nif
