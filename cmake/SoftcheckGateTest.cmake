# softcheck_add_gate_test: gate plugin kernels against a baseline report in
# ctest, as gtest_discover_tests puts GoogleTest cases there. Shipped in
# softcheck's CMake package (find_package(softcheck CONFIG)); the test builds
# nothing, it runs the installed softcheck on the plugin your project built.
#
#   softcheck_add_gate_test(NAME <test name>
#                           PLUGIN <target or path>...
#                           KERNELS <kernel>...
#                           BASELINE <report.json>
#                           [ISOLATE] [JUNIT <file>] [JOBS <n>]
#                           [EXTRA_ARGS <softcheck gate option>...])
#
# The test runs
#   softcheck gate --baseline <BASELINE> --plugin <PLUGIN>... --junit <JUNIT>
#                  [--isolate] [--jobs <n>] <EXTRA_ARGS>...
# and passes when the gate exits 0 (no regression). Without --report the gate
# reruns what the baseline records (its suite, seed, families, sizes,
# temperatures and kernels), so there is no SUITE option: pick the suite and
# the kernels when you make the baseline
# (`softcheck run --plugin lib.so --impl K --suite full --out DIR`).
#
#   PLUGIN    a MODULE or SHARED library target defined before this call
#             ($<TARGET_FILE:...> is used), or a path to a plugin (one with a
#             '/' or ending in .so; relative to CMAKE_CURRENT_BINARY_DIR).
#             Several may be given.
#   KERNELS   the kernels this test gates. Each must have an entry in the
#             baseline; the test fails before running the gate otherwise (a
#             baseline made for other kernels would gate nothing of yours).
#             The gate also reruns any other kernel the baseline holds.
#   BASELINE  the baseline report.json, relative to CMAKE_CURRENT_SOURCE_DIR
#             (it is committed next to the plugin). It need not exist at
#             configure time.
#   ISOLATE   --isolate: a crashing kernel fails the test instead of killing it.
#   JUNIT     the JUnit XML the gate writes (default
#             ${CMAKE_CURRENT_BINARY_DIR}/softcheck-gate/<NAME>.xml); relative
#             to CMAKE_CURRENT_BINARY_DIR. Removed before each run.
#   JOBS      --jobs <n>, and the test's PROCESSORS property (the gate uses
#             every core otherwise).
#   EXTRA_ARGS more `softcheck gate` options: --margin X, --slack-ulp A,
#             --reference-rule K:R, --quiet.
#
# The test carries the label `softcheck` (ctest -L softcheck).
include_guard(GLOBAL)

