"""include/fedc/*.h as the C compiler sees them: the structs, enums and FEDC_API
prototypes that test_abi.py holds the ctypes declarations of python/fedc against.

The headers are run through the C preprocessor (so macros such as the status
table are expanded) with FEDC_API spelled as a marker; only the text that comes
from include/fedc is read. What is parsed is the C the public headers use:
typedefs, struct and enum definitions, function prototypes and function-pointer
fields, arrays, `...`. Types are tuples:
    ("prim", "int")  ("name", "int64_t")  ("struct", tag)  ("enum", tag)
    ("ptr", T)  ("array", T)  ("func", ret, [params], variadic)
"""

import os
import re
import subprocess

MARKER = "fedc__api_marker"
_TOKEN = re.compile(r"""\s+|(?P<tok>\.\.\.|->|[A-Za-z_]\w*|0[xX][0-9a-fA-F]+\w*|\d[\w.]*|
                        "(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|<<|>>|[^\s])""", re.X)
_PRIMS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "_Bool"}
_IGNORED = {"extern", "static", "inline", "__inline", "__inline__", "const", "volatile", "restrict",
            "__restrict", "__restrict__", "_Noreturn", "register", "__extension__", "_Thread_local"}
_CLOSE = {"(": ")", "[": "]", "{": "}"}


def preprocess(cc, include_dir):
    """The preprocessed text of fedc/fedc.h that comes from include_dir."""
    src = ('#include "fedc/api.h"\n#undef FEDC_API\n#define FEDC_API %s\n#include "fedc/fedc.h"\n'
           % MARKER)
    out = subprocess.run([cc, "-E", "-std=c17", "-I", include_dir, "-x", "c", "-"], input=src,
                         capture_output=True, text=True, check=True).stdout
    own = os.path.realpath(os.path.join(include_dir, "fedc"))
    keep, lines = False, []
    for line in out.splitlines():
        m = re.match(r'#\s*\d+\s+"([^"]*)"', line)
        if m:
            keep = os.path.dirname(os.path.realpath(m.group(1))) == own
        elif keep and not line.startswith("#"):
            lines.append(line)
    return "\n".join(lines)


def tokenize(text):
    toks = [m.group("tok") for m in _TOKEN.finditer(text) if m.group("tok")]
    out, i = [], 0
    while i < len(toks):
        if toks[i] in ("__attribute__", "__asm__", "asm"):  # attributes say nothing of layout here
            i = _skip_group(toks, i + 1)
            continue
        out.append(toks[i])
        i += 1
    return out


def _skip_group(toks, i):
    """The index after the balanced group that opens at toks[i]."""
    depth = 0
    while True:
        if toks[i] in _CLOSE:
            depth += 1
        elif toks[i] in _CLOSE.values():
            depth -= 1
        i += 1
        if depth == 0:
            return i


def _split(toks, sep):
    """toks split at `sep` outside brackets (the last piece may be empty)."""
    parts, cur, depth = [], [], 0
    for t in toks:
        if t in _CLOSE:
            depth += 1
        elif t in _CLOSE.values():
            depth -= 1
        if t == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    parts.append(cur)
    return parts


