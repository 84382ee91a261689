# System libraries, all from Debian's packages (scripts/bootstrap installs them).
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(fmt REQUIRED)
find_package(PkgConfig REQUIRED)

# OpenBLAS: prefer the OpenMP build so its threads share libgomp's pool with ours
# (the pthread build's own pool costs ~8 ms per OpenMP region that calls BLAS).
set(BLA_VENDOR OpenBLAS)
find_path(FK_CBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/x86_64-linux-gnu/openblas-pthread
        /usr/include/openblas NO_DEFAULT_PATH)
find_library(FK_OPENBLAS_LIBRARY openblas
  PATHS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/x86_64-linux-gnu/openblas-pthread
  NO_DEFAULT_PATH)
if(NOT FK_CBLAS_INCLUDE_DIR OR NOT FK_OPENBLAS_LIBRARY)
  find_package(BLAS REQUIRED)
  find_path(FK_CBLAS_INCLUDE_DIR cblas.h REQUIRED)
  set(FK_OPENBLAS_LIBRARY ${BLAS_LIBRARIES})
endif()
add_library(fk_openblas INTERFACE)
target_include_directories(fk_openblas SYSTEM INTERFACE ${FK_CBLAS_INCLUDE_DIR})
target_link_libraries(fk_openblas INTERFACE ${FK_OPENBLAS_LIBRARY})

pkg_check_modules(FFTW3 REQUIRED IMPORTED_TARGET fftw3 fftw3f)

# cairo: fk_plot's figures (drawing, text, PNG output).
pkg_check_modules(CAIRO REQUIRED IMPORTED_TARGET cairo)
