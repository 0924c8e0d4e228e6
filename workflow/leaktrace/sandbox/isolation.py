"""Linux isolation primitives, applied inside the sandbox's child before any
untrusted code runs: namespaces, the read-only root, privilege drop, rlimits.

The system calls are made directly through ctypes, so nothing beyond the
interpreter and the C library is needed (no bubblewrap, no setuid helper).
Stdlib only: this module runs inside the sandbox, from its source.
"""

from __future__ import annotations

import _signal
import ctypes
import os
import resource

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID = 1, 2
_MOUNT_SETATTR, _AT_FDCWD, _AT_RECURSIVE = 442, -100, 0x8000  # the same number on every architecture
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
# glibc has no pivot_root wrapper; the syscall's number depends on the architecture.
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
_CAPABILITY_VERSION_3 = 0x20080522
MB = 1024 * 1024
SCRATCH_INODES = 10_000  # bounds many empty files, which cost memory but no tmpfs size

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


class _MountAttributes(ctypes.Structure):
    _fields_ = [
        ("set", ctypes.c_uint64),
        ("clear", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _CapabilityHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapabilitySet(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encoded = [None if part is None else part.encode() for part in (source, target, fstype, data)]
    _check(_libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]), f"mount {target}")


def _prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, value, 0, 0, 0), f"prctl({option})")


def enter_namespaces(user_namespace: bool, sandbox_uid: int) -> None:
    """New mount, PID, network, IPC and UTS namespaces (and a user namespace when
    not root, mapping the caller to `sandbox_uid`); takes effect for children."""
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(flags | (CLONE_NEWUSER if user_namespace else 0)), "unshare")
    if user_namespace:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{sandbox_uid} {uid} 1"),
            ("gid_map", f"{sandbox_uid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as control:
                control.write(text)


def die_with_parent() -> None:
    _prctl(PR_SET_PDEATHSIG, _signal.SIGKILL)


def build_root(new_root: str, view: list, scratch_mb: int, owner: int) -> None:
    """Make a tmpfs at `new_root` holding only `view` (read-only binds and
    symlinks of host paths, masks over directories), plus private size-limited
    tmpfs mounts at /tmp and /dev/shm; pivot into it and drop the host's tree."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("sandbox", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    binds, directories = [], []
    for entry in view:
        kind, path = entry[0], entry[1]
        inside = new_root + path
        if kind != "mask" and any(path.startswith(directory + "/") for directory in directories):
            # its mount point or link would be made in the host's directory, through the bind
            raise OSError(f"view entry {path} lies inside the bound directory it would write into")
        if kind == "symlink":
            os.makedirs(os.path.dirname(inside), exist_ok=True)
            os.symlink(entry[2], inside)
        elif kind == "bind":
            if entry[2]:  # a directory
                os.makedirs(inside, exist_ok=True)
                directories.append(path.rstrip("/"))
            else:
                os.makedirs(os.path.dirname(inside), exist_ok=True)
                open(inside, "x").close()  # never truncates what is there
            _mount(path, inside, None, MS_BIND)
            binds.append((inside, entry[3]))
        elif kind == "mask":
            _mount("mask", inside, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
    # /tmp, the working directory, is the program's and its group's: the harness runs in that group, so a test
    # shares files with the program there (ClassEval's tests make the database the program opens)
    scratch = [(new_root + path, mode) for path, mode in (("/tmp", "0770"), ("/dev/shm", "1777"))]
    for path, _ in scratch:
        os.makedirs(path, exist_ok=True)
    _make_read_only(new_root, binds)
    for path, mode in scratch:
        options = f"size={scratch_mb}m,nr_inodes={SCRATCH_INODES},mode={mode},uid={owner},gid={owner}"
        _mount("scratch", path, "tmpfs", MS_NOSUID | MS_NODEV, options)
    os.chdir(new_root)
    machine = os.uname().machine
    if machine not in _PIVOT_ROOT:
        raise OSError(f"pivot_root: no system call number known for {machine}")
    _check(_libc.syscall(_PIVOT_ROOT[machine], b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "umount the host's root")
    os.chdir("/")


def _make_read_only(root: str, binds: list[tuple[str, int]]) -> None:
    """The whole tree at `root` read-only and nosuid: in one call where the kernel
    has mount_setattr (5.12), else one remount per bind (keeping the flags a user
    namespace locks)."""
    attributes = _MountAttributes(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    size = ctypes.sizeof(attributes)
    if _libc.syscall(_MOUNT_SETATTR, _AT_FDCWD, root.encode(), _AT_RECURSIVE, ctypes.byref(attributes), size) == 0:
        return
    for inside, flags in binds:
        _mount(None, inside, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
    _mount(None, root, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def drop_privileges(uid: int | None, *, drop_capabilities: bool, gid: int | None = None) -> None:
    """Become `uid` (from root), in group `gid` (default: the uid's number),
    or give up the capabilities a user namespace granted; then no_new_privs,
    so nothing executed can gain privileges again. Files are created
    group-writable (umask 002): the harness and the program share a group
    and the working directory."""
    os.umask(0o002)
    if uid is not None:
        gid = uid if gid is None else gid
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    if drop_capabilities:
        header = _CapabilityHeader(_CAPABILITY_VERSION_3, 0)
        _check(_libc.capset(ctypes.byref(header), (_CapabilitySet * 2)()), "capset")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_DUMPABLE, 0)  # no ptrace, no /proc access by other processes of the same uid


def limit_resources(cpu_s: int, memory_mb: int | None, file_size_mb: int | None, max_processes: int | None) -> None:
    """Per-process rlimits; None leaves a limit to the run's cgroup (or unset)."""
    _limit(resource.RLIMIT_CPU, cpu_s, cpu_s + 1)
    _limit(resource.RLIMIT_CORE, 0, 0)
    if memory_mb is not None:
        _limit(resource.RLIMIT_AS, memory_mb * MB, memory_mb * MB)
    if file_size_mb is not None:
        _limit(resource.RLIMIT_FSIZE, file_size_mb * MB, file_size_mb * MB)
    if max_processes is not None:
        _limit(resource.RLIMIT_NPROC, max_processes, max_processes)


def _limit(kind: int, soft: int, hard: int) -> None:
    _, ceiling = resource.getrlimit(kind)
    if ceiling != resource.RLIM_INFINITY:
        soft, hard = min(soft, ceiling), min(hard, ceiling)
    resource.setrlimit(kind, (soft, hard))
