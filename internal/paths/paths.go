// Package paths says where a named CLI keeps its files: every file under
// NAME_HOME when it is set, otherwise in the XDG base directories. It is a
// leaf: the CLI, the daemon and the thin client all find the store and the
// socket here.
package paths

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Paths are the directories a CLI keeps its files in.
type Paths struct {
	Data    string `json:"data"`
	Config  string `json:"config"`
	Runtime string `json:"runtime"`
}

// HomeEnv is the variable that puts every file of the CLI name under one
// directory, e.g. RUKH_HOME.
func HomeEnv(name string) string { return EnvPrefix(name) + "_HOME" }

// EnvPrefix is how the CLI name begins the names of its environment
// variables: upper case, with '-' as '_' ("my-cli" → "MY_CLI"), so every
// variable of one CLI (NAME_HOME, NAME_DAEMON) is spelt the same way.
func EnvPrefix(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Resolve resolves where the CLI name keeps its files from the
// environment: NAME_HOME when set, otherwise the XDG base directories.
func Resolve(name string, getenv func(string) string) (Paths, error) {
	if home := getenv(HomeEnv(name)); home != "" {
		if !filepath.IsAbs(home) {
			return Paths{}, fmt.Errorf("%s=%q is not an absolute path", HomeEnv(name), home)
		}
		return Paths{
			Data:    filepath.Join(home, "data"),
			Config:  filepath.Join(home, "config"),
			Runtime: filepath.Join(home, "run"),
		}, nil
	}
	userHome := getenv("HOME")
	xdg := func(env, fallback string) (string, error) {
		if dir := getenv(env); filepath.IsAbs(dir) {
			return filepath.Join(dir, name), nil
		}
		if userHome == "" {
			return "", fmt.Errorf("neither %s nor $HOME is set; set %s", env, HomeEnv(name))
		}
		return filepath.Join(userHome, fallback, name), nil
	}
	var p Paths
	var err error
	if p.Data, err = xdg("XDG_DATA_HOME", ".local/share"); err != nil {
		return p, err
	}
	if p.Config, err = xdg("XDG_CONFIG_HOME", ".config"); err != nil {
		return p, err
	}
	if dir := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(dir) {
		p.Runtime = filepath.Join(dir, name)
	} else {
		// No runtime dir (no login session): keep sockets under the data
		// dir rather than in a shared /tmp.
		p.Runtime = filepath.Join(p.Data, "run")
	}
	return p, nil
}

// Store is the bbolt file.
func (p Paths) Store() string { return filepath.Join(p.Data, "store.db") }

// Socket is the daemon's Unix socket for the CLI name: rukhd.sock for
// rukh, acmed.sock for acme.
func (p Paths) Socket(name string) string { return filepath.Join(p.Runtime, name+"d.sock") }

// InsecureError is a directory another user could change under the CLI:
// it belongs to someone else, or others may write to it.
type InsecureError struct {
	Dir    string
	Reason string
}

func (e *InsecureError) Error() string { return e.Dir + " " + e.Reason }

// Secure creates dir (0700) if it is missing, and refuses one that is not
// a directory, belongs to another user, or that group or others may write:
// whoever can write it could swap a release or the socket.
func Secure(dir string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err == syscall.ENOENT {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := syscall.Lstat(dir, &st); err != nil {
			return err
		}
	} else if err != nil {
		return &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return &InsecureError{dir, "is not a directory"}
	case int(st.Uid) != os.Getuid():
		return &InsecureError{dir, fmt.Sprintf("belongs to uid %d, not to you (uid %d); move it away", st.Uid, os.Getuid())}
	case st.Mode&0o022 != 0:
		return &InsecureError{dir, fmt.Sprintf("may be written by others (mode %04o); run `chmod 700 %s`", st.Mode&0o777, dir)}
	}
	return nil
}
