"""Tests of the Python binding that need neither torch nor a GPU.

    MXATTN_LIB=build/libmxattn.so python3 -m unittest discover -s python/tests -p test_cpu.py -v

Checks that the package imports without torch, that the ctypes structs match
the C compiler's layout of include/mxattn.h, and that statuses become the
right exceptions.  Calls the library has not implemented yet are skipped.
"""
import base64
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_DIR = os.path.dirname(PYTHON_DIR)
HEADER = os.path.join(REPO_DIR, "include", "mxattn.h")
sys.path.insert(0, PYTHON_DIR)

import mxattn  # noqa: E402
from mxattn import _native, _plans, _torch_api  # noqa: E402

_cache_dir = None


def setUpModule():
    # Keep the tests' database away from the user's.
    global _cache_dir
    _cache_dir = tempfile.mkdtemp(prefix="mxattn-pytest-")
    os.environ["MXATTN_CACHE"] = os.path.join(_cache_dir, "mxattn.db")


def tearDownModule():
    shutil.rmtree(_cache_dir, ignore_errors=True)


def call_or_skip(test, fn, *args):
    """fn(*args), skipping the test if the library does not export fn yet."""
    try:
        return fn(*args)
    except NotImplementedError as e:
        test.skipTest(str(e))


class ImportTest(unittest.TestCase):
    def test_imports_without_torch(self):
        # sys.modules["torch"] = None makes any `import torch` fail.
        code = ("import sys; sys.modules['torch'] = None; import mxattn; "
                "print(mxattn.version())")
        result = subprocess.run([sys.executable, "-c", code], cwd=PYTHON_DIR,
                                capture_output=True, text=True, env=os.environ.copy())
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), mxattn.version())

    def test_bad_mxattn_lib_is_an_error_not_a_fallback(self):
        env = dict(os.environ, MXATTN_LIB="/nonexistent/libmxattn.so")
        code = "import mxattn; mxattn.version()"
        result = subprocess.run([sys.executable, "-c", code], cwd=PYTHON_DIR,
                                capture_output=True, text=True, env=env)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("MXATTN_LIB=/nonexistent/libmxattn.so does not exist", result.stderr)

    def test_mxattn_lib_is_tried_first(self):
        if "MXATTN_LIB" not in os.environ:
            self.skipTest("MXATTN_LIB is not set")
        self.assertEqual(_native.library_candidates()[0], os.environ["MXATTN_LIB"])
        self.assertEqual(mxattn.library_path(), os.environ["MXATTN_LIB"])


class LoaderOrderTest(unittest.TestCase):
    def test_bundled_before_build_tree_before_system(self):
        saved = os.environ.pop("MXATTN_LIB", None)
        try:
            candidates = _native.library_candidates()
            local = _native.library_candidates(system=False)
        finally:
            if saved is not None:
                os.environ["MXATTN_LIB"] = saved
        bundled = os.path.join(PYTHON_DIR, "mxattn", "lib", "libmxattn.so")
        build = os.path.join(REPO_DIR, "build", "libmxattn.so")
        self.assertEqual(candidates[:2], [bundled, build])
        self.assertEqual(candidates[2], os.path.join(sys.prefix, "lib", "libmxattn.so.0"))
        self.assertEqual(candidates[-1], "libmxattn.so.0")  # the dynamic loader's search
        self.assertEqual(candidates[:len(local)], local)
        self.assertNotIn("libmxattn.so.0", local)

    def test_bundled_copy_is_loaded_first(self):
        """A package folder with lib/libmxattn.so (what a wheel installs) loads
        that copy, not the build tree's, when $MXATTN_LIB is unset."""
        built = os.environ.get("MXATTN_LIB")
        if not built:
            self.skipTest("MXATTN_LIB is not set")
        build_dir = os.path.dirname(built)
        with tempfile.TemporaryDirectory() as tmp:
            package = os.path.join(tmp, "mxattn")
            shutil.copytree(os.path.join(PYTHON_DIR, "mxattn"), package,
                            ignore=shutil.ignore_patterns("__pycache__", "lib"))
            os.mkdir(os.path.join(package, "lib"))
            for name in os.listdir(build_dir):
                if name == "libmxattn.so" or re.match(r"^lib.+\.so\.[0-9]+$", name):
                    shutil.copy(os.path.join(build_dir, name), os.path.join(package, "lib"))
            env = {k: v for k, v in os.environ.items() if k != "MXATTN_LIB"}
            code = ("import sys; sys.modules['torch'] = None; import mxattn; "
                    "print(mxattn.library_path()); print(mxattn.version())")
            result = subprocess.run([sys.executable, "-B", "-c", code], cwd=tmp,
                                    capture_output=True, text=True, env=env)
            self.assertEqual(result.returncode, 0, result.stderr)
            path, version = result.stdout.split()
            self.assertEqual(path, os.path.join(package, "lib", "libmxattn.so"))
            self.assertEqual(version, mxattn.version())


