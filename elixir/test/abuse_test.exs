defmodule Nx.Vulkan.AbuseTest do
  # The NIF under abuse: seeded random mutations of valid graphs, wrong arities, huge shapes,
  # wrong binaries, dead and foreign references, and many processes at once. A crash here
  # takes the whole VM down, so every case must come back as {:ok, _} or as an error tuple
  # whose message names the problem. Property-style with hand-rolled generators over :rand,
  # seeded (NXV_ABUSE_SEED, default 1; NXV_ABUSE_CASES, default 300) so a failure replays.
  use ExUnit.Case, async: false

  import Bitwise
  alias Nx.Vulkan.{Device, JSON, Native}

  @kinds [:ir_error, :badarg, :invalid_argument, :unsupported, :out_of_memory, :exception]

  setup_all do
    seed = String.to_integer(System.get_env("NXV_ABUSE_SEED", "1"))
    cases = String.to_integer(System.get_env("NXV_ABUSE_CASES", "300"))
    %{device: Device.get!(), seed: seed, cases: cases}
  end

  defp f32(list), do: for(x <- list, into: <<>>, do: <<x::float-32-little>>)

  defp param(id, index, type, shape),
    do: %{id: id, op: "parameter", type: type, shape: shape, attrs: %{index: index}}

  # Valid graphs the mutations start from: elementwise, a reduction, a dot, a while loop.
  defp seeds do
    [
      %{
        version: 1,
        nodes: [
          param(0, 0, "f32", [4]),
          param(1, 1, "f32", [4]),
          %{id: 2, op: "add", args: [0, 1], type: "f32", shape: [4]},
          %{id: 3, op: "exp", args: [2], type: "f32", shape: [4]}
        ],
        outputs: [3]
      },
      %{
        version: 1,
        nodes: [
          param(0, 0, "s32", [2, 3]),
          %{id: 1, op: "sum", args: [0], type: "s64", shape: [2], attrs: %{axes: [1], keep_axes: false}},
          %{id: 2, op: "iota", type: "s64", shape: [2], attrs: %{axis: 0}},
          %{id: 3, op: "multiply", args: [1, 2], type: "s64", shape: [2]}
        ],
        outputs: [3, 1]
      },
      %{
        version: 1,
        nodes: [
          param(0, 0, "f32", [2, 3]),
          param(1, 1, "f32", [3, 2]),
          %{
            id: 2,
            op: "dot",
            args: [0, 1],
            type: "f32",
            shape: [2, 2],
            attrs: %{contract_axes1: [1], batch_axes1: [], contract_axes2: [0], batch_axes2: []}
          }
        ],
        outputs: [2]
      },
      %{
        version: 1,
        nodes: [
          param(0, 0, "f32", []),
          %{
            id: 1,
            op: "while",
            args: [0],
            type: "f32",
            shape: [],
            regions: %{
              condition: %{
                nodes: [
                  param(0, 0, "f32", []),
                  %{id: 1, op: "constant", type: "f32", shape: [], attrs: %{value: 100.0}},
                  %{id: 2, op: "less", args: [0, 1], type: "u8", shape: []}
                ],
                outputs: [2]
              },
              body: %{
                nodes: [
                  param(0, 0, "f32", []),
                  %{id: 1, op: "constant", type: "f32", shape: [], attrs: %{value: 1.0}},
                  %{id: 2, op: "add", args: [0, 1], type: "f32", shape: []}
                ],
                outputs: [2]
              }
            }
          }
        ],
        outputs: [1]
      }
    ]
  end

  defp assert_error(result, context) do
    assert {:error, {kind, message}} = result, "#{context}: expected an error, got #{inspect(result)}"
    assert kind in @kinds, "#{context}: error kind #{inspect(kind)}: #{message}"
    assert is_binary(message) and byte_size(message) > 0, "#{context}: empty message"
    message
  end

  # Compiles `json`; a success is run on zero inputs of the right types when they are small.
  defp compile_and_maybe_run(device, json) do
    case Native.compile(device, json, []) do
      {:ok, exe} ->
        assert {:ok, %{inputs: inputs}} = Native.executable_info(exe)

        bytes =
          Enum.map(inputs, fn {type, shape} ->
            size = Enum.reduce(shape, 1, &(&1 * &2))
            {type, shape, size * div(bits(type), 8)}
          end)

        if Enum.all?(bytes, fn {_, _, n} -> n <= 1 <<< 16 end) do
          args = Enum.map(bytes, fn {type, shape, n} -> {type, shape, :binary.copy(<<0>>, n)} end)

          case Native.run(exe, args, :binaries) do
            {:ok, {outs, _}} -> assert is_list(outs)
            error -> assert_error(error, "run of #{json}")
          end
        end

        :ok

      error ->
        assert_error(error, "compile of #{json}")
    end
  end

  defp bits(type), do: type |> String.replace(~r/^[a-z]+/, "") |> String.to_integer()

  # ---- mutations -----------------------------------------------------------------------

  @garbage [-1, 0, 1, 7, 4_611_686_018_427_387_905, 18_446_744_073_709_551_616, -9_223_372_036_854_775_809,
            1.5, "x", "", "f32", "c64", nil, true, [], [1, -2], [[]], %{}, %{"arg" => 9}, "nan", 1.0e308]

  defp pick(list), do: Enum.at(list, :rand.uniform(length(list)) - 1)

  # One random change to a graph map: a field of a node replaced, removed or added, a node
  # dropped or duplicated, an id list shuffled, or the top level broken.
  defp mutate(%{nodes: [_ | _] = nodes} = graph) do
    i = :rand.uniform(length(nodes)) - 1
    node = with n when not is_map(n) <- Enum.at(nodes, i), do: %{id: i, op: "parameter"}

    case :rand.uniform(8) do
      1 -> %{graph | nodes: List.replace_at(nodes, i, Map.put(node, pick([:id | Map.keys(node)]), pick(@garbage)))}
      2 -> %{graph | nodes: List.replace_at(nodes, i, Map.delete(node, pick([:id | Map.keys(node)])))}
      3 -> %{graph | nodes: List.replace_at(nodes, i, Map.put(node, :attrs, %{pick(~w(axes axis index value shape)a) => pick(@garbage)}))}
      4 -> %{graph | nodes: List.delete_at(nodes, i)}
      5 -> %{graph | nodes: List.insert_at(nodes, i, node)}
      6 -> %{graph | nodes: Enum.shuffle(nodes)}
      7 -> Map.put(graph, pick([:outputs, :version, :nodes]), pick(@garbage))
      8 -> %{graph | nodes: List.replace_at(nodes, i, Map.put(node, :shape, [pick([0, 1, 1 <<< 31, 1 <<< 40, -3])]))}
    end
  end

  defp mutate(graph), do: Map.put(graph, :nodes, pick([[], nil, [%{}], [pick(@garbage)]]))

  # Text mutations: bytes dropped, inserted or replaced by JSON tokens.
  defp mutate_text(text) do
    n = byte_size(text)
    at = :rand.uniform(n) - 1
    <<before::binary-size(at), rest::binary>> = text

    drop = min(byte_size(rest), :rand.uniform(8))

    case :rand.uniform(4) do
      1 -> before <> binary_part(rest, drop, byte_size(rest) - drop)
      2 -> before <> pick(["{", "}", "[", "]", ",", ":", "\"", "\\u0000", "1e999", "-", "null", "\"op\":"]) <> rest
      3 -> before <> <<:rand.uniform(256) - 1>> <> rest
      4 -> binary_part(text, 0, at)
    end
  end

  test "random mutations of valid graphs compile or are rejected, never crash", ctx do
    :rand.seed(:exsss, {ctx.seed, 1, 1})

    for k <- 1..ctx.cases do
      graph = pick(seeds())
      mutated = Enum.reduce(1..:rand.uniform(3), graph, fn _, g -> mutate(g) end)
      json = JSON.encode(mutated)
      json = if rem(k, 3) == 0, do: mutate_text(json), else: json
      compile_and_maybe_run(ctx.device, json)
    end

    # the VM and the device are still fine
    assert :ok = compile_and_maybe_run(ctx.device, JSON.encode(hd(seeds())))
  end

  test "ops with the wrong number of operands name the node", %{device: device} do
    ops = ~w(add exp sum dot select clip reshape transpose slice concatenate gather while cond elem as_type pad)

    for op <- ops, arity <- [0, 1, 2, 4] do
      nodes = for(i <- 0..3, do: param(i, i, "f32", [2])) ++ [%{id: 9, op: op, args: Enum.take([0, 1, 2, 3], arity), type: "f32", shape: [2]}]

      case Native.compile(device, JSON.encode(%{version: 1, nodes: nodes, outputs: [9]}), []) do
        {:ok, _} -> :ok
        error -> assert assert_error(error, "#{op}/#{arity}") =~ ~r/node 9|%9/, "#{op}/#{arity}"
      end
    end

    # a NIF called with the wrong number of arguments is an Elixir error, not a NIF call
    assert_raise UndefinedFunctionError, fn -> apply(Native, :compile, [device]) end
    assert_raise UndefinedFunctionError, fn -> apply(Native, :run, [device, [], :binaries, :extra]) end
  end

  test "huge and overflowing shapes are errors naming the shape", %{device: device} do
    # element counts beyond memory, and ones whose byte size overflows 64 bits
    for shape <- [[1 <<< 40], [1 <<< 31, 1 <<< 31], [1 <<< 62, 4], [1 <<< 32, 1 <<< 32], [4_611_686_018_427_387_905, 4]] do
      for data <- [<<>>, <<0::32>>, :binary.copy(<<0>>, 64)] do
        message = assert_error(Native.upload(device, "f32", shape, data), "upload #{inspect(shape)}")
        assert message =~ ~r/bytes|shape|overflow|large/, message
      end

      exe_input = {"f32", shape, <<>>}
      {:ok, exe} = Native.compile(device, JSON.encode(hd(seeds())), [])
      assert_error(Native.run(exe, [exe_input, exe_input], :binaries), "run #{inspect(shape)}")
    end

    # dimensions that are not non-negative 64-bit integers
    for shape <- [[-1], [1 <<< 64], [1.0], [:a], :nope, [2 | 3]] do
      message = assert_error(Native.upload(device, "f32", shape, <<>>), "upload #{inspect(shape)}")
      assert message =~ "shape"
    end
  end

  test "wrong binaries: sizes, types and non-binaries are errors naming what is wrong", %{device: device} do
    {:ok, exe} = Native.compile(device, JSON.encode(hd(seeds())), [])
    good = {"f32", [4], f32([1, 2, 3, 4])}

    for {input, pattern} <- [
          {{"f32", [4], f32([1, 2, 3])}, ~r/16 bytes, got 12/},
          {{"f32", [4], <<0::size(129)>>}, ~r/binary/},
          {{"f32", [4], [1, 2, 3, 4]}, ~r/binary/},
          {{"f64", [4], <<0::256>>}, ~r/expected f32\[4\], got f64\[4\]/},
          {{"f32", [2, 2], f32([1, 2, 3, 4])}, ~r/expected f32\[4\], got f32\[2,2\]/},
          {{"bogus", [4], f32([1, 2, 3, 4])}, ~r/bogus/},
          {{"f32", [4]}, ~r/buffer or \{type, shape, binary\}/},
          {{:f32, [4], f32([1, 2, 3, 4])}, ~r/string/},
          {nil, ~r/input 1/}
        ] do
      message = assert_error(Native.run(exe, [good, input], :binaries), inspect(input))
      assert message =~ pattern
    end

    # a sub-binary of a larger one is a binary like any other
    big = f32([0, 1, 2, 3, 4, 5])
    assert {:ok, {[_], _}} = Native.run(exe, [good, {"f32", [4], binary_part(big, 4, 16)}], :binaries)

    # uploads: every type with one byte too few or too many
    for type <- ~w(s8 s16 s32 s64 u8 u16 u32 u64 f16 bf16 f32 f64), extra <- [-1, 1] do
      n = 3 * div(bits(type), 8) + extra
      message = assert_error(Native.upload(device, type, [3], :binary.copy(<<1>>, n)), "#{type} #{n}")
      assert message =~ "got #{n}"
    end
  end

  test "dead, freed and foreign references are errors naming the expected resource", %{device: device} do
    {:ok, exe} = Native.compile(device, JSON.encode(hd(seeds())), [])
    {:ok, buffer} = Native.upload(device, "f32", [4], f32([1, 2, 3, 4]))
    {:ok, cell} = Native.cell_new(:x)

    # a resource of another type, or no resource at all, where one is expected
    for {call, pattern} <- [
          {fn -> Native.run(buffer, [], :binaries) end, "executable"},
          {fn -> Native.run(cell, [], :binaries) end, "executable"},
          {fn -> Native.upload(exe, "f32", [1], f32([1])) end, "device"},
          {fn -> Native.upload(make_ref(), "f32", [1], f32([1])) end, "device"},
          {fn -> Native.download(exe) end, "buffer"},
          {fn -> Native.download(self()) end, "buffer"},
          {fn -> Native.download(fn -> :ok end) end, "buffer"},
          {fn -> Native.executable_info(device) end, "executable"},
          {fn -> Native.compile(buffer, "{}", []) end, "device"},
          {fn -> Native.free(exe) end, "buffer"},
          {fn -> Native.cell_get(exe) end, "cell"},
          {fn -> Native.bytes_in_use(cell) end, "device"},
          {fn -> Native.kernel_sources(exe, :assembly) end, "spirv"}
        ] do
      assert assert_error(call.(), pattern) =~ pattern
    end

    # a freed buffer: as an input, downloaded, described, freed again
    assert {:ok, :ok} = Native.free(buffer)
    assert assert_error(Native.run(exe, [buffer, buffer], :binaries), "run") =~ "freed"
    assert assert_error(Native.download(buffer), "download") =~ "freed"
    assert {:ok, :already_deallocated} = Native.free(buffer)

    # references whose resource the BEAM has collected: serialised while alive, read back
    # after the last holder is gone
    dead =
      Task.async(fn ->
        {:ok, b} = Native.upload(device, "f32", [4], f32([1, 2, 3, 4]))
        {:ok, e} = Native.compile(device, JSON.encode(hd(seeds())), [])
        {:erlang.term_to_binary(b), :erlang.term_to_binary(e)}
      end)
      # a cold compile on a loaded 2-core machine can pass Task.await's default 5 s
      |> Task.await(120_000)

    :erlang.garbage_collect()
    {b, e} = dead
    b = :erlang.binary_to_term(b)
    e = :erlang.binary_to_term(e)

    # the executable may still be alive in the runtime's cache; either way no crash
    case Native.download(b) do
      {:ok, data} -> assert byte_size(data) == 16
      error -> assert assert_error(error, "dead buffer") =~ "buffer"
    end

    case Native.executable_info(e) do
      {:ok, %{inputs: [_, _]}} -> :ok
      error -> assert assert_error(error, "dead executable") =~ "executable"
    end
  end

  test "garbage SPIR-V modules and launch arguments are rejected", %{device: device, seed: seed} do
    :rand.seed(:exsss, {seed, 2, 2})
    header = <<0x07230203::little-32, 0x00010300::little-32, 0::32, 64::little-32, 0::32>>

    for _ <- 1..50 do
      words = :crypto.strong_rand_bytes(4 * :rand.uniform(64))
      module = if :rand.uniform(2) == 1, do: header <> words, else: words
      assert_error(Native.run_spirv(device, module, [], [{"f32", [4]}], <<>>, {1, 1, 1}, :binaries), "spirv")
    end

    for {args, pattern} <- [
          {[<<1, 2, 3>>, [], [], <<>>, {1, 1, 1}], "32-bit words"},
          {[<<>>, [], [], <<>>, {1, 1, 1}], "32-bit words"},
          {[header, [], [{"f32", [4]}], <<>>, {1, 1}], "groups"},
          {[header, [], [{"f32", [4]}], <<>>, {1 <<< 33, 1, 1}], "32-bit"},
          {[header, [], [{"f32"}], <<>>, {1, 1, 1}], "outputs"},
          {[header, [:x], [], <<>>, {1, 1, 1}], "input 0"}
        ] do
      assert assert_error(apply(Native, :run_spirv, [device | args] ++ [:binaries]), pattern) =~ pattern
    end
  end

  test "many processes compile, run, download and free the same resources at once", %{device: device} do
    {:ok, exe} = Native.compile(device, JSON.encode(hd(seeds())), [])
    buffers = for i <- 1..8, do: elem(Native.upload(device, "f32", [4], f32([i, i, i, i])), 1)

    results =
      1..200
      |> Task.async_stream(
        fn i ->
          :rand.seed(:exsss, {i, 3, 3})
          buffer = pick(buffers)

          case rem(i, 5) do
            0 -> Native.free(buffer)
            1 -> Native.run(exe, [buffer, buffer], :binaries)
            2 -> Native.download(buffer)
            3 -> Native.compile(device, JSON.encode(mutate(pick(seeds()))), [])
            4 -> Native.run(exe, [buffer, {"f32", [4], f32([1, 2, 3, 4])}], :buffers)
          end
        end,
        max_concurrency: 64,
        timeout: 120_000
      )
      |> Enum.map(fn {:ok, result} -> result end)

    for result <- results do
      case result do
        {:ok, _} -> :ok
        error -> assert_error(error, "concurrent call")
      end
    end

    # every failure of a run or download on a buffer is its having been freed
    for {:error, {:badarg, message}} <- results, message =~ "buffer", do: assert(message =~ "freed")
  end
end
