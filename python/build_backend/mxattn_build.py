"""The PEP 517 / PEP 660 build backend of the mxattn Python package.

Standard library only, with no build requirements: pip then needs neither the
network nor --no-build-isolation (an isolated build with setuptools would
download setuptools first, which fails on a machine without PyPI).

The wheel holds python/mxattn and, in mxattn/lib/, libmxattn.so with the
copies of liblua and libsqlite (and any other lib*.so.N) that the CMake build
places beside it; libmxattn.so's RPATH is $ORIGIN, so the installed package
runs on a machine that has neither library installed.  Where libmxattn.so
comes from, in order:

  -C build-dir=DIR or $MXATTN_BUILD_DIR   an existing CMake build folder,
                                           bundled as it is (not rebuilt);
  otherwise                                cmake configures and builds the
                                           shared library into build-python/
                                           at the repository root (again
                                           only what changed on a re-run).

-C bundle=no (or MXATTN_WHEEL_BUNDLE=0) makes a wheel without the library;
the package then loads one installed under a prefix (`cmake --install`,
found by the dynamic loader as libmxattn.so.0) or named by $MXATTN_LIB.

The version is MXATTN_VERSION of include/mxattn.h, the library's own.
"""
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE_DIR = os.path.join(ROOT, "python", "mxattn")
HEADER = os.path.join(ROOT, "include", "mxattn.h")
NAME = "mxattn"
SUMMARY = "Run-time generated, autotuned low-bit attention kernels for NVIDIA GPUs"
# The libraries beside libmxattn.so that it needs: named by their SONAME
# (lib<name>.so.<major>), the way CMakeLists.txt links each copy.
_BUNDLED_DEPENDENCY = re.compile(r"^lib.+\.so\.[0-9]+$")
# A wheel's files keep a fixed date so that two builds of one tree are equal.
_ZIP_DATE = (2020, 1, 1, 0, 0, 0)


class BuildError(RuntimeError):
    pass


def version():
    with open(HEADER) as f:
        match = re.search(r'^#define\s+MXATTN_VERSION\s+"([^"]+)"', f.read(), re.M)
    if not match:
        raise BuildError(f"MXATTN_VERSION not found in {HEADER}")
    return match.group(1)


def _dist_info():
    return f"{NAME}-{version()}.dist-info"


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version()}\n"
            f"Summary: {SUMMARY}\nRequires-Python: >=3.9\n"
            "Provides-Extra: torch\nRequires-Dist: torch; extra == \"torch\"\n")


def _setting(config_settings, key, env, default=None):
    value = (config_settings or {}).get(key)
    if value is None:
        value = os.environ.get(env)
    return default if value in (None, "") else value


def _bundles(config_settings):
    value = _setting(config_settings, "bundle", "MXATTN_WHEEL_BUNDLE", "yes")
    return str(value).lower() not in ("no", "0", "false", "off")


# --- the library ------------------------------------------------------------------


