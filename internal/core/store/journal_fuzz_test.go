package store

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

// FuzzJournal feeds arbitrary bytes to the journal's decoders, as a
// whole file after a valid header and as one entry's record: they return
// errors, never panic, stop at the first entry that is not whole, and an
// entry they accept re-encodes to one that reads back the same.
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
