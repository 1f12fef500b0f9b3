# Installs attnfuse for embedders (`cmake --install build --prefix P`):
#   P/include/attnfuse, P/include/attnfuse-c   headers, generated .inc included
#   P/lib/libAttnFuse*.a, libAttnFuseCAPI.so    libraries (linked to libMLIR.so)
#   P/lib/AttnFusePlugin.so                     the mlir-opt plugin
#   P/bin/attnfuse-*                            tools
#   P/python_packages/attnfuse                  the Python package
#   P/lib/cmake/attnfuse                        find_package(AttnFuse CONFIG)
# The package exports every attnfuse library as AttnFuse::<name> (e.g.
# AttnFuse::AttnFuseRegistration, AttnFuse::AttnFuseCAPI); its config finds
# MLIR, whose targets (MLIR = libMLIR.so) our libraries link.
include(CMakePackageConfigHelpers)

set(ATTNFUSE_VERSION 0.1.0)
set(ATTNFUSE_INSTALL_CMAKE_DIR lib${LLVM_LIBDIR_SUFFIX}/cmake/attnfuse)

# Every library made with add_mlir_library (AttnFuse*), whoever added it.
get_property(_attnfuse_mlir_exports GLOBAL PROPERTY MLIR_EXPORTS)
set(ATTNFUSE_EXPORTED_LIBRARIES)
foreach(lib IN LISTS _attnfuse_mlir_exports)
  if(lib MATCHES "^AttnFuse" AND TARGET ${lib})
    get_target_property(_type ${lib} TYPE)
    if(_type STREQUAL "STATIC_LIBRARY" OR _type STREQUAL "SHARED_LIBRARY")
      list(APPEND ATTNFUSE_EXPORTED_LIBRARIES ${lib})
      set_property(TARGET ${lib} APPEND PROPERTY
        INTERFACE_INCLUDE_DIRECTORIES $<INSTALL_INTERFACE:include>)
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES ATTNFUSE_EXPORTED_LIBRARIES)

install(TARGETS ${ATTNFUSE_EXPORTED_LIBRARIES}
  EXPORT AttnFuseTargets
  LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX} COMPONENT attnfuse
  ARCHIVE DESTINATION lib${LLVM_LIBDIR_SUFFIX} COMPONENT attnfuse
  RUNTIME DESTINATION bin COMPONENT attnfuse)
install(EXPORT AttnFuseTargets
  NAMESPACE AttnFuse::
  DESTINATION ${ATTNFUSE_INSTALL_CMAKE_DIR}
  COMPONENT attnfuse)

foreach(tool attnfuse-opt attnfuse-run)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION bin COMPONENT attnfuse)
  endif()
endforeach()
if(TARGET AttnFusePlugin)
  install(TARGETS AttnFusePlugin
    LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX} COMPONENT attnfuse)
endif()

# Headers: the sources, and what TableGen generated (*.inc) in the build.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/attnfuse
                  ${PROJECT_SOURCE_DIR}/include/attnfuse-c
  DESTINATION include COMPONENT attnfuse
  FILES_MATCHING PATTERN "*.h" PATTERN "*.def" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/attnfuse
  DESTINATION include COMPONENT attnfuse
  FILES_MATCHING PATTERN "*.inc"
  PATTERN "CMakeFiles" EXCLUDE)

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/AttnFuseConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lib/cmake/attnfuse/AttnFuseConfig.cmake
  INSTALL_DESTINATION ${ATTNFUSE_INSTALL_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/lib/cmake/attnfuse/AttnFuseConfigVersion.cmake
  VERSION ${ATTNFUSE_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/lib/cmake/attnfuse/AttnFuseConfig.cmake
  ${PROJECT_BINARY_DIR}/lib/cmake/attnfuse/AttnFuseConfigVersion.cmake
  DESTINATION ${ATTNFUSE_INSTALL_CMAKE_DIR} COMPONENT attnfuse)
