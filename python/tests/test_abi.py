"""The package's ctypes declarations agree with include/fedc/*.h, as a C compiler lays them out.

python/fedc/_lib.py mirrors the C ABI by hand: the structs, the signature of every
function it calls, the enum values it passes. A C change the mirror misses reads
or writes the wrong bytes with no error, so this checks, against the headers and
a program compiled from them ($FEDC_CC, else cc):
- every ctypes.Structure of _lib names its C struct (_c_struct_), has its fields
  in its order, each of a compatible type at C's offset and size, and C's size
  (only a class marked _c_prefix_ may mirror a leading part);
- every signature _lib declares is a FEDC_API prototype with as many arguments
  (more only for a variadic one), each of a compatible type, and every fedc_
  function the package calls is one it declares;
- every FEDC_* constant of _lib, and each Python mapping of a C enum, has C's
  values, and the mappings cover their enums.
"""

import ctypes
import os
import re
import shutil
import subprocess

import pytest

import c_headers

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "fedc")
INCLUDE = os.environ.get("FEDC_INCLUDE") or os.path.join(HERE, "..", "..", "include")

from fedc import _lib, data, errors, ops, types  # noqa: E402

# Each Python mapping of a C enum (name -> value), how a name spells its C constant, and
# the C enum whose constants (but its *_COUNT) the mapping must all have.
ENUM_MAPPINGS = [
    ("types.DTYPE_CODES", types.DTYPE_CODES, "FEDC_%s", "fedc_dtype"),
    ("types.PLACEMENT_CODES", types.PLACEMENT_CODES, "FEDC_%s", "fedc_placement"),
    ("errors.STATUS_CODES", errors.STATUS_CODES, "FEDC_%s", "fedc_status"),
    ("data.FORMAT_CODES", data.FORMAT_CODES, "FEDC_FORMAT_%s", "fedc_data_format"),
    ("ops.PADDING_CODES", ops.PADDING_CODES, "FEDC_PAD_%s", "fedc_padding"),
]

_SCALARS = {
    "char": ctypes.c_char, "unsigned char": ctypes.c_ubyte, "short": ctypes.c_short,
    "unsigned short": ctypes.c_ushort, "int": ctypes.c_int, "unsigned": ctypes.c_uint,
    "long": ctypes.c_long, "unsigned long": ctypes.c_ulong, "long long": ctypes.c_longlong,
    "unsigned long long": ctypes.c_ulonglong, "float": ctypes.c_float, "double": ctypes.c_double,
    "_Bool": ctypes.c_bool, "int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8,
    "int16_t": ctypes.c_int16, "uint16_t": ctypes.c_uint16, "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t, "ptrdiff_t": ctypes.c_ssize_t,
}


def _compiler():
    """$FEDC_CC (ctest's python_abi sets the build's compiler: it must be there), else cc."""
    if os.environ.get("FEDC_CC"):
        return os.environ["FEDC_CC"]
    for cc in ("cc", "gcc", "clang"):
        if shutil.which(cc):
            return cc
    pytest.skip("no C compiler (set FEDC_CC) to lay out include/fedc's structs")


@pytest.fixture(scope="module")
def headers():
    return c_headers.load(_compiler(), INCLUDE)


def _structures():
    return [c for c in vars(_lib).values()
            if isinstance(c, type) and issubclass(c, ctypes.Structure) and c is not ctypes.Structure]


def _python_constants():
    return {n: v for n, v in vars(_lib).items() if re.fullmatch(r"FEDC_[A-Z0-9_]+", n)}


@pytest.fixture(scope="module")
def c_facts(headers, tmp_path_factory):
    """{("size", spelling): n, ("field", spelling, name): (offset, size), ("const", name): v}
    from a program compiled against the headers."""
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "fedc/fedc.h"', "int main(void) {"]
    for spelling, fields in _named(headers.structs):
        lines.append('printf("size\\t%s\\t%%zu\\n", sizeof(%s));' % (spelling, spelling))
        for name, _ in fields:
            lines.append('printf("field\\t%s\\t%s\\t%%zu\\t%%zu\\n", offsetof(%s, %s), '
                         'sizeof(((%s *)0)->%s));' % (spelling, name, spelling, name, spelling, name))
    consts = headers.enum_constants()
    for name in consts:
        lines.append('printf("const\\t%s\\t%%lld\\n", (long long)(%s));' % (name, name))
    for name in sorted(set(_python_constants()) - set(consts)):  # macros, when C has them
        lines.append('#ifdef %s\nprintf("const\\t%s\\t%%lld\\n", (long long)(%s));\n#endif'
                     % (name, name, name))
    lines.append("return 0;\n}\n")
    d = tmp_path_factory.mktemp("abi")
    src, exe = str(d / "layout.c"), str(d / "layout")
    with open(src, "w") as f:
        f.write("\n".join(lines))
    subprocess.run([_compiler(), "-std=c17", "-I", INCLUDE, src, "-o", exe], check=True)
    facts = {}
    for row in subprocess.run([exe], capture_output=True, text=True, check=True).stdout.splitlines():
        kind, *rest = row.split("\t")
        if kind == "field":
            facts[("field", rest[0], rest[1])] = (int(rest[2]), int(rest[3]))
        else:
            facts[(kind, rest[0])] = int(rest[1])
    return facts


