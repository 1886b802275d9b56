"""A command extraction provider for the tests (SPEC §4): JSON on stdin, {"results"} on stdout.

Each text is read line by line: `ENTITY name|kind` names an entity and `CLAIM subject|predicate|object|confidence`
claims a relation, so a test states exactly what the "model" answers, confidence included.

    extractor.py [--record FILE] [--fail | --hang | --short | --fail-on WORD]

--record appends every request it receives to FILE as one JSON line; --fail exits 3 with a message on stderr;
--hang never answers; --short answers one result fewer than it was given texts; --fail-on fails only a batch with a
text containing WORD.
"""

import json
import sys
import time

args = sys.argv[1:]
record = None
mode = None
marker = None
while args:
    arg = args.pop(0)
    if arg == "--record":
        record = args.pop(0)
    elif arg == "--fail-on":
        mode, marker = "fail-on", args.pop(0)
    else:
        mode = arg.removeprefix("--")

request = json.load(sys.stdin)
texts = request["texts"]
if record:
    with open(record, "a", encoding="utf-8") as out:
        out.write(json.dumps(request) + "\n")

if mode == "fail" or (mode == "fail-on" and any(marker in t["text"] for t in texts)):
    print(f"model {request['model']} is not loaded", file=sys.stderr)
    sys.exit(3)
if mode == "hang":
    time.sleep(60)


def read(text):
    entities, relations = [], []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("ENTITY "):
            name, kind = line[len("ENTITY ") :].split("|")
            entities.append({"name": name, "kind": kind})
        elif line.startswith("CLAIM "):
            subject, predicate, object_, confidence = line[len("CLAIM ") :].split("|")
            relations.append(
                {"subject": subject, "predicate": predicate, "object": object_, "confidence": float(confidence)}
            )
    return {"entities": entities, "relations": relations}


results = [{"id": t["id"], **read(t["text"])} for t in texts]
if mode == "short":
    results = results[:-1]
json.dump({"results": results}, sys.stdout)
