#!/usr/bin/env python3
"""Evidence per pull request on a simulated repository, judged by the real `flakegate check`.

A generated repository (python3 stdlib only; default 300 tests over 60 modules of 20 lines)
where every test executes a random set of lines (its per-test coverage) and fails only at a
planted rate: most tests never, four each at 0.5 %, 2 %, 5 % and 20 %, two always (broken on
base). A sequence of correct pull requests (default 200) each modifies random lines of one to
three modules; a correct patch changes no test's outcome, so a test fails on the head and in
the base probe only by its planted rate. The base sha advances every N pull requests
(--advance-every, default 5): the history's instability rule needs runs on one sha.

For every pull request the script writes an evidence directory laid out as the workflow's
artifact (coverage.json in coverage.py's format with per-test contexts, results/head.jsonl as
a pytest report-log, probe/probe-run-N/ shards with their meta.json, meta.json) and the patch
(pr.diff), and judges it with the real binary under strategies that share every random draw
(--seed):

  today        the full suite probed K times on the base, no history;
  witness      the head run, then only the witnesses of the changed lines probed K times (as
               `flakegate probe --witnesses-of` selects them; no probe when there are none),
               with the flake history (`check --history H.db --record --pr N`, one
               GITHUB_RUN_ID per pull request, in order);
  witness-rN   the same with `history.recovery_runs: N` in the config (--recovery-runs).

It reports, per strategy, test executions per pull request, the verdicts (and what caused
each FAIL), how often a witness with a planted failure rate was counted a stable witness (read
from the record's `witnesses.stable`), and whether any deterministic test was ever called
unstable (in a record or by `flakegate history unstable` at the end). --sequences pools
several independent repositories and sequences (seeds SEED, SEED+1, ...).

    python3 benches/simulate.py --bin target/release/flakegate [--markdown] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

RATES = (0.005, 0.02, 0.05, 0.20)
BROKEN = 1.0
TODAY = "2026-11-20"
LINES_PER_FUNCTION = 5  # a `def` header and four body lines
REPOSITORY = "sim/simulated-repository"

# --- the generated repository -----------------------------------------------------------------


@dataclass
class Repo:
    modules: int
    lines: int
    tests: list[str]
    rate: dict[str, float]
    # module -> line -> tests executing it (run phase); only body lines appear
    executed_by: list[dict[int, list[str]]]
    # module -> line -> text of the base tree
    text: list[list[str]]

    def path(self, m: int) -> str:
        return f"src/sim/m{m:02d}.py"

    def body_lines(self) -> list[int]:
        return [ln for ln in range(1, self.lines + 1) if not self.is_header(ln)]

    @staticmethod
    def is_header(line: int) -> bool:
        return (line - 1) % LINES_PER_FUNCTION == 0


def generate_repo(seed: int, n_tests: int, modules: int, lines: int, per_rate: int, broken: int) -> Repo:
    rng = random.Random(f"{seed}:repository")
    tests = []
    home = []
    for i in range(n_tests):
        m = i % modules
        tests.append(f"tests/test_m{m:02d}.py::test_case_{i // modules:02d}")
        home.append(m)
    planted = rng.sample(range(n_tests), per_rate * len(RATES) + broken)
    rate = {t: 0.0 for t in tests}
    for k, r in enumerate(RATES):
        for i in planted[k * per_rate : (k + 1) * per_rate]:
            rate[tests[i]] = r
    for i in planted[per_rate * len(RATES) :]:
        rate[tests[i]] = BROKEN

    body = [ln for ln in range(1, lines + 1) if not Repo.is_header(ln)]
    executed_by: list[dict[int, list[str]]] = [dict() for _ in range(modules)]
    for i, t in enumerate(tests):
        # Its own module densely, two others (helpers it calls) sparsely.
        others = rng.sample([m for m in range(modules) if m != home[i]], 2)
        for m, p in [(home[i], 0.5)] + [(o, 0.25) for o in others]:
            hit = [ln for ln in body if rng.random() < p]
            if m == home[i] and not hit:
                hit = [rng.choice(body)]
            for ln in hit:
                executed_by[m].setdefault(ln, []).append(t)
    text = [[line_text(m, ln, 0) for ln in range(1, lines + 1)] for m in range(modules)]
    return Repo(modules, lines, tests, rate, executed_by, text)


def line_text(m: int, line: int, version: int) -> str:
    f = (line - 1) // LINES_PER_FUNCTION
    if Repo.is_header(line):
        return f"def step_{m}_{f}(x):"
    if line % LINES_PER_FUNCTION == 0:
        return f"    return x + {version}" if version else "    return x"
    return f"    x = x * {line % 7 + 2} + {m + line + 31 * version}"


# --- one pull request's draws -------------------------------------------------------------------


@dataclass
class PullRequest:
    number: int
    base_sha: str
    head_sha: str
    changes: dict[int, list[int]]  # module -> changed (new-side) lines
    head_failures: set[str]
    probe_failures: list[set[str]]  # per base run
    witnesses: list[str] = field(default_factory=list)


def sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def draw_pull_request(repo: Repo, seed: int, n: int, k: int, advance_every: int) -> PullRequest:
    rng = random.Random(f"{seed}:pull-request:{n}")
    touched = rng.sample(range(repo.modules), rng.randint(1, 3))
    body = repo.body_lines()
    changes = {m: sorted(rng.sample(body, rng.randint(1, 3))) for m in sorted(touched)}

    def run() -> set[str]:
        # One draw per test, in a fixed order, so both strategies see the same outcomes.
        return {t for t in repo.tests if rng.random() < repo.rate[t]}

    head = run()
    probe = [run() for _ in range(k)]
    epoch = (n - 1) // advance_every
    pr = PullRequest(n, sha(f"sim base {epoch}"), sha(f"sim head {n}"), changes, head, probe)
    w = set()
    for m, ls in changes.items():
        for ln in ls:
            w.update(repo.executed_by[m].get(ln, ()))
    pr.witnesses = sorted(w)
    return pr


# --- evidence files -----------------------------------------------------------------------------


def coverage_json(repo: Repo, modules: list[int]) -> str:
    """coverage.py's `coverage json --show-contexts` for the head (the touched modules only)."""
    files = {}
    total_cov = total_stmts = 0
    for m in modules:
        contexts: dict[str, list[str]] = {}
        executed, missing = [], []
        for ln in range(1, repo.lines + 1):
            if repo.is_header(ln):
                executed.append(ln)
                contexts[str(ln)] = [""]  # a def runs at import time
            elif repo.executed_by[m].get(ln):
                executed.append(ln)
                contexts[str(ln)] = [f"{t}|run" for t in repo.executed_by[m][ln]]
            else:
                missing.append(ln)
        summary = summary_of(len(executed), len(executed) + len(missing))
        region = {
            "executed_lines": executed,
            "summary": summary,
            "missing_lines": missing,
            "excluded_lines": [],
            "contexts": contexts,
        }
        files[repo.path(m)] = dict(
            region,
            functions={"": dict(region, start_line=1)},
            classes={"": dict(region, start_line=1)},
        )
        total_cov += len(executed)
        total_stmts += len(executed) + len(missing)
    doc = {
        "meta": {
            "format": 3,
            "version": "7.6.1",
            "timestamp": "2026-11-20T09:00:00.000000",
            "branch_coverage": False,
            "show_contexts": True,
        },
        "files": files,
        "totals": summary_of(total_cov, total_stmts),
    }
    return json.dumps(doc)


