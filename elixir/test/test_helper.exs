unless Code.ensure_loaded?(Nx) do
  IO.puts("""
  Nx is not available: the Nx tests in test_nx/ are skipped; only the NIF tests run.
  Set NX_PATH to an Nx checkout (or fetch Nx from Hex with `mix deps.get`) to run them.
  """)
end

Code.require_file("support/eventually.ex", __DIR__)
# Five minutes a test, not ExUnit's one, for test/ and test_nx/ alike: the tests that check
# against Nx.Defn.Evaluator at hundreds of positions take 10-25 s alone on 2 cores, and
# under a restricted device emulated kernels take lavapipe's LLVM seconds each; beside the
# suite's other async tests, compiling side by side, several times that (CI's machines have
# 2 cores). A test that hangs still ends in a timeout.
ExUnit.start(timeout: 300_000)
