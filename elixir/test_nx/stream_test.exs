defmodule Nx.Vulkan.StreamTest do
  # Nx.Defn.stream/3 with Nx.Vulkan (Nx <= 0.9; Nx.Vulkan.Stream): Nx's own stream tests
  # (nx/test/nx/defn/stream_test.exs) run with this compiler, each result compared with
  # the same stream under Nx.Defn.Evaluator; one compilation per stream, the accumulator
  # on the device between sends.
  use Nx.Vulkan.Case, async: true

  import Nx.Defn

  # Nx 0.10 removed streams.
  if Code.ensure_loaded?(Nx.Stream) do
    import ExUnit.CaptureLog

    defn(defn_sum(entry, acc), do: {acc, entry + acc})

    defn(defn_sum_with_args(entry, acc, a, b), do: {acc, entry + acc + (a - b)})

    # per batch its column means and the batches so far (two outputs; Nx.Defn.Evaluator's
    # stream requires outputs of the accumulator's types and shapes), and the running sum
    defn batch_stats(batch, {sum, count}) do
      {{Nx.mean(batch, axes: [0]), count}, {sum + Nx.sum(batch, axes: [0]), count + 1}}
    end

    defn(compiled_once(entry, acc), do: {acc * 2, acc + Nx.exp(entry)})

    # The same sends through `fun` with each compiler: the outputs received and the final
    # accumulator.
    defp stream_both(fun, args, inputs, opts) do
      for compiler <- [Nx.Defn.Evaluator, Nx.Vulkan] do
        stream = Nx.Defn.stream(fun, args, [compiler: compiler] ++ opts)

        outputs =
          for input <- inputs do
            assert Nx.Stream.send(stream, input) == :ok
            Nx.Stream.recv(stream)
          end

        {outputs, Nx.Stream.done(stream)}
      end
    end

    defp assert_streams_match(fun, args, inputs, opts \\ []) do
      [{expected_outputs, expected_acc}, {outputs, acc}] = stream_both(fun, args, inputs, opts)
      assert length(outputs) == length(expected_outputs)
      for {e, a} <- Enum.zip(expected_outputs, outputs), do: assert_close(e, a)
      assert_close(expected_acc, acc)
      {outputs, acc}
    end

    test "runs defn stream" do
      %Nx.Vulkan.Stream{} = stream = Nx.Defn.stream(&defn_sum/2, [0, 0], compiler: Nx.Vulkan)
      assert Nx.Stream.send(stream, 1) == :ok
      assert Nx.backend_copy(Nx.Stream.recv(stream)) == Nx.tensor(0)

      assert Nx.Stream.send(stream, 2) == :ok
      assert Nx.backend_copy(Nx.Stream.recv(stream)) == Nx.tensor(1)

      assert Nx.backend_copy(Nx.Stream.done(stream)) == Nx.tensor(3)
    end

    test "sums batches as the evaluator does; outputs and accumulator stay on the device" do
      batches = for i <- 0..4, do: Nx.iota({3, 4}, type: :f32) |> Nx.multiply(0.37 * i) |> Nx.sin()
      args = [Nx.template({3, 4}, :f32), {Nx.broadcast(0.0, {4}), 0}]
      {outputs, {sum, count}} = assert_streams_match(&batch_stats/2, args, batches)

      for {{mean, seen}, i} <- Enum.with_index(outputs) do
        assert %Nx.Vulkan.Backend{} = mean.data
        assert Nx.to_number(seen) == i
      end

      assert %Nx.Vulkan.Backend{} = sum.data
      assert Nx.to_number(count) == 5
    end

    test "with other arguments, and with output: :host" do
      assert_streams_match(&defn_sum_with_args/4, [0, 0, 2, 1], [1, 2, 3])

      {outputs, acc} =
        assert_streams_match(&defn_sum/2, [Nx.template({2}, :f64), Nx.tensor([0.5, 1.5], type: :f64)], [
          Nx.tensor([1.0, 2.0], type: :f64),
          Nx.tensor([-3.0, 0.25], type: :f64)
        ])

      assert %Nx.Vulkan.Backend{} = acc.data
      assert Enum.all?(outputs, &match?(%Nx.Vulkan.Backend{}, &1.data))

      stream = Nx.Defn.stream(&defn_sum/2, [0, 0], compiler: Nx.Vulkan, output: :host)
      :ok = Nx.Stream.send(stream, 5)
      assert %Nx.BinaryBackend{} = Nx.Stream.recv(stream).data
      assert Nx.Stream.done(stream) == Nx.tensor(5)
    end

    test "compiles once per stream, runs once per send" do
      parent = self()
      ref = make_ref()
      key = &__MODULE__.compiled_once/2

      events = [[:nx_vulkan, :compile], [:nx_vulkan, :run]]
      :telemetry.attach_many({__MODULE__, ref}, events, &__MODULE__.handle_event/4, {parent, ref, key})

      try do
        # a type no other test compiles this function with
        args = [Nx.template({7}, :f64), Nx.broadcast(Nx.tensor(0.0, type: :f64), {7})]
        inputs = for i <- 1..4, do: Nx.iota({7}, type: :f64) |> Nx.multiply(0.1 * i)
        assert_streams_match(key, args, inputs)

        events = collect(ref)
        assert Enum.count(events, &(&1 == :compile)) == 1
        assert Enum.count(events, &(&1 == :run)) == 4
      after
        :telemetry.detach({__MODULE__, ref})
      end
    end

    test "can recv before send" do
      stream = Nx.Defn.stream(&defn_sum/2, [0, 0], compiler: Nx.Vulkan)
      task = Task.async(fn -> Nx.Stream.recv(stream) end)
      Process.sleep(100)
      assert Nx.Stream.send(stream, 1) == :ok
      assert Nx.backend_copy(Task.await(task)) == Nx.tensor(0)
      assert Nx.backend_copy(Nx.Stream.done(stream)) == Nx.tensor(1)
    end

    test "raises if recv is pending on done, and after done" do
      stream = Nx.Defn.stream(&defn_sum/2, [0, 0], compiler: Nx.Vulkan)
      assert Nx.Stream.send(stream, 1) == :ok

      assert_raise RuntimeError, "cannot mark stream as done when there are recv messages pending", fn ->
        Nx.Stream.done(stream)
      end

      assert Nx.backend_copy(Nx.Stream.recv(stream)) == Nx.tensor(0)
      assert Nx.backend_copy(Nx.Stream.done(stream)) == Nx.tensor(1)
      assert {:noproc, _} = catch_exit(Nx.Stream.done(stream))
    end

    # EXLA raises here too; the caller used to exit with the GenServer's :noproc.
    test "raises on recv after done" do
      stream = Nx.Defn.stream(&defn_sum/2, [0, 0], compiler: Nx.Vulkan)
      assert Nx.Stream.send(stream, 1) == :ok
      assert Nx.backend_copy(Nx.Stream.recv(stream)) == Nx.tensor(0)
      assert Nx.backend_copy(Nx.Stream.done(stream)) == Nx.tensor(1)

      assert_raise RuntimeError, "cannot recv from stream because it has been terminated", fn ->
        Nx.Stream.recv(stream)
      end
    end

    test "raises if stream is done when recving" do
      Process.flag(:trap_exit, true)
      stream = Nx.Defn.stream(&defn_sum/2, [0, 0], compiler: Nx.Vulkan)

      assert capture_log(fn ->
               Task.start_link(fn -> Nx.Stream.recv(stream) end)
               wait_for_recv(stream.pid)
               Nx.Stream.done(stream)
               # generous: the task's crash report is written on 2 shared cores
               assert_receive {:EXIT, _, {%RuntimeError{}, _}}, 5000
             end) =~ "cannot recv from stream because it has been terminated"
    end

    test "raises if stream is not compatible on send" do
      stream = Nx.Defn.stream(&defn_sum/2, [0, 0], compiler: Nx.Vulkan)

      assert_raise ArgumentError, ~r/Nx stream expected a tensor of type, shape, and names on send/, fn ->
        Nx.Stream.send(stream, Nx.iota({3}))
      end

      assert Nx.backend_copy(Nx.Stream.done(stream)) == Nx.tensor(0)
    end

    test "the function must return {output, acc} with the accumulator's types" do
      assert_raise ArgumentError, ~r/two-element tuple \{output, acc\}/, fn ->
        Nx.Defn.stream(fn _, _ -> 0 end, [1, 2], compiler: Nx.Vulkan)
      end

      assert_raise ArgumentError, ~r/with the types and shapes it was given/, fn ->
        Nx.Defn.stream(&defn_sum/2, [Nx.template({}, :f32), 0], compiler: Nx.Vulkan)
      end
    end

    def handle_event([:nx_vulkan, event], _measurements, %{key: key}, {parent, ref, key}),
      do: send(parent, {ref, event})

    def handle_event(_event, _measurements, _metadata, _config), do: :ok

    # Until the stream's process has a recv waiting.
    defp wait_for_recv(pid) do
      if :queue.is_empty(:sys.get_state(pid).waiting) do
        Process.sleep(10)
        wait_for_recv(pid)
      end
    end

    defp collect(ref) do
      receive do
        {^ref, event} -> [event | collect(ref)]
      after
        0 -> []
      end
    end
  end
end
