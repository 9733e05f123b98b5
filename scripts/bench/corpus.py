#!/usr/bin/env python3
"""Builds the tokenizer benchmark corpus: target/bench-corpus/<category>.txt.

Every byte is either text shipped inside a package installed on the build
machine or generated here from fixed seeds; nothing is downloaded. Sources:

  prose_en          Newton's Opticks (Project Gutenberg, public domain; tests/data).
  docs_en           Vim's user manual (vim-runtime, /usr/share/vim/vim*/doc/usr_*.txt; Vim license).
  code_python       CPython's standard library .py files (PSF license).
  code_rust         src/**/*.rs of the crates pinned in Cargo.lock, from ~/.cargo/registry/src
                    (MIT / Apache-2.0; `cargo fetch` puts them there).
  code_c_js_sh_sql  CPython's C headers, npm's JavaScript (/usr/lib/node_modules/npm),
                    bash-completion scripts, PostgreSQL's extension SQL.
  json              iso-codes JSON (/usr/share/iso-codes, LGPL), as shipped and as JSON Lines;
                    package.json files of npm's bundled modules; jsonschema's metaschemas (venv).
  csv               iso-codes and Unicode character data rendered as CSV/TSV; the venv's
                    *.dist-info/RECORD files; distro-info CSV.
  html_xml          The Rust Book as rendered by rustdoc (the toolchain's rust-docs), npm's
                    HTML docs, freedesktop.org's shared-mime-info XML, Maven .pom files.
  markdown          *.md of the Cargo.lock crates, this repository's docs, npm's docs.
  config            Cargo.toml.orig of the Cargo.lock crates, YAML (crates' CI files, the
                    Google Cloud SDK's), ALSA and fontconfig configuration files.
  cjk, cyrillic_greek, arabic_hebrew, indic_thai_other, latin_accented
                    Translated text in those scripts: Vim's tutors (28 languages), the
                    translated manual pages in /usr/share/man/<lang> (roff markup stripped),
                    and the translated strings (msgstr) of gettext catalogues in
                    /usr/share/locale/<lang>/LC_MESSAGES/*.mo; languages interleaved.
  emoji             Generated chat/social-media lines with emoji, skin tones, ZWJ
                    sequences, flags, keycaps (emoji from Python's unicodedata).
  whitespace        Generated: standard-library code re-indented (deep spaces, tabs),
                    space-aligned tables, deeply nested JSON, trailing blanks, blank-line
                    runs, CRLF, Unicode spaces.
  base64_hex        certifi's cacert.pem (MPL-2.0, venv), plus generated base64 (PEM, data:
                    URIs, JWTs), hex digests, hexdumps, UUIDs, C byte arrays.
  no_space_runs     Generated: random letter runs (16 to 2048 bytes), concatenated words,
                    long identifiers, FASTA sequences, minified JSON, URL-encoded strings.
  numbers           Generated: ledgers, measurements, arrays of floats, long integers,
                    dates, phone numbers, IPs, versions.
  urls_paths        URLs found in the sources above, plus the venv's and registry's file
                    paths (POSIX, Windows, file://), as lists, pip/cargo-like lines, links.
  logs              Generated access logs, syslog, JSON logs, Python tracebacks (real
                    stdlib paths), Rust and Java service logs.
  math_latex        numpy's `.. math::` blocks and :math: roles (BSD), plus generated
                    LaTeX (equations, environments, theorem prose).
  chat              Generated conversations mixing prose, code, JSON, lists, emoji and the
                    multilingual text above, as plain turns and as JSON Lines.

Each category is about 400 kB (at least 200 kB is asserted; 24 categories, about 9.6 MB).
The text is paragraphs joined by "\\n\\n", each at most 4096 bytes (longer ones are cut at
line ends), so the shared document rule (split on "\\n\\n", merge consecutive parts while
the document stays <= 4096 bytes; see split_documents) gives documents of up to 4 kB.

Deterministic: sorted file lists, fixed seeds (random.Random(crc32(category))). The
output depends on the installed packages (the venv in target/py, Cargo.lock's crates,
the Debian packages above); manifest.json records each category's size, document count
and sha256. A rebuild is skipped when target/bench-corpus/VERSION holds this VERSION and
Cargo.lock's hash and all files exist (--force rebuilds). Categories with a missing
source shrink; a category under 200 kB is an error.

Run: python3 scripts/bench/corpus.py [--out DIR] [--force]
"""

from __future__ import annotations

import argparse
import base64
import csv
import glob
import gzip
import hashlib
import io
import json
import os
import pathlib
import random
import re
import struct
import subprocess
import sys
import sysconfig
import tomllib
import unicodedata
import uuid
import zlib

VERSION = "1"
REPO = pathlib.Path(__file__).resolve().parents[2]
TARGET = 400_000          # bytes per category (stops at the first paragraph past it)
MIN_CATEGORY = 200 * 1024  # asserted
MIN_TOTAL = 5 * 1024 * 1024
MAX_PART = 4096           # bytes per paragraph, so documents stay <= 4 kB
DOC_LIMIT = 4096


# ----------------------------------------------------------------------------
# The document rule, shared with tokenizer_python.py and corpus_bench.rs.

def split_documents(text: str, limit: int = DOC_LIMIT) -> list:
    """Split on "\\n\\n"; merge consecutive parts (re-joined with "\\n\\n") while the
    merged document is at most ``limit`` UTF-8 bytes; a longer part stands alone.
    Empty documents are dropped."""
    docs, cur, cur_len = [], None, 0
    for part in text.split("\n\n"):
        n = len(part.encode("utf-8"))
        if cur is not None and cur_len + 2 + n <= limit:
            cur += "\n\n" + part
            cur_len += 2 + n
        else:
            if cur:
                docs.append(cur)
            cur, cur_len = part, n
    if cur:
        docs.append(cur)
    return docs


# ----------------------------------------------------------------------------
# Helpers.

def blen(s: str) -> int:
    return len(s.encode("utf-8"))


def read_text(path) -> str | None:
    """A file's text if it is UTF-8, else None."""
    try:
        data = pathlib.Path(path).read_bytes()
    except OSError:
        return None
    if path.__str__().endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except OSError:
            return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def files(pattern: str) -> list:
    """Sorted regular files matching a glob (recursive ** allowed)."""
    return sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))


def _cut_line(line: str, limit: int) -> list:
    out, cur, n = [], [], 0
    for ch in line:
        b = blen(ch)
        if n + b > limit:
            out.append("".join(cur))
            cur, n = [], 0
        cur.append(ch)
        n += b
    if cur:
        out.append("".join(cur))
    return out


def chunk(text: str, limit: int = MAX_PART) -> list:
    """Paragraphs of ``text`` (split on "\\n\\n"), each at most ``limit`` bytes:
    longer ones are cut at line ends (a line longer than limit is cut anywhere)."""
    out = []
    for part in text.split("\n\n"):
        if blen(part) <= limit:
            if part.strip("\n"):
                out.append(part)
            continue
        cur, n = [], 0
        for line in part.split("\n"):
            pieces = _cut_line(line, limit) if blen(line) > limit else [line]
            for piece in pieces:
                b = blen(piece) + 1
                if cur and n + b > limit:
                    out.append("\n".join(cur))
                    cur, n = [], 0
                cur.append(piece)
                n += b
        if cur and "".join(cur).strip("\n"):
            out.append("\n".join(cur))
    return out


def take(parts, target: int = TARGET) -> list:
    """Leading parts until the joined size reaches ``target``."""
    out, size = [], 0
    for part in parts:
        if size >= target:
            break
        out.append(part)
        size += blen(part) + 2
    return out


