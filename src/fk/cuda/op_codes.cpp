// The CUDA launchers take op and dtype codes as plain ints (kernels.h has no fk
// headers, so .cu files stay light); here they are pinned to fk's enums.
#include "fk/cuda/kernels.h"
#include "fk/dtype.h"
#include "fk/ops/binary.h"
#include "fk/ops/unary.h"

namespace fk::cuda {
namespace {

constexpr int code(DType t) {
  return static_cast<int>(t);
}
constexpr int code(UnaryOp op) {
  return static_cast<int>(op);
}
constexpr int code(BinaryOp op) {
  return static_cast<int>(op);
}

static_assert(kBool == code(DType::Bool) && kI32 == code(DType::I32) && kI64 == code(DType::I64) &&
              kF16 == code(DType::F16) && kBF16 == code(DType::BF16) && kF32 == code(DType::F32) &&
              kF64 == code(DType::F64) && kC64 == code(DType::C64) && kC128 == code(DType::C128) &&
              kNumDTypes == 9);

static_assert(kUnaryNeg == code(UnaryOp::Neg) && kUnaryAbs == code(UnaryOp::Abs) &&
              kUnarySign == code(UnaryOp::Sign) && kUnaryExp == code(UnaryOp::Exp) &&
              kUnaryLog == code(UnaryOp::Log) && kUnaryLog1p == code(UnaryOp::Log1p) &&
              kUnaryExpm1 == code(UnaryOp::Expm1) && kUnarySqrt == code(UnaryOp::Sqrt) &&
              kUnaryRsqrt == code(UnaryOp::Rsqrt) && kUnarySin == code(UnaryOp::Sin) &&
              kUnaryCos == code(UnaryOp::Cos) && kUnaryTanh == code(UnaryOp::Tanh) &&
              kUnarySigmoid == code(UnaryOp::Sigmoid) && kUnaryRelu == code(UnaryOp::Relu) &&
              kUnaryLeakyRelu == code(UnaryOp::LeakyRelu) && kUnaryElu == code(UnaryOp::Elu) &&
              kUnaryGelu == code(UnaryOp::Gelu) && kUnaryGeluTanh == code(UnaryOp::GeluTanh) &&
              kUnarySilu == code(UnaryOp::Silu) && kUnarySoftplus == code(UnaryOp::Softplus) &&
              kUnaryErf == code(UnaryOp::Erf) && kUnaryPowScalar == code(UnaryOp::PowScalar) &&
              kUnaryClamp == code(UnaryOp::Clamp) && kUnaryConj == code(UnaryOp::Conj) &&
              kUnarySquare == code(UnaryOp::Square) &&
              kUnaryReciprocal == code(UnaryOp::Reciprocal) &&
              kNumUnaryOps == code(UnaryOp::Reciprocal) + 1);

static_assert(kBinaryAdd == code(BinaryOp::Add) && kBinarySub == code(BinaryOp::Sub) &&
              kBinaryMul == code(BinaryOp::Mul) && kBinaryDiv == code(BinaryOp::Div) &&
              kBinaryPow == code(BinaryOp::Pow) && kBinaryMaximum == code(BinaryOp::Maximum) &&
              kBinaryMinimum == code(BinaryOp::Minimum) && kBinaryAtan2 == code(BinaryOp::Atan2) &&
              kBinaryEq == code(BinaryOp::Eq) && kBinaryNe == code(BinaryOp::Ne) &&
              kBinaryLt == code(BinaryOp::Lt) && kBinaryLe == code(BinaryOp::Le) &&
              kBinaryGt == code(BinaryOp::Gt) && kBinaryGe == code(BinaryOp::Ge) &&
              kNumBinaryOps == code(BinaryOp::Ge) + 1);

}  // namespace
}  // namespace fk::cuda
