# bench/dispatch_bench: per-application overhead of the block executor on 100,000 tiny shards.
# bench/mlp_vs_baselines: examples/mlp.tap against direct OpenBLAS calls and PyTorch.
if(TARGET tapestry_runtime AND TARGET tapestry_metakernel)
  tapestry_add_bench(dispatch_bench tapestry::runtime tapestry::metakernel tapestry::rewrite)
endif()
if(TARGET OpenBLAS::OpenBLAS)
  tapestry_add_bench(mlp_openblas OpenBLAS::OpenBLAS tapestry::runtime Threads::Threads)
endif()
# bench/mlp_onednn, bench/fma_peak: the strongest baselines of bench/mlp_baselines.sh.
if(TARGET DNNL::dnnl AND TARGET tapestry_runtime)
  tapestry_add_bench(mlp_onednn DNNL::dnnl tapestry::runtime ${TAPESTRY_GOMP_LIBRARY})
  # bench/resnet_onednn: the direct convolution-primitive chain of bench/resnet_vs_baselines.sh.
  tapestry_add_bench(resnet_onednn DNNL::dnnl tapestry::runtime ${TAPESTRY_GOMP_LIBRARY})
endif()
tapestry_add_bench(fma_peak Threads::Threads)
# bench/train_bench: the training loop's per-step overhead beyond the executor's run.
if(TARGET tapestry_workflow)
  tapestry_add_bench(train_bench tapestry::workflow tapestry::metakernel)
  if(TARGET train_bench)
    target_compile_definitions(train_bench PRIVATE TAPESTRY_EXAMPLES="${PROJECT_SOURCE_DIR}/examples")
  endif()
endif()
