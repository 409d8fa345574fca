/*
 * rukh-sandbox starts a command under its task's enforcement profile and
 * supervises it (docs/adr/0004-containment.md): it forks, the child applies
 * the profile to itself and execs the command, and the helper stays as its
 * parent and the subreaper of everything it starts, and kills all of that
 * when the command exits or the host dies (supervise). rukh starts it,
 * never a person:
 *
 *   rukh-sandbox PROFILE [OPTION]... -- PROGRAM ARGV0 [ARG]...
 *   rukh-sandbox PROFILE [OPTION]... --probe
 *
 * PROFILE is host, restricted or strict. Options (sandbox.Spec.Args writes
 * them):
 *
 *   --report FD       report a failure on FD (made close-on-exec: the host
 *                     reads EOF once the command runs)
 *   --rlimit RES MAX  set resource RES (RLIMIT_*) to MAX, soft and hard
 *   --ro PATH         strict: PATH may be read (and executed)
 *   --rw PATH         strict: PATH may be read and written
 *   --grant-ro PATH   strict: as --ro, for a path the call was granted:
 *   --grant-rw PATH   as --rw; PATH must lead through no symbolic link
 *                     (grant_fd)
 *   --gate FD         read one byte from FD before forking the command: the
 *                     host writes it once the call's record is durable, so
 *                     the helper starts while the record commits; at the
 *                     end of the file instead (the host refused the call,
 *                     or died) exit GATE_CLOSED and run nothing
 *   --probe           apply everything, then exit 0 instead of forking
 *
 * host: nothing but the supervision. restricted: the rlimits, no
 * capabilities, no_new_privs and no typing on a terminal (TIOCSTI,
 * TIOCLINUX). strict: also no controlling
 * terminal, a Landlock domain (ABI 4: the paths above only, TCP bind and
 * connect denied; with ABI 6, signals and abstract sockets scoped to the
 * domain), and a seccomp filter: no network, because no socket of any
 * family can be created (only Unix stream and seqpacket pairs, born
 * connected to each other), and no io_uring (syscall_filter). No
 * namespace is entered: strict needs no unprivileged user namespaces.
 * Anything that cannot be applied is reported with "enforcement
 * unavailable" and nothing runs: never weaker than asked.
 *
 * It is freestanding (no libc, raw system calls): it starts before every
 * command, and a static libc's own start-up costs
 * more than the whole budget of the helper.
 */
#include <asm/ioctls.h>
#include <asm/unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/types.h>

typedef unsigned long size_t;

/* ---- system calls ---- */

#if defined(__ILP32__)
#error "rukh-sandbox: x86-64 or arm64 with 64-bit long and pointers only (not x32, arm64 ILP32 or 32-bit targets)"
#elif defined(__x86_64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	xor %rbp, %rbp\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call helper_main\n"
	"	hlt\n");
#elif defined(__aarch64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	mov x29, #0\n"
	"	mov x30, #0\n"
	"	mov x0, sp\n"
	"	and sp, x0, #-16\n"
	"	bl helper_main\n"
	"	brk #0\n");
#else
#error "rukh-sandbox: add this architecture's system call convention"
#endif

#define sys1(n, a) sys6(n, (long)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) sys6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define sys5(n, a, b, c, d, e) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

/* The compiler may call these for struct copies and initializers. */
void *memset(void *d, int c, size_t n)
{
	unsigned char *p = d;
	while (n--)
		*p++ = (unsigned char)c;
	return d;
}
void *memcpy(void *d, const void *s, size_t n)
{
	unsigned char *p = d;
	const unsigned char *q = s;
	while (n--)
		*p++ = *q++;
	return d;
}

/* Constants of the kernel's ABI, spelled out here so that old headers do
 * not matter (linux/landlock.h before 6.7 lacks the network rights). */
#define AT_FDCWD_ (-100)
#define AT_EMPTY_PATH_ 0x1000
#define O_RDWR_ 02
#define O_NOCTTY_ 0400
#define O_NONBLOCK_ 04000
#define ENXIO_ 6
#define O_CLOEXEC_ 02000000
#define O_PATH_ 010000000
#define F_GETFD_ 1
#define F_SETFD_ 2
#define FD_CLOEXEC_ 1
#define STATX_TYPE_ 0x1U
#define S_IFMT_ 0170000
#define S_IFDIR_ 0040000
#define PR_SET_NO_NEW_PRIVS_ 38
#define PR_CAPBSET_DROP_ 24
#define PR_CAP_AMBIENT_ 47
#define PR_CAP_AMBIENT_CLEAR_ALL_ 4
#define CAP_SETPCAP_ 8
#define LINUX_CAPABILITY_VERSION_3_ 0x20080522
#define EINVAL_ 22

#define EPERM_ 1
#define ENOENT_ 2
#define EACCES_ 13
#define ENOTDIR_ 20
#define ENOSYS_ 38
#define ELOOP_ 40
#define AF_UNIX_ 1
#define AF_INET_ 2
#define SOCK_STREAM_ 1
#define SOCK_SEQPACKET_ 5
/* SOCK_NONBLOCK and SOCK_CLOEXEC (O_NONBLOCK and O_CLOEXEC on x86-64 and
 * arm64): the only flags socketpair(2) takes with its type. */
#define SOCK_FLAGS_ (O_NONBLOCK_ | O_CLOEXEC_)
/* Older headers lack these (4.14 and 5.1). */
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef __NR_openat2 /* 5.6 */
#define __NR_openat2 437
#endif
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#define __NR_io_uring_enter 426
#define __NR_io_uring_register 427
#endif

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REFER (1ULL << 13)
#define LL_FS_TRUNCATE (1ULL << 14)
/* ABI 4 handles the 15 file-system rights of ABI 3 (execute .. truncate)
 * and TCP bind and connect. */
#define LL_FS_ABI4 ((1ULL << 15) - 1)
#define LL_NET_BIND_TCP (1ULL << 0)
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

/* What each kind of path may do: read = execute, read files, list
 * directories; read-write = everything of ABI 4 but refer (moving or
 * linking files between directories). Files get the file rights only. */
#define LL_RO_DIR (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)
#define LL_RO_FILE (LL_FS_EXECUTE | LL_FS_READ_FILE)
#define LL_RW_DIR (LL_FS_ABI4 & ~LL_FS_REFER)
#define LL_RW_FILE (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE)

struct ll_ruleset_attr {
	__u64 handled_access_fs;
	__u64 handled_access_net;
	__u64 scoped; /* ABI 6 */
};
struct ll_path_beneath_attr {
	__u64 allowed_access;
	__s32 parent_fd;
} __attribute__((packed));

/* struct open_how of linux/openat2.h (5.6), and its RESOLVE_NO_SYMLINKS. */
struct open_how_ {
	__u64 flags, mode, resolve;
};
#define RESOLVE_NO_SYMLINKS_ 0x04

