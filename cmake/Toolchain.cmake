# Compiler launcher, linker and flags shared by every target.

find_program(TAPESTRY_CCACHE ccache)
if(TAPESTRY_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${TAPESTRY_CCACHE})
endif()

# mold cuts a relink from seconds to a fraction of one; GCC >= 12.1 accepts -fuse-ld=mold.
find_program(TAPESTRY_MOLD mold)
if(TAPESTRY_MOLD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
   AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12.1)
  add_link_options(-fuse-ld=mold)
elseif(TAPESTRY_MOLD AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_link_options(-fuse-ld=mold)
endif()

add_compile_options(-Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
# GCC's -Wshadow=local; clang (the fuzz preset) spells it -Wshadow-uncaptured-local.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options(-Wshadow=local)
elseif(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_compile_options(-Wshadow-uncaptured-local)
endif()

if(TAPESTRY_ASSERTIONS)
  add_compile_definitions(TAPESTRY_ENABLE_ASSERTIONS=1)
endif()
if(TAPESTRY_NATIVE)
  add_compile_options(-march=native)
endif()
if(TAPESTRY_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
# The fuzz preset: coverage instrumentation for libFuzzer plus ASan + UBSan on every target;
# the harnesses (tests/fuzz) add -fsanitize=fuzzer at link time, which brings libFuzzer's main.
if(TAPESTRY_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TAPESTRY_FUZZ needs clang (libFuzzer); use the `fuzz` preset")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(TAPESTRY_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()
