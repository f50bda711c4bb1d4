# The CUDA backend (src/gpu, docs/gpu.md): built when nvcc is found, like the optional ONNX
# import. TAPESTRY_CUDA=AUTO (default) builds it when CMake finds a CUDA compiler (PATH, CUDACXX or
# /usr/local/cuda/bin/nvcc) and cuBLASLt, cuDNN and NCCL beside it; ON requires them; OFF never
# builds it. Off under the sanitizers and the fuzz build (nvcc objects are not instrumented).
# Without it, src/gpu builds its host-side planning and stubs that report the backend missing.
set(TAPESTRY_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON or OFF")
set_property(CACHE TAPESTRY_CUDA PROPERTY STRINGS AUTO ON OFF)
set(TAPESTRY_HAVE_CUDA OFF)
if(TAPESTRY_CUDA STREQUAL "AUTO" AND (TAPESTRY_SANITIZE OR TAPESTRY_TSAN OR TAPESTRY_FUZZ))
  set(_tapestry_want_cuda OFF)
elseif(TAPESTRY_CUDA STREQUAL "OFF")
  set(_tapestry_want_cuda OFF)
else()
  set(_tapestry_want_cuda ON)
endif()
if(_tapestry_want_cuda)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Hopper (H100/H200) machine code, and PTX for Ampere that any later GPU compiles at load.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-virtual 90-real)
    endif()
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc's C++20 flag (nvcc ≥ 12 has it): without these, a target
    # with .cu sources fails to generate ("CUDA20 ... does not know the flags").
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit)
    find_library(TAPESTRY_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_library(TAPESTRY_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(TAPESTRY_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_path(TAPESTRY_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(CUDAToolkit_FOUND AND TARGET CUDA::cublasLt AND TAPESTRY_CUDNN_LIBRARY AND TAPESTRY_NCCL_LIBRARY
       AND TAPESTRY_CUDNN_INCLUDE AND TAPESTRY_NCCL_INCLUDE)
      set(TAPESTRY_HAVE_CUDA ON)
      message(STATUS "Tapestry: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                     "architectures ${CMAKE_CUDA_ARCHITECTURES})")
    endif()
  endif()
  if(NOT TAPESTRY_HAVE_CUDA AND TAPESTRY_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TAPESTRY_CUDA=ON but nvcc, cuBLASLt, cuDNN or NCCL was not found")
  endif()
endif()
if(NOT TAPESTRY_HAVE_CUDA)
  message(STATUS "Tapestry: CUDA backend OFF (TAPESTRY_CUDA=${TAPESTRY_CUDA})")
endif()
