# Library properties shared by meshplan's installed libraries, and the install rules: headers
# under include/meshplan/, the exported CMake package (find_package(meshplan) → meshplan::schemas,
# ::device, ::emulator, ::planner, ::runtime, ::c), a pkg-config file and the command-line tools.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(MESHPLAN_SHARED)
  set(MESHPLAN_LIBRARY_TYPE SHARED)
  # Installed tools find the libraries next to them.
  set(CMAKE_INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
else()
  set(MESHPLAN_LIBRARY_TYPE STATIC)
endif()

# Static libraries are position-independent when the Python module links them into a shared
# object.
if(MESHPLAN_SHARED OR MESHPLAN_PYTHON)
  set(MESHPLAN_PIC ON)
else()
  set(MESHPLAN_PIC OFF)
endif()

# TARGET becomes meshplan::EXPORT_NAME when installed.
function(meshplan_library target export_name)
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${export_name}
    POSITION_INDEPENDENT_CODE ${MESHPLAN_PIC}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR})
  target_compile_features(${target} PUBLIC cxx_std_23)
  get_filename_component(dir ${CMAKE_CURRENT_SOURCE_DIR}/include ABSOLUTE)
  if(EXISTS ${dir})
    target_include_directories(${target} PUBLIC
      $<BUILD_INTERFACE:${dir}> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  endif()
endfunction()

function(meshplan_install)
  set(cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/meshplan)
  install(TARGETS meshplan_schemas meshplan_device meshplan_emulator meshplan_planner meshplan_runtime meshplan_c
    EXPORT meshplanTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(TARGETS meshplan-compile meshplan-run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  foreach(lib schemas device device/emulator planner runtime)
    if(EXISTS ${PROJECT_SOURCE_DIR}/${lib}/include)
      install(DIRECTORY ${PROJECT_SOURCE_DIR}/${lib}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
    endif()
  endforeach()
  install(DIRECTORY ${PROJECT_BINARY_DIR}/schemas/generated/meshplan/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/meshplan FILES_MATCHING PATTERN "*_generated.h")
  install(FILES ${PROJECT_SOURCE_DIR}/schemas/common.fbs ${PROJECT_SOURCE_DIR}/schemas/graph.fbs
    ${PROJECT_SOURCE_DIR}/schemas/plan.fbs ${PROJECT_SOURCE_DIR}/schemas/cache.fbs
    ${PROJECT_SOURCE_DIR}/schemas/device.fbs DESTINATION ${CMAKE_INSTALL_DATADIR}/meshplan/schemas)

  install(EXPORT meshplanTargets NAMESPACE meshplan:: DESTINATION ${cmake_dir})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/meshplanConfig.cmake.in
    ${PROJECT_BINARY_DIR}/meshplanConfig.cmake INSTALL_DESTINATION ${cmake_dir})
  # 0.x: a new minor version may change the API.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/meshplanConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/meshplanConfig.cmake
    ${PROJECT_BINARY_DIR}/meshplanConfigVersion.cmake ${PROJECT_SOURCE_DIR}/cmake/FindxxHash.cmake
    DESTINATION ${cmake_dir})

  # pkg-config: relocatable (prefix found from the .pc file's own folder).
  file(RELATIVE_PATH pc_to_prefix /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
  string(REGEX REPLACE "/$" "" pc_to_prefix "${pc_to_prefix}")
  if(MESHPLAN_SHARED)
    set(MESHPLAN_PC_REQUIRES "flatbuffers")
    set(MESHPLAN_PC_REQUIRES_PRIVATE "libxxhash")
  else()
    # Static libraries: their dependencies are needed by every link.
    set(MESHPLAN_PC_REQUIRES "flatbuffers libxxhash")
    set(MESHPLAN_PC_REQUIRES_PRIVATE "")
  endif()
  set(MESHPLAN_PC_PREFIX "\${pcfiledir}/${pc_to_prefix}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/meshplan.pc.in ${PROJECT_BINARY_DIR}/meshplan.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/meshplan.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
