#!/usr/bin/env bash
# Makes an eXMC checkout that builds offline against local trees: its Mix dependencies become
# path dependencies and its Rustler module (the optional Rust NUTS tree) is left out.
#   scripts/exmc_setup.sh EXMC_TREE JASON_TREE NX_ROOT NXV_ELIXIR DEST
# EXMC_TREE   an eXMC source tree (borodark/eXMC v0.3; lib/, src/, config/, mix.exs are used)
# JASON_TREE  a Jason source tree (v1.4; lib/ and mix.exs)
# NX_ROOT     a directory holding nx/, complex/ and telemetry/ (Nx 0.13 and its dependencies)
# NXV_ELIXIR  this repository's elixir/ (the :nx_vulkan Mix project)
# DEST        the checkout to write (replaced); DEST/jason holds Jason's copy
# Then: cd DEST && NX_PATH=NX_ROOT/nx mix compile (Elixir 1.18; NX_PATH is what :nx_vulkan's
# mix.exs reads). Without the Rustler module eXMC's tree builder is its Elixir one:
# Exmc.NUTS.Tree.nif_available?/0 is false when the module is not loaded.
set -euo pipefail
[ $# -eq 5 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
exmc=$(realpath "$1") jason=$(realpath "$2") nx=$(realpath "$3") nxv=$(realpath "$4") dest=$5
for d in "$exmc/lib/exmc" "$jason/lib" "$nx/nx" "$nx/complex" "$nx/telemetry" "$nxv/lib_nx"; do
  [ -d "$d" ] || { echo "exmc_setup: no directory $d" >&2; exit 2; }
done

rm -rf "$dest"
mkdir -p "$dest/jason"
for f in lib src config mix.exs; do [ -e "$exmc/$f" ] && cp -r "$exmc/$f" "$dest/"; done
cp -r "$jason/lib" "$jason/mix.exs" "$dest/jason/"
rm -f "$dest/lib/exmc/nuts/native_tree.ex"
dest=$(realpath "$dest")

# Jason's own dependencies are optional or development-only: none is needed to build it.
perl -0pi -e 's/deps: deps\(\)/deps: []/' "$dest/jason/mix.exs"

# eXMC's deps/0 names Hex and GitHub packages (nx, exla, nx_vulkan, rustler, jason, ex_doc,
# propcheck); the checkout takes the local trees instead, and leaves out EXLA, Rustler and
# the documentation and property-test tools.
deps="  defp deps do
    [
      {:nx, path: \"$nx/nx\", override: true},
      {:complex, path: \"$nx/complex\", override: true},
      {:telemetry, path: \"$nx/telemetry\", override: true},
      {:nx_vulkan, path: \"$nxv\"},
      {:jason, path: \"$dest/jason\"}
    ]
  end
"
DEPS=$deps perl -0pi -e 's/  defp deps do\n.*?\n  end\n/$ENV{DEPS}/s' "$dest/mix.exs"
grep -q "path: \"$dest/jason\"" "$dest/mix.exs" || { echo "exmc_setup: deps/0 not found in $exmc/mix.exs" >&2; exit 1; }
echo "exmc_setup: $dest (eXMC $(sed -n 's/ *@version "\(.*\)"/\1/p' "$dest/mix.exs"), Rustler module left out)"
