# Regenerates the Python-reference fixtures for pyjson_test.go:
#   python3 gen_pyjson.py
# floats.txt: "<float64 bits hex> <repr>" for random doubles across exponents.
# mixed.json: a nested document as json.dumps(indent=2, ensure_ascii=True) writes it.
import json, random, struct

rnd = random.Random(20260715)
lines = []
for _ in range(4000):
    kind = rnd.random()
    if kind < 0.5:
        bits = rnd.getrandbits(64)
        f = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if f != f or f in (float("inf"), float("-inf")):
            continue
    elif kind < 0.8:
        f = rnd.uniform(-1, 1) * 10 ** rnd.randint(-8, 20)
    else:
        f = round(rnd.randint(0, 10**6) / rnd.randint(1, 10**3), rnd.randint(0, 6))
    bits = struct.unpack("<Q", struct.pack("<d", f))[0]
    lines.append("%016x %s" % (bits, repr(f)))
open("floats.txt", "w").write("\n".join(lines) + "\n")

doc = [
    {
        "id": "m01_s001_v01",
        "text": "caf\u00e9 \u65e5\u672c \U0001F600 <b>&amp;</b> \"q\" \\ \x00\x1f\x7f \u2028",
        "ints": [0, -1, 123456789012345678901234567890, 7],
        "floats": [0.0, 1.0, 0.5, 1e-05, 1e16, 1e15, 2 / 3, -0.0, 123.0],
        "nested": {"empty_list": [], "empty_obj": {}, "null": None, "t": True, "f": False,
                   "deep": [[[]], [{}], [{"a": [1, {"b": []}]}]]},
        "z_last": "order kept",
        "a_first_after": 1,
    },
    [],
    {},
    "top-level string in array",
]
open("mixed.json", "w").write(json.dumps(doc, indent=2, ensure_ascii=True))
