"""A tiny command embedding provider for tests: hashed bag of words, deterministic, fast.

Reads {"model", "texts"} on stdin, writes {"embeddings"}. `fail` as the model name exits 1;
`dim8` gives 8 dimensions instead of 64.
"""

import hashlib
import json
import math
import re
import sys

request = json.load(sys.stdin)
if request["model"] == "fail":
    sys.stderr.write("provider is down\n")
    sys.exit(1)
dimension = 8 if request["model"] == "dim8" else 64
SYNONYMS = {"automobile": "car", "vehicle": "car", "canine": "dog", "puppy": "dog", "feline": "cat", "kitten": "cat"}
vectors = []
for text in request["texts"]:
    vector = [0.0] * dimension
    for word in re.findall(r"\w+", text.lower()):
        word = SYNONYMS.get(word, word)
        slot = int(hashlib.sha256(word.encode()).hexdigest(), 16) % dimension
        vector[slot] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    vectors.append([v / norm for v in vector])
json.dump({"embeddings": vectors}, sys.stdout)