class Headers:
    """structs: C spelling ("struct fedc_type") -> [(field, type)]; struct_names: a tag or
    typedef name -> that spelling; typedefs: name -> type; enums: tag (or None) ->
    [constant]; functions: name -> ("func", ...) for each FEDC_API prototype."""

    def __init__(self, text):
        self.structs, self.struct_names, self.typedefs = {}, {}, {}
        self.enums, self.functions = [], {}
        for decl in _split(tokenize(text), ";"):
            if decl:
                self._declaration(decl)

    def _declaration(self, toks):
        base, flags, i = self._specifiers(toks, 0)
        if i == len(toks):
            return  # a lone struct or enum definition
        for part in _split(toks[i:], ","):
            name, t = self._declarator(part, base)
            if "typedef" in flags:
                if t[0] == "struct" and t[1].startswith("<anonymous"):
                    self.structs[name] = self.structs.pop(self.struct_names.pop(t[1]))
                    t = ("struct", name)
                self.typedefs[name] = t
                if t[0] == "struct":
                    self.struct_names.setdefault(name, self.struct_names.get(t[1], name))
            elif MARKER in flags and t[0] == "func":
                self.functions[name] = t

    def _specifiers(self, toks, i):
        words, base, flags = [], None, set()
        while i < len(toks):
            t = toks[i]
            if t in ("typedef", MARKER):
                flags.add(t)
            elif t in _IGNORED:
                pass
            elif t in _PRIMS:
                words.append(t)
            elif t in ("struct", "union", "enum"):
                base, i = self._tagged(toks, i)
                continue
            elif re.match(r"[A-Za-z_]", t) and base is None and not words:
                base = ("name", t)
            else:
                break
            i += 1
        if words:
            base = ("prim", _prim(words))
        return base, flags, i

    def _tagged(self, toks, i):
        kind, i = toks[i], i + 1
        tag = None
        if i < len(toks) and re.match(r"[A-Za-z_]", toks[i]):
            tag, i = toks[i], i + 1
        if i < len(toks) and toks[i] == "{":
            end = _skip_group(toks, i)
            body = toks[i + 1:end - 1]
            if kind == "enum":
                self.enums.append((tag, [item[0] for item in _split(body, ",") if item]))
            else:
                spelling = "%s %s" % (kind, tag) if tag else None
                fields = []
                for decl in _split(body, ";"):
                    if decl:
                        fbase, _, j = self._specifiers(decl, 0)
                        fields += [self._declarator(d, fbase) for d in _split(decl[j:], ",")]
                if spelling is None:  # anonymous: the typedef that declares it names it
                    spelling = tag = "<anonymous %d>" % len(self.structs)
                self.structs[spelling] = fields
                self.struct_names[tag] = spelling
            i = end
        return (("enum" if kind == "enum" else "struct"), tag), i

    def _declarator(self, toks, base):
        """(name or None, type) of the declarator toks applied to base."""
        i, t = 0, base
        while i < len(toks) and toks[i] in ("*",) + tuple(_IGNORED):
            if toks[i] == "*":
                t = ("ptr", t)
            i += 1
        inner = None
        name = None
        if i < len(toks) and toks[i] == "(" and not self._is_params(toks, i):
            end = _skip_group(toks, i)
            inner, i = toks[i + 1:end - 1], end
        elif i < len(toks) and re.match(r"[A-Za-z_]", toks[i]):
            name, i = toks[i], i + 1
        suffixes = []
        while i < len(toks) and toks[i] in ("[", "("):
            end = _skip_group(toks, i)
            suffixes.append((toks[i], toks[i + 1:end - 1]))
            i = end
        for kind, body in reversed(suffixes):
            t = ("array", t) if kind == "[" else self._function(t, body)
        if inner is not None:
            return self._declarator(inner, t)
        return name, t

    def _is_params(self, toks, i):
        """Whether the "(" at toks[i] opens a parameter list, not a nested declarator."""
        nxt = toks[i + 1]
        return nxt == ")" or nxt in _PRIMS or nxt in _IGNORED or nxt in ("struct", "enum", "...") \
            or (nxt not in ("*", "(") and (nxt in self.typedefs or nxt.endswith("_t")))

    def _function(self, ret, body):
        params, variadic = [], False
        for part in _split(body, ","):
            if part == ["..."]:
                variadic = True
            elif part and part != ["void"]:
                pbase, _, j = self._specifiers(part, 0)
                _, pt = self._declarator(part[j:], pbase)
                if pt[0] == "array":  # parameters decay
                    pt = ("ptr", pt[1])
                elif pt[0] == "func":
                    pt = ("ptr", pt)
                params.append(pt)
        return ("func", ret, params, variadic)

    def resolve(self, t):
        """t with the headers' typedef names replaced by what they name, outermost first."""
        while t[0] == "name" and t[1] in self.typedefs:
            t = self.typedefs[t[1]]
        return t

    def struct(self, name):
        """The C spelling and fields of the struct a tag or typedef names."""
        spelling = self.struct_names[name]
        return spelling, self.structs[spelling]

    def enum_constants(self):
        return [c for _, consts in self.enums for c in consts]


def _prim(words):
    ws = [w for w in words if w != "signed"] or ["int"]
    if len(ws) > 1 and "int" in ws:
        ws.remove("int")
    return " ".join(ws)


def load(cc, include_dir):
    return Headers(preprocess(cc, include_dir))
