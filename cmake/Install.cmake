# Install.cmake: what `cmake --install BUILD [--prefix P]` puts where, and
# the .deb CPack makes of it (README "Installing").
#
# Every rule names a target, not a source path, so that the C layout can
# move. The binaries find each other relative to their own directory
# (harness/layout.c): the relative paths are compiled in from the dirs
# below, and the build tree has the same shape (bin/, lib/,
# lib/python3/dist-packages/wirecheck), so a build folder anywhere and an
# installed prefix both work.

# Debian's python3 looks in /usr/lib/python3/dist-packages; the libraries go
# to lib/ (not the multiarch dir) so that bin/../lib finds the preload.
if(NOT DEFINED CMAKE_INSTALL_LIBDIR)
  set(CMAKE_INSTALL_LIBDIR lib CACHE PATH "Object code libraries (lib)")
endif()
include(GNUInstallDirs)
set(WIRECHECK_INSTALL_LIBEXECDIR "${CMAKE_INSTALL_LIBEXECDIR}/wirecheck" CACHE PATH
    "The subjects (refstack-subject, node-subject...), relative to the prefix")
set(WIRECHECK_INSTALL_PYTHONDIR "lib/python3/dist-packages" CACHE PATH
    "Where the wirecheck Python package goes, relative to the prefix")
option(WIRECHECK_INSTALL_STRIP "Strip the installed binaries (no debug info, so no build paths in them)" ON)

# The version: harness/wirecheck.c's WIRECHECK_VERSION, the one source.
get_target_property(_wc_cli_dir wirecheck SOURCE_DIR)
file(STRINGS "${_wc_cli_dir}/wirecheck.c" _wc_version_line REGEX "^#define WIRECHECK_VERSION ")
string(REGEX REPLACE ".*\"([^\"]+)\".*" "\\1" WIRECHECK_VERSION "${_wc_version_line}")

# The paths the CLI finds its parts by, relative to bin/.
foreach(_what LIBEXEC LIB PYTHON)
  if(_what STREQUAL "LIBEXEC")
    set(_dir "${WIRECHECK_INSTALL_LIBEXECDIR}")
  elseif(_what STREQUAL "LIB")
    set(_dir "${CMAKE_INSTALL_LIBDIR}")
  else()
    set(_dir "${WIRECHECK_INSTALL_PYTHONDIR}")
  endif()
  file(RELATIVE_PATH _rel "/p/${CMAKE_INSTALL_BINDIR}" "/p/${_dir}")
  target_compile_definitions(wirecheck PRIVATE "WC_${_what}_FROM_BIN=\"${_rel}\"")
endforeach()

# The build tree's copy of that shape: the package is python/wirecheck of
# the source, linked (as bin/node-subject is), so an edit needs no rebuild.
get_filename_component(_wc_pkg "${PROJECT_SOURCE_DIR}/python/wirecheck" ABSOLUTE)
set(_wc_build_pydir "${CMAKE_BINARY_DIR}/${WIRECHECK_INSTALL_PYTHONDIR}")
add_custom_command(
  OUTPUT "${_wc_build_pydir}/wirecheck"
  COMMAND ${CMAKE_COMMAND} -E make_directory "${_wc_build_pydir}"
  COMMAND ${CMAKE_COMMAND} -E create_symlink "${_wc_pkg}" "${_wc_build_pydir}/wirecheck"
  VERBATIM)
add_custom_target(wirecheck_python_package ALL DEPENDS "${_wc_build_pydir}/wirecheck")
add_dependencies(wirecheck wirecheck_python_package)

if(WIRECHECK_INSTALL_STRIP)
  install(CODE "set(CMAKE_INSTALL_DO_STRIP 1)")
endif()

