import os
import lit.formats

config.name = "nx_vulkan"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["CMakeLists.txt"]

nxv = lit_config.params.get("nxv")
tools = lit_config.params.get("llvm_tools_dir", "/usr/lib/llvm-14/bin")
if not nxv:
    lit_config.fatal("run with --param nxv=<path to the nxv binary>")
config.substitutions.append(("%nxv", nxv))
config.environment["PATH"] = tools + os.pathsep + config.environment.get("PATH", os.environ["PATH"])
