// Package mcpconfig writes the entry that starts `rukh mcp` into the
// configuration file of a real MCP client (Claude Code, Claude Desktop,
// VS Code, Cursor, Codex, Zed), in that client's own format. A merge
// keeps every other byte of the file as it was, refuses a file that is
// not valid and an entry of the same name unless told to replace it, and
// writes atomically with a backup of what was there.
package mcpconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

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
	"claude-code": {Name: "claude-code", Title: "Claude Code", Format: "json", Key: "mcpServers", StdioType: true, files: map[string]func(Env) string{
		User:    func(e Env) string { return filepath.Join(e.Home, ".claude.json") },
		Project: func(e Env) string { return filepath.Join(e.Dir, ".mcp.json") },
	}},
	"claude-desktop": {Name: "claude-desktop", Title: "Claude Desktop", Format: "json", Key: "mcpServers", files: map[string]func(Env) string{
		User: func(e Env) string { return filepath.Join(e.configDir(), "Claude", "claude_desktop_config.json") },
	}},
	"vscode": {Name: "vscode", Title: "VS Code", Format: "json", Key: "servers", StdioType: true, files: map[string]func(Env) string{
		User:    func(e Env) string { return filepath.Join(e.configDir(), "Code", "User", "mcp.json") },
		Project: func(e Env) string { return filepath.Join(e.Dir, ".vscode", "mcp.json") },
	}},
	"cursor": {Name: "cursor", Title: "Cursor", Format: "json", Key: "mcpServers", files: map[string]func(Env) string{
		User:    func(e Env) string { return filepath.Join(e.Home, ".cursor", "mcp.json") },
		Project: func(e Env) string { return filepath.Join(e.Dir, ".cursor", "mcp.json") },
	}},
	"codex": {Name: "codex", Title: "Codex", Format: "toml", Key: "mcp_servers", files: map[string]func(Env) string{
		User: func(e Env) string {
			if d := e.Getenv("CODEX_HOME"); filepath.IsAbs(d) {
				return filepath.Join(d, "config.toml")
			}
			return filepath.Join(e.Home, ".codex", "config.toml")
		},
	}},
	"zed": {Name: "zed", Title: "Zed", Format: "json", Key: "context_servers", files: map[string]func(Env) string{
		User: func(e Env) string {
			if d := e.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) && e.goos() != "darwin" {
				return filepath.Join(d, "zed", "settings.json")
			}
			return filepath.Join(e.Home, ".config", "zed", "settings.json")
		},
		Project: func(e Env) string { return filepath.Join(e.Dir, ".zed", "settings.json") },
	}},
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

// Write merges s into c's file at path (Merge) and replaces the file
// atomically: a temporary file beside it, synced, renamed over it. What
// was there is kept as PATH.bak-TIME first, with the file's mode, which
// the new content keeps. A file that does not exist yet is created (mode
// 0644, and its directory as needed: these files hold paths, not
// secrets). It returns the backup's path ("" when there was no file).
func (c *Client) Write(path string, s *Server, force bool, now string) (backup string, err error) {
	data, err := os.ReadFile(path)
	existed := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	out, err := c.Merge(path, data, s, force)
	if err != nil {
		return "", err
	}
	mode := os.FileMode(0o644)
	if existed {
		fi, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		mode = fi.Mode().Perm()
		backup = path + ".bak-" + now
		if err := atomicfile.WriteNew(backup, data, mode); err != nil {
			return "", fmt.Errorf("back up %s: %w; nothing was written", path, err)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := atomicfile.Replace(path, out, mode); err != nil {
		if backup != "" {
			os.Remove(backup)
		}
		return "", err
	}
	return backup, nil
}
