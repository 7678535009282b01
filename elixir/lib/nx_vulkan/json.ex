defmodule Nx.Vulkan.JSON do
  @moduledoc false
  # A minimal JSON encoder for the IR (no JSON library is available without Hex).
  # Map keys are written sorted, so the same graph always gives the same text
  # (the runtime caches executables by content).

  @doc "Encodes maps (atom or string keys), lists, strings, numbers, booleans and nil."
  def encode(term), do: IO.iodata_to_binary(value(term))

  defp value(nil), do: "null"
  defp value(true), do: "true"
  defp value(false), do: "false"
  defp value(n) when is_integer(n), do: Integer.to_string(n)
  defp value(f) when is_float(f), do: Float.to_string(f)
  defp value(a) when is_atom(a), do: string(Atom.to_string(a))
  defp value(s) when is_binary(s), do: string(s)
  defp value(list) when is_list(list), do: [?[, Enum.map_intersperse(list, ?,, &value/1), ?]]

  defp value(map) when is_map(map) do
    pairs =
      map
      |> Enum.map(fn {k, v} -> {to_string(k), v} end)
      |> Enum.sort()
      |> Enum.map_intersperse(?,, fn {k, v} -> [string(k), ?:, value(v)] end)

    [?{, pairs, ?}]
  end

  defp string(s), do: [?", escape(s), ?"]

  defp escape(s) do
    for <<c::utf8 <- s>>, into: "" do
      case c do
        ?" -> "\\\""
        ?\\ -> "\\\\"
        ?\n -> "\\n"
        c when c < 0x20 -> "\\u" <> String.pad_leading(Integer.to_string(c, 16), 4, "0")
        c -> <<c::utf8>>
      end
    end
  end
end
