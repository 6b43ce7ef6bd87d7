#!/usr/bin/env python3
"""Runs the jobs of the CI examples (ci/examples/*.yml) on this machine as GitLab CI and GitHub
Actions would run them, one job at a time, in one work directory per example that stands for the
checkout (the jobs share it: that is the artifacts' upload and download).

What it does with a file:
  - GitLab: `stages`, global and job `variables` (a `value:` form too; `$VAR` in a value expands),
    hidden keys (`.name`, for YAML anchors), `parallel: matrix` (every product of every entry),
    `needs`, `before_script` + `script` in one bash session (`set -eo pipefail`, as GitLab's
    runner does), `after_script` in another (its failure ignored), `artifacts` (paths and reports
    checked to exist after the job; nothing is uploaded). Jobs run by stage, and within a stage
    after the jobs they need. Predefined: CI, GITLAB_CI, CI_PIPELINE_ID, CI_JOB_ID, CI_JOB_NAME,
    CI_JOB_STAGE, CI_PROJECT_DIR, CI_COMMIT_SHA, CI_NODE_TOTAL.
  - GitHub: workflow, job and step `env`, `strategy.matrix` (the product of its lists), `needs`,
    `run:` steps each in its own `bash -e` (`shell: bash` is `-eo pipefail`), `${{ ... }}` with
    the contexts matrix, github (run_id, run_number, run_attempt, sha, workspace, job), runner
    (temp, os), env, vars (the runner's --set values, else empty), string literals and `||`; any
    other expression is an error. `uses:` steps are skipped (the work directory is the checkout,
    and it is shared); upload-artifact's `path` lines are checked to exist. Predefined: CI,
    GITHUB_ACTIONS, GITHUB_RUN_ID, GITHUB_RUN_NUMBER, GITHUB_WORKSPACE, GITHUB_JOB, GITHUB_SHA,
    RUNNER_TEMP, RUNNER_OS.
  - Lines (a GitLab script entry, a GitHub run step) made only of package installs (apt-get/apt
    update or install) or `cargo build` are skipped with a note saying why: the machine has the
    packages and the binary is given. A line that mixes them with other commands is an error (it
    cannot be skipped in part). As root, `sudo` at a command's start is stripped (said so).
  - Any key this runner does not know how to honour (include, extends, rules, services, matrix
    include/exclude, `if:` other than always()/success(), ...) is an error, not ignored.

Every job must exit 0. A job that runs `memcgtest ... ab` must leave an ab.json (its --report)
with exit 0, a "no regression" verdict, at least one measurement judged and none regressed, and
every example must have such a job. Exit 0 when all passed, 1 when a job or a check failed
(naming the job and the line), 2 when an example uses what this runner does not know.
"""

import argparse
import glob
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Unsupported(Exception):
    """The example uses something this runner cannot run as its CI would: exit 2."""


class Failed(Exception):
    """A job or a check failed: exit 1."""


def log(msg=""):
    print(msg, flush=True)


# --- lines that are skipped -----------------------------------------------------------------

INSTALL = re.compile(
    r"^(sudo\s+)?(DEBIAN_FRONTEND=\S+\s+)?(apt-get|apt)\s+(-\S+\s+)*(update|install)\b"
)
BUILD = re.compile(r"^cargo\s+build\b")
MENTIONS = re.compile(r"\b(apt-get|apt)\s+(-\S+\s+)*(update|install)\b|\bcargo\s+build\b")
WHY = {
    "install": "package installation: this machine has qemu-system-x86, e2fsprogs and cpio "
    "(ci/vm-tests.sh installs them; checked before the run)",
    "build": "cargo build: the binary is given (target/release/memcgtest is a copy of it)",
}


def skip_reason(text):
    """Why a line is skipped, or None to run it. A line whose every command is a package install
    or a cargo build is skipped; one that mixes them with other commands is an error."""
    parts = [p.strip() for p in re.split(r"&&|;|\n", text.replace("\\\n", " ")) if p.strip()]
    kinds = set()
    for p in parts:
        if INSTALL.match(p):
            kinds.add("install")
        elif BUILD.match(p):
            kinds.add("build")
        elif MENTIONS.search(p):
            raise Unsupported(f"a package install or cargo build inside a command: {p!r}")
        else:
            kinds.add("other")
    if not kinds or "other" in kinds:
        if len(kinds) > 1:
            raise Unsupported(
                f"a line mixes {' and '.join(sorted(kinds - {'other'}))} with other commands "
                f"(it cannot be skipped in part): {text.strip()!r}"
            )
        return None
    return "; ".join(WHY[k] for k in sorted(kinds))