def round_robin(groups) -> list:
    """Interleave lists of parts: one from each (non-empty) group in turn."""
    groups = [list(g) for g in groups if g]
    out, i = [], 0
    while any(groups):
        for g in groups:
            if i < len(g):
                out.append(g[i])
        i += 1
        if all(i >= len(g) for g in groups):
            break
    return out


def file_parts(paths, rng=None, per_file_limit=None, budget=2 * TARGET) -> list:
    """Chunked paragraphs of UTF-8 files, in the given (or shuffled) order, up to
    about ``budget`` bytes; the paragraphs of each file stay together."""
    paths = list(paths)
    if rng is not None:
        rng.shuffle(paths)
    out, size = [], 0
    for p in paths:
        if size >= budget:
            break
        t = read_text(p)
        if not t or not t.strip():
            continue
        parts = chunk(t)
        if per_file_limit is not None:
            parts = take(parts, per_file_limit)
        out.extend(parts)
        size += sum(blen(x) + 2 for x in parts)
    return out


def lines_to_parts(lines, rng, lo=8, hi=30) -> list:
    """Group lines into paragraphs of lo..hi lines (chunked to MAX_PART)."""
    out, i = [], 0
    lines = list(lines)
    while i < len(lines):
        k = rng.randint(lo, hi)
        out.extend(chunk("\n".join(lines[i:i + k])))
        i += k
    return out


def stdlib_dir() -> pathlib.Path:
    return pathlib.Path(sysconfig.get_paths()["stdlib"])


def venv_site() -> pathlib.Path | None:
    hits = sorted(glob.glob(str(REPO / "target" / "py" / "lib" / "python3*" / "site-packages")))
    if hits:
        return pathlib.Path(hits[0])
    return pathlib.Path(sysconfig.get_paths()["purelib"])


def registry_crates() -> list:
    """Source directories of the crates in Cargo.lock present in ~/.cargo/registry/src."""
    cargo_home = pathlib.Path(os.environ.get("CARGO_HOME", pathlib.Path.home() / ".cargo"))
    lock = tomllib.loads((REPO / "Cargo.lock").read_text())
    roots = sorted(glob.glob(str(cargo_home / "registry" / "src" / "*")))
    out = []
    for pkg in sorted(lock.get("package", []), key=lambda p: (p["name"], p["version"])):
        if "source" not in pkg:
            continue
        for root in roots:
            d = pathlib.Path(root) / f"{pkg['name']}-{pkg['version']}"
            if d.is_dir():
                out.append(d)
                break
    return out


def rust_docs() -> pathlib.Path | None:
    try:
        sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True,
                                 text=True, check=True, cwd=REPO).stdout.strip()
        d = pathlib.Path(sysroot) / "share" / "doc" / "rust" / "html"
        if d.is_dir():
            return d
    except (OSError, subprocess.CalledProcessError):
        pass
    hits = sorted(glob.glob(str(pathlib.Path.home() / ".rustup/toolchains/stable-*/share/doc/rust/html")))
    return pathlib.Path(hits[0]) if hits else None


def vim_dir() -> pathlib.Path | None:
    hits = sorted(glob.glob("/usr/share/vim/vim[0-9]*"))
    return pathlib.Path(hits[-1]) if hits else None


def words_from(text: str) -> list:
    return re.findall(r"[A-Za-z]{2,}", text)


# ----------------------------------------------------------------------------
# gettext catalogues and manual pages.

def mo_pairs(path) -> list:
    """(msgid, msgstr) pairs of a .mo file, plural forms split, header skipped."""
    try:
        data = pathlib.Path(path).read_bytes()
    except OSError:
        return []
    if len(data) < 28:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic == 0x950412DE else ">" if magic == 0xDE120495 else None
    if e is None:
        return []
    _, n, ooff, toff = struct.unpack(e + "4I", data[4:20])
    out = []
    try:
        for i in range(n):
            ol, oo = struct.unpack(e + "2I", data[ooff + 8 * i: ooff + 8 * i + 8])
            tl, to = struct.unpack(e + "2I", data[toff + 8 * i: toff + 8 * i + 8])
            msgid = data[oo:oo + ol]
            if not msgid:
                continue
            if b"\x04" in msgid:
                msgid = msgid.split(b"\x04", 1)[1]
            try:
                ids = msgid.decode("utf-8").split("\0")
                strs = data[to:to + tl].decode("utf-8").split("\0")
            except UnicodeDecodeError:
                return out
            for j, s in enumerate(strs):
                out.append((ids[min(j, len(ids) - 1)], s))
    except struct.error:
        pass
    return out


_ROFF_ESC = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""), (re.compile(r"\\s[+-]?\d"), ""),
    (re.compile(r"\\\(em|\\\[em\]"), "—"), (re.compile(r"\\\(en|\\\[en\]"), "–"),
    (re.compile(r"\\\(bu|\\\[bu\]"), "•"), (re.compile(r"\\\([lr]q|\\\[[lr]q\]"), '"'),
    (re.compile(r"\\\(aq|\\\[aq\]"), "'"), (re.compile(r"\\-"), "-"), (re.compile(r"\\&|\\:|\\%"), ""),
    (re.compile(r"\\e"), "\\\\"), (re.compile(r"\\ "), " "), (re.compile(r"\\\(..|\\\[[^\]]*\]|\\\*."), ""),
    (re.compile(r"\\c$"), ""),
]


def roff_text(src: str) -> str:
    """Running text of a roff manual page: macros dropped, section titles kept,
    paragraphs separated by blank lines."""
    paras, cur = [], []

    def flush():
        if cur:
            paras.append("\n".join(cur))
            cur.clear()

    for line in src.splitlines():
        if line.startswith((".\\\"", "'\\\"", "\\\"")):
            continue
        if line.startswith((".", "'")):
            m = re.match(r"[.']\s*([A-Za-z]+)\s*(.*)", line)
            if not m:
                continue
            macro, arg = m.groups()
            arg = arg.replace('"', "").strip()
            if macro in ("SH", "SS"):
                flush()
                if arg:
                    paras.append(arg)
            elif macro in ("PP", "P", "LP", "TP", "IP", "HP", "sp", "RS", "RE", "in", "ti"):
                flush()
                if macro == "IP" and arg:
                    cur.append(arg.split(" ")[0])
            elif macro in ("B", "I", "BR", "IR", "RB", "BI", "IB", "RI", "SM", "SB", "UR", "MT", "OP"):
                if arg:
                    cur.append(arg)
            elif macro == "br":
                continue
            continue
        if line.strip():
            cur.append(line)
        else:
            flush()
    flush()
    text = "\n\n".join(paras)
    for pattern, repl in _ROFF_ESC:
        text = pattern.sub(repl, text)
    return text


SCRIPT_RANGES = {
    "cjk": "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff",
    "cyrillic_greek": "\u0370-\u03ff\u1f00-\u1fff\u0400-\u052f",
    "arabic_hebrew": "\u0590-\u05ff\u0600-\u06ff\u0750-\u077f\u0780-\u07bf\ufb1d-\ufdff\ufe70-\ufeff",
    "indic_thai_other": "\u0900-\u0dff\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff"
                        "\u10a0-\u10ff\u0530-\u058f\u1200-\u139f",
    "latin_accented": "\u00c0-\u024f\u1e00-\u1eff",
}

