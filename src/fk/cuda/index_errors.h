#pragma once
// Device-side index range checks, the way PyTorch's device asserts work but
// recoverable: an fk index op on CUDA hands its kernel the device's record
// for that op (runtime.h's index_check_record), the kernel records an
// out-of-range index there instead of reading or writing out of bounds
// (kernels.h's IndexCheck), and the next synchronization of the device
// (cuda::synchronize: every op by default, a host read under ME_LAZY_SYNC=1
// or after a graph replay) finds the record and throws fk::Error naming the
// op, the index and the valid range. So the op itself never reads its index
// back (no host sync inside a device step, capturable in a CUDA graph), and
// the error stays as clear as the CPU's, which checks before it writes.
//
// The records are host memory the device writes (mapped, page-locked): the
// host reads them after a synchronization with no copy. Plain C++ here (no
// CUDA header), so that the record layout and the error are tested without
// a GPU; runtime.cpp owns the memory.
//
// What a caller gives up against the CPU: an out-of-range position is
// skipped (a gather or index_select writes 0 there, a scatter or index add
// adds nothing) while the others are written, so an in-place index_add_ or
// scatter_add_ that fails may have added its in-range rows; and under
// ME_LAZY_SYNC=1 or inside a replayed graph the error comes at the next
// synchronization, from whatever call reaches it.
#include <cstdint>
#include <string>

namespace fk::cuda {

// The ops that check their index on the device, one record each.
inline constexpr const char* kIndexCheckedOps[] = {"index_select", "gather",    "scatter_add",
                                                   "scatter_add_", "index_add", "index_add_"};
inline constexpr int kIndexCheckedOpCount =
    static_cast<int>(sizeof(kIndexCheckedOps) / sizeof(kIndexCheckedOps[0]));

// A record's words as a kernel writes them: flagged (1), the offending index,
// the size of the indexed dimension. A record is kIndexRecordWords int64.
inline constexpr int kIndexRecordWords = 3;
inline constexpr int kIndexRecordFlag = 0, kIndexRecordValue = 1, kIndexRecordBound = 2;
// The flag word: 0 clear, 1 as a kernel flags it, kIndexRecordAnnounced once
// the host wrote the error on stderr (still flagged: still thrown).
inline constexpr int64_t kIndexRecordAnnounced = 2;

// The record slot of an op named `op` (one of kIndexCheckedOps), or -1.
int index_record_slot(const char* op);

// Given the device's kIndexCheckedOpCount records (read after a
// synchronization), clears every one and throws fk::Error naming the first
// flagged op, its offending index and the valid range on cuda:`device`;
// returns when none is flagged.
void throw_if_index_flagged(int64_t* records, int device);

// For a synchronization that must not throw (a destructor's): when a
// flagged record has not been announced yet, marks every flagged record
// announced and returns one line for stderr: `who` found the error, the
// error throw_if_index_flagged will throw, and that the next synchronization
// of cuda:`device` throws it. The records stay flagged, so that it does;
// returns "" when none is flagged or all were announced (one line per error,
// however many destructors wait after it).
std::string announce_pending_index_error(int64_t* records, int device, const char* who);

}  // namespace fk::cuda
