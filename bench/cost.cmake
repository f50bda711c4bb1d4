# bench/cost_bench: plan evaluations per second (lower → place → simulate) on the transformer.
if(TARGET tapestry_cost)
  tapestry_add_bench(cost_bench tapestry::cost)
  if(TARGET cost_bench)
    target_compile_definitions(cost_bench PRIVATE TAPESTRY_EXAMPLES="${PROJECT_SOURCE_DIR}/examples")
  endif()
endif()
