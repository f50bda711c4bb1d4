# bench/kernels_bench: fast kernels vs oneDNN/OpenBLAS and the reference kernels.
if(TARGET tapestry_runtime)
  tapestry_add_bench(kernels_bench tapestry::runtime DNNL::dnnl OpenBLAS::OpenBLAS)
endif()
