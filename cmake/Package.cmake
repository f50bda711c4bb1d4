# The kernel library as an installed CMake package, for programs that `tapestry codegen --to cpp`
# writes (docs/codegen.md):
#
#   cmake --install build/ci --prefix /opt/tapestry --component runtime
#   find_package(Tapestry REQUIRED COMPONENTS runtime)   # CMAKE_PREFIX_PATH=/opt/tapestry
#   target_link_libraries(program PRIVATE Tapestry::runtime)
#
# Installed: tapestry_runtime and the static libraries it links (support, zspace, ir,
# metakernel, rewrite), the public headers (include/tapestry), and TapestryConfig.cmake, which
# finds the libraries they link in turn (fmt, nlohmann_json, yaml-cpp, oneTBB, oneDNN, OpenBLAS,
# libgomp, and MPI when the runtime was built with it) where this build found them.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(TAPESTRY_PACKAGE_TARGETS tapestry_support tapestry_zspace tapestry_ir tapestry_metakernel
                             tapestry_rewrite tapestry_runtime)
foreach(target ${TAPESTRY_PACKAGE_TARGETS})
  # The headers from the source tree while building, from the prefix once installed.
  get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  list(TRANSFORM dirs REPLACE "^(${PROJECT_SOURCE_DIR}/include)$" "$<BUILD_INTERFACE:\\1>")
  list(APPEND dirs "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${dirs}")
  string(REPLACE "tapestry_" "" name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
endforeach()
install(TARGETS ${TAPESTRY_PACKAGE_TARGETS} EXPORT TapestryRuntimeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tapestry DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT runtime)
install(FILES ${PROJECT_BINARY_DIR}/generated/tapestry/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tapestry COMPONENT runtime)
set(TAPESTRY_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tapestry)
install(EXPORT TapestryRuntimeTargets NAMESPACE Tapestry:: DESTINATION ${TAPESTRY_PACKAGE_DIR}
        COMPONENT runtime)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TapestryConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/package/TapestryConfig.cmake
                              INSTALL_DESTINATION ${TAPESTRY_PACKAGE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/TapestryConfigVersion.cmake
                                 COMPATIBILITY ExactVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/TapestryConfig.cmake
              ${PROJECT_BINARY_DIR}/package/TapestryConfigVersion.cmake
        DESTINATION ${TAPESTRY_PACKAGE_DIR} COMPONENT runtime)
# A program linked against a sanitized library needs the sanitizers' runtimes too.
if(TAPESTRY_SANITIZE OR TAPESTRY_FUZZ)
  target_link_options(tapestry_runtime INTERFACE $<INSTALL_INTERFACE:-fsanitize=address,undefined>)
elseif(TAPESTRY_TSAN)
  target_link_options(tapestry_runtime INTERFACE $<INSTALL_INTERFACE:-fsanitize=thread>)
endif()
