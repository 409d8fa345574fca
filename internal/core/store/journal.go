package store

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/atomicfile"
)

// The journal (ADR 0013) makes an invocation's begin record and its
// outcome durable with one fdatasync each, instead of a bbolt commit
// (two). It is a file beside the store (JournalSuffix), kept only by a
// Store opened with Options.Journal — rukhd's, which holds the store's
// lock for its whole life — and read by every read-write Open.
//
// The file is zero-filled when it is made, so that writing an entry
// overwrites allocated blocks and its fdatasync writes no metadata. Its
// header holds a magic string, a tag of the store it belongs to (from
// the store's secret), a generation, a random salt new with every header
// and a CRC-32C. Each entry holds its length, a CRC-32C, the salt of the
// header it was written under and the CBOR of the record; entries follow
// one another from the header on. The salt, not the generation, is what
// ties entries to their header: a header that never reached the disk
// (a power cut after a reset) leaves the one before it, and a process
// that then starts the same generation number again writes another salt,
// so what the lost header's entries left on the disk never reads as its.
//
// Entries written since the last fold are kept in memory too (pending).
// Every write transaction first applies them to bbolt (folds), and
// records in the meta bucket the generation it folded; once that commit
// is durable the journal starts a new generation, so the old entries no
// longer count. Concurrent appends share an fdatasync.
//
// Replay, at every read-write Open: when the header's generation is
// newer than the one the store folded last, the entries of that
// generation are read up to the first that is short, fails its CRC or
// has another salt, and applied in one transaction that
// records the generation. A crash between that commit (or any fold's)
// and the next generation's header so applies nothing twice.

// JournalSuffix names the journal beside the store: store.db.journal.
const JournalSuffix = ".journal"

// JournalSize is the size of the journal file. An entry that does not
// fit in what is left of it is committed to bbolt instead (which folds
// the journal and starts it over).
const JournalSize = 1 << 20

// FoldAfter is how many pending entries have the journal folded into
// bbolt in the background.
const FoldAfter = 64

// maxJournalEntry bounds one entry's record; a larger record (a long
// detail with many effects) is committed to bbolt instead.
const maxJournalEntry = 32 << 10

const (
	journalHeaderSize = 64
	entryHeaderSize   = 16
)

// journalMagic opens every journal file.
var journalMagic = [16]byte{'r', 'u', 'k', 'h', '.', 'j', 'o', 'u', 'r', 'n', 'a', 'l', '/', '1', '\n', 0}

// castagnoli is made on first use: making it costs 0.1 ms, which a
// one-shot command that finds no entries to apply never pays (a header's
// CRC is headerSum's).
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// failpoint marks a point where the journal's crash tests stop the
// process (failpoint_test.go); it does nothing otherwise.
var failpoint = func(string) {}

// fdatasync makes an append durable; tests make it fail.
var fdatasync = unix.Fdatasync

// keyJournal is the meta key of the last journal generation folded.
var keyJournal = []byte("journal")

// ErrNotJournaled says that a record could not be appended to the
// journal (the store keeps none, the journal is full or failed, or the
// admission needs a write: a host is gone): commit it with Batch.
var ErrNotJournaled = errors.New("the record is not for the journal; commit it to the store")

// UnfoldedError says that a read-only open found journal entries that
// only a read-write open can apply (Files.View opens read-write once).
type UnfoldedError struct{ Path string }

func (e *UnfoldedError) Error() string {
	return fmt.Sprintf("the journal %s holds records not yet in the store; a read-write open applies them", e.Path)
}

// journalEntry is one record of the journal: a begin record (begin), or
// the outcome of invocation id (finish, at).
type journalEntry struct {
	begin  *Invocation
	id     string
	finish *Finish
	at     int64 // the outcome's time, in nanoseconds
}

// journalRec is an entry's CBOR form: exactly one of its fields is set.
type journalRec struct {
	Begin  *invocationRec `cbor:"1,keyasint,omitempty"`
	Finish *invocationRec `cbor:"2,keyasint,omitempty"`
}

