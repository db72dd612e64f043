"""The system-call filter every sandboxed command runs under, built with libseccomp.

:data:`DENIED` is a deny list at least as strict as the one Docker's default profile implies
(the calls its allowlist leaves out, and those it allows only with a capability the sandbox
never has), plus io_uring (which containerd and Docker dropped in 2023) and ``AF_VSOCK``
sockets (a path to the hypervisor that a network namespace does not cut). Every other call is
allowed: the namespaces, the uid drop and the resource limits do the rest. A denied call fails
with ``EPERM``; ``clone3``, whose flags a filter cannot read, fails with ``ENOSYS`` so that the C
library falls back to ``clone``, whose namespace flags the filter does read.

:func:`filter_bpf` compiles the list with libseccomp (``libseccomp.so.2``, through ctypes: the
library, not hand-written BPF) for this machine's architecture; system calls of any other
architecture (``int 0x80``, x32) kill the process. :data:`ENTER_SOURCE` is the stdlib-only
program that loads it inside the sandbox: it joins a new session keyring of its own (no key
of the grader's or of another grading is reachable, and the filter then forbids keyrings
altogether), sets no-new-privileges, installs the filter and execs the command.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os

#: Denied system calls, by what they reach: ``{name: why}`` (the table in docs/sandbox.md).
DENIED: dict[str, str] = {
    **dict.fromkeys(("keyctl", "add_key", "request_key"), "kernel keyrings (not namespaced)"),
    **dict.fromkeys(("bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
                     "io_uring_register"), "kernel attack surface"),
    **dict.fromkeys(("ptrace", "process_vm_readv", "process_vm_writev", "process_madvise",
                     "kcmp", "pidfd_getfd"), "other processes' memory and descriptors"),
    **dict.fromkeys(("mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
                     "fspick", "move_mount", "open_tree", "mount_setattr"), "mounts"),
    **dict.fromkeys(("unshare", "setns"), "namespaces"),
    **dict.fromkeys(("kexec_load", "kexec_file_load", "reboot"), "the running kernel"),
    **dict.fromkeys(("init_module", "finit_module", "delete_module", "create_module",
                     "get_kernel_syms", "query_module"), "kernel modules"),
    **dict.fromkeys(("swapon", "swapoff", "quotactl", "quotactl_fd", "acct", "nfsservctl",
                     "lookup_dcookie", "sysfs", "_sysctl", "ustat", "uselib", "syslog",
                     "vhangup", "fanotify_init"), "machine administration"),
    **dict.fromkeys(("open_by_handle_at", "name_to_handle_at"), "files by handle, past mounts"),
    **dict.fromkeys(("iopl", "ioperm"), "I/O ports"),
    **dict.fromkeys(("settimeofday", "clock_settime", "clock_adjtime", "adjtimex"),
                    "the machine's clock"),
    **dict.fromkeys(("sethostname", "setdomainname"), "the host name"),
    **dict.fromkeys(("mbind", "set_mempolicy", "get_mempolicy", "migrate_pages", "move_pages"),
                    "NUMA placement"),
}
#: Calls denied only with these arguments: ``{name: (argument index, bits, why)}``, each bit
#: of ``bits`` a rule of its own (the call fails if the argument has it set).
CLONE_NAMESPACES = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000,
                    "CLONE_NEWUTS": 0x04000000, "CLONE_NEWIPC": 0x08000000,
                    "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
                    "CLONE_NEWNET": 0x40000000, "CLONE_NEWTIME": 0x00000080}
PERSONALITY_FLAGS = {"ADDR_NO_RANDOMIZE": 0x0040000, "READ_IMPLIES_EXEC": 0x0400000,
                     "MMAP_PAGE_ZERO": 0x0100000, "ADDR_COMPAT_LAYOUT": 0x0200000,
                     "ADDR_LIMIT_32BIT": 0x0800000, "ADDR_LIMIT_3GB": 0x8000000}
AF_VSOCK = 40
CONDITIONAL: dict[str, tuple[int, dict[str, int], str]] = {
    "clone": (0, CLONE_NAMESPACES, "new namespaces"),
    "personality": (0, PERSONALITY_FLAGS, "address-space layout (ASLR off, executable data)"),
}
#: Calls that fail with another errno: ``clone3`` (its flags are behind a pointer).
ENOSYS_CALLS = ("clone3",)

_ALLOW = 0x7FFF0000  # SCMP_ACT_ALLOW
_CMP_EQ, _CMP_MASKED_EQ = 4, 7


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)  # SCMP_ACT_ERRNO(code)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


class SeccompUnavailable(RuntimeError):
    """libseccomp (``libseccomp.so.2``) is missing or refused to build the filter."""


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        raise SeccompUnavailable(
            f"the sandbox needs libseccomp ({exc}); Debian/Ubuntu: apt-get install libseccomp2") from exc
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def syscall_number(name: str) -> int | None:
    """This architecture's number for the system call ``name``, or None where it has none.

    Raises:
        SeccompUnavailable: libseccomp cannot be loaded.
    """
    number = _library().seccomp_syscall_resolve_name(name.encode())
    return number if number >= 0 else None


def _add(lib: ctypes.CDLL, ctx: int, action: int, name: str, conditions: list[_ArgCmp]) -> None:
    number = lib.seccomp_syscall_resolve_name(name.encode())
    if number == -1:  # __NR_SCMP_ERROR: a name libseccomp does not know; nothing to deny
        return
    array = (_ArgCmp * len(conditions))(*conditions) if conditions else None
    code = lib.seccomp_rule_add_array(ctx, action, number, len(conditions), array)
    if code < 0:
        raise SeccompUnavailable(f"libseccomp refused the rule for {name}: {os.strerror(-code)}")


@functools.lru_cache(maxsize=1)
def filter_bpf() -> bytes:
    """The filter (module doc) as a BPF program for this architecture, compiled by libseccomp.

    Raises:
        SeccompUnavailable: libseccomp is missing or refuses a rule.
    """
    lib = _library()
    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        for name in DENIED:
            _add(lib, ctx, _errno_action(errno.EPERM), name, [])
        for name in ENOSYS_CALLS:
            _add(lib, ctx, _errno_action(errno.ENOSYS), name, [])
        for name, (index, bits, _) in CONDITIONAL.items():
            for bit in bits.values():
                _add(lib, ctx, _errno_action(errno.EPERM), name,
                     [_ArgCmp(index, _CMP_MASKED_EQ, bit, bit)])
        _add(lib, ctx, _errno_action(errno.EPERM), "socket", [_ArgCmp(0, _CMP_EQ, AF_VSOCK, 0)])
        read, write = os.pipe()
        try:
            code = lib.seccomp_export_bpf(ctx, write)
            os.close(write)
            write = -1
            program = b"".join(iter(lambda: os.read(read, 1 << 16), b""))
        finally:
            os.close(read)
            if write >= 0:
                os.close(write)
        if code < 0 or not program or len(program) % 8:
            raise SeccompUnavailable(f"libseccomp could not export the filter: {os.strerror(-code or 5)}")
        return program
    finally:
        lib.seccomp_release(ctx)


#: ``_srelib_enter(program, keyctl)``: join a new session keyring (``keyctl``: the call's
#: number, -1 for none), set no-new-privileges and load the BPF ``program`` (stdlib only).
ENTER_FUNCTION = r"""
def _srelib_enter(program, keyctl):
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if keyctl >= 0 and libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(1), None) < 0:
        code = ctypes.get_errno()  # KEYCTL_JOIN_SESSION_KEYRING, a new anonymous one
        if code not in (1, 38):  # EPERM, ENOSYS: keyrings already out of reach (an outer filter)
            sys.exit("sandbox: cannot join a session keyring: " + os.strerror(code))
    class Filter(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
    prog = Filter(len(program) // 8, program)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:
        sys.exit("sandbox: cannot load the system-call filter: " + os.strerror(ctypes.get_errno()))
"""
#: ``python -I -S -c ENTER_SOURCE <filter as hex> <keyctl's number> -- argv...``: enter, then
#: exec ``argv``.
ENTER_SOURCE = ENTER_FUNCTION + """
import os, sys
_srelib_enter(bytes.fromhex(sys.argv[1]), int(sys.argv[2]))
os.execv(sys.argv[4], sys.argv[4:])
"""


def _keyctl() -> int:
    number = syscall_number("keyctl")
    return -1 if number is None else number


def entered(argv: list[str], python: str) -> list[str]:
    """``argv`` in a session keyring of its own, under :func:`filter_bpf`. A ``python -c``
    program of ``python`` enters first thing in its own process (its source is prefixed with
    :data:`ENTER_FUNCTION` and the call: no interpreter started for it alone); any other
    command is started by :data:`ENTER_SOURCE`.

    Raises:
        SeccompUnavailable: libseccomp is missing or refuses a rule.
    """
    position = _source_position(argv, python)
    if position is not None:
        call = f"_srelib_enter(bytes.fromhex({filter_bpf().hex()!r}), {_keyctl()})\ndel _srelib_enter\n"
        return [*argv[:position], ENTER_FUNCTION + call + argv[position], *argv[position + 1:]]
    return [python, "-I", "-S", "-c", ENTER_SOURCE, filter_bpf().hex(), str(_keyctl()), "--",
            *argv]


def _source_position(argv: list[str], python: str) -> int | None:
    """The index of the source in ``python [-flags] -c SOURCE ...``, if ``argv`` is that and
    the source may take a prefix (no ``from __future__`` import, which must come first)."""
    if not argv or argv[0] != python:
        return None
    for index, arg in enumerate(argv[1:], 1):
        if arg == "-c":
            source = argv[index + 1] if index + 1 < len(argv) else None
            return None if source is None or "__future__" in source else index + 1
        if not arg.startswith("-") or arg in ("-m", "-W", "-X"):
            return None
    return None
