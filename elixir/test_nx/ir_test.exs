defmodule Nx.Vulkan.IRTest do
  # The serialiser on its own: these tests need no device.
  use Nx.Vulkan.Case, async: true

  import Nx.Defn
  alias Nx.Vulkan.{IR, JSON}

  defn(loop(x), do: while({x, i = 0}, i < 3, do: {x * 2, i + 1}))

  defn branches(x, y) do
    z = x * y

    if Nx.sum(x) > 0 do
      z + 1
    else
      Nx.exp(z) - y
    end
  end

  defn nested(x, flag) do
    if flag > 0 do
      if flag > 1, do: x * 2, else: x * 3
    else
      x
    end
  end

  defn(loop_with_branch(x), do: while({x, i = 0}, i < 4, do: {if(i > 1, do: x + 1, else: x - 1), i + 1}))

  defp ops(graph), do: graph |> all_nodes() |> Enum.map(& &1.op)

  # The type Nx gives an integer literal: s64 before Nx 0.9, s32 since.
  defp integer_literal_type, do: Nx.Vulkan.IR.type_name(Nx.type(300))

  test "elementwise, reduction and dot nodes carry Nx's types and shapes" do
    {graph, used} =
      graph(fn x, y -> x |> Nx.exp() |> Nx.add(1) |> Nx.log() |> Nx.sum(axes: [1]) |> Nx.dot(y) end, [
        Nx.iota({2, 3}, type: :f32),
        Nx.tensor([1.0, 2.0])
      ])

    assert_well_formed(graph)
    assert used == [0, 1]
    assert %{version: 1, outputs: [out]} = graph
    nodes = Map.new(graph.nodes, &{&1.id, &1})
    assert %{op: "dot", type: "f32", shape: []} = nodes[out]
    assert %{op: "sum", shape: [2], attrs: %{axes: [1], keep_axes: false}} = nodes[hd(nodes[out].args)]
  end

  test "IR type names, and a clear error for types the IR lacks" do
    for type <- [s: 8, u: 16, s: 32, u: 64, f: 16, bf: 16, f: 32, f: 64] do
      assert Nx.Vulkan.IR.type_name(type) == Nx.Type.to_string(type)
    end

    # Nx 0.13's 8-bit floats and sub-byte integers
    for type <- [f: 8, u: 2, s: 4] do
      assert_raise ArgumentError, ~r/does not support type #{Nx.Type.to_string(type)}/, fn ->
        Nx.Vulkan.IR.type_name(type)
      end
    end
  end

  test "only used inputs become parameters, numbered densely" do
    {graph, used} = graph(fn _a, b, _c, d -> Nx.add(d, b) end, Enum.map(1..4, &Nx.tensor(&1 * 1.0)))
    params = for %{op: "parameter"} = n <- graph.nodes, do: n.attrs.index
    assert Enum.sort(params) == [0, 1]
    assert Enum.sort(used) == [1, 3]
  end

  test "special float constants and literal tensors" do
    {graph, _} =
      graph(
        fn x ->
          {Nx.add(x, Nx.Constants.nan()), Nx.add(x, Nx.Constants.neg_infinity()), Nx.multiply(x, -0.0),
           Nx.add(x, Nx.tensor([1.5, 2.5]))}
        end,
        [Nx.tensor([1.0, 2.0])]
      )

    values = for %{op: "constant", attrs: %{value: v}} <- graph.nodes, do: v
    assert "nan" in values and "-inf" in values and "-0.0" in values
    [literal] = for %{op: "tensor"} = n <- graph.nodes, do: n
    assert Base.decode64!(literal.attrs.data_b64) == Nx.to_binary(Nx.tensor([1.5, 2.5]))
  end

  test "number literals take the type Nx gives the operation's result" do
    {graph, _} =
      graph(
        fn s, u, h ->
          {Nx.add(s, 1), Nx.multiply(u, 300), Nx.divide(s, 2), Nx.multiply(h, 1.5), Nx.less(u, 1)}
        end,
        [Nx.tensor([1], type: :s32), Nx.tensor([1], type: :u8), Nx.tensor([1.0], type: :bf16)]
      )

    constants = for %{op: "constant"} = n <- graph.nodes, do: {n.type, n.attrs.value}
    # u8 * 300 is u16 in Nx; an integer literal that fits the compared tensor's type takes it
    assert Enum.sort(constants) ==
             Enum.sort([{"s32", 1}, {"u16", 300}, {"f32", 2.0}, {"bf16", 1.5}, {"u8", 1}])

    # one that does not fit keeps Nx's literal type (compared in the merged type)
    {graph, _} = graph(fn u -> Nx.less(u, 300) end, [Nx.tensor([1], type: :u8)])
    assert [{int, 300}] = for(%{op: "constant"} = n <- graph.nodes, do: {n.type, n.attrs.value})
    assert int == integer_literal_type()

    # float literals keep the precision Nx stores them in, the value the evaluator
    # multiplies by: Nx 0.7 makes 1.0e15 an f32 constant (999_999_986_991_104.0), Nx 0.13
    # an f64 one
    scale = fn x -> Nx.multiply(x, 1.0e15) end
    {graph, _} = graph(scale, [Nx.tensor([1.0], type: :f64)])

    [nx_value] =
      Nx.to_flat_list(Nx.Defn.jit_apply(scale, [Nx.tensor([1.0], type: :f64)], compiler: Nx.Defn.Evaluator))

    assert [{"f64", ^nx_value}] = for(%{op: "constant"} = n <- graph.nodes, do: {n.type, n.attrs.value})
  end

  test "a number literal combined with a vectorized tensor takes the operation's type" do
    # Nx reshapes the literal to the vectorized tensor's rank; Nx.LinAlg.svd's `u8 + 1` is one
    f = fn x -> x |> Nx.vectorize(:v) |> Nx.add(1) |> Nx.devectorize() end
    x = Nx.tensor([1, 255], type: :u8)
    {graph, _} = graph(f, [x])
    assert [{"u8", 1}] = for(%{op: "constant"} = n <- graph.nodes, do: {n.type, n.attrs.value})
    assert_matches_evaluator(f, [x])
  end

  test "dynamic slice starts become arguments" do
    {graph, _} = graph(fn x, i -> Nx.slice(x, [i, 1], [1, 2]) end, [Nx.iota({3, 3}), Nx.tensor(1)])
    [slice] = for %{op: "slice"} = n <- graph.nodes, do: n
    assert length(slice.args) == 3
    assert slice.attrs.start == [%{arg: 1}, %{arg: 2}]
  end

  test "while becomes a node with condition and body regions over the state" do
    {graph, _} = graph(&loop/1, [Nx.iota({2, 3}, type: :f32)])
    assert_well_formed(graph)
    [w] = for %{op: "while"} = n <- graph.nodes, do: n
    assert w.results == [%{type: "f32", shape: [2, 3]}, %{type: integer_literal_type(), shape: []}]
    assert length(w.args) == 2
    assert [%{op: "less", type: "u8", shape: []}] = for(%{op: "less"} = n <- w.regions.condition.nodes, do: n)
    assert length(w.regions.body.outputs) == 2
    assert Enum.count(graph.nodes, &(&1.op == "elem")) == 2
  end

  test "cond branches receive the values they share with the enclosing scope" do
    {graph, _} = graph(&branches/2, [Nx.iota({2, 3}, type: :f32), Nx.iota({2, 3}, type: :f32)])
    assert_well_formed(graph)
    [c] = for %{op: "cond"} = n <- graph.nodes, do: n
    assert map_size(c.regions) == 2
    # one predicate, then z = x * y (used by both branches) and y
    [pred | captured] = c.args
    assert Enum.find(graph.nodes, &(&1.id == pred)).type == "u8"
    assert length(captured) == 2

    for {_, branch} <- c.regions do
      for %{op: "parameter", attrs: %{index: i}} <- branch.nodes, do: assert(i < length(captured))
      refute Enum.any?(branch.nodes, &(&1.op == "multiply")), "z is computed outside the cond"
    end
  end

  test "nested conds capture through every level" do
    {graph, _} = graph(&nested/2, [Nx.iota({3}, type: :f32), Nx.tensor(2)])
    assert_well_formed(graph)
    assert Enum.count(ops(graph), &(&1 == "cond")) == 2
  end

  test "a cond inside a loop body captures the loop state" do
    {graph, _} = graph(&loop_with_branch/1, [Nx.iota({3}, type: :f32)])
    assert_well_formed(graph)
    [w] = for %{op: "while"} = n <- graph.nodes, do: n
    assert [_] = for(%{op: "cond"} = n <- w.regions.body.nodes, do: n)
  end

  test "optional: native ops stay, others inline their default implementation" do
    {graph, _} = graph(&Nx.logical_not/1, [Nx.tensor([0, 1])])
    assert "logical_not" in ops(graph)

    {graph, _} = graph(&Nx.all_close/2, [Nx.tensor([1.0, 2.0]), Nx.tensor([1.0, 2.1])])
    assert_well_formed(graph)
    refute "optional" in ops(graph)
    assert "less_equal" in ops(graph)
  end

  test "metadata (stop_grad, custom_grad, hooks without callbacks) is unwrapped" do
    {graph, _} =
      graph(fn x -> x |> Nx.Defn.Kernel.stop_grad() |> Nx.exp() |> Nx.Defn.Kernel.hook(:unused) end, [
        Nx.tensor([1.0])
      ])

    assert ops(graph) == ["parameter", "exp"]
  end

  test "unsupported ops and complex types raise clear errors" do
    unknown = put_in(Nx.Defn.debug_expr_apply(&Nx.exp/1, [Nx.tensor([1.0])]).data.op, :no_such_op)
    assert_raise ArgumentError, ~r/cannot compile :no_such_op/, fn -> Nx.Vulkan.IR.build(unknown) end

    assert_raise ArgumentError, ~r/does not support :reduce on complex tensors \(arguments c64/, fn ->
      graph(&Nx.reduce(&1, 0, fn a, b -> Nx.add(a, b) end), [Nx.tensor([Complex.new(1.0, 2.0), 3])])
    end
  end

  test "vectorized inputs are serialised devectorized" do
    x = Nx.iota({2, 3}, type: :f32) |> Nx.vectorize(:rows)
    {graph, _} = graph(&Nx.sum/1, [x])
    assert [%{op: "parameter", shape: [2, 3]} | _] = graph.nodes
    assert %{op: "sum", shape: [2]} = List.last(graph.nodes)
  end

  test "the JSON text is deterministic and escapes strings" do
    {graph, _} = graph(&Nx.exp/1, [Nx.tensor([1.0])], name: "a \"quoted\" name")
    assert JSON.encode(graph) == JSON.encode(graph)
    assert JSON.encode(graph) =~ ~s("name":"a \\"quoted\\" name")
    assert JSON.encode(%{x: [1, 2.5, nil, true]}) == ~s({"x":[1,2.5,null,true]})
  end

  test "type names" do
    assert IR.type_name({:bf, 16}) == "bf16"
    assert IR.type_name({:u, 8}) == "u8"
    assert_raise ArgumentError, fn -> IR.type_name({:c, 64}) end
  end
end