struct rlimit64_ {
	__u64 cur, max;
};

/* struct statx, up to the fields used (the kernel fills what it is given
 * room for: the size is fixed by the ABI, 256 bytes). */
struct statx_ {
	__u32 mask, blksize;
	__u64 attributes;
	__u32 nlink, uid, gid;
	__u16 mode;
	__u16 pad[1];
	__u8 rest[256 - 32];
};

/* ---- failure reports ---- */

static int report_fd = 2;
static char msg[1024];
static size_t msg_len;

static void put(const char *s)
{
	while (*s && msg_len < sizeof msg - 1)
		msg[msg_len++] = *s++;
}

static void put_u(unsigned long long v)
{
	char b[24];
	int i = sizeof b;
	do
		b[--i] = (char)('0' + v % 10);
	while ((v /= 10) && i > 0);
	for (; i < (int)sizeof b && msg_len < sizeof msg - 1; i++)
		msg[msg_len++] = b[i];
}

/* put_err appends the text Go gives the same errno, so that messages read
 * alike whichever side wrote them. */
static void put_err(long err)
{
	static const struct {
		int no;
		const char *text;
	} names[] = {
		{1, "operation not permitted"}, {2, "no such file or directory"}, {4, "interrupted system call"},
		{5, "input/output error"}, {6, "no such device or address"}, {7, "argument list too long"}, {8, "exec format error"}, {9, "bad file descriptor"},
		{11, "resource temporarily unavailable"}, {12, "cannot allocate memory"}, {13, "permission denied"},
		{14, "bad address"}, {20, "not a directory"}, {21, "is a directory"}, {22, "invalid argument"},
		{24, "too many open files"}, {26, "text file busy"}, {28, "no space left on device"},
		{36, "file name too long"}, {38, "function not implemented"}, {40, "too many levels of symbolic links"},
		{87, "too many users"}, {95, "operation not supported"},
	};
	unsigned i;
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (names[i].no == -err) {
			put(names[i].text);
			return;
		}
	}
	put("errno ");
	put_u((unsigned long long)-err);
}

static __attribute__((noreturn)) void die(void)
{
	if (report_fd == 2)
		sys3(__NR_write, 2, "rukh-sandbox: ", 14);
	else if (msg_len == 0)
		put("failed");
	if (report_fd == 2)
		msg[msg_len++] = '\n';
	sys3(__NR_write, report_fd, msg, msg_len);
	for (;;)
		sys1(__NR_exit_group, 1);
}

/* unavailable starts the report of a profile that cannot be applied: the
 * host refuses the call (enforcement_unavailable) on these words, which
 * are sandbox.ErrUnavailable's. */
static void unavailable(const char *what)
{
	put("enforcement unavailable: ");
	put(what);
}

static __attribute__((noreturn)) void fail_sys(const char *what, long err)
{
	unavailable(what);
	put(": ");
	put_err(err);
	die();
}

static __attribute__((noreturn)) void bad_usage(const char *what, const char *arg)
{
	put("bad spec: ");
	put(what);
	if (arg) {
		put(" ");
		put(arg);
	}
	put(" (this helper is started by rukh, not by hand)");
	die();
}

/* ---- the spec ---- */

#define MAX_RLIMITS 16
#define MAX_PATHS 256
#define MAX_HIDE 16

static int streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static int parse_u64(const char *s, __u64 *out)
{
	__u64 v = 0;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		__u64 d = (__u64)(*s - '0');
		if (v > (~0ULL - d) / 10)
			return -1; /* v * 10 + d overflows */
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

struct spec {
	int host, strict, probe;
	int nrlimits;
	struct {
		unsigned res;
		__u64 max;
	} rlimits[MAX_RLIMITS];
	int npaths;
	struct {
		const char *path;
		int write, grant;
	} paths[MAX_PATHS];
	int nhide, nkeep;
	const char *hide[MAX_HIDE]; /* covered by an empty tmpfs (isolate) */
	const char *keep[MAX_HIDE]; /* shown again inside them, read-only */
	char **argv; /* PROGRAM ARGV0 ARGS..., or 0 when probing */
	int gate;    /* --gate FD, plus one: 0 for none */
};

static void set_report(const char *arg)
{
	__u64 v;
	if (parse_u64(arg, &v) || v < 3 || v > 1024)
		bad_usage("bad --report", arg);
	long flags = sys2(__NR_fcntl, (int)v, F_GETFD_);
	if (flags < 0 || sys3(__NR_fcntl, (int)v, F_SETFD_, flags | FD_CLOEXEC_) < 0)
		bad_usage("bad --report", arg);
	report_fd = (int)v;
}

static void parse(char **argv, struct spec *s)
{
	__u64 v;
	if (!argv[0] || !argv[1])
		bad_usage("no profile", 0);
	/* The report descriptor first (sandbox.Spec.Args puts it there), so
	 * that whatever follows is reported where the host reads it. */
	char *profile = *++argv;
	if (argv[1] && argv[2] && streq(argv[1], "--report")) {
		set_report(argv[2]);
		argv += 2;
	}
	if (streq(profile, "strict"))
		s->strict = 1;
	else if (streq(profile, "host"))
		s->host = 1;
	else if (!streq(profile, "restricted"))
		bad_usage("unknown profile", profile);
	for (argv++; *argv; argv++) {
		char *opt = *argv;
		if (streq(opt, "--rlimit") && argv[1] && argv[2]) {
			if (s->host)
				bad_usage("rlimits given to the host profile", 0);
			if (s->nrlimits == MAX_RLIMITS)
				bad_usage("too many rlimits", 0);
			if (parse_u64(argv[1], &v) || v > 64)
				bad_usage("bad --rlimit resource", argv[1]);
			s->rlimits[s->nrlimits].res = (unsigned)v;
			if (parse_u64(argv[2], &v))
				bad_usage("bad --rlimit value", argv[2]);
			s->rlimits[s->nrlimits++].max = v;
			argv += 2;
		} else if ((streq(opt, "--ro") || streq(opt, "--rw") || streq(opt, "--grant-ro") || streq(opt, "--grant-rw")) && argv[1]) {
			if (!s->strict)
				bad_usage("paths given to the profile", argv[1]);
			if (s->npaths == MAX_PATHS)
				bad_usage("too many paths", 0);
			s->paths[s->npaths].grant = streq(opt, "--grant-ro") || streq(opt, "--grant-rw");
			s->paths[s->npaths].write = streq(opt, "--rw") || streq(opt, "--grant-rw");
			s->paths[s->npaths++].path = *++argv;
		} else if ((streq(opt, "--hide") || streq(opt, "--keep")) && argv[1]) {
			if (s->host)
				bad_usage("hidden paths given to the host profile", argv[1]);
			int keep = streq(opt, "--keep");
			int *n = keep ? &s->nkeep : &s->nhide;
			if (*n == MAX_HIDE || argv[1][0] != '/')
				bad_usage("too many or relative hidden paths", argv[1]);
			(keep ? s->keep : s->hide)[(*n)++] = *++argv;
		} else if (streq(opt, "--gate") && argv[1]) {
			if (parse_u64(argv[1], &v) || v < 3 || v > 1024 || s->gate)
				bad_usage("bad --gate", argv[1]);
			s->gate = (int)v + 1;
			argv++;
		} else if (streq(opt, "--probe") && !argv[1]) {
			s->probe = 1;
			return;
		} else if (streq(opt, "--") && argv[1] && argv[2]) {
			s->argv = argv + 1;
			return;
		} else {
			bad_usage("unknown or incomplete option", opt);
		}
	}
	bad_usage("no program to run", 0);
}

/* ---- supervision ---- */

/* The helper stays as the command's parent and keeps track of everything
 * the command starts (docs/adr/0004-containment.md): it is their child
 * subreaper, so a descendant whose parent exits — after setsid(), with an
 * empty environment, whatever it did — is reparented to it rather than
 * to init, and it kills all of them when the command exits, when the host
 * asks (SIGUSR1: the host's SIGKILL of the call), and when the host dies
 * (its parent-death signal, SIGUSR1 too). Then it exits as the command
 * did, so that the host sees the command's own status. */

#define SIGKILL_ 9
#define SIGUSR1_ 10
#define SIGCHLD_ 17
#define SIG_BLOCK_ 0
#define SIG_UNBLOCK_ 1
#define SIG_SETMASK_ 2
#define PR_SET_PDEATHSIG_ 1
#define PR_SET_CHILD_SUBREAPER_ 36
#define WNOHANG_ 1
#define WALL_ 0x40000000
#define EINTR_ 4
#define RLIMIT_CORE_ 4
#define MAX_KIDS 1024
#ifndef __NR_close_range
#define __NR_close_range 436
#endif

static long self_pid, command_pid;
static char kids_path[48];

/* siginfo_t, up to the sender of a signal sent by kill(2). */
struct siginfo_ {
	int signo, errno_, code, pad;
	int pid, uid;
	char rest[128 - 24];
};

/* children lists up to max of this process's children (it has one
 * thread), or returns a negative errno. */
static int children(int *pids, int max)
{
	long fd = sys4(__NR_openat, AT_FDCWD_, kids_path, O_CLOEXEC_, 0);
	if (fd < 0)
		return (int)fd;
	char buf[512];
	int n = 0, have = 0, cur = 0;
	long got;
	while (n < max && (got = sys3(__NR_read, fd, buf, sizeof buf)) > 0) {
		for (long i = 0; i < got && n < max; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				cur = cur * 10 + (buf[i] - '0');
				have = 1;
			} else if (have) {
				pids[n++] = cur;
				cur = have = 0;
			}
		}
	}
	if (have && n < max)
		pids[n++] = cur;
	sys1(__NR_close, fd);
	return n;
}