func (e *journalEntry) encode() ([]byte, error) {
	if e.begin != nil {
		return encode(&journalRec{Begin: toInvRec(e.begin)})
	}
	return encode(&journalRec{Finish: &invocationRec{
		ID: e.id, FinishedAt: e.at, Outcome: e.finish.Outcome, Reason: e.finish.Reason,
		ExitStatus: e.finish.ExitStatus, Detail: e.finish.Detail, Effects: e.finish.Effects,
		Attempt: attemptRec(e.finish.Attempt),
	}})
}

func decodeEntry(data []byte) (*journalEntry, error) {
	rec, err := decode[journalRec](data)
	if err != nil {
		return nil, err
	}
	switch {
	case rec.Begin != nil && rec.Finish == nil:
		inv := fromInvRec(rec.Begin)
		if !validInvocationID(inv.ID) || !inv.Open() {
			return nil, fmt.Errorf("a begin record with id %q and outcome %q", inv.ID, inv.Outcome)
		}
		return &journalEntry{begin: inv}, nil
	case rec.Finish != nil && rec.Begin == nil:
		f := rec.Finish
		if !validInvocationID(f.ID) || f.Outcome == "" {
			return nil, fmt.Errorf("an outcome with id %q and outcome %q", f.ID, f.Outcome)
		}
		fin := &Finish{Outcome: f.Outcome, Reason: f.Reason, ExitStatus: f.ExitStatus, Detail: f.Detail, Effects: f.Effects}
		if f.Attempt != nil {
			fin.Attempt = *f.Attempt
		}
		return &journalEntry{id: f.ID, finish: fin, at: f.FinishedAt}, nil
	}
	return nil, errors.New("an entry holds neither one begin record nor one outcome")
}

// journal is the open journal of a Store.
type journal struct {
	path string
	f    *os.File
	id   fileID

	// mu orders appends, the pending list and folds: a write transaction
	// holds it from its begin to the journal's reset.
	mu      sync.Mutex
	head    journalHeader  // the header entries are written under
	off     int64          // where the next entry goes
	pending []journalEntry // written since the last fold, in order
	written uint64         // entries written, ever: an append's sequence number
	folded  uint64         // the sequence number of the last entry folded
	err     error          // once set, nothing more is appended

	syncMu sync.Mutex
	synced uint64 // entries made durable by an fdatasync

	wake    chan struct{} // the folder's signal
	stop    chan struct{}
	done    chan struct{}
	closing sync.Once
}

// storeTag is what a journal's header says of the store it belongs to.
func storeTag(secret []byte) [16]byte {
	sum := sha256.Sum256(append([]byte("rukh.journal.store\x00"), secret...))
	var tag [16]byte
	copy(tag[:], sum[:])
	return tag
}

// journalHeader is a header's content.
type journalHeader struct {
	tag  [16]byte
	gen  uint64
	salt uint64 // random, new with every header written
}

// newHeader is the header of generation gen, with a new salt.
func newHeader(tag [16]byte, gen uint64) journalHeader {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return journalHeader{tag: tag, gen: gen, salt: binary.BigEndian.Uint64(b[:])}
}

func (h journalHeader) bytes() []byte {
	b := make([]byte, journalHeaderSize)
	copy(b, journalMagic[:])
	copy(b[16:], h.tag[:])
	binary.BigEndian.PutUint64(b[32:], h.gen)
	binary.BigEndian.PutUint64(b[40:], h.salt)
	binary.BigEndian.PutUint32(b[48:], headerSum(b[:48]))
	return b
}

// headerSum is the CRC-32C of a header, computed bit by bit: an open
// that only reads the header makes no table for 48 bytes.
func headerSum(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for range 8 {
			crc = crc>>1 ^ 0x82f63b78&-(crc&1)
		}
	}
	return ^crc
}

