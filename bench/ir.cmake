# ir_bench: load + validate a generated graph of 1,000 operations × 1,000 applications.
# A plain program (not Google Benchmark): one measured run in a fresh process, reporting seconds
# per phase and peak RSS. See docs/ir.md, "Performance".
if(TARGET tapestry_ir)
  add_executable(ir_bench ir_bench.cpp)
  target_link_libraries(ir_bench PRIVATE tapestry::ir tapestry::rewrite)
endif()