/* kill_all kills and reaps every child, then the children they leave
 * (reparented here), until none is left. A process killed cannot fork
 * any more, so each round leaves only what was forked before it; the
 * bound is for a kernel that keeps answering, never reached by a fork
 * bomb under the task's process limit. */
static void kill_all(void)
{
	static int pids[MAX_KIDS];
	for (int round = 0; round < 65536; round++) {
		int n = children(pids, MAX_KIDS);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++)
			sys2(__NR_kill, pids[i], SIGKILL_);
		for (int i = 0; i < n; i++)
			while (sys4(__NR_wait4, pids[i], 0, WALL_, 0) == -EINTR_)
				;
	}
}

/* exit_as exits with the wait status ws: the code it exited with, or
 * killed by the same signal (without a core). */
static __attribute__((noreturn)) void exit_as(int ws)
{
	int sig = ws & 0x7f;
	if (sig != 0) {
		struct rlimit64_ none = {0, 0};
		long dfl[4] = {0, 0, 0, 0}; /* SIG_DFL, no flags, whichever layout */
		__u64 one = 1ULL << (sig - 1);
		sys4(__NR_prlimit64, 0, RLIMIT_CORE_, &none, 0);
		sys4(__NR_rt_sigaction, sig, dfl, 0, 8);
		sys4(__NR_rt_sigprocmask, SIG_UNBLOCK_, &one, 0, 8);
		sys2(__NR_kill, self_pid, sig);
		ws = (128 + sig) << 8;
	}
	for (;;)
		sys1(__NR_exit_group, (ws >> 8) & 0xff);
}

/* can_supervise makes this process the subreaper of what it starts and
 * checks that it can list its children (a probe stops here). */
static void can_supervise(void)
{
	self_pid = sys1(__NR_getpid, 0);
	long r = sys5(__NR_prctl, PR_SET_CHILD_SUBREAPER_, 1, 0, 0, 0);
	if (r < 0)
		fail_sys("child subreaper", r);
	size_t n = 0;
	for (const char *p = "/proc/self/task/"; *p; p++)
		kids_path[n++] = *p;
	char digits[24];
	int d = 0;
	for (long v = self_pid; v > 0 && d < 24; v /= 10)
		digits[d++] = (char)('0' + v % 10);
	while (d > 0)
		kids_path[n++] = digits[--d];
	for (const char *p = "/children"; *p; p++)
		kids_path[n++] = *p;
	static int none[1];
	r = children(none, 1);
	if (r < 0)
		fail_sys("list the processes it starts (/proc/self/task/PID/children)", r);
}

/* GATE_CLOSED is the exit status of a helper whose gate closed unopened:
 * it ran nothing. The host that closed it does not read it. */
#define GATE_CLOSED 125

/* wait_gate waits until the host opens the gate (one byte on fd) and
 * closes it; a gate closed unopened ends the helper, with nothing run.
 * Signals are blocked here: a host that dies closes the gate. */
static void wait_gate(int fd)
{
	char b;
	long r;
	while ((r = sys3(__NR_read, fd, (long)&b, 1)) == -EINTR_)
		;
	if (r != 1)
		for (;;)
			sys1(__NR_exit_group, GATE_CLOSED);
	sys1(__NR_close, fd);
}

/* supervise forks the command, once the gate (gate - 1, if gate) opens,
 * and returns in it; the helper itself stays here, supervising, until the
 * command and all it started are gone. */