# --- the job model -----------------------------------------------------------------------------


class Line:
    def __init__(self, label, text, where):
        self.label = label  # e.g. "script[0]", "step 1 (Install qemu)"
        self.text = text
        try:
            self.skip = skip_reason(text)
        except Unsupported as e:
            raise Unsupported(f"{where} {label}: {e}") from None


class Session:
    """Lines run in one bash process (GitLab: before_script + script; GitHub: one run step)."""

    def __init__(self, lines, flags, cwd=".", env=None, ignore_failure=False, title=None):
        self.lines, self.flags, self.cwd = lines, flags, cwd
        self.env = env or {}
        self.ignore_failure = ignore_failure
        self.title = title


class Job:
    def __init__(self, name, env):
        self.name = name
        self.env = env
        self.sessions = []
        self.notes = []  # printed before the job runs (skipped uses: steps, ...)
        self.artifacts = []  # (what, path pattern) checked after the job
        self.declared = []  # the variables the example sets for it, shown by --dry-run

    def text(self):
        return "\n".join(l.text for s in self.sessions for l in s.lines)

    def runs_ab(self):
        flat = self.text().replace("\\\n", " ")
        return any(
            re.search(r"\bmemcgtest\b.*\sab\s", line) and not skip_reason(line)
            for line in flat.splitlines()
        )


def strings(v, where):
    """A script key's value as a list of strings (GitLab nests lists from anchors)."""
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        out = []
        for x in v:
            out += strings(x, where)
        return out
    raise Unsupported(f"{where}: not a string or a list of strings: {v!r}")


def expand_dollar(s, env):
    """GitLab's expansion of $VAR and ${VAR} in a variable's value (unknown ones stay as they are,
    for the shell)."""

    def sub(m):
        name = m.group(1) or m.group(2)
        return env.get(name, m.group(0))

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", sub, s)


def product(matrix, where):
    """The combinations of a matrix mapping of lists (scalars are one-value lists), in order."""
    keys = list(matrix)
    vals = []
    for k in keys:
        v = matrix[k]
        v = v if isinstance(v, list) else [v]
        if not v or not all(isinstance(x, (str, int, float, bool)) for x in v):
            raise Unsupported(f"{where}: matrix value {k} must be a scalar or a list of scalars")
        vals.append([str(x) for x in v])
    return [dict(zip(keys, combo)) for combo in itertools.product(*vals)]


def order_jobs(jobs, needs, rank, label):
    """Jobs in an order the CI could run them one at a time: by rank (the stage), then after the
    jobs each needs, ties in file order. needs: name -> set of names."""
    done, out = set(), []
    pending = sorted(jobs, key=lambda j: (rank[j.name], jobs.index(j)))
    while pending:
        for j in pending:
            if needs[j.name] <= done and all(
                rank[o.name] >= rank[j.name] or o.name in done for o in pending if o is not j
            ):
                break
        else:
            raise Unsupported(f"{label}: the needs of {[j.name for j in pending]} form a cycle")
        pending.remove(j)
        done.add(j.name)
        out.append(j)
    return out


# --- GitLab ------------------------------------------------------------------------------------

GL_TOP = {"stages", "variables", "default", "workflow", "image", "cache", "before_script", "after_script"}
GL_JOB = {
    "stage", "image", "needs", "parallel", "before_script", "script", "after_script", "variables",
    "artifacts", "allow_failure", "tags", "timeout", "dependencies", "cache", "interruptible",
    "retry", "when", "coverage",
}


