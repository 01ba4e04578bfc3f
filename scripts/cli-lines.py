#!/usr/bin/env python3
"""Lines of crates/cli/src: flag definitions (the `flags.rs` modules, one beside each verb's module
and one for the command line itself: every item deriving clap's Parser/Args/Subcommand/ValueEnum
lives in one, with its doc comments and attributes), the field maps (`fields*.rs`: each library
field's flag name, one `match` arm per field, nothing else), test-only code (#[cfg(test)] items;
the cli's tests live in crates/cli/tests), and the rest: logic. Exits 1, naming the item, when a clap
derive sits outside a flags.rs, so that the split stays mechanical."""
import glob,re,sys
root=sys.argv[1] if len(sys.argv)>1 else 'crates/cli/src'
flags=maps=tests=total=0
stray=[]
for p in sorted(glob.glob(root+'/**/*.rs',recursive=True)):
    L=open(p).read().split('\n')
    if L and L[-1]=='': L=L[:-1]
    total+=len(L)
    if p.endswith('/flags.rs'):
        flags+=len(L); continue
    if re.search(r'/fields(_\w+)?\.rs$',p):
        maps+=len(L)
    i=0
    while i<len(L):
        l=L[i]
        if re.match(r'\s*#\[derive\(.*\b(Parser|Args|Subcommand|ValueEnum|clap::\w+)\b',l):
            stray.append(f'{p}:{i+1}: {l.strip()}')
        if not re.match(r'\s*#\[cfg\(test\)\]',l): i+=1; continue
        # the item's opening brace and its matching close
        k=i; depth=0; opened=False
        while k<len(L):
            depth+=L[k].count('{')-L[k].count('}')
            if '{' in L[k]: opened=True
            if opened and depth<=0: break
            if not opened and L[k].rstrip().endswith(';') and not L[k].lstrip().startswith('#'): break
            k+=1
        tests+=k-i+1
        i=k+1
print(f'total {total}  flag definitions {flags}  field maps {maps}  tests {tests}  logic {total-flags-maps-tests}')
for s in stray:
    print(f'a clap definition outside a flags.rs: {s}',file=sys.stderr)
sys.exit(1 if stray else 0)
