// Package mcpconfig writes the entry that starts `rukh mcp` into the
// configuration file of a real MCP client (Claude Code, Claude Desktop,
// VS Code, Cursor, Codex, Zed), in that client's own format. A merge
// keeps every other byte of the file as it was, refuses a file that is
// not valid and an entry of the same name unless told to replace it, and
// writes atomically with a backup of what was there.
package mcpconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/rukh-cli/rukh/internal/atomicfile"
)

// Scopes of a client's configuration.
const (
	User    = "user"    // the user's own file, for every project
	Project = "project" // a file in the project directory
)

// Client is an MCP client whose configuration file this package writes.
type Client struct {
	Name  string // as given on the command line: claude-code, …
	Title string // as its makers write it
	// Format is "json" (JSON, or JSON with comments where the client
	// allows them) or "toml".
	Format string
	// Key is the object (JSON) or table (TOML) that holds the servers.
	Key string
	// StdioType: the entry carries "type": "stdio".
	StdioType bool
	// Names is what the client is known to do with tool names
	// (docs/mcp.md, "Tool names"); nil when nothing is known.
	Names *NameLimit
	// files gives the configuration file of each scope the client has.
	files map[string]func(env Env) string
}

// Env is where the files are: the user's home, the project directory,
// and the environment variables the clients read for their own paths.
type Env struct {
	Home, Dir string
	Getenv    func(string) string
	GOOS      string // runtime.GOOS unless a test says otherwise
}

func (e Env) goos() string {
	if e.GOOS == "" {
		return runtime.GOOS
	}
	return e.GOOS
}

// configDir is the user's configuration directory as the clients that
// follow the platform's convention find it: $XDG_CONFIG_HOME or
// ~/.config on Linux, ~/Library/Application Support on macOS.
func (e Env) configDir() string {
	if e.goos() == "darwin" {
		return filepath.Join(e.Home, "Library", "Application Support")
	}
	if d := e.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(e.Home, ".config")
}

// Clients are the clients this package knows, by name.
var Clients = map[string]*Client{
	"claude-code": {Name: "claude-code", Title: "Claude Code", Format: "json", Key: "mcpServers", StdioType: true,
		Names: &NameLimit{Max: 64, Prefix: "mcp__SERVER__", Longer: "rejects them"}, files: map[string]func(Env) string{
			// Claude Code keeps its user file in $CLAUDE_CONFIG_DIR when
			// that is set, and reads no other.
			User: func(e Env) string {
				if d := e.Getenv("CLAUDE_CONFIG_DIR"); filepath.IsAbs(d) {
					return filepath.Join(d, ".claude.json")
				}
				return filepath.Join(e.Home, ".claude.json")
			},
			Project: func(e Env) string { return filepath.Join(e.Dir, ".mcp.json") },
		}},
	"claude-desktop": {Name: "claude-desktop", Title: "Claude Desktop", Format: "json", Key: "mcpServers",
		Names: &NameLimit{Max: 64, Longer: "rejects them"}, files: map[string]func(Env) string{
			User: func(e Env) string { return filepath.Join(e.configDir(), "Claude", "claude_desktop_config.json") },
		}},
	"vscode": {Name: "vscode", Title: "VS Code", Format: "json", Key: "servers", StdioType: true, files: map[string]func(Env) string{
		User:    func(e Env) string { return filepath.Join(e.configDir(), "Code", "User", "mcp.json") },
		Project: func(e Env) string { return filepath.Join(e.Dir, ".vscode", "mcp.json") },
	}},
	"cursor": {Name: "cursor", Title: "Cursor", Format: "json", Key: "mcpServers",
		Names: &NameLimit{Max: 60, Prefix: "SERVER", Longer: "rejects them"}, files: map[string]func(Env) string{
			User:    func(e Env) string { return filepath.Join(e.Home, ".cursor", "mcp.json") },
			Project: func(e Env) string { return filepath.Join(e.Dir, ".cursor", "mcp.json") },
		}},
	"codex": {Name: "codex", Title: "Codex", Format: "toml", Key: "mcp_servers",
		Names: &NameLimit{Max: 64, Prefix: "mcp__SERVER__", Longer: "cuts them short and ends them with a hash, so its agent no longer reads what they are"}, files: map[string]func(Env) string{
			User: func(e Env) string {
				if d := e.Getenv("CODEX_HOME"); filepath.IsAbs(d) {
					return filepath.Join(d, "config.toml")
				}
				return filepath.Join(e.Home, ".codex", "config.toml")
			},
		}},
	"zed": {Name: "zed", Title: "Zed", Format: "json", Key: "context_servers",
		Names: &NameLimit{Max: 64, Longer: "cuts them short"}, files: map[string]func(Env) string{
			User: func(e Env) string {
				if d := e.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) && e.goos() != "darwin" {
					return filepath.Join(d, "zed", "settings.json")
				}
				return filepath.Join(e.Home, ".config", "zed", "settings.json")
			},
			Project: func(e Env) string { return filepath.Join(e.Dir, ".zed", "settings.json") },
		}},
}

