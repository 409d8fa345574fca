// Command probe is a test extension that tries what a confined command
// must not do, and reports what happened: "ok: …" or "error: …". It is
// built by tests/confine_test.go.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/rukh-cli/rukh/extsdk"
	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/wire"
)

func main() {
	extsdk.Run(func(ctx context.Context, inv *extsdk.Invocation) (extsdk.Result, error) {
		arg := inv.String("arg")
		var out string
		var err error
		switch inv.String("what") {
		case "read":
			var b []byte
			b, err = os.ReadFile(arg)
			out = strings.TrimSpace(string(b))
		case "readother":
			var b []byte
			b, err = os.ReadFile(inv.String("other"))
			out = strings.TrimSpace(string(b))
		case "write":
			err = os.WriteFile(arg, []byte("x"), 0o644)
		case "tcp":
			var c net.Conn
			c, err = net.DialTimeout("tcp", arg, 2*time.Second)
			if c != nil {
				c.Close()
			}
		case "udp":
			// A datagram to arg.
			var c net.PacketConn
			if c, err = net.ListenPacket("udp", "127.0.0.1:0"); err == nil {
				var addr *net.UDPAddr
				if addr, err = net.ResolveUDPAddr("udp", arg); err == nil {
					_, err = c.WriteTo([]byte("hi"), addr)
				}
				c.Close()
			}
		case "unix":
			// Connect to a Unix socket by its path (strict: no Unix
			// sockets at all, whatever the path).
			var c net.Conn
			c, err = net.DialTimeout("unix", arg, 2*time.Second)
			if c != nil {
				c.Close()
			}
		case "daemon":
			// Talk to rukhd as a client would: it must refuse a confined
			// command, which could otherwise have it run anything.
			var c net.Conn
			c, err = net.DialTimeout("unix", arg, 2*time.Second)
			if err == nil {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				var m *wire.Msg
				if err = wire.Write(c, &wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: buildid.ID(), Name: "rukh"}}); err == nil {
					m, err = wire.Read(c)
				}
				switch {
				case err != nil:
				case m.Error != nil:
					err = fmt.Errorf("%s: %s", m.Error.Code, m.Error.Message)
				default:
					out = "the daemon answered hello"
				}
			}
		case "drop":
			// A destructive stand-in: each run appends a line to arg, so a
			// test counts the runs, and reports what it "deleted".
			var f *os.File
			if f, err = os.OpenFile(arg, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				_, err = f.WriteString("dropped\n")
				f.Close()
			}
			if err == nil {
				err = inv.AddEffect("deleted", "table:"+arg)
			}
		case "tmpdir":
			err = os.WriteFile(os.Getenv("TMPDIR")+"/probe", []byte("x"), 0o600)
			out = os.Getenv("TMPDIR")
		case "fds":
			var ents []os.DirEntry
			ents, err = os.ReadDir("/proc/self/fd")
			var names []string
			for _, e := range ents {
				target, _ := os.Readlink("/proc/self/fd/" + e.Name())
				names = append(names, e.Name()+"="+target)
			}
			out = strings.Join(names, " ")
		case "nnp":
			var b []byte
			b, err = os.ReadFile("/proc/self/status")
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "NoNewPrivs:") {
					out = strings.Join(strings.Fields(l), " ")
				}
			}
		case "limit":
			var b []byte
			b, err = os.ReadFile("/proc/self/limits")
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, arg) {
					out = strings.Join(strings.Fields(l), " ")
				}
			}
		default:
			err = fmt.Errorf("unknown probe %q", inv.String("what"))
		}
		if err != nil {
			return extsdk.Text("error: " + err.Error()), nil
		}
		return extsdk.Text("ok: " + out), nil
	})
}