def header_version():
    with open(HEADER) as f:
        match = re.search(r'#define\s+MXATTN_VERSION\s+"([^"]+)"', f.read())
    assert match, "MXATTN_VERSION not found in the header"
    return match.group(1)


class VersionTest(unittest.TestCase):
    def test_version_matches_header(self):
        self.assertEqual(mxattn.version(), header_version())

    def test_package_version_is_the_header_s(self):
        self.assertEqual(mxattn.__version__, header_version())


class WithoutTorchTest(unittest.TestCase):
    def test_torch_functions_say_they_need_torch(self):
        code = ("import sys; sys.modules['torch'] = None; import mxattn\n"
                "for call in (lambda: mxattn.scaled_dot_product_attention(1, 2, 3),\n"
                "             lambda: mxattn.patch_sdpa(), mxattn.register_op):\n"
                "    try:\n"
                "        call()\n"
                "    except ImportError as e:\n"
                "        assert 'PyTorch' in str(e), e\n"
                "    else:\n"
                "        raise SystemExit('ran without torch')\n")
        result = subprocess.run([sys.executable, "-B", "-c", code], cwd=PYTHON_DIR,
                                capture_output=True, text=True, env=os.environ.copy())
        self.assertEqual(result.returncode, 0, result.stderr)


class QuickStartTest(unittest.TestCase):
    def test_quick_start_runs_without_a_gpu(self):
        script = os.path.join(PYTHON_DIR, "examples", "quickstart.py")
        code = ("import sys, runpy; sys.modules['torch'] = None; "
                f"runpy.run_path({script!r}, run_name='__main__')")
        result = subprocess.run([sys.executable, "-B", "-c", code], cwd=PYTHON_DIR,
                                capture_output=True, text=True, env=os.environ.copy())
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"mxattn {header_version()} from", result.stdout)
        self.assertIn("no PyTorch with a CUDA GPU here", result.stdout)


