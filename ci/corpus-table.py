#!/usr/bin/env python3
# The table of docs/corpus.md from the corpus patches' headers and the KTAP files of corpus runs:
#   ci/corpus-table.py DIR...   (each DIR holds <reversed fix>-<v1|v2>.ktap, as ci/corpus.sh
#                                writes them in $MEMCGTEST_CI_OUT/corpus; a later DIR wins)
import glob, os, re, sys
runs = sys.argv[1:]  # dirs with <name>-<cg>.ktap
rows=[]
for p in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'kernel-patches', 'corpus', '*.patch'))):
    name=os.path.basename(p)[:-6]
    h={}
    for l in open(p).read().split('\n\n')[0].split('\n'):
        if ': ' in l:
            k,v=l.split(': ',1); h.setdefault(k,v)
    fix=h['Fix']; commit=fix.split()[0]
    subj=fix[len(commit)+1:].strip()
    cg=h.get('Cgroup','v2').split()[0]; layouts={'both':['v2','v1']}.get(cg,[cg])
    res=[]
    for L in layouts:
        found=None
        for d in runs:
            f=f'{d}/{name}-{L}.ktap'
            if os.path.exists(f): found=f
        if not found: res.append(f'{L}: not run'); continue
        t=open(found).read()
        fl=[m for m in re.findall(r'^# ([a-z0-9-]+): (?:failed|error): (.*)$', t, re.M) if 'failed' in m[1] or f'[guards' in m[1]]
        fails=re.findall(r'^# ([a-z0-9-]+): failed: (.*)$', t, re.M)
        errs=[m for m in re.findall(r'^# ([a-z0-9-]+): error: (.*)$', t, re.M) if commit in m[1]]
        allf=fails+errs
        want=h.get('Caught-by','').split(',')
        hit=[f for f in allf if f[0] in want]
        if hit:
            s,msg=hit[0]; chk=msg.split('(')[0] if not msg.startswith('stalled:') else 'the progress watchdog (stalled)'
            tag='tag' if commit in msg else 'no tag'
            res.append(f'{L}: **{s}** {chk} ({tag})')
        elif allf:
            res.append(f'{L}: only {", ".join(sorted(set(f[0] for f in allf)))}')
        else:
            res.append(f'{L}: missed')
    rows.append((name, commit, subj, h.get('Release',''), h.get('Kind',''), '; '.join(res), h.get('Not-caught','')))
print('| reversed fix | upstream fix | release | kind | result | why missed |')
print('|---|---|---|---|---|---|')
for r in rows:
    print(f'| {r[0]} | {r[1]} {r[2]} | {r[3]} | {r[4]} | {r[5]} | {r[6]} |')
