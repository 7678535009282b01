defmodule Nx.Vulkan.Stream do
  @moduledoc """
  The stream `Nx.Defn.stream/3` returns with `Nx.Vulkan` as the compiler (Nx <= 0.9, whose
  `Nx.Stream` protocol it implements).

  The function is compiled once, when the stream starts (the executable cache is
  `Nx.Vulkan`'s, shared with `jit` of the same function and argument types). A process
  owned by the stream holds the accumulator as `Nx.Vulkan.Backend` tensors: each
  `Nx.Stream.send/2` runs the executable on the input sent and that accumulator, keeps the
  new accumulator on the device and queues the output, which `Nx.Stream.recv/1` returns in
  order. `Nx.Stream.done/1` returns the last accumulator and stops the process; it raises
  while outputs wait to be received. Sends run one after another, each as one `Native.run`
  of the executable; the accumulator never leaves the device between them. With
  `output: :host`, outputs and the final accumulator are copied to `Nx.BinaryBackend`.

  Because the executable takes the accumulator it returns as its next input, the function
  must return `{output, acc}` with `acc` of the types and shapes it was given (Nx's
  evaluator lets the accumulator's type change from send to send; a compiled graph cannot).
  """

  use GenServer

  @enforce_keys [:pid, :input, :output]
  defstruct [:pid, :input, :output]

  @doc false
  # `step.(input_params, acc)` runs the executable and returns `{output, acc}`;
  # `finish.(term)` prepares what recv and done return.
  def start_link(input, output, acc, step, finish) do
    {backend, backend_options} = Nx.default_backend()
    {:ok, pid} = GenServer.start_link(__MODULE__, {backend, backend_options, acc, step, finish})
    %__MODULE__{input: input, output: output, pid: pid}
  end

  @impl true
  def init({backend, backend_options, acc, step, finish}) do
    Nx.default_backend({backend, backend_options})
    {:ok, %{outputs: :queue.new(), waiting: :queue.new(), acc: acc, step: step, finish: finish}}
  end

  @impl true
  def handle_cast({:send, params}, state) do
    {output, acc} = state.step.(params, state.acc)
    output = state.finish.(output)
    state = %{state | acc: acc}

    case :queue.out(state.waiting) do
      {:empty, _} ->
        {:noreply, %{state | outputs: :queue.in(output, state.outputs)}}

      {{:value, from}, waiting} ->
        GenServer.reply(from, {:ok, output})
        {:noreply, %{state | waiting: waiting}}
    end
  end

  @impl true
  def handle_call(:recv, from, state) do
    case :queue.out(state.outputs) do
      {:empty, _} -> {:noreply, %{state | waiting: :queue.in(from, state.waiting)}}
      {{:value, output}, outputs} -> {:reply, {:ok, output}, %{state | outputs: outputs}}
    end
  end

  def handle_call(:done, _from, state) do
    if :queue.is_empty(state.outputs) do
      for from <- :queue.to_list(state.waiting), do: GenServer.reply(from, :done)
      {:stop, :normal, {:ok, state.finish.(state.acc)}, state}
    else
      {:reply, :recv_pending, state}
    end
  end

  # The protocol exists up to Nx 0.9 (Nx.Defn.stream/3 with it).
  if Code.ensure_loaded?(Nx.Stream) do
    defimpl Nx.Stream do
      def send(%{pid: pid, input: input}, data) do
        {template, funs} =
          Nx.LazyContainer.traverse(data, [], fn template, fun, acc -> {template, [fun | acc]} end)

        unless Nx.compatible?(input, template) do
          raise ArgumentError, """
          Nx stream expected a tensor of type, shape, and names on send:

          #{inspect(input)}

          But got tensor:

          #{inspect(template)}
          """
        end

        GenServer.cast(pid, {:send, Enum.reverse(funs)})
      end

      # After done the process is gone: a RuntimeError, as a waiting recv gets (and as
      # EXLA's stream raises), rather than the caller exiting with :noproc.
      def recv(%{pid: pid}) do
        reply =
          try do
            GenServer.call(pid, :recv, :infinity)
          catch
            :exit, {reason, {GenServer, :call, _}} when reason in [:noproc, :normal] -> :done
          end

        case reply do
          {:ok, output} -> output
          :done -> raise "cannot recv from stream because it has been terminated"
        end
      end

      def done(%{pid: pid}) do
        case GenServer.call(pid, :done, :infinity) do
          {:ok, acc} -> acc
          :recv_pending -> raise "cannot mark stream as done when there are recv messages pending"
        end
      end
    end
  end
end
