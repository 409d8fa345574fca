package source

import (
	"errors"
	"fmt"
	"time"
)

// Error is a failure to fetch or push Ref; every error of this package
// is one, so the message always names the reference. Nothing was
// installed or changed when it is returned.
type Error struct {
	Ref string
	Err error
}

func (e *Error) Error() string { return e.Ref + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// NotFoundError: the registry or server answered 404.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s was not found (HTTP 404); check the repository and the tag or digest (`ext outdated` lists what a source offers)", e.What)
}

// AuthError: the registry refused the request (HTTP 401 or 403). Tried
// says which credential was sent, never its value.
type AuthError struct {
	Status int
	Host   string
	Tried  string
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("the registry refused access (HTTP %d) with %s; log in with `docker login %s` (or `oras login %s`), which writes the credential Rukh reads", e.Status, e.Tried, e.Host, e.Host)
}

// UnreachableError: the host could not be reached (DNS, connection, TLS).
type UnreachableError struct {
	Host  string
	Proxy string // the proxy the request went through (no userinfo), if one
	Err   error
}

func (e *UnreachableError) Error() string {
	if e.Proxy != "" {
		return fmt.Sprintf("could not reach %s through the proxy %s (from HTTPS_PROXY or HTTP_PROXY; NO_PROXY bypasses it): %v", e.Host, e.Proxy, e.Err)
	}
	return fmt.Sprintf("could not reach %s: %v", e.Host, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// StallError: no byte arrived for Timeout (connecting, waiting for a
// response, or in the middle of a body), or, when Total is set, the
// operation went on for longer than Total in all (a source trickling
// bytes just often enough).
type StallError struct {
	What    string
	Timeout time.Duration
	Total   time.Duration
}

func (e *StallError) Error() string {
	if e.Total > 0 {
		return fmt.Sprintf("%s did not finish within %s, the bound of one operation however steadily bytes arrive; the connection was closed", e.What, e.Total)
	}
	return fmt.Sprintf("%s made no progress for %s (the --timeout); the connection was closed", e.What, e.Timeout)
}

// TooLargeError: a manifest or archive is over its limit, declared or
// while reading.
type TooLargeError struct {
	What  string
	Size  int64 // declared size; -1 when it only became clear while reading
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s is over the limit of %d bytes; it was not read further", e.What, e.Limit)
	}
	return fmt.Sprintf("%s is %d bytes; the limit is %d, so it was not fetched", e.What, e.Size, e.Limit)
}

// DigestError: what arrived does not hash to the digest it was asked by.
type DigestError struct {
	What      string
	Want, Got string
	Size      int64 // bytes received
}

func (e *DigestError) Error() string {
	size := ""
	if e.Size >= 0 {
		size = fmt.Sprintf(" (%d bytes)", e.Size)
	}
	return fmt.Sprintf("%s has digest %s%s, not %s: it was truncated or substituted on the way; nothing of it is used", e.What, e.Got, size, e.Want)
}

// NotReleaseError: the manifest is not one of a Rukh release.
type NotReleaseError struct{ Problem string }

func (e *NotReleaseError) Error() string {
	return "not a release artifact: " + e.Problem + " (publish releases with `ext publish ARCHIVE oci://…`)"
}

// RedirectError: an https source redirected where it may not.
type RedirectError struct{ Problem string }

func (e *RedirectError) Error() string { return e.Problem }

var (
	errStalled = errors.New("stalled")
	errTooLong = errors.New("over the bound of one operation")
)
