# SPDX-License-Identifier: MIT
# The libFuzzer targets (tests/fuzz/README.md), included by the top-level CMakeLists.txt when
# WEIR_FUZZ is ON. Each target links the project's C files it tests directly, built with the
# fuzzer's coverage instrumentation and ASan + UBSan; scripts/fuzz.sh configures build-fuzz/.
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang" OR NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "WEIR_FUZZ needs clang (libFuzzer): cmake -S . -B build-fuzz "
                      "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DWEIR_FUZZ=ON")
endif()
set(WEIR_FUZZ_FLAGS -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer)
set(WEIR_FUZZ_TARGETS "")
function(weir_fuzz_target name)
  add_executable(${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/${name}.c ${ARGN})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/runtime
                             ${CMAKE_SOURCE_DIR}/tests/fuzz)
  target_compile_options(${name} PRIVATE ${WEIR_FUZZ_FLAGS})
  target_link_options(${name} PRIVATE ${WEIR_FUZZ_FLAGS})
  target_link_libraries(${name} PRIVATE m)
  set(WEIR_FUZZ_TARGETS ${WEIR_FUZZ_TARGETS} ${name} PARENT_SCOPE)
endfunction()

set(rt ${CMAKE_SOURCE_DIR}/runtime)
weir_fuzz_target(fuzz_lines ${rt}/lines.c ${rt}/mem.c)
# fields.c reads JSON through json.cc (C++: simdjson) and CSV through csv.c
set(WEIR_FORMAT_SOURCES ${rt}/fields.c ${rt}/csv.c ${rt}/json.cc ${rt}/mem.c)
weir_fuzz_target(fuzz_fields ${WEIR_FORMAT_SOURCES})
weir_fuzz_target(fuzz_json ${WEIR_FORMAT_SOURCES})
weir_fuzz_target(fuzz_csv ${WEIR_FORMAT_SOURCES})
foreach(name fuzz_fields fuzz_json fuzz_csv)
  target_link_libraries(${name} PRIVATE PkgConfig::SIMDJSON PkgConfig::JANSSON)
endforeach()
weir_fuzz_target(fuzz_keygroup ${rt}/keygroup.c)
weir_fuzz_target(fuzz_timers ${rt}/timers.c ${rt}/mem.c)
# The Lua parsers: a LuaJIT state with the embedded modules, as the weir binary has them.
foreach(name fuzz_duration fuzz_replay)
  weir_fuzz_target(${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_lua.c ${WEIR_EMBED_C})
  add_dependencies(${name} weir_lua_embed)
  target_link_libraries(${name} PRIVATE PkgConfig::LUAJIT)
endforeach()
