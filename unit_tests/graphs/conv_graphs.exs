# Writes unit_tests/graphs/conv_*.json: convolutions and their gradients as Elixir's
# compiler lowers them (Nx.Vulkan.Conv), at shapes whose dots are tiled, for
# unit_tests/matmul_test.cpp. From elixir/, with Nx available:
#
#   NX_PATH=... mix run ../unit_tests/graphs/conv_graphs.exs
#
# Each graph takes the input and the kernel and returns the conv, then the gradients of
# sum(sin(conv)) with respect to both (Nx writes them as convs: input dilation for the
# strides, batch or feature groups, reversed kernels).
defmodule ConvGraphs do
  @cases [
    same: {{2, 16, 12, 12}, {16, 16, 3, 3}, padding: :same},
    strided_dilated:
      {{2, 16, 17, 15}, {16, 16, 3, 3},
       strides: [2, 1], padding: [{1, 2}, {0, 1}], kernel_dilation: [1, 2], input_dilation: [1, 2]},
    # 256 windows per image: the kernel is the dot's left operand (Nx.Vulkan.Conv.contract/3)
    feature_groups: {{2, 32, 16, 16}, {32, 16, 3, 3}, feature_group_size: 2, padding: :same},
    batch_groups: {{4, 16, 16, 16}, {32, 16, 3, 3}, batch_group_size: 2, padding: :same},
    # the weight gradient contracts 8 x 24 x 24 positions into 576 outputs: split-reduction
    long_contraction: {{8, 4, 24, 24}, {16, 4, 3, 3}, padding: :same},
    # 288 terms: Nx.Vulkan.Conv's form that folds the images into the windows (one image of
    # 144 here), the last tile of 128 windows partial
    folded: {{1, 32, 12, 12}, {32, 32, 3, 3}, padding: :same},
    # rows of 7 windows: runs of 4 cross them
    folded_odd_rows: {{1, 32, 7, 7}, {32, 32, 3, 3}, padding: :same}
  ]

  def write do
    for {name, {input, kernel, opts}} <- @cases do
      fun = fn x, k ->
        conv = Nx.conv(x, k, opts)
        {gx, gk} = Nx.Defn.grad({x, k}, fn {x, k} -> Nx.sum(Nx.sin(Nx.conv(x, k, opts))) end)
        {conv, gx, gk}
      end

      expr = Nx.Defn.debug_expr_apply(fun, [Nx.template(input, :f32), Nx.template(kernel, :f32)])
      {graph, _used} = Nx.Vulkan.IR.build(expr, name: "conv_#{name}", f32_in_f64: false)
      File.write!(Path.join(__DIR__, "conv_#{name}.json"), Nx.Vulkan.JSON.encode(graph))
    end
  end
end

ConvGraphs.write()