static void supervise(int gate)
{
	__u64 all = ~0ULL, old = 0;
	long r = sys4(__NR_rt_sigprocmask, SIG_BLOCK_, &all, &old, 8);
	if (r < 0)
		fail_sys("block signals", r);
	/* The host's parent-death signal was SIGKILL, which would leave the
	 * command's descendants to init; it is this helper's to catch now. A
	 * host that died before this line has killed it already, with
	 * nothing started. */
	r = sys5(__NR_prctl, PR_SET_PDEATHSIG_, SIGUSR1_, 0, 0, 0);
	if (r < 0)
		fail_sys("parent-death signal", r);
	can_supervise();
	if (gate)
		wait_gate(gate - 1);

	long pid = sys5(__NR_clone, SIGCHLD_, 0, 0, 0, 0);
	if (pid < 0)
		fail_sys("fork", pid);
	if (pid == 0) {
		/* The command: it dies if the helper does, and takes the
		 * signals its host gave it. */
		sys5(__NR_prctl, PR_SET_PDEATHSIG_, SIGKILL_, 0, 0, 0);
		if (sys1(__NR_getppid, 0) != self_pid)
			for (;;)
				sys1(__NR_exit_group, 1);
		sys4(__NR_rt_sigprocmask, SIG_SETMASK_, &old, 0, 8);
		return;
	}
	command_pid = pid;
	/* Nothing of the call's stays open here: the host sees the end of
	 * the command's output, channel and report when the command is gone. */
	if (sys3(__NR_close_range, 0, ~0U, 0) < 0)
		for (int fd = 0; fd < 1024; fd++)
			sys1(__NR_close, fd);

	/* A signal sent to the helper is for the command. In its own group
	 * or session its host signals the whole group, which reaches the
	 * command already; in the caller's job (the foreground of a
	 * terminal) the host signals this helper alone, and it passes on
	 * what any process sent it. The terminal's own signals (Ctrl-C,
	 * Ctrl-Z: sent by the kernel) reach the whole job by themselves. */
	int leads = sys1(__NR_getpgid, 0) == self_pid;
	int exited = 0, status = 0;
	for (;;) {
		struct siginfo_ si;
		long sig = sys4(__NR_rt_sigtimedwait, &all, &si, 0, 8);
		if (sig == SIGCHLD_) {
			int ws;
			long p;
			while ((p = sys4(__NR_wait4, -1, &ws, WNOHANG_ | WALL_, 0)) > 0)
				if (p == command_pid)
					exited = 1, status = ws;
			if (exited)
				break;
		} else if (sig == SIGUSR1_) {
			kill_all();
			exit_as(SIGKILL_);
		} else if (sig > 0 && si.code <= 0 && si.pid != self_pid && !leads) {
			sys2(__NR_kill, command_pid, sig);
		}
	}
	kill_all();
	exit_as(status);
}

/* ---- applying it ---- */

/* leave_terminal gives up the controlling terminal, if any: a command
 * started on its owner's terminal (rukh's CLI transport keeps the
 * terminal's session) could otherwise type on it with TIOCSTI, which the
 * kernel allows on one's own controlling terminal, for the owner's shell
 * to run once the command is done. Without one, TIOCSTI needs
 * CAP_SYS_ADMIN of the initial user namespace and /dev/tty is none, and
 * the terminal cannot be taken back: TIOCSCTTY needs a session leader
 * (the host starts the helper in a process group of its own, or in a
 * session of its own without a terminal) and, for a terminal that is
 * another session's, that capability too. */
static void leave_terminal(void)
{
	long fd = sys4(__NR_openat, AT_FDCWD_, "/dev/tty", O_RDWR_ | O_NOCTTY_ | O_NONBLOCK_ | O_CLOEXEC_, 0);
	if (fd == -ENXIO_)
		return; /* no controlling terminal */
	if (fd < 0)
		fail_sys("open /dev/tty", fd);
	long r = sys3(__NR_ioctl, fd, TIOCNOTTY, 0);
	sys1(__NR_close, fd);
	if (r < 0)
		fail_sys("give up the controlling terminal", r);
}

/* drop_capabilities leaves the command no capability, in any set: a
 * caller with some (root, or a rukh given file capabilities) must not
 * pass them on, or a strict command could load a kernel module, type on
 * any terminal (TIOCSTI), reboot, or use whatever else Landlock and the
 * filter do not cover. The bounding set goes first, while CAP_SETPCAP
 * (needed to drop it) is still there, if it is; then the ambient set, then
 * the effective, permitted and inheritable ones. Without CAP_SETPCAP the
 * bounding set stays, and no_new_privs keeps execve from granting any of
 * it, to root's programs as to file capabilities: nothing more than the
 * permitted set before the exec, which is empty. */
static void drop_capabilities(void)
{
	struct {
		__u32 version;
		int pid;
	} hdr = {LINUX_CAPABILITY_VERSION_3_, 0};
	struct {
		__u32 effective, permitted, inheritable;
	} data[2];
	long r = sys2(__NR_capget, &hdr, data);
	if (r < 0)
		fail_sys("capget", r);
	if (data[0].effective & (1U << CAP_SETPCAP_)) {
		for (long cap = 0; cap < 64; cap++) {
			r = sys2(__NR_prctl, PR_CAPBSET_DROP_, cap);
			if (r == -EINVAL_ && cap > CAP_SETPCAP_)
				break; /* past the kernel's last capability */
			if (r < 0)
				fail_sys("drop the capability bounding set", r);
		}
	}
	r = sys5(__NR_prctl, PR_CAP_AMBIENT_, PR_CAP_AMBIENT_CLEAR_ALL_, 0, 0, 0);
	if (r < 0)
		fail_sys("clear the ambient capabilities", r);
	memset(data, 0, sizeof data);
	r = sys2(__NR_capset, &hdr, data);
	if (r < 0)
		fail_sys("drop capabilities", r);
}

/* grant_fd opens a path the call was granted for its Landlock rule, or
 * returns -1 when it gets none. The host authorized it resolved, with no
 * symbolic link on the way: one there now was put there since (whoever can
 * write a directory on the way could point it at any other tree) or leads
 * nowhere, and following it could grant what the host never authorized.
 * openat2 with RESOLVE_NO_SYMLINKS refuses every link on the way, the last
 * component's included (ELOOP), and the call is refused. A path that is
 * not there (or that the caller cannot reach) gets no rule: it stays
 * denied. Anything else, openat2 missing included (before 5.6, which has
 * no Landlock ABI 4 either), cannot be applied. */
static long grant_fd(const char *path)
{
	struct open_how_ how = {.flags = O_PATH_ | O_CLOEXEC_, .resolve = RESOLVE_NO_SYMLINKS_};
	long fd = sys4(__NR_openat2, AT_FDCWD_, path, &how, sizeof how);
	if (fd >= 0)
		return fd;
	if (fd == -ENOENT_ || fd == -ENOTDIR_ || fd == -EACCES_)
		return -1;
	if (fd == -ELOOP_) {
		/* sandbox.ErrGrantSymlink's words, then the path. */
		put("granted path leads through a symbolic link: ");
		put(path);
		die();
	}
	unavailable("landlock: openat2 ");
	put(path);
	put(": ");
	put_err(fd);
	die();
}

