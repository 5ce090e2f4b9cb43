# The CMake functions of optgen's package (and of this repository, which
# includes them with the runtime):
#
#   optgen_add_optimizer(<target> SPEC <file.opt> [TARGET cpu|cuda [EMULATED]]
#                        [DEFINES NAME=VALUE...] [SHAPES <file.safetensors>]
#                        [WORLD_SIZE N [SHARD_GROUP G]] [RUNNER]
#                        [STATIC|SHARED|MODULE])
#
#     Compiles the spec with optgen at build time (again whenever the spec,
#     the shapes file or optgen changes) into the library <target>: the
#     optimizer's class is optgen_generated::<name>, <name> the spec's
#     optimizer name (with a _ appended where it is a C or C++ keyword or
#     macro), declared in <name>.h (the name as the spec writes it), which
#     the library puts on its users' include path. TARGET cuda: CUDA code for NVIDIA GPUs (the runtime's cuda
#     component). DEFINES: the spec's constants (-D). SHAPES: the plan fixed
#     in the code for the parameters that safetensors file's header
#     describes; WORLD_SIZE with it: the distributed step on N ranks
#     compiled too (SHARD_GROUP: in shard groups of G ranks). EMULATED (with
#     TARGET cuda): the CUDA code built for optgen's emulated device, by the
#     C++ compiler, to run without a GPU (docs/EMULATION.md). RUNNER: also
#     the executable <target>_runner, which replays case files. The library
#     is static unless SHARED or MODULE says otherwise (or
#     BUILD_SHARED_LIBS, as for add_library).
#
#   optgen_add_generated_library(<target> <NAME.cpp|NAME.cu> [EMULATED]
#                                [STATIC|SHARED|MODULE])
#
#     Builds code that `optgen compile --target=cpu|cuda -o DIR` wrote as the
#     library <target>, with DIR on its users' include path: what the
#     generated CMakeLists.txt and optgen_add_optimizer() both call, the one
#     place where generated code's compile options are decided. EMULATED:
#     a .cu file for the emulated device (the runtime's emu component).

# The spec's optimizer names the generated files, so a configure reads it:
# an edited spec configures again.
function(_optgen_optimizer_name spec out)
  file(STRINGS "${spec}" header
    REGEX "^[ \t]*optimizer[ \t]+[A-Za-z_][A-Za-z0-9_]*")
  if(NOT header)
    message(FATAL_ERROR "optgen: '${spec}' has no 'optimizer NAME' line")
  endif()
  list(GET header 0 header)
  string(REGEX REPLACE "^[ \t]*optimizer[ \t]+([A-Za-z_][A-Za-z0-9_]*).*" "\\1"
         name "${header}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${spec}")
  set(${out} "${name}" PARENT_SCOPE)
endfunction()