LANGUAGES = {
    # locale directory: vim tutor suffixes
    "cjk": {"zh_CN": ["zh_cn"], "zh_TW": ["zh_tw"], "ja": ["ja"], "ko": ["ko"]},
    "cyrillic_greek": {"ru": ["ru"], "uk": ["uk"], "bg": ["bg"], "sr": ["sr"], "be": [], "mk": [],
                       "el": ["el"], "kk": []},
    "arabic_hebrew": {"ar": [], "he": [], "fa": [], "ur": [], "ug": [], "ps": [], "ckb": [], "yi": []},
    "indic_thai_other": {"hi": [], "mr": [], "ne": [], "bn": [], "pa": [], "gu": [], "or": [], "ta": [],
                         "te": [], "kn": [], "ml": [], "si": [], "th": [], "lo": [], "km": [], "my": [],
                         "ka": [], "hy": [], "am": []},
    "latin_accented": {"de": ["de"], "fr": ["fr"], "es": ["es"], "pt_BR": ["pt"], "it": ["it"],
                       "pl": ["pl"], "cs": ["cs"], "sk": ["sk"], "hu": ["hu"], "ro": [], "tr": ["tr"],
                       "vi": ["vi"], "hr": ["hr"], "lv": ["lv"], "ca": ["ca"], "sv": ["sv"],
                       "da": ["da"], "nb": ["nb"], "nl": ["nl"], "eo": ["eo"], "is": [], "lt": []},
}