def gitlab(doc, path, ctx):
    label = os.path.basename(path)
    for k in doc:
        if not isinstance(k, str):
            raise Unsupported(f"{label}: top-level key {k!r}")
    unknown = [k for k in doc if k in {"include", "services"}]
    if unknown:
        raise Unsupported(f"{label}: top-level {unknown} is not run by this runner")
    default = doc.get("default") or {}
    for k in default:
        if k not in {"image", "before_script", "after_script", "cache", "tags", "interruptible", "retry", "timeout"}:
            raise Unsupported(f"{label}: default:{k} is not run by this runner")
    stages = [".pre"] + list(doc.get("stages") or ["build", "test", "deploy"]) + [".post"]
    predefined = {
        "CI": "true",
        "GITLAB_CI": "true",
        "CI_PIPELINE_ID": ctx["run_id"],
        "CI_PROJECT_DIR": ctx["workdir"],
        "CI_COMMIT_SHA": ctx["sha"],
        "CI_SERVER": "yes",
    }
    glob_vars = {}
    for k, v in (doc.get("variables") or {}).items():
        if isinstance(v, dict):
            extra = set(v) - {"value", "description", "expand", "options"}
            if extra:
                raise Unsupported(f"{label}: variables:{k}: keys {sorted(extra)}")
            v = v.get("value", "")
        glob_vars[k] = "" if v is None else str(v)
    for k in ctx["overrides"]:
        if k not in glob_vars:
            raise Unsupported(
                f"{label}: --set {k}: the example declares no such variable (it would change nothing)"
            )
    jobs, needs, rank, base_of = [], {}, {}, {}
    counter = itertools.count(1)
    for name, spec in doc.items():
        if name in GL_TOP or name.startswith("."):
            continue
        if not isinstance(spec, dict) or "script" not in spec:
            raise Unsupported(f"{label}: {name}: a job without script (trigger, extends, ...)")
        extra = set(spec) - GL_JOB
        if extra:
            raise Unsupported(f"{label}: {name}: {sorted(extra)} is not run by this runner")
        stage = spec.get("stage", "test")
        if stage not in stages:
            raise Unsupported(f"{label}: {name}: stage {stage} is not in stages")
        par = spec.get("parallel")
        if par is None:
            combos = [None]
        elif isinstance(par, dict) and set(par) == {"matrix"}:
            combos = []
            for entry in par["matrix"]:
                combos += product(entry, f"{label}: {name}")
        else:
            raise Unsupported(f"{label}: {name}: parallel other than parallel:matrix")
        when = spec.get("when", "on_success")
        if when not in ("on_success", "always"):
            raise Unsupported(f"{label}: {name}: when: {when}")
        for idx, combo in enumerate(combos, 1):
            jname = name if combo is None else f"{name}: [{', '.join(combo.values())}]"
            env = dict(predefined)
            env.update(
                CI_JOB_ID=str(next(counter)),
                CI_JOB_NAME=jname,
                CI_JOB_NAME_SLUG=re.sub(r"[^a-z0-9]+", "-", jname.lower()).strip("-"),
                CI_JOB_STAGE=stage,
                CI_NODE_INDEX=str(idx),
                CI_NODE_TOTAL=str(len(combos)),
            )
            layer = dict(glob_vars)
            layer.update({k: "" if v is None else str(v) for k, v in (spec.get("variables") or {}).items()})
            layer.update(combo or {})
            layer.update(ctx["overrides"])  # pipeline and project variables win over the file's
            for k, v in layer.items():
                env[k] = expand_dollar(v, env)
            job = Job(jname, env)
            job.declared = list(layer)
            before = spec.get("before_script", default.get("before_script", doc.get("before_script")))
            after = spec.get("after_script", default.get("after_script", doc.get("after_script")))
            lines = [Line(f"before_script[{i}]", t, f"{label}: {jname}") for i, t in enumerate(strings(before, jname))]
            lines += [Line(f"script[{i}]", t, f"{label}: {jname}") for i, t in enumerate(strings(spec["script"], jname))]
            job.sessions.append(Session(lines, ["-e", "-o", "pipefail"]))
            alines = [Line(f"after_script[{i}]", t, f"{label}: {jname}") for i, t in enumerate(strings(after, jname))]
            if alines:
                job.sessions.append(Session(alines, ["-e", "-o", "pipefail"], ignore_failure=True, title="after_script"))
            art = spec.get("artifacts") or {}
            for p in art.get("paths") or []:
                job.artifacts.append(("artifacts:paths", expand_dollar(str(p), env)))
            for kind, p in (art.get("reports") or {}).items():
                for q in p if isinstance(p, list) else [p]:
                    job.artifacts.append((f"artifacts:reports:{kind}", expand_dollar(str(q), env)))
            jobs.append(job)
            base_of[jname] = name
            rank[jname] = stages.index(stage)
            need = []
            for n in (spec.get("needs") or []) + (spec.get("dependencies") or []):
                n = n["job"] if isinstance(n, dict) else n
                need.append(n)
            needs[jname] = need
    # A need names a job; a parallel job's need is all its instances.
    for j in jobs:
        resolved = set()
        for n in needs[j.name]:
            inst = [o.name for o in jobs if base_of[o.name] == n]
            if not inst:
                raise Unsupported(f"{label}: {j.name} needs {n}, which is no job")
            if any(rank[o] > rank[j.name] for o in inst):
                raise Unsupported(f"{label}: {j.name} needs {n} of a later stage")
            resolved.update(inst)
        needs[j.name] = resolved
    return order_jobs(jobs, needs, rank, label)