func parseJournalHeader(b []byte) (journalHeader, error) {
	var h journalHeader
	switch {
	case len(b) < journalHeaderSize:
		return h, fmt.Errorf("the file has %d bytes, shorter than a header", len(b))
	case [16]byte(b[:16]) != journalMagic:
		return h, errors.New("it does not begin as a journal does")
	case binary.BigEndian.Uint32(b[48:]) != headerSum(b[:48]):
		return h, errors.New("its header fails its checksum")
	}
	h.tag = [16]byte(b[16:32])
	h.gen = binary.BigEndian.Uint64(b[32:])
	h.salt = binary.BigEndian.Uint64(b[40:])
	return h, nil
}

// readEntries returns the records written under the header of salt
// that follow the header in b, each entry in turn until one is short,
// fails its CRC or has another salt. That ends what the journal holds
// (a crash leaves a torn last entry, then zeros), unless a whole entry
// under the same salt follows further on: then the bytes before it are a
// gap (a block the disk lost, or appends a power cut left out of order),
// the entries after it are read too, and gap is how many bytes were
// skipped. An entry that passes its CRC and does not decode is damage.
func readEntries(b []byte, salt uint64) (entries []journalEntry, gap int, err error) {
	off := journalHeaderSize
	for off+entryHeaderSize <= len(b) {
		size := entryAt(b, off, salt)
		if size == 0 {
			next := nextEntry(b, off+1, salt)
			if next < 0 {
				break
			}
			gap += next - off
			off = next
			continue
		}
		e, err := decodeEntry(b[off+entryHeaderSize : off+size])
		if err != nil {
			return nil, 0, fmt.Errorf("entry at offset %d: %w", off, err)
		}
		entries = append(entries, *e)
		off += size
	}
	return entries, gap, nil
}

// entryAt returns the size of the whole entry under salt that starts at
// off in b, or 0 when there is none there.
func entryAt(b []byte, off int, salt uint64) int {
	if off+entryHeaderSize > len(b) {
		return 0
	}
	n := int(binary.BigEndian.Uint32(b[off:]))
	if n == 0 || n > maxJournalEntry || off+entryHeaderSize+n > len(b) {
		return 0
	}
	body := b[off+8 : off+entryHeaderSize+n]
	if binary.BigEndian.Uint64(body) != salt || crc32.Checksum(body, castagnoli()) != binary.BigEndian.Uint32(b[off+4:]) {
		return 0
	}
	return entryHeaderSize + n
}

// nextEntry finds the first whole entry under salt that starts at from
// or later in b (its salt is 8 bytes into it), or -1.
func nextEntry(b []byte, from int, salt uint64) int {
	want := saltBytes(salt)
	for from+entryHeaderSize <= len(b) {
		i := bytes.Index(b[from+8:], want)
		if i < 0 {
			return -1
		}
		if entryAt(b, from+i, salt) > 0 {
			return from + i
		}
		from += i + 1
	}
	return -1
}

// entryBytes frames record data as an entry under the header of salt.
func entryBytes(salt uint64, data []byte) []byte {
	b := make([]byte, entryHeaderSize+len(data))
	binary.BigEndian.PutUint32(b, uint32(len(data)))
	binary.BigEndian.PutUint64(b[8:], salt)
	copy(b[entryHeaderSize:], data)
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli()))
	return b
}