def language_parts(group: str, lang: str, tutors: list, rng: random.Random) -> list:
    """Paragraphs of one language, interleaving its Vim tutor, its translated
    manual pages and its translated gettext strings (six to twelve a paragraph)."""
    script = re.compile(f"[{SCRIPT_RANGES[group]}]")
    tutor = []
    vim = vim_dir()
    for t in tutors:
        if vim is not None:
            tutor.extend(file_parts([vim / "tutor" / f"tutor.{t}.utf-8"]))
    man = []
    for p in files(f"/usr/share/man/{lang}/man*/*"):
        raw = read_text(p)
        if raw:
            txt = roff_text(raw)
            if script.search(txt):
                man.append(chunk(txt))
    rng.shuffle(man)
    man = [x for parts in man for x in parts]
    strings, seen, size = [], set(), 0
    for p in files(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo"):
        if size > TARGET:
            break
        for msgid, msgstr in mo_pairs(p):
            s = msgstr.strip()
            if not s or s == msgid.strip() or s in seen:
                continue
            if group != "latin_accented" and not script.search(s):
                continue
            seen.add(s)
            strings.append(s)
            size += blen(s)
    return round_robin([tutor, man, lines_to_parts(strings, rng, 6, 12)])


def multilingual(group: str, rng: random.Random) -> list:
    per_lang = [language_parts(group, lang, tutors, rng) for lang, tutors in LANGUAGES[group].items()]
    return round_robin(per_lang)


# ----------------------------------------------------------------------------
# Categories from package text.

def cat_prose_en(rng):
    return file_parts([REPO / "tests" / "data" / "opticks.txt"])


def cat_docs_en(rng):
    vim = vim_dir()
    return file_parts(files(str(vim / "doc" / "usr_*.txt"))) if vim else []


def stdlib_py() -> list:
    root = stdlib_dir()
    out = []
    for p in files(str(root / "**" / "*.py")):
        rel = os.path.relpath(p, root)
        if rel.split(os.sep)[0] in ("test", "site-packages", "idlelib", "lib2to3", "tkinter") or "/tests/" in p:
            continue
        out.append(p)
    return out


def cat_code_python(rng):
    return file_parts(stdlib_py(), rng, per_file_limit=60_000)


def cat_code_rust(rng):
    paths = [p for d in registry_crates() for p in files(str(d / "src" / "**" / "*.rs"))]
    return file_parts(paths, rng, per_file_limit=40_000)


def cat_code_c_js_sh_sql(rng):
    inc = sysconfig.get_paths()["include"]
    groups = [
        files(os.path.join(inc, "**", "*.h")),
        files("/usr/lib/node_modules/npm/lib/**/*.js"),
        files("/usr/share/bash-completion/completions/*"),
        files("/usr/share/postgresql/*/extension/*.sql"),
    ]
    return round_robin(file_parts(g, rng, per_file_limit=20_000) for g in groups)


def iso_json(name):
    t = read_text(f"/usr/share/iso-codes/json/{name}.json")
    return json.loads(t) if t else {}


def cat_json(rng):
    shipped = file_parts(files("/usr/share/iso-codes/json/iso_*.json"), rng, per_file_limit=60_000)
    jsonl = []
    for name in ("iso_3166-2", "iso_639-3", "iso_4217", "iso_15924"):
        for key, records in sorted(iso_json(name).items()):
            lines = [json.dumps({"source": name, **r}, ensure_ascii=rng.random() < 0.5) for r in records]
            jsonl.extend(lines_to_parts(lines, rng, 10, 40))
    npm = file_parts(files("/usr/lib/node_modules/npm/node_modules/*/package.json")
                     + files("/usr/lib/node_modules/npm/package.json"), rng)
    site = venv_site()
    schemas = file_parts(files(str(site / "jsonschema_specifications" / "schemas" / "**" / "*"))
                         + files(str(REPO / "crates" / "tokenize" / "data" / "*.json")), rng)
    return round_robin([shipped, jsonl, npm, schemas])


def cat_csv(rng):
    groups = []
    for name, cols in (("iso_639-3", ["alpha_3", "alpha_2", "name", "inverted_name", "scope", "type"]),
                       ("iso_3166-2", ["code", "name", "type", "parent"]),
                       ("iso_4217", ["alpha_3", "numeric", "name"]),
                       ("iso_3166-1", ["alpha_2", "alpha_3", "numeric", "name", "official_name", "flag"])):
        for key, records in sorted(iso_json(name).items()):
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n", delimiter="," if name != "iso_3166-2" else "\t")
            rows = [[r.get(c, "") for c in cols] for r in records]
            for i in range(0, len(rows), 40):
                w.writerow(cols)
                w.writerows(rows[i:i + 40])
                buf.write("\n")
            groups.append(chunk(buf.getvalue()))
    # Unicode character data, as in UnicodeData.txt (semicolon-separated).
    ucd = []
    for cp in list(range(0x20, 0x2FFF)) + list(range(0x1F300, 0x1FAFF)):
        ch = chr(cp)
        name = unicodedata.name(ch, "")
        if not name:
            continue
        ucd.append(";".join([f"{cp:04X}", name, unicodedata.category(ch), str(unicodedata.combining(ch)),
                             unicodedata.bidirectional(ch), unicodedata.decomposition(ch),
                             str(unicodedata.decimal(ch, "")), str(unicodedata.numeric(ch, "")),
                             "Y" if unicodedata.mirrored(ch) else "N", " ".join(f"{ord(c):04X}" for c in ch.upper())]))
    groups.append(lines_to_parts(ucd, rng, 20, 60))
    site = venv_site()
    groups.append(file_parts(files(str(site / "*.dist-info" / "RECORD")), rng))
    groups.append(file_parts(files("/usr/share/distro-info/*.csv")))
    return round_robin(groups)


def cat_html_xml(rng):
    groups = []
    docs = rust_docs()
    if docs is not None:
        groups.append(file_parts(files(str(docs / "book" / "ch*.html")), rng, per_file_limit=40_000))
    groups.append(file_parts(files("/usr/lib/node_modules/npm/docs/output/**/*.html"), rng, per_file_limit=30_000))
    mime = read_text("/usr/share/mime/packages/freedesktop.org.xml") or ""
    groups.append(chunk(mime))
    groups.append(file_parts(files("/usr/share/maven-repo/**/*.pom"), rng, per_file_limit=20_000))
    groups.append(file_parts(files("/usr/share/doc/*/*.html") + files("/usr/share/doc/*/html/*.html"), rng,
                             per_file_limit=20_000))
    return round_robin(groups)


def cat_markdown(rng):
    crates = [p for d in registry_crates() for p in files(str(d / "*.md")) + files(str(d / "docs" / "**" / "*.md"))]
    repo = files(str(REPO / "docs" / "*.md")) + files(str(REPO / "README.md"))
    npm = files("/usr/lib/node_modules/npm/docs/content/**/*.md") + files("/usr/lib/node_modules/npm/node_modules/*/README.md")
    return round_robin([file_parts(crates, rng, per_file_limit=30_000), file_parts(repo, rng),
                        file_parts(npm, rng, per_file_limit=20_000)])


def cat_config(rng):
    crates = registry_crates()
    toml = [p for d in crates for p in files(str(d / "Cargo.toml.orig"))]
    yaml = [p for d in crates for p in files(str(d / ".github" / "**" / "*.yml"))]
    yaml += files("/usr/lib/google-cloud-sdk/lib/**/*.yaml")
    conf = files("/usr/share/alsa/**/*.conf") + files("/usr/share/fontconfig/conf.avail/*.conf")
    return round_robin([file_parts(toml, rng), file_parts(yaml, rng, per_file_limit=12_000),
                        file_parts(conf, rng, per_file_limit=12_000)])


# ----------------------------------------------------------------------------
# Generated categories.

CASUAL = [
    "omg this is amazing", "see you tomorrow", "can't wait for the weekend", "happy birthday!!",
    "that meeting could have been an email", "just landed", "good morning everyone", "lol same",
    "we did it", "coffee first", "new blog post is up", "thanks so much for the help",
    "who's coming tonight?", "best day ever", "so proud of this team", "running late, sorry",
    "the build is green again", "merged, thanks for the review", "pizza or tacos?", "on my way",
    "congrats on the launch", "it's raining again", "finally finished the book", "miss you all",
    "this is fine", "ship it", "let's gooo", "weekend plans: sleep", "hot take: tabs > spaces",
    "love this song", "the cat knocked my coffee over", "check out the new release notes",
    "good luck on the exam", "feeling grateful today", "brb", "goodnight", "it works on my machine",
]
ZWJ = ["👨\u200d👩\u200d👧\u200d👦", "👩\u200d💻", "🧑\u200d🚀", "🏳\ufe0f\u200d🌈", "❤\ufe0f\u200d🔥",
       "👨🏽\u200d💻", "🧑🏿\u200d🍳", "👩\u200d❤\ufe0f\u200d👨", "🐻\u200d❄\ufe0f", "😮\u200d💨",
       "🧔🏻\u200d♂\ufe0f", "👁\ufe0f\u200d🗨\ufe0f", "🏃\u200d♀\ufe0f", "🤦🏼\u200d♂\ufe0f"]
PEOPLE = "👍👋🙏👏💪✌🤞👌🤙👊🙌🤝🫶👆"


def emoji_pool():
    out = []
    for lo, hi in ((0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F900, 0x1F9FF),
                   (0x1FA70, 0x1FAFF), (0x2600, 0x27BF)):
        for cp in range(lo, hi + 1):
            ch = chr(cp)
            if unicodedata.category(ch) == "So" and unicodedata.name(ch, ""):
                out.append(ch)
    return out


def flags():
    codes = sorted(r["alpha_2"] for r in iso_json("iso_3166-1").get("3166-1", []))
    codes = codes or ["US", "GB", "FR", "DE", "JP", "BR", "IN", "NG", "KR", "UA"]
    return ["".join(chr(0x1F1E6 + ord(c) - ord("A")) for c in code) for code in codes]


def cat_emoji(rng):
    pool, fl = emoji_pool(), flags()

    def one():
        r = rng.random()
        if r < 0.55:
            return rng.choice(pool[:400]) if rng.random() < 0.7 else rng.choice(pool)
        if r < 0.7:
            return rng.choice(PEOPLE) + chr(0x1F3FB + rng.randrange(5))
        if r < 0.8:
            return rng.choice(ZWJ)
        if r < 0.9:
            return rng.choice(fl)
        if r < 0.95:
            return rng.choice("0123456789#*") + "\ufe0f\u20e3"
        return rng.choice("❤☀☺✨⭐✅⚡") + "\ufe0f"

    lines = []
    for _ in range(12000):
        kind = rng.random()
        if kind < 0.15:
            line = "".join(one() for _ in range(rng.randint(1, 12)))
        elif kind < 0.25:
            line = one() * rng.randint(2, 20)
        else:
            words = []
            for _ in range(rng.randint(1, 3)):
                words.extend(rng.choice(CASUAL).split())
            for _ in range(rng.randint(1, 5)):
                pos = rng.randint(0, len(words))
                e = one() * (rng.randint(2, 4) if rng.random() < 0.2 else 1)
                words.insert(pos, e)
            if rng.random() < 0.3:
                words.append("#" + rng.choice(["tbt", "mondaymotivation", "rustlang", "python", "blessed", "travel", "foodie"]))
            if rng.random() < 0.2:
                words.insert(0, "@" + rng.choice(["alice", "bob_dev", "carol", "dave99", "erin.k"]))
            sep = "" if rng.random() < 0.1 else " "
            line = sep.join(words)
        lines.append(line)
    return lines_to_parts(lines, rng, 3, 25)


def cat_whitespace(rng):
    code = file_parts(stdlib_py()[::7], random.Random(1))
    parts = []
    for i, p in enumerate(code[:600]):
        kind = i % 6
        lines = p.split("\n")
        if kind == 0:      # deeper spaces
            k = rng.choice([2, 3, 4])
            lines = [" " * (k * (len(l) - len(l.lstrip(" ")))) + l.lstrip(" ") for l in lines]
        elif kind == 1:    # tabs
            lines = ["\t" * ((len(l) - len(l.lstrip(" "))) // 4) + l.lstrip(" ") for l in lines]
        elif kind == 2:    # trailing blanks and blank lines with spaces
            lines = [l + " " * rng.choice([0, 0, 1, 2, 4, 8, 17]) if l.strip() else " " * rng.randint(0, 24)
                     for l in lines]
        elif kind == 3:    # CRLF
            lines = [l + "\r" for l in lines]
        elif kind == 4:    # extra indentation of the whole block
            pad = rng.choice([" " * 12, " " * 24, "\t\t\t", " " * 40])
            lines = [pad + l for l in lines]
        p = "\n".join(lines)
        parts.extend(chunk(p))
        # interleave a generated whitespace paragraph after each code one
        g = rng.random()
        if g < 0.25:       # aligned table
            w = [rng.randint(6, 40) for _ in range(rng.randint(3, 7))]
            rows = []
            for _ in range(rng.randint(4, 20)):
                cells = [rng.choice(CASUAL).split()[0] for _ in w]
                rows.append("".join(c.ljust(x) if rng.random() < 0.7 else c.rjust(x) for c, x in zip(cells, w)).rstrip())
            parts.extend(chunk("\n".join(rows)))
        elif g < 0.45:     # nested JSON, wide indentation
            depth = rng.randint(3, 9)
            obj = {"leaf": [1, 2, 3], "name": "x"}
            for d in range(depth):
                obj = {f"level{d}": obj, "n": d, "tags": ["a", "b"]}
            parts.extend(chunk(json.dumps(obj, indent=rng.choice([2, 4, 8, "\t"]))))
        elif g < 0.6:      # runs of spaces between words
            ws = [rng.choice(CASUAL) for _ in range(rng.randint(4, 30))]
            parts.extend(chunk("".join(w + " " * rng.choice([1, 2, 3, 5, 16, 33, 80, 150, 300]) for w in ws)))
        elif g < 0.75:     # Unicode spaces and mixed blanks
            spaces = ["\u00a0", "\u2003", "\u3000", "\u202f", "\u2009", "\t", "  ", "\u2002", "\u205f"]
            ws = [rng.choice(CASUAL) for _ in range(rng.randint(4, 30))]
            parts.extend(chunk("".join(w + "".join(rng.choice(spaces) for _ in range(rng.randint(1, 4))) for w in ws)))
        elif g < 0.9:      # blank-line runs (not chunked, so they stay as they are)
            parts.append("".join(" " * rng.randint(0, 3) + rng.choice(CASUAL) + "\n" * rng.randint(1, 8)
                                 for _ in range(rng.randint(2, 10))) + " \n" * rng.randint(1, 12))
        else:              # whitespace-only paragraph
            parts.append("".join(rng.choice([" ", "\t", " \n", "    ", "\r\n", "\n \t"]) for _ in range(rng.randint(10, 400))))
    return parts


def cat_base64_hex(rng):
    site = venv_site()
    pem = chunk(read_text(site / "certifi" / "cacert.pem") or "")
    gen = []
    for _ in range(3000):
        k = rng.random()
        if k < 0.15:
            raw = rng.randbytes(rng.randint(300, 1500))
            b = base64.encodebytes(raw).decode().rstrip("\n")
            label = rng.choice(["CERTIFICATE", "PUBLIC KEY", "RSA PRIVATE KEY", "PGP MESSAGE", "ENCRYPTED DATA"])
            gen.append(f"-----BEGIN {label}-----\n{b}\n-----END {label}-----")
        elif k < 0.3:
            raw = b"\x89PNG\r\n\x1a\n" + rng.randbytes(rng.randint(60, 1800))
            mime = rng.choice(["image/png", "image/gif", "font/woff2", "application/octet-stream"])
            gen.append(f'<img src="data:{mime};base64,{base64.b64encode(raw).decode()}" alt="icon">')
        elif k < 0.4:
            def b64u(d):
                return base64.urlsafe_b64encode(d).decode().rstrip("=")
            hdr = b64u(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
            pay = b64u(json.dumps({"sub": str(rng.randint(10**6, 10**9)), "iat": rng.randint(1.5e9, 1.8e9),
                                   "scope": rng.choice(["read", "read write", "admin"])}).encode())
            gen.append(f"Authorization: Bearer {hdr}.{pay}.{b64u(rng.randbytes(32))}")
        elif k < 0.55:
            lines = []
            for _ in range(rng.randint(3, 20)):
                data = rng.randbytes(rng.randint(4, 64))
                algo = rng.choice(["sha256", "sha1", "md5", "sha512", "blake2b"])
                h = hashlib.new(algo, data).hexdigest()
                lines.append(rng.choice([f"{h}  {rng.choice(CASUAL).split()[0]}.tar.gz", f"commit {hashlib.sha1(data).hexdigest()}",
                                         f"{algo}:{h}", f'"integrity": "sha512-{base64.b64encode(hashlib.sha512(data).digest()).decode()}"',
                                         h]))
            gen.append("\n".join(lines))
        elif k < 0.7:
            raw = rng.randbytes(16 * rng.randint(4, 24))
            off = rng.randrange(0, 1 << 20, 16)
            lines = []
            for i in range(0, len(raw), 16):
                row = raw[i:i + 16]
                hexs = " ".join(row[j:j + 2].hex() for j in range(0, 16, 2))
                asc = "".join(chr(c) if 32 <= c < 127 else "." for c in row)
                lines.append(f"{off + i:08x}: {hexs}  {asc}")
            gen.append("\n".join(lines))
        elif k < 0.8:
            raw = rng.randbytes(rng.randint(16, 256))
            body = ", ".join(f"0x{c:02x}" for c in raw)
            gen.append(f"static const uint8_t blob_{rng.randint(0, 999)}[{len(raw)}] = {{ {body} }};")
        elif k < 0.9:
            gen.append("\n".join(str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(rng.randint(3, 30))))
        else:
            raw = zlib.compress(" ".join(rng.choice(CASUAL) for _ in range(rng.randint(20, 200))).encode())
            gen.append(base64.b64encode(raw).decode())
    gen = [c for g in gen for c in chunk(g)]
    return round_robin([pem, gen[: len(gen) // 2], gen[len(gen) // 2:]])


def cat_no_space_runs(rng):
    vocab = sorted(set(w.lower() for w in words_from(read_text(REPO / "tests" / "data" / "opticks.txt") or "")))
    vocab = vocab or ["light", "ray", "colour", "prism", "glass"]
    iso = [r for r in iso_json("iso_3166-2").get("3166-2", [])]
    items = []
    for _ in range(6000):
        n = int(16 * 2 ** rng.uniform(0, 7))       # 16..2048 bytes, log-uniform
        k = rng.random()
        if k < 0.2:
            items.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n)))
        elif k < 0.3:
            items.append("".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
                                 for _ in range(n)))
        elif k < 0.45:
            s = ""
            while len(s) < n:
                s += rng.choice(vocab)
            items.append(s)
        elif k < 0.55:
            parts = [rng.choice(vocab) for _ in range(max(2, n // 8))]
            items.append(parts[0] + "".join(p.capitalize() for p in parts[1:])
                         if rng.random() < 0.5 else "_".join(parts).upper() if rng.random() < 0.3 else "_".join(parts))
        elif k < 0.65:
            seq = "".join(rng.choice("ACGT") for _ in range(n))
            items.append(f">seq{rng.randint(1, 99999)}\n" + "\n".join(seq[i:i + 70] for i in range(0, len(seq), 70)))
        elif k < 0.75 and iso:
            recs = [rng.choice(iso) for _ in range(max(1, n // 60))]
            items.append(json.dumps(recs, separators=(",", ":"), ensure_ascii=False))
        elif k < 0.85:
            q = "&".join(f"{rng.choice(vocab)}={rng.choice(vocab)}%20{rng.randint(0, 9999)}%2F{rng.choice(vocab)}"
                         for _ in range(max(1, n // 30)))
            items.append(f"https://example.com/search?{q}")
        elif k < 0.92:
            items.append(rng.choice("=-_.*#~+") * n)
        else:
            items.append(rng.choice(vocab).capitalize() * max(1, n // 8))
    lines = [c for it in items for c in chunk(it)]
    return lines_to_parts(lines, rng, 1, 6)


def cat_numbers(rng):
    def money():
        v = rng.lognormvariate(6, 2.5)
        return f"{v:,.2f}"

    lines = []
    for _ in range(15000):
        k = rng.random()
        if k < 0.15:
            d = f"20{rng.randint(10, 25)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            lines.append(f"{d}  INV-{rng.randint(0, 999999):06d}  {money():>14}  {rng.choice(['USD', 'EUR', 'JPY', 'GBP'])}"
                         f"  {-rng.random() * 100:8.2f}  {money():>14}")
        elif k < 0.3:
            lines.append("[" + ", ".join(f"{rng.gauss(0, 10 ** rng.randint(-4, 4)):.{rng.randint(2, 10)}g}"
                                         for _ in range(rng.randint(3, 16))) + "]")
        elif k < 0.4:
            lines.append(" ".join(str(rng.randint(0, 10 ** rng.randint(1, 40))) for _ in range(rng.randint(1, 8))))
        elif k < 0.5:
            lines.append(f"T={rng.uniform(-40, 40):.1f}°C p={rng.uniform(950, 1050):.2f}hPa "
                         f"RH={rng.uniform(0, 100):.0f}% v={rng.uniform(0, 30):.2f}m/s at "
                         f"{rng.uniform(-90, 90):.6f},{rng.uniform(-180, 180):.6f}")
        elif k < 0.6:
            lines.append(f"+{rng.randint(1, 99)} ({rng.randint(100, 999)}) {rng.randint(100, 999)}-{rng.randint(0, 9999):04d}, "
                         f"{rng.randint(1, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}:{rng.randint(1, 65535)}, "
                         f"v{rng.randint(0, 30)}.{rng.randint(0, 99)}.{rng.randint(0, 999)}")
        elif k < 0.7:
            lines.append(f"In {rng.randint(1900, 2030)}, {rng.uniform(0, 100):.1f}% of {rng.randint(10, 10**7):,} "
                         f"respondents reported {rng.randint(0, 500)} to {rng.randint(500, 5000)} hours; "
                         f"median {rng.uniform(0, 1000):.3f}, σ={rng.uniform(0, 50):.4f}.")
        elif k < 0.8:
            lines.append(",".join(str(rng.randint(-1000, 100000)) for _ in range(rng.randint(5, 25))))
        elif k < 0.9:
            lines.append(f"{rng.uniform(-10, 10):.6e} {rng.uniform(0, 1):.15f} {rng.randint(0, 2**64 - 1)} "
                         f"0x{rng.getrandbits(32):08X} {rng.randint(0, 9999)}/{rng.randint(1, 9999)}")
        else:
            lines.append(f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d} "
                         f"{rng.randint(1, 31)}/{rng.randint(1, 12)}/{rng.randint(1970, 2030)} "
                         f"#{rng.randint(1, 999)} {rng.randint(0, 150)}-{rng.randint(0, 150)} "
                         f"{rng.choice(['1st', '2nd', '3rd', '4th', '21st', '102nd'])}")
    return lines_to_parts(lines, rng, 4, 30)


URL_RE = re.compile(r"https?://[^\s<>\"'`)\]\\}{|^]+")


def collect_urls():
    sources = [p for d in registry_crates() for p in files(str(d / "*.md")) + files(str(d / "Cargo.toml.orig"))]
    sources += files("/usr/share/doc/*/copyright") + files("/usr/lib/node_modules/npm/docs/content/**/*.md")
    sources += stdlib_py()[::3]
    urls = set()
    for p in sources:
        t = read_text(p)
        if t:
            for u in URL_RE.findall(t):
                urls.add(u.rstrip(".,;:!?*_'"))
    return sorted(u for u in urls if len(u) > 10)


def cat_urls_paths(rng):
    urls = collect_urls()
    rng.shuffle(urls)
    site = venv_site()
    paths = []
    for rec in files(str(site / "*.dist-info" / "RECORD")):
        for row in csv.reader(io.StringIO(read_text(rec) or "")):
            if row and row[0] and not row[0].startswith(".."):
                paths.append(("py", row[0]))
    for d in registry_crates():
        base = os.path.basename(d)
        paths += [("rs", base + "/" + os.path.relpath(p, d)) for p in files(str(d / "**" / "*"))]
    paths = sorted(set(paths))
    rng.shuffle(paths)
    lines = []
    ui, pi = 0, 0
    while ui < len(urls) or pi < len(paths):
        k = rng.random()
        if k < 0.35 and ui < len(urls):
            u = urls[ui]
            ui += 1
            lines.append(rng.choice([u, u, f"[{rng.choice(CASUAL)}]({u})", f"Downloading {u} ({rng.uniform(0.01, 90):.1f} MB)",
                                     f"See <{u}> for details.", f'href="{u}"']))
        elif pi < len(paths):
            kind, p = paths[pi]
            pi += 1
            form = rng.random()
            if form < 0.4:
                lines.append(f"/usr/lib/python3/dist-packages/{p}" if kind == "py" else f"/home/dev/.cargo/registry/src/{p}")
            elif form < 0.55:
                lines.append(("C:\\Users\\alice\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\site-packages\\"
                              if kind == "py" else "C:\\Users\\alice\\.cargo\\registry\\src\\") + p.replace("/", "\\"))
            elif form < 0.65:
                lines.append(f"file:///opt/app/{p}")
            elif form < 0.8:
                lines.append(f"  --> {p}:{rng.randint(1, 2000)}:{rng.randint(1, 120)}")
            else:
                lines.append(p)
        else:
            break
    return lines_to_parts(lines, rng, 8, 40)


def cat_logs(rng):
    py = stdlib_py()
    root = stdlib_dir()
    funcs = {}
    paths = ["/api/v1/users", "/api/v1/orders", "/static/app.js", "/login", "/healthz", "/metrics",
             "/api/v2/search", "/favicon.ico", "/docs/index.html", "/ws"]
    agents = ["Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
              "curl/8.5.0", "python-requests/2.31.0", "Go-http-client/1.1",
              "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148"]
    hosts = ["web-01", "web-02", "db-primary", "worker-7", "edge-eu-3"]
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    t = 1_700_000_000.0
    parts = []

    def ts(fmt):
        import time as _t
        g = _t.gmtime(t)
        ms = int((t % 1) * 1000)
        if fmt == "iso":
            return _t.strftime("%Y-%m-%dT%H:%M:%S", g) + f".{ms:03d}Z"
        if fmt == "clf":
            return _t.strftime("%d/", g) + months[g.tm_mon - 1] + _t.strftime("/%Y:%H:%M:%S +0000", g)
        if fmt == "sys":
            return months[g.tm_mon - 1] + _t.strftime(" %d %H:%M:%S", g)
        return _t.strftime("%Y-%m-%d %H:%M:%S", g) + f",{ms:03d}"

    def ip():
        return f"{rng.choice([10, 172, 192, 203, 198, 85])}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"

    for _ in range(2200):
        k = rng.random()
        lines = []
        for _ in range(rng.randint(5, 30)):
            t += rng.expovariate(2.0)
            if k < 0.25:
                p = rng.choice(paths) + (f"/{rng.randint(1, 99999)}" if rng.random() < 0.4 else "")
                if rng.random() < 0.3:
                    p += f"?page={rng.randint(1, 50)}&sort={rng.choice(['asc', 'desc'])}"
                lines.append(f'{ip()} - - [{ts("clf")}] "{rng.choice(["GET", "GET", "POST", "PUT", "DELETE"])} {p} HTTP/1.1" '
                             f'{rng.choice([200, 200, 200, 201, 204, 301, 304, 400, 404, 500, 502])} {rng.randint(0, 90000)} '
                             f'"{rng.choice(["-", "https://example.com/", "https://www.google.com/"])}" "{rng.choice(agents)}"')
            elif k < 0.45:
                h = rng.choice(hosts)
                msg = rng.choice([f"sshd[{rng.randint(300, 65000)}]: Accepted publickey for deploy from {ip()} port {rng.randint(1024, 65535)} ssh2",
                                  f"kernel: [{t % 100000:12.6f}] EXT4-fs (sda1): mounted filesystem with ordered data mode",
                                  f"CRON[{rng.randint(300, 65000)}]: (root) CMD (/usr/local/bin/backup.sh --incremental)",
                                  f"systemd[1]: Started Session {rng.randint(1, 9999)} of user deploy.",
                                  f"postgres[{rng.randint(300, 65000)}]: LOG:  duration: {rng.uniform(0, 3000):.3f} ms  statement: SELECT * FROM orders WHERE id = {rng.randint(1, 10**6)}",
                                  f"kernel: Out of memory: Killed process {rng.randint(300, 65000)} (python3) total-vm:{rng.randint(10**5, 10**7)}kB"])
                lines.append(f"{ts('sys')} {h} {msg}")
            elif k < 0.65:
                rec = {"ts": ts("iso"), "level": rng.choice(["debug", "info", "info", "warn", "error"]),
                       "msg": rng.choice(["request completed", "cache miss", "retrying upstream", "user login", "job finished"]),
                       "method": rng.choice(["GET", "POST"]), "path": rng.choice(paths), "status": rng.choice([200, 404, 500]),
                       "duration_ms": round(rng.expovariate(0.05), 3), "trace_id": f"{rng.getrandbits(128):032x}"}
                lines.append(json.dumps(rec))
            elif k < 0.8:
                lvl = rng.choice(["INFO", "WARNING", "ERROR", "DEBUG"])
                lines.append(f"{ts('py')} {lvl} [{rng.choice(['app.worker', 'uvicorn.access', 'celery.task', 'sqlalchemy.engine'])}] "
                             f"{rng.choice(CASUAL)} (id={rng.randint(1, 10**6)})")
                if lvl == "ERROR" and py:
                    lines.append("Traceback (most recent call last):")
                    for _ in range(rng.randint(2, 6)):
                        f = rng.choice(py)
                        if f not in funcs:
                            funcs[f] = re.findall(r"def (\w+)", read_text(f) or "") or ["<module>"]
                        lines.append(f'  File "{f.replace(str(root), "/usr/lib/python3.11")}", line {rng.randint(1, 3000)}, in {rng.choice(funcs[f])}')
                        lines.append(f"    {rng.choice(['return self._call(*args, **kwargs)', 'raise ValueError(msg)', 'data = json.loads(body)', 'sock.connect(addr)'])}")
                    lines.append(rng.choice(["ValueError: invalid literal for int() with base 10: 'abc'",
                                             "ConnectionRefusedError: [Errno 111] Connection refused",
                                             "KeyError: 'user_id'", "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"]))
                    break
            elif k < 0.9:
                lvl = rng.choice(["INFO ", "WARN ", "ERROR", "DEBUG", "TRACE"])
                lines.append(f"[{ts('iso')} {lvl} {rng.choice(['modelbin::serve', 'hyper::proto::h1', 'tokio_postgres', 'tower_http::trace'])}] "
                             f"{rng.choice(['loaded vocabulary', 'connection closed', 'encoded batch', 'slow request'])} "
                             f"n={rng.randint(1, 10**6)} elapsed={rng.uniform(0, 2000):.2f}ms")
            else:
                lines.append(f"{ts('py').replace(',', '.')}  {rng.choice(['INFO', 'WARN', 'ERROR'])} {rng.randint(1, 9)} --- "
                             f"[nio-8080-exec-{rng.randint(1, 10)}] o.s.web.servlet.DispatcherServlet : "
                             f"Completed {rng.choice([200, 404, 500])} for GET {rng.choice(paths)}")
                if rng.random() < 0.1:
                    lines.append("java.lang.NullPointerException: Cannot invoke \"String.length()\" because \"name\" is null")
                    for _ in range(rng.randint(3, 12)):
                        lines.append(f"\tat com.example.{rng.choice(['service', 'web', 'repo'])}.{rng.choice(['OrderService', 'UserController', 'Cache'])}"
                                     f".{rng.choice(['handle', 'lookup', 'apply', 'lambda$run$0'])}({rng.choice(['OrderService', 'Cache'])}.java:{rng.randint(10, 900)})")
        parts.extend(chunk("\n".join(lines)))
    return parts


GREEK = ["\\alpha", "\\beta", "\\gamma", "\\delta", "\\epsilon", "\\theta", "\\lambda", "\\mu", "\\sigma",
         "\\phi", "\\omega", "\\xi", "\\eta", "\\rho", "\\tau", "\\Omega", "\\Gamma", "\\Delta"]
VARS = ["x", "y", "z", "t", "n", "k", "a", "b", "f(x)", "u_i", "x_{ij}", "v_k", "\\mathbf{x}", "A", "B"]
FORMULAS = [
    r"e^{i\pi} + 1 = 0", r"\int_{-\infty}^{\infty} e^{-x^2}\,dx = \sqrt{\pi}",
    r"P(A \mid B) = \frac{P(B \mid A)\,P(A)}{P(B)}", r"\left| \langle u, v \rangle \right|^2 \le \langle u, u \rangle \cdot \langle v, v \rangle",
    r"\nabla \cdot \mathbf{E} = \frac{\rho}{\varepsilon_0}", r"\sum_{n=1}^{\infty} \frac{1}{n^2} = \frac{\pi^2}{6}",
    r"\mathrm{softmax}(z)_i = \frac{e^{z_i}}{\sum_{j=1}^{K} e^{z_j}}", r"\hat{\beta} = (X^\top X)^{-1} X^\top y",
    r"\mathcal{L}(\theta) = -\frac{1}{N}\sum_{i=1}^{N} \log p_\theta(y_i \mid x_i)",
    r"f(x) = \frac{1}{\sigma\sqrt{2\pi}} \exp\left(-\frac{(x-\mu)^2}{2\sigma^2}\right)",
]
PROSE = ["Let", "Suppose that", "It follows that", "By Lemma~\\ref{lem:%d},", "Hence", "Recall that",
         "We claim that", "Note that", "Consider the map", "Without loss of generality,"]


def cat_math_latex(rng):
    site = venv_site()
    real = []
    for p in files(str(site / "numpy" / "**" / "*.py")) + files(str(site / "pandas" / "**" / "*.py")):
        t = read_text(p) or ""
        for m in re.finditer(r"\.\. math::\n((?:[ \t]*\n|[ \t]+\S.*\n)+)", t):
            real.append(".. math::\n" + m.group(1).rstrip().replace("\n\n", "\n"))
        roles = re.findall(r":math:`[^`]+`", t)
        if roles:
            real.append(" ".join(roles))

    def var():
        v = rng.choice(GREEK + VARS)
        if rng.random() < 0.3:
            v += "_{" + rng.choice(["i", "j", "n", "0", "k+1", "t-1"]) + "}"
        if rng.random() < 0.2:
            v += "^{" + rng.choice(["2", "n", "-1", "\\top", "*", "(k)"]) + "}"
        return v

    def expr(d=0):
        r = rng.random()
        if d > 3 or r < 0.3:
            return var()
        if r < 0.45:
            return "\\frac{" + expr(d + 1) + "}{" + expr(d + 1) + "}"
        if r < 0.55:
            return "\\sqrt{" + expr(d + 1) + "}"
        if r < 0.65:
            i, top = rng.choice("ijk"), rng.choice(["n", "N", "\\infty"])
            return "\\sum_{" + i + "=1}^{" + top + "} " + expr(d + 1)
        if r < 0.72:
            lo, hi = rng.choice(["0", "a", "-\\infty"]), rng.choice(["1", "b", "\\infty"])
            return "\\int_{" + lo + "}^{" + hi + "} " + expr(d + 1) + "\\,d" + rng.choice("xtu")
        if r < 0.82:
            op = rng.choice(["+", "-", "\\cdot", "\\times"])
            return "\\left( " + expr(d + 1) + " " + op + " " + expr(d + 1) + " \\right)"
        if r < 0.9:
            fn = rng.choice(["sin", "cos", "log", "exp", "tanh"])
            return "\\" + fn + "\\left(" + expr(d + 1) + "\\right)"
        op = rng.choice(["+", "-", "=", "\\le", "\\approx"])
        return expr(d + 1) + " " + op + " " + expr(d + 1)

    def lead(i):
        return rng.choice(PROSE).replace("%d", str(rng.randint(1, i + 1)))

    gen = []
    for i in range(1800):
        k = rng.random()
        env = rng.choice(["theorem", "lemma", "proposition", "definition"])
        field, dim = rng.choice("RNCZQ"), rng.choice(["n", "d", "m \\times n"])
        body = [f"\\begin{{{env}}}\\label{{lem:{i}}}",
                f"{lead(i)} ${var()} \\in \\mathbb{{{field}}}^{{{dim}}}$ and ${expr()}$."]
        if k < 0.4:
            eq = rng.choice(FORMULAS) if rng.random() < 0.3 else expr()
            body.append("\\begin{equation}\n  " + eq + "\n\\end{equation}")
        elif k < 0.7:
            rows = ["  " + expr() + " &= " + expr() + " \\\\" for _ in range(rng.randint(2, 5))]
            body.append("\\begin{align}\n" + "\n".join(rows) + "\n\\end{align}")
        else:
            n = rng.randint(2, 4)
            rows = [" & ".join(var() for _ in range(n)) + " \\\\" for _ in range(n)]
            body.append("\\[\n  M = \\begin{pmatrix}\n  " + "\n  ".join(rows) + "\n  \\end{pmatrix}\n\\]")
        body.append(f"\\end{{{env}}}\n\\begin{{proof}}\n{lead(i)} ${expr()}$; therefore "
                    f"${rng.choice(FORMULAS)}$. \\qedhere\n\\end{{proof}}")
        if rng.random() < 0.2:
            title = rng.choice(["Preliminaries", "Main results", "Convergence", "Bounds", "Appendix"])
            body.insert(0, f"\\section{{{title}}}\\label{{sec:{i}}}")
        gen.extend(chunk("\n".join(body)))
    real = [c for r in real for c in chunk(r)]
    return round_robin([real, gen[: len(gen) // 2], gen[len(gen) // 2:]])


def cat_chat(rng, pools):
    questions = ["How do I {} in Python?", "Can you explain {} simply?", "What's the difference between {} and the alternative?",
                 "Why does my code fail with {}?", "Write a function that does {}.", "Translate this: {}", "Summarize: {}",
                 "Is it safe to {}?", "Give me three ideas for {}", "Fix this please 🙏 {}"]
    topics = ["parsing JSON", "reading a CSV file", "sorting a dictionary by value", "async I/O", "a KeyError",
              "tokenization", "regular expressions", "lifetimes in Rust", "unit tests", "Unicode normalization"]
    convs = []
    for _ in range(1500):
        turns = []
        fmt = rng.random() < 0.3
        for _ in range(rng.randint(1, 4)):
            q = rng.choice(questions).format(rng.choice(topics) if rng.random() < 0.7 else rng.choice(rng.choice(pools["multi"]))[:200])
            a = []
            for _ in range(rng.randint(1, 4)):
                r = rng.random()
                if r < 0.35:
                    a.append(rng.choice(pools["prose"])[:800])
                elif r < 0.55:
                    lang, pool = rng.choice([("python", pools["python"]), ("rust", pools["rust"])])
                    a.append(f"```{lang}\n{rng.choice(pool)[:900]}\n```")
                elif r < 0.65:
                    a.append("```json\n" + rng.choice(pools["json"])[:600] + "\n```")
                elif r < 0.8:
                    a.append("\n".join(f"{i + 1}. **{rng.choice(topics).capitalize()}**: {rng.choice(CASUAL)}." for i in range(rng.randint(2, 6))))
                elif r < 0.9:
                    a.append(rng.choice(rng.choice(pools["multi"]))[:400])
                else:
                    a.append(rng.choice(CASUAL).capitalize() + " " + rng.choice(pools["emoji"])[:120])
            if fmt:
                turns.append(json.dumps({"role": "user", "content": q}, ensure_ascii=rng.random() < 0.5))
                turns.append(json.dumps({"role": "assistant", "content": "\n\n".join(a)}, ensure_ascii=rng.random() < 0.5))
            else:
                turns.append(f"User: {q}")
                turns.append("Assistant: " + "\n\n".join(a))
        convs.extend(chunk(("\n" if fmt else "\n\n").join(turns)))
    return convs


# ----------------------------------------------------------------------------

CATEGORIES = [
    ("prose_en", cat_prose_en), ("docs_en", cat_docs_en), ("code_python", cat_code_python),
    ("code_rust", cat_code_rust), ("code_c_js_sh_sql", cat_code_c_js_sh_sql), ("json", cat_json),
    ("csv", cat_csv), ("html_xml", cat_html_xml), ("markdown", cat_markdown), ("config", cat_config),
    ("cjk", None), ("cyrillic_greek", None), ("arabic_hebrew", None), ("indic_thai_other", None),
    ("latin_accented", None), ("emoji", cat_emoji), ("whitespace", cat_whitespace),
    ("base64_hex", cat_base64_hex), ("no_space_runs", cat_no_space_runs), ("numbers", cat_numbers),
    ("urls_paths", cat_urls_paths), ("logs", cat_logs), ("math_latex", cat_math_latex), ("chat", None),
]


def seed(name: str) -> random.Random:
    return random.Random(zlib.crc32(name.encode()))


def build(out: pathlib.Path, only=None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    texts = {}
    manifest = {"version": VERSION, "doc_limit": DOC_LIMIT, "categories": {}}
    for name, fn in CATEGORIES:
        if only and name not in only and name != "chat":
            continue
        if name == "chat":
            continue
        rng = seed(name)
        parts = multilingual(name, rng) if fn is None else fn(rng)
        chosen = take(parts)
        texts[name] = "\n\n".join(chosen) + "\n"
    if not only or "chat" in only:
        def paras(n):
            return [p for p in texts.get(n, "").split("\n\n") if p.strip()] or ["(empty)"]
        for dep in ("prose_en", "code_python", "code_rust", "json", "emoji", "cjk", "cyrillic_greek",
                    "arabic_hebrew", "indic_thai_other", "latin_accented", "docs_en"):
            if dep not in texts:
                fn = dict(CATEGORIES)[dep]
                rng = seed(dep)
                texts[dep] = "\n\n".join(take(multilingual(dep, rng) if fn is None else fn(rng))) + "\n"
        pools = {"prose": paras("prose_en") + paras("docs_en"), "python": paras("code_python"),
                 "rust": paras("code_rust"), "json": paras("json"), "emoji": paras("emoji"),
                 "multi": [paras(g) for g in ("cjk", "cyrillic_greek", "arabic_hebrew", "indic_thai_other", "latin_accented")]}
        texts["chat"] = "\n\n".join(take(cat_chat(seed("chat"), pools))) + "\n"
    total = 0
    for name, _ in CATEGORIES:
        if only and name not in only:
            continue
        text = texts[name]
        data = text.encode("utf-8")
        (out / f"{name}.txt").write_bytes(data)
        docs = split_documents(text)
        manifest["categories"][name] = {"bytes": len(data), "documents": len(docs),
                                        "max_document_bytes": max(blen(d) for d in docs) if docs else 0,
                                        "sha256": hashlib.sha256(data).hexdigest()}
        total += len(data)
    manifest["total_bytes"] = total
    return manifest


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "target" / "bench-corpus"))
    ap.add_argument("--force", action="store_true", help="rebuild even if VERSION matches")
    ap.add_argument("--only", nargs="*", help="build only these categories (no VERSION stamp)")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    stamp = out / "VERSION"
    # The Rust categories follow Cargo.lock, so a changed lock file rebuilds.
    version = f"{VERSION} {hashlib.sha256((REPO / 'Cargo.lock').read_bytes()).hexdigest()[:16]}"
    names = [n for n, _ in CATEGORIES]
    if (not args.force and not args.only and stamp.exists() and stamp.read_text().strip() == version
            and all((out / f"{n}.txt").exists() for n in names)):
        print(f"corpus: {out} is up to date (version {version})", file=sys.stderr)
        return
    manifest = build(out, args.only)
    small = [n for n, c in manifest["categories"].items() if c["bytes"] < MIN_CATEGORY]
    for n, c in manifest["categories"].items():
        print(f"{n:18} {c['bytes']:>9} bytes {c['documents']:>5} documents (max {c['max_document_bytes']} bytes)",
              file=sys.stderr)
    print(f"{'total':18} {manifest['total_bytes']:>9} bytes", file=sys.stderr)
    if small:
        sys.exit(f"corpus: categories under {MIN_CATEGORY} bytes (a source is missing): {', '.join(small)}")
    if args.only:
        return
    if manifest["total_bytes"] < MIN_TOTAL:
        sys.exit(f"corpus: {manifest['total_bytes']} bytes in all, under {MIN_TOTAL}")
    # Stale files from another version go.
    for p in out.glob("*.txt"):
        if p.stem not in names:
            p.unlink()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    stamp.write_text(version + "\n")


if __name__ == "__main__":
    main()