def summary_of(covered: int, statements: int) -> dict:
    pct = 100.0 * covered / statements if statements else 100.0
    return {
        "covered_lines": covered,
        "num_statements": statements,
        "percent_covered": pct,
        "percent_covered_display": str(round(pct)),
        "missing_lines": statements - covered,
        "excluded_lines": 0,
        "percent_statements_covered": pct,
        "percent_statements_covered_display": str(round(pct)),
    }


class ReportLog:
    """pytest-reportlog's records, one setup/call/teardown per test, prebuilt per test."""

    def __init__(self, tests: list[str]):
        self.passed: dict[str, str] = {}
        self.failed: dict[str, str] = {}
        self.collect: dict[str, str] = {}
        for t in tests:
            path, name = t.split("::", 1)
            base = {
                "nodeid": t,
                "location": [path, 3, name],
                "keywords": {name: 1, path.rsplit("/", 1)[-1]: 1, "tests": 1, "": 1},
                "longrepr": None,
                "user_properties": [],
                "sections": [],
                "duration": 0.001,
                "start": 1795683600.0,
                "stop": 1795683600.001,
            }

            def rec(when: str, outcome: str, longrepr=None) -> str:
                r = dict(base, when=when, outcome=outcome, longrepr=longrepr)
                r["$report_type"] = "TestReport"
                return json.dumps(r)

            setup, teardown = rec("setup", "passed"), rec("teardown", "passed")
            self.passed[t] = "\n".join([setup, rec("call", "passed"), teardown])
            crash = {
                "reprcrash": {"path": f"/sim/{path}", "lineno": 4, "message": "AssertionError: planted failure"},
                "reprtraceback": {"reprentries": [], "extraline": None, "style": "long"},
                "sections": [],
            }
            self.failed[t] = "\n".join([setup, rec("call", "failed", crash), teardown])
            self.collect.setdefault(
                path,
                json.dumps(
                    {"outcome": "passed", "longrepr": None, "result": None, "sections": [], "nodeid": path,
                     "$report_type": "CollectReport"}
                ),
            )

    def render(self, tests: list[str], failures: set[str]) -> str:
        out = ['{"pytest_version": "8.3.3", "$report_type": "SessionStart"}']
        paths = sorted({t.split("::", 1)[0] for t in tests})
        out.extend(self.collect[p] for p in paths)
        out.extend(self.failed[t] if t in failures else self.passed[t] for t in tests)
        status = 1 if failures & set(tests) else 0
        out.append(json.dumps({"exitstatus": status, "$report_type": "SessionFinish"}))
        return "\n".join(out) + "\n"