# --- GitHub ------------------------------------------------------------------------------------

GH_TOP = {"name", "on", True, "env", "jobs", "permissions", "concurrency", "run-name"}
GH_JOB = {"runs-on", "strategy", "steps", "needs", "env", "name", "timeout-minutes", "permissions"}
GH_STEP = {"uses", "run", "name", "with", "env", "if", "id", "shell", "working-directory", "timeout-minutes"}
TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(\|\|)|([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+)|(\S+))")


def gh_eval(expr, ctx, where):
    """A ${{ }} expression of string literals, context properties and ||."""
    operands, want_operand, pos = [], True, 0
    expr = expr.strip()
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
        lit, orop, prop, other = m.groups()
        if other is not None or (orop and want_operand) or ((lit or prop) and not want_operand):
            raise Unsupported(f"{where}: the expression ${{{{ {expr} }}}} is not known to this runner")
        if orop:
            want_operand = True
            continue
        want_operand = False
        if lit is not None:
            operands.append(lit[1:-1].replace("''", "'"))
            continue
        top, *rest = prop.split(".")
        table = ctx.get(top)
        if table is None or len(rest) != 1:
            raise Unsupported(f"{where}: the expression ${{{{ {expr} }}}} is not known to this runner ({prop})")
        key = rest[0]
        if top == "vars":
            ctx["vars_used"].add(key)
            operands.append(table.get(key, ""))
        elif top == "env":
            operands.append(table.get(key, ""))
        elif key in table:
            operands.append(str(table[key]))
        else:
            raise Unsupported(f"{where}: {prop} is not known to this runner")
    if want_operand or not operands:
        raise Unsupported(f"{where}: the expression ${{{{ {expr} }}}} is not known to this runner")
    return next((o for o in operands if o), operands[-1])


def gh_sub(s, ctx, where):
    if not isinstance(s, str):
        return str(s)
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: gh_eval(m.group(1), ctx, where), s, flags=re.S)


def gh_env(mapping, ctx, where):
    out = {}
    for k, v in (mapping or {}).items():
        out[k] = gh_sub("" if v is None else v, ctx, f"{where}: env {k}")
        ctx["env"][k] = out[k]
    return out


