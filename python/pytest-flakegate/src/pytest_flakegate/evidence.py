"""The evidence directory, written whole or not at all: everything goes to a temporary
sibling directory, renamed over the target when the session ends. A target that cannot be
written is refused before any test runs."""

import os
import shutil
import tempfile

# What this plugin writes; a directory holding only these (an earlier run's evidence) may be
# replaced, anything else in it is refused.
WRITES = ("coverage.json", "meta.json", "results")
RESULTS = "head.jsonl"


class EvidenceError(Exception):
    """The evidence directory cannot be written: a usage error, reported before any test runs."""


def _replaceable(target):
    """Why an existing `target` may not be replaced, or None."""
    if os.path.islink(target) or not os.path.isdir(target):
        return "it exists and is not a directory"
    try:
        names = sorted(os.listdir(target))
    except OSError as e:
        return f"cannot list it ({e.strerror})"
    other = [n for n in names if n not in WRITES]
    results = os.path.join(target, "results")
    if "results" in names:
        if os.path.islink(results) or not os.path.isdir(results):
            other.append("results (not a directory)")
        else:
            other.extend("results/" + n for n in sorted(os.listdir(results)) if n != RESULTS)
    if other:
        shown = ", ".join(other[:5]) + (f" and {len(other) - 5} more" if len(other) > 5 else "")
        return (
            f"it exists and holds files this plugin does not write ({shown}); "
            "name a new directory, or remove it first"
        )
    if not os.access(target, os.W_OK) or not os.access(os.path.dirname(target), os.W_OK):
        return "it exists and cannot be replaced (not writable)"
    return None


def prepare(target):
    """Check `target` and create the temporary directory beside it; returns its path."""
    target = os.path.abspath(target)
    parent = os.path.dirname(target)
    if os.path.lexists(target):
        why = _replaceable(target)
        if why:
            raise EvidenceError(f"--flakegate={target}: {why}")
    up = parent
    while not os.path.lexists(up):
        up = os.path.dirname(up)
    if not os.path.isdir(up):
        raise EvidenceError(f"--flakegate={target}: {up} is not a directory")
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="." + os.path.basename(target) + ".", suffix=".partial", dir=parent)
        os.mkdir(os.path.join(tmp, "results"))
        os.mkdir(os.path.join(tmp, ".coverage-data"))
    except OSError as e:
        raise EvidenceError(f"--flakegate={target}: cannot write in {parent}: {e.strerror or e}") from None
    return tmp


def coverage_dir(tmp):
    """Where the processes' coverage data files go until they are combined."""
    return os.path.join(tmp, ".coverage-data")


def commit(tmp, target):
    """Move the finished temporary directory into place (replacing an earlier run's)."""
    target = os.path.abspath(target)
    shutil.rmtree(coverage_dir(tmp), ignore_errors=True)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    if os.path.lexists(target):
        old = tmp + ".old"
        os.rename(target, old)
        os.rename(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, target)


def discard(tmp):
    shutil.rmtree(tmp, ignore_errors=True)
