package descriptor

import "strings"

// ValidPackage reports whether s is a valid package name.
func ValidPackage(s string) bool { return len(s) <= MaxNameLength && rePackage().MatchString(s) }

// ValidPublisher reports whether s is a valid publisher name.
func ValidPublisher(s string) bool { return len(s) <= MaxNameLength && rePublisher().MatchString(s) }

// ValidCommandID reports whether s is a valid command id.
func ValidCommandID(s string) bool { return len(s) <= MaxNameLength && reCommandID().MatchString(s) }

// SplitIdentity splits a canonical command identity <package>/<id> and
// reports whether both parts are valid.
func SplitIdentity(identity string) (pkg, id string, ok bool) {
	pkg, id, found := strings.Cut(identity, "/")
	return pkg, id, found && ValidPackage(pkg) && ValidCommandID(id)
}
