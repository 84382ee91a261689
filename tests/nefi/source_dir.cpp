// The checkout's root, compiled into this one object only: the path changes
// with every clone or worktree, and a definition on every test object would
// make ccache miss all of them (CMakeLists.txt sets it on this file alone).
#include <string>

#include "nefi/test_files.h"

namespace nefi::test {

std::string source_dir() {
  return NEFI_SOURCE_DIR;
}

}  // namespace nefi::test
