# The command of a softcheck_add_gate_test test (SoftcheckGateTest.cmake):
#
#   cmake -P SoftcheckGateTestRun.cmake -- BASELINE KERNELS JUNIT softcheck gate ARGS...
#
# KERNELS is a comma-separated list. Before running the gate, checks that the
# baseline has an entry for each of them: the gate reruns the baseline's own
# kernels, so a baseline made for other kernels would pass without gating
# yours. Removes a stale JUNIT first, so CI never reads a previous run's file.
# Fails (exit 1) when the gate does not exit 0.
cmake_minimum_required(VERSION 3.19)  # string(JSON)

set(first -1)
foreach(i RANGE ${CMAKE_ARGC})
  if(CMAKE_ARGV${i} STREQUAL "--")
    set(first ${i})
    break()
  endif()
endforeach()
math(EXPR last "${CMAKE_ARGC} - 1")
math(EXPR command_start "${first} + 4")
if(first LESS 0 OR command_start GREATER last)
  message(FATAL_ERROR "usage: cmake -P SoftcheckGateTestRun.cmake -- BASELINE KERNELS JUNIT softcheck gate ARGS...")
endif()
math(EXPR i "${first} + 1")
set(baseline "${CMAKE_ARGV${i}}")
math(EXPR i "${first} + 2")
string(REPLACE "," ";" kernels "${CMAKE_ARGV${i}}")
math(EXPR i "${first} + 3")
set(junit "${CMAKE_ARGV${i}}")
set(command "")
foreach(i RANGE ${command_start} ${last})
  list(APPEND command "${CMAKE_ARGV${i}}")
endforeach()

if(NOT EXISTS "${baseline}")
  message(FATAL_ERROR "softcheck gate test: baseline ${baseline} does not exist; make it with "
                      "`softcheck run --plugin <plugin> --impl <kernel> --out <dir>` and commit <dir>/report.json")
endif()
file(READ "${baseline}" report)
# The kernel names of the baseline: kernels[].kernel in the report schema, one
# entry per kernel and op. string(JSON) parses its whole input on every call,
# so the array is taken out once and its names are read with a regular
# expression: no object nested in an entry has a "kernel" member, and a name is
# [A-Za-z0-9_.-]+.
string(JSON type ERROR_VARIABLE error TYPE "${report}" kernels)
if(NOT error AND NOT type STREQUAL "ARRAY")
  set(error "kernels is ${type}, not an array")
endif()
if(NOT error)
  string(JSON entries GET "${report}" kernels)
endif()
if(error)
  message(FATAL_ERROR "softcheck gate test: cannot read the kernels of baseline ${baseline}: ${error}")
endif()
string(REGEX MATCHALL "\"kernel\"[ \t\r\n]*:[ \t\r\n]*\"[A-Za-z0-9_.-]+\"" members "${entries}")
set(have "")
foreach(member IN LISTS members)
  string(REGEX REPLACE ".*:[ \t\r\n]*\"([^\"]+)\"$" "\\1" name "${member}")
  list(APPEND have "${name}")
endforeach()
list(REMOVE_DUPLICATES have)
set(missing "")
foreach(kernel IN LISTS kernels)
  if(NOT kernel IN_LIST have)
    list(APPEND missing "${kernel}")
  endif()
endforeach()
if(missing)
  list(JOIN missing ", " missing)
  list(JOIN have ", " have)
  message(FATAL_ERROR "softcheck gate test: baseline ${baseline} has no entry for ${missing} (it has: ${have}); "
                      "remake it with `softcheck run --plugin <plugin> --impl <kernel>... --out <dir>`")
endif()

file(REMOVE "${junit}")
list(JOIN command " " shown)
message(STATUS "${shown}")
execute_process(COMMAND ${command} RESULT_VARIABLE rc)
if(NOT rc STREQUAL "0")
  if(rc STREQUAL "1")
    set(why "a regression, named above")
  elseif(rc STREQUAL "2")
    set(why "a usage or harness error: nothing was gated")
  else()
    set(why "not a gate verdict")
  endif()
  message(FATAL_ERROR "softcheck gate exited ${rc} (${why})")
endif()
