// The device-side index checks' records and error (see index_errors.h).
#include "fk/cuda/index_errors.h"

#include <cstring>
#include <string>

#include "fk/error.h"

namespace fk::cuda {

int index_record_slot(const char* op) {
  for (int i = 0; i < kIndexCheckedOpCount; ++i)
    if (std::strcmp(op, kIndexCheckedOps[i]) == 0) return i;
  return -1;
}

void throw_if_index_flagged(int64_t* records, int device) {
  int first = -1;
  int64_t value = 0, bound = 0;
  for (int i = 0; i < kIndexCheckedOpCount; ++i) {
    int64_t* r = records + i * kIndexRecordWords;
    if (r[kIndexRecordFlag] == 0) continue;
    if (first < 0) {
      first = i;
      value = r[kIndexRecordValue];
      bound = r[kIndexRecordBound];
    }
    // Cleared, so that one bad call is reported once.
    for (int w = 0; w < kIndexRecordWords; ++w) r[w] = 0;
  }
  if (first < 0) return;
  throw Error(std::string(kIndexCheckedOps[first]) + " (device-side index check on cuda:" +
                  std::to_string(device) + ", reported at the next synchronization)",
              "indices in [0, " + std::to_string(bound) +
                  ") along the indexed dim (negative indices are not wrapped)",
              "index " + std::to_string(value));
}

}  // namespace fk::cuda
