# Resolves XCCL_PLATFORM=auto to cuda (nvcc and an NVIDIA driver present), hip (hipcc and
# /dev/kfd present) or host, and enables the GPU language. cuda and hip build the same sources
# (src/platform/gpu/, src/collectives/*/*.cu) through src/platform/gpu.h.

# The HIP route: CMake's own HIP language (enable_language(HIP), CMake >= 3.21). The GPU sources
# (src/platform/gpu/*.cc, *.cu) get LANGUAGE HIP and are compiled by the clang++ that hipcc
# wraps, with CMAKE_HIP_ARCHITECTURES as --offload-arch; everything else stays plain C++ with
# the host compiler. This is the route AMD documents, and it is the most robust one: hipcc
# itself is refused as CMAKE_HIP_COMPILER, and CMAKE_CXX_COMPILER=hipcc would compile every
# C++ source (tests, perf) as HIP with hipcc's flags. Before enable_language(HIP) this function
#  - picks the clang++ that hipcc runs (/opt/rocm/llvm/bin/clang++ on AMD's packages,
#    clang++-15 on Debian's ROCm 5.2), unless CMAKE_HIP_COMPILER or $HIPCXX names one;
#  - adapts Debian's multiarch layout (hip-lang config in /usr/lib/<triplet>/cmake, device
#    bitcode in /usr/lib/<triplet>/amdgcn/bitcode), which CMake < 3.28 does not look for:
#    a ROCm root shim in the build tree whose lib/cmake/hip-lang links to the real package,
#    the dependency packages' directories (also forwarded to CMake's try_compile checks), and
#    --rocm-path/--rocm-device-lib-path, which Debian's clang does not infer by itself.
# On a regular /opt/rocm install only the compiler choice applies.
function(_xccl_setup_hip)
  if(NOT CMAKE_HIP_COMPILER AND NOT DEFINED ENV{HIPCXX})
    find_program(_xccl_hipcc hipcc PATHS /opt/rocm/bin NO_CACHE)
    set(_clang "")
    if(_xccl_hipcc)
      # hipcc prints the command it runs; an explicit arch keeps it from probing for GPUs.
      execute_process(COMMAND ${CMAKE_COMMAND} -E env HIPCC_VERBOSE=1
                              ${_xccl_hipcc} --offload-arch=gfx90a --version
                      OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
      if("${_out}${_err}" MATCHES "hipcc-cmd: *([^ \n]*clang[+][+][^ \n]*)")
        if(EXISTS "${CMAKE_MATCH_1}")
          set(_clang "${CMAKE_MATCH_1}")
        endif()
      endif()
    endif()
    if(NOT _clang AND EXISTS /opt/rocm/llvm/bin/clang++)
      set(_clang /opt/rocm/llvm/bin/clang++)
    endif()
    if(NOT _clang)
      message(FATAL_ERROR "XCCL_PLATFORM=hip: no HIP clang++ found (install hipcc, or set "
                          "CMAKE_HIP_COMPILER to the clang++ of your ROCm)")
    endif()
    set(CMAKE_HIP_COMPILER "${_clang}" CACHE FILEPATH "HIP compiler (the clang++ hipcc uses)")
  endif()

  if(NOT CMAKE_HIP_COMPILER_ROCM_ROOT)
    execute_process(COMMAND hipconfig --rocmpath OUTPUT_VARIABLE _root
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0 OR NOT IS_DIRECTORY "${_root}")
      set(_root /opt/rocm)
    endif()
    set(_arch_cmake "${_root}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake")
    if(NOT EXISTS "${_root}/lib/cmake/hip-lang/hip-lang-config.cmake" AND
       CMAKE_LIBRARY_ARCHITECTURE AND EXISTS "${_arch_cmake}/hip-lang/hip-lang-config.cmake")
      # Debian layout. hip-lang's config resolves symlinks, so the shim finds the real prefix.
      set(_shim "${CMAKE_BINARY_DIR}/rocm-root-shim")
      file(MAKE_DIRECTORY "${_shim}/lib/cmake")
      file(CREATE_LINK "${_arch_cmake}/hip-lang" "${_shim}/lib/cmake/hip-lang" SYMBOLIC)
      set(CMAKE_HIP_COMPILER_ROCM_ROOT "${_shim}" PARENT_SCOPE)
      foreach(_pkg amd_comgr AMDDeviceLibs hsa-runtime64)
        if(EXISTS "${_arch_cmake}/${_pkg}")
          set(${_pkg}_DIR "${_arch_cmake}/${_pkg}" CACHE PATH "")
        endif()
      endforeach()
      set(CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ${CMAKE_TRY_COMPILE_PLATFORM_VARIABLES}
          amd_comgr_DIR AMDDeviceLibs_DIR hsa-runtime64_DIR CMAKE_HIP_COMPILER_ROCM_ROOT
          PARENT_SCOPE)
      set(_flags "--rocm-path=${_root}")
      if(IS_DIRECTORY "${_root}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/amdgcn/bitcode")
        string(APPEND _flags
               " --rocm-device-lib-path=${_root}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/amdgcn/bitcode")
      endif()
      if(NOT "${CMAKE_HIP_FLAGS}" MATCHES "--rocm-path")
        set(CMAKE_HIP_FLAGS "${_flags} ${CMAKE_HIP_FLAGS}" PARENT_SCOPE)
      endif()
      # hip-lang links compiler-rt's builtins; take those of the HIP compiler rather than the
      # first clang version its search finds.
      if(NOT CLANGRT_BUILTINS)
        execute_process(COMMAND ${CMAKE_HIP_COMPILER} --rtlib=compiler-rt -print-libgcc-file-name
                        OUTPUT_VARIABLE _rt OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
        if(EXISTS "${_rt}")
          set(CLANGRT_BUILTINS "${_rt}" CACHE FILEPATH "compiler-rt builtins for HIP links")
        endif()
      endif()
    endif()
  endif()
endfunction()

set(_xccl_platform "${XCCL_PLATFORM}")
if(_xccl_platform STREQUAL "auto")
  find_program(_xccl_nvcc nvcc PATHS /usr/local/cuda/bin NO_CACHE)
  find_program(_xccl_hipcc hipcc PATHS /opt/rocm/bin NO_CACHE)
  if(_xccl_nvcc AND EXISTS /dev/nvidiactl)
    set(_xccl_platform cuda)
  elseif(_xccl_hipcc AND EXISTS /dev/kfd)
    set(_xccl_platform hip)
  else()
    set(_xccl_platform host)
  endif()
endif()
if(NOT _xccl_platform MATCHES "^(cuda|hip|host)$")
  message(FATAL_ERROR "XCCL_PLATFORM must be auto, cuda, hip or host (got '${XCCL_PLATFORM}')")
endif()
set(XCCL_PLATFORM_RESOLVED ${_xccl_platform})
string(TOUPPER ${_xccl_platform} XCCL_PLATFORM_RESOLVED_UPPER)

if(_xccl_platform STREQUAL "cuda")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # Hopper (H100/H200)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  set(XCCL_GPU_LANGUAGE CUDA)
  set(XCCL_GPU_RUNTIME CUDA::cudart)
elseif(_xccl_platform STREQUAL "hip")
  if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
    set(CMAKE_HIP_ARCHITECTURES gfx90a)  # MI200; MI300 (gfx942) needs ROCm >= 5.7
  endif()
  _xccl_setup_hip()
  enable_language(HIP)
  find_package(hip REQUIRED CONFIG PATHS /opt/rocm /usr/lib/cmake/hip /usr)
  set(XCCL_GPU_LANGUAGE HIP)
  set(XCCL_GPU_RUNTIME hip::host)
endif()
if(_xccl_platform STREQUAL "host")
  set(XCCL_PLATFORM_DIR host)
else()
  set(XCCL_PLATFORM_DIR gpu)
endif()
message(STATUS "xccl platform: ${XCCL_PLATFORM_RESOLVED}")
