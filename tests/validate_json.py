#!/usr/bin/env python3
"""Validate JSON documents against a JSON Schema (draft 2020-12).

    validate_json.py SCHEMA FILE...

Each FILE holds one JSON document (an aitune command's --json output, a
tuned folder's report.json or decision.json). Exits 1 naming the file, the
path inside it and the rule it breaks; 0 when all validate.
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("validate_json: the Python package jsonschema is missing "
             "(scripts/deps.sh test installs it into .venv)")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    bad = 0
    for path in sys.argv[2:]:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"FAIL: {path}: not JSON: {e}")
            bad += 1
            continue
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
            where = "/".join(str(p) for p in err.path) or "(root)"
            print(f"FAIL: {path}: at {where}: {err.message} (schema {sys.argv[1]})")
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