static void landlock(const struct spec *s)
{
	long abi = sys3(__NR_landlock_create_ruleset, 0, 0, LL_CREATE_RULESET_VERSION);
	if (abi < 0)
		fail_sys("landlock", abi);
	if (abi < 4) {
		unavailable("landlock: the kernel has Landlock ABI ");
		put_u((unsigned long long)abi);
		put(", strict needs 4");
		die();
	}
	struct ll_ruleset_attr attr = {
		.handled_access_fs = LL_FS_ABI4,
		.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP,
		/* Where the kernel has it (ABI 6): signals and abstract sockets
		 * stay inside the domain. */
		.scoped = abi >= 6 ? LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL : 0,
	};
	long rs = sys3(__NR_landlock_create_ruleset, &attr, abi >= 6 ? sizeof attr : 2 * sizeof(__u64), 0);
	if (rs < 0)
		fail_sys("landlock_create_ruleset", rs);
	for (int i = 0; i < s->npaths; i++) {
		/* A system path (the release, the private TMPDIR: what the host
		 * chose, not the call) may lead through symbolic links, /lib
		 * on merged-/usr systems does; one that is not there (or cannot
		 * be opened) gets no rule: it stays denied. */
		long fd = s->paths[i].grant ? grant_fd(s->paths[i].path)
					    : sys4(__NR_openat, AT_FDCWD_, s->paths[i].path, O_PATH_ | O_CLOEXEC_, 0);
		if (fd < 0)
			continue;
		struct statx_ st;
		long r = sys5(__NR_statx, fd, "", AT_EMPTY_PATH_, STATX_TYPE_, &st);
		if (r < 0) {
			unavailable("landlock: statx ");
			put(s->paths[i].path);
			put(": ");
			put_err(r);
			die();
		}
		int dir = (st.mode & S_IFMT_) == S_IFDIR_;
		struct ll_path_beneath_attr pb = {
			.allowed_access = s->paths[i].write ? (dir ? LL_RW_DIR : LL_RW_FILE) : (dir ? LL_RO_DIR : LL_RO_FILE),
			.parent_fd = (__s32)fd,
		};
		r = sys4(__NR_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0);
		sys1(__NR_close, fd);
		if (r < 0) {
			unavailable("landlock: rule for ");
			put(s->paths[i].path);
			put(": ");
			put_err(r);
			die();
		}
	}
	long r = sys2(__NR_landlock_restrict_self, rs, 0);
	if (r < 0)
		fail_sys("landlock_restrict_self", r);
	sys1(__NR_close, rs);
}

/* ---- what a confined command does not see (restricted, strict) ---- */

#ifndef __NR_open_tree /* 5.2 */
#define __NR_open_tree 428
#define __NR_move_mount 429
#endif
#ifndef __NR_mount_setattr /* 5.12 */
#define __NR_mount_setattr 442
#endif
#define CLONE_NEWNS_ 0x00020000
#define CLONE_NEWUSER_ 0x10000000
#define MS_RDONLY_ 1
#define MS_NOSUID_ 2
#define MS_NODEV_ 4
#define MS_NOEXEC_ 8
#define MS_REC_ 16384
#define MS_PRIVATE_ (1 << 18)
#define OPEN_TREE_CLONE_ 1
#define AT_RECURSIVE_ 0x8000
#define MOVE_MOUNT_F_EMPTY_PATH_ 0x4
#define MOUNT_ATTR_RDONLY_ 0x1
#define MOUNT_ATTR_NOSUID_ 0x2
#define MOUNT_ATTR_NODEV_ 0x4
#define O_WRONLY_ 01
#define EEXIST_ 17
#define MAX_PATH_ 4096

struct mount_attr_ {
	__u64 attr_set, attr_clr, propagation, userns_fd;
};

/* write_file writes s to a file of /proc/self (the namespace's maps). */
static long write_file(const char *path, const char *s, size_t n)
{
	long fd = sys4(__NR_openat, AT_FDCWD_, path, O_WRONLY_ | O_CLOEXEC_, 0);
	if (fd < 0)
		return fd;
	long r = sys3(__NR_write, fd, s, n);
	sys1(__NR_close, fd);
	return r < 0 ? r : 0;
}

/* id_map is "ID ID 1\n": the caller mapped to itself, and nobody else. */
static size_t id_map(char *b, long id)
{
	char d[24];
	int n = 0;
	size_t len = 0;
	do
		d[n++] = (char)('0' + id % 10);
	while ((id /= 10) > 0 && n < 24);
	for (int k = 0; k < 2; k++) {
		for (int i = n; i > 0; i--)
			b[len++] = d[i - 1];
		b[len++] = ' ';
	}
	b[len++] = '1';
	b[len++] = '\n';
	return len;
}

/* make_dirs creates every directory of path that is missing (mode 0700),
 * as the mount point of a directory shown again inside a cover. */
static void make_dirs(const char *path)
{
	static char p[MAX_PATH_];
	size_t n = 0;
	for (; path[n] && n < sizeof p - 1; n++)
		p[n] = path[n];
	p[n] = 0;
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char c = p[i];
		p[i] = 0;
		long r = sys3(__NR_mkdirat, AT_FDCWD_, p, 0700);
		p[i] = c;
		if (r < 0 && r != -EEXIST_) {
			unavailable("hide the home from the command: mkdir ");
			put(p);
			put(": ");
			put_err(r);
			die();
		}
	}
}

/* isolate hides the directories of s->hide from the command: in a user
 * namespace of its own (the caller mapped to itself: its uid, gid and
 * files do not change) and a mount namespace of its own, each is covered
 * by an empty tmpfs, read-only once s->keep (the command's release) is
 * shown again inside it, read-only too. The home's store, keys, profile
 * and daemon socket, and the user's runtime directory (the session bus,
 * systemd --user) are then not there for the command, whatever it runs:
 * the owner's CLI in-process finds no store to write, and the socket of
 * rukhd is gone. The command cannot undo it: it has no capability left
 * (drop_capabilities, no_new_privs), and in a namespace it could make, a
 * mount that came from this one is locked to what it covers. It cannot
 * reach the covered files through another process either: /proc/PID/root
 * and /proc/PID/fd need ptrace access, which its Landlock domain (scope)
 * refuses for every process outside it. The working directory is entered
 * again by name, so that it is the covered view too. A directory that is
 * not there has nothing to hide. */