def unified_diff(repo: Repo, pr: PullRequest, version: int) -> str:
    """The pull request's patch: the changed lines rewritten in place, as git writes it (new-side
    numbers are the base's, so they are lines the head's coverage lists)."""
    out = []
    for m, ls in pr.changes.items():
        old = repo.text[m]
        new = list(old)
        for ln in ls:
            new[ln - 1] = line_text(m, ln, version)
        path = repo.path(m)
        out.append(f"diff --git a/{path} b/{path}")
        out.append(f"index {blob(old)[:7]}..{blob(new)[:7]} 100644")
        out.append(f"--- a/{path}")
        out.append(f"+++ b/{path}")
        out.extend(hunks(old, new, sorted(ls)))
    return "\n".join(out) + "\n"


def hunks(old: list[str], new: list[str], changed: list[int], context: int = 3) -> list[str]:
    """Unified-diff hunks for lines replaced in place (1-based `changed`); a run of replaced
    lines is written as its removals, then its additions. (difflib may pair a repeated line
    such as `return x` with another occurrence and so shift the hunk: not a replacement.)"""
    groups: list[list[int]] = []
    for ln in changed:
        if groups and ln - groups[-1][-1] <= 2 * context:
            groups[-1].append(ln)
        else:
            groups.append([ln])
    out = []
    for g in groups:
        start, end = max(1, g[0] - context), min(len(old), g[-1] + context)
        out.append(f"@@ -{start},{end - start + 1} +{start},{end - start + 1} @@")
        ln = start
        while ln <= end:
            if ln in g:
                run = []
                while ln <= end and ln in g:
                    run.append(ln)
                    ln += 1
                out.extend(f"-{old[i - 1]}" for i in run)
                out.extend(f"+{new[i - 1]}" for i in run)
            else:
                out.append(f" {old[ln - 1]}")
                ln += 1
    return out


