//go:build unix

package trust

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestKeyRoundTrip(t *testing.T) {
	// A umask must not decide the key files' modes.
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })

	dir := t.TempDir()
	priv, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	privPath, pubPath := filepath.Join(dir, "key"), filepath.Join(dir, "key.pub")
	if err := WritePrivateKey(privPath, priv); err != nil {
		t.Fatal(err)
	}
	if err := WritePublicKey(pubPath, priv.Public()); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]fs.FileMode{privPath: 0o600, pubPath: 0o644} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want regular %v", path, fi.Mode(), want)
		}
	}
	gotPriv, err := ReadPrivateKey(privPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotPriv, priv) {
		t.Error("private key changed in the round trip")
	}
	gotPub, err := ReadPublicKey(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotPub, priv.Public()) || gotPub.ID() != priv.Public().ID() {
		t.Error("public key changed in the round trip")
	}

	// Never overwrite, never leave temporary files.
	before, _ := os.ReadFile(privPath)
	other, _ := GenerateKey(nil)
	err = WritePrivateKey(privPath, other)
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("second WritePrivateKey: %v, want fs.ErrExist", err)
	}
	if err := WritePublicKey(pubPath, other.Public()); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second WritePublicKey: %v, want fs.ErrExist", err)
	}
	after, _ := os.ReadFile(privPath)
	if !bytes.Equal(before, after) {
		t.Error("WritePrivateKey replaced an existing key")
	}
	// A dangling symlink is "existing" too: writing must not follow it.
	target := filepath.Join(dir, "elsewhere")
	if err := os.Symlink(target, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivateKey(filepath.Join(dir, "link"), other); !errors.Is(err, fs.ErrExist) {
		t.Errorf("WritePrivateKey through a dangling symlink: %v, want fs.ErrExist", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("WritePrivateKey wrote through a symlink")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "key key.pub link" {
		t.Errorf("directory holds %v; want only key, key.pub and link", names)
	}
}

func TestKeyID(t *testing.T) {
	pub := testKey.Public()
	sum := sha256.Sum256(pub)
	if want := "sha256:" + hex.EncodeToString(sum[:]); pub.ID() != want || len(pub) != 32 {
		t.Errorf("ID = %s, want %s", pub.ID(), want)
	}
	if testKey.Public().ID() == otherKey.Public().ID() {
		t.Error("two keys share an ID")
	}
	if PrivateKey([]byte("short")).Public() != nil {
		t.Error("Public of an invalid key is not nil")
	}
	// GenerateKey draws its seed from the reader it is given.
	k1, _ := GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 32)))
	if !bytes.Equal(k1, testKey) {
		t.Error("GenerateKey does not use its reader")
	}
	if _, err := GenerateKey(bytes.NewReader(nil)); err == nil {
		t.Error("GenerateKey with an empty reader succeeded")
	}
}

func TestReadKeyRefuses(t *testing.T) {
	privPEM, _ := marshalPrivateKey(testKey)
	pubPEM, _ := MarshalPublicKey(testKey.Public())
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPriv, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPub, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	withHeader := pem.EncodeToMemory(&pem.Block{Type: pemPrivate, Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: []byte{1}})

	cases := []struct {
		name    string
		private bool
		data    []byte
		want    string
	}{
		{"private ok", true, privPEM, ""},
		{"public ok", false, pubPEM, ""},
		{"private with trailing newlines ok", true, append(bytes.Clone(privPEM), "\n\n"...), ""},
		{"public as private", true, pubPEM, "expected \"PRIVATE KEY\""},
		{"private as public", false, privPEM, "expected \"PUBLIC KEY\""},
		{"ecdsa private", true, pem.EncodeToMemory(&pem.Block{Type: pemPrivate, Bytes: ecPriv}), "not ed25519"},
		{"ecdsa public", false, pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: ecPub}), "not ed25519"},
		{"trailing junk", true, append(bytes.Clone(privPEM), "junk"...), "after the PEM block"},
		{"two keys", false, append(bytes.Clone(pubPEM), pubPEM...), "after the PEM block"},
		{"not PEM", true, []byte("hello"), "no PEM block"},
		{"empty", false, nil, "no PEM block"},
		{"headers", true, withHeader, "headers"},
		{"bad DER", false, pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: []byte{1, 2, 3}}), "cannot parse"},
		{"too large", true, append(bytes.Clone(privPEM), bytes.Repeat([]byte(" "), MaxKeyFileBytes)...), "larger than"},
	}
	dir := t.TempDir()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, string(rune('a'+i)))
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			var err error
			if c.private {
				_, err = ReadPrivateKey(path)
			} else {
				_, err = ReadPublicKey(path)
			}
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if code := codeOf(t, err); code != CodeBadKey {
				t.Fatalf("code %q, want bad_key: %v", code, err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not mention %q and the file", err, c.want)
			}
		})
	}
	if _, err := ReadPublicKey(dir); codeOf(t, err) != CodeBadKey {
		t.Errorf("reading a directory: %v", err)
	}
	if _, err := ReadPublicKey(filepath.Join(dir, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading an absent file: %v", err)
	}
}

func TestWriteKeyRefusesInvalid(t *testing.T) {
	dir := t.TempDir()
	if err := WritePrivateKey(filepath.Join(dir, "k"), PrivateKey("short")); codeOf(t, err) != CodeBadKey {
		t.Errorf("WritePrivateKey(short) = %v", err)
	}
	if err := WritePublicKey(filepath.Join(dir, "k.pub"), PublicKey("short")); codeOf(t, err) != CodeBadKey {
		t.Errorf("WritePublicKey(short) = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("invalid keys left files: %v", entries)
	}
}