function(optgen_add_generated_library target source)
  cmake_parse_arguments(ARG "STATIC;SHARED;MODULE;EMULATED" "" "" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "optgen_add_generated_library(${target}): unknown "
                        "arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  set(type)
  foreach(kind STATIC SHARED MODULE)
    if(ARG_${kind})
      set(type ${kind})
    endif()
  endforeach()
  get_filename_component(source "${source}" ABSOLUTE)
  get_filename_component(dir "${source}" DIRECTORY)
  add_library(${target} ${type} "${source}")
  target_include_directories(${target} PUBLIC "${dir}")
  target_compile_features(${target} PUBLIC cxx_std_17)
  # Optimised whatever the build type, and linkable into a shared library
  # or a Python extension (the runtime is position-independent too).
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(ARG_EMULATED AND NOT source MATCHES "\\.cu$")
    message(FATAL_ERROR "optgen: ${target}: EMULATED is for CUDA code (.cu)")
  endif()
  if(ARG_EMULATED)
    if(NOT TARGET optgen::runtime_cuda_all_emulated)
      message(FATAL_ERROR "optgen: ${target} is for the emulated CUDA device, "
                          "but optgen's runtime was built without its emu "
                          "component (OPTGEN_RUNTIME_EMULATED=OFF)")
    endif()
    # The same .cu text, compiled by the C++ compiler against the emulated
    # device's headers (which the runtime target brings), warning-free.
    set_source_files_properties("${source}" PROPERTIES LANGUAGE CXX)
    target_compile_options(${target} PRIVATE -O2 -Wall -Wextra)
    target_link_libraries(${target} PUBLIC optgen::runtime_cuda_all_emulated)
  elseif(source MATCHES "\\.cu$")
    if(NOT TARGET optgen::runtime_cuda_all)
      message(FATAL_ERROR "optgen: ${target} is CUDA code, but optgen's "
                          "runtime was built without its cuda component "
                          "(CMake found no CUDA toolkit where it was built)")
    endif()
    get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(NOT CUDA IN_LIST languages)
      message(FATAL_ERROR "optgen: ${target} is CUDA code: enable CUDA in the "
                          "project first (project(... LANGUAGES CXX CUDA) or "
                          "enable_language(CUDA))")
    endif()
    # No fused multiply-adds, so that results round as the CPU target's
    # and the reference's do. One CUDA runtime per process: the shared
    # one, as the optgen runtime's.
    target_compile_options(${target} PRIVATE -O3 --fmad=false
      -Werror=all-warnings -Xcompiler=-Wall,-Wextra)
    set_target_properties(${target} PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
    target_link_libraries(${target} PUBLIC optgen::runtime_cuda_all)
  else()
    # Vectorised loops need sqrt without errno; contractions stay off so
    # that f32 and bf16 results round exactly as the spec says.
    target_compile_options(${target} PRIVATE
      -O3 -fno-math-errno -ffp-contract=off -Wall -Wextra)
    find_package(OpenMP COMPONENTS CXX QUIET)
    if(OpenMP_CXX_FOUND)
      target_link_libraries(${target} PRIVATE OpenMP::OpenMP_CXX)
    endif()
    target_link_libraries(${target} PUBLIC optgen::runtime)
  endif()
endfunction()

function(optgen_add_optimizer target)
  cmake_parse_arguments(ARG "RUNNER;STATIC;SHARED;MODULE;EMULATED"
    "SPEC;TARGET;SHAPES;WORLD_SIZE;SHARD_GROUP" "DEFINES" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "optgen_add_optimizer(${target}): unknown arguments "
                        "${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SPEC)
    message(FATAL_ERROR "optgen_add_optimizer(${target}): SPEC <file.opt> "
                        "is required")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET cpu)
  endif()
  if(ARG_TARGET STREQUAL "cpu")
    set(extension cpp)
  elseif(ARG_TARGET STREQUAL "cuda")
    set(extension cu)
  else()
    message(FATAL_ERROR "optgen_add_optimizer(${target}): TARGET is cpu or "
                        "cuda, not '${ARG_TARGET}'")
  endif()
  if(ARG_EMULATED AND NOT ARG_TARGET STREQUAL "cuda")
    message(FATAL_ERROR "optgen_add_optimizer(${target}): EMULATED needs "
                        "TARGET cuda")
  endif()
  if(ARG_SHARD_GROUP AND NOT ARG_WORLD_SIZE)
    message(FATAL_ERROR "optgen_add_optimizer(${target}): SHARD_GROUP needs "
                        "WORLD_SIZE")
  endif()
  if(ARG_WORLD_SIZE AND NOT ARG_SHAPES)
    message(FATAL_ERROR "optgen_add_optimizer(${target}): WORLD_SIZE needs "
                        "SHAPES")
  endif()
  if(NOT TARGET optgen::optgen)
    message(FATAL_ERROR "optgen_add_optimizer(${target}): no optgen compiler "
                        "(this optgen package holds only the runtime)")
  endif()

  get_filename_component(spec "${ARG_SPEC}" ABSOLUTE)
  if(NOT EXISTS "${spec}")
    message(FATAL_ERROR "optgen_add_optimizer(${target}): no spec '${spec}'")
  endif()
  _optgen_optimizer_name("${spec}" name)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  set(options)
  foreach(define ${ARG_DEFINES})
    list(APPEND options -D "${define}")
  endforeach()
  set(shapes)
  if(ARG_SHAPES)
    get_filename_component(shapes "${ARG_SHAPES}" ABSOLUTE)
    list(APPEND options --shapes "${shapes}")
  endif()
  if(ARG_WORLD_SIZE)
    list(APPEND options --world-size ${ARG_WORLD_SIZE})
  endif()
  if(ARG_SHARD_GROUP)
    list(APPEND options --shard-group ${ARG_SHARD_GROUP})
  endif()
  add_custom_command(
    OUTPUT "${dir}/${name}.h" "${dir}/${name}.${extension}"
           "${dir}/${name}_runner.cpp"
    COMMAND "$<TARGET_FILE:optgen::optgen>" compile "${spec}" ${options}
            --target=${ARG_TARGET} -o "${dir}"
    DEPENDS "$<TARGET_FILE:optgen::optgen>" "${spec}" ${shapes}
    COMMENT "optgen: compiling ${spec} for ${ARG_TARGET}"
    VERBATIM)
  set(type)
  foreach(kind STATIC SHARED MODULE EMULATED)
    if(ARG_${kind})
      list(APPEND type ${kind})
    endif()
  endforeach()
  optgen_add_generated_library(${target} "${dir}/${name}.${extension}" ${type})
  if(ARG_RUNNER)
    add_executable(${target}_runner "${dir}/${name}_runner.cpp")
    target_link_libraries(${target}_runner PRIVATE ${target})
  endif()
endfunction()
