#!/usr/bin/python3
"""Checks the relative links of README.md and docs/*.md: every [text](path) and ![alt](path)
that is not a URL must name an existing file, and a #fragment into a Markdown file must name one
of its headings (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens) or an
explicit <a id="..."> anchor.

    python3 tools/docs/check_doc_links.py [file.md ...]     exit 1 and list the broken links

Standard library only.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    in_code = False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            in_code = not in_code
        if in_code:
            continue
        out.update(re.findall(r'<a (?:id|name)="([^"]+)"', line))
        if not line.startswith("#"):
            continue
        base = slug(line.lstrip("#"))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path):
    in_code = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if FENCE.match(line):
            in_code = not in_code
        if in_code:
            continue
        for match in LINK.finditer(line):
            yield number, match.group(1)


def main():
    files = [Path(a) for a in sys.argv[1:]] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = 0
    for path in files:
        for number, target in links(path):
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            name, _, fragment = target.partition("#")
            dest = (path.parent / name).resolve() if name else path.resolve()
            problem = None
            if not dest.exists():
                problem = "no such file"
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                problem = f"no heading #{fragment}"
            if problem:
                broken += 1
                print(f"{path.relative_to(ROOT)}:{number}: {target}: {problem}")
    print(f"{len(files)} files checked, {broken} broken links", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