// openJournalFile opens an existing journal for reading and writing
// without following a symbolic link or blocking on a FIFO; it must be a
// regular file.
func openJournalFile(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", path, errNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// errNotRegular is a journal path that names no regular file.
var errNotRegular = errors.New("not a regular file")

// readJournal reads the journal beside the store at storePath: its
// header and, when its generation is newer than folded, its entries.
// A missing journal is (nil, nil, nil). What cannot be this store's
// journal (a symbolic link or not a regular file, a header that is not
// one, another store's tag) is *badJournal: set aside, never read. A
// journal that cannot be read now is *UnavailableError: the open fails.
func readJournal(storePath string, tag [16]byte, folded uint64) (*journalHeader, []journalEntry, error) {
	path := storePath + JournalSuffix
	f, err := openJournalFile(path, os.O_RDONLY)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, errNotRegular):
		return nil, nil, &badJournal{path: path, err: err}
	case err != nil:
		// It may hold acknowledged records: never set aside for a
		// failure that may pass (EACCES, EMFILE, EIO).
		return nil, nil, &UnavailableError{Path: path, Err: err}
	}
	defer f.Close()
	// The journal's first block: enough to tell a journal with nothing to
	// apply, which is what every open after a fold finds (its header is
	// the next generation's), from one to read.
	head := make([]byte, firstBlock)
	n, err := io.ReadFull(f, head)
	if n < journalHeaderSize && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return nil, nil, &badJournal{path: path, err: fmt.Errorf("it is shorter than a header")}
	} else if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil, &UnavailableError{Path: path, Err: err}
	}
	head = head[:n]
	h, err := parseJournalHeader(head)
	if err == nil && h.tag != tag {
		err = errors.New("it belongs to another store")
	}
	if err != nil {
		return nil, nil, &badJournal{path: path, err: err}
	}
	if h.gen <= folded || !writtenUnder(head, h.salt) {
		return &h, nil, nil // nothing written under this header
	}
	// The rest in one read into one buffer: io.ReadAll's buffer, grown
	// from 512 bytes to a megabyte and copied at each step, made this
	// read 2 ms (docs/benchmarks.md, "Thirteenth pass").
	whole := make([]byte, len(head)+JournalSize)
	copy(whole, head)
	n, err = io.ReadFull(f, whole[len(head):])
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil, fmt.Errorf("read the journal %s: %w", path, err)
	}
	whole = whole[:len(head)+n]
	entries, gap, err := readEntries(whole, h.salt)
	if err != nil {
		return nil, nil, &CorruptError{Path: path, Err: err}
	}
	if gap > 0 {
		return &h, entries, &gapError{path: path, gap: gap, data: whole}
	}
	return &h, entries, nil
}

// gapError is a journal with unreadable bytes between whole entries
// (readEntries). A copy of it (data, the bytes read) is kept beside it
// (keepCopy) before anything of it is applied, for the owner to see
// (rukh doctor lists it); then every whole entry is applied.
type gapError struct {
	path string
	gap  int
	data []byte
}

func (e *gapError) Error() string {
	return fmt.Sprintf("the journal %s has %d unreadable bytes between whole entries", e.path, e.gap)
}

// firstBlock is how much of a journal an open reads first: the header
// and the first entries, in one read.
const firstBlock = 4096

// writtenUnder reports whether anything was written under the header of
// salt, from the journal's first bytes: the first entry begins with a
// length and carries the salt, or, should its head be damaged, the salt
// stands further on in the first block (a gap, which the whole read then
// finds). Zeros there, or an older header's entries, are nothing.
func writtenUnder(first []byte, salt uint64) bool {
	if len(first) < journalHeaderSize+entryHeaderSize {
		return false
	}
	if binary.BigEndian.Uint32(first[journalHeaderSize:]) != 0 && binary.BigEndian.Uint64(first[journalHeaderSize+8:]) == salt {
		return true
	}
	return bytes.Contains(first[journalHeaderSize+entryHeaderSize:], saltBytes(salt))
}

// saltBytes is salt as an entry carries it, 8 bytes into the entry.
func saltBytes(salt uint64) []byte { return binary.BigEndian.AppendUint64(nil, salt) }

// badJournal is a journal file that cannot be this store's: it is moved
// aside (setAside) and a new one made.
type badJournal struct {
	path string
	err  error
}

func (e *badJournal) Error() string { return fmt.Sprintf("the journal %s: %v", e.path, e.err) }

