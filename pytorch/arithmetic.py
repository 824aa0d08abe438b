"""Pins what decides PyTorch's float arithmetic, so that a reference set
written on one x86-64 machine with AVX2 is reproduced bit for bit on any
other, Intel or AMD, with or without AVX-512.

Import this module before numpy or torch: OpenBLAS reads its switches when
the library loads, ATen when it first dispatches.

What changes the bits, measured with Debian's torch 1.13 and OpenBLAS 0.3.21
on the tiny model's reference set (222 files):
  - OpenBLAS's kernel, which its DYNAMIC_ARCH build picks per CPU: SkylakeX
    (chosen on AVX-512 Intel) changed 131 files, Sandybridge 210; Zen uses
    Haswell's kernels and changed none;
  - OpenBLAS's thread count, which defaults to the number of cores: 2 or 4
    threads against 1 changed 123 files;
  - ATen's vector width for layer_norm, softmax and tanh: avx512 changed
    122 files, default 216.
  - numpy's SIMD dispatch for float64 exp, expm1 and log1p: its AVX-512
    kernels (chosen on AVX-512 CPUs, Intel's and Zen 4) changed 1394 of
    the corpus set's 1701 KL values in the last bits (the case sets use
    none of them). NPY_DISABLE_CPU_FEATURES turns off, at numpy's import,
    the AVX-512 features the CPU has, so every machine takes the AVX2
    kernels; naming only features the CPU has keeps numpy from refusing.
OMP_NUM_THREADS (with torch held at one thread) and oneDNN's
DNNL_MAX_CPU_ISA changed nothing; they are left alone.
"""

import os
import re
import sys

PINS = {
    "OPENBLAS_CORETYPE": "Haswell",
    "OPENBLAS_NUM_THREADS": "1",
    "ATEN_CPU_CAPABILITY": "avx2",
}
TORCH_THREADS = 1

# LLORCH_REFERENCE_ARITHMETIC=native leaves the machine's own choices in
# place; the manifest then records what was used. It exists to test the
# verification's fallback, not for making reference sets.
MODE_VAR = "LLORCH_REFERENCE_ARITHMETIC"

# The entries of the record that decide the bits (not "pinned", which says
# only how they were reached).
IDENTITY = ("machine", "torch", "blas", "blas_core", "blas_threads", "aten_cpu_capability", "torch_threads")

# NUMPY_VAR turns numpy's dispatch targets off at its import: those of
# NUMPY_AVX512 (numpy's names) whose /proc/cpuinfo flags the CPU has.
NUMPY_VAR = "NPY_DISABLE_CPU_FEATURES"
NUMPY_AVX512 = {
    "AVX512F": ("avx512f",),
    "AVX512CD": ("avx512cd",),
    "AVX512_KNL": ("avx512er", "avx512pf"),
    "AVX512_KNM": ("avx512_4fmaps", "avx512_4vnniw", "avx512_vpopcntdq"),
    "AVX512_SKX": ("avx512vl", "avx512bw", "avx512dq"),
    "AVX512_CLX": ("avx512_vnni",),
    "AVX512_CNL": ("avx512ifma", "avx512vbmi"),
    "AVX512_ICL": ("avx512_vbmi2", "avx512_bitalg", "avx512_vpopcntdq"),
    "AVX512_SPR": ("avx512_fp16",),
}


def cpu_flags():
    """The CPU's /proc/cpuinfo flags (empty if it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return set(next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), []))
    except OSError:
        return set()


def _numpy_avx512():
    """The numpy AVX-512 features this CPU has, space-separated ('' if none)."""
    flags = cpu_flags()
    return " ".join(n for n, need in NUMPY_AVX512.items() if all(x in flags for x in need))


pinned = os.environ.get(MODE_VAR, "pinned") != "native"
# Set before anything loads OpenBLAS; a process that already loaded numpy or
# torch keeps what it had, and record() reports what really happened.
loaded_early = sorted(m for m in ("numpy", "torch") if m in sys.modules)
overridden = {}
if pinned:
    for k, v in PINS.items():
        if os.environ.get(k, v) != v:
            overridden[k] = os.environ[k]
        os.environ[k] = v
    if avx512 := _numpy_avx512():
        os.environ[NUMPY_VAR] = avx512


def _openblas():
    """(config string, core name, threads) of the OpenBLAS this process
    loaded, or Nones when it is not OpenBLAS or not findable."""
    import ctypes
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = sorted({ln.split()[-1] for ln in f if "blas" in ln.rsplit("/", 1)[-1]})
    except OSError:
        return None, None, None
    for p in paths:
        try:
            lib = ctypes.CDLL(p)
            core, cfg = lib.openblas_get_corename, lib.openblas_get_config
        except (OSError, AttributeError):
            continue
        core.restype = cfg.restype = ctypes.c_char_p
        return cfg().decode(), core().decode(), int(lib.openblas_get_num_threads())
    return None, None, None


def setup_torch():
    """Thread count and deterministic algorithms: the switches torch takes
    through its API rather than the environment."""
    import torch
    torch.set_num_threads(TORCH_THREADS)
    torch.use_deterministic_algorithms(True)


def record():
    """What decided the arithmetic in this process, read back from the
    libraries rather than from what was asked for."""
    import platform

    import torch
    cfg, core, threads = _openblas()
    m = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    return {
        "pinned": pinned,
        "machine": platform.machine(),
        "torch": torch.__version__,
        "blas": cfg or "unknown (not OpenBLAS)",
        "blas_core": core,
        "blas_threads": threads,
        "aten_cpu_capability": m.group(1) if m else None,
        "torch_threads": torch.get_num_threads(),
    }


def unmet(rec):
    """The pins this process asked for but did not get, as readable lines."""
    if not rec["pinned"]:
        return [f"{MODE_VAR}=native: nothing pinned"]
    out = []
    if loaded_early:
        out.append(f"{', '.join(loaded_early)} loaded before the pins were set")
    if rec["blas_core"] != PINS["OPENBLAS_CORETYPE"]:
        out.append(f"OpenBLAS kernel {rec['blas_core'] or 'unknown'} ({rec['blas']}), "
                   f"not {PINS['OPENBLAS_CORETYPE']}")
    if (rec["aten_cpu_capability"] or "").lower() != PINS["ATEN_CPU_CAPABILITY"]:
        out.append(f"ATen CPU capability {rec['aten_cpu_capability']}, not {PINS['ATEN_CPU_CAPABILITY'].upper()}")
    if rec["blas_threads"] not in (None, int(PINS["OPENBLAS_NUM_THREADS"])):
        out.append(f"OpenBLAS threads {rec['blas_threads']}, not {PINS['OPENBLAS_NUM_THREADS']}")
    if rec["torch_threads"] != TORCH_THREADS:
        out.append(f"torch threads {rec['torch_threads']}, not {TORCH_THREADS}")
    return out


def identity(rec):
    """The part of a record two sets must share to be bit-identical; None
    for a set that records nothing."""
    if not isinstance(rec, dict):
        return None
    return {k: rec.get(k) for k in IDENTITY}


def describe(rec):
    if not isinstance(rec, dict):
        return "not recorded"
    blas = " ".join(str(rec.get("blas")).split()[:2])
    return (f"{blas} (kernel {rec.get('blas_core')}, {rec.get('blas_threads')} thread(s)), "
            f"ATen {rec.get('aten_cpu_capability')}, torch {rec.get('torch')} "
            f"({rec.get('torch_threads')} thread(s)), {rec.get('machine')}"
            + ("" if rec.get("pinned") else ", not pinned"))
