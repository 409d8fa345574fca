package store

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"
)

// FuzzJournal feeds arbitrary bytes to the journal's decoders, as a
// whole file after a valid header and as one entry's record: they return
// errors, never panic, and an entry they accept re-encodes to one that
// reads back the same, with no gap.
func FuzzJournal(f *testing.F) {
	tag := storeTag(bytes.Repeat([]byte{7}, secretSize))
	begin := journalEntry{begin: &Invocation{ID: "0123456789abcdef0123456789abcdef", Identity: "acme.deploy/status",
		Task: "agent", PID: 7, StartedAt: time.Unix(1, 0).UTC(), Attempt: Attempt{ApprovalID: "a"}}}
	finish := journalEntry{id: "0123456789abcdef0123456789abcdef", finish: &Finish{Outcome: "succeeded", ExitStatus: 3,
		Effects: []Effect{{Kind: "k", Ref: "r"}}}, at: 2}
	var file []byte
	file = append(file, journalHeader{tag: tag, gen: 1, salt: 5}.bytes()...)
	for _, e := range []journalEntry{begin, finish} {
		data, err := e.encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		file = append(file, entryBytes(5, data)...)
	}
	f.Add(file[journalHeaderSize:])
	f.Add(file[journalHeaderSize : len(file)-3])
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := parseJournalHeader(data); err == nil && len(data) >= journalHeaderSize && !bytes.Equal(data[:16], journalMagic[:]) {
			t.Fatal("a header without the magic string was accepted")
		}
		whole := append(journalHeader{tag: tag, gen: 1, salt: 5}.bytes(), data...)
		entries, _, err := readEntries(whole, 5)
		if err == nil {
			var again []byte
			for _, e := range entries {
				b, err := e.encode()
				if err != nil {
					t.Fatalf("an entry read back does not encode: %v", err)
				}
				again = append(again, entryBytes(5, b)...)
			}
			back, gap, err := readEntries(append(journalHeader{tag: tag, gen: 1, salt: 5}.bytes(), again...), 5)
			if err != nil || gap != 0 || !reflect.DeepEqual(back, entries) {
				t.Fatalf("re-encoded entries read back as %+v (a gap of %d), %v; want %+v", back, gap, err, entries)
			}
		}
		if e, err := decodeEntry(data); err == nil {
			b, err := e.encode()
			if err != nil {
				t.Fatal(err)
			}
			back, err := decodeEntry(b)
			if err != nil || !reflect.DeepEqual(back, e) {
				t.Fatalf("a record re-encoded reads back as %+v, %v; want %+v", back, err, e)
			}
		}
	})
}

// FuzzJournalGap damages a journal of eight whole entries, then zeros as
// a preallocated journal has, at a place, over a length and with bytes
// the fuzzer picks. Reading it never fails nor returns an entry that was
// not written, keeps their order, returns every entry whose bytes the
// damage left as they were, and counts a gap exactly when an entry was
// read after bytes that were not one.
func FuzzJournalGap(f *testing.F) {
	const salt = 0x5a17c0de
	tag := storeTag(bytes.Repeat([]byte{7}, secretSize))
	file := journalHeader{tag: tag, gen: 1, salt: salt}.bytes()
	var offs []int
	var want []journalEntry
	for n := range 8 {
		e := journalEntry{begin: testInv(n)}
		if n%2 == 1 {
			e = journalEntry{id: testInv(n - 1).ID, finish: &Finish{Outcome: "succeeded"}, at: int64(n)}
		}
		data, err := e.encode()
		if err != nil {
			f.Fatal(err)
		}
		read, err := decodeEntry(data)
		if err != nil {
			f.Fatal(err)
		}
		offs = append(offs, len(file))
		file = append(file, entryBytes(salt, data)...)
		want = append(want, *read)
	}
	offs = append(offs, len(file))
	end := len(file)
	file = append(file, make([]byte, 2048)...)
	f.Add(uint16(0), uint16(16), []byte{})
	f.Add(uint16(200), uint16(40), []byte{0xff})
	f.Add(uint16(end-journalHeaderSize-10), uint16(300), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, at, length uint16, fill []byte) {
		b := bytes.Clone(file)
		start := journalHeaderSize + int(at)%(end-journalHeaderSize)
		stop := min(start+1+int(length)%1024, len(b))
		for i := start; i < stop; i++ {
			b[i] = 0
			if len(fill) > 0 {
				b[i] = fill[(i-start)%len(fill)]
			}
		}
		got, gap, err := readEntries(b, salt)
		if err != nil {
			t.Fatalf("damage at %d..%d: %v", start, stop, err)
		}
		next, skipped := 0, false // the next written entry got may be; an entry before it was skipped
		for _, e := range got {
			for next < len(want) && !reflect.DeepEqual(e, want[next]) {
				next++
				skipped = true
			}
			if next == len(want) {
				t.Fatalf("damage at %d..%d: an entry that was not written, or out of order: %+v", start, stop, e)
			}
			next++
		}
		intact := 0
		for i := range want {
			if bytes.Equal(b[offs[i]:offs[i+1]], file[offs[i]:offs[i+1]]) {
				intact++
				if !slices.ContainsFunc(got, func(e journalEntry) bool { return reflect.DeepEqual(e, want[i]) }) {
					t.Fatalf("damage at %d..%d: entry %d, left whole, is not read", start, stop, i)
				}
			}
		}
		if (gap > 0) != skipped {
			t.Fatalf("damage at %d..%d: a gap of %d bytes, with entries %+v of %d written", start, stop, gap, got, len(want))
		}
		if intact == len(want) && (gap != 0 || len(got) != len(want)) {
			t.Fatalf("no entry damaged, yet a gap of %d and %d entries", gap, len(got))
		}
	})
}
