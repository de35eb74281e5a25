# What `cmake --install` adds for projects that consume softcheck: the
# softcheck::plugin target, the CMake package (find_package(softcheck CONFIG)),
# softcheck.pc and the docs. The executables (into the export set
# softcheckTargets), the plugin header and the example plugin's source are
# installed where they are defined: cli/, reports/, impls/, impls/examples/.
#
# Everything installed is relocatable: the package config finds its prefix from
# its own location and softcheck.pc from ${pcfiledir}, so an install tree can be
# moved, packaged (CPack) or installed with `cmake --install --prefix`.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# softcheck::plugin: what a plugin needs from softcheck, the C header
# <softcheck/softcheck_plugin.h> and nothing else (docs/plugin-abi.md). Defined
# here rather than in impls/ because only the installed package uses it.
add_library(softcheck_plugin INTERFACE)
target_include_directories(softcheck_plugin INTERFACE
                           $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/impls/include>
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(softcheck_plugin PROPERTIES EXPORT_NAME plugin)
add_library(softcheck::plugin ALIAS softcheck_plugin)
install(TARGETS softcheck_plugin EXPORT softcheckTargets)

set(SOFTCHECK_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/softcheck CACHE STRING
    "Where softcheck's CMake package files go, relative to the install prefix")
mark_as_advanced(SOFTCHECK_INSTALL_CMAKEDIR)

install(EXPORT softcheckTargets NAMESPACE softcheck:: DESTINATION ${SOFTCHECK_INSTALL_CMAKEDIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/softcheckConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/packaging/softcheckConfig.cmake
                              INSTALL_DESTINATION ${SOFTCHECK_INSTALL_CMAKEDIR})
# Pre-1.0 (semantic versioning): a minor version may change what the package
# provides, so only the same major.minor is compatible. Not ARCH_INDEPENDENT
# on purpose: the executables dlopen plugins, which must match their
# architecture.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/packaging/softcheckConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/packaging/softcheckConfig.cmake
              ${PROJECT_BINARY_DIR}/packaging/softcheckConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/SoftcheckGateTest.cmake
              ${CMAKE_CURRENT_LIST_DIR}/SoftcheckGateTestRun.cmake
        DESTINATION ${SOFTCHECK_INSTALL_CMAKEDIR})

# softcheck.pc: Cflags for the plugin header, and the executable's path as the
# variable `softcheck`. prefix is relative to the .pc file's own directory.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(SOFTCHECK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH softcheck_pc_up "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" softcheck_pc_up "${softcheck_pc_up}")
  set(SOFTCHECK_PC_PREFIX "\${pcfiledir}/${softcheck_pc_up}")
endif()
foreach(dir INCLUDEDIR BINDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(SOFTCHECK_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(SOFTCHECK_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/softcheck.pc.in ${PROJECT_BINARY_DIR}/packaging/softcheck.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/softcheck.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The docs, beside README.md: docs/gating-your-kernel.md is the consumer's guide.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
        FILES_MATCHING PATTERN "*.md")
