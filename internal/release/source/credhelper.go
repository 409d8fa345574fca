package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/rukh-cli/rukh/internal/run/spawn"
)

// Credential helpers (credsStore, credHelpers) speak the docker-credential
// protocol: `docker-credential-NAME get` reads the server address on
// stdin and writes {"ServerURL","Username","Secret"} on stdout. oras-go
// runs them with this process's PATH and environment and no bound beyond
// its context; through rukhd that is the daemon's, not the caller's. So
// they are run here: found on the caller's PATH, with the caller's
// environment (helperEnv, which a client passes to rukhd), in a process
// group of their own that is killed when the operation's watch fires.

// helperEnv is the caller's environment a credential helper runs with:
// what finds it and its keyring (pass, secretservice) or agent.
var helperEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR",
	"DOCKER_CONFIG", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS",
	"GNUPGHOME", "PASSWORD_STORE_DIR",
}

const (
	helperPrefix = "docker-credential-"
	// helperNotFound is what a helper prints (on stdout) for a server it
	// has no credential for: not an error.
	helperNotFound = "credentials not found in native keychain"
	// maxHelperOutput bounds what a helper may print on stdout.
	maxHelperOutput = 64 << 10
	// helperWaitDelay bounds the wait for a helper's output to close
	// once it has exited or been killed.
	helperWaitDelay = time.Second
)

// HelperError: a credential helper failed. It never carries what the
// helper printed on stdout, which could hold a secret.
type HelperError struct {
	Helper string // docker-credential-NAME
	From   string // "credsStore in FILE" or "credHelpers in FILE"
	Err    error
}

func (e *HelperError) Error() string {
	return fmt.Sprintf("credential helper %s (%s) failed: %v", e.Helper, e.From, e.Err)
}
func (e *HelperError) Unwrap() error { return e.Err }

// helperConfig is what of the container credential file names helpers.
type helperConfig struct {
	CredsStore  string            `json:"credsStore"`
	CredHelpers map[string]string `json:"credHelpers"`
}

func (c *Client) helperConfig() helperConfig {
	var cfg helperConfig
	if data, err := readBounded(c.credPath, maxConfigBytes); err == nil {
		_ = json.Unmarshal(data, &cfg)
	}
	return cfg
}

// helperFor is the helper for server and where the file names it; ""
// when the credential is in the file itself.
func (c *Client) helperFor(server string) (name, from string) {
	cfg := c.helperConfig()
	switch {
	case cfg.CredHelpers[server] != "":
		return helperPrefix + cfg.CredHelpers[server], "credHelpers in " + c.credPath
	case cfg.CredsStore != "":
		return helperPrefix + cfg.CredsStore, "credsStore in " + c.credPath
	}
	return "", ""
}

// lookCaller finds name on the caller's PATH (absolute directories only:
// the caller's working directory is not this process's).
func (c *Client) lookCaller(name string) (string, error) {
	for _, dir := range filepath.SplitList(c.getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on the PATH of the command (install it, or change %s in the credential file)", name, "credsStore/credHelpers")
}

// helperGet asks helper for the credential of server.
func (c *Client) helperGet(ctx context.Context, helper, from, server string) (auth.Credential, error) {
	fail := func(err error) (auth.Credential, error) {
		return auth.EmptyCredential, &HelperError{Helper: helper, From: from, Err: err}
	}
	path, err := c.lookCaller(helper)
	if err != nil {
		return fail(err)
	}
	cmd := exec.CommandContext(ctx, path, "get")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The helper and whatever it started: a child that keeps its
		// output open must not hold the command past its bound.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = helperWaitDelay
	cmd.Dir = "/"
	for _, k := range helperEnv {
		if v := c.getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stdin = strings.NewReader(server)
	var out limitedBuffer
	cmd.Stdout = &out
	cmd.Stderr = c.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	// Tracked, so that a daemon that kills what its calls left behind
	// spares it; from a host, with the default timer slack.
	if err = spawn.StartTracked(cmd); err == nil {
		err = cmd.Wait()
		spawn.Untrack(cmd.Process.Pid)
	}
	if ctx.Err() != nil {
		if stalled(ctx) {
			return auth.EmptyCredential, c.stallError(ctx, fmt.Sprintf("the credential helper %s (%s)", helper, from))
		}
		return auth.EmptyCredential, ctx.Err()
	}
	text := bytes.TrimSpace(out.Bytes())
	if err != nil {
		if string(text) == helperNotFound {
			return auth.EmptyCredential, nil
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fail(fmt.Errorf("it exited with %s (what it printed is not shown: it could hold a secret; run `echo %s | %s get` to see it)", ee.ProcessState, server, helper))
		}
		return fail(err)
	}
	if out.over {
		return fail(fmt.Errorf("it printed more than %d bytes", maxHelperOutput))
	}
	var dc struct{ ServerURL, Username, Secret string }
	if err := json.Unmarshal(text, &dc); err != nil {
		return fail(errors.New("it did not print the JSON of the docker-credential protocol ({\"ServerURL\",\"Username\",\"Secret\"})"))
	}
	if dc.Username == "<token>" {
		return auth.Credential{RefreshToken: dc.Secret}, nil
	}
	return auth.Credential{Username: dc.Username, Password: dc.Secret}, nil
}

// lookup is the credential for hostport: from its helper when the
// credential file names one, else from the file's "auths".
func (c *Client) lookup(ctx context.Context, hostport string) (auth.Credential, error) {
	server := credentials.ServerAddressFromHostname(hostport)
	if server == "" {
		return auth.EmptyCredential, nil
	}
	if helper, from := c.helperFor(server); helper != "" {
		return c.helperGet(ctx, helper, from, server)
	}
	return c.creds.Get(ctx, server)
}

// limitedBuffer keeps at most maxHelperOutput bytes.
type limitedBuffer struct {
	bytes.Buffer
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := maxHelperOutput - b.Len(); len(p) > room {
		b.over = true
		p = p[:max(room, 0)]
	}
	b.Buffer.Write(p)
	return n, nil
}
