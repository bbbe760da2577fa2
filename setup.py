"""pip install --no-build-isolation . — builds the _attnrt extension with the project's CMake and
installs the `attnrt` package (python/attnrt/) around it.

Debian ships no CMake-aware build backend for pip, so setuptools drives CMake here: configure a
Release build of the library and the module only (no tests, benchmarks or CLI), build target
_attnrt, and place the built extension where setuptools expects it. ATTNRT_BUILD_DIR reuses an
existing build folder (e.g. build/release) instead of a fresh one; ATTNRT_BUILD_JOBS sets the
parallelism (default: every core).
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def project_version() -> str:
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(attnrt VERSION ([0-9.]+)", text).group(1)


class CMakeExtension(Extension):
    def __init__(self, name: str):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        build_dir = pathlib.Path(os.environ.get("ATTNRT_BUILD_DIR") or
                                 pathlib.Path(self.build_temp).resolve() / "cmake")
        jobs = os.environ.get("ATTNRT_BUILD_JOBS") or str(os.cpu_count() or 1)
        if not (build_dir / "CMakeCache.txt").exists():
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_dir),
                            "-DCMAKE_BUILD_TYPE=Release", "-DATTNRT_PYTHON=ON",
                            "-DATTNRT_BUILD_TESTS=OFF", "-DATTNRT_BUILD_BENCH=OFF",
                            "-DATTNRT_BUILD_TOOLS=OFF", "-DATTNRT_INSTALL=OFF",
                            f"-DPython3_EXECUTABLE={sys._base_executable}"], check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_attnrt", "-j", jobs],
                       check=True)
        built = sorted((build_dir / "python" / "attnrt").glob("_attnrt*.so"))
        if not built:
            sys.exit(f"setup.py: no _attnrt extension under {build_dir}/python/attnrt")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    name="attnrt",
    version=project_version(),
    description="Paged-KV attention planning and CPU kernels (vLLM's attention plumbing in C++)",
    license="Apache-2.0",
    python_requires=">=3.11",
    packages=["attnrt"],
    package_dir={"attnrt": "python/attnrt"},
    package_data={"attnrt": ["*.pyi", "py.typed"]},
    ext_modules=[CMakeExtension("attnrt._attnrt")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
