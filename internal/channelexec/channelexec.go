// Package channelexec starts an extension program with a prepared
// rukh.ipc/1 channel on its fd 3, writes one frame to it and reads the
// program's first line back: the least a host can do to run a command.
// Tests and the benchmarks' floor program use it; it is a leaf (no part
// of the core), so that a program built from it starts as fast as Go
// allows.
package channelexec

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/rukh-cli/rukh/internal/run/spawn"
)

// Run starts argv[0] as argv with env and the channel on fd 3, writes
// frame (if any) to the channel, and returns the first line the program
// writes on it once the program has exited 0.
func Run(argv, env []string, frame []byte) (string, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	parent, child := os.NewFile(uintptr(fds[0]), "channel"), os.NewFile(uintptr(fds[1]), "channel")
	defer parent.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{child}
	cmd.Env = env
	err = spawn.StartTracked(cmd) // from a host (spawn.MarkHost), with the default timer slack
	child.Close()
	if err != nil {
		return "", err
	}
	if frame != nil {
		if _, err := parent.Write(frame); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return "", fmt.Errorf("%s: write the frame: %w", argv[0], err)
		}
	}
	line, rerr := bufio.NewReader(parent).ReadString('\n')
	err = cmd.Wait()
	spawn.Untrack(cmd.Process.Pid)
	if err != nil {
		return "", fmt.Errorf("%s: %w", argv[0], err)
	}
	if rerr != nil {
		return "", fmt.Errorf("%s: read its channel: %w", argv[0], rerr)
	}
	return line, nil
}
