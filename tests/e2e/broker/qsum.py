#!/usr/bin/env python3
"""qsum.py JSON...: the per-resource sum of Kubernetes quantity maps ({"cpu": "1500m", ...}), as exact
integers in the resource's smallest unit (millis for cpu, units otherwise), printed as one JSON object with
sorted keys. The broker e2e checks the aggregator's sum with it: an independent reading of the quantities."""
import json
import re
import sys
from fractions import Fraction

SUFFIX = {"": 1, "m": Fraction(1, 1000), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
          "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity(s):
    m = re.fullmatch(r"([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)(?:([eE][+-]?[0-9]+)|(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?)", s)
    if not m:
        sys.exit("qsum: not a quantity: %r" % s)
    v = Fraction(m.group(1))
    if m.group(2):
        v *= Fraction(10) ** int(m.group(2)[1:])
    else:
        v *= SUFFIX[m.group(3) or ""]
    return v


total = {}
for arg in sys.argv[1:]:
    for k, s in json.loads(arg).items():
        total[k] = total.get(k, 0) + quantity(s)
out = {}
for k, v in total.items():
    scaled = v * 1000 if k == "cpu" else v
    out[k] = int(scaled) if scaled == int(scaled) else str(scaled)
print(json.dumps(out, sort_keys=True))