# The CLI and the subjects.
install(TARGETS wirecheck RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(TARGETS refstack-subject RUNTIME DESTINATION "${WIRECHECK_INSTALL_LIBEXECDIR}")
if(TARGET libuv-subject)
  install(TARGETS libuv-subject RUNTIME DESTINATION "${WIRECHECK_INSTALL_LIBEXECDIR}")
endif()
# node and Bun subjects are scripts: the files their build links point to.
foreach(_script node_subject:node-subject bun_subject:bun-subject)
  string(REPLACE ":" ";" _pair "${_script}")
  list(GET _pair 0 _target)
  list(GET _pair 1 _name)
  get_target_property(_src_dir ${_target} SOURCE_DIR)
  if(_name STREQUAL "node-subject")
    set(_file "${_src_dir}/node/subject.js")
  else()
    set(_file "${_src_dir}/bun/subject.sh")
  endif()
  install(PROGRAMS "${_file}" DESTINATION "${WIRECHECK_INSTALL_LIBEXECDIR}" RENAME ${_name})
endforeach()

# The preload gate, and the gate as a static library with its header for a
# stack of one's own (pkg-config wirecheck: -lwirecheck-gate -lfiu).
if(TARGET wirecheck_preload)
  install(TARGETS wirecheck_preload LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
endif()
get_target_property(_gate_dir faultinject SOURCE_DIR)
install(FILES $<TARGET_FILE:faultinject> DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RENAME libwirecheck-gate.a)
if(WIRECHECK_INSTALL_STRIP)
  # install(FILES) does not strip: drop the archive's debug info (and with
  # it the build's paths) by hand.
  install(CODE "execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
    \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libwirecheck-gate.a\"
    COMMAND_ERROR_IS_FATAL ANY)")
endif()
install(FILES "${_gate_dir}/fi.h" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/wirecheck")
configure_file("${CMAKE_CURRENT_LIST_DIR}/wirecheck.pc.in" "${CMAKE_BINARY_DIR}/wirecheck.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/wirecheck.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# The bundled scenarios with their goldens and the subjects' differences.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/scenarios/" DESTINATION "${CMAKE_INSTALL_DATADIR}/wirecheck/scenarios"
        PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/" DESTINATION "${CMAKE_INSTALL_DOCDIR}")
install(FILES "${PROJECT_SOURCE_DIR}/README.md" DESTINATION "${CMAKE_INSTALL_DOCDIR}")

# The Python package, with the dist-info that gives pytest its pytest11
# entry point (so `pytest` finds the plugin with no -p) where python3 looks
# (the .deb's /usr/lib/python3/dist-packages), and the console scripts.
install(DIRECTORY "${_wc_pkg}" DESTINATION "${WIRECHECK_INSTALL_PYTHONDIR}"
        PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
set(_distinfo "${CMAKE_BINARY_DIR}/python-dist-info/wirecheck-${WIRECHECK_VERSION}.dist-info")
configure_file("${CMAKE_CURRENT_LIST_DIR}/METADATA.in" "${_distinfo}/METADATA" @ONLY)
configure_file("${CMAKE_CURRENT_LIST_DIR}/entry_points.txt.in" "${_distinfo}/entry_points.txt" COPYONLY)
file(WRITE "${_distinfo}/top_level.txt" "wirecheck\n")
file(WRITE "${_distinfo}/INSTALLER" "cmake\n")
install(DIRECTORY "${_distinfo}" DESTINATION "${WIRECHECK_INSTALL_PYTHONDIR}")
file(RELATIVE_PATH _py_from_bin "/p/${CMAKE_INSTALL_BINDIR}" "/p/${WIRECHECK_INSTALL_PYTHONDIR}")
# The console scripts are python/pyproject.toml's [project.scripts], read
# from there so that the pip-installed and the cmake-installed tool name the
# same functions (a second list here once named a module with no main).
file(STRINGS "${PROJECT_SOURCE_DIR}/python/pyproject.toml" _wc_scripts
     REGEX "^wirecheck-[a-z]+ = \"[a-z_.]+:[a-z_]+\"$")
if(NOT _wc_scripts)
  message(FATAL_ERROR "python/pyproject.toml: no [project.scripts] line of the form wirecheck-NAME = \"module:function\"")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${PROJECT_SOURCE_DIR}/python/pyproject.toml")
foreach(_line IN LISTS _wc_scripts)
  string(REGEX REPLACE "^wirecheck-([a-z]+) = \"([a-z_.]+):([a-z_]+)\"$" "\\1;\\2;\\3" _parts "${_line}")
  list(GET _parts 0 WC_TOOL)
  list(GET _parts 1 WC_TOOL_MODULE)
  list(GET _parts 2 WC_TOOL_FUNCTION)
  configure_file("${CMAKE_CURRENT_LIST_DIR}/console_script.in"
                 "${CMAKE_BINARY_DIR}/console-scripts/wirecheck-${WC_TOOL}" @ONLY)
  install(PROGRAMS "${CMAKE_BINARY_DIR}/console-scripts/wirecheck-${WC_TOOL}"
          DESTINATION "${CMAKE_INSTALL_BINDIR}")
endforeach()

# Man pages, made from the --help texts of the built wirecheck.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(_man_pages wirecheck wirecheck-run wirecheck-per-connection wirecheck-exec
    wirecheck-check wirecheck-sweep wirecheck-explore)
set(_man_files "")
foreach(_page IN LISTS _man_pages)
  list(APPEND _man_files "${CMAKE_BINARY_DIR}/man/man1/${_page}.1")
endforeach()
add_custom_command(
  OUTPUT ${_man_files}
  COMMAND Python3::Interpreter "${CMAKE_CURRENT_LIST_DIR}/manpages.py"
          $<TARGET_FILE:wirecheck> "${WIRECHECK_VERSION}" "${CMAKE_BINARY_DIR}/man/man1"
  DEPENDS wirecheck "${CMAKE_CURRENT_LIST_DIR}/manpages.py"
          refstack-subject wirecheck_python_package
  VERBATIM)
add_custom_target(wirecheck_man ALL DEPENDS ${_man_files})
install(FILES ${_man_files} DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")

# The Debian package: cpack -G DEB in the build folder.
set(CPACK_PACKAGE_NAME wirecheck)
set(CPACK_PACKAGE_VERSION "${WIRECHECK_VERSION}")
set(CPACK_PACKAGE_CONTACT "wirecheck maintainers <maintainers@wirecheck.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "fault-injection harness for socket write paths, with a pytest plugin")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The shared libraries the binaries link (libjansson, libfiu, libssl...)
# come from dpkg-shlibdeps; the rest is what the programs run.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# wirecheck explore draws its cases with hypothesis and judges them with
# real peers (h11, wsproto, websockets' frame parser).
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "python3 (>= 3.9), python3-pytest, python3-hypothesis, python3-h11, python3-wsproto, python3-websockets, libfiu-dev, pkg-config")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "python3-pytest-xdist, python3-matplotlib, nodejs, curl, fiu-utils, valgrind, strace")
set(CPACK_GENERATOR DEB)
include(CPack)
