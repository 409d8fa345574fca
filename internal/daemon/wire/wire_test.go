package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/daemon/wire/wirecbor"
)

func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestRoundTrip(t *testing.T) {
	done := 2.5
	for _, m := range []*Msg{
		{Hello: &Hello{Protocol: ProtocolVersion, Build: "b", Name: "rukh", PID: 7}},
		{Exec: &Exec{Args: []string{"deploy", "status", "--env", "stage"}, Dir: "/tmp", Env: []string{"A=b"}}},
		{CallTool: &CallTool{Task: "agent", Name: "x__y", Arguments: []byte(`{"a":1}`), Progress: true}},
		{Progress: &Progress{Message: "m", Done: &done}},
		{CallResult: &CallResult{InvocationID: "i", Outcome: "succeeded", Result: &CommandResult{Kind: "structured", Data: []byte(`{}`)}, Effects: []Effect{{Kind: "k", Ref: "r"}}}},
		{ToolPage: &ToolPage{Revision: 3, Tools: []*Tool{{Name: "n", InputSchema: []byte(`{}`)}}, NextCursor: "c"}},
		{Error: &Error{Code: CodeUnknownTool, Message: `unknown tool "x"`}},
		{Status: &Status{}},
		{CallTool: &CallTool{Task: "agent", Name: "x__y", Arguments: []byte(`{}`), Detach: true}},
		{CallResult: &CallResult{InvocationID: "i", Detached: true}},
		{WaitInvocations: &WaitInvocations{Task: "agent", IDs: []string{"a", "b"}, TimeoutMs: MaxWaitTimeoutMs}},
		{WaitResult: &WaitResult{Entries: []WaitEntry{{ID: "a", InvocationID: "a", Command: "p/c", Status: WaitTerminal, Terminal: true, Outcome: "succeeded"},
			{ID: "b", Status: WaitUnknown, Error: "no invocation b"}}, Terminal: []string{"a"}, Pending: []string{}, Stopped: []string{},
			Unknown: []string{"b"}, TimeoutMs: 1}},
		{Error: &Error{Code: CodeInvalidArgument, Message: "too many ids"}},
		{Spawn: &Spawn{Path: "/usr/bin/rukh-sandbox", Args: []string{"rukh-sandbox", "--", "/r/bin/p"}, Env: []string{"RUKH_IPC_FD=3"}, Dir: "/w", Files: 5}},
		{Spawn: &Spawn{Path: "/r/bin/p", Args: []string{"/r/bin/p"}, Env: []string{}, Dir: "/", Session: true, Files: 3}},
		{Spawned: &Spawned{PID: 42, Foreground: true}},
		{Spawned: &Spawned{Error: "fork/exec /r/bin/p: permission denied"}},
		{Exited: &Exited{Status: 130}},
		{Spawn: &Spawn{Path: "/usr/bin/rukh-sandbox", Args: []string{"rukh-sandbox", "host", "--", "/r/bin/p"}, Env: []string{}, Dir: "/", Supervised: true, Files: 3}},
		{GetHTTP: &GetHTTP{}},
		{HTTP: &HTTP{Section: []byte(`{"resource":"https://t/mcp"}`), Revision: 4}},
		{HTTP: &HTTP{Revision: 1}},
		{ToolPage: &ToolPage{Revision: 3, Tools: []*Tool{}, Total: 1, Commands: 40, Projection: "dispatch"}},
	} {
		buf, err := Encode(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Read(bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip: got %+v, want %+v", got, m)
		}
	}
}

// Every malformed frame is an error wrapping ErrFrame, never a panic or a
// silently different message.
func TestStrictDecoding(t *testing.T) {
	nest := func(member ...byte) []byte { // {member: [[[[…]]]]}
		b := append([]byte{0xa1, 0x60 | byte(len(member))}, member...)
		for range 40 {
			b = append(b, 0x81)
		}
		return append(b, 0x00)
	}
	deep := nest('s', 't', 'a', 't', 'u', 's') // a member the codec decodes
	deepHello := nest('h', 'e', 'l', 'l', 'o') // one decoded by hand (frames.go), which reads no deeper than its own members
	big := []byte{0xa1, 0x69, 'l', 'i', 's', 't', 'T', 'o', 'o', 'l', 's', 0xa2, 0x64, 't', 'a', 's', 'k', 0x60, 0x66, 'c', 'u', 'r', 's', 'o', 'r', 0x60}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"duplicate key", []byte{0xa2, 0x66, 's', 't', 'a', 't', 'u', 's', 0xa0, 0x66, 's', 't', 'a', 't', 'u', 's', 0xa0}, "duplicate map key"},
		{"unknown field", []byte{0xa1, 0x64, 'n', 'o', 'p', 'e', 0xa0}, "unknown field"},
		{"unknown inner field", []byte{0xa1, 0x66, 's', 't', 'a', 't', 'u', 's', 0xa1, 0x61, 'x', 0x01}, "unknown field"},
		{"indefinite map", []byte{0xbf, 0x66, 's', 't', 'a', 't', 'u', 's', 0xa0, 0xff}, "indefinite"},
		{"tag", []byte{0xc0, 0xa1, 0x66, 's', 't', 'a', 't', 'u', 's', 0xa0}, "tag"},
		{"no member", []byte{0xa0}, "0 members set"},
		{"two members", []byte{0xa2, 0x66, 's', 't', 'a', 't', 'u', 's', 0xa0, 0x64, 's', 't', 'o', 'p', 0xa0}, "2 members set"},
		{"too deep", deep, "exceeded max nested level"},
		{"too deep, a hand-decoded member", deepHello, "cannot unmarshal"},
		{"wrong type", []byte{0xa1, 0x66, 's', 't', 'a', 't', 'u', 's', 0x01}, "cannot unmarshal"},
		{"unknown error code", []byte{0xa1, 0x65, 'e', 'r', 'r', 'o', 'r', 0xa2, 0x64, 'c', 'o', 'd', 'e', 0x61, 'x', 0x67, 'm', 'e', 's', 's', 'a', 'g', 'e', 0x60}, `unknown error code "x"`},
		{"empty", nil, "EOF"},
		{"trailing data", append([]byte{0xa1, 0x64, 's', 't', 'o', 'p', 0xa0}, 0x00), "extraneous data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.body)
			if err == nil || !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode = %v, want an ErrFrame containing %q", err, tc.want)
			}
		})
	}
	if _, err := Decode(big); err != nil {
		t.Errorf("a valid listTools frame: %v", err)
	}
	// Invalid UTF-8 in a text string.
	bad := []byte{0xa1, 0x65, 'h', 'e', 'l', 'l', 'o', 0xa3, 0x68, 'p', 'r', 'o', 't', 'o', 'c', 'o', 'l', 0x01, 0x65, 'b', 'u', 'i', 'l', 'd', 0x61, 0xff, 0x64, 'n', 'a', 'm', 'e', 0x60}
	if _, err := Decode(bad); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

