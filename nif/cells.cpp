#include "nif/nif_functions.h"
#include "nif/resources.h"
#include "nif/terms.h"

namespace nxv::nif {

// cell_new(term): a new cell holding term
ERL_NIF_TERM cell_new(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    auto cell = std::make_unique<CellResource>();
    cell->put(argv[0]);
    return ok(env, make_resource(env, std::move(cell)));
  });
}

ERL_NIF_TERM cell_get(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] { return ok(env, get_resource<CellResource>(env, argv[0], "cell").get(env)); });
}

// cell_put(cell, term): replaces the cell's term
ERL_NIF_TERM cell_put(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    get_resource<CellResource>(env, argv[0], "cell").put(argv[1]);
    return ok(env, atom(env, "ok"));
  });
}

// cell_put_if(cell, tag, term): replaces the cell's term while it is a tuple tagged `tag`
ERL_NIF_TERM cell_put_if(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    bool replaced = get_resource<CellResource>(env, argv[0], "cell").put_if(env, argv[1], argv[2]);
    return ok(env, atom(env, replaced ? "true" : "false"));
  });
}

// cell_field(cell, tag, index): element `index` (0-based) of the cell's term while it is a
// tuple tagged `tag`, else false
ERL_NIF_TERM cell_field(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  return guarded(env, [&] {
    int index = 0;
    if (!enif_get_int(env, argv[2], &index)) throw BadArg("cell_field: the index must be an integer");
    ERL_NIF_TERM element = get_resource<CellResource>(env, argv[0], "cell").field(env, argv[1], index);
    return ok(env, element ? element : atom(env, "false"));
  });
}

}  // namespace nxv::nif
