"""The checks a family's config reader makes of config.json's fields, each
failure a BadInput naming the file, the field and its value, in the words
the Go side uses (model/config*.go), so that both refuse alike."""

import math

from safetensors_io import BadInput


class Fields:
    """Checks of cfg (config.json with the config class's defaults) read
    from path."""

    def __init__(self, cfg, path):
        self.cfg, self.path = cfg, path

    def bad(self, field, why):
        raise BadInput(f"{self.path}: field {field!r} = {self.cfg.get(field)!r}: {why}")

    def posint(self, field):
        v = self.cfg.get(field)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            self.bad(field, "must be a positive integer")
        return v

    def posnum(self, field):
        v = self.cfg.get(field)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0 or math.isinf(v):
            self.bad(field, "must be a positive finite number")
        return float(v)
