"""Validates custom resources against a CustomResourceDefinition's openAPIV3Schema, offline.

Usage: python crd_instances.py CRD.yaml FILE.yaml...

kubectl cannot do this without an API server (`--dry-run=client` still asks the server for
the kind's mapping and, with `--validate`, for its OpenAPI document; `--dry-run=server` needs
the CRD installed), so the schema is checked here with `jsonschema` as the API server reads
it: `x-kubernetes-int-or-string` is an integer or a string, and a field the schema does not
declare is an error, as with `kubectl apply --validate=strict` (field validation Strict)
(`metadata` is the API server's, left open). Each document of each file must be of the CRD's
group, a served version and kind. Prints one line per error (`file: document N: path:
message`); exit 1 when any document is invalid, 2 on bad input.
"""

import copy
import sys

import jsonschema
import yaml


def as_server_reads(node, top=True):
    """The schema with the API server's meanings of its Kubernetes extensions."""
    if isinstance(node, list):
        return [as_server_reads(n, False) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {
                name: (sub if top and name == "metadata" else as_server_reads(sub, False))
                for name, sub in value.items()
            }
        else:
            out[key] = as_server_reads(value, False)
    if out.pop("x-kubernetes-int-or-string", False):
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    preserve = out.pop("x-kubernetes-preserve-unknown-fields", False)
    if "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        crd = yaml.safe_load(f)
    group = crd["spec"]["group"]
    kind = crd["spec"]["names"]["kind"]
    versions = {
        v["name"]: as_server_reads(copy.deepcopy(v["schema"]["openAPIV3Schema"]))
        for v in crd["spec"]["versions"]
        if v.get("served")
    }
    bad = 0
    for path in argv[2:]:
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for i, doc in enumerate(docs, 1):
            api_version = str(doc.get("apiVersion", ""))
            g, _, v = api_version.rpartition("/")
            if g != group or v not in versions or doc.get("kind") != kind:
                print(f"{path}: document {i}: {api_version} {doc.get('kind')} is not {group} {kind}")
                bad += 1
                continue
            validator = jsonschema.Draft7Validator(versions[v])
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
                where = ".".join(str(p) for p in e.absolute_path) or "(document)"
                print(f"{path}: document {i}: {where}: {e.message}")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
