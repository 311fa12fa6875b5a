"""`meta.json` of the evidence directory: `base_sha`, `head_sha`, `seed`, `test_command` and
`workflow`, as flakegate's meta.json reader takes them.

- `head_sha`: the commit the tests ran on, `git rev-parse HEAD` in the rootdir (else
  `GITHUB_SHA`). A pull request's default checkout on GitHub is a merge commit, not the
  head: the gate then says the evidence is about another commit, as it should.
- `base_sha`: `--flakegate-base=REV` (resolved by git), else the base of the pull request or
  merge-queue group in GitHub's event (`GITHUB_EVENT_PATH`), else unknown.
- `seed`: `FLAKEGATE_SEED`, else a numeric `PYTHONHASHSEED`, else unknown.
- `workflow`: the workflow file of `GITHUB_WORKFLOW_REF`, in CI.
"""

import json
import os
import shlex
import subprocess


class MetaError(Exception):
    """A base revision git cannot resolve."""


def _git(rootdir, *args):
    try:
        out = subprocess.run(
            ["git", *args],
            cwd=rootdir,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _event():
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            event = json.load(f)
    except (OSError, ValueError):
        return {}
    return event if isinstance(event, dict) else {}


def _event_base(event):
    pr = event.get("pull_request")
    if isinstance(pr, dict) and isinstance(pr.get("base"), dict):
        sha = pr["base"].get("sha")
        if isinstance(sha, str):
            return sha
    group = event.get("merge_group")
    if isinstance(group, dict) and isinstance(group.get("base_sha"), str):
        return group["base_sha"]
    return None


def _int_env(name):
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else None


def _workflow():
    ref = os.environ.get("GITHUB_WORKFLOW_REF", "")
    # owner/repo/.github/workflows/file.yml@refs/heads/main
    path = ref.split("@", 1)[0]
    i = path.find("/.github/workflows/")
    return path[i + 1 :] if i >= 0 else None


def resolve_base(rootdir, rev):
    """The commit `rev` names, or MetaError saying git cannot resolve it."""
    sha = _git(rootdir, "rev-parse", "--verify", "--quiet", rev + "^{commit}")
    if not sha:
        raise MetaError(f"--flakegate-base={rev}: git cannot resolve it to a commit in {rootdir}")
    return sha


def test_command(args):
    """The pytest command line, without this plugin's own options."""
    out = []
    skip_next = False
    for a in args:
        if skip_next:
            skip_next = False
            continue
        if a in ("--flakegate", "--flakegate-cov", "--flakegate-base", "--flakegate-results"):
            skip_next = True
            continue
        if a.startswith(("--flakegate=", "--flakegate-cov=", "--flakegate-base=", "--flakegate-results=")):
            continue
        out.append(a)
    return shlex.join(["python", "-m", "pytest", *out])


def meta(rootdir, args, base_sha):
    """The meta.json object for a run in `rootdir` invoked with `args`."""
    head = _git(rootdir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}") or os.environ.get("GITHUB_SHA") or None
    base = base_sha or _event_base(_event())
    seed = _int_env("FLAKEGATE_SEED")
    if seed is None:
        seed = _int_env("PYTHONHASHSEED")
    out = {
        "base_sha": base,
        "head_sha": head,
        "seed": seed,
        "test_command": test_command(args),
    }
    workflow = _workflow()
    if workflow:
        out["workflow"] = workflow
    return out
