#!/usr/bin/python3
"""Extracts the King James Bible from Debian's bible-kjv-text package and splits it.

Source: /usr/lib/bible.data (package bible-kjv-text, read with `bible` from package
bible-kjv). The KJV text (1611) is in the public domain; see
/usr/share/doc/bible-kjv-text/copyright.

Output format: one chapter per line, its verses joined by single spaces, verse references
dropped, UTF-8, '\n' line ends. Running prose (rather than a verse per line) keeps newlines
rare: a llama-style tokenizer puts no space marker on a word after a newline ("\nAnd" ->
"A" "nd"), which would waste tokens and model capacity.
Split: whole chapters; every 25th chapter (chapter index % 25 == 12, counted over the whole
Bible in canonical order) goes to the validation file, the rest to the training file.
"""
import argparse
import collections
import json
import re
import subprocess

VERSE_LINE = re.compile(r"^(\S+?)(\d+):(\d+) (.*)$")  # e.g. "1Sm3:10 And the LORD came..."
VAL_EVERY, VAL_OFFSET = 25, 12


def read_chapters():
    """Returns [(book, chapter, [verse text, ...]), ...] in canonical order."""
    # `bible -f` toggles pretty-printing off: one "Book<ch>:<v> text" line per verse.
    raw = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], check=True, capture_output=True,
                         text=True).stdout
    chapters = collections.OrderedDict()
    for line in raw.splitlines():
        if not line.strip():
            continue
        m = VERSE_LINE.match(line)
        if not m:
            raise ValueError(f"unexpected line from `bible`: {line!r}")
        book, chapter, _, text = m.groups()
        chapters.setdefault((book, int(chapter)), []).append(" ".join(text.split()))
    return [(b, c, verses) for (b, c), verses in chapters.items()]


def package_version(name):
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], check=True,
                          capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--train", required=True, help="output training text")
    ap.add_argument("--val", required=True, help="output validation text")
    ap.add_argument("--provenance", required=True, help="output provenance JSON")
    args = ap.parse_args()

    chapters = read_chapters()
    train, val, val_refs = [], [], []
    for i, (book, chapter, verses) in enumerate(chapters):
        if i % VAL_EVERY == VAL_OFFSET:
            val.append(" ".join(verses))
            val_refs.append(f"{book} {chapter}")
        else:
            train.append(" ".join(verses))
    for path, lines in ((args.train, train), (args.val, val)):
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")

    provenance = {
        "corpus": "King James Version of the Bible (1611), public domain",
        "debian_packages": {p: package_version(p) for p in ("bible-kjv-text", "bible-kjv")},
        "extraction": "bible -f gen1:1-rev22:21; verse references stripped, whitespace collapsed",
        "chapters": len(chapters),
        "split": f"validation = chapters with index % {VAL_EVERY} == {VAL_OFFSET}",
        "validation_chapters": val_refs,
        "train_chapters": len(train),
        "val_chapters": len(val),
    }
    with open(args.provenance, "w", encoding="utf-8") as f:
        json.dump(provenance, f, indent=1)
        f.write("\n")
    print(f"{len(chapters)} chapters: {len(train)} train, {len(val)} validation")


if __name__ == "__main__":
    main()
