#!/usr/bin/env python3
"""workload_ab_table.py FILE -- the summary table of bench/workload_ab.sh,
from its JSON lines (the driver's records with "variant" and "round" added).

Per variant and mix, the median over rounds of: nth-malleable's makespan,
its efficiency as the driver computed it ("effic.", against the sequential
reference that variant's own run measured), the same efficiency against the
round's pooled reference ("eff*"), migrations/s, glibc's migrations/s and
nth-malleable's makespan over glibc's of the same run; with the seq mixes
(WORKLOAD_AB_SEQ=1) the seq mix's pooled efficiency ("seq*") and the ratio
eff*/seq* per round; with OpenMP, makespan over OpenMP's.

Why a pooled reference: efficiency = (sum over completed runs of the
sequential best time of that run) / (CPUs x makespan), and every driver run
measures its own sequential best (best of 3 standalone runs) just before
its mixes. On a shared machine that best moves by 10-20 % between two runs
a minute apart (bench/RESULTS.md "eff"), so two variants' efficiencies
differ by their references as much as by their mixes. eff* divides every
variant of a round by one reference: per kernel, the median over that
round's variants of their sequential bests. It is then a ratio of
makespans and runs only, comparable between variants of a round.
"""
import json
import statistics
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def pooled_refs(rows):
    """{round: {kernel: median over the round's variants of seq_best_s}}."""
    per = {}
    for o in rows:
        if o["bench"] != "workload_efficiency":
            continue
        per.setdefault(o["round"], {})[o["variant"]] = o["seq_best_s"]
    out = {}
    for r, byv in per.items():
        kernels = set().union(*(b.keys() for b in byv.values()))
        out[r] = {k: statistics.median(b[k] for b in byv.values() if k in b) for k in kernels}
    return out


def pooled_efficiency(rows, refs, v, r, impl, mix):
    """Sum over the mix's instances of ref[kernel] x runs / (CPUs x makespan),
    or None when the mix is not in the records."""
    eff = next((o for o in rows if o["bench"] == "workload_efficiency" and (o["variant"], o["round"], o["impl"])
                == (v, r, impl) and o["params"]["mix"] == mix), None)
    if eff is None or r not in refs:
        return None
    inst = [o for o in rows if o["bench"] == "degradation" and (o["variant"], o["round"], o["impl"]) == (v, r, impl)
            and o["params"]["mix"] == mix]
    if not inst:
        return None
    work = sum(refs[r][o["params"]["kernel"]] * o["runs"] for o in inst)
    return work / (eff["params"]["cpus"] * eff["makespan_s"])


def main(path):
    rows = load(path)

    def val(v, r, impl, bench, mix):
        for o in rows:
            if (o["variant"], o["round"], o["impl"], o["bench"]) == (v, r, impl, bench) and \
               o.get("params", {}).get("mix") == mix:
                return o["value"]
        return None

    variants = list(dict.fromkeys(o["variant"] for o in rows))
    mixes = list(dict.fromkeys(o["params"]["mix"] for o in rows if o["bench"] == "workload_makespan"))
    rounds = sorted(set(o["round"] for o in rows))
    refs = pooled_refs(rows)
    has_seq = any(o["impl"] == "seq" for o in rows)
    has_omp = any(o["impl"] == "openmp" for o in rows)
    print("\n%-10s %-11s %8s %7s %7s %7s %11s %9s%s%s" % (
        "variant", "mix", "makespan", "effic.", "eff*", "migr/s", "mig/s glibc", "mk/glibc",
        " %7s %9s" % ("seq*", "eff*/seq*") if has_seq else "", " %7s" % "mk/omp" if has_omp else ""))
    for v in variants:
        for m in mixes:
            mk = [val(v, r, "nth-malleable", "workload_makespan", m) for r in rounds]
            ef = [val(v, r, "nth-malleable", "workload_efficiency", m) for r in rounds]
            ep = [pooled_efficiency(rows, refs, v, r, "nth-malleable", m) for r in rounds]
            mg = [val(v, r, "nth-malleable", "migrations_per_s", m) for r in rounds]
            gm = [val(v, r, "glibc", "migrations_per_s", m) for r in rounds]
            gk = [val(v, r, "glibc", "workload_makespan", m) for r in rounds]
            rat = [a / b if a and b else None for a, b in zip(mk, gk)]
            extra = ""
            if has_seq:
                es = [pooled_efficiency(rows, refs, v, r, "seq", m) for r in rounds]
                extra += " %7.3f %9.3f" % (med(es), med([a / b if a and b else None for a, b in zip(ep, es)]))
            if has_omp:
                ok = [val(v, r, "openmp", "workload_makespan", m) for r in rounds]
                extra += " %7.2f" % med([a / b if a and b else None for a, b in zip(mk, ok)])
            print("%-10s %-11s %8.3f %7.3f %7.3f %7.1f %11.1f %9.2f%s   (rounds: migr/s %s; eff* %s)" % (
                v, m, med(mk), med(ef), med(ep), med(mg), med(gm), med(rat), extra,
                " ".join("%.1f" % y if y is not None else "-" for y in mg),
                " ".join("%.3f" % y if y is not None else "-" for y in ep)))
    print("(eff*: against the round's pooled sequential reference; seq*: the seq mix's, the efficiency of\n"
          " perfectly sequential instances in the same round: bench/workload_ab_table.py)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: workload_ab_table.py FILE (workload_ab.sh's JSON lines)\n")
        sys.exit(2)
    try:
        sys.exit(main(sys.argv[1]))
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write("workload_ab_table.py: %s: %s\n" % (sys.argv[1], e))
        sys.exit(1)