def _named(structs):
    """The structs a program can name (not an anonymous member's)."""
    return [(k, v) for k, v in structs.items() if not k.startswith("<")]


def _pyname(t):
    return "None" if t is None else getattr(t, "__name__", repr(t))


def mismatch(py, c, h):
    """Why the ctypes type py cannot stand for the C type c, or None if it can."""
    c = h.resolve(c)
    kind = c[0]
    if kind in ("prim", "name"):
        if c[1] == "void":
            return None if py is None else "%s for void" % _pyname(py)
        want = _SCALARS.get(c[1])
        if want is None:
            return "C type %s is not one the test knows" % c[1]
        return None if py is want else "%s for %s" % (_pyname(py), c[1])
    if kind == "enum":
        return None if py in (ctypes.c_int, ctypes.c_uint) else "%s for enum %s" % (_pyname(py), c[1])
    if kind == "struct":
        spelling = h.struct_names.get(c[1], c[1])
        if (isinstance(py, type) and issubclass(py, ctypes.Structure) and not getattr(py, "_c_prefix_", False)
                and h.struct_names.get(getattr(py, "_c_struct_", None)) == spelling):
            return None
        return "%s for %s" % (_pyname(py), spelling)
    if kind == "array":
        if isinstance(py, type) and issubclass(py, ctypes.Array):
            return mismatch(py._type_, c[1], h)
        return "%s for an array" % _pyname(py)
    if kind == "ptr":
        pointee = h.resolve(c[1])
        if py is ctypes.c_void_p:
            return None  # an opaque pointer stands for any
        if py is ctypes.c_char_p:
            return None if pointee == ("prim", "char") else "c_char_p for a pointer to %s" % (pointee,)
        if isinstance(py, type) and issubclass(py, ctypes._Pointer):
            why = mismatch(py._type_, pointee, h)
            return None if why is None else "pointer to " + why
        if isinstance(py, type) and issubclass(py, ctypes._CFuncPtr) and pointee[0] == "func":
            return signature_mismatch(py._restype_, list(py._argtypes_), pointee, h)
        return "%s for a pointer to %s" % (_pyname(py), pointee)
    return "%s for %s" % (_pyname(py), c)


def signature_mismatch(restype, argtypes, func, h):
    _, ret, params, variadic = func
    if len(argtypes) != len(params) and not (variadic and len(argtypes) > len(params)):
        return "%d arguments where C has %d%s" % (len(argtypes), len(params), " and ..." if variadic else "")
    why = mismatch(restype, ret, h)
    if why:
        return "returns " + why
    for i, (py, c) in enumerate(zip(argtypes, params)):
        why = mismatch(py, c, h)
        if why:
            return "argument %d: %s" % (i + 1, why)
    return None


def test_every_structure_matches_its_c_struct(headers, c_facts):
    bad = []
    for cls in _structures():
        name = getattr(cls, "_c_struct_", None)
        if name not in headers.struct_names or headers.struct_names[name] not in headers.structs:
            bad.append("%s: _c_struct_ %r is no struct defined in include/fedc" % (cls.__name__, name))
            continue
        spelling, c_fields = headers.struct(name)
        prefix = getattr(cls, "_c_prefix_", False)
        py_fields = cls._fields_
        c_names = [n for n, _ in c_fields][:len(py_fields) if prefix else None]
        if [n.rstrip("_") for n, _ in py_fields] != c_names:  # def_ stands for def
            bad.append("%s: fields %s, %s has %s" % (cls.__name__, [n for n, _ in py_fields], spelling,
                                                     [n for n, _ in c_fields]))
            continue
        for (pname, ptype), (cname, ctype) in zip(py_fields, c_fields):
            why = mismatch(ptype, ctype, headers)
            if why:
                bad.append("%s.%s: %s" % (cls.__name__, pname, why))
            field, c_at = getattr(cls, pname), c_facts[("field", spelling, cname)]
            if (field.offset, field.size) != c_at:
                bad.append("%s.%s: offset %d size %d, C's offset %d size %d"
                           % ((cls.__name__, pname, field.offset, field.size) + c_at))
        if not prefix and ctypes.sizeof(cls) != c_facts[("size", spelling)]:
            bad.append("%s: size %d, sizeof(%s) %d" % (cls.__name__, ctypes.sizeof(cls), spelling,
                                                       c_facts[("size", spelling)]))
    assert not bad, "\n".join(bad)
    assert len(_structures()) >= 15  # the check read the package


