package store

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The bucket layout of schema version 1. Numbers (revision numbers, audit
// sequence numbers) are keys as 8-byte big-endian integers, so that the
// key order is the numeric order.
//
//	meta         "schema" → uint64, "secret" → 32 bytes, "created" → int64 Unix ns
//	releases     digest → release record
//	trust        publisher + "\x00" + key id → key record
//	revisions    number → revision record (without its routes)
//	active       "revision" → number of the active revision
//	routes       number → bucket: route words → route record
//	audit        seq → audit record (seq from the bucket sequence)
//	invocations  (reserved for invocation records)
//
// Version 2 adds
//
//	names        package → name record: the publisher that holds the name
//
// Version 3 lets a release record carry its source (key 10): the remote
// reference it was installed from. Version 2 records are version 3
// records without one, so the migration rewrites nothing; it exists so
// that a build of version 2, which refuses unknown keys, refuses the
// store as newer instead of reading a record with a source as damaged.
var (
	bucketMeta        = []byte("meta")
	bucketReleases    = []byte("releases")
	bucketTrust       = []byte("trust")
	bucketRevisions   = []byte("revisions")
	bucketActive      = []byte("active")
	bucketRoutes      = []byte("routes")
	bucketAudit       = []byte("audit")
	bucketInvocations = []byte("invocations")
	bucketNames       = []byte("names")

	keySchema   = []byte("schema")
	keySecret   = []byte("secret")
	keyCreated  = []byte("created")
	keyRevision = []byte("revision")
)

// v1Buckets are the top-level buckets of schema version 1.
var v1Buckets = [][]byte{
	bucketMeta, bucketReleases, bucketTrust, bucketRevisions,
	bucketActive, bucketRoutes, bucketAudit, bucketInvocations,
}

// topBuckets are the top-level buckets of the current schema version.
var topBuckets = append(slices.Clip(v1Buckets), bucketNames)

// A migration moves a store from schema version to-1 to version to. The
// one that creates version 1 starts from an empty file.
type migration struct {
	to   uint64
	name string
	fn   func(tx *bolt.Tx) error
}

// migrations is in ascending order and ends at SchemaVersion; version N+1
// adds one entry {N+1, ...} that rewrites what changed.
var migrations = []migration{
	{1, "create the version 1 buckets and meta", createV1},
	{2, "keep each package name's publisher apart from its releases", createV2},
	{3, "let a release record name the source it was installed from", func(*bolt.Tx) error { return nil }},
}

// migrate runs every migration past version, in order, and records the
// new version, inside the caller's transaction.
func migrate(tx *bolt.Tx, version uint64) error {
	for _, m := range migrations {
		if m.to <= version {
			continue
		}
		if err := m.fn(tx); err != nil {
			return fmt.Errorf("migration to version %d (%s): %w", m.to, m.name, err)
		}
		version = m.to
	}
	if version != SchemaVersion {
		return fmt.Errorf("migrations end at version %d, want %d", version, SchemaVersion)
	}
	return tx.Bucket(bucketMeta).Put(keySchema, u64key(SchemaVersion))
}

// createV1 lays out a fresh store: every bucket, a random secret and the
// creation time.
func createV1(tx *bolt.Tx) error {
	for _, name := range v1Buckets {
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	secret, err := newSecret()
	if err != nil {
		return fmt.Errorf("make the store secret: %w", err)
	}
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(keySecret, secret); err != nil {
		return err
	}
	return meta.Put(keyCreated, u64key(uint64(time.Now().UnixNano())))
}

// u64key encodes n as an 8-byte big-endian key.
func u64key(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

// keyU64 decodes an 8-byte big-endian key.
func keyU64(b []byte) (uint64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}

// printKey formats a number key for error messages.
func printKey(b []byte) string {
	if n, ok := keyU64(b); ok {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%q", b)
}
