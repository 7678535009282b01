# Writes unit_tests/graphs/randint_s64.json: Nx.Random.randint(key, 0, 10, shape: {6}) (s64
# draws: threefry bits as u64, remainders, products) as Elixir's compiler serialises it for
# a GPU (f32 kept in f32), for unit_tests/runtime_fusion_test.cpp. From elixir/, with Nx
# available:
#
#   NX_PATH=... mix run ../unit_tests/graphs/randint_graph.exs
expr = Nx.Defn.debug_expr_apply(&Nx.Random.randint(&1, 0, 10, shape: {6}), [Nx.template({2}, :u32)])
{graph, _used} = Nx.Vulkan.IR.build(expr, name: "randint", f32_in_f64: false)
File.write!(Path.join(__DIR__, "randint_s64.json"), Nx.Vulkan.JSON.encode(graph))
