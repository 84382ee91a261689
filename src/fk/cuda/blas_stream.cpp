// blas_stream_step (see blas_stream.h).
#include "fk/cuda/blas_stream.h"

namespace fk::cuda {

BlasStreamStep blas_stream_step(bool bound, const void* bound_stream, const void* stream,
                                bool capture_running) {
  if (bound && bound_stream == stream) return BlasStreamStep::kKeep;
  if (capture_running) return BlasStreamStep::kRefuse;
  return bound ? BlasStreamStep::kSyncThenBind : BlasStreamStep::kBind;
}

}  // namespace fk::cuda