def blob(lines: list[str]) -> str:
    data = ("\n".join(lines) + "\n").encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_evidence(root: str, repo: Repo, log: ReportLog, pr: PullRequest, diff: str, k: int,
                   probed: list[str]) -> None:
    """One evidence directory as the workflow's artifact lays it out, plus the patch beside it."""
    write(os.path.join(root, "pr.diff"), diff)
    ev = os.path.join(root, "evidence")
    write(os.path.join(ev, "coverage.json"), coverage_json(repo, list(pr.changes)))
    write(os.path.join(ev, "results", "head.jsonl"), log.render(repo.tests, pr.head_failures))
    meta = {"base_sha": pr.base_sha, "head_sha": pr.head_sha, "k": k, "seed": 0,
            "test_command": "python -m pytest -p no:cacheprovider"}
    write(os.path.join(ev, "meta.json"), json.dumps(meta, indent=2) + "\n")
    for r in range(1, k + 1) if probed else ():
        shard = os.path.join(ev, "probe", f"probe-run-{r}")
        write(os.path.join(shard, f"run-{r}.jsonl"), log.render(probed, pr.probe_failures[r - 1]))
        write(os.path.join(shard, "meta.json"), json.dumps({"base_sha": pr.base_sha, "run": r}) + "\n")


# --- judging ------------------------------------------------------------------------------------


@dataclass
class Strategy:
    name: str
    title: str
    full_suite: bool
    history: bool
    recovery_runs: int | None = None  # history.recovery_runs in the config; None: the default

    @property
    def witness_only(self) -> bool:
        return not self.full_suite


def strategies(recovery_runs: int) -> list[Strategy]:
    return [
        Strategy("today", "today's template: suite ×K on base, no history", True, False),
        Strategy("witness", "new template: witnesses ×K on base, history", False, True),
        Strategy(f"witness-r{recovery_runs}", f"new template, `recovery_runs: {recovery_runs}`", False, True,
                 recovery_runs),
    ]


@dataclass
class Sequence:
    """One generated repository and its pull requests (one --seed)."""

    seed: int
    repo: Repo
    log: ReportLog
    prs: list[PullRequest]
    diffs: list[str]


