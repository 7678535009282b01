defmodule Nx.Vulkan.CompilerTest do
  # The compiler's behaviour around the graph: caching, containers, outputs,
  # telemetry, concurrency and failures that must leave the VM running.
  use Nx.Vulkan.Case, async: false

  import Nx.Defn

  defn(softplus(x), do: Nx.log(1 + Nx.exp(x)))

  # n dependent matrix products in one submit
  defn repeated_dots(a, n) do
    {_, _, acc, _} = while {i = 0, n, acc = a, a}, i < n, do: {i + 1, n, Nx.dot(acc, a) / 256, a}
    acc
  end

  defn(containers(%{a: a, b: {b, c}}), do: %{sum: a + b, pair: {c * 2, Nx.sum(a)}})

  setup do
    test_pid = self()
    id = make_ref()

    :telemetry.attach_many(
      id,
      [[:nx_vulkan, :compile], [:nx_vulkan, :run]],
      &__MODULE__.forward_event/4,
      test_pid
    )

    on_exit(fn -> :telemetry.detach(id) end)
  end

  def forward_event(event, measurements, meta, pid), do: send(pid, {event, measurements, meta})

  test "a repeated call runs the cached executable without compiling again" do
    # shapes no other test compiles softplus for: the executable cache is global
    f = Nx.Vulkan.jit(&softplus/1)
    x = Nx.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    f.(x)
    assert_received {[:nx_vulkan, :compile], %{compile_time: c, eval_time: e, total_time: t}, %{key: _}}
    assert c >= 0 and e >= 0 and t >= c

    assert_received {[:nx_vulkan, :run],
                     %{dispatches: d, submits: s, total_time: _, wall_ms: _, device_ms: _}, _}

    assert d >= 1 and s >= 1

    for i <- 1..3 do
      y = Nx.add(x, i)
      result = f.(y)
      refute_received {[:nx_vulkan, :compile], _, _}
      assert_received {[:nx_vulkan, :run], _, _}
      assert_close(Nx.Defn.jit_apply(&softplus/1, [y], compiler: Nx.Defn.Evaluator), result)
    end

    # a new jit of the same function shares the cache; device tensors hit it too
    Nx.Vulkan.jit(&softplus/1).(Nx.backend_transfer(x, Nx.Vulkan.Backend))
    refute_received {[:nx_vulkan, :compile], _, _}

    # other shapes, types and names are new compilations
    f.(Nx.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]))
    assert_received {[:nx_vulkan, :compile], _, _}
    f.(Nx.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], type: :f16))
    assert_received {[:nx_vulkan, :compile], _, _}
    f.(Nx.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], names: [:x]))
    assert_received {[:nx_vulkan, :compile], _, _}

    # cache: false compiles on every call
    g = Nx.Vulkan.jit(&softplus/1, cache: false)
    g.(x)
    g.(x)
    assert_received {[:nx_vulkan, :compile], _, _}
    assert_received {[:nx_vulkan, :compile], _, _}
  end

  test "a repeated call pays only the run: the cache hit is cheap" do
    f = Nx.Vulkan.jit(fn x -> Nx.multiply(x, 3) end)
    x = Nx.tensor([1, 2, 3], type: :s32)
    f.(x)
    assert_received {[:nx_vulkan, :compile], %{total_time: compile_us}, _}
    {us, _} = :timer.tc(fn -> for _ <- 1..20, do: f.(x) end)
    refute_received {[:nx_vulkan, :compile], _, _}
    # 20 cached calls together take well under one compilation plus some slack
    assert us / 20 < compile_us + 50_000
  end

  test "outputs are device tensors unless output: :host" do
    x = Nx.tensor([1.0, 2.0])
    assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = Nx.Vulkan.jit(&softplus/1).(x)
    assert %Nx.Tensor{data: %Nx.BinaryBackend{}} = Nx.Vulkan.jit(&softplus/1, output: :host).(x)
  end

  test "maps, tuples and device tensors as inputs and outputs" do
    a = Nx.tensor([1.0, 2.0])
    input = %{a: a, b: {Nx.tensor([3.0, 4.0]), Nx.tensor(5, type: :s32)}}
    result = assert_matches_evaluator(&containers/1, [input])
    assert %{sum: _, pair: {_, _}} = result

    # device tensors go back in without a host round trip
    assert_matches_evaluator(&softplus/1, [result.sum])
  end

  test "outputs that alias inputs or each other are separate tensors: freeing one leaves the others" do
    x = Nx.backend_transfer(Nx.tensor([1.0, 2.0, 3.0]), Nx.Vulkan.Backend)
    f = Nx.Vulkan.jit(fn x -> {x, x, Nx.add(x, 1), x} end)
    {a, b, c, d} = f.(x)

    # the same buffer returned several times, and the input itself
    assert Nx.backend_deallocate(a) == :ok
    assert Nx.to_flat_list(b) == [1.0, 2.0, 3.0]
    assert Nx.to_flat_list(x) == [1.0, 2.0, 3.0]
    assert Nx.backend_deallocate(b) == :ok
    assert Nx.backend_deallocate(b) == :already_deallocated
    assert Nx.to_flat_list(d) == [1.0, 2.0, 3.0]
    assert Nx.to_flat_list(c) == [2.0, 3.0, 4.0]

    # freeing the input leaves the outputs that alias it
    assert Nx.backend_deallocate(x) == :ok
    assert Nx.to_flat_list(d) == [1.0, 2.0, 3.0]
    # and an output can go back in as an input, several times in one call
    assert_close(Nx.tensor([2.0, 4.0, 6.0]), Nx.Vulkan.jit(&Nx.add/2).(d, d))

    # backend_transfer to the host frees only that tensor's reference
    y = Nx.backend_transfer(Nx.tensor([5, 6]), Nx.Vulkan.Backend)
    {y1, y2} = Nx.Vulkan.jit(&{&1, &1}).(y)
    assert Nx.to_flat_list(Nx.backend_transfer(y1, Nx.BinaryBackend)) == [5, 6]
    assert Nx.to_flat_list(y2) == [5, 6]
    assert Nx.to_flat_list(y) == [5, 6]
  end

  test "constant and input-only outputs" do
    assert_matches_evaluator(fn x -> {x, Nx.tensor(3.0), Nx.iota({3})} end, [Nx.tensor([1, 2])])
  end

  test "Nx.Defn.compile/3 with templates" do
    compiled = Nx.Vulkan.compile(&softplus/1, [Nx.template({2}, :f32)])
    assert_close(softplus(Nx.tensor([0.0, 1.0])), compiled.(Nx.tensor([0.0, 1.0])))
  end

  test "default options through Nx.Defn.default_options" do
    Nx.Defn.default_options(compiler: Nx.Vulkan)

    try do
      assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = softplus(Nx.tensor([1.0]))
    after
      Nx.Defn.default_options([])
    end
  end

  test "explain returns the JSON IR, the IR after each pass, the kernels' SPIR-V and the dispatch count" do
    info = Nx.Vulkan.explain(&softplus/1, [Nx.template({3}, :f32)])
    assert %{source: json, passes: [_ | _] = passes, lowered: lowered, spirv: [_ | _], dispatches: n} = info
    assert json =~ ~s("op":"log")
    assert json =~ ~s("version":1)

    for {name, ir} <- passes do
      assert is_binary(name) and name != ""
      assert ir =~ ~s("nodes")
    end

    assert lowered =~ ~s("op":"kernel")
    assert elem(List.last(passes), 1) == lowered
    assert n == length(info.kernels) and n >= 1

    for %{name: name, spirv: spirv, glsl: glsl, validation: "ok"} <- info.kernels do
      assert is_binary(name)
      assert spirv =~ "OpEntryPoint GLCompute"
      assert glsl =~ "main"
    end

    # the dispatch count is what a run reports
    Nx.Vulkan.jit(&softplus/1).(Nx.tensor([1.0, 2.0, 3.0]))
    assert_received {[:nx_vulkan, :run], %{dispatches: ^n}, _}

    # single stages
    assert Nx.Vulkan.explain(&softplus/1, [Nx.template({3}, :f32)], stage: :source) == json
    assert Nx.Vulkan.explain(&softplus/1, [Nx.template({3}, :f32)], stage: :lowered) == lowered
    assert [{_, text} | _] = Nx.Vulkan.explain(&softplus/1, [Nx.template({3}, :f32)], stage: :glsl)
    assert text =~ "main"

    # a pipeline option changes the passes shown
    [{first, _} | _] = passes
    custom = Nx.Vulkan.explain(&softplus/1, [Nx.template({3}, :f32)], pipeline: [first])
    assert [{^first, _}] = custom.passes

    assert_raise ArgumentError, ~r/stage/, fn ->
      Nx.Vulkan.explain(&softplus/1, [Nx.template({3}, :f32)], stage: :x)
    end
  end

  test "100 processes running jitted functions at once" do
    f = Nx.Vulkan.jit(fn x, y -> Nx.sum(Nx.multiply(x, y), axes: [0]) end)

    1..100
    |> Task.async_stream(
      fn i ->
        n = rem(i, 4) + 1
        x = Nx.iota({n, 3}, type: :f32) |> Nx.add(i)
        y = Nx.iota({n, 3}, type: :f32)
        expected = Nx.sum(Nx.multiply(x, y), axes: [0])
        assert_close(expected, f.(x, y))
        :ok
      end,
      max_concurrency: 100,
      timeout: 300_000
    )
    |> Enum.each(fn result -> assert result == {:ok, :ok} end)
  end

  test "allocating past device memory raises and the VM stays up" do
    # one tensor past the device's largest buffer (lavapipe's 128 MiB storage range, the
    # H200's 4 GiB allocation limit)
    shape = past_buffer_limit_shape()

    error =
      assert_raise Nx.Vulkan.Error, fn ->
        Nx.Vulkan.jit(fn -> Nx.broadcast(1.0, shape) end).()
      end

    assert error.kind in [:out_of_memory, :unsupported]

    # 4 TiB: past every device's buffer limits (named with the node), or, on a device whose
    # limits allow it, past 32-bit indexing (an IR error)
    error =
      assert_raise Nx.Vulkan.Error, fn ->
        Nx.Vulkan.jit(fn -> Nx.broadcast(1.0, {1_048_576, 1_048_576}) end).()
      end

    assert error.kind in [:out_of_memory, :ir_error]
    assert error.message =~ ~r/node \d+/

    # uploading a tensor that does not fit, through the backend
    assert_raise Nx.Vulkan.Error, ~r/out_of_memory/, fn ->
      Nx.from_binary(:binary.copy(<<0>>, buffer_limit_bytes() + 1), :u8, backend: Nx.Vulkan.Backend)
    end

    assert_matches_evaluator(&softplus/1, [Nx.tensor([1.0])])
  end

  test "unsupported expressions raise before reaching the device" do
    assert_raise ArgumentError, ~r/:reduce on complex/, fn ->
      Nx.Vulkan.jit(&Nx.reduce(&1, 0, fn a, b -> Nx.add(a, b) end)).(Nx.tensor([Complex.new(2.0, 1.0), 3]))
    end
  end

  describe ":precision" do
    test "an unknown value raises an ArgumentError naming the accepted ones" do
      x = Nx.iota({2, 2}, type: :f32)

      for bad <- [:fast, "high", 3] do
        assert_raise ArgumentError, ~r/unknown :precision #{inspect(bad)}, expected :highest .*:high .*:default/, fn ->
          Nx.Vulkan.jit(&Nx.dot/2, precision: bad).(x, x)
        end
      end

      assert_raise ArgumentError, ~r/unknown :precision :low/, fn ->
        Nx.Vulkan.explain(&Nx.dot/2, [x, x], precision: :low)
      end
    end

    # 96x64 by 64x80: the tiled kernel. On a device without bf16 cooperative matrices (lavapipe)
    # every precision is exact f32: the same bits. With them, :high and :default round the
    # operands: within bf16 x3's and bf16's error of the evaluator's product (relative to
    # the largest element; the bounds of unit_tests/matmul_test.cpp, for K = 64).
    test "f32 products at each precision against the evaluator" do
      key = Nx.Random.key(16)
      {a, key} = Nx.Random.uniform(key, -1.0, 1.0, shape: {96, 64}, type: :f32)
      {b, _key} = Nx.Random.uniform(key, -1.0, 1.0, shape: {64, 80}, type: :f32)
      want = Nx.Defn.jit_apply(&Nx.dot/2, [a, b], compiler: Nx.Defn.Evaluator)
      coop? = Nx.Vulkan.Error.unwrap!(Nx.Vulkan.Native.device_info(Nx.Vulkan.Device.get!([]))).caps.cooperative_matrix

      results =
        for precision <- [:highest, :high, :default] do
          {precision, Nx.Vulkan.jit(&Nx.dot/2, precision: precision, output: :host).(a, b)}
        end

      exact = Nx.to_binary(results[:highest])
      assert Nx.all_close(results[:highest], want, rtol: 1.0e-6, atol: 1.0e-6) |> Nx.to_number() == 1

      for {precision, got} <- results, precision != :highest do
        if coop? do
          tol = if precision == :high, do: 1.0e-4, else: 2.0e-2
          error = Nx.subtract(got, want) |> Nx.abs() |> Nx.reduce_max() |> Nx.to_number()
          assert error <= tol * (Nx.abs(want) |> Nx.reduce_max() |> Nx.to_number())
        else
          assert Nx.to_binary(got) == exact, "#{precision} differs from :highest"
        end
      end
    end
  end

  describe "configuration" do
    setup do
      env = Application.get_all_env(:nx_vulkan)
      on_exit(fn -> for {k, v} <- env, do: Application.put_env(:nx_vulkan, k, v) end)
    end

    test "device, cache_dir and timeout come from the application environment" do
      assert Nx.Vulkan.Device.config([]) == [device: "", cache_dir: "", timeout: 120_000]
      dir = Path.join(System.tmp_dir!(), "nxv-cache-#{System.unique_integer([:positive])}")
      Application.put_env(:nx_vulkan, :cache_dir, dir)
      Application.put_env(:nx_vulkan, :timeout, 60_000)
      Application.put_env(:nx_vulkan, :device, "0")
      assert Nx.Vulkan.Device.config([]) == [device: "0", cache_dir: dir, timeout: 60_000]

      # a new configuration is a new device handle and a new compilation
      result = Nx.Vulkan.jit(fn x -> Nx.add(x, 41) end).(Nx.tensor([1], type: :s16))
      assert_received {[:nx_vulkan, :compile], _, _}
      assert %Nx.Vulkan.Backend{device: [device: "0", cache_dir: ^dir, timeout: 60_000]} = result.data
      assert Nx.to_flat_list(result) == [42]
      # compiled pipelines persist in cache_dir
      assert [_ | _] = Path.wildcard(Path.join(dir, "pipelines-*.bin"))
      File.rm_rf!(dir)
    end

    test "jit options override the application environment" do
      Application.put_env(:nx_vulkan, :device, "no such device")
      [%{name: name} | _] = Nx.Vulkan.devices()

      f = fn x -> Nx.multiply(x, 2) end
      x = Nx.tensor([1.5])
      assert_raise Nx.Vulkan.Error, ~r/no_device/, fn -> Nx.Vulkan.jit(f).(x) end

      for device <- ["0", 0, String.slice(name, 0, 4)] do
        result = Nx.Vulkan.jit(f, device: device, cache_dir: "none", timeout: 30_000).(x)
        assert Nx.to_flat_list(result) == [3.0]
        assert result.data.device == [device: device, cache_dir: "none", timeout: 30_000]
        # results stay on the device they were computed on, and go back in
        assert Nx.to_flat_list(Nx.Vulkan.jit(f, device: device, cache_dir: "none", timeout: 30_000).(result)) ==
                 [6.0]
      end

      # a submit running past :timeout fails with :timeout; the device stays usable. The
      # loop's trip count is chosen from a timed run so that the submit takes about 50 ms on
      # any device (the shortest timeout is 1 ms)
      slow = &repeated_dots/2
      a = Nx.iota({256, 256}, type: :f32) |> Nx.divide(1.0e5)
      timed = Nx.Vulkan.jit(slow, device: "0", timeout: 120_000, cache_dir: "none")
      timed.(a, 8)
      {us, _} = :timer.tc(fn -> Nx.backend_transfer(timed.(a, 8)) end)
      trips = 8 * max(ceil(50_000 / max(us, 1)), 1)

      error =
        assert_raise Nx.Vulkan.Error, fn ->
          Nx.Vulkan.jit(slow, device: "0", timeout: 1, cache_dir: "none").(a, trips)
        end

      assert error.kind == :timeout
      assert Nx.to_flat_list(Nx.Vulkan.jit(f, device: "0", timeout: 30_000, cache_dir: "none").(x)) == [3.0]

      # the backend takes the same options
      t = Nx.tensor([1, 2], backend: {Nx.Vulkan.Backend, device: "0", timeout: 30_000})
      assert t.data.device[:timeout] == 30_000
      assert Nx.to_flat_list(Nx.add(t, t)) == [2, 4]
    end
  end
end