def github(doc, path, ctx):
    label = os.path.basename(path)
    extra = set(doc) - GH_TOP
    if extra:
        raise Unsupported(f"{label}: top-level {sorted(map(str, extra))} is not run by this runner")
    github_ctx = {
        "run_id": ctx["run_id"],
        "run_number": "1",
        "run_attempt": "1",
        "sha": ctx["sha"],
        "workspace": ctx["workdir"],
    }
    runner_ctx = {"temp": os.path.join(ctx["outdir"], "runner-temp"), "os": "Linux"}
    vars_used = set()
    base = {"github": github_ctx, "runner": runner_ctx, "vars": dict(ctx["overrides"]), "vars_used": vars_used}
    wf_ctx = dict(base, env={})
    wf_env = gh_env(doc.get("env"), wf_ctx, label)
    jobs, needs, rank = [], {}, {}
    for jid, spec in (doc.get("jobs") or {}).items():
        extra = set(spec) - GH_JOB
        if extra:
            raise Unsupported(f"{label}: job {jid}: {sorted(extra)} is not run by this runner")
        strat = spec.get("strategy") or {}
        if set(strat) - {"matrix", "fail-fast", "max-parallel"}:
            raise Unsupported(f"{label}: job {jid}: strategy keys {sorted(strat)}")
        matrix = strat.get("matrix")
        if matrix is not None and ({"include", "exclude"} & set(matrix)):
            raise Unsupported(f"{label}: job {jid}: matrix include/exclude is not run by this runner")
        combos = product(matrix, f"{label}: {jid}") if matrix else [None]
        n = spec.get("needs") or []
        n = [n] if isinstance(n, str) else list(n)
        for combo in combos:
            jname = jid if combo is None else f"{jid} ({', '.join(combo.values())})"
            github_ctx["job"] = jid
            jctx = dict(base, matrix=combo or {}, env=dict(wf_env))
            env = {
                "CI": "true",
                "GITHUB_ACTIONS": "true",
                "GITHUB_RUN_ID": ctx["run_id"],
                "GITHUB_RUN_NUMBER": "1",
                "GITHUB_WORKSPACE": ctx["workdir"],
                "GITHUB_JOB": jid,
                "GITHUB_SHA": ctx["sha"],
                "RUNNER_TEMP": runner_ctx["temp"],
                "RUNNER_OS": "Linux",
            }
            if combo is None:
                del jctx["matrix"]
            env.update(wf_env)
            env.update(gh_env(spec.get("env"), jctx, f"{label}: {jname}"))
            job = Job(jname, env)
            job.declared = [k for k in env if not k.startswith(("GITHUB_", "RUNNER_")) and k != "CI"]
            for i, step in enumerate(spec.get("steps") or []):
                extra = set(step) - GH_STEP
                if extra:
                    raise Unsupported(f"{label}: {jname} step {i}: {sorted(extra)} is not run by this runner")
                where = f"{label}: {jname} step {i}"
                cond = str(step.get("if", "success()")).replace("${{", "").replace("}}", "").strip()
                if cond not in ("success()", "always()"):
                    raise Unsupported(f"{where}: if: {step['if']} is not run by this runner")
                sctx = dict(jctx, env=dict(jctx["env"]))
                senv = gh_env(step.get("env"), sctx, where)
                title = gh_sub(step.get("name") or step.get("uses") or step.get("run", "").splitlines()[0], sctx, where)
                if "uses" in step:
                    action = step["uses"]
                    if action.startswith("actions/upload-artifact@"):
                        with_ = step.get("with") or {}
                        for p in gh_sub(with_.get("path", ""), sctx, where).splitlines():
                            if p.strip() and not p.strip().startswith("!"):
                                job.artifacts.append((f"upload-artifact {gh_sub(with_.get('name', ''), sctx, where)}", p.strip()))
                        why = "nothing is uploaded; its paths are checked to exist after the job"
                    elif action.startswith("actions/download-artifact@"):
                        why = "the jobs share the work directory"
                    elif action.startswith("actions/checkout@"):
                        why = "the work directory is the checkout"
                    else:
                        why = "actions are not run by this runner"
                    job.sessions.append(Session([], [], title=f"uses: {action}: skipped ({why})"))
                    continue
                if "run" not in step:
                    raise Unsupported(f"{where}: neither run nor uses")
                shell = step.get("shell")
                flags = {None: ["-e"], "bash": ["-e", "-o", "pipefail"]}.get(shell)
                if flags is None:
                    raise Unsupported(f"{where}: shell: {shell} is not run by this runner")
                text = gh_sub(step["run"], sctx, where)
                job.sessions.append(
                    Session(
                        [Line(f"step {i} ({title})", text, f"{label}: {jname}")],
                        flags,
                        cwd=gh_sub(step.get("working-directory", "."), sctx, where),
                        env=senv,
                        title=f"step {i}: {title}",
                    )
                )
            jobs.append(job)
            needs[jname] = set(n)
            rank[jname] = 0
            job.gh_id = jid
    ids = {j.gh_id for j in jobs}
    for j in jobs:
        missing = needs[j.name] - ids
        if missing:
            raise Unsupported(f"{label}: {j.name} needs {sorted(missing)}, which is no job")
        needs[j.name] = {o.name for o in jobs if o.gh_id in needs[j.name]}
    for k in ctx["overrides"]:
        if k not in vars_used:
            raise Unsupported(f"{label}: --set {k}: the example reads no vars.{k} (it would change nothing)")
    return order_jobs(jobs, needs, rank, label)


