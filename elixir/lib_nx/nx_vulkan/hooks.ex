defmodule Nx.Vulkan.Hooks do
  @moduledoc false
  # Hooks (`Nx.Defn.Kernel.hook/3`, `print_value/2`, token callbacks) run on the host,
  # after the graph: the values they receive become extra graph outputs. A callback's
  # result is discarded and cannot change the graph's results, so running it after the
  # submit instead of mid-graph differs only in when it is called, as with EXLA's
  # outfeed; callbacks get their values on the host, as from EXLA. A hook inside a `while` body or a `cond` branch runs once per iteration or
  # only when its branch is taken: the host has to drive that control flow (`split/2`
  # says so, and Nx.Vulkan evaluates the function op by op on the device).
  #
  # Nx <= 0.12 carries hooks in `token` nodes; Nx 0.13 has `hook` nodes, Nx's main
  # branch `io_call` nodes, whose second argument is the callback spec.

  alias Nx.Defn.{Composite, Expr, Tree}
  alias Nx.Tensor, as: T

  @hook_ops [:hook, :io_call]

  @doc """
  Returns `{callbacks, values}` for the hooks of `outputs` that run, in the order the
  Evaluator runs them: callback `i` receives the value of container `values[i]`; or
  `:host_driven` where a hook that runs is inside a `while` body or a `cond` branch.
  `hooks` is the defn `:hooks` option (callbacks by hook name).
  """
  def split(outputs, hooks) do
    {_seen, calls} = Composite.reduce(outputs, {%{}, []}, &visit(&1, &2, hooks))
    calls |> Enum.reverse() |> Enum.unzip()
  catch
    :host_driven -> :host_driven
  end

  @doc """
  `expr` with every hook callback wrapped to receive its value on the host
  (Nx.BinaryBackend), as EXLA's outfeed gives it: for Nx.Defn.Evaluator over device
  tensors. Nodes keep their ids.
  """
  def on_host(expr) do
    {expr, _cache} = Composite.traverse(expr, %{}, &host_node/2)
    expr
  end

  @doc "The defn `:hooks` option with its callbacks wrapped as by `on_host/1`."
  def on_host_hooks(hooks), do: Map.new(hooks, fn {name, fun} -> {name, host(fun)} end)

  defp host_node(%T{data: %Expr{id: id} = data} = t, cache) do
    case cache do
      %{^id => t} ->
        {t, cache}

      %{} ->
        {args, cache} = Tree.apply_args(t, :all, cache, &host_node/2)
        t = %{t | data: %{data | args: host_args(data.op, args)}}
        {t, Map.put(cache, id, t)}
    end
  end

  defp host_args(:token, [token]), do: [%{token | hooks: Enum.map(token.hooks, &%{&1 | callback: host(&1.callback)})}]
  defp host_args(op, [value, spec | rest]) when op in @hook_ops, do: [value, host_spec(spec) | rest]
  defp host_args(_op, args), do: args

  defp host_spec({:token_hook, hooked, inner}), do: {:token_hook, hooked, host_spec(inner)}
  defp host_spec({:named, name, callback}), do: {:named, name, host(callback)}
  defp host_spec({:fn, callback}), do: {:fn, host(callback)}

  defp host(nil), do: nil
  defp host(fun), do: fn value -> fun.(Nx.backend_copy(value, Nx.BinaryBackend)) end

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

  defp visit_new(%T{data: %Expr{op: :while, args: [initial, _arg, pred, body]}}, acc, hooks) do
    if runs_hooks?([pred, body], hooks), do: throw(:host_driven)
    Composite.reduce(initial, acc, &visit(&1, &2, hooks))
  end

  # Branch bodies are not in the enclosing scope (Tree.apply_args visits them all), and
  # the predicates after the first run only when the ones before are false.
  defp visit_new(%T{data: %Expr{op: :cond, args: [[{pred, _} | _] = clauses, last]}}, acc, hooks) do
    branches = [last | Enum.map(clauses, &elem(&1, 1)) ++ Enum.map(tl(clauses), &elem(&1, 0))]
    if runs_hooks?(branches, hooks), do: throw(:host_driven)
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