def test_every_signature_matches_its_prototype(headers):
    bad = []
    for name, (restype, argtypes) in {**_lib._SIGNATURES, **_lib._FORMATS_SIGNATURES, **_lib._DEPLOY_SIGNATURES}.items():
        if name not in headers.functions:
            bad.append("%s: no FEDC_API prototype in include/fedc" % name)
            continue
        why = signature_mismatch(restype, argtypes, headers.functions[name], headers)
        if why:
            bad.append("%s: %s" % (name, why))
    assert not bad, "\n".join(bad)
    assert len(_lib._SIGNATURES) > 100 and len(headers.functions) > 300  # both were read


def test_every_function_called_is_declared(headers):
    """Calls spelled out (_L.fedc_x, or a string naming a FEDC_API function, as a
    handle's destructor) and those the package looked up by a built name at import
    (getattr(_L, "fedc_" + name): ctypes keeps what it found)."""
    import fedc  # noqa: F401  every module, so that every lookup at import has been made
    called = {("libfedc.so, looked up", n) for n in vars(_lib.lib) if n.startswith("fedc_")}
    for fname in os.listdir(PACKAGE):
        if fname.endswith(".py"):
            with open(os.path.join(PACKAGE, fname)) as f:
                text = f.read()
            called |= {(fname, n) for n in re.findall(r"\.(fedc_\w+)", text)}
            called |= {(fname, n) for n in re.findall(r"[\"'](fedc_\w+)[\"']", text)
                       if n in headers.functions}
    declared = {**_lib._SIGNATURES, **_lib._FORMATS_SIGNATURES, **_lib._DEPLOY_SIGNATURES}
    undeclared = sorted("%s calls %s" % c for c in called if c[1] not in declared)
    assert not undeclared, "called without a signature in _lib._SIGNATURES (ctypes would guess int):\n" + \
        "\n".join(undeclared)
    assert len(called) > 100


def test_constants_and_enum_mappings_have_c_values(headers, c_facts):
    bad = []
    for name, value in _python_constants().items():
        if ("const", name) not in c_facts:
            bad.append("_lib.%s: include/fedc has no such constant" % name)
        elif c_facts[("const", name)] != value:
            bad.append("_lib.%s = %d, C's is %d" % (name, value, c_facts[("const", name)]))
    enums = dict(headers.enums)
    for where, mapping, spell, tag in ENUM_MAPPINGS:
        for key, value in mapping.items():
            cname = spell % key.upper()
            if c_facts.get(("const", cname)) != value:
                bad.append("%s[%r] = %d, C's %s is %s"
                           % (where, key, value, cname, c_facts.get(("const", cname))))
        spelled = {spell % k.upper() for k in mapping}
        missing = [c for c in enums[tag] if c not in spelled and not c.endswith("_COUNT")]
        if missing:
            bad.append("%s lacks %s of enum %s" % (where, ", ".join(missing), tag))
    assert not bad, "\n".join(bad)


def test_parser_reads_what_the_compiler_sees(headers, c_facts):
    """The header parser is itself checked: every struct it found compiles with the
    fields it found, and a few known declarations read as C spells them."""
    assert headers.functions["fedc_scalar"] == (
        "func", ("name", "fedc_value"), [("ptr", ("name", "fedc_program")), ("name", "fedc_dtype"),
                                         ("prim", "double")], False)
    assert headers.functions["fedc_error"][3] is True  # variadic
    _, fields = headers.struct("fedc_algorithm_def")
    rnd = dict(fields)["round"]
    assert headers.resolve(rnd)[0] == "ptr" and rnd[1][0] == "func"
    sizes = [k for k in c_facts if k[0] == "size"]
    assert len(headers.structs) >= 20 and len(sizes) == len(_named(headers.structs))
