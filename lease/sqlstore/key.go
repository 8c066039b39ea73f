package sqlstore

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxKeyLength is the width of the lock_name column: 191 characters keep a
// utf8mb4 primary key within MySQL's old 767-byte index limit.
const maxKeyLength = 191

// hashedPrefix starts the stored form of names that are kept as a hash.
// Names that start with it are hashed themselves, so a stored key never
// stands for two names.
const hashedPrefix = "sha256:"

// key returns the lock_name value stored for name: name itself when it is
// printable ASCII of at most 191 bytes without a trailing space, and
// otherwise "sha256:" and the hex SHA-256 of name. Only such plain names
// compare the same way in every database whatever its character set and
// collation: no case or accent folding (the column is binary-collated),
// no PAD SPACE equality of "a" and "a ", no lossy character set
// conversion, no truncation.
func key(name string) string {
	if plainKey(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return hashedPrefix + hex.EncodeToString(sum[:])
}

func plainKey(name string) bool {
	if name == "" || len(name) > maxKeyLength || name[len(name)-1] == ' ' || strings.HasPrefix(name, hashedPrefix) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return false
		}
	}
	return true
}
