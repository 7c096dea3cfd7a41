"""Folds `perf script -F comm,ip,sym` stacks of allocator probes into call sites.

    python3 fold_allocations.py STACKS REQUESTS

Each sample is one allocation. Only the connection lanes' samples count. A site is
named by the first three frames that are not the allocator's or the standard
library's plumbing (inlined frames included, as perf resolves them), and printed
with its allocations per request, most first.
"""

import collections
import re
import sys

# Frames that say how memory was asked for, not what for.
PLUMBING = re.compile(
    r"^(imalloc|_rjem_|__rust_|__rdl|alloc$|alloc_impl|allocate|box_new|new_uninit|new<|"
    r"with_capacity|try_allocate|grow|finish_grow|reserve|do_reserve|exchange_malloc|"
    r"clone|to_vec|to_owned|to_string|from<|into<|collect|from_iter|spec_|extend|push|"
    r"copy_from_slice|from_str|try_from|map<|call_once|from_elem|vec<|try_reserve|"
    r"alloc::|core::|<alloc|<core)"
)


def frames(sample):
    lines = sample.strip().split("\n")
    return lines[0], [re.sub(r"^\s*[0-9a-f]+ ", "", l).replace(" (inlined)", "") for l in lines[1:]]


def main():
    path, requests = sys.argv[1], int(sys.argv[2])
    sites = collections.Counter()
    total = 0
    for sample in open(path, encoding="utf-8", errors="replace").read().split("\n\n"):
        if not sample.strip():
            continue
        comm, stack = frames(sample)
        if not comm.startswith("switchyard-lan"):
            continue
        total += 1
        named = [f for f in stack if not PLUMBING.match(f)]
        sites[" <- ".join(f[:70] for f in named[:3])] += 1
    print(f"{total / requests:.1f} allocations per request on the lanes")
    for site, n in sites.most_common():
        if n / requests < 0.05:
            break
        print(f"{n / requests:6.2f}  {site}")


if __name__ == "__main__":
    main()