// setAside renames a journal that cannot be this store's to a new name
// beside it (".aside", numbered when that exists), never removing what
// it may hold.
func setAside(path string) error {
	_, err := newCopy(path+".aside", func(name string) error {
		if _, err := os.Lstat(name); err == nil {
			return fs.ErrExist // a rename would replace it
		}
		return os.Rename(path, name)
	})
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// replayJournal applies, in one transaction, the entries a journal
// holds that the store has not folded, and records their generation.
// A read-only open cannot: it returns *UnfoldedError when there are any.
// folded is the generation the store had folded when it was opened; it
// returns the one it has folded now.
func (s *Store) replayJournal(readOnly bool, folded uint64) (uint64, error) {
	h, entries, err := readJournal(s.path, storeTag(s.secret), folded)
	if bad := (*badJournal)(nil); errors.As(err, &bad) {
		if readOnly {
			return folded, nil // the next read-write open sets it aside
		}
		if err := setAside(bad.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("%v, and it could not be set aside: %w", bad, err)
		}
		return folded, nil
	}
	gap := (*gapError)(nil)
	if errors.As(err, &gap) {
		err = nil
	}
	if err != nil || h == nil || h.gen <= folded {
		return folded, err
	}
	if len(entries) == 0 {
		return folded, nil
	}
	if readOnly {
		return 0, &UnfoldedError{Path: s.path + JournalSuffix}
	}
	if gap != nil {
		// Kept before anything of it is applied: once applied, its
		// generation is folded and no open reads it again. A process
		// that dies between the two makes a second copy at the next open.
		if err := keepCopy(gap.path, gap.data); err != nil {
			return 0, fmt.Errorf("%v; a copy of it is kept before it is applied, and none could be made: %w; "+
				"nothing of it is applied until one can (remove the copies %s.aside* you have looked at)", gap, err, filepath.Base(gap.path))
		}
	}
	err = s.runTx(txMode{write: true}, func(tx *Tx) error { return applyEntries(tx, entries, h.gen) })
	if err != nil {
		return 0, fmt.Errorf("apply the journal %s: %w", s.path+JournalSuffix, err)
	}
	return h.gen, nil
}

// keepCopy writes data, a journal read whole, to a new file beside it
// (".aside", numbered when that exists), synced before it returns.
func keepCopy(path string, data []byte) error {
	_, err := newCopy(path+".aside", func(name string) error { return atomicfile.WriteNew(name, data, 0o600) })
	return err
}

// JournalCopies lists the journals set aside beside the store at path:
// ones that could not be this store's, and copies of ones with unreadable
// bytes between whole entries, whose whole entries were applied (ADR
// 0013). Each may hold records the store does not have.
func JournalCopies(path string) []string { return copiesOf(path + JournalSuffix + ".aside") }

// foldedGeneration reads the last journal generation the store folded
// from its meta bucket.
func foldedGeneration(meta *bolt.Bucket) (uint64, error) {
	v := meta.Get(keyJournal)
	if v == nil {
		return 0, nil
	}
	n, ok := keyU64(v)
	if !ok {
		return 0, &CorruptError{Bucket: string(bucketMeta), Key: string(keyJournal), Err: fmt.Errorf("journal generation has %d bytes, want 8", len(v))}
	}
	return n, nil
}

// applyEntries applies journal entries in tx and records gen as folded.
// A begin record whose invocation is already open, and an outcome of one
// already finished, change nothing.
func applyEntries(tx *Tx, entries []journalEntry, gen uint64) error {
	if len(entries) > 0 {
		records, open, err := tx.invBuckets()
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.begin != nil {
				inv := *e.begin
				err = tx.putInvocation(records, open, &inv)
			} else {
				_, err = tx.Finish(e.id, e.finish, fromNanos(e.at))
			}
			if err != nil {
				return err
			}
		}
		if err := tx.pruneInvocations(records, open); err != nil {
			return err
		}
	}
	return tx.tx.Bucket(bucketMeta).Put(keyJournal, u64key(gen))
}