func TestFrameBounds(t *testing.T) {
	// An announced length over the bound is refused before allocating.
	head := binary.BigEndian.AppendUint32(nil, MaxFrame+1)
	if _, err := ReadFrame(bytes.NewReader(head)); err == nil || !errors.Is(err, ErrFrame) {
		t.Errorf("oversized: %v", err)
	}
	// A truncated body is an error, not a short message.
	full := frame([]byte{0xa1, 0x64, 's', 't', 'o', 'p', 0xa0})
	if _, err := ReadFrame(bytes.NewReader(full[:len(full)-1])); err == nil || !errors.Is(err, ErrFrame) {
		t.Errorf("truncated: %v", err)
	}
	// A clean end between frames is io.EOF.
	if _, err := ReadFrame(bytes.NewReader(nil)); err != io.EOF {
		t.Errorf("empty: %v", err)
	}
	// Encoding refuses what the other side would refuse.
	if _, err := Encode(nil, &Msg{Diag: &Diag{Line: strings.Repeat("x", MaxFrame)}}); err == nil {
		t.Error("an oversized message was encoded")
	}
}

func pair(t *testing.T) (*Conn, *Conn) {
	t.Helper()
	fds, err := syscallSocketpair()
	if err != nil {
		t.Fatal(err)
	}
	mk := func(fd int) *Conn {
		f := os.NewFile(uintptr(fd), "sock")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		return NewConn(c.(*net.UnixConn))
	}
	a, b := mk(fds[0]), mk(fds[1])
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// Files passed with an Exec arrive as working descriptors of the same
// files; files with any other frame are refused.
func TestPassFiles(t *testing.T) {
	a, b := pair(t)
	dir := t.TempDir()
	var files []*os.File
	for _, name := range []string{"in", "out", "err"} {
		f, err := os.Create(dir + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	if err := a.Send(&Msg{Exec: &Exec{Args: []string{"x"}, Dir: "/"}}, files...); err != nil {
		t.Fatal(err)
	}
	m, got, err := b.Receive()
	if err != nil || m.Exec == nil || len(got) != 3 {
		t.Fatalf("Receive = %+v, %d files, %v", m, len(got), err)
	}
	if _, err := got[1].WriteString("via the passed descriptor"); err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		f.Close()
	}
	if data, _ := os.ReadFile(dir + "/out"); string(data) != "via the passed descriptor" {
		t.Errorf("out holds %q", data)
	}

	if err := a.Send(&Msg{Status: &Status{}}, files...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Receive(); err == nil || !errors.Is(err, ErrFrame) {
		t.Errorf("files with a Status frame: %v", err)
	}

	// Each frame takes exactly its own count: a Spawn the number it
	// names, a Spawned its pidfd (none when it failed), others none.
	for _, tc := range []struct {
		name string
		m    *Msg
		n    int
		ok   bool
	}{
		{"spawn with what it names", &Msg{Spawn: &Spawn{Path: "/p", Files: 3}}, 3, true},
		{"spawn with fewer", &Msg{Spawn: &Spawn{Path: "/p", Files: 3}}, 2, false},
		{"spawned with its pidfd", &Msg{Spawned: &Spawned{PID: 1}}, 1, true},
		{"spawned without one", &Msg{Spawned: &Spawned{PID: 1}}, 0, false},
		{"a failed spawn with one", &Msg{Spawned: &Spawned{Error: "no"}}, 1, false},
		{"exited with one", &Msg{Exited: &Exited{Status: 0}}, 1, false},
		{"exec with two", &Msg{Exec: &Exec{Args: []string{"x"}}}, 2, false},
	} {
		if err := a.Send(tc.m, files[:tc.n]...); err != nil {
			t.Fatal(err)
		}
		_, got, err := b.Receive()
		for _, f := range got {
			f.Close()
		}
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrFrame)) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok {
			a, b = pair(t) // a refused frame ends the connection's use
		}
	}
}

// A Spawn names 3 to MaxFiles descriptors: the command's streams, then
// its descriptors from 3 on.
func TestSpawnFileBounds(t *testing.T) {
	for _, n := range []int{0, 2, MaxFiles + 1} {
		buf, err := Encode(nil, &Msg{Spawn: &Spawn{Path: "/p", Files: n}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(buf[4:]); !errors.Is(err, ErrFrame) {
			t.Errorf("a spawn of %d descriptors: %v", n, err)
		}
	}
}

// FuzzDecode: no input panics; whatever decodes re-encodes to a frame
// that decodes to the same message.
func FuzzDecode(f *testing.F) {
	for _, m := range []*Msg{
		{Hello: &Hello{Protocol: 1, Build: "b", Name: "rukh"}},
		{Exec: &Exec{Args: []string{"a"}, Dir: "/", Env: []string{"X=1"}}},
		{CallTool: &CallTool{Task: "t", Name: "n", Arguments: []byte(`{}`)}},
		{Error: &Error{Code: CodeInternal, Message: "m"}},
		{Spawn: &Spawn{Path: "/p", Args: []string{"/p"}, Dir: "/", Files: 4}},
		{Spawned: &Spawned{PID: 7, Foreground: true}},
		{Exited: &Exited{Status: 1}},
	} {
		buf, _ := Encode(nil, m)
		f.Add(buf[4:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Decode(body)
		if err != nil {
			return
		}
		buf, err := Encode(nil, m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		m2, err := Decode(buf[4:])
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip: %+v → %+v, %v", m, m2, err)
		}
	})
}

func syscallSocketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
}

// A frame's bytes count against the shared Budget as they arrive, not as
// announced: connections that announce the largest frame and send one
// byte hold a first chunk each, and the one that finds the budget spent is
// refused (ErrBudget) rather than allocating what it announced.
func TestBudget(t *testing.T) {
	budget := NewBudget(2*64<<10, 0)
	results := make(chan error, 3)
	var bs []*Conn
	for range 3 {
		bs = append(bs, announceLargest(t, budget, results))
	}
	// Two hold a chunk each and wait for more bytes; the third is refused.
	select {
	case err := <-results:
		if !errors.Is(err, ErrBudget) {
			t.Fatalf("the connection past the budget: %v, want ErrBudget", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no connection was refused within 30 s with two chunks of budget for three")
	}
	for _, b := range bs {
		b.Close()
	}
	for range 2 {
		if err := <-results; err == nil {
			t.Errorf("a closed connection read a frame")
		}
	}
	if budget.Used() != 0 {
		t.Errorf("%d bytes still counted after every read ended", budget.Used())
	}
}

// announceLargest announces a frame of MaxFrame bytes on a new connection
// that reads with budget, sends one byte of it, and returns the reading
// side, whose Receive reports to results.
func announceLargest(t *testing.T, budget *Budget, results chan<- error) *Conn {
	t.Helper()
	a, b := pair(t)
	b.Budget = budget
	var head [5]byte
	binary.BigEndian.PutUint32(head[:4], MaxFrame)
	if _, err := a.Socket().Write(head[:]); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _, err := b.Receive()
		results <- err
	}()
	return b
}

// The budget's reserve is for small frames: large frames held half-sent
// take all they may, and a small frame is still read whole; another large
// one is refused.
func TestBudgetReserve(t *testing.T) {
	const reserve = 64 << 10
	budget := NewBudget(2*64<<10+reserve, reserve)
	results := make(chan error, 3)
	var held []*Conn
	for range 3 {
		held = append(held, announceLargest(t, budget, results))
	}
	// Two take the unreserved part; whichever comes third is refused.
	select {
	case err := <-results:
		if !errors.Is(err, ErrBudget) {
			t.Fatalf("a third large frame: %v, want ErrBudget", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no large frame of three was refused within 30 s")
	}
	// A small frame uses the reserve.
	a, b := pair(t)
	b.Budget = budget
	frame, err := Encode(nil, &Msg{Status: &Status{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Socket().Write(frame); err != nil {
		t.Fatal(err)
	}
	if m, _, err := b.Receive(); err != nil || m.Status == nil {
		t.Fatalf("a status frame beside two held large ones: %+v, %v", m, err)
	}
	for _, b := range held {
		b.Close()
	}
	for range 2 {
		<-results
	}
	if budget.Used() != 0 {
		t.Errorf("%d bytes still counted after every read ended", budget.Used())
	}
}

// TestDial: the client's own socket (Dial, no package net) carries frames
// and descriptors both ways with a daemon's *net.UnixConn, its deadlines
// hold, and a socket nobody serves fails as the thin client expects.
func TestDial(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/d.sock"
	if _, err := Dial(path); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Dial of a missing socket: %v, want ENOENT", err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	accepted := make(chan *net.UnixConn, 1)
	go func() {
		uc, err := l.AcceptUnix()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- uc
	}()
	f, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	client := NewConn(f)
	t.Cleanup(func() { client.Close() })
	uc, ok := <-accepted
	if !ok {
		t.Fatal("the listener accepted nothing")
	}
	server := NewConn(uc)
	t.Cleanup(func() { server.Close() })
	if uid, pid, err := PeerCred(f); err != nil || uid != os.Getuid() || pid != os.Getpid() {
		t.Errorf("PeerCred of the client's socket = %d, %d, %v", uid, pid, err)
	}

	// Client to daemon: an Exec with three descriptors.
	out, err := os.Create(dir + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := client.Send(&Msg{Exec: &Exec{Args: []string{"x"}, Dir: "/"}}, os.Stdin, out, out); err != nil {
		t.Fatal(err)
	}
	m, got, err := server.Receive()
	if err != nil || m.Exec == nil || len(got) != 3 {
		t.Fatalf("the daemon received %+v, %d files, %v", m, len(got), err)
	}
	got[1].WriteString("to the client's file")
	CloseFiles(got)
	// Daemon to client: a Spawned with one descriptor.
	if err := server.Send(&Msg{Spawned: &Spawned{PID: 1}}, out); err != nil {
		t.Fatal(err)
	}
	m, got, err = client.Receive()
	if err != nil || m.Spawned == nil || len(got) != 1 {
		t.Fatalf("the client received %+v, %d files, %v", m, len(got), err)
	}
	got[0].WriteString(", and back")
	CloseFiles(got)
	if data, _ := os.ReadFile(dir + "/out"); string(data) != "to the client's file, and back" {
		t.Errorf("the passed descriptors wrote %q", data)
	}

	// A daemon that says nothing: the client's deadline ends the wait.
	f.SetDeadline(time.Now().Add(20 * time.Millisecond))
	if _, _, err := client.Receive(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Receive past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	f.SetDeadline(time.Time{})
	// The daemon hangs up: the end of the stream.
	server.Close()
	if _, _, err := client.Receive(); err != io.EOF {
		t.Errorf("Receive after the daemon closed: %v, want io.EOF", err)
	}
	// The socket file stays, nobody listens: refused.
	l.Close()
	if _, err := Dial(path); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial with nobody listening: %v, want ECONNREFUSED", err)
	}
}

// FuzzReceive feeds arbitrary bytes to Receive over a real socket (the
// client's kind, an *os.File), as a peer that sends garbage would: every
// frame read decodes, and the stream ends in an error — never a panic, a
// hang or an allocation of what a header announces.
func FuzzReceive(f *testing.F) {
	for _, m := range []*Msg{
		{Hello: &Hello{Protocol: 1, Build: "b", Name: "rukh"}},
		{Exit: &Exit{Status: 3}},
		{Spawned: &Spawned{PID: 7}},
	} {
		buf, _ := Encode(nil, m)
		f.Add(buf)
		f.Add(buf[:len(buf)-1])
		f.Add(append(buf, buf...))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
		defer r.Close()
		go func() {
			w.Write(stream)
			w.Close()
		}()
		r.SetDeadline(time.Now().Add(10 * time.Second)) // a hang fails below, not the fuzzer
		c := NewConn(r)
		c.Budget = NewBudget(1<<20, 64<<10)
		for range len(stream) + 1 { // each frame takes at least its 4-byte header
			m, files, err := c.Receive()
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Receive hung on %d bytes", len(stream))
			}
			if err != nil {
				return
			}
			CloseFiles(files)
			if m == nil {
				t.Fatal("Receive returned no message and no error")
			}
		}
		t.Fatal("Receive kept returning messages past the end of the stream")
	})
}

// plainMsg is Msg without its codec methods: what the CBOR codec makes of
// the struct itself, which Msg's own encoding must equal.
type plainMsg Msg

// Msg's member-by-member codec gives the bytes the codec gives the
// struct, for every member alone, with an ID, and with two members (which
// Decode refuses, but Encode must still say truly).
func TestMsgCodec(t *testing.T) {
	var msgs []*Msg
	typ := reflect.TypeFor[Msg]()
	for i := 1; i < typ.NumField(); i++ {
		m := &Msg{}
		reflect.ValueOf(m).Elem().Field(i).Set(reflect.New(typ.Field(i).Type.Elem()))
		msgs = append(msgs, m)
	}
	msgs = append(msgs,
		&Msg{ID: 7, Hello: &Hello{Protocol: 1, Build: "b", Name: "rukh", PID: 3}},
		&Msg{Exec: &Exec{Args: []string{"a", "é"}, Dir: "/", Env: []string{"X=1"}}},
		&Msg{Status: &Status{}, Stop: &Stop{}},
		&Msg{Spawn: &Spawn{Path: "/p", Args: []string{"/p"}, Dir: "/", Files: 4, Session: true, Ticket: 1 << 60}},
		&Msg{CallTool: &CallTool{Task: "t", Name: "n", Arguments: []byte(`{"a":1}`)}},
		// The members coded by hand (frames.go): every optional member
		// set and unset, integers across each length of head and below
		// zero, nil and empty arrays, a text of a two-byte length.
		&Msg{Hello: &Hello{Protocol: -1, Build: strings.Repeat("b", 300), Name: "", PID: 1 << 40}},
		&Msg{Hello: &Hello{Protocol: math.MinInt64, PID: -25}},
		&Msg{Exec: &Exec{}},
		&Msg{Exec: &Exec{Args: []string{}, Env: []string{"", "A=é"}, Dir: "/d"}},
		&Msg{Spawn: &Spawn{}},
		&Msg{Spawn: &Spawn{Path: "/h", Args: []string{"h", "--", "/p"}, Env: []string{}, Dir: "/", Session: true, Supervised: true, Files: 24, Ticket: math.MaxUint64}},
		&Msg{Spawn: &Spawn{Supervised: true, Files: 255, Ticket: 256}},
		&Msg{Spawned: &Spawned{}},
		&Msg{Spawned: &Spawned{Ticket: 65535, PID: 65536, Foreground: true}},
		&Msg{Spawned: &Spawned{Ticket: 1 << 32, Error: "no"}},
		&Msg{Exited: &Exited{Status: -1}},
		&Msg{Exit: &Exit{Status: 255}},
		&Msg{Started: &Started{InvocationID: "0123456789abcdef0123456789abcdef"}},
		&Msg{Cancel: &Cancel{Reason: "client_cancelled"}},
		&Msg{Error: &Error{Code: CodeBusy, Message: "busy"}},
	)
	yes, no := true, false
	long := strings.Repeat("é", 40000) // a length head of four bytes
	msgs = append(msgs,
		&Msg{ToolPage: &ToolPage{Tools: []*Tool{}}},
		&Msg{ID: 300, ToolPage: &ToolPage{Revision: 1 << 40, NextCursor: "c", Total: 70000, Commands: -1, Projection: "tools", Naming: "compact",
			Denied: []*DeniedTool{{Name: "n", Identity: "acme.x/y", Action: "a", Resource: "r"}},
			Tools: []*Tool{
				{Name: "a", Title: "T", Description: long, InputSchema: []byte(`{"type":"object"}`), OutputSchema: []byte{}},
				{Name: "b", Annotations: &Annotations{}},
				{Name: "c", Annotations: &Annotations{ReadOnly: &yes, Destructive: &no, Idempotent: &yes, OpenWorld: &no}},
				{Name: "d", Annotations: &Annotations{OpenWorld: &yes}},
				nil,
			}}},
	)
	for _, m := range msgs {
		got, err := m.MarshalCBOR()
		if err != nil {
			t.Fatalf("MarshalCBOR(%+v): %v", m, err)
		}
		want, err := wirecbor.EncMode().Marshal((*plainMsg)(m))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%+v encodes as %x; the struct codec gives %x", m, got, want)
		}
		checkMsgDecoding(t, want)
	}
}

// Any body decodes into Msg as into the struct itself: the same error or
// none, the same message.
func FuzzMsgCodec(f *testing.F) {
	for _, m := range []*Msg{
		{Hello: &Hello{Protocol: 1, Build: "b", Name: "rukh"}},
		{ID: 1, Exited: &Exited{Status: 1}},
		{Status: &Status{}, Stop: &Stop{}},
		{Exec: &Exec{Args: []string{"a"}, Dir: "/", Env: []string{}}},
		{Spawn: &Spawn{Path: "/p", Args: []string{"/p"}, Files: 3, Session: true, Supervised: true, Ticket: 300}},
		{Spawned: &Spawned{Ticket: 1, PID: -2, Foreground: true, Error: "e"}},
		{Exit: &Exit{Status: -130}},
		{Started: &Started{InvocationID: "i"}},
		{Cancel: &Cancel{Reason: "r"}},
		{Error: &Error{Code: CodeInternal, Message: "m"}},
	} {
		buf, _ := Encode(nil, m)
		f.Add(buf[4:])
	}
	for _, body := range [][]byte{{0xa0}, {0x01}, {0xa1, 0x64, 'n', 'o', 'p', 'e', 0xa0}, {0xa1, 0x65, 'h', 'e', 'l', 'l', 'o', 0xf6}, {0xa1, 0x01, 0xa0}} {
		f.Add(body)
	}
	f.Fuzz(checkMsgDecoding)
}

// checkMsgDecoding decodes body as Decode does (UnmarshalCBOR on its
// own) and through the codec (which checks the whole body first), and
// compares both with the struct codec's decoding.
func checkMsgDecoding(t *testing.T, body []byte) {
	var p plainMsg
	perr := wirecbor.DecMode().Unmarshal(body, &p)
	for how, decode := range map[string]func(*Msg) error{
		"Decode's":    func(m *Msg) error { return m.UnmarshalCBOR(body) },
		"the codec's": func(m *Msg) error { return wirecbor.DecMode().Unmarshal(body, m) },
	} {
		var m Msg
		err := decode(&m)
		if (err == nil) != (perr == nil) {
			t.Fatalf("%x: %s decoding of Msg says %v, the struct codec %v", body, how, err, perr)
		}
		if err == nil && !reflect.DeepEqual(m, Msg(p)) {
			t.Fatalf("%x: %s decoding of Msg gives %+v, the struct codec %+v", body, how, m, p)
		}
	}
	if perr != nil {
		return
	}
	// And what decodes encodes back as the codec would encode it.
	got, err := (*Msg)(&p).MarshalCBOR()
	want, werr := wirecbor.EncMode().Marshal(&p)
	if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("%x: %+v encodes as %x (%v); the struct codec gives %x (%v)", body, p, got, err, want, werr)
	}
}

// plainTool is Tool without its decoder: what the codec makes of the
// struct itself.
type plainTool Tool

// A Tool decodes as the struct does, for what a page carries and for
// what it must refuse.
func TestToolCodec(t *testing.T) {
	yes, no := true, false
	for _, tool := range []*Tool{
		{},
		{Name: "acme_deploy", Title: "Deploy", Description: "Deploys é.", InputSchema: []byte(`{"type":"object"}`), OutputSchema: []byte{}},
		{Name: "n", Annotations: &Annotations{}},
		{Name: "n", Annotations: &Annotations{ReadOnly: &yes, Destructive: &no, Idempotent: &yes, OpenWorld: &no}},
	} {
		body, err := wirecbor.EncMode().Marshal((*plainTool)(tool))
		if err != nil {
			t.Fatal(err)
		}
		var got Tool
		if err := got.UnmarshalCBOR(body); err != nil {
			t.Fatalf("%x: %v", body, err)
		}
		if !reflect.DeepEqual(got, *tool) {
			t.Errorf("%x decodes as %+v, want %+v", body, got, *tool)
		}
		checkToolDecoding(t, body)
	}
	for name, body := range map[string][]byte{
		"unknown member":    {0xa1, 0x64, 'n', 'o', 'p', 'e', 0x60},
		"duplicate member":  {0xa2, 0x64, 'n', 'a', 'm', 'e', 0x60, 0x64, 'n', 'a', 'm', 'e', 0x60},
		"name in bytes":     {0xa1, 0x64, 'n', 'a', 'm', 'e', 0x41, 'x'},
		"schema in text":    {0xa1, 0x6b, 'i', 'n', 'p', 'u', 't', 'S', 'c', 'h', 'e', 'm', 'a', 0x61, 'x'},
		"bad UTF-8":         {0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 0xff},
		"tagged":            {0xc0, 0xa0},
		"indefinite":        {0xbf, 0xff},
		"truncated":         {0xa1, 0x64, 'n', 'a', 'm', 'e', 0x62, 'x'},
		"trailing":          {0xa0, 0x00},
		"hint not a bool":   {0xa1, 0x6b, 'a', 'n', 'n', 'o', 't', 'a', 't', 'i', 'o', 'n', 's', 0xa1, 0x68, 'r', 'e', 'a', 'd', 'O', 'n', 'l', 'y', 0x01},
		"integer key":       {0xa1, 0x01, 0x60},
		"array, not a tool": {0x80},
	} {
		var got Tool
		if err := got.UnmarshalCBOR(body); err == nil {
			t.Errorf("%s (%x): decoded as %+v, want an error", name, body, got)
		}
		checkToolDecoding(t, body)
	}
}

// Any body decodes into Tool as into the struct itself: an error for
// both or for neither, and the same tool.
func FuzzToolCodec(f *testing.F) {
	yes := true
	for _, tool := range []*plainTool{
		{Name: "a", Title: "b", Description: "c", InputSchema: []byte("{}"), OutputSchema: []byte("{}")},
		{Annotations: &Annotations{ReadOnly: &yes}},
	} {
		body, _ := wirecbor.EncMode().Marshal(tool)
		f.Add(body)
	}
	f.Add([]byte{0xf6})
	f.Add([]byte{0xa1, 0x64, 'n', 'a', 'm', 'e', 0xf7})
	f.Fuzz(checkToolDecoding)
}

func checkToolDecoding(t *testing.T, body []byte) {
	var p plainTool
	perr := wirecbor.DecMode().Unmarshal(body, &p)
	var got Tool
	err := got.UnmarshalCBOR(body)
	if (err == nil) != (perr == nil) {
		t.Fatalf("%x: Tool's decoder says %v, the struct codec %v", body, err, perr)
	}
	if err == nil && !reflect.DeepEqual(got, Tool(p)) {
		t.Fatalf("%x: Tool's decoder gives %+v, the struct codec %+v", body, got, p)
	}
}

// Each member of Msg is coded by hand both ways or not at all: a member
// a program without the codec could send, it can read.
func TestHandCodedBothWays(t *testing.T) {
	typ := reflect.TypeFor[Msg]()
	for i := 1; i < typ.NumField(); i++ {
		f := typ.Field(i)
		encodes, decodes := HandCoded(reflect.New(f.Type.Elem()).Interface())
		if encodes != decodes {
			t.Errorf("Msg.%s: encoded by hand %v, decoded by hand %v", f.Name, encodes, decodes)
		}
	}
}

// A program without the codec (the thin client: cmd/rukh links neither
// package wirecbor nor the CBOR library, tests/deps_test.go) still sends
// and reads every frame of a command line, byte for byte as with it; a
// frame with any other member it refuses to send, and reads as a bad
// frame.
func TestWithoutCodec(t *testing.T) {
	commandLine := []*Msg{
		{Hello: &Hello{Protocol: ProtocolVersion, Build: "b", Name: "rukh", PID: 7}},
		{Error: &Error{Code: CodeBuildMismatch, Message: "m"}},
		{Exec: &Exec{Args: []string{"hello", "world"}, Dir: "/w", Env: []string{"A=b"}}},
		{Started: &Started{InvocationID: "0123456789abcdef"}},
		{Spawn: &Spawn{Path: "/p", Args: []string{"/p"}, Env: []string{}, Dir: "/", Supervised: true, Files: 4, Ticket: 9}},
		{Spawned: &Spawned{Ticket: 9, PID: 42, Foreground: true}},
		{Exited: &Exited{Status: 130}},
		{Cancel: &Cancel{Reason: "interrupted"}},
		{Exit: &Exit{Status: 3}},
	}
	var with [][]byte
	for _, m := range commandLine {
		buf, err := Encode(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		with = append(with, buf)
	}
	status, err := Encode(nil, &Msg{Status: &Status{}})
	if err != nil {
		t.Fatal(err)
	}
	WithoutCodec(func() {
		for i, m := range commandLine {
			buf, err := Encode(nil, m)
			if err != nil || !bytes.Equal(buf, with[i]) {
				t.Errorf("%+v without the codec: %x, %v; with it %x", m, buf, err, with[i])
			}
			if got, err := Read(bytes.NewReader(buf)); err != nil || !reflect.DeepEqual(got, m) {
				t.Errorf("%x without the codec reads as %+v, %v; want %+v", buf, got, err, m)
			}
		}
		if buf, err := Encode(nil, &Msg{Status: &Status{}}); !errors.Is(err, ErrNoCodec) || buf != nil {
			t.Errorf("a status frame without the codec: %x, %v; want nothing and ErrNoCodec", buf, err)
		}
		_, err := Read(bytes.NewReader(status))
		if !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), "no codec for a *wire.Status") {
			t.Errorf("reading a status frame without the codec: %v; want a bad frame naming the member", err)
		}
	})
	if _, err := Read(bytes.NewReader(status)); err != nil {
		t.Errorf("with the codec back: %v", err)
	}
}