// NameLimit is the longest tool name a client passes on to its model,
// counted with the prefix it puts before each.
type NameLimit struct {
	Max int
	// Prefix is what the client puts before each tool's name, SERVER
	// standing for the server's name in its configuration ("" for none).
	Prefix string
	// Longer is what the client does with a longer name: "rejects them".
	Longer string
}

// PrefixFor is the prefix the client puts before the tools of server.
func (l *NameLimit) PrefixFor(server string) string {
	return strings.ReplaceAll(l.Prefix, "SERVER", server)
}

// Names lists the clients' names, sorted.
func Names() []string {
	var names []string
	for n := range Clients {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Scopes lists the scopes c has, user first.
func (c *Client) Scopes() []string {
	var s []string
	for _, scope := range []string{User, Project} {
		if c.files[scope] != nil {
			s = append(s, scope)
		}
	}
	return s
}

// File is c's configuration file for scope, or an error naming the
// scopes it has.
func (c *Client) File(scope string, env Env) (string, error) {
	f := c.files[scope]
	if f == nil {
		return "", fmt.Errorf("%s has no %s configuration; its scopes: %s", c.Title, scope, strings.Join(c.Scopes(), ", "))
	}
	return f(env), nil
}

// Server is the entry that starts one MCP server.
type Server struct {
	Name    string
	Command string // an absolute path
	Args    []string
	Env     map[string]string
}

// serverName is what a server's name may be: a TOML bare key, and what
// every client accepts.
var serverName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// Check refuses a server the clients could not start as meant.
func (s *Server) Check() error {
	if !serverName().MatchString(s.Name) {
		return fmt.Errorf("server name %q: use 1 to 64 letters, digits, '-' or '_'", s.Name)
	}
	if !filepath.IsAbs(s.Command) {
		return fmt.Errorf("command %q is not an absolute path", s.Command)
	}
	return nil
}

// jsonEntry is a server as the JSON clients hold it, members in the
// order their documentation writes them.
type jsonEntry struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// entry is the server as c's configuration holds it (JSON clients).
func (c *Client) entry(s *Server) jsonEntry {
	e := jsonEntry{Command: s.Command, Args: s.Args, Env: s.Env}
	if c.StdioType {
		e.Type = "stdio"
	}
	return e
}

// ErrExists is a server of the same name already in the file.
var ErrExists = errors.New("already configured")

// ExistsError says which file has a server of the name already.
type ExistsError struct{ File, Key, Name string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s already has a server %q (%s.%s); nothing was written: pass --force to replace it, or --name to add another", e.File, e.Name, e.Key, e.Name)
}

func (e *ExistsError) Is(target error) bool { return target == ErrExists }

// InvalidError is a configuration file this package will not touch.
type InvalidError struct {
	File string
	Err  error
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("%s: %v; nothing was written: fix the file, or move it away to start a new one", e.File, e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// Snippet is the text of s alone in c's format: what a person adds to the
// file by hand.
func (c *Client) Snippet(s *Server) (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	if c.Format == "toml" {
		return tomlTable(c.Key, s), nil
	}
	out, err := mergeJSON(nil, c.Key, s.Name, c.entry(s), false)
	return string(out), err
}

// Merge returns data, the content of c's file (empty: no file yet), with
// s added, keeping every other byte; an entry of the same name is
// replaced only when force is set.
func (c *Client) Merge(file string, data []byte, s *Server, force bool) ([]byte, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	var out []byte
	var err error
	if c.Format == "toml" {
		out, err = mergeTOML(data, c.Key, s, force)
	} else {
		out, err = mergeJSON(data, c.Key, s.Name, c.entry(s), force)
	}
	var ee *ExistsError
	var ie *InvalidError
	switch {
	case errors.As(err, &ee):
		ee.File = file
	case errors.As(err, &ie):
		ie.File = file
	}
	return out, err
}

// MaxFileBytes bounds the configuration file Write reads: a client's file
// holds paths and settings, and Claude Code's ~/.claude.json, the largest
// of them (it keeps per-project history), stays well under it. A larger
// file is refused, not truncated.
const MaxFileBytes = 4 << 20

// maxLinks bounds the symbolic links Write follows from the path it is
// given to the file it writes (as the kernel's ELOOP limit does).
const maxLinks = 40

// Written is what Write did.
type Written struct {
	// File is the file written: the path given, or, when that is a
	// symbolic link (~/.claude.json -> dotfiles/claude.json), the file
	// at the end of its links, which stay links.
	File string
	// Backup is the copy of what was there ("" when there was no file,
	// or nothing was written).
	Backup string
	// Unchanged: the file already held the entry exactly as given, and
	// was left as it was (no backup either).
	Unchanged bool
}

// Write merges s into c's file at path (Merge) and replaces the file
// atomically: a temporary file beside it, synced, renamed over it. What
// was there is kept as PATH.bak-TIME first (PATH.bak-TIME-2, -3, … when
// that name is taken: a backup is never replaced), with the file's mode,
// which the new content keeps. A file that does not exist yet is created
// (mode 0644, and its directory as needed: these files hold paths, not
// secrets). A file that already holds s exactly is left as it is
// (Written.Unchanged), without a backup.
//
// A path that is a symbolic link is written through: the file at the end
// of its links is replaced in its own directory, so the links stay links
// (a dotfiles repository sees the change). A dangling link, a loop, and
// anything at the end that is not a regular file (a device, a named pipe)
// are refused, as is a file over MaxFileBytes; nothing is written then.
func (c *Client) Write(path string, s *Server, force bool, now string) (*Written, error) {
	target, existed, err := resolve(path)
	if err != nil {
		return nil, err
	}
	var data []byte
	var mode os.FileMode = 0o644
	if existed {
		if data, mode, err = readConfig(target); err != nil {
			return nil, err
		}
	}
	out, err := c.Merge(path, data, s, force)
	if err != nil {
		return nil, err
	}
	w := &Written{File: target}
	if existed && bytes.Equal(out, data) {
		w.Unchanged = true
		return w, nil
	}
	if existed {
		if w.Backup, err = backUp(path, now, data, mode); err != nil {
			return nil, fmt.Errorf("back up %s: %w; nothing was written", path, err)
		}
	} else if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return nil, err
	}
	if err := atomicfile.Replace(target, out, mode); err != nil {
		if w.Backup != "" {
			os.Remove(w.Backup)
		}
		return nil, err
	}
	return w, nil
}

// MaxBackups bounds the backups of one file made within one second
// (the names backUp tries for one time); one more write is refused.
const MaxBackups = 1000

// backUp keeps data as PATH.bak-NOW, or the first of PATH.bak-NOW-2,
// PATH.bak-NOW-3, … not taken (writes within one second share NOW), and
// returns its name. The name is taken atomically (atomicfile.WriteNew), so
// a backup is never replaced, not even by a concurrent write.
func backUp(path, now string, data []byte, mode os.FileMode) (string, error) {
	name := path + ".bak-" + now
	for i := 2; ; i++ {
		err := atomicfile.WriteNew(name, data, mode)
		switch {
		case err == nil:
			return name, nil
		case !errors.Is(err, fs.ErrExist):
			return "", err
		case i > MaxBackups:
			return "", fmt.Errorf("%s.bak-%s and %d more backups of that second exist: %w", path, now, MaxBackups-1, err)
		}
		name = fmt.Sprintf("%s.bak-%s-%d", path, now, i)
	}
}

// resolve follows the symbolic links of path's last element, at most
// maxLinks, to the file they end at, and reports whether it exists. A
// path that does not exist is a file to create; a link whose target does
// not exist is refused, since creating a file there could be anywhere.
func resolve(path string) (target string, exists bool, err error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && p == path:
			return p, false, nil
		case errors.Is(err, fs.ErrNotExist):
			return "", false, fmt.Errorf("%s is a symbolic link to %s, which does not exist; nothing was written: create the file the link names, or remove the link", path, p)
		case err != nil:
			return "", false, err
		case fi.Mode()&fs.ModeSymlink == 0:
			return p, true, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", false, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	return "", false, fmt.Errorf("%s: more than %d symbolic links (a loop?); nothing was written", path, maxLinks)
}

// readConfig reads the configuration file at path, which must be a
// regular file of at most MaxFileBytes, and returns it with its mode. It
// is opened without blocking, so a named pipe put there never holds it
// up, and checked once open, so what is read is what was checked.
func readConfig(path string) ([]byte, os.FileMode, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("not a regular file: %s (%s); nothing was written: a client's configuration is a regular file", path, kindOf(fi.Mode()))
	}
	if fi.Size() > MaxFileBytes {
		return nil, 0, tooLarge(path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, 0, err
	}
	if len(data) > MaxFileBytes {
		return nil, 0, tooLarge(path) // it grew while it was read
	}
	return data, fi.Mode().Perm(), nil
}

func tooLarge(path string) error {
	return fmt.Errorf("%s is larger than %d MiB, more than any client's configuration; nothing was written", path, MaxFileBytes>>20)
}

// kindOf names the type of a file that is not a regular one.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}
