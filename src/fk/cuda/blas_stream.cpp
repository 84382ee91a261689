// blas_stream_step and same_stream (see blas_stream.h).
#include "fk/cuda/blas_stream.h"

namespace fk::cuda {

bool same_stream(const StreamKey& a, const StreamKey& b) {
  if (a.address != b.address) return false;
  return !(a.id_known && b.id_known) || a.id == b.id;
}

BlasStreamStep blas_stream_step(bool bound, const StreamKey& bound_stream, const StreamKey& stream,
                                bool capture_running) {
  if (bound && same_stream(bound_stream, stream)) return BlasStreamStep::kKeep;
  if (capture_running) return BlasStreamStep::kRefuse;
  return bound ? BlasStreamStep::kSyncThenBind : BlasStreamStep::kBind;
}

}  // namespace fk::cuda
