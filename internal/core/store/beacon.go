package store

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/rukh-cli/rukh/internal/atomicfile"
)

// The revision beacon tells long-lived presentations (`rukh mcp`) that the
// active revision changed, whoever changed it — another process, rukhd,
// another `rukh mcp` — without their holding, or polling, the store's
// lock: after each commit that publishes a revision, the store replaces a
// small file beside it (BeaconDir/BeaconFile) that holds the new number,
// and a watcher learns of it from the kernel (inotify, through fsnotify).
// The beacon is a hint: the store stays the truth, and a beacon that
// could not be written only delays a notification until the next one.
const (
	BeaconDir  = "notify"
	BeaconFile = "revision"
)

// beaconPath is the beacon of the store file at storePath.
func beaconPath(storePath string) string {
	return filepath.Join(filepath.Dir(storePath), BeaconDir, BeaconFile)
}

// announce writes revision n to the beacon, replacing it at once
// (rename), so a reader sees a whole number or the one before.
func (s *Store) announce(n uint64) {
	path := beaconPath(s.path)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	atomicfile.Replace(path, []byte(strconv.FormatUint(n, 10)+"\n"), 0o600)
}

// readBeacon reads the revision the beacon at path names; 0 when there is
// none (no revision published since the beacon was introduced).
func readBeacon(path string) uint64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return n
}

// WatchRevisions reports, on the channel it returns, each active revision
// published in the store file at storePath after the call, by number,
// until ctx ends (then it closes the channel). A burst of revisions may
// be reported as its last one only: a reader that is behind gets the
// newest number, never one it already had. It fails when the beacon's
// directory cannot be made or watched.
func WatchRevisions(ctx context.Context, storePath string) (<-chan uint64, error) {
	path := beaconPath(storePath)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, err
	}
	last := readBeacon(path) // after Add: a change in between is seen
	out := make(chan uint64, 1)
	go func() {
		defer close(out)
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				// An overflowed queue: the beacon may have changed unseen.
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Base(ev.Name) != BeaconFile {
					continue
				}
			}
			n := readBeacon(path)
			if n <= last {
				continue
			}
			last = n
			select { // keep only the newest number for a reader behind
			case <-out:
			default:
			}
			out <- n
		}
	}()
	return out, nil
}
