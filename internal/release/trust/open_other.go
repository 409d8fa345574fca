//go:build !unix

package trust

import "os"

// openNoFollow opens the release file p under root and refuses anything
// that is not a regular file. Without openat and O_NONBLOCK it relies on
// os.Root and on the identity check its callers make.
func openNoFollow(root *os.Root, p string) (*os.File, error) {
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &notRegularError{kind: KindOf(fi.Mode())}
	}
	return root.Open(p)
}
