"""Tests of progress.py: what a long reference prints while it runs.
Run: /usr/bin/python3 -m unittest test_progress (from pytorch/)"""

import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from progress import Progress  # noqa: E402


class Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


class TestProgress(unittest.TestCase):
    def run_passes(self, tty, pass_s):
        """Two passes of three layers, each layer pass_s/3 seconds, after
        an hour before the first (the float32 passes, for the float64
        twin's) and 10 s between them (saving tensors)."""
        now = [0.0]
        out = Stream(tty)
        p = Progress("float64", out, clock=lambda: now[0])
        now[0] += 3600
        for n in (1, 2):
            p(n, 0, 3, 2)
            for done in (1, 2, 3):
                now[0] += pass_s / 3
                p(n, done, 3, 2)
            now[0] += 10
        return out.getvalue()

    def test_cases(self):
        for name, tty, pass_s, want in [
            ("log, slow passes: a line a pass", False, 90, [
                "dump_references: float64 pass 1, 2 sequences: layer 3/3, 1m30s in all (pass 1m30s)",
                "dump_references: float64 pass 2, 2 sequences: layer 3/3, 3m10s in all (pass 1m30s)"]),
            ("log, quick passes: nothing", False, 3, []),
        ]:
            with self.subTest(name):
                self.assertEqual([line for line in self.run_passes(tty, pass_s).split("\n") if line], want)

    def test_terminal_rewrites_one_line_a_pass(self):
        got = self.run_passes(True, 3)
        self.assertEqual(got.count("\n"), 2)  # a line ends with each pass
        self.assertEqual(got.count("\r\x1b[K"), 8)  # rewritten as a pass begins and after every layer
        self.assertIn("float64 pass 2, 2 sequences: layer 2/3", got)


if __name__ == "__main__":
    unittest.main()
