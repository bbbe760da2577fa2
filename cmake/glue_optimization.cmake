# Instrumented builds (ATTNRT_SANITIZE, ATTNRT_BUILD_FUZZERS) compile the glue around the library
# at -O0: the tests, the CLI, the Python bindings and the fuzz replayers. Their code generation at
# -O1 (GoogleTest, CLI11, nlohmann-json and pybind11 templates, instrumented) was the larger part
# of CI's build time, and what they run is the library, which keeps the preset's -O1 (the kernels
# -O2). Release and debug builds are unchanged.
function(attnrt_glue_target target)
  if(ATTNRT_SANITIZE OR ATTNRT_BUILD_FUZZERS)
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()
