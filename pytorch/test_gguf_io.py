"""gguf_io's dequantisation against ggml's own (testdata/ggml-quants)."""

import os
import struct
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import gguf_io  # noqa: E402

VECTORS = os.path.join(os.path.dirname(HERE), "testdata", "ggml-quants")


def vectors(name):
    with open(os.path.join(VECTORS, name + ".bin"), "rb") as f:
        b = f.read()
    rows, cols = struct.unpack_from("<II", b)
    parts, off = [], 8
    for _ in range(3):
        (n,) = struct.unpack_from("<I", b, off)
        parts.append(b[off + 4:off + 4 + n])
        off += 4 + n
    return np.frombuffer(parts[0], "<f4"), parts[1], np.frombuffer(parts[2], "<f4"), rows * cols


class DequantizeTest(unittest.TestCase):
    def test_matches_ggml_bit_for_bit(self):
        for t, (name, _, _) in gguf_io.TYPES.items():
            if name in ("F32", "F16", "BF16"):
                continue
            with self.subTest(name):
                _, blocks, want, n = vectors(name)
                got = gguf_io.dequantize(t, blocks, n)
                self.assertEqual(got.dtype, np.float32)
                bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
                self.assertEqual(len(bad), 0, f"{name}: {len(bad)} elements differ, first {bad[:1]}: "
                                              f"{got[bad[:1]]} vs ggml {want[bad[:1]]}")

    def test_short_data_is_an_error(self):
        _, blocks, _, n = vectors("Q4_K")
        with self.assertRaises(gguf_io.BadInput):
            gguf_io.dequantize(12, blocks[1:], n)


if __name__ == "__main__":
    unittest.main()


class ReadTest(unittest.TestCase):
    def setUp(self):
        import tempfile
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir)

    def write(self, b):
        p = os.path.join(self.dir, "x.gguf")
        with open(p, "wb") as f:
            f.write(b)
        return p

    def header(self, n_tensors=0, kv=b"", n_kv=0):
        return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + kv

    def test_bad_files_name_the_problem(self):
        string = lambda s: struct.pack("<Q", len(s)) + s  # noqa: E731
        tensor = string(b"t") + struct.pack("<I", 1) + struct.pack("<Q", 64) + struct.pack("<IQ", 12, 0)
        cases = [
            (b"", "not a GGUF file (empty)"),
            (b"GGML" + b"\0" * 20, "bad magic"),
            (b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "version 1"),
            (b"GGUF" + struct.pack("<I", 3), "truncated"),
            (self.header(1) + string(b"t") + struct.pack("<I", 1) + struct.pack("<Q", 32) + struct.pack("<IQ", 99, 0),
             "ggml type 99"),
            (self.header(1) + tensor, "not whole Q4_K blocks"),
            (self.header(0, string(b"k") + struct.pack("<I", 9) + struct.pack("<IQ", 4, 1 << 40), 1), "longer than the file"),
        ]
        for data, want in cases:
            with self.subTest(want):
                with self.assertRaises(gguf_io.BadInput) as cm:
                    gguf_io.read_gguf(self.write(data))
                self.assertIn(want, str(cm.exception))

    def test_architecture(self):
        """read_architecture reads the metadata alone, and what read_gguf
        refuses in the header it refuses too."""
        string = lambda s: struct.pack("<Q", len(s)) + s  # noqa: E731
        name = string(b"general.name") + struct.pack("<I", 8) + string(b"tiny")
        arch = string(b"general.architecture") + struct.pack("<I", 8) + string(b"qwen3")
        self.assertEqual(gguf_io.read_architecture(self.write(self.header(0, name + arch, 2))), "qwen3")
        self.assertIsNone(gguf_io.read_architecture(self.write(self.header(0, name, 1))))
        for data, want in ((b"", "empty"), (b"GGML" + b"\0" * 20, "bad magic"), (self.header(0, name, 2), "truncated")):
            with self.subTest(want):
                with self.assertRaisesRegex(gguf_io.BadInput, want):
                    gguf_io.read_architecture(self.write(data))
