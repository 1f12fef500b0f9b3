# Static link mode (ATTNFUSE_LINK_MLIR_DYLIB=OFF): tools and the C API library
# take MLIR and LLVM from Debian's static archives, so that they run on a
# machine without LLVM/MLIR (the GPU machine; scripts/build-bundle.sh).
# Debian's exported MLIR targets name the `LLVM` dylib and LLVMSupport names
# shared libz3; both are retargeted here.

set(LLVM_LINK_LLVM_DYLIB OFF)

# Every static LLVM component library (the linker keeps what is used).
set(ATTNFUSE_LLVM_STATIC_LIBS)
foreach(lib ${LLVM_AVAILABLE_LIBS})
  if(TARGET ${lib} AND lib MATCHES "^LLVM" AND
     NOT lib MATCHES "^LLVM(BOLT|Exegesis|CFIVerify|Diff|OptDriver|Fuzz|Polly)")
    get_target_property(type ${lib} TYPE)
    get_target_property(deps ${lib} INTERFACE_LINK_LIBRARIES)
    # Leave out components that need libraries this machine may not have
    # (libcurl, libedit, libxml2) or Polly, which Debian ships without its archive; attnfuse uses none of them.
    set(external OFF)
    foreach(dep ${deps})
      if((dep MATCHES "::" AND NOT TARGET ${dep}) OR
         dep MATCHES "^(Polly|LibXml2::)")
        set(external ON)
      endif()
    endforeach()
    if(type STREQUAL "STATIC_LIBRARY" AND NOT external)
      list(APPEND ATTNFUSE_LLVM_STATIC_LIBS ${lib})
    endif()
  endif()
endforeach()

# Debian exports some static MLIR archives (the execution engine) as
# depending on libMLIR.so; their real dependencies are these archives.
set(ATTNFUSE_MLIR_FOR_DYLIB_USERS MLIRExecutionEngineUtils
  MLIRTargetLLVMIRExport MLIRLLVMIRTransforms MLIRToLLVMIRTranslationRegistration)

get_directory_property(imported IMPORTED_TARGETS)
foreach(target ${imported})
  get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
  if(libs)
    list(TRANSFORM libs REPLACE "^\\$<LINK_ONLY:(LLVM|MLIR)>$" "\\1")
  endif()
  if(libs AND ("LLVM" IN_LIST libs OR "MLIR" IN_LIST libs))
    if("MLIR" IN_LIST libs)
      list(REMOVE_ITEM libs MLIR)
      list(APPEND libs ${ATTNFUSE_MLIR_FOR_DYLIB_USERS})
    endif()
    list(REMOVE_ITEM libs LLVM)
    list(APPEND libs ${ATTNFUSE_LLVM_STATIC_LIBS})
    set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${libs}")
  endif()
endforeach()

# LLVMExtensions names Polly, whose archive Debian does not ship; the tools
# register no Polly passes.
set_target_properties(LLVMExtensions PROPERTIES INTERFACE_LINK_LIBRARIES
  "LLVMSupport")

# zlib and zstd stay shared (Debian's libz.a is not position-independent, and
# both libraries are part of every Debian/Ubuntu base system); libz3 is
# dropped (unused by attnfuse).
set_target_properties(LLVMSupport PROPERTIES INTERFACE_LINK_LIBRARIES
  "rt;dl;m;pthread;z;zstd;LLVMDemangle")

# Tools register only what attnfuse's pipelines use (a fraction of MLIR).
add_compile_definitions(ATTNFUSE_MINIMAL_REGISTRATION)

# Only glibc, zlib and zstd stay dynamic (a fully static binary's JIT cannot
# find malloc).
add_link_options(-static-libstdc++ -static-libgcc -Wl,--gc-sections -Wl,--icf=all)
# No RPATHs (attnfuse-run's own: tools/attnfuse-run/CMakeLists.txt).
set(CMAKE_SKIP_BUILD_RPATH ON)
set(CMAKE_SKIP_INSTALL_RPATH ON)
