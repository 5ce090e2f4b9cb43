# cmake -DBINARIES="a;b" -P no-device-libraries.cmake
#
# Fails when one of BINARIES loads a BLAS, MPI, OpenMP or CUDA library (as
# ldd lists what a binary loads, directly or through another library): the
# compiler links only the runtime's core component.
foreach(binary ${BINARIES})
  execute_process(COMMAND ldd ${binary}
    OUTPUT_VARIABLE loaded ERROR_VARIABLE error RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "ldd ${binary} failed: ${error}")
  endif()
  string(REGEX MATCHALL
    "lib(open)?blas[^ \t\n]*|libcblas[^ \t\n]*|libblis[^ \t\n]*|libmkl[^ \t\n]*|libmpi[^ \t\n]*|libgomp[^ \t\n]*|libomp[^ \t\n]*|libcuda[^ \t\n]*|libcublas[^ \t\n]*|libnccl[^ \t\n]*"
    found "${loaded}")
  if(found)
    list(REMOVE_DUPLICATES found)
    message(FATAL_ERROR "${binary} loads ${found}: it must link only the "
                        "runtime's core (no BLAS, MPI, OpenMP or CUDA)")
  endif()
  message(STATUS "${binary}: no BLAS, MPI, OpenMP or CUDA")
endforeach()
