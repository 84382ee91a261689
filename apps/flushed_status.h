#pragma once
// A tool's exit status once its standard output is flushed: output that did
// not reach its file (a full disk, /dev/full) is a failure, not exit 0 with
// a table that was never written.
#include <cstdio>
#include <iostream>

namespace cli_checks {

inline int flushed_status(const char* program, int status, int failure) {
  std::cout.flush();
  const bool streamed = std::cout.good();
  const bool flushed = std::fflush(stdout) == 0;
  if (streamed && flushed && !std::ferror(stdout)) return status;
  std::fprintf(stderr, "%s: error: could not write the standard output\n", program);
  return status != 0 ? status : failure;
}

}  // namespace cli_checks