# --- running -----------------------------------------------------------------------------------

# `sudo` at a command's start (a line's, or after ; & | ( then do else), with -E at most.
SUDO = re.compile(r"(^|[;&|(]\s*|\b(?:then|do|else)\s+)sudo\s+(?:(?:-E|--preserve-env)\s+)?", re.M)


def without_sudo(text):
    """As root, the line without its sudo (what `sudo CMD` runs as root is CMD)."""
    if os.geteuid() != 0:
        return text
    return SUDO.sub(lambda m: m.group(1), text)


def script_for(session, state):
    out = ["__rx_state=" + shlex.quote(state)]
    out.append("trap 'echo \"run-examples: exit $? from: $BASH_COMMAND\" >&2' ERR")
    out.append(f"cd {shlex.quote(session.cwd)}")
    for i, line in enumerate(session.lines):
        shown = "$ " + line.text.rstrip("\n").replace("\n", "\n  ")
        out.append(f'echo {i} > "$__rx_state"')
        out.append(f"printf '%s\\n' {shlex.quote(shown)}")
        run = without_sudo(line.text)
        if line.skip:
            out.append(f"printf '%s\\n' {shlex.quote('run-examples: skipped: ' + line.skip)}")
            continue
        if run != line.text:
            out.append(f"printf '%s\\n' {shlex.quote('run-examples: root: run without sudo')}")
        out.append(run.rstrip("\n"))
    out.append('echo done > "$__rx_state"')
    return "\n".join(out) + "\n"