// openJournal opens the journal beside the store for appending, making
// it (zero-filled) when it is missing or not whole, and starts a new
// generation after folded and after the one its header holds. The
// store has replayed it already.
func (s *Store) openJournal(folded uint64) (*journal, error) {
	path := s.path + JournalSuffix
	tag := storeTag(s.secret)
	f, err := openJournalFile(path, os.O_RDWR)
	if err == nil {
		if fi, serr := f.Stat(); serr != nil || fi.Size() < JournalSize {
			f.Close()
			f, err = nil, fs.ErrNotExist
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		if err = makeJournal(path); err == nil {
			f, err = openJournalFile(path, os.O_RDWR)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open the journal %s: %w", path, err)
	}
	gen := folded
	head := make([]byte, journalHeaderSize)
	if _, err := f.ReadAt(head, 0); err == nil {
		if h, err := parseJournalHeader(head); err == nil {
			gen = max(gen, h.gen)
		}
	}
	j := &journal{path: path, f: f, head: newHeader(tag, gen+1), off: journalHeaderSize}
	if j.id, err = statID(f); err == nil {
		if _, err = f.WriteAt(j.head.bytes(), 0); err == nil {
			err = unix.Fdatasync(int(f.Fd()))
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("start the journal %s: %w", path, err)
	}
	return j, nil
}

// makeJournal writes a new, zero-filled journal: beside path first,
// synced, then renamed into place.
func makeJournal(path string) error {
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, JournalSize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return renameInPlace(tmp, path)
}

// write appends an entry of data and returns its sequence number. The
// caller holds mu; the entry is durable once sync has passed it.
func (j *journal) write(data []byte) (uint64, error) {
	b := entryBytes(j.head.salt, data)
	if _, err := j.f.WriteAt(b, j.off); err != nil {
		return 0, err
	}
	failpoint("journal-written")
	j.off += int64(len(b))
	j.written++
	return j.written, nil
}

// fits reports whether an entry of n bytes of record fits. The caller
// holds mu.
func (j *journal) fits(n int) bool {
	return n <= maxJournalEntry && j.off+int64(entryHeaderSize+n) <= JournalSize
}

// sync makes every entry up to seq durable. Appends that arrive while
// one fdatasync runs share the next.
func (j *journal) sync(seq uint64) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.synced >= seq {
		return nil
	}
	j.mu.Lock()
	through, failed := j.written, j.err
	j.mu.Unlock()
	if failed != nil {
		// After a failed fdatasync the next one may succeed without
		// having written what the failed one did not: none counts.
		return failed
	}
	if err := fdatasync(int(j.f.Fd())); err != nil {
		j.mu.Lock()
		if j.err == nil {
			j.err = err
		}
		j.mu.Unlock()
		return err
	}
	failpoint("journal-synced")
	j.synced = through
	return nil
}

// reset starts a new generation once a fold's commit is durable: the
// entries written so far no longer count. A header the disk does not
// take leaves the old generation, which the store has folded: nothing
// is applied twice, and nothing more is appended. The caller holds mu.
func (j *journal) reset() {
	j.pending, j.folded = nil, j.written
	if j.err != nil {
		return
	}
	next := newHeader(j.head.tag, j.head.gen+1)
	if _, err := j.f.WriteAt(next.bytes(), 0); err != nil {
		j.err = err
		return
	}
	failpoint("journal-reset")
	j.head = next
	j.off = journalHeaderSize
}

// dirty reports whether a fold has anything to do: entries pending, or
// written (a begin taken back) since the last. The caller holds mu.
func (j *journal) dirty() bool { return len(j.pending) > 0 || j.off > journalHeaderSize }

// moved says how the journal's path no longer names the open file (""
// when it still does), as Store.moved does for the store.
func (j *journal) moved() (string, error) { return moved(j.path, j.id) }
