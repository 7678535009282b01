defmodule Nx.Vulkan.NativeTest do
  # The NIF on its own (no Nx): devices, buffers, compiling and running IR text,
  # and that every failure is an error tuple rather than a crash. Not async: one
  # test counts the device memory in use.
  use ExUnit.Case, async: false

  alias Nx.Vulkan.{Device, JSON, Native}
  import Nx.Vulkan.Eventually

  setup_all do
    %{device: Device.get!()}
  end

  defp f32(list), do: for(x <- list, into: <<>>, do: <<x::float-32-little>>)
  defp from_f32(bin), do: for(<<x::float-32-little <- bin>>, do: x)

  defp param(id, index, type, shape),
    do: %{id: id, op: "parameter", type: type, shape: shape, attrs: %{index: index}}

  # a + b on two f32[n] vectors
  defp add_graph(n) do
    JSON.encode(%{
      version: 1,
      name: "add",
      nodes: [
        param(0, 0, "f32", [n]),
        param(1, 1, "f32", [n]),
        %{id: 2, op: "add", args: [0, 1], type: "f32", shape: [n]}
      ],
      outputs: [2]
    })
  end

  test "lists devices with their capabilities" do
    assert {:ok, [device | _]} = Native.list_devices()
    assert %{index: 0, name: name, type: type, caps: %{float64: f64}} = device
    assert is_binary(name) and type in ~w(discrete integrated virtual cpu other)
    assert is_boolean(f64)
  end

  test "the opened device describes itself", %{device: device} do
    assert {:ok, %{name: name}} = Native.device_info(device)
    assert {:ok, devices} = Native.list_devices()
    assert name in Enum.map(devices, & &1.name)
  end

  test "uploads and downloads every type unchanged", %{device: device} do
    for {type, bytes} <- [{"f32", 4}, {"f64", 8}, {"s64", 8}, {"u8", 1}, {"s16", 2}, {"bf16", 2}] do
      data = :crypto.strong_rand_bytes(6 * bytes)
      assert {:ok, buffer} = Native.upload(device, type, [2, 3], data)
      assert {:ok, {^type, [2, 3]}} = Native.buffer_info(buffer)
      assert {:ok, ^data} = Native.download(buffer)
    end
  end

  test "compiles IR and runs it on binaries and on buffers", %{device: device} do
    assert {:ok, exe} = Native.compile(device, add_graph(4), [])

    assert {:ok, %{inputs: [{"f32", [4]}, {"f32", [4]}], outputs: [{"f32", [4]}]}} =
             Native.executable_info(exe)

    a = [1.5, -2.0, 0.25, 1.0e10]
    b = [2.25, 2.0, -0.5, 1.0]
    expected = Enum.zip_with(a, b, &(&1 + &2))

    assert {:ok, {[out], stats}} = Native.run(exe, [{"f32", [4], f32(a)}, {"f32", [4], f32(b)}], :binaries)
    assert from_f32(out) == from_f32(f32(expected))
    assert %{dispatches: d, wall_ms: wall} = stats
    assert d >= 1 and wall >= 0

    {:ok, buf_a} = Native.upload(device, "f32", [4], f32(a))
    {:ok, buf_b} = Native.upload(device, "f32", [4], f32(b))
    assert {:ok, {[out_buf], _}} = Native.run(exe, [buf_a, buf_b], :buffers)
    assert {:ok, ^out} = Native.download(out_buf)
    # an output buffer is an input like any other
    assert {:ok, {[twice], _}} = Native.run(exe, [out_buf, out_buf], :binaries)
    assert from_f32(twice) == from_f32(f32(Enum.map(expected, &(&1 * 2))))
  end

  test "explore shows the graph as read, after each pass, the kernels and the dispatch count", %{
    device: device
  } do
    assert {:ok, info} = Native.explore(device, add_graph(4), [])

    assert %{source: source, passes: [_ | _] = passes, lowered: lowered, kernels: [kernel | _], dispatches: n} =
             info

    assert source =~ ~s("add")
    assert {_, ^lowered} = List.last(passes)
    assert lowered =~ ~s("kernel")
    assert %{name: name, spirv: spirv, glsl: glsl, validation: "ok", fused: [_ | _]} = kernel
    assert is_binary(name) and spirv =~ "OpEntryPoint" and glsl =~ "void main"
    assert n == length(info.kernels)

    # the same dispatches as a run of the compiled executable
    {:ok, exe} = Native.compile(device, add_graph(4), [])

    {:ok, {_, %{dispatches: ^n}}} =
      Native.run(exe, [{"f32", [4], f32([1, 2, 3, 4])}, {"f32", [4], f32([1, 2, 3, 4])}], :binaries)

    # one named pass
    {first, _} = hd(passes)
    assert {:ok, %{passes: [{^first, _}]}} = Native.explore(device, add_graph(4), [first])
    assert {:error, {_, _}} = Native.explore(device, add_graph(4), ["no_such_pass"])
    assert {:error, {:ir_error, _}} = Native.explore(device, "{", [])
  end

  test "malformed arguments are errors, not crashes", %{device: device} do
    {:ok, exe} = Native.compile(device, add_graph(2), [])
    {:ok, buffer} = Native.upload(device, "f32", [2], f32([1.0, 2.0]))

    for result <- [
          Native.upload(:not_a_device, "f32", [1], f32([1.0])),
          Native.upload(device, "f32", [3], f32([1.0])),
          Native.upload(device, "c64", [1], <<0::64>>),
          Native.upload(device, "f32", [-1], <<>>),
          Native.upload(device, "f32", :shape, <<>>),
          Native.download(device),
          Native.compile(device, 42, []),
          Native.compile(device, add_graph(2), [:no_such_pass]),
          Native.run(buffer, [], :binaries),
          Native.run(exe, [buffer], :binaries),
          Native.run(exe, [buffer, {"f64", [2], <<0::128>>}], :binaries),
          Native.run(exe, [buffer, {"f32", [2], <<0::32>>}], :binaries),
          Native.run(exe, [buffer, :nope], :binaries),
          Native.run(exe, [buffer, buffer], :sideways),
          Native.open_device("no such device name", "none", 1000)
        ] do
      assert {:error, {kind, message}} = result
      assert is_atom(kind) and is_binary(message) and message != ""
    end
  end

  test "malformed IR is rejected with a message naming the problem", %{device: device} do
    node = fn id, op, args, type, shape -> %{id: id, op: op, args: args, type: type, shape: shape} end
    graph = fn nodes, outputs -> JSON.encode(%{version: 1, nodes: nodes, outputs: outputs}) end
    p = param(0, 0, "f32", [2])

    cases = [
      {"not json at all", ~r/./},
      {~s({"version": 1, "nodes": [}), ~r/./},
      {~s({"version": 2, "nodes": [], "outputs": []}), ~r/version/},
      {graph.([p, node.(1, "frobnicate", [0], "f32", [2])], [1]), ~r/frobnicate/},
      {graph.([p, node.(1, "exp", [7], "f32", [2])], [1]), ~r/7/},
      {graph.([p, node.(1, "exp", [0], "f32", [3])], [1]), ~r/node 1/},
      {graph.([p, node.(1, "exp", [0], "s32", [2])], [1]), ~r/node 1/},
      {graph.([p, node.(1, "add", [0], "f32", [2])], [1]), ~r/node 1/},
      {graph.([p, node.(1, "exp", [0], "c64", [2])], [1]), ~r/c64|complex/},
      {graph.([p, Map.put(node.(1, "sum", [0], "f32", []), :attrs, %{axes: [3]})], [1]), ~r/node 1/},
      {graph.([p], [5]), ~r/5/}
    ]

    for {json, pattern} <- cases do
      assert {:error, {kind, message}} = Native.compile(device, json, [])
      assert kind in [:ir_error, :invalid_argument], "#{json}: #{kind}: #{message}"
      assert message =~ pattern, "#{json}: #{message}"
    end

    # the VM and the device are still fine
    {:ok, exe} = Native.compile(device, add_graph(1), [])

    assert {:ok, {[out], _}} =
             Native.run(exe, [{"f32", [1], f32([1.0])}, {"f32", [1], f32([2.0])}], :binaries)

    assert from_f32(out) == [3.0]
  end

  test "a freed buffer is an error to use; freeing twice is harmless", %{device: device} do
    {:ok, buffer} = Native.upload(device, "f32", [2], f32([1.0, 2.0]))
    assert {:ok, :ok} = Native.free(buffer)
    assert {:ok, :already_deallocated} = Native.free(buffer)
    assert {:error, {:badarg, message}} = Native.download(buffer)
    assert message =~ "freed"
  end

  test "buffers are released when the BEAM collects them" do
    # A private device configuration so that concurrent tests do not disturb the count.
    {:ok, device} = Native.open_device("", "none", 60_000)
    {:ok, before} = Native.bytes_in_use(device)

    task =
      Task.async(fn ->
        {:ok, _buffer} = Native.upload(device, "f32", [1024, 256], :binary.copy(<<0>>, 1024 * 1024))
        {:ok, during} = Native.bytes_in_use(device)
        during
      end)

    assert Task.await(task) >= before + 1024 * 1024
    :erlang.garbage_collect()
    assert eventually(fn -> Native.bytes_in_use(device) == {:ok, before} end, 1000)
  end

  test "allocating past device memory is an error and the VM stays up", %{device: device} do
    # A constant broadcast to just under 2^31 f64 elements (16 GiB) as the graph's output:
    # within 32-bit indexing, beyond what the device can hold in one buffer.
    huge =
      JSON.encode(%{
        version: 1,
        nodes: [%{id: 0, op: "constant", type: "f64", shape: [65_536, 32_767], attrs: %{value: 1.0}}],
        outputs: [0]
      })

    result =
      case Native.compile(device, huge, []) do
        {:ok, exe} -> Native.run(exe, [], :buffers)
        error -> error
      end

    assert {:error, {kind, message}} = result
    assert kind in [:out_of_memory, :unsupported], "#{kind}: #{message}"

    {:ok, exe} = Native.compile(device, add_graph(1), [])
    assert {:ok, _} = Native.run(exe, [{"f32", [1], f32([1.0])}, {"f32", [1], f32([2.0])}], :binaries)
  end

  test "many processes compile, transfer and run at once", %{device: device} do
    results =
      1..50
      |> Task.async_stream(
        fn i ->
          n = rem(i, 5) + 1
          {:ok, exe} = Native.compile(device, add_graph(n), [])
          a = Enum.map(1..n, &(&1 * 1.0 + i))
          {:ok, buf} = Native.upload(device, "f32", [n], f32(a))
          {:ok, {[out], _}} = Native.run(exe, [buf, {"f32", [n], f32(a)}], :binaries)
          from_f32(out) == Enum.map(a, &(&1 * 2))
        end,
        max_concurrency: 50,
        timeout: 120_000
      )
      |> Enum.map(fn {:ok, ok?} -> ok? end)

    assert Enum.all?(results)
  end

  test "a cell holds one term, resources included, shared by every process", %{device: device} do
    {:ok, buf} = Native.upload(device, "f32", [2], f32([1.0, 2.0]))
    {:ok, cell} = Native.cell_new({:value, buf, %{a: [1, 2.5, "x"]}})
    assert {:ok, {:value, ^buf, %{a: [1, 2.5, "x"]}}} = Native.cell_get(cell)
    assert {:ok, :ok} = Native.cell_put(cell, :replaced)
    assert Task.async(fn -> Native.cell_get(cell) end) |> Task.await() == {:ok, :replaced}
    assert {:ok, :ok} = Task.async(fn -> Native.cell_put(cell, {:from, self()}) end) |> Task.await()
    assert {:ok, {:from, pid}} = Native.cell_get(cell)
    assert is_pid(pid)
    assert {:error, {:badarg, _}} = Native.cell_get(buf)

    # replaced only while tagged as given
    assert {:ok, true} = Native.cell_put_if(cell, :from, {:pending, 1})
    assert {:ok, false} = Native.cell_put_if(cell, :value, :nope)
    assert {:ok, true} = Native.cell_put_if(cell, :pending, :done)
    assert {:ok, false} = Native.cell_put_if(cell, :pending, :again)
    assert Native.cell_get(cell) == {:ok, :done}
  end

  test "cell_field reads one element of a tagged tuple", %{device: device} do
    {:ok, buf} = Native.upload(device, "f32", [2], f32([1.0, 2.0]))
    {:ok, cell} = Native.cell_new({:pending, :add, fn -> buf end, [buf], 3, false})
    assert Native.cell_field(cell, :pending, 4) == {:ok, 3}
    assert Native.cell_field(cell, :pending, 3) == {:ok, [buf]}
    assert Native.cell_field(cell, :pending, 0) == {:ok, :pending}
    # another tag, an index past the tuple or before it, a term that is no tuple
    assert Native.cell_field(cell, :value, 4) == {:ok, false}
    assert Native.cell_field(cell, :pending, 6) == {:ok, false}
    assert Native.cell_field(cell, :pending, -1) == {:ok, false}
    assert {:ok, :ok} = Native.cell_put(cell, :deallocated)
    assert Native.cell_field(cell, :pending, 4) == {:ok, false}
    assert {:error, {:badarg, _}} = Native.cell_field(cell, :pending, :x)
    assert {:error, {:badarg, _}} = Native.cell_field(buf, :pending, 4)
  end

  test "run uploads host inputs and downloads results together", %{device: device} do
    # a + b, exact in f32, for inputs of several sizes given as binaries, or beside a buffer
    for n <- [1, 3, 257, 4099] do
      a = Enum.map(1..n, &(&1 * 0.5))
      b = Enum.map(1..n, &(-&1 * 0.25))
      {:ok, exe} = Native.compile(device, add_graph(n), [])
      {:ok, buf} = Native.upload(device, "f32", [n], f32(a))

      for inputs <- [[{"f32", [n], f32(a)}, {"f32", [n], f32(b)}], [buf, {"f32", [n], f32(b)}]] do
        {:ok, {[out], _}} = Native.run(exe, inputs, :binaries)
        assert from_f32(out) == Enum.zip_with(a, b, &(&1 + &2))
      end
    end
  end
end