static void isolate(const struct spec *s)
{
	static char cwd[MAX_PATH_], map[64];
	long uid = sys1(__NR_getuid, 0), gid = sys1(__NR_getgid, 0);
	long n = sys4(__NR_readlinkat, AT_FDCWD_, "/proc/self/cwd", cwd, sizeof cwd - 1);
	cwd[n > 0 ? n : 0] = 0;
	long r = sys1(__NR_unshare, CLONE_NEWUSER_ | CLONE_NEWNS_);
	if (r < 0)
		fail_sys("a user and mount namespace of the command's own (unprivileged user namespaces disabled?)", r);
	if ((r = write_file("/proc/self/setgroups", "deny", 4)) < 0)
		fail_sys("setgroups deny", r);
	if ((r = write_file("/proc/self/uid_map", map, id_map(map, uid))) < 0)
		fail_sys("uid_map", r);
	if ((r = write_file("/proc/self/gid_map", map, id_map(map, gid))) < 0)
		fail_sys("gid_map", r);
	if ((r = sys5(__NR_mount, 0, "/", 0, MS_REC_ | MS_PRIVATE_, 0)) < 0)
		fail_sys("make the mounts private", r);
	/* What is shown again, taken before it is covered. */
	long keep[MAX_HIDE];
	struct mount_attr_ ro = {.attr_set = MOUNT_ATTR_RDONLY_ | MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_};
	for (int i = 0; i < s->nkeep; i++) {
		keep[i] = sys3(__NR_open_tree, AT_FDCWD_, s->keep[i], OPEN_TREE_CLONE_ | O_CLOEXEC_ | AT_RECURSIVE_);
		if (keep[i] < 0) {
			unavailable("hide the home from the command: open_tree ");
			put(s->keep[i]);
			put(": ");
			put_err(keep[i]);
			die();
		}
		if ((r = sys5(__NR_mount_setattr, keep[i], "", AT_EMPTY_PATH_ | AT_RECURSIVE_, &ro, sizeof ro)) < 0)
			fail_sys("hide the home from the command: mount_setattr", r);
	}
	for (int i = 0; i < s->nhide; i++) {
		r = sys5(__NR_mount, "none", s->hide[i], "tmpfs", MS_NOSUID_ | MS_NODEV_ | MS_NOEXEC_, "size=16k,nr_inodes=64,mode=0700");
		if (r == -ENOENT_ || r == -ENOTDIR_)
			continue;
		if (r < 0) {
			unavailable("hide the home from the command: mount tmpfs on ");
			put(s->hide[i]);
			put(": ");
			put_err(r);
			die();
		}
	}
	for (int i = 0; i < s->nkeep; i++) {
		make_dirs(s->keep[i]);
		r = sys5(__NR_move_mount, keep[i], "", AT_FDCWD_, s->keep[i], MOVE_MOUNT_F_EMPTY_PATH_);
		if (r < 0)
			fail_sys("hide the home from the command: move_mount", r);
		sys1(__NR_close, keep[i]);
	}
	for (int i = 0; i < s->nhide; i++) {
		r = sys5(__NR_mount_setattr, AT_FDCWD_, s->hide[i], 0, &ro, sizeof ro);
		if (r < 0 && r != -ENOENT_ && r != -ENOTDIR_ && r != -EINVAL_)
			fail_sys("hide the home from the command: read-only cover", r);
	}
	if (cwd[0] == '/' && sys1(__NR_chdir, cwd) < 0) {
		put("the working directory ");
		put(cwd);
		put(" is hidden from a confined command (it is in the home's or the user's runtime directory); run it from another directory");
		die();
	}
	/* The parent-death signal holds (a child namespace of the caller's own
	 * is no gain of capabilities); set it again all the same, and check
	 * that the helper is still the parent. */
	if (s->probe)
		return;
	sys5(__NR_prctl, PR_SET_PDEATHSIG_, SIGKILL_, 0, 0, 0);
	if (sys1(__NR_getppid, 0) != self_pid)
		for (;;)
			sys1(__NR_exit_group, 1);
}

/* scope puts a restricted command in a Landlock domain of its own that
 * restricts no file or network access but scopes signals and abstract
 * Unix sockets to it (ABI 6): it cannot kill, stop or signal its helper,
 * its host or any other process of the user's (only its own
 * descendants), so it cannot leave its supervision or hold its call; and
 * like every Landlock domain it cannot ptrace, or read /proc/PID/root,
 * /fd or /mem of, any process outside it. Strict gets the same scopes
 * with its file rules (landlock). */
