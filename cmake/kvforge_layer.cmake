# One static library per layer. Sources are globbed so that adding a file
# never needs an edit here. Files named *_avx2.cpp / *_avx512.cpp / *_amx.cpp are compiled
# with that instruction set enabled; they are only ever called after a run-time
# CPU check (see src/core/cpu_features.h), so the rest of the code stays
# portable to machines without those extensions.
set(KVFORGE_AVX2_FLAGS -mavx2 -mfma -mf16c)
set(KVFORGE_AVX512_FLAGS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx2 -mfma -mf16c)
set(KVFORGE_AMX_FLAGS ${KVFORGE_AVX512_FLAGS} -mamx-tile -mamx-int8)

function(kvforge_layer name dir)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${dir}/*.cpp)
  list(FILTER srcs EXCLUDE REGEX ".*/cli/main\\.cpp$")
  # *_mpi.cpp files include mpi.h: the layer adds them only when MPI was found.
  list(FILTER srcs EXCLUDE REGEX ".*_mpi\\.cpp$")
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  foreach(src ${srcs})
    if(src MATCHES "_amx\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${KVFORGE_AMX_FLAGS}")
    elseif(src MATCHES "_avx512\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${KVFORGE_AVX512_FLAGS}")
    elseif(src MATCHES "_avx2\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${KVFORGE_AVX2_FLAGS}")
    endif()
  endforeach()
endfunction()