class BuildBackendTest(unittest.TestCase):
    """python/build_backend/mxattn_build.py, called as pip calls it."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(PYTHON_DIR, "build_backend"))
        try:
            import mxattn_build
        finally:
            sys.path.pop(0)
        cls.backend = mxattn_build

    def build(self, **settings):
        built = os.environ.get("MXATTN_LIB")
        if not built:
            self.skipTest("MXATTN_LIB is not set")
        out = tempfile.mkdtemp(prefix="mxattn-wheel-")
        self.addCleanup(shutil.rmtree, out, ignore_errors=True)
        settings.setdefault("build-dir", os.path.dirname(built))
        name = self.backend.build_wheel(out, settings)
        return name, zipfile.ZipFile(os.path.join(out, name))

    def check_record(self, wheel):
        """Every file is in RECORD with its sha256 and size, RECORD itself without."""
        dist_info = f"mxattn-{header_version()}.dist-info"
        rows = [line.split(",") for line in
                wheel.read(f"{dist_info}/RECORD").decode().splitlines()]
        recorded = {path: (digest, size) for path, digest, size in rows}
        self.assertEqual(set(recorded), set(wheel.namelist()))
        self.assertEqual(recorded.pop(f"{dist_info}/RECORD"), ("", ""))
        for path, (digest, size) in recorded.items():
            data = wheel.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            self.assertEqual(digest, "sha256=" + expected.decode(), path)
            self.assertEqual(int(size), len(data), path)
        return dist_info

    def test_requires_nothing(self):
        self.assertEqual(self.backend.get_requires_for_build_wheel(), [])
        self.assertEqual(self.backend.get_requires_for_build_editable(), [])
        self.assertEqual(self.backend.get_requires_for_build_sdist(), [])

    def test_wheel_bundles_the_library_and_what_it_needs(self):
        name, wheel = self.build()
        self.assertTrue(name.startswith(f"mxattn-{header_version()}-py3-none-linux_"), name)
        dist_info = self.check_record(wheel)
        names = set(wheel.namelist())
        self.assertTrue({"mxattn/__init__.py", "mxattn/_native.py", "mxattn/_sdpa.py",
                         "mxattn/_version.py", "mxattn/lib/libmxattn.so"} <= names, names)
        libs = {n for n in names if n.startswith("mxattn/lib/")}
        self.assertTrue(any(n.startswith("mxattn/lib/liblua") for n in libs), libs)
        self.assertTrue(any(n.startswith("mxattn/lib/libsqlite3") for n in libs), libs)
        with open(os.environ["MXATTN_LIB"], "rb") as f:
            self.assertEqual(wheel.read("mxattn/lib/libmxattn.so"), f.read())
        self.assertIn(f'__version__ = "{header_version()}"',
                      wheel.read("mxattn/_version.py").decode())
        self.assertIn("Root-Is-Purelib: false", wheel.read(f"{dist_info}/WHEEL").decode())

    def test_bundle_no_makes_a_pure_wheel(self):
        name, wheel = self.build(bundle="no")
        self.assertEqual(name, f"mxattn-{header_version()}-py3-none-any.whl")
        self.check_record(wheel)
        self.assertFalse([n for n in wheel.namelist() if n.startswith("mxattn/lib/")])

    def test_missing_build_dir_is_a_clear_error(self):
        with self.assertRaises(self.backend.BuildError) as caught:
            self.build(**{"build-dir": "/nonexistent/build"})
        self.assertIn("libmxattn.so not found", str(caught.exception))


class ErrorTest(unittest.TestCase):
    def test_every_status_has_a_name(self):
        for status in mxattn.Status:
            self.assertNotEqual(_native.status_name(status), "unknown status", status.name)

    def test_value_statuses_are_value_errors(self):
        value_statuses = {mxattn.Status.ERROR_INVALID_VALUE, mxattn.Status.ERROR_NULL_POINTER,
                          mxattn.Status.ERROR_MISALIGNED}
        for status in mxattn.Status:
            if status == mxattn.Status.OK:
                continue
            error = _native.error_for(status, "the message")
            self.assertIsInstance(error, mxattn.MxattnError)
            self.assertIsInstance(error, RuntimeError)
            self.assertEqual(isinstance(error, ValueError), status in value_statuses, status.name)
            self.assertEqual(error.status, int(status))
            self.assertEqual(error.status_name, _native.status_name(status))
            self.assertEqual(error.message, "the message")
            self.assertIn("the message", str(error))

    def test_ok_does_not_raise(self):
        _native.check(0)

    def test_problem_check_rejects_head_dim_zero(self):
        problem = _native.Problem()
        lib = _native.lib
        status = call_or_skip(self, lambda: lib.mxattn_problem_init(ctypes.byref(problem),
                                                                      b"f16", 64))
        _native.check(status)
        problem.batch, problem.heads_q, problem.heads_kv = 1, 2, 2
        problem.seq_q = problem.seq_k = 128
        problem.head_dim = 0
        status = call_or_skip(self, lambda: lib.mxattn_problem_check(ctypes.byref(problem)))
        with self.assertRaises(ValueError) as caught:
            _native.check(status)
        error = caught.exception
        self.assertIsInstance(error, mxattn.MxattnValueError)
        self.assertEqual(error.status, mxattn.Status.ERROR_INVALID_VALUE)
        self.assertEqual(error.status_name, "invalid value")
        self.assertTrue(error.message, "the library gave no message")
        self.assertEqual(error.message, mxattn.last_error())

    def test_families_and_params_come_from_the_library(self):
        families = mxattn.families()
        self.assertEqual(families[0], "f16")
        self.assertIn("int8-fp8", families)
        self.assertEqual(mxattn.FAMILIES, families)
        table = {p["name"]: p for p in mxattn.params()}
        self.assertEqual(table["family"]["legal"].split("|"), list(families))
        self.assertEqual(table["block_n"]["role"], "knob")
        self.assertEqual((table["head_dim"]["min"], table["head_dim"]["max"]), (8, 256))
        self.assertEqual(table["v_terms"]["families"], ("int8-fp8",))

    def test_query_rejects_malformed_filter(self):
        try:
            mxattn.query("this filter has no equals sign")
        except NotImplementedError as e:
            self.skipTest(str(e))
        except mxattn.MxattnError as e:
            if e.status != mxattn.Status.ERROR_INVALID_VALUE:
                # e.g. no driver: the context could not be made on this machine.
                self.skipTest(f"query could not run here: {e}")
            self.assertIsInstance(e, ValueError)
            self.assertEqual(e.status_name, "invalid value")
            self.assertTrue(e.message)
        else:
            self.fail("a malformed filter was accepted")


class ProblemTest(unittest.TestCase):
    def spec(self, **changes):
        fields = dict(device=0, family="int8-f16", head_dim=80, batch=2, heads_q=8,
                      heads_kv=2, seq_q=100, seq_k=300, causal=_native.CAUSAL_BOTTOM_RIGHT,
                      dtype=_native.DTYPE_BF16, layout=_native.LAYOUT_BNHD,
                      q_strides=(1, 2, 3), k_strides=(4, 5, 6), v_strides=(7, 8, 9),
                      o_strides=(10, 11, 12), sm_scale=0.125, return_lse=True)
        fields.update(changes)
        return _plans.ProblemSpec(**fields)

    def test_spec_fills_every_field(self):
        try:
            problem = self.spec().to_struct()
        except NotImplementedError as e:
            self.skipTest(str(e))
        self.assertEqual(problem.family, b"int8-f16")
        self.assertEqual((problem.head_dim, problem.batch, problem.heads_q, problem.heads_kv,
                          problem.seq_q, problem.seq_k), (80, 2, 8, 2, 100, 300))
        self.assertEqual(problem.causal, _native.CAUSAL_BOTTOM_RIGHT)
        self.assertEqual((problem.dtype, problem.out_dtype), (1, 1))
        self.assertEqual(problem.layout, _native.LAYOUT_BNHD)
        self.assertEqual((problem.o_strides.batch, problem.o_strides.head,
                          problem.o_strides.seq), (10, 11, 12))
        self.assertAlmostEqual(problem.sm_scale, 0.125)
        self.assertEqual(problem.return_lse, 1)
        self.assertEqual(problem.v_terms, 1)
        self.assertEqual(self.spec(v_terms=2).to_struct().v_terms, 2)
        self.assertNotEqual(self.spec(), self.spec(v_terms=2))

    def test_specs_differing_only_in_strides_are_different_keys(self):
        self.assertEqual(self.spec(), self.spec())
        self.assertNotEqual(self.spec(), self.spec(k_strides=(4, 5, 7)))
        self.assertEqual(len({self.spec(), self.spec(), self.spec(sm_scale=0.5)}), 2)


class FakeTensor:
    """Shape and strides only: enough for the stride helpers."""

    def __init__(self, shape, strides):
        self.shape, self._strides = tuple(shape), tuple(strides)

    def stride(self, i):
        return self._strides[i]


class StrideTest(unittest.TestCase):
    def test_hnd_contiguous(self):
        t = FakeTensor((2, 8, 100, 64), (8 * 100 * 64, 100 * 64, 64, 1))
        self.assertEqual(_torch_api._strides(t, "HND"), (8 * 100 * 64, 100 * 64, 64))

    def test_nhd_puts_head_before_seq(self):
        t = FakeTensor((2, 100, 8, 64), (100 * 8 * 64, 8 * 64, 64, 1))
        self.assertEqual(_torch_api._strides(t, "NHD"), (100 * 8 * 64, 64, 8 * 64))

    def test_size_one_dims_get_contiguous_strides(self):
        # torch may report any stride for a dim of size 1.
        t = FakeTensor((1, 1, 100, 64), (0, 12345, 64, 1))
        self.assertEqual(_torch_api._strides(t, "HND"), (100 * 64, 100 * 64, 64))

    def test_slice_keeps_parent_strides(self):
        # q = big[:, 2:6] of big [2, 16, 100, 64]
        t = FakeTensor((2, 4, 100, 64), (16 * 100 * 64, 100 * 64, 64, 1))
        self.assertEqual(_torch_api._strides(t, "HND"), (16 * 100 * 64, 100 * 64, 64))

    def test_output_strides_are_contiguous(self):
        self.assertEqual(_torch_api._output_strides((2, 100, 8, 64), "NHD"),
                         (100 * 8 * 64, 64, 8 * 64))


# --- struct layout against the C compiler ------------------------------------------

STRUCTS = {"mxattn_strides": _native.Strides, "mxattn_problem": _native.Problem,
           "mxattn_options": _native.Options, "mxattn_plan_info": _native.PlanInfo,
           "mxattn_param": _native.Param}


# The Python names of the header's enum values, by their C names.
ENUMS = {f"MXATTN_{status.name}": int(status) for status in _native.Status}
ENUMS.update(MXATTN_F16=_native.DTYPE_F16, MXATTN_BF16=_native.DTYPE_BF16,
             MXATTN_LAYOUT_BHND=_native.LAYOUT_BHND, MXATTN_LAYOUT_BNHD=_native.LAYOUT_BNHD,
             MXATTN_CAUSAL_NONE=_native.CAUSAL_NONE, MXATTN_CAUSAL_TOP_LEFT=_native.CAUSAL_TOP_LEFT,
             MXATTN_CAUSAL_BOTTOM_RIGHT=_native.CAUSAL_BOTTOM_RIGHT)


def layout_program():
    """C source printing "struct field offset" lines, "struct sizeof size"
    and "enum NAME value"."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "mxattn.h"',
             "int main(void) {"]
    for c_name in ENUMS:
        lines.append(f'  printf("enum {c_name} %d\\n", (int){c_name});')
    for c_name, py_struct in STRUCTS.items():
        lines.append(f'  printf("{c_name} sizeof %zu\\n", sizeof({c_name}));')
        for field, _ in py_struct._fields_:
            lines.append(f'  printf("{c_name} {field} %zu\\n", offsetof({c_name}, {field}));')
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