function(softcheck_add_gate_test)
  set(usage "usage: softcheck_add_gate_test(NAME <name> PLUGIN <target-or-path>... KERNELS <kernel>... BASELINE <report.json> [ISOLATE] [JUNIT <file>] [JOBS <n>] [EXTRA_ARGS <arg>...])")
  cmake_parse_arguments(PARSE_ARGV 0 arg "ISOLATE" "NAME;BASELINE;JUNIT;JOBS" "PLUGIN;KERNELS;EXTRA_ARGS")

  if(arg_UNPARSED_ARGUMENTS)
    list(GET arg_UNPARSED_ARGUMENTS 0 first)
    if(first STREQUAL "SUITE")
      message(FATAL_ERROR "softcheck_add_gate_test: there is no SUITE option: softcheck gate reruns the suite "
                          "the baseline records. Make the baseline with the suite you want "
                          "(softcheck run --suite full ...).\n${usage}")
    endif()
    message(FATAL_ERROR "softcheck_add_gate_test: unexpected arguments: ${arg_UNPARSED_ARGUMENTS}\n${usage}")
  endif()
  foreach(keyword IN LISTS arg_KEYWORDS_MISSING_VALUES)
    if(NOT keyword STREQUAL "EXTRA_ARGS")
      message(FATAL_ERROR "softcheck_add_gate_test: ${keyword} needs a value\n${usage}")
    endif()
  endforeach()
  foreach(required NAME PLUGIN KERNELS BASELINE)
    if("${arg_${required}}" STREQUAL "")
      message(FATAL_ERROR "softcheck_add_gate_test: ${required} is required\n${usage}")
    endif()
  endforeach()
  if(CMAKE_VERSION VERSION_LESS 3.19)
    message(FATAL_ERROR "softcheck_add_gate_test: needs CMake 3.19 or newer (its test reads the baseline with "
                        "string(JSON)); this is ${CMAKE_VERSION}")
  endif()
  if(NOT TARGET softcheck::softcheck)
    message(FATAL_ERROR "softcheck_add_gate_test(${arg_NAME}): there is no softcheck::softcheck target; "
                        "call find_package(softcheck CONFIG REQUIRED) first")
  endif()

  # Kernel names as the plugin ABI allows them; the runner gets them joined by
  # commas, which a name cannot contain.
  foreach(kernel IN LISTS arg_KERNELS)
    if(NOT kernel MATCHES "^[A-Za-z0-9_.-]+$")
      message(FATAL_ERROR "softcheck_add_gate_test(${arg_NAME}): KERNELS: '${kernel}' is not a kernel name "
                          "(letters, digits, '_', '-' and '.')")
    endif()
  endforeach()
  list(JOIN arg_KERNELS "," kernels)

  set(plugin_args "")
  foreach(plugin IN LISTS arg_PLUGIN)
    if(TARGET "${plugin}")
      get_target_property(type "${plugin}" TYPE)
      if(NOT type MATCHES "^(MODULE_LIBRARY|SHARED_LIBRARY)$")
        message(FATAL_ERROR "softcheck_add_gate_test(${arg_NAME}): PLUGIN '${plugin}' is a ${type} target; "
                            "a plugin is a MODULE (or SHARED) library: add_library(${plugin} MODULE ...)")
      endif()
      list(APPEND plugin_args --plugin "$<TARGET_FILE:${plugin}>")
    elseif(plugin MATCHES "/" OR plugin MATCHES "\\.so(\\.[0-9.]+)?$")
      get_filename_component(path "${plugin}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
      list(APPEND plugin_args --plugin "${path}")
    else()
      message(FATAL_ERROR "softcheck_add_gate_test(${arg_NAME}): PLUGIN '${plugin}' is neither a target "
                          "(define it before this call) nor a path (one with a '/' or ending in .so)")
    endif()
  endforeach()

  get_filename_component(baseline "${arg_BASELINE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(DEFINED arg_JUNIT)
    get_filename_component(junit "${arg_JUNIT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    string(MAKE_C_IDENTIFIER "${arg_NAME}" junit_name)
    set(junit "${CMAKE_CURRENT_BINARY_DIR}/softcheck-gate/${junit_name}.xml")
  endif()

  set(gate_args --baseline "${baseline}" ${plugin_args} --junit "${junit}")
  if(arg_ISOLATE)
    list(APPEND gate_args --isolate)
  endif()
  if(DEFINED arg_JOBS)
    if(NOT arg_JOBS MATCHES "^[1-9][0-9]*$")
      message(FATAL_ERROR "softcheck_add_gate_test(${arg_NAME}): JOBS must be a positive integer, not '${arg_JOBS}'")
    endif()
    list(APPEND gate_args --jobs ${arg_JOBS})
  endif()

  add_test(NAME "${arg_NAME}"
           COMMAND "${CMAKE_COMMAND}" -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/SoftcheckGateTestRun.cmake" --
                   "${baseline}" "${kernels}" "${junit}"
                   "$<TARGET_FILE:softcheck::softcheck>" gate ${gate_args} ${arg_EXTRA_ARGS})
  set_property(TEST "${arg_NAME}" APPEND PROPERTY LABELS softcheck)
  if(DEFINED arg_JOBS)
    set_property(TEST "${arg_NAME}" PROPERTY PROCESSORS ${arg_JOBS})
  endif()
endfunction()
