#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpora tests/fuzz/corpus/<target>/ from examples/*/input.replay and
# hand-written vectors, in each target's input format (see the header comment of each
# tests/fuzz/fuzz_<target>.c). Run it again after changing a format; the files are checked in.
import glob
import os
import shutil
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def examples():
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*", "input.replay"))):
        with open(path, "rb") as f:
            yield os.path.basename(os.path.dirname(path)), f.read()


shutil.rmtree(OUT, ignore_errors=True)

# fuzz_lines: delimiter index, max_bytes (0: default), 2 seed bytes, text.
# DELIMS = "\n", "\r\n", ",", "ab", "aa", "aba", "\x01", "xyzzy"
for name, text in examples():
    write("lines", "example-" + name, bytes([0, 0, 1, 2]) + text)
write("lines", "crlf-max8", bytes([0, 8, 3, 4]) + b"ab\r\ncd\r\n\r\n0123456789\r\nend")
write("lines", "crlf-delim", bytes([1, 5, 5, 6]) + b"a\r\nb\r\r\n\n\r\nlonger than five\r\nx")
write("lines", "comma-long", bytes([2, 3, 7, 8]) + b"1,22,333,4444,55555,,6")
write("lines", "overlap-aa", bytes([4, 4, 9, 10]) + b"xaaayaaaazaaaaaa")
write("lines", "overlap-aba", bytes([5, 6, 11, 12]) + b"ababababa--abab-aba")
write("lines", "xyzzy-partial", bytes([7, 2, 13, 14]) + b"xyzzxyzzyxyzzyyxyzz")
write("lines", "nul-bytes", bytes([0, 4, 15, 16]) + b"\x00\x00\n\xff\xfe\n\x00")
write("lines", "ab-split", bytes([3, 1, 17, 18]) + b"aabbab" * 8)

# fuzz_fields: separator, field count - 1, kinds (1 int8 .. 9 bool, as value % 9 + 1), line.
K = {"i8": 0, "i16": 1, "i32": 2, "u8": 3, "u16": 4, "u32": 5, "f": 6, "d": 7, "b": 8}


def fields(name, sep, kinds, line):
    write("fields", name, bytes([ord(sep), len(kinds) - 1]) + bytes(K[k] for k in kinds) + line)


fields("typed-replay", ",", ["i32", "d"], b"3, 30")
fields("bid", ",", ["i32", "i32", "d", "d"], b"1000,2001,17.25,1718088600500")
fields("all-kinds", ",", ["i8", "i16", "i32", "u8", "u16", "u32", "f", "d"],
       b"-128,-32768,-2147483648,255,65535,4294967295,3.4e38,-1e-308")
fields("bools", ";", ["b", "b", "b", "b"], b"true;false;1; 0 ")
fields("out-of-range", ",", ["i8", "u8"], b"128,-1")
fields("big-digits", ",", ["i32", "d"], b"000000000000000000000000000000017,1e999")
fields("strtod-forms", "|", ["d", "d", "d", "f"], b"nan|-inf|0x1p-3|1e39")
fields("fast-path", ",", ["d", "d", "d"], b"123456789012345,1234567890123456,-.5")
fields("count", ",", ["i32", "d"], b"1,2,3")
fields("tab-sep", "\t", ["u16", "d"], b" 7\t\t 2.5 ")
fields("not-number", ",", ["i16", "d"], b"12x,--1")
fields("nul", ",", ["i32", "d"], b"1\x00,2")

# fuzz_keygroup: 2 bytes max parallelism - 1, 2 bytes parallelism - 1, key bytes.
def key(name, maxp, p, data):
    write("keygroup", name, struct.pack(">HH", maxp - 1, p - 1) + data)


key("ascii", 128, 4, b"auction-1000")
key("empty", 1, 1, b"")
key("utf8-2-3", 32768, 7, "é€".encode())
key("utf8-4", 300, 300, "😀 key".encode())
key("malformed", 129, 2, b"\xed\xa0\x80\xc0\xaf\xf4\x90\x80\x80\xe0\x80")
key("truncated", 4096, 33, b"ok\xf0\x9f\x98")
key("double-int", 128, 3, struct.pack("<d", 42.0))
key("double-long", 128, 3, struct.pack("<d", 2.0 ** 40))
key("double-frac", 128, 3, struct.pack("<d", 0.5))
key("double-minus-2p63", 128, 3, struct.pack("<d", -2.0 ** 63))
key("double-2p63", 128, 3, struct.pack("<d", 2.0 ** 63))
key("double-nan", 128, 3, struct.pack("<Q", 0x7ff4000000000001))
key("double-neg-zero", 128, 3, struct.pack("<d", -0.0))