static void scope(void)
{
	long abi = sys3(__NR_landlock_create_ruleset, 0, 0, LL_CREATE_RULESET_VERSION);
	if (abi < 0)
		fail_sys("landlock", abi);
	if (abi < 6) {
		unavailable("landlock: the kernel has Landlock ABI ");
		put_u((unsigned long long)abi);
		put(", restricted needs 6 (signal scoping)");
		die();
	}
	struct ll_ruleset_attr attr = {.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL};
	long rs = sys3(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		fail_sys("landlock_create_ruleset", rs);
	long r = sys2(__NR_landlock_restrict_self, rs, 0);
	if (r < 0)
		fail_sys("landlock_restrict_self", r);
	sys1(__NR_close, rs);
}

/* ---- the system call filter (strict) ---- */

#if defined(__x86_64__)
#define SECCOMP_ARCH AUDIT_ARCH_X86_64
#define X32_SYSCALL_BIT_ 0x40000000U
/* The 32-bit ABI the kernel may also run, and its ioctl's number. */
#define COMPAT_ARCH AUDIT_ARCH_I386
#define COMPAT_NR_IOCTL 54
#elif defined(__aarch64__) && defined(__AARCH64EL__)
#define SECCOMP_ARCH AUDIT_ARCH_AARCH64
#define COMPAT_ARCH AUDIT_ARCH_ARM
#define COMPAT_NR_IOCTL 54
#else
#error "rukh-sandbox: little-endian x86-64 or arm64 only (the filter's arch and argument offsets)"
#endif

/* The low 32 bits of argument n (little-endian): socketpair(2)'s family
 * and type are ints, and the kernel ignores the upper half. */
#define ARG_LO(n) ((__u32)(__builtin_offsetof(struct seccomp_data, args) + 8 * (n)))

#define STMT(code, k) {(__u16)(code), 0, 0, (__u32)(k)}
#define LOAD(off) STMT(BPF_LD | BPF_W | BPF_ABS, off)
#define RET(v) STMT(BPF_RET | BPF_K, v)
#define DENY(err) RET(SECCOMP_RET_ERRNO | ((err) & SECCOMP_RET_DATA))
/* If A == k (JEQ) or A >= k (JGE, unsigned), skip the next jt
 * instructions, else the next jf. */
#define JEQ(k, jt, jf) {(__u16)(BPF_JMP | BPF_JEQ | BPF_K), (__u8)(jt), (__u8)(jf), (__u32)(k)}
#define JGE(k, jt, jf) {(__u16)(BPF_JMP | BPF_JGE | BPF_K), (__u8)(jt), (__u8)(jf), (__u32)(k)}
/* If A & k is not zero, skip jt instructions, else jf. */
#define JSET(k, jt, jf) {(__u16)(BPF_JMP | BPF_JSET | BPF_K), (__u8)(jt), (__u8)(jf), (__u32)(k)}

/* socketcall(2) multiplexes socket(2) and the rest behind one number on
 * 32-bit ABIs (i386, AArch32), which the filter kills: the 64-bit ABIs
 * this helper is built for have no such call. */
#ifdef __NR_socketcall
#error "rukh-sandbox: this ABI has socketcall, which the filter would have to refuse too"
#endif

/* install_filter adds the seccomp filter f of n instructions to this
 * thread (and what it execs), or fails the call saying which one. */
static void install_filter(struct sock_filter *f, unsigned long n, const char *what)
{
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
	long r = sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	if (r < 0)
		fail_sys(what, r);
}

/* syscall_filter gives a strict command no network, and closes what
 * Landlock (ABI 7 and before) leaves open:
 *
 *   - socket(2), whatever the family (AF_INET, AF_INET6, AF_PACKET,
 *     AF_NETLINK, AF_UNIX, AF_VSOCK, AF_ALG, any other): EACCES. The
 *     command starts with descriptors 0-2 and its channel only, so a
 *     socket it does not create it does not have. This is the "no
 *     network": nothing to connect, bind, send or listen with. It also
 *     covers what Landlock does not: connect(2) or sendto(2) to a Unix
 *     socket by its path (the session bus and through it systemd --user,
 *     docker.sock, ssh and gpg agents, rukhd), MPTCP, UDP, raw and
 *     packet sockets, vsock to a virtual machine's host.
 *   - socketpair(2) but of AF_UNIX with SOCK_STREAM or SOCK_SEQPACKET
 *     (SOCK_NONBLOCK and SOCK_CLOEXEC aside): EACCES. A datagram socket
 *     can connect(2) or sendto(2) any datagram socket by path, even from
 *     a pair. Stream and seqpacket pairs are born connected to each other
 *     and the kernel refuses to connect them anywhere else (EISCONN; an
 *     address given to sendmsg is refused or ignored) or to listen on
 *     them (EINVAL), as it does for the channel on descriptor 3, which is
 *     such a pair.
 *   - add_key, request_key, keyctl: EACCES. The user's keyrings (@u,
 *     @us, and @s, which usually links @u) may hold Kerberos tickets and
 *     other credentials, and Landlock does not control them.
 *   - io_uring_setup, _enter, _register: io_uring creates and connects
 *     sockets itself (IORING_OP_SOCKET), out of reach of this filter:
 *     EPERM, as where the kernel has io_uring disabled.
 *
 * Other ways to a socket descriptor stay closed without the filter:
 * pidfd_getfd(2) needs ptrace access to the process that has it, which
 * Landlock refuses to any process outside the command's own domain (each
 * call's helper makes a new one), and a socket's path opens to nothing
 * (ENXIO). accept(2) and recvmsg(2) only work on sockets the command was
 * given: the channel, whose peer is the host, and descriptors 0-2 if the
 * caller made them sockets (the caller's own).
 *
 * Everything else is allowed. A call of another architecture (i386 by
 * int 0x80 on x86-64, AArch32 on arm64: other numbers, socketcall among
 * them, that this filter does not know) kills the process; on x86-64, x32
 * system calls (which alias the 64-bit ones) fail with ENOSYS, as on a
 * kernel without x32. */
static void syscall_filter(void)
{
	struct sock_filter f[] = {
		LOAD(__builtin_offsetof(struct seccomp_data, arch)),
		JEQ(SECCOMP_ARCH, 1, 0),
		RET(SECCOMP_RET_KILL_PROCESS),
		LOAD(__builtin_offsetof(struct seccomp_data, nr)),
#ifdef X32_SYSCALL_BIT_
		JGE(X32_SYSCALL_BIT_, 0, 1),
		DENY(ENOSYS_),
#endif
		/* socket(family, type, protocol): never */
		JEQ(__NR_socket, 0, 1),
		DENY(EACCES_),
		/* socketpair(family, type, protocol, sv) */
		JEQ(__NR_socketpair, 0, 8),
		LOAD(ARG_LO(0)),
		JEQ(AF_UNIX_, 0, 4),
		LOAD(ARG_LO(1)),
		STMT(BPF_ALU | BPF_AND | BPF_K, ~(__u32)SOCK_FLAGS_),
		JEQ(SOCK_STREAM_, 2, 0),
		JEQ(SOCK_SEQPACKET_, 1, 0),
		DENY(EACCES_),
		RET(SECCOMP_RET_ALLOW),
		/* the kernel's keyrings */
		JEQ(__NR_add_key, 2, 0),
		JEQ(__NR_request_key, 1, 0),
		JEQ(__NR_keyctl, 0, 1),
		DENY(EACCES_),
		/* io_uring */
		JEQ(__NR_io_uring_setup, 2, 0),
		JEQ(__NR_io_uring_enter, 1, 0),
		JEQ(__NR_io_uring_register, 0, 1),
		DENY(EPERM_),
		RET(SECCOMP_RET_ALLOW),
	};
	install_filter(f, sizeof f / sizeof f[0], "seccomp");
}

/* terminal_filter keeps a restricted or strict command from typing on a
 * terminal: ioctl(2) TIOCSTI (push characters into a terminal's input,
 * for the shell that reads it next) and TIOCLINUX (whose selection paste
 * does the same on a virtual console) fail with EPERM. A restricted
 * command keeps its caller's controlling terminal, on which the kernel
 * allows TIOCSTI without any privilege, so without this it could type a
 * command line, or an answer to `rukh approve`, into the owner's shell.
 * It holds for the other ABIs a 64-bit kernel runs: the 32-bit one (its
 * own ioctl number), and on x86-64 x32, whose calls fail with ENOSYS as
 * under strict. Another filter (strict's) may stack on it. */
#ifndef X32_SYSCALL_BIT_
#define X32_SYSCALL_BIT_ 0xffffffffU /* no x32: no call has this number */
#endif
static void terminal_filter(void)
{
	struct sock_filter f[] = {
		/*  0 */ LOAD(__builtin_offsetof(struct seccomp_data, arch)),
		/*  1 */ JEQ(SECCOMP_ARCH, 2, 0),
		/*  2 */ JEQ(COMPAT_ARCH, 6, 0),
		/*  3 */ RET(SECCOMP_RET_ALLOW),
		/*  4 */ LOAD(__builtin_offsetof(struct seccomp_data, nr)),
		/*  5 */ JGE(X32_SYSCALL_BIT_, 0, 1),
		/*  6 */ DENY(ENOSYS_),
		/*  7 */ JEQ(__NR_ioctl, 4, 0),
		/*  8 */ RET(SECCOMP_RET_ALLOW),
		/*  9 */ LOAD(__builtin_offsetof(struct seccomp_data, nr)),
		/* 10 */ JEQ(COMPAT_NR_IOCTL, 1, 0),
		/* 11 */ RET(SECCOMP_RET_ALLOW),
		/* 12 */ LOAD(ARG_LO(1)),
		/* 13 */ JEQ(TIOCSTI, 1, 0),
		/* 14 */ JEQ(TIOCLINUX, 0, 1),
		/* 15 */ DENY(EPERM_),
		/* 16 */ RET(SECCOMP_RET_ALLOW),
	};
	install_filter(f, sizeof f / sizeof f[0], "seccomp (terminal)");
}

/* The namespace flags of clone(2) and unshare(2). */
#define CLONE_NS_FLAGS_ (0x00020000U /* NEWNS */ | 0x02000000U /* NEWCGROUP */ | 0x04000000U /* NEWUTS */ | \
	0x08000000U /* NEWIPC */ | 0x10000000U /* NEWUSER */ | 0x20000000U /* NEWPID */ | 0x40000000U /* NEWNET */ | \
	0x00000080U /* NEWTIME */)