def run_session(job, session, workdir, logf, timeout):
    state = os.path.join(os.path.dirname(logf.name), f".state-{os.getpid()}")
    script = os.path.join(os.path.dirname(logf.name), f".script-{os.getpid()}.sh")
    with open(script, "w") as f:
        f.write(script_for(session, state))
    with open(state, "w") as f:
        f.write("start\n")
    # A CI job starts without the variables of whatever runs this runner (an outer CI's own).
    env = {k: v for k, v in os.environ.items() if not re.match(r"(CI|GITHUB|GITLAB|RUNNER|MEMCGTEST)(_|$)", k)}
    env.update(job.env)
    env.update(session.env)
    proc = subprocess.Popen(
        ["bash", "--noprofile", "--norc", *session.flags, script],
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    timed_out = []

    def kill():
        timed_out.append(1)
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            end = time.time() + wait
            while time.time() < end and proc.poll() is None:
                time.sleep(0.5)

    timer = threading.Timer(timeout, kill)
    timer.start()
    err = None
    try:
        for raw in proc.stdout:
            text = raw.decode(errors="replace")
            if text.startswith("run-examples: exit "):
                err = text.strip()[len("run-examples: "):]
            sys.stdout.write(text)
            sys.stdout.flush()
            logf.write(text)
        rc = proc.wait()
    except KeyboardInterrupt:
        kill()
        raise
    finally:
        timer.cancel()
    where = open(state).read().strip()
    os.unlink(state)
    os.unlink(script)
    if rc == 0 or session.ignore_failure:
        if rc:
            log(f"run-examples: {session.title} exited {rc} (ignored, as the CI does)")
        return
    line = session.lines[int(where)] if where.isdigit() else None
    if line is None:
        what = f"(after the last line: state {where})"
    elif "\n" in line.text.strip():
        what = f"{line.label}, its command {err.partition('from: ')[2]!r}" if err else f"{line.label} (exit without a failed command: an exit or a signal)"
    else:
        what = f"{line.label}: {line.text.strip()}"
    extra = f" (killed after {timeout} s)" if timed_out else ""
    raise Failed(f"job {job.name}: exit {rc}{extra} at {what}")


def check_artifacts(job, workdir):
    for what, pat in job.artifacts:
        hits = glob.glob(os.path.join(workdir, pat.rstrip("/")))
        if not hits:
            raise Failed(f"job {job.name}: {what} {pat}: nothing there (the CI would upload nothing)")
        log(f"run-examples: {what} {pat}: present")


def check_ab(job, workdir, since):
    """The A/B's verdict, from the ab.json files its --report wrote during the job."""
    found = []
    for p in glob.glob(os.path.join(workdir, "**", "ab.json"), recursive=True):
        if os.path.getmtime(p) >= since:
            found.append(p)
    if not found:
        raise Failed(f"job {job.name}: runs memcgtest ab but left no ab.json (give it --report DIR)")
    summaries = []
    for p in found:
        d = json.load(open(p))
        rows = d.get("rows") or []
        counts = {}
        for r in rows:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        judged = sum(v for k, v in counts.items() if k != "too-few-samples")
        used = [b for b in d.get("boots", []) if b.get("used")]
        rel = os.path.relpath(p, workdir)
        info = (
            f"{rel}: exit {d.get('exit')}, verdict: {d.get('verdict')}; rounds {d.get('rounds')}, "
            f"{len(used)} boots used of {len(d.get('boots', []))}"
        )
        if used:
            secs = [b["seconds"] for b in used]
            info += f" ({min(secs):.0f}-{max(secs):.0f} s each, host busy at most {max(b['host_busy_cpus'] for b in used):.2f} CPUs)"
        if d.get("second_set"):
            info += f"; a second set of {d.get('rounds')} rounds judged {len(d['second_set'])} changes of the first again"
        if rows:
            ch = [r["change_pct"] for r in rows]
            info += f"; {len(rows)} measurements: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
            info += f"; medians {min(ch):+.1f} % .. {max(ch):+.1f} %"
        log(f"run-examples: ab: {info}")
        if d.get("exit") != 0 or not str(d.get("verdict", "")).startswith("no regression"):
            raise Failed(f"job {job.name}: ab judged no 'no regression' on two identical kernels: {info}")
        if judged == 0 or counts.get("regression"):
            raise Failed(f"job {job.name}: ab: {judged} measurements judged, {counts.get('regression', 0)} regressions: {info}")
        summaries.append(f"{d['verdict']}")
    return "; ".join(summaries)


def prepare(workdir, binary, kernel):
    if os.path.exists(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)
    files = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "-z"], check=True, stdout=subprocess.PIPE
    ).stdout.decode().split("\0")
    for f in filter(None, files):
        src = os.path.join(ROOT, f)
        if os.path.isfile(src):
            dst = os.path.join(workdir, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
    for dst, src in (
        ("target/release/memcgtest", binary),
        ("kernels/base/bzImage", kernel),
        ("kernels/candidate/bzImage", kernel),
    ):
        d = os.path.join(workdir, dst)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copy2(src, d)


def fmt_time(s):
    return f"{int(s // 60)}m{s % 60:04.1f}s"


def run_example(path, jobs, outdir, args, summary):
    label = os.path.basename(path)
    workdir = os.path.join(outdir, "work")
    logs = os.path.join(outdir, "logs")
    prepare(workdir, args.binary, args.kernel)
    os.makedirs(logs)
    os.makedirs(os.path.join(outdir, "runner-temp"), exist_ok=True)
    log(f"run-examples: {label}: work directory {workdir} (the repository's files, "
        f"target/release/memcgtest = {args.binary}, kernels/base/bzImage and kernels/candidate/bzImage = {args.kernel})")
    had_ab = False
    start = time.time()
    for job in jobs:
        log(f"\n=== {label}: job {job.name}")
        t0 = time.time()
        slug = re.sub(r"[^A-Za-z0-9]+", "-", job.name).strip("-")
        with open(os.path.join(logs, slug + ".log"), "w") as logf:
            for s in job.sessions:
                if s.title:
                    log(f"--- {s.title}")
                if s.lines:
                    run_session(job, s, workdir, logf, args.job_timeout)
        check_artifacts(job, workdir)
        note = ", ".join(f"skipped {l.label}" for s in job.sessions for l in s.lines if l.skip)
        if job.runs_ab():
            had_ab = True
            note = check_ab(job, workdir, t0) + (f"; {note}" if note else "")
        took = time.time() - t0
        log(f"=== {label}: job {job.name}: exit 0 in {took:.1f} s")
        summary.append((label, job.name, took, note))
    if not had_ab:
        raise Failed(f"{label}: no job runs memcgtest ab: the example gives no performance verdict")
    return time.time() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("examples", nargs="*", help="the example files (default: ci/examples/*.yml)")
    ap.add_argument("--binary", help="the memcgtest binary (target/release/memcgtest of the checkout)")
    ap.add_argument("--kernel", help="the bzImage both kernels/base and kernels/candidate get")
    ap.add_argument("--out", default="/tmp/memcgtest-ci/examples", help="work directories and logs")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a pipeline variable (GitLab) or configuration variable (GitHub vars.NAME)")
    ap.add_argument("--job-timeout", type=int, default=1800, help="seconds a job may take")
    ap.add_argument("--dry-run", action="store_true", help="print the jobs and their lines, run nothing")
    args = ap.parse_args()
    overrides = {}
    for s in args.set:
        k, sep, v = s.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_]\w*", k):
            ap.error(f"--set {s}: not NAME=VALUE")
        overrides[k] = v
    examples = args.examples or sorted(glob.glob(os.path.join(ROOT, "ci/examples/*.yml")))
    if not args.dry_run and not (args.binary and args.kernel):
        ap.error("--binary and --kernel are needed to run (or --dry-run)")
    import yaml  # PyYAML, from the CI virtualenv

    sha = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], stdout=subprocess.PIPE, text=True).stdout.strip()
    run_id = str(int(time.time()))
    summary, total = [], time.time()
    try:
        plans = []
        for path in examples:
            stem = os.path.splitext(os.path.basename(path))[0]
            outdir = os.path.join(os.path.abspath(args.out), stem)
            ctx = {
                "run_id": run_id,
                "sha": sha,
                "workdir": os.path.join(outdir, "work"),
                "outdir": outdir,
                "overrides": overrides,
            }
            doc = yaml.safe_load(open(path))
            if not isinstance(doc, dict):
                raise Unsupported(f"{path}: not a mapping")
            jobs = github(doc, path, ctx) if "jobs" in doc else gitlab(doc, path, ctx)
            plans.append((path, jobs, outdir))
            log(f"run-examples: {os.path.basename(path)}: {len(jobs)} jobs: {', '.join(j.name for j in jobs)}")
            if args.dry_run:
                for j in jobs:
                    log(f"  job {j.name}" + (" (runs ab: its verdict is checked)" if j.runs_ab() else ""))
                    log("    variables: " + ", ".join(f"{k}={j.env[k]!r}" for k in j.declared))
                    for s in j.sessions:
                        if s.title:
                            log(f"    --- {s.title}")
                        for l in s.lines:
                            shown = l.text.strip().replace("\n", "\n        ")
                            log(f"    {l.label}: {'SKIP ' if l.skip else ''}{shown}")
                    for what, p in j.artifacts:
                        log(f"    {what}: {p}")
                if not any(j.runs_ab() for j in jobs):
                    raise Failed(f"{path}: no job runs memcgtest ab: the example gives no performance verdict")
        if args.dry_run:
            return 0
        times = []
        for path, jobs, outdir in plans:
            if os.path.exists(outdir):
                shutil.rmtree(outdir)
            times.append((os.path.basename(path), run_example(path, jobs, outdir, args, summary)))
    except Unsupported as e:
        log(f"run-examples: UNSUPPORTED: {e}")
        return 2
    except Failed as e:
        log(f"\nrun-examples: FAIL: {e}")
        return 1
    log("\n=== run-examples: summary")
    for label, name, took, note in summary:
        log(f"  {label:22} {name:34} ok {took:6.1f} s" + (f"  {note}" if note else ""))
    for label, t in times:
        log(f"  {label}: {fmt_time(t)}")
    log(f"run-examples: {len(times)} examples, {len(summary)} jobs passed in {fmt_time(time.time() - total)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
