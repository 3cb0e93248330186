"""Builds omma's Python package: CMake configures the repository (python/..)
and builds the extension omma._omma (libomma linked in) and the omma
command; both are copied into the package. Offline, from Debian packages:

    pip install --no-build-isolation --no-index ./python

OMMA_CMAKE_ARGS adds CMake arguments (e.g. "-DOMMA_CUDA=OFF"); OMMA_JOBS
sets the build's parallelism (default: all cores)."""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        args = [
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DBUILD_TESTING=OFF",
            "-DOMMA_PYTHON=ON",
        ] + shlex.split(os.environ.get("OMMA_CMAKE_ARGS", ""))
        jobs = os.environ.get("OMMA_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build] + args)
        subprocess.check_call(["cmake", "--build", build, "--target", "omma_python",
                               "-j", jobs])
        dest = self.get_ext_fullpath(ext.name)
        pkg = os.path.dirname(dest)
        os.makedirs(os.path.join(pkg, "bin"), exist_ok=True)
        shutil.copy2(os.path.join(build, "python", "omma", os.path.basename(dest)), dest)
        shutil.copy2(os.path.join(build, "omma"), os.path.join(pkg, "bin", "omma"))
        # Where the models of this source tree are (the models are fetched by
        # scripts/fetch-models.sh and never shipped); the command is bin/omma.
        with open(os.path.join(pkg, "_build.py"), "w") as f:
            f.write("# Written by setup.py: where this build's parts are.\n")
            f.write('CLI = ""  # the command is bin/omma beside this file\n')
            f.write(f"DATA_DIR = {ROOT!r}\n")


setup(ext_modules=[Extension("omma._omma", sources=[])], cmdclass={"build_ext": CMakeBuild})
