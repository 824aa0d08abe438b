"""Progress of a reference's passes on stderr (an 8B model's set takes the
better part of an hour): on a terminal one line rewritten after each layer;
otherwise (a log, CI) one line a pass, for passes slow enough to wait on."""

import sys
import time

# A pass quicker than this prints nothing to a log: the tiny models' sets,
# made by the dozen in tests and make references, stay quiet.
LOG_AFTER_S = 5.0


class Progress:
    def __init__(self, what, out=None, clock=time.monotonic):
        self.what, self.out, self.clock = what, out or sys.stderr, clock
        self.tty = hasattr(self.out, "isatty") and self.out.isatty()
        self.t0 = self.start = clock()
        self.line = False

    def __call__(self, n, done, layers, seqs):
        now = self.clock()
        if done == 0:  # a pass begins (the first: the count of "in all" too)
            self.start = now
            if n == 1:
                self.t0 = now
        msg = (f"dump_references: {self.what} pass {n}, {seqs} sequence{'s' if seqs != 1 else ''}: "
               f"layer {done}/{layers}, {_dur(now - self.t0)} in all")
        if self.tty:
            self.out.write("\r\x1b[K" + msg)
            self.line = True
            if done == layers:
                self.out.write("\n")
                self.line = False
        elif done == layers and now - self.start >= LOG_AFTER_S:
            self.out.write(msg + f" (pass {_dur(now - self.start)})\n")
        self.out.flush()


def _dur(s):
    s = int(s)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
