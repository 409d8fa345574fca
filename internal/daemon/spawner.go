package daemon

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/run/spawn"
)

// Every wait of the daemon on a client is bounded (docs/daemon.md,
// "What a record proves"):
const (
	// spawnAnswer bounds how long the client may take to say it started a
	// command (Spawned): starting a process takes milliseconds.
	spawnAnswer = 10 * time.Second
	// exitedWait bounds how long, once the kernel shows the command
	// exited, the daemon waits for the client's Exited.
	exitedWait = 2 * time.Second
	// killWait bounds how long a command killed through its pidfd may
	// take to exit: after the first, the helper itself gets SIGKILL;
	// after the second, Wait returns without it.
	killWait = 3 * time.Second
	// relayDrain bounds how long a pipe the daemon handed the client is
	// read once the command is gone (relay).
	relayDrain = 100 * time.Millisecond
)

// clientSpawner has the client that sent an Exec start the command the
// daemon admitted for it (wire.Spawn), so that the command is a child of
// the caller's own job at the caller's terminal; the daemon keeps
// everything else — resolving, admission, the channel, the deadline, the
// record (docs/adr/0008-thin-client.md). One Exec starts at most one
// command.
//
// The client is the owner's own uid and may send anything: the daemon
// takes from it no pid number and no exit on its word. The process it
// signals is the one the pidfd the client passed names, once that was
// checked to be a child of the client (peer.verifyChild); the exit it
// records is the one the kernel shows through that pidfd.
type clientSpawner struct {
	c    *wire.Conn
	peer *peer
	warn func(msg string, args ...any)
	gone chan struct{} // closed when the connection ends (by watch)

	mu      sync.Mutex
	state   spawnState
	ticket  uint64           // the Spawn's, which its Spawned must carry
	spawned chan clientReply // the one Spawned
	exited  chan int         // the one Exited
	fault   chan struct{}    // closed at the client's first protocol fault
	why     string           // that fault
	proc    *clientProc
	relays  []*relay
}

// spawnState is where an Exec's command is in the exchange with its
// client: what the client may send next.
type spawnState int

const (
	spawnIdle    spawnState = iota // nothing asked: Spawned and Exited are faults
	spawnAsked                     // Spawn sent: one Spawned may come
	spawnRunning                   // a Spawned came: one Exited may come
	spawnExited                    // the Exited came: nothing more may
	spawnRefused                   // the Spawned was refused, or no command runs: what comes is ignored
)

type clientReply struct {
	m     *wire.Msg
	files []*os.File
}

func newClientSpawner(c *wire.Conn, p *peer, warn func(string, ...any)) *clientSpawner {
	if warn == nil {
		warn = func(string, ...any) {}
	}
	return &clientSpawner{c: c, peer: p, warn: warn, gone: make(chan struct{}),
		spawned: make(chan clientReply, 1), exited: make(chan int, 1), fault: make(chan struct{})}
}

// route takes a client's Spawned or Exited frame (from watch). One that
// comes out of order — before the daemon asked, a second one, an Exited
// before its Spawned — is a protocol fault: the command, if one runs, is
// killed and the call fails.
func (sp *clientSpawner) route(m *wire.Msg, files []*os.File) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	switch {
	case m.Spawned != nil && sp.state == spawnAsked && m.Spawned.Ticket == sp.ticket:
		sp.state = spawnRunning
		sp.spawned <- clientReply{m, files}
		return
	case m.Exited != nil && sp.state == spawnRunning:
		sp.state = spawnExited
		sp.exited <- m.Exited.Status
		return
	}
	closeAll(files)
	if sp.state == spawnRefused {
		return
	}
	what := "exited"
	if m.Spawned != nil {
		what = "spawned"
	}
	when := map[spawnState]string{
		spawnIdle: "before it was asked to start a command", spawnAsked: "before spawned",
		spawnRunning: "a second time", spawnExited: "a second time",
	}[sp.state]
	if m.Spawned != nil && sp.state == spawnAsked {
		// Sent before the Spawn came: it crossed the Spawn on the socket.
		when = "before it was asked to start a command (it does not carry the spawn's ticket)"
	}
	sp.faultLocked(fmt.Sprintf("the client sent %s %s", what, when))
}

func (sp *clientSpawner) faultf(format string, args ...any) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.faultLocked(fmt.Sprintf(format, args...))
}

func (sp *clientSpawner) faultLocked(why string) {
	select {
	case <-sp.fault:
		return
	default:
	}
	sp.why = why
	close(sp.fault)
	sp.warn("a client broke the spawn protocol; its command is killed and the call fails", "client", sp.peer.pid, "fault", why)
}

func (sp *clientSpawner) faultWhy() string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.why
}

