defmodule Nx.Vulkan.AttentionTest do
  # Softmax attention as users write it, in three styles: plain Nx; Axon's softmax (the max
  # through stop_grad) with a causal mask from compared iotas; Bumblebee's [batch, seq,
  # heads, dim] layout, transposed to [batch, heads, seq, dim] (Nx 0.7.2's dot takes batch
  # axes leading and in order only; fuse-attention.test has a dot with batch axes [0, 2]),
  # with an additive bias from a key-padding mask. Each through Nx.Vulkan against Nx.Defn.Evaluator, at 1, 7,
  # 64 and 200 positions and head dims 8 and 64. passes/fuse-attention makes each one
  # `attention` node where the device's kernel holds their rows (not on lavapipe, whose
  # bound is 0: there these run unfused and test the graph translation); the graphs these
  # functions serialise to are lit_tests/passes/Inputs/attention-*.json, on which
  # lit_tests/passes/fuse-attention.test checks the pass for NVIDIA's bounds.
  #
  # Tolerance, f32: 1e-5 relative + 1e-6 absolute. Each output element is a convex
  # combination of v's column (the probabilities are non-negative and sum to 1), |v| <= 1,
  # so its error is the probabilities' few roundings each (exp, the division, 2^-24 apart)
  # times |v| plus the final sum's, which over 200 keys of mixed signs grows about as their
  # square root: about 1e-6 in all. The fused kernel's online softmax rescales partial sums
  # as larger maxima appear, a few more roundings of the same size.
  use Nx.Vulkan.Case, async: true

  import Nx.Defn

  @inputs Path.expand("../../lit_tests/passes/Inputs", __DIR__)

  defn plain(q, k, v) do
    d = Nx.axis_size(q, 3)
    s = Nx.dot(q, [3], [0, 1], k, [3], [0, 1]) / Nx.sqrt(d)
    m = Nx.reduce_max(s, axes: [3], keep_axes: true)
    e = Nx.exp(s - m)
    p = e / Nx.sum(e, axes: [3], keep_axes: true)
    Nx.dot(p, [3], [0, 1], v, [2], [0, 1])
  end

  # Axon.Activations.softmax/2.
  defnp axon_softmax(x) do
    max = Nx.reduce_max(x, axes: [-1], keep_axes: true)
    e = Nx.exp(x - stop_grad(max))
    e / Nx.sum(e, axes: [-1], keep_axes: true)
  end

  defn axon_causal(q, k, v) do
    s = Nx.dot(q, [3], [0, 1], k, [3], [0, 1]) * Nx.rsqrt(Nx.axis_size(q, 3))
    n = Nx.axis_size(q, 2)
    causal = Nx.greater_equal(Nx.iota({n, 1}), Nx.iota({1, n})) |> Nx.broadcast(s)
    p = axon_softmax(Nx.select(causal, s, Nx.Constants.neg_infinity()))
    Nx.dot(p, [3], [0, 1], v, [2], [0, 1])
  end

  # Bumblebee.Layers' attention: [batch, seq, heads, dim] in and out, the key-padding mask
  # {batch, seq} an additive bias (0 or -1e10) over [batch, 1, 1, seq].
  defn bumblebee(q, k, v, mask) do
    bias = Nx.select(Nx.greater(mask, 0), 0.0, -1.0e10) |> Nx.new_axis(1) |> Nx.new_axis(1)
    q = Nx.transpose(q, axes: [0, 2, 1, 3])
    k = Nx.transpose(k, axes: [0, 2, 1, 3])
    w = Nx.dot(q, [3], [0, 1], k, [3], [0, 1]) * (1 / Nx.sqrt(Nx.axis_size(q, -1)))
    p = axon_softmax(w + bias)
    out = Nx.dot(p, [3], [0, 1], Nx.transpose(v, axes: [0, 2, 1, 3]), [2], [0, 1])
    Nx.transpose(out, axes: [0, 2, 1, 3])
  end

  # A u8 mask selecting -inf: a row that keeps no key is NaN (-inf - -inf), as in Nx.
  defn masked(q, k, v, mask) do
    s = Nx.dot(q, [3], [0, 1], k, [3], [0, 1])
    Nx.dot(axon_softmax(Nx.select(mask, s, Nx.Constants.neg_infinity())), [3], [0, 1], v, [2], [0, 1])
  end

  defp random(shape, seed) do
    :rand.seed(:exsss, seed)

    for(_ <- 1..Tuple.product(shape), do: 2 * :rand.uniform() - 1)
    |> Nx.tensor(type: :f32)
    |> Nx.reshape(shape)
  end

  # q, k, v of `seq` positions, head dim `d`, 2 heads, batch 2 (1 at 200 positions: the
  # evaluator's dots are Elixir loops).
  defp qkv(layout, seq, d) do
    batch = if seq == 200, do: 1, else: 2
    shape = if layout == :heads_first, do: {batch, 2, seq, d}, else: {batch, seq, 2, d}
    {random(shape, seq * 100 + d), random(shape, seq * 100 + d + 1), random(shape, seq * 100 + d + 2)}
  end

  # Keys past a prefix masked, two fewer kept for each later batch element (at 1 position
  # batch 1 keeps none: every score is then -1e10, a uniform row).
  defp padding(batch, seq),
    do: Nx.iota({batch, seq}, axis: 1) |> Nx.less(Nx.iota({batch, 1}) |> Nx.multiply(-2) |> Nx.add(seq))

  # One test per size: the evaluator's reference at 200 positions takes seconds of Elixir
  # loops, tens of seconds on a machine running several suites at once.
  for seq <- [1, 7, 64, 200], d <- [8, 64] do
    test "plain Nx attention, and Axon's softmax with a causal mask, match the evaluator at #{seq} positions, head dim #{d}" do
      {q, k, v} = qkv(:heads_first, unquote(seq), unquote(d))

      for fun <- [&plain/3, &axon_causal/3],
          do: assert_matches_evaluator(fun, [q, k, v], rtol: 1.0e-5, atol: 1.0e-6)
    end

    test "Bumblebee's layout with a padding bias matches the evaluator at #{seq} positions, head dim #{d}" do
      {q, k, v} = qkv(:seq_first, unquote(seq), unquote(d))
      mask = padding(elem(q.shape, 0), unquote(seq))
      assert_matches_evaluator(&bumblebee/4, [q, k, v, mask], rtol: 1.0e-5, atol: 1.0e-6)
    end
  end

  # f16 and bf16: on GPUs that list cooperative matrices of the type the fused kernel runs
  # on them (q, k, v read a chunk at a time in the plain layout, element by element through
  # Bumblebee's transposes), elsewhere on the f32 SIMT kernel or unfused. The evaluator
  # rounds the scores, exponentials, sums and probabilities to the type (2^-11 relative for
  # f16, 2^-8 for bf16), where the kernels keep f32 or round the probabilities alone: the
  # outputs, convex combinations of |v| <= 1, differ by a few of the type's ulp near 1.
  for {type, tol} <- [f16: 4.0e-3, bf16: 3.0e-2] do
    test "plain and Bumblebee-layout attention in #{type} match the evaluator at 64 positions, head dim 64" do
      {q, k, v} = qkv(:heads_first, 64, 64)
      half = fn t -> Nx.as_type(t, unquote(type)) end
      assert_matches_evaluator(&plain/3, Enum.map([q, k, v], half), rtol: unquote(tol), atol: unquote(tol))
      {q, k, v} = qkv(:seq_first, 64, 64)
      mask = padding(elem(q.shape, 0), 64)
      assert_matches_evaluator(&bumblebee/4, Enum.map([q, k, v], half) ++ [mask], rtol: unquote(tol), atol: unquote(tol))
    end
  end

  test "a row whose keys are all masked is NaN, the others as the evaluator's" do
    {q, k, v} = qkv(:heads_first, 7, 8)
    # Query 3 of every head keeps no key; the others keep the keys up to their own.
    mask =
      Nx.greater_equal(Nx.iota({7, 1}), Nx.iota({1, 7}))
      |> Nx.put_slice([3, 0], Nx.broadcast(Nx.u8(0), {1, 7}))

    mask = Nx.broadcast(mask, {2, 2, 7, 7})
    out = assert_matches_evaluator(&masked/4, [q, k, v, mask], rtol: 1.0e-5, atol: 1.0e-6)
    nan = out |> Nx.is_nan() |> Nx.backend_copy(Nx.BinaryBackend)
    assert nan[[.., .., 3, ..]] |> Nx.all() |> Nx.to_number() == 1
    assert nan |> Nx.sum() |> Nx.to_number() == 2 * 2 * 8
  end

  # The lit inputs are these functions' graphs as serialised now; NXV_WRITE_LIT_INPUTS=1
  # writes them afresh (after a change to the serialiser). Axon's causal mask compares
  # iotas of Nx's default integer type, s64 up to Nx 0.11 and s32 from 0.12: a file for each.
  test "lit_tests/passes/Inputs holds the graphs these functions serialise to" do
    causal = if Nx.type(Nx.iota({1})) == {:s, 32}, do: "axon-causal-s32", else: "axon-causal"

    {q, k, v} = qkv(:heads_first, 64, 64)
    {bq, bk, bv} = qkv(:seq_first, 64, 64)
    mask = padding(2, 64)

    for {name, fun, args} <- [
          {"plain", &plain/3, [q, k, v]},
          {causal, &axon_causal/3, [q, k, v]},
          {"bumblebee", &bumblebee/4, [bq, bk, bv, mask]},
          {"masked", &masked/4, [q, k, v, Nx.broadcast(Nx.u8(1), {2, 2, 64, 64})]}
        ] do
      # Traced as Nx.Vulkan.explain(fun, args, stage: :source) does, without the device's
      # options: the same graph on every machine.
      {graph, _used} = graph(fun, args, name: "attention-" <> name)
      json = Nx.Vulkan.JSON.encode(graph)
      path = Path.join(@inputs, "attention-#{name}.json")
      if System.get_env("NXV_WRITE_LIT_INPUTS") == "1", do: File.write!(path, json <> "\n")

      assert String.trim(File.read!(path)) == json,
             "#{path} is not what #{name} serialises to now (NXV_WRITE_LIT_INPUTS=1 rewrites it)"
    end
  end
end