def _cmake_build():
    """Builds the shared library into ROOT/build-python; returns that folder."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildError("cmake not found: install cmake (and the build dependencies, "
                         "scripts/mxattn.sh), or set MXATTN_BUILD_DIR to a folder where "
                         "libmxattn.so is built")
    build_dir = os.path.join(ROOT, "build-python")
    jobs = os.environ.get("MXATTN_BUILD_JOBS") or str(os.cpu_count() or 1)
    steps = ([cmake, "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
              "-DBUILD_TESTING=OFF"],
             [cmake, "--build", build_dir, "--target", "mxattn_shared", "-j", jobs])
    for step in steps:
        # The build's output goes to stderr: stdout may be the frontend's channel.
        result = subprocess.run(step, stdout=sys.stderr, stderr=sys.stderr)
        if result.returncode != 0:
            raise BuildError(f"{' '.join(step)} failed with status {result.returncode}")
    return build_dir


def _library_files(config_settings):
    """[(path inside the wheel, file on disk)] for mxattn/lib/."""
    build_dir = _setting(config_settings, "build-dir", "MXATTN_BUILD_DIR")
    if build_dir is None:
        build_dir = _cmake_build()
    build_dir = os.path.abspath(build_dir)
    library = os.path.join(build_dir, "libmxattn.so")
    if not os.path.isfile(library):
        raise BuildError(f"{library} not found: build the mxattn_shared target there "
                         "(cmake --build DIR --target mxattn_shared)")
    files = [(f"{NAME}/lib/libmxattn.so", os.path.realpath(library))]
    for name in sorted(os.listdir(build_dir)):
        path = os.path.join(build_dir, name)
        if _BUNDLED_DEPENDENCY.match(name) and not name.startswith("libmxattn.") \
                and os.path.isfile(path):
            # Symlinks are stored as the file they name: a wheel has no links.
            files.append((f"{NAME}/lib/{name}", os.path.realpath(path)))
    return files


def _package_files():
    files = []
    for name in sorted(os.listdir(PACKAGE_DIR)):
        if name.endswith(".py"):
            files.append((f"{NAME}/{name}", os.path.join(PACKAGE_DIR, name)))
    return files


# --- wheels -----------------------------------------------------------------------


def _tag(with_library):
    # ctypes loads the library, so any Python 3 runs it; the library itself
    # ties a wheel that holds it to this platform.
    if not with_library:
        return "py3-none-any"
    return "py3-none-" + re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


class _Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.records = []

    def add(self, arcname, data, executable=False):
        info = zipfile.ZipInfo(arcname, _ZIP_DATE)
        info.external_attr = (0o755 if executable else 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.records.append(f"{arcname},sha256={digest},{len(data)}")

    def add_file(self, arcname, path):
        with open(path, "rb") as f:
            self.add(arcname, f.read(), executable=os.access(path, os.X_OK))

    def close(self, dist_info):
        record = f"{dist_info}/RECORD"
        self.records.append(f"{record},,")
        self.zip.writestr(zipfile.ZipInfo(record, _ZIP_DATE), "\n".join(self.records) + "\n")
        self.zip.close()


def _metadata_files(tag):
    dist_info = _dist_info()
    wheel = (f"Wheel-Version: 1.0\nGenerator: mxattn_build\nRoot-Is-Purelib: "
             f"{'true' if tag.endswith('-any') else 'false'}\nTag: {tag}\n")
    return {f"{dist_info}/METADATA": _metadata(), f"{dist_info}/WHEEL": wheel}


def _write_wheel(wheel_directory, contents, tag):
    """contents: [(arcname, path or bytes)]; returns the wheel's file name."""
    filename = f"{NAME}-{version()}-{tag}.whl"
    wheel = _Wheel(os.path.join(wheel_directory, filename))
    try:
        for arcname, source in contents:
            if isinstance(source, bytes):
                wheel.add(arcname, source)
            else:
                wheel.add_file(arcname, source)
        for arcname, text in _metadata_files(tag).items():
            wheel.add(arcname, text.encode())
    finally:
        wheel.close(_dist_info())
    return filename


def _version_module():
    return (f'"""Written by the build backend from include/mxattn.h."""\n'
            f'__version__ = "{version()}"\n').encode()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with_library = _bundles(config_settings)
    contents = _package_files() + [(f"{NAME}/_version.py", _version_module())]
    if with_library:
        contents += _library_files(config_settings)
    return _write_wheel(wheel_directory, contents, _tag(with_library))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: a .pth file puts python/ on sys.path; the package then loads
    the library of the build tree (build/libmxattn.so) or $MXATTN_LIB."""
    pth = (os.path.join(ROOT, "python") + "\n").encode()
    return _write_wheel(wheel_directory, [(f"__editable__.{NAME}.pth", pth)], "py3-none-any")


def _prepare_metadata(metadata_directory, config_settings):
    dist_info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(dist_info, exist_ok=True)
    tag = _tag(_bundles(config_settings))
    for arcname, text in _metadata_files(tag).items():
        with open(os.path.join(metadata_directory, arcname), "w") as f:
            f.write(text)
    return _dist_info()


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    dist_info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(dist_info, exist_ok=True)
    for arcname, text in _metadata_files("py3-none-any").items():
        with open(os.path.join(metadata_directory, arcname), "w") as f:
            f.write(text)
    return _dist_info()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


# --- source distributions -----------------------------------------------------------


def _source_files():
    """The tracked files (git ls-files), else the tree without build folders."""
    try:
        listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True,
                                check=True).stdout.decode().split("\0")
        return sorted(f for f in listed if f and os.path.isfile(os.path.join(ROOT, f)))
    except (OSError, subprocess.CalledProcessError):
        files = []
        for top, dirs, names in os.walk(ROOT):
            dirs[:] = sorted(d for d in dirs if not (d.startswith(".") or d.startswith("build")
                                                      or d == "__pycache__"))
            rel = os.path.relpath(top, ROOT)
            files += [os.path.normpath(os.path.join(rel, n)) for n in sorted(names)]
        return files


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{version()}"
    filename = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tar:
        for rel in _source_files():
            tar.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}", recursive=False)
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        tar.addfile(info, io.BytesIO(pkg_info))
    return filename


if __name__ == "__main__":
    # python3 python/build_backend/mxattn_build.py DIR: a wheel into DIR, by hand.
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    print(os.path.join(out, build_wheel(out)))
