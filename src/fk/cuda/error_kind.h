#pragma once
// What a CUDA runtime error leaves behind, as a pure function of its code
// (a cudaError_t value): no CUDA header, so CPU-only builds and host tests use
// it too.
//   recoverable  the call failed and nothing else did (a bad argument, an
//                out-of-memory, a refused launch): the error is also the
//                thread's last error, which check_cuda clears so that the
//                next, unrelated check does not report it again
//   sticky       a kernel faulted (illegal address, assert, trap, ...) or
//                the GPU failed while work ran: the context is corrupted (or
//                cannot be shown not to be), later calls of the process
//                return the same error, and only a new process recovers
//                (cudaGetLastError cannot clear it)
// The sticky codes are those driver_types.h documents as leaving "the process
// in an inconsistent state" / "must be terminated and relaunched", and three
// it does not say so of but that no process should go on after: an
// uncorrectable ECC (214) or NVLink (220) error detected while work ran, and
// cudaErrorUnknown (999), of which nothing is known to be recoverable.
#include <string>

namespace fk::cuda {

enum class CudaErrorKind { kSuccess, kRecoverable, kSticky };

CudaErrorKind cuda_error_kind(int code);

// The text check_cuda appends to a sticky error's name: what it means and what to do.
std::string sticky_error_note();

}  // namespace fk::cuda
