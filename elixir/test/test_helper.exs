unless Code.ensure_loaded?(Nx) do
  IO.puts("""
  Nx is not available: the Nx tests in test_nx/ are skipped; only the NIF tests run.
  Set NX_PATH to an Nx checkout (or fetch Nx from Hex with `mix deps.get`) to run them.
  """)
end

Code.require_file("support/eventually.ex", __DIR__)
ExUnit.start()
