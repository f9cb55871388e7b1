#!/usr/bin/env python3
"""Validates a command's JSON output against its schema in docs/schemas.

Usage: validate-json.py SCHEMA-NAME FILE   (e.g. `validate-json.py show out.json`)
Every docs/schemas/*.schema.json is registered by its $id, so schemas can refer to each other.
Needs `jsonschema` (the test command installs it into .venv-fit). Exit status 1 with the errors
when the output does not validate.
"""
import json
import pathlib
import sys

import jsonschema
from referencing import Registry, Resource

root = pathlib.Path(__file__).resolve().parent.parent / "docs" / "schemas"
schemas = {path.name.removesuffix(".schema.json"): json.loads(path.read_text()) for path in root.glob("*.schema.json")}
registry = Registry().with_resources((schema["$id"], Resource.from_contents(schema)) for schema in schemas.values())
name, file = sys.argv[1], sys.argv[2]
instance = json.loads(pathlib.Path(file).read_text())
validator = jsonschema.Draft202012Validator(schemas[name], registry=registry)
errors = sorted(validator.iter_errors(instance), key=lambda error: list(error.absolute_path))
for error in errors[:20]:
    print(f"{name}: {'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message[:300]}", file=sys.stderr)
sys.exit(1 if errors else 0)