/* kernel_filter closes kernel surface a strict command has no use for,
 * as container runtimes' default profiles do (moby's, for one), where an
 * unprivileged process still reaches it:
 *
 *   - new namespaces: unshare(2), setns(2), and clone(2) with a
 *     namespace flag: EPERM. A user namespace gives a process every
 *     capability inside it (mount, chroot, the network stack's
 *     configuration) and with them kernel code that is otherwise root's.
 *     clone3(2) passes its flags in memory the filter cannot read: ENOSYS,
 *     so that libc falls back to clone(2), whose flags it can.
 *   - userfaultfd(2): EPERM (a way to stall the kernel at a chosen point,
 *     a staple of kernel exploits, even in UFFD_USER_MODE_ONLY).
 *   - perf_event_open(2), bpf(2): EPERM.
 *   - mount(2), pivot_root(2), chroot(2): EPERM (without a user
 *     namespace the new mount API needs a capability the command has
 *     not).
 *
 * Threads and processes are still created (clone without namespace flags,
 * fork, vfork). The other architectures are killed by syscall_filter. */
static void kernel_filter(void)
{
	struct sock_filter f[] = {
		LOAD(__builtin_offsetof(struct seccomp_data, arch)),
		JEQ(SECCOMP_ARCH, 1, 0),
		RET(SECCOMP_RET_ALLOW), /* syscall_filter kills it */
		LOAD(__builtin_offsetof(struct seccomp_data, nr)),
		/* clone(flags, ...): no namespace flag */
		JEQ(__NR_clone, 0, 4),
		LOAD(ARG_LO(0)),
		JSET(CLONE_NS_FLAGS_, 0, 1),
		DENY(EPERM_),
		RET(SECCOMP_RET_ALLOW),
		JEQ(__NR_clone3, 0, 1),
		DENY(ENOSYS_),
		JEQ(__NR_unshare, 8, 0),
		JEQ(__NR_setns, 7, 0),
		JEQ(__NR_userfaultfd, 6, 0),
		JEQ(__NR_perf_event_open, 5, 0),
		JEQ(__NR_bpf, 4, 0),
		JEQ(__NR_mount, 3, 0),
		JEQ(__NR_pivot_root, 2, 0),
		JEQ(__NR_chroot, 1, 0),
		RET(SECCOMP_RET_ALLOW),
		DENY(EPERM_),
	};
	install_filter(f, sizeof f / sizeof f[0], "seccomp (kernel)");
}

/* check_filter is the probe's (rukh doctor's) proof that the filter acts
 * here: a TCP socket is refused, and a stream pair, like the channel,
 * still works. */
static void check_filter(void)
{
	int sv[2];
	long r = sys3(__NR_socket, AF_INET_, SOCK_STREAM_ | O_CLOEXEC_, 0);
	if (r != -EACCES_) {
		unavailable("seccomp: socket(AF_INET) was not refused: ");
		if (r >= 0)
			put("it was created");
		else
			put_err(r);
		die();
	}
	r = sys4(__NR_socketpair, AF_UNIX_, SOCK_STREAM_ | O_CLOEXEC_, 0, sv);
	if (r < 0)
		fail_sys("seccomp: socketpair(AF_UNIX, SOCK_STREAM)", r);
	sys1(__NR_close, sv[0]);
	sys1(__NR_close, sv[1]);
}

/* run execs the command once the profile is applied, or ends a probe. */
static __attribute__((noreturn)) void run(struct spec *s, char **envp)
{
	if (s->probe)
		for (;;)
			sys1(__NR_exit_group, 0);
	long r = sys3(__NR_execve, s->argv[0], s->argv + 1, envp);
	put("exec ");
	put(s->argv[0]);
	put(": ");
	put_err(r);
	die();
}

__attribute__((noreturn, used)) void helper_main(long *sp)
{
	char **argv = (char **)(sp + 1);
	char **envp = argv + sp[0] + 1;
	static struct spec s;
	long r;

	parse(argv, &s);
	if (s.probe)
		can_supervise();
	else
		supervise(s.gate);
	if (s.host) /* the command as its host would start it */
		run(&s, envp);
	/* The command's parent-death signal (supervise set it: it dies with
	 * this helper) holds: the kernel clears it when the uids change or
	 * the capabilities grow, and here no namespace is entered, no uid
	 * changes and capabilities only shrink. */
	if (s.nhide > 0)
		isolate(&s);
	if (s.strict)
		leave_terminal();
	/* Neither profile passes on a caller's capabilities (root's): with
	 * them a command could type on any terminal, load a module, reboot. */
	drop_capabilities();
	r = sys5(__NR_prctl, PR_SET_NO_NEW_PRIVS_, 1, 0, 0, 0);
	if (r < 0)
		fail_sys("no_new_privs", r);
	terminal_filter();
	if (!s.strict)
		scope();
	if (s.strict) {
		landlock(&s);
		syscall_filter();
		kernel_filter();
		if (s.probe)
			check_filter();
	}
	/* The limits last: the helper's own steps above need descriptors. */
	for (int i = 0; i < s.nrlimits; i++) {
		struct rlimit64_ lim = {s.rlimits[i].max, s.rlimits[i].max};
		r = sys4(__NR_prlimit64, 0, s.rlimits[i].res, &lim, 0);
		if (r < 0) {
			unavailable("setrlimit ");
			put_u(s.rlimits[i].res);
			put(": ");
			put_err(r);
			die();
		}
	}
	run(&s, envp);
}
