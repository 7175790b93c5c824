#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Every relative link of the tree's markdown resolves: README.md,
# CHANGELOG.md and every *.md under docs/, bench/, selftests/, user/ and
# the rest (the tracked ones, and new ones git does not ignore).  A link
# [text](path) or [ref]: path must name an existing file or directory,
# relative to the file that holds it; a #fragment must name a heading of
# the target markdown file (GitHub's anchors: lower case, punctuation
# dropped, spaces to '-', "-N" for repeats).  Links to other schemes
# (https:, mailto:) and anything inside code (fenced blocks, `spans`) are
# not looked at.  TAP; the last line "N passed, N failed, 0 skipped".
#
# Usage: scripts/link-check.py [DIR]   (default: this tree)
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), '..'))
INLINE = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
REFDEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$')
HEADING = re.compile(r'^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$')
ANCHOR_TAG = re.compile(r'<a\s+(?:name|id)="([^"]+)"')


def prose_lines(text):
    """The lines outside fenced code blocks, inline code spans blanked."""
    fence = None
    for line in text.split('\n'):
        m = re.match(r'^\s{0,3}(`{3,}|~{3,})', line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * len(m.group(1))
                yield ''
                continue
            if m.group(1).startswith(fence):
                fence = None
                yield ''
                continue
        if fence is not None:
            yield ''
            continue
        yield re.sub(r'(`+).*?\1', '', line)


def slug(title):
    t = re.sub(r'<[^>]+>', '', title)               # inline HTML
    t = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', t)  # links: their text
    t = t.replace('`', '').lower()
    t = re.sub(r'[^\w\- ]', '', t)
    return t.replace(' ', '-')


anchor_cache = {}


def anchors(path):
    if path not in anchor_cache:
        seen = {}
        names = set()
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        for line in prose_lines(text):
            m = HEADING.match(line)
            if m:
                s = slug(m.group(2))
                n = seen.get(s, 0)
                seen[s] = n + 1
                names.add(s if n == 0 else '%s-%d' % (s, n))
            names.update(ANCHOR_TAG.findall(line))
        anchor_cache[path] = names
    return anchor_cache[path]


def md_files():
    try:
        out = subprocess.run(['git', '-C', ROOT, 'ls-files', '--cached', '--others',
                              '--exclude-standard', '*.md'],
                             check=True, capture_output=True, text=True).stdout
        return sorted(p for p in out.split('\n') if p and os.path.isfile(os.path.join(ROOT, p)))
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(ROOT):
            dirs[:] = [x for x in dirs if not x.startswith('.') and x != 'build']
            found += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f.endswith('.md')]
        return sorted(found)


def check(rel):
    bad = []
    path = os.path.join(ROOT, rel)
    with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read()
    nlinks = 0
    for lineno, line in enumerate(prose_lines(text), 1):
        targets = INLINE.findall(line)
        m = REFDEF.match(line)
        if m:
            targets.append(m.group(1))
        for t in targets:
            if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', t):
                continue                            # https:, mailto:, ...
            nlinks += 1
            target, _, frag = t.partition('#')
            dest = path if not target else os.path.normpath(
                os.path.join(os.path.dirname(path), target))
            if not os.path.exists(dest):
                bad.append('%s:%d: %s: no such file' % (rel, lineno, t))
            elif frag and dest.endswith('.md') and os.path.isfile(dest) \
                    and frag not in anchors(dest):
                bad.append('%s:%d: %s: no heading #%s in %s' %
                           (rel, lineno, t, frag, os.path.relpath(dest, ROOT)))
    return nlinks, bad


def main():
    files = md_files()
    print('TAP version 13')
    print('1..%d' % len(files))
    passed = failed = 0
    for n, rel in enumerate(files, 1):
        nlinks, bad = check(rel)
        if bad:
            print('not ok %d - %s: %d of %d links dangle' % (n, rel, len(bad), nlinks))
            for b in bad:
                print('#   ' + b)
            failed += 1
        else:
            print('ok %d - %s: %d links' % (n, rel, nlinks))
            passed += 1
    print('%d passed, %d failed, 0 skipped' % (passed, failed))
    return 1 if failed or not files else 0


if __name__ == '__main__':
    sys.exit(main())
