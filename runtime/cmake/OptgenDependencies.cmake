# The libraries the runtime links that CMake has no package of its own for,
# found the same way where the runtime is built and where its installed
# package is used (optgenConfig.cmake), so that no absolute path of the
# machine that built it is written into the package:
#
#   optgen_find_blas(<found>)   the imported target optgen::blas: a CBLAS
#                               (OpenBLAS from Debian, its OpenMP build first)
#   optgen_find_nccl(<found>)   the imported target optgen::nccl: NCCL, in the
#                               CUDA toolkit's folders or under NCCL_ROOT
#
# Each sets <found> to TRUE or FALSE; the cache variables OPTGEN_BLAS_LIBRARY,
# OPTGEN_NCCL_INCLUDE_DIR and OPTGEN_NCCL_LIBRARY choose other copies.

# Matrix products go to a BLAS. Generated loops run on OpenMP's threads; an
# OpenBLAS on its own pthreads would fight them for the cores (each pool
# spins while the other works: matrix products ran 10x slower), so the
# OpenMP build of OpenBLAS is preferred, sharing one pool.
function(optgen_find_blas found)
  if(NOT TARGET optgen::blas)
    find_library(OPTGEN_BLAS_LIBRARY NAMES openblas
      PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
      NO_DEFAULT_PATH)
    find_library(OPTGEN_BLAS_LIBRARY NAMES openblas blas)
    if(NOT OPTGEN_BLAS_LIBRARY)
      set(${found} FALSE PARENT_SCOPE)
      return()
    endif()
    add_library(optgen::blas INTERFACE IMPORTED)
    set_target_properties(optgen::blas PROPERTIES
      INTERFACE_LINK_LIBRARIES "${OPTGEN_BLAS_LIBRARY}")
  endif()
  set(${found} TRUE PARENT_SCOPE)
endfunction()

# NVIDIA's pip package nvidia-nccl-cu13 puts NCCL under
# site-packages/nvidia/nccl: NCCL_ROOT names such a folder.
function(optgen_find_nccl found)
  if(NOT TARGET optgen::nccl)
    find_path(OPTGEN_NCCL_INCLUDE_DIR nccl.h
      HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
      PATH_SUFFIXES include)
    find_library(OPTGEN_NCCL_LIBRARY NAMES nccl libnccl.so.2
      HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR}
      PATH_SUFFIXES lib lib64)
    if(NOT OPTGEN_NCCL_INCLUDE_DIR OR NOT OPTGEN_NCCL_LIBRARY)
      set(${found} FALSE PARENT_SCOPE)
      return()
    endif()
    add_library(optgen::nccl INTERFACE IMPORTED)
    set_target_properties(optgen::nccl PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${OPTGEN_NCCL_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${OPTGEN_NCCL_LIBRARY}")
  endif()
  set(${found} TRUE PARENT_SCOPE)
endfunction()
