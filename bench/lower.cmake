# bench/lower_bench: lowering 100 operations into 100,000 applications, and validating them.
if(TARGET tapestry_rewrite)
  tapestry_add_bench(lower_bench tapestry::rewrite)
endif()
