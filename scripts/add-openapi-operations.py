#!/usr/bin/env python3
"""Add REST operations to tests/fixtures/github/openapi-subset.json from the full description.

usage: add-openapi-operations.py FULL.json SUBSET.json OPERATION_ID...

FULL.json is `generated/api.github.com.json` of the npm package @octokit/openapi 23.0.2 (the copy the
subset was first taken from; `npm pack @octokit/openapi@23.0.2`). Each operation is copied with its
`x-octokit` key removed, together with the transitive closure of the components it `$ref`s that the
subset does not hold yet; operations and components already there are left as they are. The
operation ids are appended to `x-subset-provenance.operations`.
"""
import json
import sys

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def strip_octokit(v):
    if isinstance(v, dict):
        return {k: strip_octokit(x) for k, x in v.items() if k != "x-octokit"}
    if isinstance(v, list):
        return [strip_octokit(x) for x in v]
    return v


def refs(v, out):
    if isinstance(v, dict):
        r = v.get("$ref")
        if isinstance(r, str):
            out.add(r)
        for x in v.values():
            refs(x, out)
    elif isinstance(v, list):
        for x in v:
            refs(x, out)


def main():
    full_path, subset_path, *wanted = sys.argv[1:]
    full = json.load(open(full_path))
    subset = json.load(open(subset_path))
    found = {}
    for path, item in full["paths"].items():
        for method in METHODS:
            op = item.get(method)
            if op and op.get("operationId") in wanted:
                found[op["operationId"]] = (path, method, op)
    missing = [w for w in wanted if w not in found]
    if missing:
        sys.exit(f"not in {full_path}: {', '.join(missing)}")
    pending = set()
    for op_id in wanted:
        path, method, op = found[op_id]
        item = subset["paths"].setdefault(path, {})
        if method in item:
            continue
        op = strip_octokit(op)
        item[method] = op
        refs(op, pending)
        if "parameters" in full["paths"][path] and "parameters" not in item:
            item["parameters"] = strip_octokit(full["paths"][path]["parameters"])
            refs(item["parameters"], pending)
        subset["x-subset-provenance"]["operations"].append(op_id)
    done = set()
    while pending:
        r = pending.pop()
        if r in done:
            continue
        done.add(r)
        if not r.startswith("#/"):
            sys.exit(f"non-local $ref {r}")
        _, *parts = r.split("/")
        src, dst = full, subset
        for p in parts[:-1]:
            src = src[p]
            dst = dst.setdefault(p, {})
        name = parts[-1]
        if name not in dst:
            dst[name] = strip_octokit(src[name])
            refs(dst[name], pending)
        else:
            refs(dst[name], pending)
    with open(subset_path, "w") as f:
        json.dump(subset, f, indent=2, ensure_ascii=False)
        f.write("\n")


main()
