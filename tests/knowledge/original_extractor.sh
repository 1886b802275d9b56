#!/bin/sh
# An extraction program written to the original MemCastle's documented command contract: it reads
# {"model", "vocabulary": {"kinds", "predicates"}, "texts": ["…"]} and answers {"extractions": [...]}, one per text.
# Nothing of MemCastle is imported: the system python3 parses the JSON.
exec python3 -c '
import json, re, sys
request = json.load(sys.stdin)
assert all(isinstance(t, str) for t in request["texts"]), "texts must be strings"
assert "works_on" in request["vocabulary"]["predicates"]
out = []
for text in request["texts"]:
    m = re.search(r"([A-Z][a-z]+) works on ([A-Z][A-Za-z]+)", text)
    if m:
        out.append({"entities": [{"name": m.group(1), "kind": "person"}, {"name": m.group(2), "kind": "project"}],
                    "relations": [{"subject": m.group(1), "predicate": "works_on", "object": m.group(2),
                                   "confidence": 0.9}]})
    else:
        out.append({"entities": [], "relations": []})
json.dump({"extractions": out}, sys.stdout)
'
