# optgen_generate(TARGET SPEC [DEFINES NAME=VALUE...] [SHAPES FILE]
#                 [WORLD_SIZE N [SHARD_GROUP G]] [RUNNER] [CUDA])
#
# Compiles SPEC with optgen (at build time) into a static library TARGET,
# linking optgen's runtime; with CUDA, the CUDA target's code, built with
# nvcc as the generated CMakeLists.txt builds it and linking the runtime's
# cuda component (needs OPTGEN_CUDA); with SHAPES, for the parameters that file's
# header describes (the plan fixed in the code); with WORLD_SIZE too, the
# distributed step on N ranks compiled as well (with SHARD_GROUP, in shard
# groups of G ranks: --shard-group); with RUNNER also the
# executable TARGET_runner that replays case files. The optimizer's class is
# optgen_generated::<the spec's optimizer name>, declared in <name>.h.
function(optgen_generate target spec)
  cmake_parse_arguments(ARG "RUNNER;CUDA" "SHAPES;WORLD_SIZE;SHARD_GROUP" "DEFINES" ${ARGN})
  get_filename_component(spec "${spec}" ABSOLUTE)
  # The optimizer's name decides the file names: read it from the spec.
  file(STRINGS "${spec}" header REGEX "^[ \t]*optimizer[ \t]+[A-Za-z_][A-Za-z0-9_]*")
  list(GET header 0 header)
  string(REGEX REPLACE "^[ \t]*optimizer[ \t]+([A-Za-z_][A-Za-z0-9_]*).*" "\\1" name "${header}")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  set(defines)
  foreach(define ${ARG_DEFINES})
    list(APPEND defines -D "${define}")
  endforeach()
  set(shapes)
  if(ARG_SHAPES)
    set(shapes --shapes "${ARG_SHAPES}")
  endif()
  if(ARG_WORLD_SIZE)
    list(APPEND shapes --world-size ${ARG_WORLD_SIZE})
  endif()
  if(ARG_SHARD_GROUP)
    list(APPEND shapes --shard-group ${ARG_SHARD_GROUP})
  endif()
  if(ARG_CUDA)
    set(flag cuda)
    set(source "${dir}/${name}.cu")
    set(what "CUDA")
  else()
    set(flag cpu)
    set(source "${dir}/${name}.cpp")
    set(what "the CPU")
  endif()
  add_custom_command(
    OUTPUT "${dir}/${name}.h" "${source}" "${dir}/${name}_runner.cpp"
    COMMAND optgen compile "${spec}" ${defines} ${shapes} --target=${flag} -o "${dir}"
    DEPENDS optgen "${spec}" ${ARG_SHAPES}
    COMMENT "optgen: compiling ${spec} for ${what}"
    VERBATIM)
  add_library(${target} STATIC "${source}")
  target_include_directories(${target} PUBLIC "${dir}")
  # As the generated CMakeLists.txt builds it.
  if(ARG_CUDA)
    target_link_libraries(${target} PUBLIC optgen_runtime_cuda_all)
    target_compile_options(${target} PRIVATE --fmad=false -Werror=all-warnings
      -Xcompiler=-Wall,-Wextra)
    set_target_properties(${target} PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
  else()
    target_link_libraries(${target} PUBLIC optgen_runtime)
    target_compile_options(${target} PRIVATE -O3 -fno-math-errno -ffp-contract=off -Wall -Wextra)
    if(OpenMP_CXX_FOUND)
      target_link_libraries(${target} PRIVATE OpenMP::OpenMP_CXX)
    endif()
  endif()
  if(ARG_RUNNER)
    add_executable(${target}_runner "${dir}/${name}_runner.cpp")
    target_link_libraries(${target}_runner PRIVATE ${target})
  endif()
endfunction()