class CompiledHeaderTest(unittest.TestCase):
    """Structs and enums as a C compiler lays out include/mxattn.h."""

    @classmethod
    def setUpClass(cls):
        cls.c_values = compile_and_run_layout_program()

    def setUp(self):
        if self.c_values is None:
            self.skipTest("no C compiler or no header")

    def test_enums_match_c(self):
        for c_name, value in ENUMS.items():
            self.assertEqual(value, self.c_values[("enum", c_name)], c_name)

    def test_statuses_are_all_mirrored(self):
        with open(HEADER) as f:
            header = f.read()
        c_statuses = set(re.findall(r"\b(MXATTN_(?:OK|ERROR_[A-Z_]+))\b", header))
        self.assertEqual(c_statuses, {f"MXATTN_{s.name}" for s in _native.Status})

    def test_structs_match_c(self):
        for c_name, py_struct in STRUCTS.items():
            with self.subTest(struct=c_name):
                self.assertEqual(ctypes.sizeof(py_struct), self.c_values[(c_name, "sizeof")])
                for field, _ in py_struct._fields_:
                    self.assertEqual(getattr(py_struct, field).offset,
                                     self.c_values[(c_name, field)], f"{c_name}.{field}")


def compile_and_run_layout_program():
    """{(struct or "enum", field or name): value}, or None without cc or header."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None or not os.path.exists(HEADER):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        source, program = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
        with open(source, "w") as f:
            f.write(layout_program())
        subprocess.run([cc, "-std=c11", "-I", os.path.dirname(HEADER), source, "-o", program],
                       check=True, capture_output=True)
        output = subprocess.run([program], check=True, capture_output=True, text=True).stdout
    c_values = {}
    for line in output.splitlines():
        kind, name, value = line.split()
        c_values[(kind, name)] = int(value)
    return c_values


if __name__ == "__main__":
    unittest.main()
