defmodule Nx.Vulkan.ServingTest do
  # Nx.Serving over Nx.Vulkan: batches, padding, concurrent and crashing callers,
  # partitions over devices (lavapipe opened twice: two VkDevices of one physical device),
  # tensors crossing devices, and {:distributed, name} between two local nodes.
  use Nx.Vulkan.Case, async: false

  alias Nx.Vulkan.Device

  @moduletag timeout: 60_000

  # Its bytecode is loaded on the peer node too.
  {:module, _, model_beam, _} =
    defmodule Model do
      import Nx.Defn

      # A dense layer with fixed weights: rows of `x` map to rows of the result.
      defn predict(x) do
        w = Nx.iota({4, 3}, type: :f32) |> Nx.divide(10)
        b = Nx.tensor([0.5, -0.5, 0.25], type: :f32)
        Nx.tanh(Nx.dot(x, w) + b)
      end

      # For the peer node: a serving of predict/1 that answers on the host (device
      # buffers cannot cross nodes), alive until `parent` exits.
      def serve(parent, name) do
        serving =
          Nx.Serving.jit(&predict/1, compiler: Nx.Vulkan)
          |> Nx.Serving.distributed_postprocessing(&Nx.backend_transfer(&1, Nx.BinaryBackend))

        {:ok, _} =
          Nx.Serving.start_link(
            serving: serving,
            name: name,
            batch_size: 4,
            batch_timeout: 20,
            shutdown: 1000
          )

        send(parent, {:serving, node()})
        ref = Process.monitor(parent)

        receive do
          {:DOWN, ^ref, _, _, _} -> :ok
        end
      end
    end

  @model_beam model_beam

  defp rows(n, offset \\ 0), do: Nx.iota({n, 4}, type: :f32) |> Nx.add(offset) |> Nx.divide(7)

  defp expected(x), do: Nx.Defn.jit_apply(&Model.predict/1, [x], compiler: Nx.Defn.Evaluator)

  defp padded_serving(batch_size, defn_opts) do
    parent = self()

    Nx.Serving.new(
      fn opts ->
        send(parent, {:partition, opts[:device], opts[:timeout]})

        fn batch ->
          send(parent, {:batch, batch.size, opts[:timeout]})
          Nx.Defn.jit_apply(&Model.predict/1, [Nx.Batch.pad(batch, batch_size - batch.size)], opts)
        end
      end,
      defn_opts
    )
    |> Nx.Serving.batch_size(batch_size)
  end

  defp start_serving!(config, serving, opts \\ []) do
    defaults = [serving: serving, name: config.test, batch_size: 4, batch_timeout: 50, shutdown: 1000]
    opts = Keyword.merge(defaults, opts)
    start_supervised!({Nx.Serving, opts})
  end

  # Two configurations of device 0 that the runtime opens as two VkDevices.
  defp twice, do: [[device: 0, timeout: 120_001], [device: 0, timeout: 120_002]]

  describe "__partitions_options__/1" do
    test "one partition per non-CPU device, else the default device" do
      gpus = [
        %{index: 0, name: "NVIDIA H200", type: "discrete"},
        %{index: 1, name: "NVIDIA H200", type: "discrete"},
        %{index: 2, name: "llvmpipe (LLVM 15.0.7, 256 bits)", type: "cpu"}
      ]

      assert Device.partitions([compiler: Nx.Vulkan], gpus) == [
               [compiler: Nx.Vulkan, device: "0"],
               [compiler: Nx.Vulkan, device: "1"]
             ]

      assert Device.partitions([devices: :all], gpus) |> Enum.map(& &1[:device]) == ["0", "1", "2"]
      assert Device.partitions([devices: ["llvm", 1]], gpus) == [[device: "2"], [device: "1"]]
      assert Device.partitions([device: "LLVMpipe"], gpus) == [[device: "2"]]

      assert Device.partitions([timeout: 5, devices: [0, [device: 1, timeout: 9]]], gpus) ==
               [[timeout: 5, device: "0"], [device: "1", timeout: 9]]

      assert_raise ArgumentError, ~r/no Vulkan device matches "radeon"; devices: 0: NVIDIA H200/, fn ->
        Device.partitions([devices: ["radeon"]], gpus)
      end

      assert_raise ArgumentError, ~r/:devices must be/, fn -> Device.partitions([devices: []], gpus) end

      # Only a CPU device: the default device (the application's :device, "" here).
      [cpu] = Enum.filter(gpus, &(&1.type == "cpu"))
      if System.get_env("NXV_DEVICE", "") == "", do: assert(Device.partitions([], [cpu]) == [[device: "2"]])
    end

    test "on this machine" do
      devices = Nx.Vulkan.devices()
      partitions = Nx.Vulkan.__partitions_options__(compiler: Nx.Vulkan)
      assert partitions != []

      for opts <- partitions do
        assert Enum.any?(devices, &(Integer.to_string(&1.index) == opts[:device]))
        refute Keyword.has_key?(opts, :devices)
      end

      if Enum.all?(devices, &(&1.type == "cpu")), do: assert(length(partitions) == 1)
    end
  end

  describe "Nx.Serving" do
    test "run inline and batched_run match Nx.Defn.Evaluator", config do
      x = rows(3)
      serving = Nx.Serving.jit(&Model.predict/1, compiler: Nx.Vulkan)
      assert_close(expected(x), Nx.Serving.run(serving, Nx.Batch.concatenate([x])))

      start_serving!(config, serving)
      result = Nx.Serving.batched_run(config.test, Nx.Batch.concatenate([x]))
      assert %Nx.Vulkan.Backend{} = result.data
      assert_close(expected(x), result)
    end

    test "pads the last batch and removes the padding", config do
      start_serving!(config, padded_serving(4, compiler: Nx.Vulkan), batch_timeout: 100)
      x = rows(6)
      result = Nx.Serving.batched_run(config.test, Nx.Batch.concatenate([x]))
      assert result.shape == {6, 3}
      assert_close(expected(x), result)
      assert_receive {:batch, 4, _}
      assert_receive {:batch, 2, _}
    end

    test "concurrent callers each get their rows", config do
      start_serving!(config, Nx.Serving.jit(&Model.predict/1, compiler: Nx.Vulkan), batch_timeout: 20)

      results =
        1..8
        |> Task.async_stream(
          fn i ->
            x = rows(rem(i, 3) + 1, i)
            {x, Nx.Serving.batched_run(config.test, Nx.Batch.concatenate([x]))}
          end,
          max_concurrency: 8,
          timeout: 30_000
        )
        |> Enum.map(fn {:ok, result} -> result end)

      for {x, result} <- results, do: assert_close(expected(x), result)
    end

    @tag :capture_log
    test "a crashing caller or batch leaves the serving running", config do
      serving =
        Nx.Serving.new(
          fn opts ->
            fn batch ->
              x = Nx.Defn.jit_apply(&Function.identity/1, [batch], compiler: Nx.Defn.Evaluator)
              if Nx.to_number(Nx.reduce_min(x)) < 0, do: raise("bad batch")
              Nx.Defn.jit_apply(&Model.predict/1, [x], opts)
            end
          end,
          compiler: Nx.Vulkan
        )

      pid = start_serving!(config, serving, batch_timeout: 200)

      # A caller killed while its batch waits in the queue.
      caller = spawn(fn -> Nx.Serving.batched_run(config.test, Nx.Batch.concatenate([rows(1)])) end)
      Process.sleep(50)
      Process.exit(caller, :kill)

      # A caller whose batch raises in the serving function exits with the error.
      {_pid, ref} =
        spawn_monitor(fn ->
          Nx.Serving.batched_run(config.test, Nx.Batch.concatenate([Nx.negate(rows(1, 1))]))
        end)

      assert_receive {:DOWN, ^ref, _, _, {{%RuntimeError{message: "bad batch"}, _}, _}}, 10_000

      x = rows(2, 3)
      assert_close(expected(x), Nx.Serving.batched_run(config.test, Nx.Batch.concatenate([x])))
      assert Process.alive?(pid)
    end

    test "partitions: true over lavapipe opened twice", config do
      [key0, key1] = Enum.map(twice(), &Device.key/1)
      assert key0 != key1

      start_serving!(config, padded_serving(2, compiler: Nx.Vulkan, devices: twice()),
        partitions: true,
        batch_size: 2,
        batch_timeout: 20
      )

      assert_receive {:partition, "0", 120_001}
      assert_receive {:partition, "0", 120_002}

      results =
        1..6
        |> Task.async_stream(
          fn i ->
            x = rows(2, i)
            {x, Nx.Serving.batched_run(config.test, Nx.Batch.concatenate([x]))}
          end,
          max_concurrency: 6,
          timeout: 30_000
        )
        |> Enum.map(fn {:ok, result} -> result end)

      # Nx.Serving hands batches to the partitions in turn: both ran some.
      assert_received {:batch, 2, 120_001}
      assert_received {:batch, 2, 120_002}

      for {x, result} <- results do
        assert %Nx.Vulkan.Backend{device: device} = result.data
        assert device[:timeout] in [120_001, 120_002]
        assert_close(expected(x), result)
      end
    end
  end

  describe "tensors across devices" do
    setup do
      ref = make_ref()
      parent = self()
      :telemetry.attach({__MODULE__, ref}, [:nx_vulkan, :transfer], &__MODULE__.forward/4, {parent, ref})
      on_exit(fn -> :telemetry.detach({__MODULE__, ref}) end)
      %{ref: ref}
    end

    # 80 elements: device buffers in lazy mode too (NXV_LAZY=1), which keeps smaller values
    # on the host, where no device holds them.
    test "a run copies an argument of another VkDevice explicitly", %{ref: ref} do
      [a, b] = twice()
      x = Nx.backend_transfer(rows(20), {Nx.Vulkan.Backend, a})
      result = Nx.Defn.jit_apply(&Model.predict/1, [x], [compiler: Nx.Vulkan] ++ b)

      assert_receive {^ref, %{bytes: 320}, %{from: from, to: to}}
      assert from[:timeout] == 120_001 and to[:timeout] == 120_002
      assert result.data.device[:timeout] == 120_002
      assert_close(expected(rows(20)), result)
      # the argument stays on its device, usable
      assert x.data.device[:timeout] == 120_001
      assert_close(rows(20), x)
    end

    test "the same VkDevice under two configurations needs no copy", %{ref: ref} do
      default = Nx.Vulkan.Device.config([])
      index = elem(Device.key(default), 0)
      same = Keyword.put(default, :device, Integer.to_string(index))
      assert Device.same?(default, same)

      x = Nx.backend_transfer(rows(20), {Nx.Vulkan.Backend, default})
      y = Nx.backend_transfer(x, {Nx.Vulkan.Backend, same})
      assert y.data.buffer == x.data.buffer
      assert y.data.device == Device.config(same)

      assert_close(expected(rows(20)), Nx.Defn.jit_apply(&Model.predict/1, [y], compiler: Nx.Vulkan))
      refute_received {^ref, _, _}
    end

    test "Nx.Vulkan.Backend transfers between VkDevices", %{ref: ref} do
      [a, b] = twice()
      x = Nx.backend_transfer(rows(20), {Nx.Vulkan.Backend, a})
      y = Nx.backend_copy(x, {Nx.Vulkan.Backend, b})
      assert y.data.device[:timeout] == 120_002
      assert_close(rows(20), y)

      # an eager op over both runs on the first one's device; the other is copied there
      sum = Nx.add(x, y)
      assert sum.data.device[:timeout] == 120_001
      assert_close(Nx.multiply(rows(20), 2), sum)
      assert_receive {^ref, _, %{from: from}}
      assert from[:timeout] == 120_002

      z = Nx.backend_transfer(y, {Nx.Vulkan.Backend, a})
      assert z.data.device[:timeout] == 120_001
      assert_close(rows(20), z)
    end
  end

  describe "distributed" do
    @describetag :distributed

    setup do
      case start_peer() do
        {:ok, peer, node, started?} ->
          on_exit(fn ->
            :peer.stop(peer)
            # the test node goes back to non-distributed if this test made it distributed
            if started?, do: Node.stop()
          end)

          %{node: node}

        {:error, reason} ->
          # Recorded, not hidden: the assertion message says why distribution failed.
          flunk("could not start a distributed peer node: #{inspect(reason)}")
      end
    end

    test "batched_run({:distributed, name}) reaches a serving on another node", %{node: node} do
      name = :nx_vulkan_distributed_serving
      parent = self()
      Node.spawn_link(node, Model, :serve, [parent, name])
      assert_receive {:serving, ^node}, 30_000

      # Nx.Serving's :pg group lists the remote serving before the call: a group of all
      # servings up to Nx 0.9, one per serving name from 0.10.
      wait_until(fn -> :pg.get_members(Nx.Serving.PG, Nx.Serving) ++ :pg.get_members(Nx.Serving.PG, name) != [] end)

      x = rows(3)
      result = Nx.Serving.batched_run({:distributed, name}, Nx.Batch.concatenate([x]))
      assert %Nx.BinaryBackend{} = result.data
      assert_close(expected(x), result)

      # no serving of that name on this node
      assert {:noproc, _} = catch_exit(Nx.Serving.batched_run({:local, name}, Nx.Batch.concatenate([x])))
    end
  end

  @doc false
  def forward(_event, measurements, meta, {pid, ref}), do: send(pid, {ref, measurements, meta})

  defp start_peer do
    with true <- Code.ensure_loaded?(:peer) || {:error, :no_peer_module},
         {_, 0} <- System.cmd("epmd", ["-daemon"]),
         {:ok, started?} <- ensure_distributed() do
      name = :"nxv_serving_#{System.pid()}_#{System.unique_integer([:positive])}@127.0.0.1"

      {:ok, peer, node} =
        :peer.start(%{name: name, args: [~c"-setcookie", Atom.to_charlist(Node.get_cookie())]})

      true = :erpc.call(node, :code, :set_path, [:code.get_path()])
      {:module, Model} = :erpc.call(node, :code, :load_binary, [Model, ~c"nofile", @model_beam])

      for {app, key, value} <- [
            {:nx_vulkan, :device, ""},
            {:nx_vulkan, :cache_dir, ""},
            {:nx_vulkan, :timeout, 120_000}
          ],
          do: :erpc.call(node, Application, :put_env, [app, key, Application.get_env(app, key, value)])

      {:ok, _} = :erpc.call(node, :application, :ensure_all_started, [:nx])
      {:ok, _} = :erpc.call(node, :application, :ensure_all_started, [:nx_vulkan])
      {:ok, peer, node, started?}
    else
      {:error, _} = error -> error
      other -> {:error, other}
    end
  end

  defp ensure_distributed do
    if Node.alive?() do
      {:ok, false}
    else
      # Named by the OS process: test runs side by side on one machine share its epmd.
      case Node.start(:"nxv_primary_#{System.pid()}@127.0.0.1", :longnames) do
        {:ok, _} -> {:ok, true}
        {:error, reason} -> {:error, reason}
      end
    end
  end

  defp wait_until(fun, tries \\ 100) do
    cond do
      fun.() -> :ok
      tries == 0 -> flunk("timed out")
      true -> Process.sleep(50) && wait_until(fun, tries - 1)
    end
  end
end
