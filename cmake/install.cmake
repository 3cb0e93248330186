# `cmake --install` (and `make install PREFIX=...`): libomma.so (+ soname
# links) and libomma.a, the public headers, the omma command, omma.pc and
# the CMake package (find_package(omma) gives omma::omma, the shared
# library, and omma::omma_static). Both package files are relocatable:
# they find the prefix from where they lie.
include(CMakePackageConfigHelpers)

install(TARGETS omma omma_static EXPORT omma-targets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS omma_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/omma DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h")

set(OMMA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/omma)
install(EXPORT omma-targets NAMESPACE omma:: DESTINATION ${OMMA_CMAKE_DIR})

# The config file recreates the imported targets libomma.a's interface names
# (PkgConfig::OMMA_*, CUDA::cudart_static, Threads::Threads).
set(OMMA_CONFIG_DEPS "")
set(OMMA_PNG_PC libpng)
set(OMMA_JPEG_PC libjpeg)
set(OMMA_LIBAV_PC libavformat libavcodec libavutil libswscale)
set(OMMA_MHD_PC libmicrohttpd)
set(OMMA_V4L2_PC libv4l2)
set(OMMA_RDKAFKA_PC rdkafka)
set(OMMA_NATS_PC libnats)
set(OMMA_MOSQUITTO_PC libmosquitto)
foreach(dep PNG JPEG LIBAV MHD V4L2 RDKAFKA NATS MOSQUITTO)
    if(OMMA_${dep}_FOUND)
        list(JOIN OMMA_${dep}_PC " " modules)
        string(APPEND OMMA_CONFIG_DEPS
            "if(NOT TARGET PkgConfig::OMMA_${dep})\n"
            "    pkg_check_modules(OMMA_${dep} REQUIRED QUIET IMPORTED_TARGET ${modules})\n"
            "endif()\n")
    endif()
endforeach()
if(OMMA_CUDA)
    string(APPEND OMMA_CONFIG_DEPS
        "if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS \"${CUDAToolkit_LIBRARY_ROOT}\")\n"
        "    set(CUDAToolkit_ROOT \"${CUDAToolkit_LIBRARY_ROOT}\")\n"
        "endif()\n"
        "find_dependency(CUDAToolkit)\n")
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/omma-config.cmake.in
    ${PROJECT_BINARY_DIR}/omma-config.cmake INSTALL_DESTINATION ${OMMA_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/omma-config-version.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/omma-config.cmake
    ${PROJECT_BINARY_DIR}/omma-config-version.cmake DESTINATION ${OMMA_CMAKE_DIR})

# omma.pc: Libs.private is what libomma.a needs (pkg-config --static): the
# dependencies' link flags (their pkg-config --libs, shared libraries) and,
# with CUDA, the static CUDA runtime. They are not in Requires.private:
# pkg-config --static would follow them into FFmpeg's own private libraries
# (libgme, libopenmpt, ... that Debian ships without -dev), which a program
# linking the shared FFmpeg libraries does not need. A sanitizer build's
# users need its runtime (Libs).
set(OMMA_PC_LIBS_PRIVATE_LIST)
foreach(dep PNG JPEG LIBAV MHD V4L2 RDKAFKA NATS MOSQUITTO)
    if(OMMA_${dep}_FOUND)
        list(APPEND OMMA_PC_LIBS_PRIVATE_LIST ${OMMA_${dep}_LDFLAGS})
    endif()
endforeach()
if(OMMA_CUDA)
    get_target_property(OMMA_CUDART_STATIC CUDA::cudart_static IMPORTED_LOCATION)
    get_filename_component(OMMA_CUDART_DIR ${OMMA_CUDART_STATIC} DIRECTORY)
    list(APPEND OMMA_PC_LIBS_PRIVATE_LIST -L${OMMA_CUDART_DIR} -lcudart_static -lrt -lstdc++)
endif()
list(APPEND OMMA_PC_LIBS_PRIVATE_LIST -pthread)
foreach(lib ${CMAKE_DL_LIBS} m)
    list(APPEND OMMA_PC_LIBS_PRIVATE_LIST -l${lib})
endforeach()
list(REMOVE_DUPLICATES OMMA_PC_LIBS_PRIVATE_LIST)
list(JOIN OMMA_PC_LIBS_PRIVATE_LIST " " OMMA_PC_LIBS_PRIVATE)
list(JOIN OMMA_SAN_FLAGS " " OMMA_PC_SAN_FLAGS)
# From <prefix>/<libdir>/pkgconfig back to <prefix>.
file(RELATIVE_PATH OMMA_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/omma.pc.in ${PROJECT_BINARY_DIR}/omma.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/omma.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
