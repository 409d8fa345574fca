package daemon

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
)

// TestRoute is the order of a client's Spawned and Exited frames, which
// route takes from the connection: one out of order is a protocol fault
// (the call fails and nothing it names is signalled), and its
// descriptors are closed. A Spawned without the Spawn's ticket is one
// the client sent before the Spawn came, which the daemon may read only
// after it sent the Spawn: the frames crossed on the socket.
func TestRoute(t *testing.T) {
	const ticket = 0x5eed
	spawned := func(ticket uint64) *wire.Msg { return &wire.Msg{Spawned: &wire.Spawned{Ticket: ticket, PID: 42}} }
	exited := &wire.Msg{Exited: &wire.Exited{Status: 3}}
	for _, tc := range []struct {
		name  string
		state spawnState
		m     *wire.Msg
		fault string // "" when the frame is taken
		then  spawnState
	}{
		{"spawned before the spawn", spawnIdle, spawned(0), "the client sent spawned before it was asked to start a command", spawnIdle},
		{"spawned that crossed the spawn", spawnAsked, spawned(0), "the client sent spawned before it was asked to start a command (it does not carry the spawn's ticket)", spawnAsked},
		{"spawned with another ticket", spawnAsked, spawned(ticket + 1), "(it does not carry the spawn's ticket)", spawnAsked},
		{"spawned answering the spawn", spawnAsked, spawned(ticket), "", spawnRunning},
		{"a second spawned", spawnRunning, spawned(ticket), "the client sent spawned a second time", spawnRunning},
		{"exited before spawned", spawnAsked, exited, "the client sent exited before spawned", spawnAsked},
		{"exited", spawnRunning, exited, "", spawnExited},
		{"a second exited", spawnExited, exited, "the client sent exited a second time", spawnExited},
		{"anything once refused", spawnRefused, spawned(ticket), "", spawnRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warned []string
			sp := newClientSpawner(nil, &peer{pid: 1}, func(msg string, _ ...any) { warned = append(warned, msg) })
			sp.state, sp.ticket = tc.state, ticket
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			sp.route(tc.m, []*os.File{r})
			if sp.state != tc.then {
				t.Errorf("state %d after the frame, want %d", sp.state, tc.then)
			}
			taken := len(sp.spawned) + len(sp.exited)
			if tc.fault != "" {
				select {
				case <-sp.fault:
				default:
					t.Fatalf("no fault; want %q", tc.fault)
				}
				if !strings.Contains(sp.faultWhy(), tc.fault) {
					t.Errorf("fault %q, want %q", sp.faultWhy(), tc.fault)
				}
				if taken != 0 {
					t.Errorf("a faulty frame was taken as the answer")
				}
				if err := r.Close(); !errors.Is(err, os.ErrClosed) {
					t.Errorf("the faulty frame's descriptor is still open (close: %v)", err)
				}
				if len(warned) != 1 {
					t.Errorf("warned %q, want one warning", warned)
				}
				return
			}
			select {
			case <-sp.fault:
				t.Fatalf("fault %q; want the frame taken", sp.faultWhy())
			default:
			}
			if tc.state == spawnRefused {
				if taken != 0 {
					t.Errorf("a frame after the refusal was taken")
				}
				return
			}
			if taken != 1 {
				t.Errorf("the frame was not passed on")
			}
		})
	}
}
