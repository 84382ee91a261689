// fk opens libcublas at its first GEMM instead of linking it
// (fk/cuda/cublas_library.h). These run without a GPU: opening the library
// and asking it for a status's name need no device.
#include "fk/cuda/cublas_library.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <string>

#include "fk/error.h"
#include "fk/knobs.h"

namespace {

const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

bool cublas_is_loaded() {
  void* h = dlopen(kSoname.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (h != nullptr) dlclose(h);  // drops only the reference NOLOAD took
  return h != nullptr;
}

std::string cudart_directory() {
  const std::string soname = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
  void* h = dlopen(soname.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) return "";
  link_map* map = nullptr;
  std::string path;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) path = map->l_name;
  dlclose(h);
  return path.substr(0, path.rfind('/') + 1);
}

// The first candidate that opens (cuBLAS may live elsewhere than libcudart,
// in a wheel's directory say, found by the soname).
std::string first_that_opens() {
  for (const std::string& path : fk::cuda::cublas_library_candidates()) {
    try {
      fk::cuda::open_cublas_library(path);
      return path;
    } catch (const fk::Error&) {
    }
  }
  return "";
}

// Needs a process where nothing opened cuBLAS yet (ctest runs each test
// alone); whether a program loads it at start is ctest's
// cuda.cublas_is_not_linked.
TEST(CublasLibrary, ABadPathIsRefusedNamingEachPlaceAndOpensOnceItIsGood) {
  if (cublas_is_loaded()) GTEST_SKIP() << kSoname << " was opened earlier in this process";
  {
    fk::KnobOverride bad("FK_CUBLAS_LIBRARY", "/nonexistent/libcublas-missing.so");
    try {
      fk::cuda::cublas_library();
      FAIL() << "a missing library was opened";
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("/nonexistent/libcublas-missing.so"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("FK_CUBLAS_LIBRARY"), std::string::npos) << e.what();
    }
  }
  // The failure is not kept: the default places are tried at the next call.
  const fk::cuda::CublasLibrary& lib = fk::cuda::cublas_library();
  EXPECT_EQ(lib.path, first_that_opens());
  EXPECT_TRUE(cublas_is_loaded());
  // Opened once: a later setting does not reopen it.
  fk::KnobOverride later("FK_CUBLAS_LIBRARY", "/nonexistent/libcublas-missing.so");
  EXPECT_EQ(&fk::cuda::cublas_library(), &lib);
}

TEST(CublasLibrary, TheCandidatesAreTheSettingElseBesideLibcudartThenTheSoname) {
  fk::KnobOverride unset("FK_CUBLAS_LIBRARY", "");
  const std::string dir = cudart_directory();
  ASSERT_FALSE(dir.empty()) << "libcudart is not a shared library in this process";
  EXPECT_EQ(fk::cuda::cublas_library_candidates(),
            (std::vector<std::string>{dir + kSoname, kSoname}));
  fk::KnobOverride chosen("FK_CUBLAS_LIBRARY", "/opt/cuda/libcublas.so.13");
  EXPECT_EQ(fk::cuda::cublas_library_candidates(),
            std::vector<std::string>{"/opt/cuda/libcublas.so.13"});
}

TEST(CublasLibrary, EveryEntryPointResolvesAndAnswers) {
  const std::string path = first_that_opens();
  ASSERT_FALSE(path.empty()) << "no candidate opens";
  const fk::cuda::CublasLibrary lib = fk::cuda::open_cublas_library(path);
  EXPECT_EQ(lib.path, path);
#define FK_CUBLAS_PRESENT(member, symbol) EXPECT_NE(lib.member, nullptr) << #symbol;
  FK_CUBLAS_ENTRY_POINTS(FK_CUBLAS_PRESENT)
#undef FK_CUBLAS_PRESENT
  // Calls that need no device: the pointers are the functions they name.
  EXPECT_STREQ(lib.status_name(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_EQ(lib.destroy(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
}

TEST(CublasLibrary, ALibraryWithoutTheEntryPointsIsRefusedNamingTheFirstMissing) {
  // libcudart opens but exports no cuBLAS.
  const std::string cudart =
      cudart_directory() + "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
  try {
    fk::cuda::open_cublas_library(cudart);
    FAIL() << cudart << " was taken for cuBLAS";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cublasCreate_v2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(cudart), std::string::npos) << e.what();
  }
}

}  // namespace
