Code.require_file("support/nx_vulkan_case.ex", __DIR__)

# Tests that wait on work in the C++ core are tagged and left out by default:
#   :needs_while    - `while`/`cond` nodes (host-driven control flow in runtime/executable.cpp;
#                     Nx.Random, Nx.LinAlg's loops and defn while/if depend on it)
#   :needs_f64_math - f64 transcendentals (exp, log, sin, ... in the codegen math library)
# Run them with `mix test --include needs_while --include needs_f64_math`, or set
# NXV_TEST_ALL=1 to include every tag.
pending = [:needs_while, :needs_f64_math]

excluded =
  if System.get_env("NXV_TEST_ALL") in ["1", "true"] do
    []
  else
    IO.puts("""
    Excluding tests tagged #{Enum.map_join(pending, ", ", &inspect/1)}: they wait on the C++ core
    (while/cond in the runtime, f64 transcendentals in codegen). Include them with
    `mix test --include needs_while --include needs_f64_math` or NXV_TEST_ALL=1.
    """)

    pending
  end

ExUnit.start(exclude: excluded)
