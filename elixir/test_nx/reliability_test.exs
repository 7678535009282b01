defmodule Nx.Vulkan.ReliabilityTest do
  # Many processes, killed processes, exhausted memory and malformed graphs: the VM
  # stays up, results stay right and device memory comes back. Not async: these
  # tests measure device memory and load the device.
  use Nx.Vulkan.Case, async: false

  alias Nx.Vulkan.{Device, Native}
  import Nx.Vulkan.Eventually

  # A device configuration no other test uses, so its bytes-in-use count is ours.
  @private [device: "", cache_dir: "none", timeout: 119_999]

  test "100 concurrent processes running several jitted functions get correct results" do
    fs = [
      {Nx.Vulkan.jit(fn x, y -> Nx.sum(Nx.multiply(x, y), axes: [0]) end),
       fn x, y -> Nx.sum(Nx.multiply(x, y), axes: [0]) end},
      {Nx.Vulkan.jit(fn x, y -> Nx.dot(x, Nx.transpose(y)) end), fn x, y -> Nx.dot(x, Nx.transpose(y)) end},
      {Nx.Vulkan.jit(fn x, y -> Nx.tanh(x) |> Nx.subtract(y) |> Nx.reduce_max(axes: [1]) end),
       fn x, y -> Nx.tanh(x) |> Nx.subtract(y) |> Nx.reduce_max(axes: [1]) end}
    ]

    1..100
    |> Task.async_stream(
      fn i ->
        n = rem(i, 4) + 1
        x = Nx.iota({n, 3}, type: :f32) |> Nx.add(i) |> Nx.divide(50)
        y = Nx.iota({n, 3}, type: :f32) |> Nx.divide(10)
        {jitted, plain} = Enum.at(fs, rem(i, 3))
        # half of the calls take device tensors
        {x, y} = if rem(i, 2) == 0, do: {Nx.backend_transfer(x, Nx.Vulkan.Backend), y}, else: {x, y}

        for _ <- 1..3 do
          expected = Nx.Defn.jit_apply(plain, [x, y], compiler: Nx.Defn.Evaluator)
          assert_close(expected, jitted.(x, y))
        end

        :ok
      end,
      max_concurrency: 100,
      timeout: 240_000
    )
    |> Enum.each(fn result -> assert result == {:ok, :ok} end)
  end

  test "200 processes holding device tensors, killed mid-flight: device memory returns to baseline" do
    # (at most the baseline: the warm-up tensors below may be collected meanwhile)
    step = Nx.Vulkan.jit(fn a, b -> {Nx.add(a, b), Nx.multiply(a, 2)} end, @private)
    # Compiled executables keep their literal tensors on the device (an eager iota is
    # folded into one), so the baseline is taken once they exist.
    warm = Nx.iota({256}, type: :f32, backend: {Nx.Vulkan.Backend, @private})
    step.(warm, warm)
    :erlang.garbage_collect()
    baseline = Device.memory_in_use(@private)
    parent = self()

    pids =
      for i <- 1..200 do
        spawn(fn ->
          a = Nx.tensor(Enum.to_list(1..256), type: :f32, backend: {Nx.Vulkan.Backend, @private})
          b = Nx.iota({256}, type: :f32, backend: {Nx.Vulkan.Backend, @private})
          send(parent, {:ready, self()})

          Enum.reduce(Stream.iterate(0, &(&1 + 1)), {a, b}, fn j, {a, b} ->
            {c, d} = step.(a, b)
            # keep some tensors alive, drop others, deallocate some explicitly
            if rem(j + i, 3) == 0, do: Nx.backend_deallocate(d)
            {c, if(rem(j + i, 3) == 0, do: b, else: d)}
          end)
        end)
      end

    for pid <- pids, do: assert_receive({:ready, ^pid}, 60_000)
    assert Device.memory_in_use(@private) > baseline
    Process.sleep(200)

    refs = Enum.map(pids, &Process.monitor/1)
    Enum.each(pids, &Process.exit(&1, :kill))
    for ref <- refs, do: assert_receive({:DOWN, ^ref, :process, _, :killed}, 60_000)

    assert eventually(fn -> Device.memory_in_use(@private) <= baseline end, 5000),
           "device memory in use #{Device.memory_in_use(@private)}, baseline #{baseline}"

    # and the device still computes
    assert_close(Nx.tensor([3.0]), elem(step.(Nx.tensor([1.0]), Nx.tensor([2.0])), 0))
  end

  test "allocating past device memory is an Elixir error and the VM stays up" do
    # (lavapipe's memory is the host's: one tensor beyond the largest buffer the device
    # can address stands for "past device memory" without exhausting the machine)
    :erlang.garbage_collect()
    baseline = Device.memory_in_use(@private)
    shape = past_buffer_limit_shape()

    for _ <- 1..3 do
      error =
        assert_raise Nx.Vulkan.Error, fn ->
          Nx.Vulkan.jit(fn x -> Nx.add(Nx.broadcast(x, shape), 1) end, @private).(Nx.tensor(1.0))
        end

      assert error.kind == :out_of_memory
    end

    # (<=: buffers of the previous test's killed processes may still be going when the
    # baseline is taken)
    assert eventually(fn -> Device.memory_in_use(@private) <= baseline end, 5000),
           "device memory in use #{Device.memory_in_use(@private)}, baseline #{baseline}"

    assert Nx.to_flat_list(Nx.Vulkan.jit(&Nx.add(&1, 1), @private).(Nx.tensor([1]))) == [2]
  end

  test "malformed IR and bad inputs are errors" do
    device = Device.get!(@private)

    for json <- [
          "",
          "{",
          ~s({"version":1,"nodes":[{"id":0,"op":"nope","type":"f32","shape":[]}],"outputs":[0]})
        ] do
      assert {:error, {:ir_error, message}} = Native.compile(device, json, [])
      assert is_binary(message)
    end

    assert_raise Nx.Vulkan.Error, ~r/ir_error/, fn ->
      Nx.Vulkan.Error.unwrap!(Native.compile(device, "[]", []))
    end

    assert_raise Nx.Vulkan.Error, ~r/badarg/, fn -> Nx.Vulkan.Error.unwrap!(Native.explore(device, 1, [])) end
    assert {:error, {_, _}} = Native.explore(device, "{", [])

    # a freed device tensor given to a jitted function (of more elements than lazy mode
    # keeps on the host)
    t = Nx.backend_transfer(Nx.iota({100}, type: :f32), {Nx.Vulkan.Backend, @private})
    Nx.backend_deallocate(t)
    assert_raise Nx.Vulkan.Error, ~r/freed/, fn -> Nx.Vulkan.jit(&Nx.exp/1, @private).(t) end
  end
end