def judge(args, strat: Strategy, seq: Sequence, i: int, work: str) -> dict:
    pr, repo = seq.prs[i], seq.repo
    home = os.path.join(work, f"seed-{seq.seed}", strat.name)
    root = os.path.join(home, f"pr-{pr.number:03d}")
    probed = repo.tests if strat.full_suite else pr.witnesses
    write_evidence(root, repo, seq.log, pr, seq.diffs[i], args.k, probed)
    ev = os.path.join(root, "evidence")
    cmd = [args.bin, "check", ev, "--diff", os.path.join(root, "pr.diff"), "--ledger", args.ledger_file,
           "--today", TODAY, "--format", "json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    if args.probe_from and probed:
        # The same probe computed by `flakegate probe --from` from the shards, then read as JSON.
        shards = sorted(os.path.join(ev, "probe", d) for d in os.listdir(os.path.join(ev, "probe")))
        pj = os.path.join(root, "probe.json")
        p = subprocess.run([args.bin, "probe", "--from", *shards, "--ledger", args.ledger_file,
                            "--today", TODAY, "--out", pj, "--format", "json"],
                           capture_output=True, text=True, env=env)
        if p.returncode == 2:
            sys.exit(f"flakegate probe --from failed on {root}:\n{p.stderr}")
        cmd += ["--probe", pj]
    if strat.recovery_runs is not None:
        config = os.path.join(home, "flakegate.yml")
        if not os.path.exists(config):
            write(config, f"history:\n  recovery_runs: {strat.recovery_runs}\n")
        cmd += ["--config", config]
    if strat.history:
        cmd += ["--history", os.path.join(home, "history.db"), "--record", "--pr", str(pr.number),
                "--repository", REPOSITORY]
        # One workflow run per pull request: each evidence is recorded once.
        env["GITHUB_RUN_ID"] = str(900000 + pr.number)
        env["GITHUB_RUN_ATTEMPT"] = "1"
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode not in (0, 1):
        sys.exit(f"flakegate check failed (exit {p.returncode}) on {root}:\n{' '.join(cmd)}\n{p.stderr}")
    try:
        record = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        sys.exit(f"{root}: the record is not JSON ({e}):\n{p.stdout[:2000]}")
    if args.keep:
        write(os.path.join(root, "record.json"), p.stdout)
    else:
        shutil.rmtree(root)
    return record


def run_in_order(args, strat: Strategy, seq: Sequence, work: str) -> list[dict]:
    """The history is judged and recorded pull request by pull request, in order."""
    return [judge(args, strat, seq, i, work) for i in range(len(seq.prs))]


def history_unstable(args, strat: Strategy, seq: Sequence, work: str) -> list[str]:
    home = os.path.join(work, f"seed-{seq.seed}", strat.name)
    cmd = [args.bin, "history", "unstable", "--history", os.path.join(home, "history.db"),
           "--repository", REPOSITORY, "--today", TODAY]
    # `history unstable` reads the recovery rule from .github/flakegate.yml in its directory.
    cwd = home
    if strat.recovery_runs is not None:
        os.makedirs(os.path.join(home, ".github"), exist_ok=True)
        shutil.copy(os.path.join(home, "flakegate.yml"), os.path.join(home, ".github", "flakegate.yml"))
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if p.returncode != 0:
        sys.exit(f"flakegate history unstable failed:\n{p.stderr}")
    return [ln.split(": failed ", 1)[0] for ln in p.stdout.splitlines() if ": failed " in ln]


# --- the report ---------------------------------------------------------------------------------


def analyse(strat: Strategy, runs: list[tuple[Sequence, list[dict], list[str]]], k: int, burn_in: int) -> dict:
    verdicts: dict[str, int] = {}
    codes: dict[str, int] = {}
    fail_causes = {"witness": 0, "untouched_only": 0, "untouched_only_broken": 0}
    executions = 0
    prs_total = 0
    # planted rate -> PRs with such a witness, PRs where one was counted stable; overall, after burn-in
    seen = {r: [0, 0, 0, 0] for r in RATES + (BROKEN,)}
    det_unstable: set[str] = set()
    det_history: set[str] = set()
    mismatched: list[str] = []
    for seq, records, hist_unstable in runs:
        repo = seq.repo
        n_tests = len(repo.tests)
        for t in hist_unstable:
            if repo.rate.get(t, 0.0) == 0.0:
                det_history.add(f"seed {seq.seed}: {t}")
        for pr, rec in zip(seq.prs, records):
            prs_total += 1
            verdicts[rec["verdict"]] = verdicts.get(rec["verdict"], 0) + 1
            for c in {r["code"] for r in rec["reasons"]}:
                codes[c] = codes.get(c, 0) + 1
            probed = n_tests if strat.full_suite else len(pr.witnesses)
            executions += n_tests + k * probed
            w = rec["witnesses"]
            union = set().union(*w.values())
            if union != set(pr.witnesses):
                mismatched.append(f"seed {seq.seed} PR {pr.number}")
            if rec["verdict"] == "FAIL":
                counted = {f["test"] for f in rec["results"]["failures"] if f.get("counts")}
                if counted & union:
                    fail_causes["witness"] += 1
                else:
                    fail_causes["untouched_only"] += 1
                    if any(repo.rate.get(t) == BROKEN for t in counted):
                        fail_causes["untouched_only_broken"] += 1
            stable = set(w.get("stable", []))
            for r in seen:
                planted = {t for t in pr.witnesses if repo.rate[t] == r}
                if not planted:
                    continue
                late = pr.number > burn_in
                hit = bool(planted & stable)
                seen[r][0] += 1
                seen[r][1] += hit
                seen[r][2] += late
                seen[r][3] += late and hit
            for t in unstable_in(rec):
                if repo.rate.get(t, 0.0) == 0.0:
                    det_unstable.add(f"seed {seq.seed}: {t}")
    return {
        "strategy": strat.name,
        "title": strat.title,
        "prs": prs_total,
        "executions_per_pr": executions / prs_total,
        "verdicts": verdicts,
        "fail_causes": fail_causes,
        "reason_codes": codes,
        "flaky_counted_stable": {
            str(r): {"prs": s[0], "counted_stable": s[1], "prs_after_burn_in": s[2], "counted_stable_after_burn_in": s[3]}
            for r, s in seen.items()
        },
        "deterministic_called_unstable": sorted(det_unstable | det_history),
        "witness_sets_differing_from_coverage": mismatched,
    }


def unstable_in(rec: dict) -> set[str]:
    """Every test the record calls unstable: as a witness, as a failing head test, in its probe
    or in its history section."""
    out = set(rec["witnesses"].get("unstable", [])) | set(rec.get("unowned_unstable", []))
    for f in (rec.get("results") or {}).get("failures", []):
        if f.get("status") == "unstable":
            out.add(f["test"])
    for t in (rec.get("probe") or {}).get("tests", []) or []:
        if t.get("stability") == "unstable":
            out.add(t["test"])
    for t in (rec.get("history") or {}).get("tests", []) or []:
        if t.get("stability") == "unstable":
            out.add(t["test"])
    return out


def frac(a: int, b: int) -> str:
    return f"{a}/{b} ({100.0 * a / b:.1f} %)" if b else "–"


def pct(a: int, b: int) -> float:
    return 100.0 * a / b if b else 0.0


def render(results: list[dict], args) -> str:
    by = {r["strategy"]: r for r in results}
    cols = [r["strategy"] for r in results]
    rows = ["| | " + " | ".join(by[c]["title"] for c in cols) + " |", "| --- |" + " --- |" * len(cols)]

    def row(label: str, f) -> None:
        rows.append(f"| {label} | " + " | ".join(f(by[c]) for c in cols) + " |")

    row("test executions per pull request (mean)", lambda r: f"{r['executions_per_pr']:.0f}")
    for v in ("PASS", "PASS_WITH_CAVEAT", "INCONCLUSIVE", "FAIL"):
        row(v, lambda r, v=v: frac(r["verdicts"].get(v, 0), r["prs"]))
    row("FAIL: a witness failed on head", lambda r: str(r["fail_causes"]["witness"]))
    row("FAIL: only tests that ran no changed line failed (a broken one among them)",
        lambda r: f"{r['fail_causes']['untouched_only']} ({r['fail_causes']['untouched_only_broken']})")
    # Head failures of tests the patch cannot have affected are to become this caveat, not FAIL.
    row("with the `head_flaky` caveat", lambda r: frac(r["reason_codes"].get("head_flaky", 0), r["prs"]))
    for rate in RATES + (BROKEN,):
        label = "broken-on-base" if rate == BROKEN else f"{rate * 100:g} %"
        for late, when in ((False, "all PRs"), (True, f"after PR {args.burn_in}")):
            n_key, hit_key = ("prs_after_burn_in", "counted_stable_after_burn_in") if late else ("prs", "counted_stable")
            row(f"a {label} witness counted stable, {when}",
                lambda r, k=str(rate), n=n_key, h=hit_key: frac(r["flaky_counted_stable"][k][h],
                                                                r["flaky_counted_stable"][k][n]))
    row("deterministic tests ever called unstable", lambda r: str(len(r["deterministic_called_unstable"])))
    out = ["\n".join(rows), ""]

    # The targets, for each witness strategy against today's template.
    t = by.get("today")
    ws = [r for r in results if r["strategy"] != "today"]
    if t and ws:

        def met(ok: bool, n: int = 1) -> str:
            return "no data" if n == 0 else "met" if ok else "**not met**"

        out.append("| target | " + " | ".join(w["title"] for w in ws) + " |")
        out.append("| --- |" + " --- |" * len(ws))

        def target(label: str, f) -> None:
            out.append(f"| {label} | " + " | ".join(f(w) for w in ws) + " |")

        def fail(w):
            n = w["verdicts"].get("FAIL", 0)
            return f"{frac(n, w['prs'])}: {met(pct(n, w['prs']) < 2)}"

        def late(w, rate, limit):
            f = w["flaky_counted_stable"][rate]
            p = pct(f["counted_stable_after_burn_in"], f["prs_after_burn_in"])
            return (f"{frac(f['counted_stable_after_burn_in'], f['prs_after_burn_in'])}: "
                    f"{met(p < limit, f['prs_after_burn_in'])}")

        target("correct pull requests FAILed < 2 %", fail)
        target("≥ 5× fewer test executions per PR than today's template",
               lambda w: f"{t['executions_per_pr'] / w['executions_per_pr']:.1f}×: "
                         f"{met(t['executions_per_pr'] / w['executions_per_pr'] >= 5)}")
        target(f"a 5 % flaky witness counted stable on < 5 % of PRs after PR {args.burn_in}",
               lambda w: late(w, "0.05", 5))
        target(f"a 2 % flaky witness counted stable on < 20 % of PRs after PR {args.burn_in}",
               lambda w: late(w, "0.02", 20))
        target("no deterministic test ever called unstable",
               lambda w: f"{len(w['deterministic_called_unstable'])}: {met(not w['deterministic_called_unstable'])}")
        out.append("")
    return "\n".join(out) + "\n"


# --- main ---------------------------------------------------------------------------------------


def generate(args, seed: int) -> Sequence:
    repo = generate_repo(seed, args.tests, args.modules, args.lines, args.per_rate, args.broken)
    prs, diffs = [], []
    for n in range(1, args.prs + 1):
        pr = draw_pull_request(repo, seed, n, args.k, args.advance_every)
        prs.append(pr)
        diffs.append(unified_diff(repo, pr, n))
        if n % args.advance_every == 0:
            # The base advances: the pull requests since the last advance were merged.
            for p in prs[-args.advance_every :]:
                for m, ls in p.changes.items():
                    for ln in ls:
                        repo.text[m][ln - 1] = line_text(m, ln, p.number)
    return Sequence(seed, repo, ReportLog(repo.tests), prs, diffs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="target/release/flakegate", help="the flakegate binary")
    ap.add_argument("--prs", type=int, default=200, help="correct pull requests per sequence (default 200)")
    ap.add_argument("--tests", type=int, default=300)
    ap.add_argument("--modules", type=int, default=60)
    ap.add_argument("--lines", type=int, default=20, help="lines per module (a def header every 5)")
    ap.add_argument("--per-rate", type=int, default=4, help="tests planted at each of 0.5/2/5/20 %%")
    ap.add_argument("--broken", type=int, default=2, help="tests that always fail (broken on base)")
    ap.add_argument("--k", type=int, default=7, help="probe runs (K)")
    ap.add_argument("--advance-every", type=int, default=5, metavar="N",
                    help="the base sha advances every N pull requests (default 5)")
    ap.add_argument("--burn-in", type=int, default=30, help="the 'after the first N PRs' cut (default 30)")
    ap.add_argument("--seed", type=int, default=1, help="the first sequence's seed")
    ap.add_argument("--sequences", type=int, default=5,
                    help="independent repositories and PR sequences (seeds SEED, SEED+1, …), pooled "
                         "(default 5: one sequence has about 40 pull requests per planted rate)")
    ap.add_argument("--recovery-runs", type=int, default=150,
                    help="history.recovery_runs of the third strategy (default 150)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="flakegate processes at once")
    ap.add_argument("--strategies", default=None,
                    help="comma-separated, of: today, witness, witness-rN (default: all three)")
    ap.add_argument("--probe-from", action="store_true",
                    help="turn each probe's shards into probe.json with `flakegate probe --from` first")
    ap.add_argument("--keep", metavar="DIR",
                    help="keep every evidence directory, its record (record.json) and the history under DIR")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--markdown", action="store_true", help="print only the markdown tables")
    args = ap.parse_args()
    if args.lines % LINES_PER_FUNCTION:
        ap.error(f"--lines must be a multiple of {LINES_PER_FUNCTION}")
    if not os.access(args.bin, os.X_OK):
        ap.error(f"{args.bin}: not an executable (build it: cargo build --release)")
    args.bin = os.path.abspath(args.bin)
    every = strategies(args.recovery_runs)
    wanted = every if args.strategies is None else [s for s in every if s.name in args.strategies.split(",")]
    if not wanted:
        ap.error(f"--strategies: none of {', '.join(s.name for s in every)}")

    started = time.monotonic()
    seqs = [generate(args, args.seed + i) for i in range(args.sequences)]
    work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="flakegate-sim-")
    os.makedirs(work, exist_ok=True)
    args.ledger_file = os.path.join(work, "flake-ledger.json")
    write(args.ledger_file, '{"frozen": []}\n')
    done: dict[tuple[str, int], list[dict]] = {}
    try:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            # Each history is one chain, in order; today's pull requests are independent and
            # fill the pool beside the chains.
            chains = {(s.name, q.seed): pool.submit(run_in_order, args, s, q, work)
                      for s in wanted if s.history for q in seqs}
            for s in wanted:
                if not s.history:
                    for q in seqs:
                        done[(s.name, q.seed)] = list(pool.map(lambda i, s=s, q=q: judge(args, s, q, i, work),
                                                               range(len(q.prs))))
            for key, f in chains.items():
                done[key] = f.result()
        results = []
        for s in wanted:
            runs = [(q, done[(s.name, q.seed)], history_unstable(args, s, q, work) if s.history else [])
                    for q in seqs]
            results.append(analyse(s, runs, args.k, args.burn_in))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started

    summary = {
        "parameters": {k: v for k, v in vars(args).items() if k not in ("bin", "ledger_file", "json", "keep")},
        "planted": {q.seed: {str(r): sorted(t for t in q.repo.tests if q.repo.rate[t] == r) for r in RATES + (BROKEN,)}
                    for q in seqs},
        "results": results,
        "seconds": round(elapsed, 1),
    }
    if args.json:
        write(args.json, json.dumps(summary, indent=2) + "\n")
    all_prs = [p for q in seqs for p in q.prs]
    mean_w = sum(len(p.witnesses) for p in all_prs) / len(all_prs)
    no_w = sum(1 for p in all_prs if not p.witnesses)
    if not args.markdown:
        seeds = f"seed {args.seed}" if args.sequences == 1 else f"seeds {args.seed}–{args.seed + args.sequences - 1}"
        print(f"{args.sequences} × {args.prs} correct pull requests ({seeds}), {args.tests} tests over "
              f"{args.modules} modules × {args.lines} lines, K = {args.k}, the base advances every "
              f"{args.advance_every} PRs; witnesses per PR: mean {mean_w:.1f}, none on {no_w}; {elapsed:.0f} s\n")
        for r in results:
            if r["witness_sets_differing_from_coverage"]:
                print(f"note: {r['strategy']}: the record's witnesses differ from the generated coverage's on "
                      f"{', '.join(r['witness_sets_differing_from_coverage'])}\n")
            if r["deterministic_called_unstable"]:
                print(f"note: {r['strategy']}: deterministic tests called unstable: "
                      f"{', '.join(r['deterministic_called_unstable'])}\n")
    print(render(results, args), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
