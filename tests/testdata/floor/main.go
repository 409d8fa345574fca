// Command floor is the least any host of a call must do, for
// BenchmarkCLI's floor rows: a Go program, as the thin client is, that
// starts the extension with a prepared channel and waits for it
// (channelexec). With -store FILE it also commits a begin record before
// the start and an end record after the exit, each durably in its own
// bbolt transaction, as every call's records are; with -helper PATH it
// starts the command through the supervising helper (`PATH host --
// PROG PROG`), as a supervised call is; with -signals it catches
// Ctrl-C, SIGTERM and the hang-up before the command starts, as every
// host of a CLI call must (the first one stops the command with a
// grace), in a goroutine of its own from the start (it acts on none);
// with -host it starts the command as Rukh's hosts do, with the default
// timer slack whatever its own (spawn.MarkHost: F-call+slack is this
// floor started with the hosts' slack). Nothing else: no daemon, no
// resolve, no validation.
//
//	floor [-store FILE] [-helper PATH] [-signals] [-host] PROG FRAME [ENV]...
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/channelexec"
	"github.com/rukh-cli/rukh/internal/run/spawn"
)

func main() {
	storePath := flag.String("store", "", "commit a begin and an end record durably to this bbolt file")
	helper := flag.String("helper", "", "start the command through this rukh-sandbox")
	signals := flag.Bool("signals", false, "catch Ctrl-C, SIGTERM and SIGHUP before the command starts")
	host := flag.Bool("host", false, "start the command with the default timer slack, as Rukh's hosts do")
	flag.Parse()
	if *host {
		spawn.MarkHost()
	}
	caught := func() {}
	if *signals {
		c, done := make(chan os.Signal, 1), make(chan struct{})
		go func() {
			signal.Notify(c, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			close(done)
		}()
		caught = func() { <-done }
	}
	if flag.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: floor [-store FILE] [-helper PATH] [-signals] [-host] PROG FRAME [ENV]...")
		os.Exit(2)
	}
	if err := run(*storePath, *helper, caught, flag.Arg(0), flag.Arg(1), flag.Args()[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(storePath, helper string, caught func(), prog, frame string, env []string) error {
	record := func(string) error { return nil }
	if storePath != "" {
		db, err := bolt.Open(storePath, 0o600, nil)
		if err != nil {
			return err
		}
		defer db.Close()
		record = func(state string) error {
			return db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("invocations"))
				if err != nil {
					return err
				}
				return b.Put([]byte("0123456789abcdef0123456789abcdef"), []byte(state))
			})
		}
	}
	argv := []string{prog}
	if helper != "" {
		argv = []string{helper, "host", "--", prog, prog}
	}
	if err := record("running"); err != nil {
		return err
	}
	caught()
	line, err := channelexec.Run(argv, env, []byte(frame))
	if err != nil {
		return err
	}
	if err := record("succeeded"); err != nil {
		return err
	}
	_, err = os.Stdout.WriteString(line)
	return err
}
