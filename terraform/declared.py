"""What terraform/ declares, as JSON: the names of the queues, the state
machine (with its definition file and the values templatefile() fills it
with), the buckets and the Glue database, with every variable at its default.

    python terraform/declared.py [DIR]

Needs python-hcl2 (in lossproof's nightly virtualenv). Evaluates only what
these names use: string templates over `var.*` defaults; anything else is an
error naming the expression, never a guess. tests/nightly.rs compares the
output with what `lossproof nightly` creates on moto.
"""

import glob
import json
import os
import re
import sys

import hcl2


def load(folder):
    merged = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.tf"))):
        with open(path) as handle:
            for key, blocks in hcl2.load(handle).items():
                if isinstance(blocks, list):
                    merged.setdefault(key, []).extend(blocks)
    return merged


def unquote(text):
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def evaluate(expression, variables):
    """A quoted template like "${var.name_prefix}-lake", with var.* only."""
    text = unquote(expression)

    def substitute(match):
        name = match.group(1)
        if name not in variables:
            raise SystemExit(f"declared.py: no default for var.{name} in {expression}")
        return variables[name]

    value = re.sub(r"\$\{var\.([a-z_]+)\}", substitute, text)
    if "${" in value:
        raise SystemExit(f"declared.py: cannot evaluate {expression}")
    return value


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    tf = load(folder)
    variables = {}
    for block in tf.get("variable", []):
        for name, body in block.items():
            default = body.get("default")
            if isinstance(default, str):
                variables[unquote(name)] = unquote(default)
    resources = {}
    for block in tf.get("resource", []):
        for kind, named in block.items():
            for name, body in named.items():
                resources.setdefault(unquote(kind), []).append((unquote(name), body))

    def names(kind, attribute):
        return sorted(evaluate(body[attribute], variables) for _, body in resources.get(kind, []))

    machines = []
    for _, body in resources.get("aws_sfn_state_machine", []):
        definition = body["definition"]
        found = re.fullmatch(
            r'\$\{templatefile\("\$\{path\.module\}/([^"]+)", \{(.*)\}\)\}', definition
        )
        if not found:
            raise SystemExit(f"declared.py: the definition is not templatefile(...): {definition}")
        machines.append({
            "name": evaluate(body["name"], variables),
            "definition_file": found.group(1),
            "placeholders": sorted(
                part.split("=")[0].strip() for part in found.group(2).split(",")
            ),
        })
    print(json.dumps({
        "queues": names("aws_sqs_queue", "name"),
        "state_machines": machines,
        "buckets": names("aws_s3_bucket", "bucket"),
        "glue_databases": names("aws_glue_catalog_database", "name"),
    }, indent=2))


if __name__ == "__main__":
    main()
