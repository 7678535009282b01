defmodule Nx.Vulkan.Hooks do
  @moduledoc false
  # Hooks (`Nx.Defn.Kernel.hook/3`, `print_value/2`, token callbacks) run on the host,
  # after the graph: the values they receive become extra graph outputs. A callback's
  # result is discarded and cannot change the graph's results, so running it after the
  # submit instead of mid-graph differs only in when it is called, as with EXLA's
  # outfeed. A hook inside a `while` body or a `cond` branch would run once per
  # iteration or only when its branch is taken: that needs the host to drive the
  # control flow, so such hooks are an error.
  #
  # Nx <= 0.12 carries hooks in `token` nodes; Nx 0.13 has `hook` nodes, Nx's main
  # branch `io_call` nodes, whose second argument is the callback spec.

  alias Nx.Defn.{Composite, Expr, Tree}
  alias Nx.Tensor, as: T

  @hook_ops [:hook, :io_call]

  @doc """
  Returns `{callbacks, values}` for the hooks of `outputs` that run, in the order the
  Evaluator runs them: callback `i` receives the value of container `values[i]`.
  `hooks` is the defn `:hooks` option (callbacks by hook name).
  """
  def split(outputs, hooks) do
    {_seen, calls} = Composite.reduce(outputs, {%{}, []}, &visit(&1, &2, hooks))
    calls |> Enum.reverse() |> Enum.unzip()
  end

  defp visit(%T{data: %Expr{id: id}} = t, {seen, calls}, hooks) do
    if Map.has_key?(seen, id), do: {seen, calls}, else: visit_new(t, {Map.put(seen, id, true), calls}, hooks)
  end

  defp visit_new(%T{data: %Expr{op: :token, args: [token]}}, acc, hooks) do
    # The newest hook is first in the list; the Evaluator runs the oldest first.
    token.hooks
    |> Enum.reverse()
    |> Enum.reduce(acc, fn %{name: name, expr: expr, callback: callback}, acc ->
      acc = Composite.reduce(expr, acc, &visit(&1, &2, hooks))
      add_call(acc, hooks[name] || callback, expr)
    end)
  end

  defp visit_new(%T{data: %Expr{op: op, args: [value, spec | _]}}, acc, hooks) when op in @hook_ops do
    acc = Composite.reduce(value, acc, &visit(&1, &2, hooks))

    case spec do
      {:token_hook, hooked, inner} ->
        acc = Composite.reduce(hooked, acc, &visit(&1, &2, hooks))
        add_call(acc, resolve(inner, hooks), hooked)

      spec ->
        add_call(acc, resolve(spec, hooks), value)
    end
  end

  defp visit_new(%T{data: %Expr{op: :while, args: [initial, _arg, pred, body]}} = t, acc, hooks) do
    reject_nested!(t, [pred, body], hooks)
    Composite.reduce(initial, acc, &visit(&1, &2, hooks))
  end

  # Branch bodies are not in the enclosing scope (Tree.apply_args visits them all), and
  # the predicates after the first run only when the ones before are false.
  defp visit_new(%T{data: %Expr{op: :cond, args: [[{pred, _} | _] = clauses, last]}} = t, acc, hooks) do
    reject_nested!(t, [last | Enum.map(clauses, &elem(&1, 1)) ++ Enum.map(tl(clauses), &elem(&1, 0))], hooks)
    visit(pred, acc, hooks)
  end

  defp visit_new(t, acc, hooks) do
    {_args, acc} = Tree.apply_args(t, :scope, acc, &{&1, visit(&1, &2, hooks)})
    acc
  end

  defp add_call(acc, nil, _value), do: acc
  defp add_call({seen, calls}, fun, value), do: {seen, [{fun, value} | calls]}

  defp resolve({:named, name, callback}, hooks), do: hooks[name] || callback
  defp resolve({:fn, callback}, _hooks), do: callback

  defp reject_nested!(%T{data: %Expr{op: op}}, inner, hooks) do
    if runs_hooks?(inner, hooks) do
      raise ArgumentError,
            "Nx.Vulkan runs hooks (Nx.Defn.Kernel.hook/3, print_value/2, token callbacks) " <>
              "only outside while loops and cond branches, and this #{op} has one inside: " <>
              "move the hook out, or compile with Nx.Defn.Evaluator"
    end
  end

  # Whether any hook in the containers `exprs` (at any depth) has a callback.
  defp runs_hooks?(exprs, hooks) do
    Enum.reduce(exprs, %{}, &Composite.reduce(&1, &2, fn t, seen -> find_running_hook(t, seen, hooks) end))
    false
  catch
    :runs_hook -> true
  end

  defp find_running_hook(%T{data: %Expr{id: id, op: op, args: args}} = t, seen, hooks) do
    cond do
      Map.has_key?(seen, id) ->
        seen

      op == :token and Enum.any?(hd(args).hooks, &(hooks[&1.name] || &1.callback)) ->
        throw(:runs_hook)

      op in @hook_ops and hook_runs?(Enum.at(args, 1), hooks) ->
        throw(:runs_hook)

      true ->
        {_, seen} = Tree.apply_args(t, Map.put(seen, id, true), &{&1, find_running_hook(&1, &2, hooks)})
        seen
    end
  end

  defp hook_runs?({:token_hook, _hooked, spec}, hooks), do: hook_runs?(spec, hooks)
  defp hook_runs?(spec, hooks), do: resolve(spec, hooks) != nil
end