# fuzz_timers: 6-byte operations: op (0-1 register, 2 delete, 3 pop), domain, time index
# (< 0x80: palette 0..15, INT64_MIN first; else spread), key, window, extra.
def ops(name, *seq):
    write("timers", name, b"".join(bytes(o) for o in seq))


ops("register-pop", (0, 0, 4, 1, 0, 0), (0, 0, 5, 1, 0, 0), (0, 0, 4, 1, 0, 0),
    (3, 0, 15, 0, 3, 0))
ops("ties-keep-order", (0, 0, 6, 1, 0, 0), (0, 0, 6, 2, 0, 0), (0, 0, 6, 3, 1, 0),
    (0, 0, 6, 1, 0, 0), (3, 0, 6, 0, 3, 0))
ops("extremes", (0, 1, 0, 0, 0x80, 0), (0, 1, 15, 0, 0x80, 0), (0, 1, 14, 0, 0, 0),
    (3, 1, 0, 0, 0, 0), (3, 1, 15, 0, 3, 0))
ops("delete", (0, 0, 7, 1, 1, 0), (0, 0, 8, 1, 1, 0), (2, 0, 7, 1, 1, 0), (2, 0, 7, 1, 1, 0),
    (3, 0, 15, 0, 3, 0))
ops("both-domains", *[(i % 2, i % 2, i % 16, i % 4, i % 3, i) for i in range(40)],
    (3, 0, 15, 0, 3, 0), (3, 1, 15, 0, 3, 0))
ops("spread", *[(0, 0, 0x80 | i, i, 0, 255 - i) for i in range(30)], (3, 0, 0x8f, 0, 3, 0x7f))

# fuzz_duration: the text itself (and, from 8 bytes, the double they spell).
for name, text in [("ms", b"250ms"), ("compound", b"1h30m5s2ms"), ("plain", b"1500"),
                   ("negative", b"-5s"), ("zero", b"0"), ("all-units", b"1d2h3m4s5ms"),
                   ("limit-2p53", b"9007199254740991"), ("beyond", b"9007199254740993"),
                   ("huge-days", b"106751991167d"), ("many-digits", b"9" * 40 + b"d"),
                   ("bad-unit", b"5 sec"), ("exponent", b"1e3"), ("sign-only", b"-"),
                   ("m-then-s", b"5m5s"), ("trailing-digits", b"5m5"),
                   ("double-whole", struct.pack("<d", 1000.0)),
                   ("double-frac", struct.pack("<d", 1.5)),
                   ("double-inf", struct.pack("<d", float("inf")))]:
    write("duration", name, text)

# fuzz_replay: replay text.
for name, text in examples():
    write("replay", "example-" + name, text)
for name, text in [
        ("absolute-relative", b"@1718088600500 a\n+1s b\n+11s\n# comment\nc\n\\+1s literal\n"),
        ("crlf", b"@5 a\r\n+1 b\r\n\r\nc"),
        ("back", b"@10 a\n@5 b\n"),
        ("same-time", b"@10 a\n@10 b\n+0 c\n+0ms"),
        ("malformed-timing", b"+5xyz\n+-1s a\n@ a\n@1e3 b\n+1.5s c\n@12x\n+\n"),
        ("two-spaces", b"@1  two spaces\n+1s \n\\\n\\\\x\n"),
        ("beyond-2p53", b"@9007199254740993 a\n@9007199254740992 b\n"),
        ("huge", b"@99999999999999999999 a\n+99999999999999999999d b\n"),
        ("near-limit", b"@4503599627370496\n+0 a\n+1 b\n"),
        ("relative-sum", b"+2251799813685248 a\n+2251799813685248 b\n+1 c\n"),
        ("nul", b"\x00\n@1 \x00\n# \x00\n"),
        ("no-final-newline", b"@1 a\n+2s"),
]:
    write("replay", name, text)