func (sp *clientSpawner) refuse() {
	sp.mu.Lock()
	sp.state = spawnRefused
	sp.mu.Unlock()
}

// Spawn asks the client to start ex (wire.Spawn), runs meanwhile once the
// request is sent (invoke.Spawner: the begin record commits while the
// client starts the helper), then waits, within spawnAnswer, for the
// client's Spawned and checks it (accept).
func (sp *clientSpawner) Spawn(ex *exec.Cmd, job spawn.Job, meanwhile func()) (invoke.Process, error) {
	ticket := newTicket()
	sp.mu.Lock()
	st := sp.state
	if st == spawnIdle {
		sp.state, sp.ticket = spawnAsked, ticket
	}
	sp.mu.Unlock()
	select {
	case <-sp.fault:
		return nil, fmt.Errorf("the client broke the protocol: %s", sp.faultWhy())
	default:
	}
	if st != spawnIdle {
		return nil, errors.New("a command line starts one command")
	}
	files := make([]*os.File, 0, 3+len(ex.ExtraFiles))
	for i, s := range []any{ex.Stdin, ex.Stdout, ex.Stderr} {
		switch f := s.(type) {
		case *os.File:
			files = append(files, f)
		case nil:
			null, err := spawn.OpenNull(i)
			if err != nil {
				sp.refuse()
				return nil, err
			}
			defer null.Close()
			files = append(files, null)
		default:
			sp.refuse()
			return nil, fmt.Errorf("the client can only be given descriptors, not a %T", s)
		}
	}
	for _, f := range ex.ExtraFiles {
		give, err := sp.relayed(f)
		if err != nil {
			sp.refuse()
			return nil, err
		}
		files = append(files, give)
	}
	if len(files) > wire.MaxFiles {
		sp.refuse()
		return nil, fmt.Errorf("%d descriptors; the client takes at most %d", len(files), wire.MaxFiles)
	}
	msg := &wire.Spawn{Path: ex.Path, Args: ex.Args, Env: ex.Env, Dir: ex.Dir, Session: job.Isolation == spawn.Session, Supervised: job.Supervised, Files: len(files), Ticket: ticket}
	err := sp.c.Send(&wire.Msg{Spawn: msg}, files...)
	sp.closeGiven()
	if err != nil {
		sp.refuse()
		return nil, fmt.Errorf("ask the client to start the command: %w", err)
	}
	if meanwhile != nil {
		meanwhile()
	}
	timer := time.NewTimer(spawnAnswer)
	defer timer.Stop()
	select {
	case r := <-sp.spawned:
		p, err := sp.accept(r, job)
		if err != nil {
			sp.refuse()
			return nil, err
		}
		sp.mu.Lock()
		sp.proc = p
		sp.mu.Unlock()
		return p, nil
	case <-sp.fault:
		sp.killDelivered(job)
		sp.refuse()
		return nil, fmt.Errorf("the client broke the protocol: %s", sp.faultWhy())
	case <-sp.gone:
		sp.killDelivered(job)
		sp.refuse()
		select {
		case <-sp.fault: // the frame that ended the connection was bad
			return nil, fmt.Errorf("the client broke the protocol: %s", sp.faultWhy())
		default:
		}
		return nil, invoke.ErrSpawnerGone
	case <-timer.C:
		sp.refuse()
		return nil, fmt.Errorf("the client did not say within %s whether it started the command", spawnAnswer)
	}
}

// newTicket draws a Spawn's ticket: unguessable, so that only a client
// that read the Spawn can answer it.
func newTicket() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("daemon: no randomness: " + err.Error())
	}
	return binary.LittleEndian.Uint64(b[:])
}

// killDelivered kills the command of a Spawned that came before a fault
// (a second Spawned) or the client's end, but that Spawn had not taken
// yet: the call fails, and what it started must not run on. Only a
// verified child is signalled (accept).
func (sp *clientSpawner) killDelivered(job spawn.Job) {
	select {
	case r := <-sp.spawned:
		if p, err := sp.accept(r, job); err == nil {
			p.Kill()
			p.close()
		}
	default:
	}
}

