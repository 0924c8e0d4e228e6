"""Compilers inside the sandbox: the host files a toolchain needs, and the
commands that build and run a program with it (`runner.run_build`).

A toolchain's view is what it reads and nothing more, found by asking the
toolchain on the host with a program of our own, once per process:

- C++ (g++): the driver and the programs it runs (cc1plus, collect2,
  lto-wrapper, as, ld), the gcc version's own directory, the directories of
  its header search list (``g++ -E -v``), the files its linker opened to link
  a probe program (``-Wl,--trace``), and the shared
  libraries of all of these and of the probe (ldd);
- Java (javac, java): the JDK's home directory, the files outside it its
  symlinks reach (Debian keeps the JDK's configuration in
  /etc/java-N-openjdk), and the shared libraries of its binaries and
  libraries.

Each path is bound read-only and nosuid, beside the interpreter's view
(`rootfs`); the project, its virtual environment, the rest of /etc, /home and
the host's /tmp stay invisible, to the compiler as to the program it built
(``#include "/etc/passwd"`` finds nothing). Builds write only into the run's
private /tmp. The JVM is started with a bounded heap, code cache and class
space, so that it fits a run's address-space limit (``memory_mb``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from leaktrace.sandbox import rootfs
from leaktrace.sandbox.runner import SandboxLimits, SandboxResult, run_build

LANGUAGES = ("cpp", "java")
_ALIASES = {"c++": "cpp"}
# The JVM's reservations, bounded (its defaults reserve a quarter of the host's memory and 1 GB of class space).
JVM_OPTIONS = (
    "-Xmx256m",
    "-Xss4m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-XX:ReservedCodeCacheSize=32m",
    "-XX:CompressedClassSpaceSize=64m",
    "-XX:MaxMetaspaceSize=128m",
)
CPP_STANDARD = "-std=c++17"
# What g++ links into every program (libstdc++, libm, libgcc, libc): the libraries, not the headers, are probed.
_PROBE_CPP = "#include <cmath>\nint main() { return static_cast<int>(std::sqrt(4.0)) - 2; }\n"


class ToolchainUnavailable(RuntimeError):
    """The language's compiler is not installed here (or cannot be probed)."""


@dataclass(frozen=True)
class Toolchain:
    language: str
    source_name: str  # the file the program is written to (Java: its public class's name)
    commands: tuple[tuple[str, ...], ...]  # compile, then run; relative paths are in the run's /tmp
    view: tuple  # rootfs operations: the toolchain's files, read-only
    environment: tuple[tuple[str, str], ...] = ()  # variables the commands need


def normalise(language: str) -> str:
    language = _ALIASES.get(language.lower(), language.lower())
    if language not in LANGUAGES:
        raise ValueError(f"no sandboxed toolchain for {language!r}; expected one of {LANGUAGES}")
    return language


def missing(language: str) -> str | None:
    """Why `language`'s programs cannot be built here, or None when they can."""
    try:
        toolchain(language)
    except ToolchainUnavailable as error:
        return str(error)
    return None


@functools.cache
def toolchain(language: str) -> Toolchain:
    language = normalise(language)
    return _cpp() if language == "cpp" else _java()


def run_program(
    language: str, source: str, limits: SandboxLimits = SandboxLimits(), *, main_class: str = "Main"
) -> SandboxResult:
    """Build `source` (a whole program: the solution and the test's `main`) and run it, in the sandbox."""
    chain = toolchain(language)
    name = f"{main_class}.java" if chain.language == "java" else chain.source_name
    commands = chain.commands
    if chain.language == "java":
        commands = (commands[0][:-1] + (name,), commands[1][:-1] + (main_class,))
    return run_build({name: source}, commands, chain.view, limits, environment=dict(chain.environment))


def _which(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        raise ToolchainUnavailable(f"{program} is not installed")
    return found


def _cpp() -> Toolchain:
    gxx = _which("g++")

    def ask(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run([gxx, *arguments], capture_output=True, text=True, check=False)

    programs = [gxx, os.path.realpath(gxx)]
    for name in ("cc1plus", "collect2", "lto-wrapper", "as", "ld"):
        found = ask(f"-print-prog-name={name}").stdout.strip()
        programs.append(found if os.path.isabs(found) else _which(found))
    gcc_dir = os.path.dirname(ask("-print-prog-name=cc1plus").stdout.strip())
    listing = ask("-xc++", "-E", "-v", os.devnull).stderr.splitlines()
    try:
        first = listing.index("#include <...> search starts here:") + 1
        headers = [line.strip() for line in listing[first : listing.index("End of search list.")]]
    except ValueError:
        raise ToolchainUnavailable(f"g++ did not list its header search path: {' '.join(listing)[:300]}") from None
    with tempfile.TemporaryDirectory(prefix="leaktrace-probe-") as probe:
        source, binary = Path(probe) / "probe.cpp", Path(probe) / "probe"
        source.write_text(_PROBE_CPP)
        linked = ask(CPP_STANDARD, str(source), "-o", str(binary), "-Wl,--trace")
        if linked.returncode != 0 or not binary.exists():
            raise ToolchainUnavailable(f"g++ cannot link a probe program: {linked.stderr[:300]}")
        inputs = [
            os.path.normpath(line.strip())
            for line in linked.stdout.splitlines()
            if line.startswith("/") and not line.startswith(probe)
        ]
        libraries = rootfs.shared_libraries([*map(os.path.realpath, programs), str(binary)])
    paths = [*programs, gcc_dir, *headers, *inputs, *libraries]
    return Toolchain(
        "cpp", "main.cpp", ((gxx, CPP_STANDARD, "-o", "main", "main.cpp"), ("./main",)), rootfs.additions(paths)
    )


def _java() -> Toolchain:
    javac, java = os.path.realpath(_which("javac")), os.path.realpath(_which("java"))
    home = Path(os.path.realpath(javac)).parents[1]
    if Path(os.path.realpath(java)).parents[1] != home:
        raise ToolchainUnavailable(f"javac ({javac}) and java ({java}) come from different JDKs")
    outside = []
    for directory, subdirectories, files in os.walk(home):
        for name in subdirectories + files:
            path = os.path.join(directory, name)
            target = os.path.realpath(path)
            if os.path.islink(path) and not target.startswith(f"{home}{os.sep}") and os.path.exists(target):
                outside.append(target)
    binaries = [str(p) for p in (*home.glob("bin/*"), *home.glob("lib/*.so"), *home.glob("lib/*/*.so")) if p.is_file()]
    paths = [javac, java, str(home), *outside, *rootfs.shared_libraries(binaries)]
    flags = tuple(f"-J{option}" for option in JVM_OPTIONS)
    commands = ((javac, *flags, "-encoding", "UTF-8", "-d", ".", "Main.java"), (java, *JVM_OPTIONS, "-cp", ".", "Main"))
    # The JDK's binaries find their libraries through $ORIGIN, which the loader reads from /proc (not mounted)
    libraries = ":".join(str(home / "lib" / sub) for sub in ("", "server"))
    return Toolchain("java", "Main.java", commands, rootfs.additions(paths), (("LD_LIBRARY_PATH", libraries),))
