// Package auth turns a bearer credential into an identity: docmind API keys (random secrets stored only as
// hashes) and JSON Web Tokens verified against a JWKS URL (RS256/ES256; an Amazon Cognito user pool works as
// is) or, for development, a shared HS256 secret.
//
// The package decides who the caller is, never what the caller may do: the tenant, subject and e-mail it
// returns come only from a verified token or a stored key, and permissions are the caller's business. All
// cryptography is done by crypto/* and github.com/lestrrat-go/jwx/v3; nothing here signs or verifies by hand.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// APIKeyPrefix starts every docmind API key, so a key is recognisable in a leaked log or a secret scanner and
// a bearer credential can be routed to the key store or the JWT verifier without trying both.
const APIKeyPrefix = "dm_"

// apiKeyBytes is the entropy of a key: 256 bits, beyond any guessing.
const apiKeyBytes = 32

// apiKeyLen is len("dm_") plus 32 bytes in unpadded base64url (43 characters).
const apiKeyLen = len(APIKeyPrefix) + (apiKeyBytes*8+5)/6

// DisplayPrefixLen is how much of the plaintext is kept for display ("dm_" and 7 random characters): enough
// to tell keys apart in a list, far too little to guess the rest.
const DisplayPrefixLen = 10

// NewAPIKey returns a new key: plaintext "dm_" + base64url(32 random bytes from crypto/rand), shown to the
// user once and never stored; prefix, its first 10 characters, for display; hash, HashAPIKey(plaintext), the
// only form that is stored. The error is non-nil only when the system's random source fails.
func NewAPIKey() (plaintext, prefix, hash string, err error) {
	b := make([]byte, apiKeyBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", "", err
	}
	plaintext = APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return plaintext, plaintext[:DisplayPrefixLen], HashAPIKey(plaintext), nil
}

// HashAPIKey returns the lowercase hex SHA-256 of the plaintext key. A plain hash (no salt, no slow KDF) is
// right here because the key is 256 random bits, not a password: nothing can be brute-forced, and the hash
// must be a deterministic lookup key for the store.
func HashAPIKey(plaintext string) string {
	sum := sha256.Sum256([]byte(plaintext))
	return hex.EncodeToString(sum[:])
}

// LooksLikeAPIKey reports whether s has the shape of a docmind API key: the "dm_" prefix followed by exactly
// 43 base64url characters. It says nothing about whether the key exists; it lets the caller send a JWT (which
// contains dots) and a key to different verifiers without a store lookup for garbage.
func LooksLikeAPIKey(s string) bool {
	if len(s) != apiKeyLen || s[:len(APIKeyPrefix)] != APIKeyPrefix {
		return false
	}
	for i := len(APIKeyPrefix); i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
