// libFuzzer target: the JSON reader and the verifier on arbitrary bytes. Either may reject
// an input (an IrError naming the problem); nothing may crash, hang or leak.
#include "fuzz/fuzz_common.h"
#include "ir/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto g = nxv::fuzz::read_verified(data, size);
  // What the reader accepted must survive its own writer and reader unchanged.
  if (g) {
    const std::string text = nxv::ir::write_graph(*g);
    std::string again;
    try {
      again = nxv::ir::write_graph(nxv::ir::parse_graph(text));
    } catch (const std::exception& e) {
      nxv::fuzz::finding(std::string("a verified graph does not read back: ") + e.what(), &*g);
    }
    if (again != text) nxv::fuzz::finding("write(read(write(g))) != write(g)", &*g);
  }
  return 0;
}