// accept checks the client's Spawned: exactly one descriptor, a pidfd
// that names a child of the client, with the pid the client said. What
// fails is refused before anything is signalled.
func (sp *clientSpawner) accept(r clientReply, job spawn.Job) (*clientProc, error) {
	if r.m.Spawned == nil {
		closeAll(r.files)
		return nil, errors.New("the client answered the spawn with something else")
	}
	if r.m.Spawned.Error != "" {
		closeAll(r.files)
		return nil, errors.New(r.m.Spawned.Error)
	}
	if len(r.files) != 1 {
		closeAll(r.files)
		return nil, fmt.Errorf("the client answered spawned with %d descriptors, not the command's pidfd; nothing was signalled", len(r.files))
	}
	pidfd := r.files[0]
	pid, err := sp.peer.verifyChild(pidfd, r.m.Spawned.PID)
	if err != nil {
		pidfd.Close()
		sp.warn("refused a client's spawned: its pidfd names no child of the client", "client", sp.peer.pid, "error", err)
		return nil, fmt.Errorf("the client's spawned names no command it started (%v); nothing was signalled", err)
	}
	return &clientProc{sp: sp, pid: pid, fg: r.m.Spawned.Foreground, job: job, pidfd: pidfd, killed: make(chan struct{})}, nil
}

// close ends what the Exec's command held in the daemon: the pidfd and
// the relays. It is called once the Exec is done.
func (sp *clientSpawner) close() {
	sp.mu.Lock()
	p, relays := sp.proc, sp.relays
	sp.proc, sp.relays = nil, nil
	sp.state = spawnRefused
	sp.mu.Unlock()
	for _, r := range relays {
		r.finish()
	}
	if p != nil {
		p.close()
	}
}

// relayed is what the client is given for f, a descriptor the command
// gets from 3 on: f itself, but for the write end of a pipe (the
// enforcement helper's report pipe) the write end of a pipe of the
// daemon's own, copied to f (relay). The daemon reads such a pipe until
// its end, and a client that kept its copy of f open would keep that end
// from coming; a relay's copy ends once the command is gone.
func (sp *clientSpawner) relayed(f *os.File) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO || flags&unix.O_ACCMODE != unix.O_WRONLY {
		return f, nil
	}
	r, err := newRelay(f)
	if err != nil {
		return nil, err
	}
	sp.mu.Lock()
	sp.relays = append(sp.relays, r)
	sp.mu.Unlock()
	return r.give, nil
}

// closeGiven closes the daemon's copies of the relays' write ends once
// the client has its own.
func (sp *clientSpawner) closeGiven() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, r := range sp.relays {
		if r.give != nil {
			r.give.Close()
			r.give = nil
		}
	}
}

func (sp *clientSpawner) finishRelays() {
	sp.mu.Lock()
	relays := sp.relays
	sp.mu.Unlock()
	for _, r := range relays {
		r.finish()
	}
}

// relay copies what is written to a pipe the client got (give) to the
// daemon's pipe (a duplicate of the write end it was to give), until that
// pipe's end or until finish: then what is left in it is read for at most
// relayDrain and the daemon's pipe is closed.
type relay struct {
	r, w, give *os.File
	done       chan struct{}
	once       sync.Once
}

func newRelay(f *os.File) (*relay, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	w := os.NewFile(uintptr(fd), f.Name())
	r, give, err := os.Pipe()
	if err != nil {
		w.Close()
		return nil, err
	}
	rl := &relay{r: r, w: w, give: give, done: make(chan struct{})}
	go func() {
		defer close(rl.done)
		// The helper's report is at most a few hundred bytes; more is
		// read and dropped.
		io.Copy(w, io.LimitReader(r, 64<<10))
		w.Close()
		io.Copy(io.Discard, r)
		r.Close()
	}()
	return rl, nil
}

func (rl *relay) finish() {
	rl.once.Do(func() {
		rl.r.SetReadDeadline(time.Now().Add(relayDrain))
		<-rl.done
	})
}

// clientProc is a command the client started, checked to be the client's
// child: the daemon signals it through its pidfd only (which names that
// process, never a reused pid), learns that it exited from the pidfd and
// its status from the kernel, and bounds every wait on the client.
type clientProc struct {
	sp     *clientSpawner
	pid    int // verified: the pidfd's
	fg     bool
	job    spawn.Job
	pidfd  *os.File
	mu     sync.Mutex // guards pidfd against close
	closed bool
	kill   sync.Once
	killed chan struct{} // closed once it was sent SIGKILL (or the helper's Kill)
}

func (p *clientProc) InForeground() bool { return p.fg }

// Signal sends sig as spawn.Route says, through the pidfd: to the process
// the client started, or to the process group it leads (signalGroup). A
// process that leads no group, though not in its caller's job, is
// signalled alone.
func (p *clientProc) Signal(sig syscall.Signal) {
	proc, group := spawn.Route(sig, p.job, p.fg)
	p.mu.Lock()
	if !p.closed {
		fd := int(p.pidfd.Fd())
		for _, s := range proc {
			unix.PidfdSendSignal(fd, s, nil, 0)
		}
		if group && signalGroup(p.pidfd, sig) != nil {
			unix.PidfdSendSignal(fd, sig, nil, 0)
		}
	}
	p.mu.Unlock()
	if sig == syscall.SIGKILL {
		p.kill.Do(func() { close(p.killed) })
	}
}

