# xccl_add_gemm_plugin(<name> <sources...>): libxccl-gemm-<name>.so, a GEMM plugin for ag_gemm.
# A plugin needs xccl's headers only (xccl loads it, it does not link xccl), exports nothing but
# its plugin symbol (two plugins in one process must not clash) and leaves no symbol undefined.
function(xccl_add_gemm_plugin name)
  set(target xccl-gemm-${name})
  add_library(${target} SHARED ${ARGN})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${XCCL_WARNINGS}>)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME ${target}
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    HIP_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()
