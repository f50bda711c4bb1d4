# Every dependency is a Debian package installed by scripts/install-deps.sh.
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(TBB REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(GVC REQUIRED IMPORTED_TARGET libgvc libcgraph)

# Fast kernels (src/runtime/kernels/fast): oneDNN's sgemm and OpenBLAS's cblas. Debian's
# dnnl-config.cmake insists on OpenCL development files (its GPU runtime), which the CPU-only
# sgemm never needs, so the library and header are found directly; libdnnl.so carries its own
# runtime dependencies (libOpenCL.so.1, libgomp).
find_path(TAPESTRY_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h REQUIRED)
find_library(TAPESTRY_DNNL_LIBRARY dnnl REQUIRED)
if(NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION ${TAPESTRY_DNNL_LIBRARY}
                                              INTERFACE_INCLUDE_DIRECTORIES ${TAPESTRY_DNNL_INCLUDE_DIR})
endif()
find_package(OpenBLAS CONFIG REQUIRED)
if(NOT TARGET OpenBLAS::OpenBLAS)
  add_library(OpenBLAS::OpenBLAS INTERFACE IMPORTED)
  set_target_properties(OpenBLAS::OpenBLAS PROPERTIES INTERFACE_LINK_LIBRARIES "${OpenBLAS_LIBRARIES}"
                                                      INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIRS}")
endif()
# omp_set_num_threads (limit_library_threads_to_one) lives in GCC's OpenMP runtime, the one
# oneDNN is built against. Only the library is linked: Tapestry's own code uses no OpenMP.
find_library(TAPESTRY_GOMP_LIBRARY NAMES gomp libgomp.so.1 REQUIRED)
if(TAPESTRY_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(rapidcheck REQUIRED)
endif()
if(TAPESTRY_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
# The MPI executor (runtime/mpi_executor.h) is optional: without MPI the build still works and
# `tapestry run --executor mpi` says it was built without it. Open MPI comes from
# scripts/install-deps.sh (libopenmpi-dev, openmpi-bin).
option(TAPESTRY_MPI "Build the MPI executor when find_package(MPI) finds MPI" ON)
if(TAPESTRY_MPI)
  set(MPI_CXX_SKIP_MPICXX ON)  # the C API only: the C++ bindings are deprecated
  find_package(MPI COMPONENTS CXX)
endif()
set(TAPESTRY_HAVE_MPI OFF)
if(TAPESTRY_MPI AND MPI_CXX_FOUND)
  set(TAPESTRY_HAVE_MPI ON)
  find_program(TAPESTRY_MPIRUN NAMES mpirun mpiexec)
endif()
message(STATUS "Tapestry: MPI executor ${TAPESTRY_HAVE_MPI}")
