package projection

import "fmt"

// Code is a stable error code of Build. docs/projection.md lists every
// code.
type Code string

// Build error codes.
const (
	// CodeRouteCollision: two routes (paths or aliases) are equal, or a
	// route starts with a built-in word.
	CodeRouteCollision Code = "route_collision"
	// CodeGroupCollision: one route is a proper prefix of another, so its
	// words would be a group and a command at once.
	CodeGroupCollision Code = "group_collision"
	// CodeExposeInvalid: an mcp.expose entry is neither a command identity
	// nor a package set.
	CodeExposeInvalid Code = "expose_invalid"
	// CodeExposeUnknown: an mcp.expose entry names a package that is not
	// active in the revision, or a command its active release lacks.
	CodeExposeUnknown Code = "expose_unknown"
	// CodeExposeNotEligible: an mcp.expose entry names one command exactly,
	// and that command is not machine-eligible.
	CodeExposeNotEligible Code = "expose_not_eligible"
	// CodeNameCollision: two tools would have the same name.
	CodeNameCollision Code = "name_collision"
	// CodeNamespaceInvalid: the endpoint namespace is empty or not UTF-8.
	CodeNamespaceInvalid Code = "namespace_invalid"
	// CodeRevisionInvalid: the revision exceeds MaxRevision.
	CodeRevisionInvalid Code = "revision_invalid"
	// CodeNamingInvalid: Naming is not "", "full" or "compact".
	CodeNamingInvalid Code = "naming_invalid"
	// CodePackageInvalid: a package of the revision cannot be projected: no
	// descriptor, a malformed digest, a second release of one package, a
	// command without a route or with an identity that is not
	// <package>/<id>.
	CodePackageInvalid Code = "package_invalid"
	// CodeCatalogHash: the catalog could not be canonicalized. Inputs that
	// passed descriptor validation never cause it; it indicates a bug.
	CodeCatalogHash Code = "catalog_hash_failed"
)

// Error is one reason a revision cannot be projected: a stable code, the
// command identity, package or mcp.expose entry at fault, and a message
// that says what to change.
type Error struct {
	Code     Code   `json:"code"`
	Identity string `json:"identity,omitempty"`
	Message  string `json:"message"`
}

func (e *Error) Error() string {
	if e.Identity == "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s: %s", e.Code, e.Identity, e.Message)
}

func errorf(code Code, identity, format string, args ...any) *Error {
	return &Error{Code: code, Identity: identity, Message: fmt.Sprintf(format, args...)}
}
