# bench/kernels_bench: fast kernels vs oneDNN/OpenBLAS and the reference kernels.
if(TARGET tapestry_runtime)
  tapestry_add_bench(kernels_bench tapestry::runtime DNNL::dnnl OpenBLAS::OpenBLAS)
endif()
# bench/unary_bench: the unary kernels' times for bench/unary_vs_torch.py (PyTorch in the same run).
if(TARGET tapestry_runtime)
  add_executable(unary_bench unary_bench.cpp)
  target_link_libraries(unary_bench PRIVATE tapestry::runtime Threads::Threads)
endif()
