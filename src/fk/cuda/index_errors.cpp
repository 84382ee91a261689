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

namespace {

// The first flagged record's slot in kIndexCheckedOps order, or -1.
int first_flagged(const int64_t* records) {
  for (int i = 0; i < kIndexCheckedOpCount; ++i)
    if (records[i * kIndexRecordWords + kIndexRecordFlag] != 0) return i;
  return -1;
}

Error index_error(const int64_t* records, int slot, int device) {
  const int64_t* r = records + slot * kIndexRecordWords;
  return Error(std::string(kIndexCheckedOps[slot]) + " (device-side index check on cuda:" +
                   fk::to_text(device) + ", reported at the next synchronization)",
               "indices in [0, " + fk::to_text(r[kIndexRecordBound]) +
                   ") along the indexed dim (negative indices are not wrapped)",
               "index " + fk::to_text(r[kIndexRecordValue]));
}

}  // namespace

void throw_if_index_flagged(int64_t* records, int device) {
  const int first = first_flagged(records);
  if (first < 0) return;
  Error e = index_error(records, first, device);
  // The flagged ones cleared, so that one bad call is reported once.
  for (int i = 0; i < kIndexCheckedOpCount; ++i) {
    int64_t* r = records + i * kIndexRecordWords;
    if (r[kIndexRecordFlag] == 0) continue;
    for (int w = 0; w < kIndexRecordWords; ++w) r[w] = 0;
  }
  throw e;
}

std::string announce_pending_index_error(int64_t* records, int device, const char* who) {
  const int first = first_flagged(records);
  if (first < 0) return "";
  bool fresh = false;
  for (int i = 0; i < kIndexCheckedOpCount; ++i) {
    int64_t& flag = records[i * kIndexRecordWords + kIndexRecordFlag];
    if (flag == 0 || flag == kIndexRecordAnnounced) continue;
    fresh = true;
    flag = kIndexRecordAnnounced;
  }
  if (!fresh) return "";
  return std::string("fk: ") + who +
         " found a device-side index error on cuda:" + std::to_string(device) +
         " and left it pending (a destructor cannot throw): the next synchronization of cuda:" +
         std::to_string(device) + " throws it: " + index_error(records, first, device).what() +
         "\n";
}

}  // namespace fk::cuda