// Kill sends SIGKILL to the process the client started, through its
// pidfd only.
func (p *clientProc) Kill() {
	p.mu.Lock()
	if !p.closed {
		unix.PidfdSendSignal(int(p.pidfd.Fd()), syscall.SIGKILL, nil, 0)
	}
	p.mu.Unlock()
	p.kill.Do(func() { close(p.killed) })
}

func (p *clientProc) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.pidfd.Close()
	}
}

// Wait returns the command's exit status once the kernel shows it exited
// (its pidfd is readable): the status the kernel keeps (exitStatus), else
// the one the client's Exited says, else -1. It never waits on the client
// alone:
//
//   - once the command has exited, the client has exitedWait to send
//     Exited;
//   - once it was killed (Signal(SIGKILL), Kill), it has killWait to exit,
//     then it gets SIGKILL itself, then Wait returns after killWait more
//     with -1, whatever the client does;
//   - a client that goes away, or breaks the protocol (an Exited while the
//     command runs, a second Spawned), has the command killed at once, and
//     a fault makes the status -1 (unknown), so that no report makes the
//     call a success.
func (p *clientProc) Wait() int {
	defer p.sp.finishRelays()
	exitCh, stopWatch := watchExit(p.pidfd)
	defer stopWatch()
	fault, gone, killed := p.sp.fault, p.sp.gone, p.killed
	var bound <-chan time.Time
	hard, faulted := false, false
	for {
		select {
		case st := <-p.sp.exited:
			if !pidfdExited(p.pidfd) {
				p.sp.faultf("the client said the command exited (status %d) while it still runs", st)
				continue
			}
			return p.status(st, true, faulted)
		case <-exitCh:
			if faulted {
				return -1
			}
			said, told := 0, false
			t := time.NewTimer(exitedWait)
			select {
			case said = <-p.sp.exited:
				told = true
			case <-p.sp.fault:
				faulted = true
			case <-p.sp.gone:
			case <-t.C:
				p.sp.warn("the client did not say how its command ended; the kernel's word is taken", "client", p.sp.peer.pid, "pid", p.pid)
			}
			t.Stop()
			return p.status(said, told, faulted)
		case <-fault:
			fault, faulted = nil, true
			p.Signal(syscall.SIGKILL)
		case <-gone:
			gone = nil
			p.Signal(syscall.SIGKILL)
		case <-killed:
			killed = nil
			bound = time.After(killWait)
		case <-bound:
			if !hard {
				hard = true
				p.Kill()
				bound = time.After(killWait)
				continue
			}
			p.sp.warn("a command the client started did not exit when killed; its call ends without it", "client", p.sp.peer.pid, "pid", p.pid)
			return -1
		}
	}
}

// status is the exit status Wait returns once the command exited: the
// kernel's, else what the client said (told), else -1; -1 after a fault.
func (p *clientProc) status(said int, told, faulted bool) int {
	if faulted {
		return -1
	}
	if st, ok := exitStatus(p.pidfd); ok {
		if told && st != said {
			p.sp.warn("a client reported another exit status than the kernel's; the kernel's is taken", "client", p.sp.peer.pid, "said", said, "kernel", st)
		}
		return st
	}
	if told {
		return said
	}
	return -1
}

// watchExit returns a channel closed once pidfd shows its process exited,
// and a func that ends the watch. It waits through Go's poller, on a
// non-blocking copy of pidfd that it closes itself: no thread sits in a
// system call while the command runs (one in poll(2) kept the runtime's
// monitor waking every 20-40 µs for the whole run, CPU taken from the
// command), and ending the watch waits for nothing.
func watchExit(pidfd *os.File) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	f, err := pollablePidfd(pidfd)
	if err != nil {
		// No copy the poller takes: look now and then instead.
		stop := make(chan struct{})
		go func() {
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for !pidfdExited(pidfd) {
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
			close(ch)
		}()
		return ch, sync.OnceFunc(func() { close(stop) })
	}
	go func() {
		defer f.Close()
		if spawn.AwaitExit(f) == nil {
			close(ch)
		}
	}()
	return ch, sync.OnceFunc(func() { f.SetReadDeadline(time.Unix(1, 0)) })
}

// pollablePidfd is a non-blocking copy of pidfd, in Go's poller. (The
// flag is the open file's: pidfd and the client's copy get it too, which
// changes nothing for either: neither is read or waited on.)
func pollablePidfd(pidfd *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(pidfd.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	if err := f.SetReadDeadline(time.Time{}); err != nil { // not in the poller
		f.Close()
		return nil, err
	}
	return f, nil
}
