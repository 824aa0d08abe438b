"""The committed reference set reproduces on this machine whatever BLAS
kernel the environment forces, and verify-references still catches a real
change when it cannot compare bit for bit.

Regenerates the tiny model's set several times in subprocesses (each one
must load OpenBLAS afresh to see its environment): about 25 s.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import arithmetic  # noqa: E402,F401  first: pins OpenBLAS before numpy loads it
import numpy as np  # noqa: E402

MODEL = os.path.join(ROOT, "testdata", "tiny-gpt2")
CASES = os.path.join(ROOT, "testdata", "cases.json")
COMMITTED = os.path.join(ROOT, "testdata", "references", "tiny-gpt2")


# The machine's other kernel: AVX-512 Intel machines get SkylakeX by
# default; a CPU without AVX-512 cannot run it, so it gets Sandybridge's.
AVX512 = "avx512f" in arithmetic.cpu_flags()
OTHER_CORE, OTHER_ATEN = ("SkylakeX", "avx512") if AVX512 else ("Sandybridge", "default")

# Run dump_references with LayerNorm's eps changed in the forward only: the
# manifest still says 1e-5, so only the arithmetic can give it away.
EPS_PATCH = """
import sys
sys.path.insert(0, {here!r})
import arithmetic, gpt2_torch, dump_references
init = gpt2_torch.GPT2.__init__
def patched(self, *a):
    init(self, *a)
    self.eps = 1e-6
gpt2_torch.GPT2.__init__ = patched
sys.exit(dump_references.main(sys.argv[1:]))
"""


def environment(**kv):
    env = {k: v for k, v in os.environ.items()
           if k not in arithmetic.PINS and k not in (arithmetic.MODE_VAR, arithmetic.NUMPY_VAR)}
    env.update(kv)
    return env


def regenerate(out, env, eps_patch=False):
    args = ["--model", MODEL, "--cases", CASES, "--out", out]
    cmd = [sys.executable, "-c", EPS_PATCH.format(here=HERE)] if eps_patch else \
        [sys.executable, os.path.join(HERE, "dump_references.py")]
    r = subprocess.run(cmd + args, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"dump_references failed: {r.stdout}{r.stderr}")
    return r.stderr


def verify(committed, regenerated):
    r = subprocess.run([sys.executable, os.path.join(HERE, "compare_references.py"), committed, regenerated],
                       env=environment(), capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def read(path):
    with open(path, "rb") as f:
        return f.read()


def files_differ(a, b):
    return sum(1 for d, _, names in os.walk(a) for n in names if n.endswith(".npy") and
               read(os.path.join(d, n)) != read(os.path.join(b, os.path.relpath(os.path.join(d, n), a))))


class ReproducibilityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.sets = {}
        # A hostile environment: another kernel, vector width and thread count.
        forced = dict(OPENBLAS_CORETYPE=OTHER_CORE, ATEN_CPU_CAPABILITY=OTHER_ATEN, OPENBLAS_NUM_THREADS="2")
        plans = {
            "haswell": (environment(OPENBLAS_CORETYPE="Haswell"), False),
            "forced": (environment(**forced), False),
            "native": (environment(**forced, **{arithmetic.MODE_VAR: "native"}), False),
            "eps": (environment(**forced), True),
            "eps-native": (environment(**forced, **{arithmetic.MODE_VAR: "native"}), True),
        }
        cls.notes = {}
        for name, (env, patch) in plans.items():
            cls.sets[name] = os.path.join(cls.tmp, name)
            cls.notes[name] = regenerate(cls.sets[name], env, patch)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_pinned_sets_are_bit_identical_under_any_forced_kernel(self):
        for name in ("haswell", "forced"):
            with self.subTest(name):
                rc, out = verify(COMMITTED, self.sets[name])
                self.assertEqual(rc, 0, out)
                self.assertIn("(exact), 0 differences", out)
        self.assertIn(f"OPENBLAS_CORETYPE={OTHER_CORE} from the environment replaced", self.notes["forced"])

    def test_unpinned_kernel_falls_back_to_the_error_budget(self):
        native = self.sets["native"]
        self.assertGreater(files_differ(COMMITTED, native), 0, "the forced kernel changed nothing: no test")
        self.assertIn("not pinned", self.notes["native"])
        rc, out = verify(COMMITTED, native)
        self.assertEqual(rc, 0, out)
        self.assertIn("(budget), 0 differences", out)
        self.assertIn(f"{arithmetic.MODE_VAR}=native", out)
        self.assertIn(f"'Haswell' vs '{OTHER_CORE}'", out)

    def test_a_different_eps_fails_in_both_modes(self):
        for committed, regenerated, mode in ((COMMITTED, self.sets["eps"], "exact"),
                                             (COMMITTED, self.sets["eps-native"], "budget")):
            with self.subTest(mode):
                rc, out = verify(committed, regenerated)
                self.assertEqual(rc, 1, out)
                self.assertIn(f"({mode})", out)
                self.assertIn("l00_ln_1.f64.npy: float64 twin differs" if mode == "budget"
                              else "l00_ln_1.npy", out)

    def test_a_tampered_tensor_fails_in_both_modes(self):
        tampered = os.path.join(self.tmp, "tampered")
        shutil.copytree(COMMITTED, tampered)
        # float32: twice the checkpoints' tolerance (1e-4 + 1e-4*|x|); the
        # budget mode's threshold, 4x the tensor's float32 error, is at most
        # 1.2e-4 in this set. The twin: 1e-8 relative, far below float32.
        for rel, scale in (("long/l01_mlp_out.npy", 2e-4), ("story/ln_f.f64.npy", 1e-8)):
            p = os.path.join(tampered, rel)
            x = np.load(p)
            x[3, 5] += scale * (1 + abs(x[3, 5]))
            with open(p, "wb") as f:
                np.lib.format.write_array(f, x, version=(1, 0), allow_pickle=False)
        for name, mode in (("haswell", "exact"), ("native", "budget")):
            with self.subTest(mode):
                rc, out = verify(tampered, self.sets[name])
                self.assertEqual(rc, 1, out)
                self.assertIn(f"({mode}), 2 differences", out)
                self.assertIn("DIFFERENCE: long/l01_mlp_out.npy", out)
                self.assertIn("DIFFERENCE: story/ln_f.f64.npy", out)


if __name__ == "__main__":
    unittest.main()


NUMPY_SIMD = """
import sys
sys.path.insert(0, {here!r})
import arithmetic
import numpy as np
from numpy.core._multiarray_umath import __cpu_features__ as have
print(" ".join(sorted(k for k in arithmetic.NUMPY_AVX512 if have.get(k))))  # the dispatch targets
"""


class NumpyDispatchTest(unittest.TestCase):
    """numpy's AVX-512 kernels for float64 exp, expm1 and log1p give other
    last bits than its AVX2 ones (the corpus set's KL values on Zen 4 and
    Intel), so the pins turn them off wherever the CPU has them."""

    def test_pinned_numpy_takes_no_avx512_kernel(self):
        r = subprocess.run([sys.executable, "-c", NUMPY_SIMD.format(here=HERE)], env=environment(),
                           capture_output=True, text=True, check=True)
        self.assertEqual(r.stdout.strip(), "", "numpy still dispatches to AVX-512 under the pins")

    def test_native_mode_leaves_numpy_alone(self):
        r = subprocess.run([sys.executable, "-c", NUMPY_SIMD.format(here=HERE)],
                           env=environment(**{arithmetic.MODE_VAR: "native"}), capture_output=True, text=True, check=True)
        self.assertEqual(bool(r.stdout.strip()), AVX512, r.stdout)
